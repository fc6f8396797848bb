// The worker pool and the Sweeps view: the "Best layout" search and the co-design sweep run in web workers
// (web/pool.js, src/wasm/worker_bindings.cpp) while the page keeps drawing, and give exactly what the page's own
// thread gives (?workers=0: frame slices) and what the CLI prints for the same request.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { ROOT, blockWorkers, startSession } from './harness.mjs';

const CLI = process.env.SC_CLI ?? path.join(ROOT, 'build', 'stagecraft');
// A small request, so the test is quick: Llama 3 8B on 64 A100s.
const HASH = '#model=llama3-8b&system=dgx-a100-superpod&parallel=tp=8,dp=8,batch=64';
const AXES = ['flops=1,2', 'hbm_capacity=0.5,1,2'];

let session;
before(async () => {
  session = await startSession();
});
after(async () => {
  await session?.close();
});

async function open(query = '', initScript = undefined) {
  const page = await session.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  if (initScript) await page.addInitScript(initScript);
  await page.goto(`${session.url}index.html${query}${HASH}`);
  await page.bringToFront();
  await page.waitForFunction(() => window.stagecraft?.firstFrameMs !== null && window.stagecraft?.pagePool, null, { timeout: 60000 });
  return { page, errors };
}

// Runs `start` in the page and waits for `status` to report a result; returns the last status and how many
// frames were drawn meanwhile.
async function runJob(page, start, status, timeout = 180000) {
  const frames0 = await page.evaluate(() => window.stagecraft.frames);
  const err = await page.evaluate(start);
  assert.equal(err ?? '', '', 'the job did not start');
  await page.waitForFunction(
    (fn) => {
      const s = window.stagecraft.pagePool[fn]();
      return s.hasResult || s.error;
    },
    status,
    { timeout, polling: 100 },
  );
  const s = await page.evaluate((fn) => window.stagecraft.pagePool[fn](), status);
  assert.equal(s.error, '', 'the job failed');
  return { ...s, frames: (await page.evaluate(() => window.stagecraft.frames)) - frames0 };
}

