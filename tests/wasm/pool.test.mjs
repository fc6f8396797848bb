// The worker pool's two ends without a browser (src/wasm/worker_bindings.cpp): the page's state raises a job,
// WorkerCores (what each web worker holds) run its shards from the link text, the page merges their results,
// and the merged search and sweep equal the ones the page computes alone (frame slices) and the CLI prints.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { loadStagecraft, root } from './load.mjs';

const sc = await loadStagecraft();
const read = (rel) => fs.readFileSync(path.join(root, rel), 'utf8');
const CLI = path.join(root, 'build', 'stagecraft');

function presets() {
  const systems = JSON.parse(read('presets/systems/index.json')).map((file) => {
    const system = read(`presets/systems/${file}`);
    return { file, system, accelerator: read(`presets/hardware/${JSON.parse(system).accelerator}.json`) };
  });
  const models = JSON.parse(read('presets/models/index.json')).map((file) => ({ file, json: read(`presets/models/${file}`) }));
  return { systems, models, calibration: read('presets/calibration/measured.json') };
}
const P = presets();

function page(split) {
  const app = new sc.WebApp();
  assert.equal(app.setCalibration(P.calibration), '');
  for (const s of P.systems) assert.equal(app.addSystem(s.file, s.system, s.accelerator), '');
  for (const m of P.models) assert.equal(app.addPreset(m.file, m.json), '');
  assert.ok(app.selectPreset('llama3-8b'));
  assert.ok(app.selectSystem('dgx-a100-superpod'));
  assert.equal(app.setParallel(split), '');
  return app;
}

function worker() {
  const core = new sc.WorkerCore();
  assert.ok(core.setCalibration(P.calibration).ok);
  for (const s of P.systems) assert.ok(core.addSystem(s.file, s.system, s.accelerator).ok);
  for (const m of P.models) assert.ok(core.addPreset(m.file, m.json).ok);
  return core;
}

// Runs the job the page raised on `workers` WorkerCores, shards dealt round-robin and handed back out of order.
function runJob(pool, workers) {
  const job = pool.takeJob();
  assert.ok(job, 'the page raised a job');
  const results = [];
  for (let shard = 0; shard < job.shards; shard++) {
    const w = workers[shard % workers.length];
    const r = job.kind === 'search' ? w.searchShard(job.link, shard, job.shards) : w.sweepShard(job.link, job.axes, shard, job.shards, job.fixedLayout);
    assert.ok(r.ok, r.error);
    // A sweep shard is bytes (a Uint8Array the worker transfers), a search shard text.
    if (job.kind === 'sweep') assert.ok(r.bytes instanceof Uint8Array && r.text === undefined, 'a sweep shard is bytes');
    results.push(job.kind === 'sweep' ? r.bytes : r.text);
  }
  for (let i = results.length - 1; i >= 0; i--) assert.equal(pool.addShard(job.id, results[i]), '');
  assert.equal(pool.wanted(job.id), false, 'a finished job wants no more shards');
}

const SPLIT = 'tp=8,dp=8,batch=64';

test('a search run by worker cores equals the page alone and `stagecraft search`', () => {
  const app = page(SPLIT);
  const pool = app.pool();
  pool.setWorkers(2);
  pool.startSearch();
  assert.equal(pool.searchStatus().pool, true);
  runJob(pool, [worker(), worker()]);
  const viaPool = pool.searchStatus();
  assert.equal(viaPool.error, '');
  assert.ok(viaPool.hasResult);

  const alone = page(SPLIT);
  const p2 = alone.pool();
  p2.startSearch();
  assert.equal(p2.searchStatus().pool, false);
  while (!p2.searchStatus().hasResult) alone.frame(1280, 800, 1, 0); // no ImGui window is open: StepSearch runs
  assert.equal(viaPool.text, p2.searchStatus().text);
  if (fs.existsSync(CLI)) {
    const cli = execFileSync(CLI, ['search', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-a100-superpod',
      '--gpus', '64', '--batch', '64'], { cwd: root, encoding: 'utf8' });
    assert.equal(viaPool.text, cli);
  }
});

