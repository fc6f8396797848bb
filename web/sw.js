// Service worker: the page works offline after one visit, and installs as an app (manifest.json).
// On install it caches the page, its scripts, the wasm module, the shader and every preset the indexes list;
// afterwards every request goes to the network first (so a new build is picked up at once) and falls back to
// the cache when the network fails (server gone, no connection). What the network returns is cached too.
// CACHE changes with the files the page needs, so an older cache is dropped on activation.
const CACHE = 'stagecraft-v2';
const SHELL = [
  './', 'index.html', 'main.js', 'renderer.js', 'input.js', 'link.js', 'download.js', 'zip.js', 'pool.js', 'jobs.js',
  'worker.js', 'results_panel.js', 'fallback.js', 'stagecraft.js', 'stagecraft.wasm', 'vendor/fflate.js', 'shaders/imgui.wgsl', 'manifest.json',
  'icon.svg', 'presets/models/index.json', 'presets/systems/index.json', 'presets/hardware/index.json',
  'presets/inference/index.json', 'presets/calibration/measured.json',
];
const INDEXES = ['presets/models/', 'presets/systems/', 'presets/hardware/', 'presets/inference/'];

async function listed(cache, dir) {
  const r = await cache.match(`${dir}index.json`);
  if (!r) return [];
  const names = await r.json().catch(() => []);
  return Array.isArray(names) ? names.filter((n) => typeof n === 'string' && /^[A-Za-z0-9._-]+$/.test(n)).map((n) => dir + n) : [];
}

// Each file on its own: one missing file (an optional preset) must not leave the page without a cache.
async function addAll(cache, urls) {
  await Promise.all(
    urls.map(async (u) => {
      try {
        const r = await fetch(u, { cache: 'no-store' });
        if (r.ok) await cache.put(u, r);
      } catch {
        // offline during install: the next visit fills it
      }
    }),
  );
}

self.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      await addAll(cache, SHELL);
      const presets = (await Promise.all(INDEXES.map((d) => listed(cache, d)))).flat();
      await addAll(cache, presets);
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const key of await caches.keys()) if (key !== CACHE) await caches.delete(key);
      await self.clients.claim();
    })(),
  );
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET' || new URL(req.url).origin !== self.location.origin) return;
  event.respondWith(
    (async () => {
      const cache = await caches.open(CACHE);
      try {
        const r = await fetch(req);
        if (r.ok && r.type === 'basic') await cache.put(req, r.clone());
        return r;
      } catch (e) {
        // The page opened with ?workers=0 or a hash is still index.html.
        const hit = await cache.match(req, { ignoreSearch: req.mode === 'navigate' });
        if (hit) return hit;
        throw e;
      }
    })(),
  );
});
