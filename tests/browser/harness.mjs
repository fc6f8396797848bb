// Browser-test harness: serves dist/ on 127.0.0.1 (random free port), launches Debian's Chromium
// headed (WebGPU on SwiftShader renders the canvas only when headed; see docs/toolchain.md)
// under the current X display, or under an Xvfb of its own when DISPLAY is unset, opens the page
// and waits for window.stagecraft.ready.
//
//   const s = await startSession();            // server + browser
//   const { page, errors, ready } = await s.open({ hash: '#model=llama3-8b' });
//   ...                                        // ready = { gpu, firstFrameMs, frames, ... }
//   await page.close(); await s.close();
//
// Environment: SC_DIST (default <repo>/dist), SC_CHROMIUM (default /usr/bin/chromium).
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const DIST = path.resolve(process.env.SC_DIST ?? path.join(ROOT, 'dist'));
export const SHOTS = path.join(ROOT, 'build', 'browser-shots');
const CHROMIUM = process.env.SC_CHROMIUM ?? '/usr/bin/chromium';

// playwright-core lives in web/node_modules (web/package.json), not next to this file.
const { chromium } = createRequire(path.join(ROOT, 'web', 'package.json'))('playwright-core');

export const CHROMIUM_ARGS = [
  '--enable-unsafe-webgpu', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist',
  '--enable-gpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader', '--disable-vulkan-surface',
  '--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-extensions',
  '--no-default-browser-check', '--disable-features=Translate,MediaRouter,OptimizationHints',
  ...(process.env.SC_JS_FLAGS ? [`--js-flags=${process.env.SC_JS_FLAGS}`] : []),
];

const MIME = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm', '.json': 'application/json; charset=utf-8', '.wgsl': 'text/plain; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.png': 'image/png', '.svg': 'image/svg+xml',
};

// Static file server for `dir` on 127.0.0.1 and a free port. Resolves to { url, close }.
export async function serveDir(dir = DIST) {
  const root = path.resolve(dir);
  if (!fs.existsSync(path.join(root, 'index.html'))) {
    throw new Error(`${root}/index.html is missing: build and install the wasm tree first (scripts/build wasm)`);
  }
  const server = http.createServer((req, res) => {
    let p;
    try {
      p = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (p.endsWith('/')) p += 'index.html';
    const file = path.join(root, path.normalize(p));
    if (file !== root && !file.startsWith(root + path.sep)) {
      res.writeHead(403).end();
      return;
    }
    fs.readFile(file, (err, data) => {
      if (err) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      res.writeHead(200, { 'content-type': MIME[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(data);
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    }),
  };
}

// An X display: the current one, or a private Xvfb (-displayfd picks a free display number).
async function ensureDisplay() {
  if (process.env.DISPLAY) return { display: process.env.DISPLAY, close: async () => {} };
  const xvfb = spawn('Xvfb', ['-displayfd', '1', '-screen', '0', '1280x1024x24', '-nolisten', 'tcp'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const display = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('Xvfb did not start in 10 s')), 10000);
    xvfb.once('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot start Xvfb (${e.message}); run the tests under xvfb-run`));
    });
    xvfb.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) {
        clearTimeout(timer);
        resolve(`:${out.trim()}`);
      }
    });
  });
  return {
    display,
    close: async () => {
      if (xvfb.exitCode === null) {
        const exited = new Promise((resolve) => xvfb.once('exit', resolve));
        xvfb.kill('SIGTERM');
        await exited;
      }
    },
  };
}

