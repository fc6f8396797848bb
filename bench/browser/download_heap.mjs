// Browser benchmark (not part of scripts/test): memory while the page streams every rank's trace of a
// 32,768-rank job (GPT-3 175B, tp=8, pp=16, dp=256: about 20 GB of Chakra ET) through "Download traces".
// The folder (File System Access) path runs whole, into a folder that counts the bytes and keeps none, so what
// is measured is the page's own memory: the JavaScript heap (CDP Runtime.getHeapUsage) and the wasm module's
// linear memory, sampled every second, against the issue's target of heap growth under 256 MB.
// The zip path (browsers without File System Access) is measured with --zip: the same files deflated into Blobs
// (the browser's storage, not the heap); the saved zip is dropped.
// Usage: xvfb-run -a -s "-screen 0 1280x1024x24" node bench/browser/download_heap.mjs [--zip] [ranks-to-write]
//   (default: all; a number stops the download after that many ranks, for a quick look)
import os from 'node:os';
import { startSession, waitFrames } from '../../tests/browser/harness.mjs';

const HASH = '#model=gpt3-175b&system=dgx-h100-superpod&parallel=tp=8,pp=16,dp=256,batch=2048';
const zip = process.argv.includes('--zip');
const stopAfter = Number(process.argv.filter((a) => a !== '--zip')[2] ?? 0);

// A folder that takes every file and keeps only the byte count.
const countingFolder = ({ limit, zip }) => {
  window.__bytes = 0;
  window.__files = 0;
  if (limit > 0) window.__limit = limit;
  if (zip) {
    Object.defineProperty(window, 'showDirectoryPicker', { value: undefined, configurable: true });
    return;
  }
  const dir = {
    async getFileHandle(name, opts) {
      if (!opts?.create) throw new DOMException(`${name} not found`, 'NotFoundError');
      return {
        async createWritable() {
          return {
            async write(data) {
              window.__bytes += data.byteLength ?? data.length;
            },
            async close() {
              // A real folder's writes are I/O that return through the event loop; so does this one's, every
              // 16 files, so the page keeps drawing and the samples below are taken during the download.
              if (++window.__files % 16 === 0) await new Promise((r) => setTimeout(r, 0));
            },
          };
        },
      };
    },
    async removeEntry() {},
  };
  window.showDirectoryPicker = async () => dir;
};

const session = await startSession();
const MB = 1 << 20;
try {
  const { page } = await session.open({ hash: HASH, initScript: countingFolder, initArg: { limit: stopAfter, zip } });
  await waitFrames(page, 3);
  const cdp = await page.context().newCDPSession(page);
  const sample = async () => {
    const heap = await cdp.send('Runtime.getHeapUsage');
    const wasm = await page.evaluate(() => window.stagecraft.module.HEAPU8.length);
    const files = await page.evaluate(() => window.__files);
    return { heap: heap.usedSize, wasm, files };
  };
  await cdp.send('HeapProfiler.collectGarbage');
  const base = await sample();
  const t0 = Date.now();
  const run = page.evaluate(() => {
    const app = window.stagecraft.app;
    const set = app.setDownloadProgress.bind(app);
    app.setDownloadProgress = (done, total, bytes, running, message) => {
      if (typeof showDirectoryPicker !== 'function') (window.__files = done), (window.__bytes = bytes);
      set(done, total, bytes, running, message);
    };
    if (window.__limit) {
      const cancelled = app.downloadCancelled.bind(app);
      app.downloadCancelled = () => cancelled() || window.__files >= window.__limit;
    }
    return window.stagecraft.downloadTraces(() => {}); // the zip, when there is no folder API, is dropped
  });
  let done = false;
  run.then(() => {
    done = true;
  });
  let peak = base;
  const samples = [];
  while (!done) {
    await new Promise((r) => setTimeout(r, 1000));
    const s = await sample();
    samples.push(s);
    if (s.heap > peak.heap) peak = { ...peak, heap: s.heap };
    if (s.wasm > peak.wasm) peak = { ...peak, wasm: s.wasm };
  }
  await run;
  const seconds = (Date.now() - t0) / 1000;
  const out = await page.evaluate(() => ({ bytes: window.__bytes, files: window.__files }));
  console.log(`load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(`wrote ${out.files} files, ${(out.bytes / 1e9).toFixed(2)} GB in ${seconds.toFixed(0)} s ` +
    `(${(out.bytes / 1e6 / seconds).toFixed(0)} MB/s)`);
  console.log(`JS heap: ${(base.heap / MB).toFixed(1)} MB before, peak ${(peak.heap / MB).toFixed(1)} MB ` +
    `(growth ${((peak.heap - base.heap) / MB).toFixed(1)} MB; target < 256 MB)`);
  console.log(`wasm memory: ${(base.wasm / MB).toFixed(0)} MB before, peak ${(peak.wasm / MB).toFixed(0)} MB ` +
    `(growth ${((peak.wasm - base.wasm) / MB).toFixed(0)} MB)`);
  console.log(`samples (s, files, heap MB): ${samples.filter((_, i) => i % 10 === 0)
    .map((s, i) => `${i * 10}:${s.files}:${(s.heap / MB).toFixed(0)}`).join(' ')}`);
} finally {
  await session.close();
}
