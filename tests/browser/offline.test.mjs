// Offline and installable: after one visit the service worker (web/sw.js) has cached the page, the wasm module
// and the presets, so with the server stopped a reload still opens the page and computes; the manifest is there.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { DIST, launchBrowser, serveDir, waitReady } from './harness.mjs';

let browser;
let server;
before(async () => {
  server = await serveDir();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

const mirror = (page) => page.evaluate(() => document.getElementById('results').textContent);

test('after one visit the page loads and computes with the server stopped', { timeout: 180000 }, async () => {
  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${server.url}index.html#model=llama3-8b&parallel=tp=8,dp=8,batch=64`);
  await page.bringToFront();
  await waitReady(page, 60000);
  assert.equal(await page.evaluate(() => window.stagecraft.offline), true, 'the service worker is active');
  const online = await mirror(page);
  assert.match(online, /MFU/);

  const manifest = await page.evaluate(async () => {
    const href = document.querySelector('link[rel=manifest]').href;
    return (await fetch(href)).json();
  });
  assert.equal(manifest.name, 'Stagecraft');
  assert.equal(manifest.display, 'standalone');

  await server.close();
  server = null;
  // The server is gone: a file the cache does not hold cannot be fetched any more.
  const probe = await page.evaluate(async () => {
    try {
      await fetch(`not-cached-${Math.random()}.txt`, { cache: 'no-store' });
      return 'reached';
    } catch {
      return 'failed';
    }
  });
  assert.equal(probe, 'failed');

  await page.reload();
  const ready = await waitReady(page, 60000);
  assert.equal(ready.modelError, '');
  await page.waitForFunction(() => /MFU/.test(document.getElementById('results').textContent), null, { timeout: 30000 });
  assert.equal(await mirror(page), online, 'offline, the page computes the same results');
  // And it still computes a new configuration (the module runs, not a cached text).
  const changed = await page.evaluate(() => {
    window.stagecraft.app.setParallel('tp=4,dp=16,batch=64');
    return window.stagecraft.app.mirrorText();
  });
  assert.notEqual(changed, online);
  assert.match(changed, /MFU/);
  assert.deepEqual(errors, []);
  await page.close();
});

// A new build (a new sw.js, CMakeLists.txt names its cache by a hash of the installed files) is installed in the
// background but does not take over a page of the old build: the page keeps the old build's files and offers a
// reload, which switches to the new build's files, all of them.
test('a new build waits for the reload the page offers, then serves its own files', { timeout: 180000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sc-sw-'));
  let copy = null;
  try {
    fs.cpSync(DIST, dir, { recursive: true });
    copy = await serveDir(dir);
    const title = (page) => page.evaluate(() => document.title);
    const caches = (page) => page.evaluate(() => caches.keys());
    const page = await browser.context.newPage();
    await page.goto(`${copy.url}index.html`);
    await page.bringToFront();
    await waitReady(page, 60000);
    assert.equal(await page.evaluate(() => window.stagecraft.offline), true);
    const [oldCache] = await caches(page);
    assert.match(oldCache, /^stagecraft-[0-9a-f]{16}$/, 'the installed sw.js names its cache by the build');
    assert.equal(await page.evaluate(() => window.stagecraft.updateReady), false);

    // The next build: another sw.js and another page title.
    const sw = fs.readFileSync(path.join(dir, 'sw.js'), 'utf8');
    fs.writeFileSync(path.join(dir, 'sw.js'), sw.replace(/const BUILD = '[^']*';/, "const BUILD = 'next-build';"));
    const html = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
    fs.writeFileSync(path.join(dir, 'index.html'), html.replace('<title>Stagecraft</title>', '<title>Stagecraft next</title>'));

    await page.reload();
    await waitReady(page, 60000);
    assert.equal(await title(page), 'Stagecraft', 'the open page keeps its build');
    await page.waitForFunction(() => window.stagecraft.updateReady, null, { timeout: 60000 });
    assert.equal(await page.isVisible('#update'), true, 'the page offers the new build');
    assert.equal(await title(page), 'Stagecraft');

    await Promise.all([page.waitForNavigation(), page.click('#update-reload')]);
    await waitReady(page, 60000);
    assert.equal(await title(page), 'Stagecraft next', 'after the reload the page is the new build');
    assert.deepEqual(await caches(page), ['stagecraft-next-build'], 'the old build is dropped');
    assert.equal(await page.isVisible('#update'), false);
    assert.match(await mirror(page), /MFU/);
    await page.close();
  } finally {
    await copy?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
