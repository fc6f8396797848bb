// The page's side of the worker pool: each frame, takes the jobs the app state raised (PagePool.takeJob: a
// search, a sweep, a rate sweep or a large split's trace summary, src/app/pool_jobs.h), runs them in the pool
// (pool.js), hands every shard's result back to the state (which merges through the engine), and drops the rest
// of a job the state no longer wants (cancelled or replaced). Also serves the Sweeps view's "Export CSV".
import { WorkerPool, poolSize } from './pool.js';

export function workersAvailable() {
  return typeof Worker === 'function';
}

// app: the WebApp; init: {presets: [{file, json}], systems: [{file, system, accelerator}], calibration}.
export function createJobs(app, init, { size = poolSize(), saveText } = {}) {
  const pagePool = app.pool();
  // The workers start with the first job: a page that never searches or sweeps pays nothing for them (each
  // compiles its own wasm instance, which would compete with the first frames).
  let pool = null;
  pagePool.setWorkers(size);
  const running = new Set();
  const stats = { shards: 0, workerMs: 0, mergeMs: 0 }; // mergeMs: the page's time merging shard results

  function tick() {
    // Every job raised since the last frame (an edit raises the summary's beside whatever a button raised).
    for (let job = pagePool.takeJob(); job; job = pagePool.takeJob()) start(job);
    for (const id of running) {
      if (!pagePool.wanted(id)) {
        pool?.cancel(id);
        running.delete(id);
      }
    }
    if (pagePool.takeCsvRequest()) saveText?.('stagecraft-sweep.csv', pagePool.sweepCsv(), 'text/csv');
  }

  function start(job) {
    pool ??= new WorkerPool({ type: 'init', ...init }, size);
    running.add(job.id);
    pool.run(job, {
      onShard: (shard, text, ms) => {
        stats.shards++;
        stats.workerMs += ms;
        const t0 = performance.now();
        const error = pagePool.addShard(job.id, text);
        stats.mergeMs += performance.now() - t0;
        if (error) console.warn(`stagecraft: worker shard ${shard} of job ${job.id}: ${error}`);
      },
      onError: (message) => {
        running.delete(job.id);
        if (!pool.failed) {
          pagePool.fail(job.id, `web worker: ${message}`);
          return;
        }
        // No worker could start (workers blocked, no wasm in workers): this job and every later one run on the
        // page's thread, in frame slices, from the same request (setWorkers(0) moves the summary there itself).
        console.warn(`stagecraft: no web worker could start (${message}); computing on the page`);
        pagePool.setWorkers(0);
        if (job.kind === 'summary') return;
        if (job.kind === 'search') pagePool.startSearch();
        else if (job.kind === 'serve-sweep') pagePool.startServeSweep();
        else pagePool.startSweep(job.axes[0] ?? '', job.axes[1] ?? '');
      },
    });
  }

  // One task of the page's own (not a job of the state's): resolves to its text, or rejects with the worker's
  // error; `poolFailed` on the error when no worker could start (then the page computes it itself).
  let taskId = 0;
  function runTask(kind, link, axes) {
    pool ??= new WorkerPool({ type: 'init', ...init }, size);
    const id = --taskId; // negative: never one of the state's job ids
    return new Promise((resolve, reject) => {
      pool.run({ id, kind, link, axes, shards: 1 }, {
        onShard: (shard, text) => resolve(text),
        onError: (message) => reject(Object.assign(new Error(message), { poolFailed: Boolean(pool.failed) })),
      });
    });
  }

  return { tick, runTask, pagePool, stats, size, get pool() { return pool; } };
}
