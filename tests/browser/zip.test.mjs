// "Download traces" in a browser without the File System Access API (as Firefox and Safari are): the traces
// come as one zip whose files hold exactly the bytes `stagecraft trace` writes; a cancel saves nothing.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { ROOT, itemRect, startSession, waitFrames, clickItem, assertFilesEqualCliTrace } from './harness.mjs';

const { unzipSync } = createRequire(path.join(ROOT, 'web', 'package.json'))('fflate');
const split = 'tp=2,pp=2,dp=2,batch=8';

// The page as a browser without showDirectoryPicker sees it.
const noFolders = () => {
  Object.defineProperty(window, 'showDirectoryPicker', { value: undefined, configurable: true });
};

let session;
before(async () => {
  session = await startSession();
});
after(async () => {
  await session?.close();
});


test('without File System Access the traces download as a zip of the CLI trace bytes', { timeout: 120000 }, async () => {
  const { page, errors } = await session.open({ hash: `#model=llama3-8b&system=dgx-a100-superpod&parallel=${split}`, initScript: noFolders });
  try {
    assert.equal(await page.evaluate(() => typeof window.showDirectoryPicker), 'undefined');
    await waitFrames(page, 2);
    const download = page.waitForEvent('download', { timeout: 60000 });
    await clickItem(page, 'Parallelism and traces', 'Download traces');
    const d = await download;
    assert.equal(d.suggestedFilename(), 'stagecraft-trace.zip');
    const files = unzipSync(new Uint8Array(fs.readFileSync(await d.path())));

    assertFilesEqualCliTrace(assert, files, split);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('a cancelled zip download saves nothing', { timeout: 120000 }, async () => {
  // 256 ranks: long enough to cancel part-way.
  const big = 'tp=8,pp=4,dp=8,batch=64';
  const { page, errors } = await session.open({ hash: `#model=llama3-8b&system=dgx-a100-superpod&parallel=${big}`, initScript: noFolders });
  try {
    let downloads = 0;
    page.on('download', () => downloads++);
    await waitFrames(page, 2);
    // Cancel as soon as the first rank is in: the panel's Cancel button sets the flag the stream polls.
    await page.evaluate(() => {
      const app = window.stagecraft.app;
      const set = app.setDownloadProgress.bind(app);
      window.__messages = [];
      app.setDownloadProgress = (done, total, bytes, running, message) => {
        set(done, total, bytes, running, message);
        if (message) window.__messages.push(message);
        if (done === 1 && running) window.__cancelNow = true;
      };
      const cancelled = app.downloadCancelled.bind(app);
      app.downloadCancelled = () => cancelled() || window.__cancelNow === true;
    });
    await clickItem(page, 'Parallelism and traces', 'Download traces');
    await page.waitForFunction(() => window.__messages.length > 0, null, { timeout: 60000 });
    const messages = await page.evaluate(() => window.__messages);
    assert.match(messages[0], /^Cancelled after \d+ of 256 ranks; nothing was saved\.$/);
    await waitFrames(page, 10);
    assert.equal(downloads, 0, 'no file was saved');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});
