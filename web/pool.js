// A pool of web workers (worker.js), about one per core, each with its own instance of the wasm module. It
// runs the jobs the app state raises (src/app/pool_jobs.h: the layout search, the co-design sweep) shard by
// shard: an idle worker takes the next shard of the oldest job; every result goes to the job's onShard. The
// page's thread only posts messages and merges results, so the interface keeps drawing at full rate.
//
// Cancel: the job's queued shards are dropped and the results of shards already handed out (at most IN_FLIGHT per
// worker) are ignored (a shard is a small part of a job, so a worker is free again soon; terminating it would
// cost a new wasm instance).

// Tasks handed to a worker at once: the next one waits in its message queue while it computes, so it never sits
// idle while its last result crosses to the page and is merged there.
const IN_FLIGHT = 2;

export function poolSize() {
  const cores = Number(navigator.hardwareConcurrency) || 2;
  return Math.max(1, Math.min(cores, 8));
}

export class WorkerPool {
  // init: the message every worker gets first ({type: 'init', presets, systems, calibration}).
  constructor(init, size = poolSize(), script = 'worker.js') {
    this.size = size;
    this.queue = []; // {job, shard} in order
    this.jobs = new Map(); // id -> {job, onShard, onError, pending}
    this.workers = [];
    this.failed = '';
    for (let i = 0; i < size; i++) this.#spawn(script, init);
    if (!this.workers.every((w) => w.dead)) this.failed = '';
  }

  #spawn(script, init) {
    let worker;
    try {
      worker = new Worker(script);
    } catch (e) {
      this.workers.push({ worker: null, ready: false, tasks: [], dead: true });
      this.failed ||= String(e?.message ?? e);
      return;
    }
    const w = { worker, ready: false, tasks: [], dead: false };
    w.worker.onmessage = (e) => this.#message(w, e.data);
    w.worker.onerror = (e) => {
      e.preventDefault?.();
      this.#die(w, e.message || 'the worker failed to load');
    };
    w.worker.postMessage(init);
    this.workers.push(w);
  }

  #die(w, message) {
    w.dead = true;
    const tasks = w.tasks;
    w.tasks = [];
    for (const t of tasks) this.#fail(t.job, message);
    if (this.workers.every((x) => x.dead)) {
      this.failed = message;
      for (const id of [...this.jobs.keys()]) this.#fail(id, `no web worker could start: ${message}`);
    }
    this.#dispatch();
  }

  #message(w, m) {
    if (m.type === 'ready') {
      w.ready = true;
      w.shared = m.shared === true; // runs the page's compiled module (tests read it)
    } else if (m.type === 'init-error') {
      this.#die(w, m.error);
      return;
    } else if (m.type === 'result') {
      w.tasks = w.tasks.filter((t) => t.job !== m.job || t.shard !== m.shard);
      // The worker's next task first, then the page's merge of this result: the worker never waits for it.
      this.#dispatch();
      const j = this.jobs.get(m.job);
      if (j) {
        if (!m.ok) {
          this.#fail(m.job, m.error);
        } else {
          j.pending--;
          if (j.pending === 0) this.jobs.delete(m.job);
          j.onShard(m.shard, m.text, m.ms);
        }
      }
    }
    this.#dispatch();
  }

  #fail(id, message) {
    const j = this.jobs.get(id);
    if (!j) return;
    this.cancel(id);
    j.onError(message);
  }

  // job: {id, kind, link, axes, shards, fixedLayout} (PagePool.takeJob()).
  run(job, { onShard, onError }) {
    if (this.failed) {
      onError(`no web worker could start: ${this.failed}`);
      return;
    }
    this.jobs.set(job.id, { job, onShard, onError, pending: job.shards });
    for (let shard = 0; shard < job.shards; shard++) this.queue.push({ job: job.id, shard });
    this.#dispatch();
  }

  cancel(id) {
    this.jobs.delete(id);
    this.queue = this.queue.filter((t) => t.job !== id);
  }

  has(id) {
    return this.jobs.has(id);
  }

  busy() {
    return this.workers.filter((w) => w.tasks.length > 0).length;
  }

  #dispatch() {
    // A worker's second task waits in its queue only while the pool's queue has a task for every worker besides:
    // near the end, a task queued behind a busy worker would keep an idle one waiting.
    const live = this.workers.filter((w) => w.ready && !w.dead).length;
    for (const w of this.workers) {
      while (w.ready && !w.dead && w.tasks.length < (this.queue.length > live ? IN_FLIGHT : 1) && this.queue.length > 0) {
        const t = this.queue.shift();
        const { job } = this.jobs.get(t.job);
        w.tasks.push(t);
        // The job's description crosses to a worker once; its tasks then carry only the shard (a long sweep axis is
        // kilobytes of text, which used to be cloned into every task).
        if (w.job !== job.id) {
          w.job = job.id;
          w.worker.postMessage({ type: 'job', job: job.id, kind: job.kind, link: job.link, axes: job.axes, fixedLayout: job.fixedLayout ?? false, count: job.shards });
        }
        w.worker.postMessage({ type: 'task', job: job.id, shard: t.shard });
      }
    }
  }

  terminate() {
    for (const w of this.workers) w.worker?.terminate();
    this.workers = [];
  }
}
