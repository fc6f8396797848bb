import { startSession } from '../../tests/browser/harness.mjs';
const HASH = '#model=llama3-8b&system=dgx-a100-superpod&parallel=tp=8,dp=8,batch=64';
const evenly = (name, n) => `${name}=${Array.from({ length: n }, (_, i) => (0.5 + (3.5 * i) / (n - 1)).toPrecision(6)).join(',')}`;
const axes = [evenly('flops', 250), evenly('hbm_bw', 400)];
const session = await startSession({ viewport: { width: 1024, height: 768 } });
try {
  for (const q of ['?workers=0', '']) {
  const page = await session.context.newPage();
  await page.goto(`${session.url}index.html${q}${HASH}`);
  await page.waitForFunction(() => window.stagecraft?.firstFrameMs !== null && window.stagecraft?.pagePool, null, { timeout: 60000 });
  const r = await page.evaluate(async (ax) => {
    const sc = window.stagecraft;
    sc.pagePool.setSweepFixedLayout(true);
    const finish = async () => { while (!sc.pagePool.sweepStatus().hasResult && !sc.pagePool.sweepStatus().error) await new Promise((r) => setTimeout(r, 1)); };
    sc.pagePool.startSweep('flops=1', ''); await finish();
    const out = [];
    for (let rep = 0; rep < 3; rep++) {
      globalThis.__tl = [];
      const t0 = performance.now();
      sc.pagePool.startSweep(ax[0], ax[1]);
      await finish();
      const t1 = performance.now();
      const tl = globalThis.__tl;
      const sh = tl.filter((e) => e[0] === 'shard');
      const st = tl.find((e) => e[0] === 'start');
      const posts = tl.filter((e) => e[0] === 'post');
      const wms = sh.reduce((a, e) => a + e[3], 0);
      out.push({ wall: t1 - t0, start: st ? st[1] - t0 : null, firstPost: posts[0] ? posts[0][1] - t0 : null,
        firstShard: sh[0] ? sh[0][1] - t0 : null, lastShard: sh.length ? sh[sh.length - 1][1] - t0 : null, shards: sh.length, workerMs: wms,
        firstMs: sh.slice(0, 4).map((e) => e[3].toFixed(1)).join(','), lastMs: sh.slice(-4).map((e) => e[3].toFixed(1)).join(',') });
    }
    return out;
  }, axes);
  console.log(q || 'pool', JSON.stringify(r, null, 0));
  await page.close();
  }
} finally { await session.close(); }
