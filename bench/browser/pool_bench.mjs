// Browser benchmark of the worker pool (not part of scripts/test): the same co-design sweep on the page's
// thread (?workers=0, frame slices) and in the pool (one worker per core), wall time of each, and the frame
// intervals the page keeps while each runs (after a one-point warm-up that starts the pool's workers) (the page draws every animation frame; its work per frame is the
// ImGui frame plus, without workers, a 30 ms sweep slice).
// Usage: xvfb-run -a -s "-screen 0 1280x1024x24" node bench/browser/pool_bench.mjs [axis1] [axis2]
//        xvfb-run -a -s "-screen 0 1280x1024x24" node bench/browser/pool_bench.mjs --points N
//   default axes: flops=0.5,1,2,4 x hbm_bw=0.5,1,2,4 (16 points) of Llama 3 8B on 64 A100s, batch 64;
//   --points N: flops x hbm_bw, a x b = N values evenly from 0.5 to 4 (the issue's target: 10^5).
//   --fixed: the sweep of the page's layout at every point ("only the current layout"), no search per point.
//   --repeat N: time the sweep N times in each way (default 5) and print the medians (and each run's page clock).
//   --cold: time each way's first sweep (after the one-point warm-up) instead of its second. By default each page
//   runs the whole sweep once untimed, then the timed one, so that the three ways compare the same code: V8 starts
//   wasm functions in its baseline compiler and tiers hot ones up as they run, and the browser's code cache and
//   the module the page shares with its workers carry that work into later pages. A cold run therefore favours
//   whichever way runs later; measured on 2 cores, 10^5 fixed points: page thread first, the pool 1.54x faster
//   than the page's thread; pool first, 1.24x; both warm, 1.28x.
//   Runs the sweep three ways: on the page's thread in frame slices (?workers=0), in a pool of one worker
//   (?workers=1: one thread, off the page) and in the pool (one worker per core).
//   Per run it also prints the compute per point in the workers and on the page's thread, the page's time merging
//   results, and the CPU seconds of the browser's processes (the renderer holds the page and its workers; the
//   GPU process SwiftShader). SC_JS_FLAGS passes V8 flags to Chromium (tests/browser/harness.mjs), for diagnosis.
//   SC_VIEWPORT=320x240: a small page, so that SwiftShader (the software WebGPU of a machine without a GPU)
//   rasterises little and leaves the cores to the workers; a GPU does that work off the CPU.
import fs from 'node:fs';
import { startSession } from '../../tests/browser/harness.mjs';

const HASH = '#model=llama3-8b&system=dgx-a100-superpod&parallel=tp=8,dp=8,batch=64';
// n values evenly from 0.5 to 4, as "name=v1,v2,...".
const evenly = (name, n) => `${name}=${Array.from({ length: n }, (_, i) => (0.5 + (3.5 * i) / (n - 1)).toPrecision(6)).join(',')}`;
// --fixed: "only the current layout" (one estimate per point instead of a layout search), which makes 10^5 points
// a run of minutes rather than hours.
const fixed = process.argv.includes('--fixed');
const cold = process.argv.includes('--cold');
// --repeat N: the timed sweep N times per way (default 5; 1 with --cold); the figures are the medians.
const repeatAt = process.argv.indexOf('--repeat');
const repeat = cold ? 1 : repeatAt > 0 ? Number(process.argv[repeatAt + 1]) : 5;
if (!(repeat >= 1)) throw new Error('--repeat: expected a count of 1 or more');
const argv = process.argv.slice(2).filter((a, i, all) => a !== '--fixed' && a !== '--cold' && a !== '--repeat' && all[i - 1] !== '--repeat');
// --points N: flops x hbm_bw with a x b = N values (a the largest divisor of N not above its square root).
const points = argv[0] === '--points' ? Number(argv[1]) : 0;
let side = Math.floor(Math.sqrt(points));
while (side > 1 && points % side !== 0) side--;
const axes = points > 1 ? [evenly('flops', side), evenly('hbm_bw', points / side)]
  : [argv[0] ?? 'flops=0.5,1,2,4', argv[1] ?? 'hbm_bw=0.5,1,2,4'];

function stats(intervals) {
  const s = [...intervals].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
  return { frames: s.length, median: q(0.5), p95: q(0.95), max: s[s.length - 1] ?? NaN };
}