test('a sweep run by worker cores equals `stagecraft sweep`', () => {
  const app = page(SPLIT);
  const pool = app.pool();
  pool.setWorkers(3);
  assert.equal(pool.startSweep('flops=1,2', 'net_bw=0.5,1'), '');
  runJob(pool, [worker(), worker(), worker()]);
  const s = pool.sweepStatus();
  assert.equal(s.error, '');
  assert.equal(s.rows, 4);
  if (fs.existsSync(CLI)) {
    const cli = execFileSync(CLI, ['sweep', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-a100-superpod',
      '--gpus', '64', '--batch', '64', '--axis', 'flops=1,2', '--axis', 'net_bw=0.5,1'], { cwd: root, encoding: 'utf8' });
    assert.equal(pool.sweepCsv(), cli);
  }
});

// "only the current layout": the page's layout at every point, one estimate each; the CSV is `sweep --layout`'s,
// in worker cores and in the page's frame slices alike.
test('a fixed-layout sweep run by worker cores equals `stagecraft sweep --layout`', () => {
  const csvs = [];
  for (const workers of [3, 0]) {
    const app = page(SPLIT);
    const pool = app.pool();
    pool.setWorkers(workers);
    pool.setSweepFixedLayout(true);
    assert.equal(pool.startSweep('flops=0.5,1,2', 'hbm_bw=1,2'), '');
    if (workers) runJob(pool, [worker(), worker(), worker()]);
    else for (let i = 0; i < 1000 && !pool.sweepStatus().hasResult && !pool.sweepStatus().error; i++) app.frame(1280, 800, 1, i / 60);
    const s = pool.sweepStatus();
    assert.equal(s.error, '');
    assert.equal(s.rows, 6);
    csvs.push(pool.sweepCsv());
  }
  assert.equal(csvs[0], csvs[1], 'workers and frame slices give the same rows');
  // gpus, power limit (0: none), batch, found
  assert.match(csvs[0].split('\n')[1], /,64,0,64,1,/, 'the layout\'s GPUs and batch');
  if (fs.existsSync(CLI)) {
    const cli = execFileSync(CLI, ['sweep', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-a100-superpod',
      '--layout', SPLIT, '--axis', 'flops=0.5,1,2', '--axis', 'hbm_bw=1,2'], { cwd: root, encoding: 'utf8' });
    assert.equal(csvs[0], cli);
  }
});

test('bad requests to a worker core are errors naming the field', () => {
  const w = worker();
  assert.match(w.searchShard('v1;model=nope;parallel=tp=1;end', 0, 1).error, /link.*model/);
  assert.match(w.searchShard('garbage', 0, 1).error, /link/);
  const app = page(SPLIT);
  const link = app.linkState().link;
  assert.match(w.searchShard(link, 5, 4).error, /shard/);
  assert.match(w.searchShard(link, 0, 0).error, /count/);
  assert.match(w.sweepShard(link, 'flops=1', 0, 1, false).error, /axes/);
  assert.match(w.sweepShard(link, ['speed=2'], 0, 1, false).error, /speed/);
  assert.match(w.sweepShard(link, ['flops=1'], 0, 1, 'yes').error, /fixedLayout/);
  assert.match(app.pool().addShard(12345, 'x'), /^$/, 'a shard of a job nobody wants is ignored');
});

test('a malformed shard result ends the job with a clear message', () => {
  const app = page(SPLIT);
  const pool = app.pool();
  pool.setWorkers(1);
  pool.startSearch();
  const job = pool.takeJob();
  assert.match(pool.addShard(job.id, '{"stats": 1}'), /search shard: malformed/);
  assert.equal(pool.wanted(job.id), false);
  assert.match(pool.searchStatus().error, /malformed/);
});