const cli = (args) => execFileSync(CLI, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

test('the search in workers equals the one on the page thread and the CLI', { timeout: 300000 }, async () => {
  const inWorkers = await open();
  assert.ok(inWorkers.page, 'page opened');
  const size = await inWorkers.page.evaluate(() => window.stagecraft.jobs?.size ?? 0);
  assert.ok(size >= 1, 'the page made a worker pool');
  const start = () => window.stagecraft.pagePool.startSearch();
  const w = await runJob(inWorkers.page, start, 'searchStatus');
  assert.ok(w.pool === false && w.text.length > 0);
  const shards = await inWorkers.page.evaluate(() => window.stagecraft.jobs.stats.shards);
  assert.equal(shards, 64, 'every shard of the search ran in a worker');
  assert.equal(await inWorkers.page.evaluate(() => window.stagecraft.jobs.pool.workers.every((w) => w.ready && w.shared)), true,
    'every worker runs the module the page compiled, none compiled its own');
  assert.ok(w.frames > 0, 'the page drew frames while the workers searched');

  const onPage = await open('?workers=0');
  assert.equal(await onPage.page.evaluate(() => window.stagecraft.jobs), null);
  const p = await runJob(onPage.page, start, 'searchStatus');
  assert.equal(w.text, p.text, 'workers and frame slices give the same search');

  const expected = cli(['search', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-a100-superpod',
    '--gpus', '64', '--batch', '64', '--top', '10']);
  assert.equal(w.text, expected, 'the page search equals `stagecraft search`');
  assert.deepEqual(inWorkers.errors, []);
  assert.deepEqual(onPage.errors, []);
  await inWorkers.page.close();
  await onPage.page.close();
});

test('the sweep in workers equals the CLI sweep and the single-thread sweep', { timeout: 400000 }, async () => {
  const expected = cli(['sweep', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-a100-superpod',
    '--gpus', '64', '--batch', '64', ...AXES.flatMap((a) => ['--axis', a])]);
  assert.equal(expected.trim().split('\n').length, 1 + 6, 'the CLI printed a header and six rows');

  const inWorkers = await open();
  const start = (axes) => window.stagecraft.pagePool.startSweep(axes[0], axes[1]);
  const w = await inWorkers.page.evaluate(start, AXES);
  assert.equal(w, '');
  const running = await inWorkers.page.evaluate(() => window.stagecraft.pagePool.sweepStatus());
  assert.equal(running.pool, true, 'the sweep runs in the pool');
  await inWorkers.page.waitForFunction(() => window.stagecraft.pagePool.sweepStatus().hasResult || window.stagecraft.pagePool.sweepStatus().error, null, { timeout: 300000, polling: 200 });
  const ws = await inWorkers.page.evaluate(() => window.stagecraft.pagePool.sweepStatus());
  assert.equal(ws.error, '');
  const csvWorkers = await inWorkers.page.evaluate(() => window.stagecraft.pagePool.sweepCsv());
  assert.equal(csvWorkers, expected, 'the page sweep in workers equals `stagecraft sweep`');

  // "only the current layout": the workers get the flag with the job and estimate the page's layout at every point,
  // here on 32 to 128 GPUs (dp stretched, the batch kept; 96 GPUs is dp 12, which 64 sequences do not divide).
  const fixedAxes = ['gpus=32,64,96,128', 'hbm_bw=1,2,3'];
  const fixedExpected = cli(['sweep', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-a100-superpod',
    '--layout', 'tp=8,dp=8,batch=64', ...fixedAxes.flatMap((a) => ['--axis', a])]);
  const shardsBefore = await inWorkers.page.evaluate(() => window.stagecraft.jobs.stats.shards);
  assert.equal(await inWorkers.page.evaluate((axes) => {
    window.stagecraft.pagePool.setSweepFixedLayout(true);
    return window.stagecraft.pagePool.startSweep(axes[0], axes[1]);
  }, fixedAxes), '');
  await inWorkers.page.waitForFunction(() => window.stagecraft.pagePool.sweepStatus().hasResult || window.stagecraft.pagePool.sweepStatus().error, null, { timeout: 300000, polling: 200 });
  assert.equal(await inWorkers.page.evaluate(() => window.stagecraft.pagePool.sweepCsv()), fixedExpected,
    'the fixed-layout sweep in workers equals `stagecraft sweep --layout`');
  assert.equal(await inWorkers.page.evaluate(() => window.stagecraft.jobs.stats.shards), shardsBefore + 12, 'its 12 shards ran in workers');

  const onPage = await open('?workers=0');
  assert.equal(await onPage.page.evaluate(start, AXES), '');
  await onPage.page.waitForFunction(() => window.stagecraft.pagePool.sweepStatus().hasResult || window.stagecraft.pagePool.sweepStatus().error, null, { timeout: 300000, polling: 200 });
  const csvPage = await onPage.page.evaluate(() => window.stagecraft.pagePool.sweepCsv());
  assert.equal(csvPage, expected, 'the single-thread sweep equals `stagecraft sweep`');
  assert.deepEqual(inWorkers.errors, []);
  assert.deepEqual(onPage.errors, []);
  await inWorkers.page.close();
  await onPage.page.close();
});

test('the Serving tab\'s rate sweep in workers equals the CLI\'s --rate-sweep and the single-thread sweep', { timeout: 400000 }, async () => {
  // The serving preset at 400 requests per point, through the link's serve keys (as a shared link would set it),
  // on the preset's own cluster (the link names the page's cluster; `serve --preset` takes the preset's).
  const serving = (page) => page.evaluate(() => {
    const app = window.stagecraft.app;
    const link = app.linkState().link.replace('system=dgx-a100-superpod', 'system=dgx-h100-superpod')
      .replace(/;end$/, ';serve=llama3-8b-h100-poisson;serve.requests=400;end');
    return app.applyLink(link);
  });
  const preset = JSON.parse(fs.readFileSync(path.join(ROOT, 'presets/inference/llama3-8b-h100-poisson.json'), 'utf8'));
  const rate = preset.workload.rate;
  // The tab's default: 8 rates from a quarter to twice the workload's, as inference_driver.cpp spaces them.
  const from = rate / 4;
  const to = 2 * rate;
  const rates = Array.from({ length: 8 }, (_, i) => from + ((to - from) * i) / 7);
  const run = async (page) => {
    assert.equal(await serving(page), '');
    await page.evaluate(() => window.stagecraft.pagePool.startServeSweep());
    const started = await page.evaluate(() => window.stagecraft.pagePool.serveSweepStatus());
    await page.waitForFunction(() => {
      const st = window.stagecraft.pagePool.serveSweepStatus();
      return st.hasResult || st.error;
    }, null, { timeout: 300000, polling: 200 });
    return { started, done: await page.evaluate(() => window.stagecraft.pagePool.serveSweepStatus()) };
  };
  const expected = cli(['serve', '--preset', 'llama3-8b-h100-poisson', '--set', 'workload.requests=400', '--rate-sweep', rates.join(',')]);

  const inWorkers = await open();
  const w = await run(inWorkers.page);
  assert.equal(w.started.pool, true, 'the rate sweep runs in the pool');
  assert.equal(w.done.error, '');
  assert.equal(w.done.text, expected, 'the rate sweep in workers equals `stagecraft serve --rate-sweep`');
  assert.ok(await inWorkers.page.evaluate(() => window.stagecraft.jobs.stats.shards) >= 8, 'its shards ran in workers');

  const onPage = await open('?workers=0');
  const p = await run(onPage.page);
  assert.equal(p.started.pool, false);
  assert.equal(p.done.text, expected, 'the single-thread rate sweep equals it too');
  assert.deepEqual(inWorkers.errors, []);
  assert.deepEqual(onPage.errors, []);
  await inWorkers.page.close();
  await onPage.page.close();
});

test('a bad sweep axis is refused with a message naming it', { timeout: 120000 }, async () => {
  const { page } = await open();
  const e = await page.evaluate(() => window.stagecraft.pagePool.startSweep('speed=1,2', ''));
  assert.match(e, /axis 1.*speed=1,2.*flops/);
  const e2 = await page.evaluate(() => window.stagecraft.pagePool.startSweep('flops=0,2', ''));
  const s = await page.evaluate(() => window.stagecraft.pagePool.sweepStatus());
  assert.equal(e2, '');
  assert.match(s.error, /flops/);
  assert.equal(s.running, false);
  await page.close();
});

test('when no worker can start, the search falls back to the page thread and gives the same result', { timeout: 300000 }, async () => {
  const { page, errors } = await open('', blockWorkers);
  const start = () => window.stagecraft.pagePool.startSearch();
  const r = await runJob(page, start, 'searchStatus');
  assert.ok(r.text.length > 0);
  assert.equal(await page.evaluate(() => window.stagecraft.jobs.stats.shards), 0, 'no shard ran in a worker');
  const expected = cli(['search', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-a100-superpod',
    '--gpus', '64', '--batch', '64', '--top', '10']);
  assert.equal(r.text, expected);
  assert.deepEqual(errors, []);
  await page.close();
});

// A split past the nodes an edit counts (4 stages, 3.4 million nodes): its trace summary is counted in the
// workers, one shard a stage, and the mirror then shows what the CLI prints; with every worker blocked, the same
// summary comes from frame slices.
test('a large split\'s trace summary is counted in the workers, or on the page when none can start', { timeout: 300000 }, async () => {
  const split = 'tp=1,pp=4,dp=1,batch=4096';
  const model = ['--model', 'presets/models/llama3-8b.json'];
  const expected = cli(['estimate', ...model, '--allow-oom', '--system', 'dgx-a100-superpod', '--parallel', split]) +
    cli(['summary', ...model, '--parallel', split]);
  for (const [label, init, shards] of [['workers', undefined, 4], ['blocked', blockWorkers, 0]]) {
    const { page, errors } = await open('', init);
    const frames0 = await page.evaluate(() => window.stagecraft.frames);
    const started = await page.evaluate((spec) => {
      const app = window.stagecraft.app;
      return { error: app.setParallel(spec), text: app.mirrorText() };
    }, split);
    assert.equal(started.error, '');
    assert.match(started.text, /summary: being counted \(4 ranks, 4096 microbatches a step\)\n$/, label);
    await page.waitForFunction((e) => document.getElementById('results').textContent === e, expected, { timeout: 180000 });
    assert.equal(await page.evaluate(() => window.stagecraft.jobs.stats.shards), shards, `${label}: shards in workers`);
    assert.ok((await page.evaluate(() => window.stagecraft.frames)) - frames0 > 0, `${label}: frames drawn meanwhile`);
    assert.deepEqual(errors, [], label);
    await page.close();
  }
});
