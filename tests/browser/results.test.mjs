// The page computes what the CLI computes: the DOM mirror equals `stagecraft estimate` + `summary`
// for the same inputs, editing the split updates the summary, and "Download traces" streams exactly
// the bytes `stagecraft trace` writes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { ROOT, itemRect, screenshotPath, startSession, waitFrames, clickItem, watchDownload, downloadEnd } from './harness.mjs';

const CLI = path.join(ROOT, 'build', 'stagecraft');
const cli = (...args) => execFileSync(CLI, args, { cwd: ROOT, encoding: 'utf8' });

let session;
before(async () => {
  session = await startSession();
});
after(async () => {
  await session?.close();
});

const mirror = (page) => page.evaluate(() => document.getElementById('results').textContent);


test('the DOM mirror shows exactly what the CLI prints for the same model, cluster and split', async () => {
  const split = 'tp=2,pp=2,dp=4,batch=32';
  const { page, errors } = await session.open({ hash: `#model=llama3-8b&system=dgx-h100-superpod&parallel=${split}` });
  try {
    await waitFrames(page, 2);
    const expected =
      cli('estimate', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-h100-superpod', '--parallel', split) +
      cli('summary', '--model', 'presets/models/llama3-8b.json', '--parallel', split);
    assert.equal(await mirror(page), expected);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

// 16,384 microbatches of Llama 3 8B on one rank: 14 million trace nodes, more than an edit counts
// (kSummaryNodesInEdit), so the summary is counted a slice a frame and the page keeps drawing.
test('a large split: its trace summary is counted over frames, then the mirror shows what the CLI prints', async () => {
  const split = 'tp=1,dp=1,batch=16384';
  const { page, errors } = await session.open({ hash: '#model=llama3-8b&system=dgx-h100-superpod&parallel=tp=2,dp=4,batch=32' });
  try {
    await waitFrames(page, 2);
    const model = ['--model', 'presets/models/llama3-8b.json'];
    const estimate = cli('estimate', ...model, '--allow-oom', '--system', 'dgx-h100-superpod', '--parallel', split);
    const expected = estimate + cli('summary', ...model, '--parallel', split);
    const started = await page.evaluate((spec) => {
      const app = window.stagecraft.app;
      const error = app.setParallel(spec);
      return { error, text: app.mirrorText(), frames: window.stagecraft.frames };
    }, split);
    assert.equal(started.error, '');
    assert.equal(started.text, `${estimate}summary: being counted (1 ranks, 16384 microbatches a step)\n`);
    await page.waitForFunction((e) => document.getElementById('results').textContent === e, expected, { timeout: 120000 });
    const frames = (await page.evaluate(() => window.stagecraft.frames)) - started.frames;
    assert.ok(frames >= 3, `the count ran over ${frames} frames`);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('typing a new tp into the Parallelism panel updates the trace summary', async () => {
  const { page, errors } = await session.open({ hash: '#model=gpt3-175b&system=dgx-a100-superpod&parallel=tp=8,pp=8,dp=2,batch=16' });
  try {
    await waitFrames(page, 2);
    assert.match(await mirror(page), /on 128 ranks \(tp=8,/);
    await clickItem(page, 'Parallelism and traces', 'dp');
    await page.waitForFunction(() => window.stagecraft.app.wantTextInput(), null, { timeout: 5000 });
    await page.keyboard.press('Control+A');
    await page.keyboard.type('4');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /on 256 ranks/.test(document.getElementById('results').textContent), null, { timeout: 5000 });
    const text = await mirror(page);
    assert.match(text, /ALL_REDUCE +on dp +\(group of 4\)/);
    // An invalid split shows the constraint, not numbers.
    await clickItem(page, 'Parallelism and traces', 'pp');
    await page.waitForFunction(() => window.stagecraft.app.wantTextInput(), null, { timeout: 5000 });
    await page.keyboard.press('Control+A');
    await page.keyboard.type('7');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /parallel error: pp: pp=7 does not divide 96 layers/.test(document.getElementById('results').textContent),
                               null, { timeout: 5000 });
    await page.screenshot({ path: screenshotPath('parallel-error.png') });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

// An in-memory stand-in for the File System Access API's directory handle: what the page writes
// is kept (as sha256 and size per file) for the test to read back. window.__present lists files the folder
// holds already (opts.present); window.__failOn names a file whose write fails (opts.failOn). As in the real API,
// getFileHandle with create makes an (empty) file at once (window.__created) and a writable's bytes land only on
// close; abort() drops them (window.__aborted).
function fakeDirectoryPicker(opts) {
  window.__written = {};
  window.__created = {};
  window.__aborted = [];
  window.__present = (opts && opts.present) || [];
  window.__failOn = opts && opts.failOn;
  window.showDirectoryPicker = async () => ({
    async getFileHandle(name, options = {}) {
      if (!options.create && !(name in window.__written) && !window.__present.includes(name)) {
        throw new DOMException(`${name} not found`, 'NotFoundError');
      }
      if (options.create) window.__created[name] = true;
      return {
        async createWritable() {
          if (name === window.__failOn) {
            window.__failed = Object.keys(window.__written).length;  // files written before the failure
            throw new DOMException('disk full', 'QuotaExceededError');
          }
          const chunks = [];
          return {
            async write(data) {
              chunks.push(typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(data));
            },
            async close() {
              const n = chunks.reduce((a, c) => a + c.length, 0);
              const all = new Uint8Array(n);
              let o = 0;
              for (const c of chunks) all.set(c, o), (o += c.length);
              const hash = await crypto.subtle.digest('SHA-256', all);
              window.__written[name] = { size: n, sha256: [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, '0')).join('') };
            },
            async abort() {
              window.__aborted.push(name);
            },
          };
        },
      };
    },
    async removeEntry(name) {
      delete window.__written[name];
      delete window.__created[name];
    },
  });
}

test('"Download traces" streams every rank and the groups, byte-identical to `stagecraft trace`', async () => {
  const split = 'tp=2,pp=2,dp=2,batch=8';
  // Both time the compute nodes (duration_micros) on the same cluster.
  const { page, errors } = await session.open({ hash: `#model=llama3-8b&system=dgx-a100-superpod&parallel=${split}`, initScript: fakeDirectoryPicker });
  try {
    await waitFrames(page, 2);
    await clickItem(page, 'Parallelism and traces', 'Download traces');
    await page.waitForFunction(() => window.__written && window.__written['trace.json'], null, { timeout: 60000 });
    const written = await page.evaluate(() => window.__written);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sc-dl-'));
    cli('trace', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-a100-superpod', '--parallel', split, '--out', dir);
    const files = fs.readdirSync(dir).sort();
    assert.deepEqual(Object.keys(written).sort(), files);
    for (const f of files) {
      const bytes = fs.readFileSync(path.join(dir, f));
      assert.equal(written[f].size, bytes.length, f);
      assert.equal(written[f].sha256, crypto.createHash('sha256').update(bytes).digest('hex'), f);
    }
    await waitFrames(page, 2);
    await page.screenshot({ path: screenshotPath('download-done.png') });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('"Download traces" removes what it wrote when a write fails, and asks before replacing a set', async () => {
  const split = 'tp=2,pp=2,dp=2,batch=8';
  let { page, errors } = await session.open({ hash: `#model=llama3-8b&parallel=${split}`, initScript: fakeDirectoryPicker, initArg: { failOn: 'trace.5.et' } });
  try {
    await waitFrames(page, 2);
    await clickItem(page, 'Parallelism and traces', 'Download traces');
    await page.waitForFunction(() => window.__failed !== undefined && Object.keys(window.__written).length === 0, null, { timeout: 60000 });
    assert.equal(await page.evaluate(() => window.__failed), 5);  // ranks 0-4 were written, then removed
  } finally {
    await page.close();
  }
  ({ page, errors } = await session.open({ hash: `#model=llama3-8b&parallel=${split}`, initScript: fakeDirectoryPicker, initArg: { present: ['trace.json', 'trace.0.et'] } }));
  try {
    let asked = '';
    page.on('dialog', (d) => { asked = d.message(); d.dismiss(); });
    await waitFrames(page, 2);
    await clickItem(page, 'Parallelism and traces', 'Download traces');
    for (let i = 0; i < 100 && !asked; ++i) await waitFrames(page, 2);
    assert.match(asked, /already holds a trace set/);
    await waitFrames(page, 4);
    assert.deepEqual(await page.evaluate(() => Object.keys(window.__written)), []);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

// Rank files of several pieces (~13 MB, written 4 MB at a time): each reaches the folder whole, and a cancel in the
// middle of the second file drops that file's writes (abort) and removes every file the download made.
test('"Download traces" writes files larger than a piece whole, and a cancel midway leaves nothing', { timeout: 180000 }, async () => {
  const split = 'tp=2,pp=2,dp=2,batch=2048';
  const { page, errors } = await session.open({ hash: `#model=llama3-8b&system=dgx-a100-superpod&parallel=${split}`, initScript: fakeDirectoryPicker });
  try {
    await waitFrames(page, 2);
    const watch = await watchDownload(page);
    await watch(() => false);
    await clickItem(page, 'Parallelism and traces', 'Download traces');
    assert.match(await downloadEnd(page), /^Wrote 8 traces/);
    const firstFile = (await page.evaluate(() => window.__progress)).find((p) => p.done === 1).bytes;
    const written = await page.evaluate(() => window.__written);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sc-dl-'));
    try {
      cli('trace', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-a100-superpod', '--parallel', split, '--out', dir);
      for (const f of ['trace.0.et', 'trace.7.et']) {
        const bytes = fs.readFileSync(path.join(dir, f));
        assert.ok(bytes.length > 3 * (4 << 20), `${f}: ${bytes.length} B, several pieces`);
        assert.equal(written[f].sha256, crypto.createHash('sha256').update(bytes).digest('hex'), f);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }

    await page.evaluate(() => {
      window.__written = {};
      window.__created = {};
    });
    // Once part of the second file is in.
    await watch(new Function('p', `return p.done === 1 && p.bytes > ${firstFile} && p.running;`));
    await clickItem(page, 'Parallelism and traces', 'Download traces');
    assert.match(await downloadEnd(page), /^Cancelled after 1 of 8 ranks; the files it wrote were removed\.$/);
    await waitFrames(page, 4);
    assert.deepEqual(await page.evaluate(() => window.__aborted), ['trace.1.et'], 'the file under way was aborted');
    assert.deepEqual(await page.evaluate(() => Object.keys(window.__created)), [], 'every file made was removed');
    assert.deepEqual(await page.evaluate(() => Object.keys(window.__written)), []);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('"Find the best layouts" lists fitting layouts and "use" applies one', async () => {
  const { page, errors } = await session.open({ hash: '#model=llama3-8b&system=dgx-h100-superpod&parallel=tp=8,dp=2,batch=64' });
  try {
    await waitFrames(page, 2);
    await clickItem(page, 'Training on a cluster', 'Best layout');
    await clickItem(page, 'Training on a cluster', 'Find the best layouts');
    await itemRect(page, 'Training on a cluster', 'use', 120000); // the first row's button: results are listed
    await page.screenshot({ path: screenshotPath('best-layouts.png') });
    const before = await mirror(page);
    await clickItem(page, 'Training on a cluster', 'use');
    await page.waitForFunction((b) => document.getElementById('results').textContent !== b, before, { timeout: 10000 });
    // The applied layout keeps the 16 GPUs and the batch, and fits.
    const text = await mirror(page);
    assert.match(text, /on 16 ranks/);
    assert.match(text, /batch=64/);
    assert.doesNotMatch(text, /does not fit/);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

// A split with a pipeline: the Training panel lays the schedule out in time under the estimate, and its "Perfetto
// JSON" saves exactly the bytes `stagecraft estimate --timeline-json` writes. A tall page, so that the schedule is on
// screen below the estimate.
test('the pipeline schedule saves the Perfetto JSON the CLI writes', async () => {
  const split = 'tp=2,pp=4,batch=64,schedule=dualpipe';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sc-pipeline-'));
  const file = path.join(dir, 'cli.json');
  cli('estimate', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-h100-superpod', '--parallel', split,
    '--timeline-json', file);
  const tall = await startSession({ viewport: { width: 1280, height: 1400 } });
  try {
    const { page, errors } = await tall.open({ hash: `#model=llama3-8b&system=dgx-h100-superpod&parallel=${split}` });
    await waitFrames(page, 2);
    await clickItem(page, 'Training on a cluster', 'pipeline schedule');
    await waitFrames(page, 2);
    const chart = await itemRect(page, 'Training on a cluster', '##pipeline');
    assert.ok(chart.w > 200 && chart.h > 40, `the schedule is drawn: ${JSON.stringify(chart)}`);
    const download = page.waitForEvent('download', { timeout: 30000 });
    await clickItem(page, 'Training on a cluster', 'Perfetto JSON##pipeline');
    const d = await download;
    assert.equal(d.suggestedFilename(), 'pipeline.trace.json');
    assert.ok(fs.readFileSync(await d.path()).equals(fs.readFileSync(file)), 'same bytes as the CLI');
    await page.screenshot({ path: screenshotPath('pipeline-schedule.png') });
    assert.deepEqual(errors, []);
  } finally {
    await tall.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