// CPU seconds used so far by the browser's processes, by kind (--type=gpu-process, renderer, ...): the page's
// thread and its workers are in its renderer; under SwiftShader the rasteriser is in the GPU process.
function browserCpu() {
  const out = {};
  const tick = 100; // USER_HZ on Linux
  for (const pid of fs.readdirSync('/proc').filter((d) => /^[0-9]+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!/chrom/i.test(cmd.split('\0')[0])) continue;
      const kind = /--type=([a-z-]+)/.exec(cmd)?.[1] ?? 'browser';
      const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      out[kind] = (out[kind] ?? 0) + (Number(f[11]) + Number(f[12])) / tick;
    } catch {}
  }
  return out;
}
// CPU seconds of each thread of the renderer processes (the page's thread is the process's first, its workers are
// "DedicatedWorker"), to tell the workers' share of the timed sweeps from the page's and V8's background threads.
function rendererThreadCpu() {
  const out = new Map();
  for (const pid of fs.readdirSync('/proc').filter((d) => /^[0-9]+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!/chrom/i.test(cmd.split('\0')[0]) || !cmd.includes('--type=renderer')) continue;
      for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
        const st = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const name = tid === pid ? "page's thread" : st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
        const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
        out.set(`${pid}/${tid}`, { name, s: (Number(f[11]) + Number(f[12])) / 100 });
      }
    } catch {}
  }
  return out;
}
// Per sweep: the threads that used 5 ms or more, by name (workers one by one).
function threadCpuSince(a, b, runs) {
  const rows = [];
  for (const [k, v] of b) {
    const d = (v.s - (a.get(k)?.s ?? 0)) / runs;
    if (d >= 0.005) rows.push(`${v.name} ${(1000 * d).toFixed(0)} ms`);
  }
  return rows.join(', ');
}
const cpuSince = (a, b) => Object.keys(b).map((k) => `${k} ${(b[k] - (a[k] ?? 0)).toFixed(2)} s`).join(', ');

