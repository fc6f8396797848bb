// Browser benchmark (not part of scripts/test): time to the first drawn frame (window.stagecraft.firstFrameMs,
// ms since navigation start) on the first visit and on later visits, whose files come from the service
// worker's cache (web/sw.js; network-first, so the local server still answers, but nothing is compiled cold
// by the HTTP layer). Median of 5 later visits, each in a new tab.
// Usage: xvfb-run -a -s "-screen 0 1280x1024x24" node bench/browser/first_frame.mjs
import os from 'node:os';
import { startSession, waitReady } from '../../tests/browser/harness.mjs';

const session = await startSession();
try {
  const visit = async () => {
    const page = await session.context.newPage();
    await page.goto(`${session.url}index.html`);
    await page.bringToFront();
    const r = await waitReady(page, 60000);
    const offline = await page.evaluate(() => window.stagecraft.offline);
    const controlled = await page.evaluate(() => !!navigator.serviceWorker.controller);
    // Where the time went: the page's marks (main.js) and when the big files arrived.
    const parts = await page.evaluate(() => {
      const at = {};
      const nav = performance.getEntriesByType('navigation')[0];
      at['html'] = nav.responseEnd;
      at['dom-ready'] = nav.domContentLoadedEventStart;
      for (const r of performance.getEntriesByType('resource')) {
        const name = r.name.split('/').pop();
        if (name === 'stagecraft.wasm' || name === 'stagecraft.js' || name === 'main.js') at[name] = r.responseEnd;
      }
      for (const m of performance.getEntriesByType('mark')) at[m.name.replace('stagecraft:', '')] = m.startTime;
      return at;
    });
    await page.close();
    return { ms: r.firstFrameMs, offline, controlled, parts };
  };
  const first = await visit();
  const later = [];
  for (let i = 0; i < 5; i++) later.push(await visit());
  const ms = later.map((v) => v.ms).sort((a, b) => a - b);
  console.log(`load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(`first visit: first frame ${first.ms.toFixed(0)} ms (service worker active after it: ${first.offline})`);
  console.log(`later visits (controlled by the service worker: ${later.every((v) => v.controlled)}): median ` +
    `${ms[2].toFixed(0)} ms, min ${ms[0].toFixed(0)} ms, max ${ms[4].toFixed(0)} ms`);
  const names = Object.keys(later[0].parts).sort((a, b) => later[0].parts[a] - later[0].parts[b]);
  const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
  console.log('later visits, median ms since navigation start: ' +
    names.map((n) => `${n} ${median(later.map((v) => v.parts[n] ?? NaN)).toFixed(0)}`).join(', '));
} finally {
  await session.close();
}