// Launches Chromium (headed, fresh profile under build/). Resolves to { context, close }.
export async function launchBrowser({ viewport = { width: 1024, height: 768 }, deviceScaleFactor = 1 } = {}) {
  fs.mkdirSync(path.join(ROOT, 'build'), { recursive: true });
  const userDataDir = fs.mkdtempSync(path.join(ROOT, 'build', 'browser-profile-'));
  const x = await ensureDisplay();
  let context;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: false,
      args: CHROMIUM_ARGS,
      viewport,
      deviceScaleFactor,
      env: { ...process.env, DISPLAY: x.display },
      timeout: 60000,
    });
  } catch (e) {
    await x.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
    throw e;
  }
  return {
    context,
    close: async () => {
      await context.close().catch(() => {});
      await x.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

// Collects console errors and uncaught page errors of `page` into an array.
// An init script (page.addInitScript) under which every worker fails to load, as when a policy blocks worker
// scripts: the page must then compute on its own thread.
export function blockWorkers() {
  window.Worker = class {
    constructor() {
      setTimeout(() => this.onerror?.({ message: 'worker blocked for the test', preventDefault() {} }), 0);
    }
    postMessage() {}
    terminate() {}
  };
}

export function collectErrors(page) {
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console.error: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('crash', () => errors.push('page crashed'));
  return errors;
}

// Waits for window.stagecraft.ready; resolves to a summary of the page state.
export async function waitReady(page, timeout = 30000) {
  await page.waitForFunction(() => window.stagecraft && window.stagecraft.ready, null, { timeout });
  return page.evaluate(
    (ms) =>
      Promise.race([
        window.stagecraft.ready.then((s) => ({
          gpu: s.gpu,
          gpuError: s.gpuError,
          model: s.model,
          modelError: s.modelError,
          firstFrameMs: s.firstFrameMs,
          frames: s.frames,
          dpr: window.devicePixelRatio,
        })),
        new Promise((_, reject) => setTimeout(() => reject(new Error(`stagecraft.ready timed out after ${ms} ms`)), ms)),
      ]),
    timeout,
  );
}

// Waits until `n` more frames have been drawn.
export async function waitFrames(page, n = 3, timeout = 10000) {
  const start = await page.evaluate(() => window.stagecraft.frames);
  await page.waitForFunction((target) => window.stagecraft.frames >= target, start + n, { timeout, polling: 'raf' });
}

// The CSS-pixel rect of the item labelled `label` in ImGui window `window` (item rects are recorded
// from the frame after the first request, so this polls). `timeout`: longer for an item that appears only when
// a computation ends (a search's rows), so a loaded machine does not fail a test that measures no speed.
export async function itemRect(page, window, label, timeout = 5000) {
  const handle = await page.waitForFunction(([w, l]) => window.stagecraft.itemRect(w, l), [window, label], {
    timeout,
    polling: 'raf',
  });
  return handle.jsonValue();
}

// Server + browser, and open() for pages. close() tears everything down.
// Asserts that `files` (a zip's entries, name -> bytes) are exactly the files `stagecraft trace` writes for
// Llama 3 8B on dgx-a100-superpod with `split`: the same names, the same bytes.
export function assertFilesEqualCliTrace(assert, files, split) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sc-zip-'));
  try {
    execFileSync(path.join(ROOT, 'build', 'stagecraft'),
      ['trace', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-a100-superpod', '--parallel', split, '--out', dir],
      { cwd: ROOT });
    const names = fs.readdirSync(dir).sort();
    assert.deepEqual(Object.keys(files).sort(), names);
    for (const n of names) assert.ok(Buffer.from(files[n]).equals(fs.readFileSync(path.join(dir, n))), `${n}: same bytes as the CLI`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// Watches the page's trace download: every progress report goes to window.__progress ({done, total, bytes, running,
// message}), and the download sees a cancel (as from the panel's Cancel button) once window.__cancelWhen, a function
// the test sets in the page, returns true for a report. Returns a function that clears the record and sets the
// condition: `await watch(() => false)`, `await watch((p) => p.done === 1 && p.running)`.
export async function watchDownload(page) {
  await page.evaluate(() => {
    const app = window.stagecraft.app;
    const set = app.setDownloadProgress.bind(app);
    const cancelled = app.downloadCancelled.bind(app);
    app.setDownloadProgress = (done, total, bytes, running, message) => {
      set(done, total, bytes, running, message);
      const p = { done, total, bytes, running, message };
      window.__progress.push(p);
      if (window.__cancelWhen(p)) window.__cancelNow = true;
    };
    app.downloadCancelled = () => cancelled() || window.__cancelNow;
  });
  return (cancelWhen) => page.evaluate((src) => {
    window.__progress = [];
    window.__cancelNow = false;
    window.__cancelWhen = (0, eval)(`(${src})`);
  }, cancelWhen.toString());
}

// The first report of a download that carried a message (its end: written, cancelled or failed).
export async function downloadEnd(page, timeout = 120000) {
  await page.waitForFunction(() => window.__progress.some((p) => p.message), null, { timeout });
  return page.evaluate(() => window.__progress.find((p) => p.message).message);
}

// Moves to the item first and lets a frame pass, as a hand would: ImGui's tab items react to a press only over
// an item hovered in the previous frame.
export async function clickItem(page, window, label) {
  const r = await itemRect(page, window, label);
  await page.mouse.move(r.x + r.w / 2, r.y + r.h / 2);
  await waitFrames(page, 2);
  await page.mouse.click(r.x + r.w / 2, r.y + r.h / 2);
}

export async function startSession(options = {}) {
  const server = await serveDir(options.dist ?? DIST);
  let browser;
  try {
    browser = await launchBrowser(options);
  } catch (e) {
    await server.close();
    throw e;
  }
  return {
    url: server.url,
    context: browser.context,
    // Opens index.html (+ hash) in a new tab; `initScript` runs before the page's scripts.
    async open({ hash = '', initScript, initArg, timeout = 30000 } = {}) {
      const page = await browser.context.newPage();
      const errors = collectErrors(page);
      if (initScript) await page.addInitScript(initScript, initArg);
      await page.goto(`${server.url}index.html${hash}`);
      await page.bringToFront(); // only the foreground tab gets animation frames
      const ready = await waitReady(page, timeout);
      return { page, errors, ready };
    },
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

export function screenshotPath(name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  return path.join(SHOTS, name);
}