async function run(session, query) {
  const page = await session.context.newPage();
  await page.goto(`${session.url}index.html${query}${HASH}`);
  await page.bringToFront();
  await page.waitForFunction(() => window.stagecraft?.firstFrameMs !== null && window.stagecraft?.pagePool, null, { timeout: 60000 });
  const cpuAtStart = browserCpu();
  const finishSrc = `(async () => { const sc = window.stagecraft;
    while (!sc.pagePool.sweepStatus().hasResult && !sc.pagePool.sweepStatus().error) await new Promise((r) => setTimeout(r, 20)); })`;
  await page.evaluate(`window.__finish = ${finishSrc}`);
  const before = await page.evaluate(async ([ax, fixedLayout, warm]) => {
    const sc = window.stagecraft;
    sc.pagePool.setSweepFixedLayout(fixedLayout);
    const finish = window.__finish;
    // Idle frame intervals for comparison: 3 s of nothing but drawing.
    const idle = [];
    await new Promise((done) => {
      let prev = performance.now();
      const end = prev + 3000;
      const tick = (t) => {
        idle.push(t - prev);
        prev = t;
        if (t < end) requestAnimationFrame(tick);
        else done();
      };
      requestAnimationFrame(tick);
    });
    const idleWork = sc.frameWork().slice(-idle.length);
    // Warm-up: one point, so the pool's workers have started and compiled their module before the clock runs.
    sc.pagePool.startSweep('flops=1', '');
    await finish();
    // Unless --cold: the whole sweep once before the timed run, so the engine has optimised the hot code in every
    // thread that runs it (see --cold above).
    if (warm) {
      sc.pagePool.startSweep(ax[0], ax[1]);
      await finish();
    }
    return { idle, idleWork };
  }, [axes, fixed, !cold]);
  const threadsAtStart = rendererThreadCpu();
  const r = await page.evaluate(async ([ax, repeat]) => {
    const sc = window.stagecraft;
    const finish = window.__finish;
    // The timed sweep `repeat` times: one run of a few tenths of a second swings by a tenth on a shared VM.
    const walls = [], secondsEach = [], intervals = [];
    let work = [];
    const framesAtStart = sc.frames;
    const drawn0 = sc.renderer.framesDrawn, skipped0 = sc.renderer.framesSkipped;
    const workerMs0 = sc.jobs?.stats.workerMs ?? 0;
    const pageMs0 = sc.workMs;
    const mergeMs0 = sc.jobs?.stats.mergeMs ?? 0;
    let s = null;
    for (let i = 0; i < repeat; i++) {
      let last = performance.now();
      let on = true;
      const tick = (t) => {
        intervals.push(t - last);
        last = t;
        if (on) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
      const t0 = performance.now();
      const frames0 = sc.frames;
      const err = sc.pagePool.startSweep(ax[0], ax[1]);
      if (err) throw new Error(err);
      await finish();
      work = work.concat(sc.frameWork().slice(-Math.min(1024, sc.frames - frames0)));
      on = false;
      walls.push(performance.now() - t0);
      s = sc.pagePool.sweepStatus();
      secondsEach.push(s.seconds);
      intervals.shift(); // the first: from before the sweep's first frame
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    return { wall: median(walls), seconds: median(secondsEach), secondsEach, rows: s.rows, error: s.error, intervals, work, workers: sc.jobs?.size ?? 0,
             workerMs: ((sc.jobs?.stats.workerMs ?? 0) - workerMs0) / repeat, pageMs: (sc.workMs - pageMs0) / repeat, mergeMs: ((sc.jobs?.stats.mergeMs ?? 0) - mergeMs0) / repeat, drawn: sc.renderer.framesDrawn - drawn0, skipped: sc.renderer.framesSkipped - skipped0, frameCount: (sc.frames - framesAtStart) / repeat };
  }, [axes, repeat]);
  r.threads = threadCpuSince(threadsAtStart, rendererThreadCpu(), repeat);
  r.cpu = cpuSince(cpuAtStart, browserCpu());
  Object.assign(r, before);
  await page.close();
  if (r.error) throw new Error(r.error);
  return r;
}

const [vw, vh] = (process.env.SC_VIEWPORT ?? '1024x768').split('x').map(Number);
const session = await startSession({ viewport: { width: vw, height: vh } });
try {
  const one = await run(session, '?workers=0');
  const single = await run(session, '?workers=1');
  const pool = await run(session, '');
  // Frame interval: between animation frames (includes the browser's compositing, under xvfb SwiftShader's
  // software rasteriser). Frame work: the page's own JS + wasm per frame (main.js stagecraft.frameWork).
  const row = (name, r, work) => {
    const f = stats(r.intervals);
    const w = stats(work);
    const own = r.seconds !== undefined ? ` (page's clock ${r.seconds.toFixed(3)} s${r.secondsEach?.length > 1 ? `: ${r.secondsEach.map((x) => x.toFixed(3)).join(' ')}` : ''})` : '';
    console.log(`${name.padEnd(22)} ${String(r.rows).padStart(6)} rows  ${(r.wall / 1000).toFixed(2).padStart(7)} s${own}   ` +
      `frame interval median ${f.median.toFixed(1)} ms, p95 ${f.p95.toFixed(1)} ms, max ${f.max.toFixed(1)} ms (${f.frames} frames); ` +
      `frame work median ${w.median.toFixed(1)} ms, p95 ${w.p95.toFixed(1)} ms, max ${w.max.toFixed(1)} ms`);
    if (r.rows > 0) {
      console.log(`${''.padEnd(22)} compute per point: in workers ${(1000 * r.workerMs / r.rows).toFixed(1)} us, ` +
        `on the page's thread ${(1000 * r.pageMs / r.rows).toFixed(1)} us (all frame work over ${r.frameCount.toFixed(0)} frames / rows), merging results ${(1000 * r.mergeMs / r.rows).toFixed(1)} us; ` +
        `frames drawn ${r.drawn}, skipped ${r.skipped}`);
      console.log(`${''.padEnd(22)} browser CPU (with the 3 s idle and the warm-up): ${r.cpu}`);
      console.log(`${''.padEnd(22)} CPU a sweep by thread (every renderer, timed sweeps only, /proc at 10 ms): ${r.threads}`);
    }
  };
  const shown = axes.map((a) => (a.length > 40 ? `${a.split('=')[0]} (${a.split(',').length} values)` : a));
  console.log(`sweep ${shown.join(' x ')}${fixed ? ' of the fixed layout tp=8,dp=8' : ''}, Llama 3 8B, 64 GPUs, batch 64; ` +
    `${pool.workers} workers (hardwareConcurrency); ${cold ? 'each way\'s first sweep (--cold)' : 'each way\'s second sweep (warm)'}; ` +
    `load average ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  row('idle (no sweep)', { ...pool, rows: 0, wall: 3000, seconds: undefined, intervals: pool.idle.slice(1) }, pool.idleWork);
  row('page thread (slices)', one, one.work);
  row('pool of 1 worker', single, single.work);
  row(`pool of ${pool.workers} workers`, pool, pool.work);
  console.log(`speed-up of the pool over the page's thread ${(one.wall / pool.wall).toFixed(2)}x, ` +
    `over one worker ${(single.wall / pool.wall).toFixed(2)}x (wall time, polled every 20 ms); by the page's own ` +
    `clock (start to the last result merged) ${(one.seconds / pool.seconds).toFixed(2)}x and ${(single.seconds / pool.seconds).toFixed(2)}x`);
} finally {
  await session.close();
}
