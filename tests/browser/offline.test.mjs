// Offline and installable: after one visit the service worker (web/sw.js) has cached the page, the wasm module
// and the presets, so with the server stopped a reload still opens the page and computes; the manifest is there.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { launchBrowser, serveDir, waitReady } from './harness.mjs';

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
