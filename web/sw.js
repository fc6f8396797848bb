// Service worker: the page works offline after one visit, installs as an app (manifest.json), and opens from
// its cache without waiting for the network.
//
// One cache per build: BUILD is replaced at install (CMakeLists.txt: a hash of every installed file), so a
// new build is a new sw.js, which the browser notices on the next visit. On install it caches the page, its
// scripts, the wasm module, the shader and every preset the indexes list, all from that one build.
// Requests are answered cache-first from that cache: the page, its module and its presets always belong to
// the same build, and a visit does not wait for (or re-write) the 1.6 MB module. A file not cached is fetched
// and kept.
//
// Updates: the first install takes over at once (nothing to be consistent with). A later build's worker
// waits until the page asks for it ({type: 'activate'}, sent when the user accepts "Reload" in the page's
// update notice, main.js) or until every tab of the old build is closed, so a running page never mixes its
// files with a newer build's (its web workers load the same build as it).
const BUILD = 'dev';
const CACHE = `stagecraft-${BUILD}`;
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
      if (!self.registration.active) await self.skipWaiting();
    })(),
  );
});

self.addEventListener('message', (event) => {
  if (event.data?.type === 'activate') self.skipWaiting();
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
      // The page opened with ?workers=0 or ?sw=0 is still index.html.
      const hit = await cache.match(req, { ignoreSearch: req.mode === 'navigate' });
      if (hit) return hit;
      const r = await fetch(req);
      if (r.ok && r.type === 'basic') cache.put(req, r.clone()).catch(() => {});
      return r;
    })(),
  );
});
