// One worker of the pool (pool.js): one instance of the page's wasm module, holding the page's presets, running
// shards of the layout search and of the co-design sweep (src/wasm/worker_bindings.cpp, WorkerCore). A shard's
// request is the page's configuration as link text, so the worker builds the same engine request as the page.
//
// Messages in:  {type: 'init', presets: [{file, json}], systems: [{file, system, accelerator}], calibration,
//                serving: [{file, json}], wasm: the page's compiled WebAssembly.Module, or null}
//               {type: 'job', job, kind: 'search'|'sweep'|'serve-sweep'|'summary'|'timeline', link, axes, fixedLayout,
//                count}: the description of the job whose tasks follow (sent once per worker and job)
//               {type: 'task', job, shard}: one shard of that job
// Messages out: {type: 'ready', shared: whether it runs the page's compiled module} | {type: 'init-error', error}
//               {type: 'result', job, shard, ok, text | error, ms} (a sweep shard's text is a Uint8Array of bytes)
/* global createStagecraft */
importScripts('stagecraft.js');

let core = null;
let started = null;
let job = null; // the description of the job whose tasks arrive ({type: 'job', ...})

async function init(m) {
  // The page's compiled module when it sent one: its code is shared, not compiled again on this core.
  const module = await createStagecraft(
    m.wasm instanceof WebAssembly.Module
      ? {
          instantiateWasm: (imports, receive) => {
            WebAssembly.instantiate(m.wasm, imports).then(
              (instance) => receive(instance, m.wasm),
              (e) => postMessage({ type: 'init-error', error: String(e?.message ?? e) }),
            );
            return {};
          },
        }
      : {},
  );
  core = new module.WorkerCore();
  const errors = [];
  if (m.calibration) {
    const r = core.setCalibration(m.calibration);
    if (!r.ok) errors.push(r.error);
  }
  for (const s of m.systems) {
    const r = core.addSystem(s.file, s.system, s.accelerator);
    if (!r.ok) errors.push(r.error);
  }
  for (const p of m.presets) {
    const r = core.addPreset(p.file, p.json);
    if (!r.ok) errors.push(r.error);
  }
  for (const p of m.serving ?? []) {
    const r = core.addServingPreset(p.file, p.json);
    if (!r.ok) errors.push(r.error);
  }
  // A preset the page refused is refused here too; the page already reported it, and a link never names it.
  return errors;
}

function run(m) {
  const t0 = performance.now();
  const r = m.kind === 'search' ? core.searchShard(m.link, m.shard, m.count)
    : m.kind === 'serve-sweep' ? core.serveSweepShard(m.link, m.axes, m.shard, m.count)
    : m.kind === 'summary' ? core.summaryShard(m.link, m.shard, m.count)
    : m.kind === 'timeline' ? core.timelineShard(m.link, m.axes, m.shard, m.count)
    : core.sweepShard(m.link, m.axes, m.shard, m.count, m.fixedLayout ?? false);
  const ms = performance.now() - t0;
  // A sweep shard comes back as bytes (a Uint8Array of its own): transferred, not copied.
  if (r.ok && r.bytes) postMessage({ type: 'result', job: m.job, shard: m.shard, ok: true, text: r.bytes, ms }, [r.bytes.buffer]);
  else postMessage(r.ok ? { type: 'result', job: m.job, shard: m.shard, ok: true, text: r.text, ms }
                        : { type: 'result', job: m.job, shard: m.shard, ok: false, error: r.error, ms });
}

onmessage = (e) => {
  const m = e.data;
  if (m.type === 'init') {
    started = init(m).then(
      () => postMessage({ type: 'ready', shared: m.wasm instanceof WebAssembly.Module }),
      (err) => {
        postMessage({ type: 'init-error', error: String(err?.message ?? err) });
        throw err;
      },
    );
    return;
  }
  if (m.type === 'job') {
    job = m;
    return;
  }
  if (m.type === 'task') {
    // The job's description came before its first task to this worker (pool.js sends it once).
    if (job?.job !== m.job) {
      postMessage({ type: 'result', job: m.job, shard: m.shard, ok: false, error: `task of job ${m.job} before its description`, ms: 0 });
      return;
    }
    const task = { ...job, shard: m.shard };
    started.then(() => run(task)).catch((err) => {
      postMessage({ type: 'result', job: m.job, shard: m.shard, ok: false, error: String(err?.message ?? err), ms: 0 });
    });
  }
};
