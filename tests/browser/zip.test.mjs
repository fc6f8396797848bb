// "Download traces" in a browser without the File System Access API (as Firefox and Safari are): the traces
// come as one zip whose files hold exactly the bytes `stagecraft trace` writes; a cancel saves nothing.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { ROOT, itemRect, startSession, waitFrames, clickItem, assertFilesEqualCliTrace, watchDownload, downloadEnd } from './harness.mjs';

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
    // Cancel as soon as the first rank is in.
    await (await watchDownload(page))((p) => p.done === 1 && p.running);
    await clickItem(page, 'Parallelism and traces', 'Download traces');
    assert.match(await downloadEnd(page, 60000), /^Cancelled after \d+ of 256 ranks; nothing was saved\.$/);
    await waitFrames(page, 10);
    assert.equal(downloads, 0, 'no file was saved');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

// Rank files of several pieces (TraceStream.nextPiece hands 4 MB at a time; these are ~13 MB): the zip holds the
// CLI's bytes, the progress moves inside a file, and a cancel in the middle of the first file saves nothing.
test('rank files larger than a piece zip whole, with progress inside a file, and cancel midway', { timeout: 180000 }, async () => {
  const large = 'tp=2,pp=2,dp=2,batch=2048';
  const { page, errors } = await session.open({ hash: `#model=llama3-8b&system=dgx-a100-superpod&parallel=${large}`, initScript: noFolders });
  try {
    await waitFrames(page, 2);
    const watch = await watchDownload(page);
    await watch(() => false);
    const download = page.waitForEvent('download', { timeout: 120000 });
    await clickItem(page, 'Parallelism and traces', 'Download traces');
    const files = unzipSync(new Uint8Array(fs.readFileSync(await (await download).path())));
    assert.ok(files['trace.0.et'].length > 3 * (4 << 20), `a rank file of ${files['trace.0.et'].length} B is several pieces`);
    assertFilesEqualCliTrace(assert, files, large);
    const progress = await page.evaluate(() => window.__progress);
    assert.ok(progress.filter((p) => p.done === 0 && p.bytes > 0).length >= 3, 'the progress moves inside the first file');

    let downloads = 0;
    page.on('download', () => downloads++);
    await watch((p) => p.done === 0 && p.bytes > 0 && p.running);  // once part of the first file is in
    await clickItem(page, 'Parallelism and traces', 'Download traces');
    assert.match(await downloadEnd(page, 60000), /^Cancelled after 0 of 8 ranks; nothing was saved\.$/);
    await waitFrames(page, 10);
    assert.equal(downloads, 0, 'no file was saved');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});
