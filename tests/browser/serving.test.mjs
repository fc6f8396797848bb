// The page's Serving tab: it simulates the first serving preset on opening, its report is what
// `stagecraft serve --preset` prints, it draws the KV-occupancy chart, and a rate sweep lists the CLI's points.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { ROOT, itemRect, screenshotPath, startSession, waitFrames, clickItem } from './harness.mjs';

const CLI = path.join(ROOT, 'build', 'stagecraft');
const cli = (...args) => execFileSync(CLI, args, { cwd: ROOT, encoding: 'utf8' });

let session;
before(async () => {
  session = await startSession({ viewport: { width: 1280, height: 900 } });
});
after(async () => {
  await session?.close();
});


test('the Serving tab shows what `stagecraft serve --preset` prints and draws its charts', async () => {
  const { page, errors } = await session.open({});
  try {
    await waitFrames(page, 2);
    await clickItem(page, 'Training on a cluster', 'Serving');
    await page.waitForFunction(() => window.stagecraft.app.servingReport() !== '', null, { timeout: 60000 });
    const report = await page.evaluate(() => window.stagecraft.app.servingReport());
    assert.equal(report, cli('serve', '--preset', 'llama3-8b-h100-poisson'));
    await itemRect(page, 'Training on a cluster', '##kv'); // the occupancy chart is on screen
    await page.screenshot({ path: screenshotPath('serving.png') });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});
