// The configuration as a link: what the user edits follows into the URL hash, a new page opened with that URL
// shows the same state and the same results, "Copy link" copies that URL, and a damaged hash shows a clear
// message on the defaults.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { itemRect, screenshotPath, startSession, waitFrames, clickItem } from './harness.mjs';

let session;
before(async () => {
  session = await startSession();
});
after(async () => {
  await session?.close();
});

const mirror = (page) => page.evaluate(() => document.getElementById('results').textContent);
const linkText = (page) => page.evaluate(() => window.stagecraft.app.linkState().link);
const status = (page) => page.evaluate(() => (document.getElementById('status').hidden ? '' : document.getElementById('status').textContent));
// The link text a hash holds, decoded by the page's own module.
const decodeHash = (page) => page.evaluate(async () => (await import('./link.js')).decodeLink(location.hash.slice(1)));

// Waits until the URL hash decodes to `link` (the debounced write may lag an edit by 300 ms and a frame).
async function hashHolds(page, link, timeout = 5000) {
  const end = Date.now() + timeout;
  let seen = '';
  while (Date.now() < end) {
    seen = await page.evaluate(async () => {
      try {
        return (await import('./link.js')).decodeLink(location.hash.slice(1));
      } catch (e) {
        return `(${location.hash}: ${e.message})`;
      }
    });
    if (seen === link) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(seen, link, 'the URL hash did not come to hold the link');
}


// Types `text` into a field and waits until the state's link holds `expect`.
async function typeInto(page, window, label, text, expect) {
  await clickItem(page, window, label);
  await page.waitForFunction(() => window.stagecraft.app.wantTextInput(), null, { timeout: 5000 });
  await page.keyboard.press('Control+A');
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await page.waitForFunction((e) => window.stagecraft.app.linkState().link?.includes(e), expect, { timeout: 5000 });
}

// The results of the page opened without a hash, for comparing with a refused link's.
async function defaults() {
  const { page } = await session.open();
  try {
    await waitFrames(page, 2);
    return { mirror: await mirror(page), link: await linkText(page) };
  } finally {
    await page.close();
  }
}

test('edits go into the hash, and a new page opened with that URL shows the same state and results', async () => {
  const base = await defaults();
  const { page, errors } = await session.open({ hash: '#model=llama3-8b&system=dgx-h100-superpod' });
  let url;
  let edited;
  try {
    await waitFrames(page, 2);
    const opened = await page.evaluate(() => location.hash);
    await typeInto(page, 'Model', 'layers', '16', ';layers=16;');
    // ImGui's combos announce no label to the item hooks: the precision combo is the row under "mtp_layers" (a dense
    // model without a sliding window has no MoE or full_every rows between them); its popup is "##Combo_00".
    const seq = await itemRect(page, 'Model', 'mtp_layers');
    await page.mouse.move(seq.x + seq.w / 2, seq.y + seq.h * 1.5 + 4);
    await waitFrames(page, 2);
    await page.mouse.click(seq.x + seq.w / 2, seq.y + seq.h * 1.5 + 4);
    await clickItem(page, '##Combo_00', 'fp8');
    await page.waitForFunction(() => window.stagecraft.app.linkState().link.includes(';precision=fp8;'), null, { timeout: 5000 });
    await typeInto(page, 'Parallelism and traces', 'pp', '2', ',pp=2,');
    await typeInto(page, 'Training on a cluster', '##bw', '100', ';net.0.bandwidth=100;');  // the first network level's bandwidth
    edited = await linkText(page);
    for (const part of [';layers=16;', ';precision=fp8;', ';system=dgx-h100-superpod;', ';net.0.bandwidth=100;', ',pp=2,'])
      assert.ok(edited.includes(part), `link text lacks "${part}": ${edited}`);
    // The hash follows 300 ms after the last edit (a hash written while the edits went on is replaced).
    await hashHolds(page, edited);
    assert.notEqual(await page.evaluate(() => location.hash), opened);
    url = await page.evaluate(() => location.href);
    edited = { link: edited, mirror: await mirror(page) };
    assert.match(edited.mirror, /MFU/);
    assert.notEqual(edited.mirror, base.mirror);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
  const hash = url.slice(url.indexOf('#'));
  const reopened = await session.open({ hash });
  try {
    await waitFrames(reopened.page, 2);
    assert.equal(await linkText(reopened.page), edited.link);
    assert.equal(await mirror(reopened.page), edited.mirror);  // the same step time, MFU, memory, summary
    assert.equal(await status(reopened.page), '');
    // Opening it does not rewrite the hash.
    await waitFrames(reopened.page, 30);
    assert.equal(await reopened.page.evaluate(() => location.hash), hash);
    await reopened.page.screenshot({ path: screenshotPath('link-reopened.png') });
    assert.deepEqual(reopened.errors, []);
  } finally {
    await reopened.page.close();
  }
});

test('a damaged hash shows a clear message on the defaults, and the next edit clears it', async () => {
  const base = await defaults();
  const { page } = await session.open({ hash: '#zzz' });
  try {
    await waitFrames(page, 2);
    const message = 'link: unknown format "z" (its first character); this page reads links starting with "d"';
    assert.ok((await status(page)).startsWith(message), await status(page));
    assert.ok((await page.evaluate(() => window.stagecraft.linkError)).startsWith(message));
    assert.equal(await mirror(page), base.mirror);
    assert.equal(await linkText(page), base.link);
    await page.screenshot({ path: screenshotPath('link-damaged.png') });
    await typeInto(page, 'Model', 'layers', '16', ';layers=16;');
    await hashHolds(page, await linkText(page));
    assert.equal(await status(page), '');
    assert.equal(await page.evaluate(() => window.stagecraft.linkError), '');
  } finally {
    await page.close();
  }
});

test('links that decompress but name what the page lacks, or are cut, are refused by name', async () => {
  const base = await defaults();
  const { page } = await session.open();
  try {
    await waitFrames(page, 2);
    const good = await page.evaluate(async () => (await import('./link.js')).encodeLink(window.stagecraft.app.linkState().link));
    const cases = [
      ['v1;model=nosuch;parallel=tp=1;end', /^link: model: no model preset "nosuch" on this page; it has .*llama3-8b/],
      ['v1;model=llama3-8b;layers=12x;parallel=tp=1;end', /^link: layers: expected an integer, got "12x"$/],
      ['v1;model=llama3-8b;parallel=tp=1;system=dgx-h100-superpod;net.7.latency=1;end',
       /^link: net\.7: "dgx-h100-superpod" has \d network levels, net\.0 to net\.\d$/],
      ['v9;model=llama3-8b;parallel=tp=1;end', /^link: unknown version "v9"; this page reads v1$/],
    ];
    for (const [text, re] of cases) {
      const hash = await page.evaluate(async (t) => (await import('./link.js')).encodeLink(t), text);
      const other = await session.open({ hash: `#${hash}` });
      try {
        await waitFrames(other.page, 2);
        assert.match(await status(other.page), re, text);
        assert.equal(await mirror(other.page), base.mirror, text);
      } finally {
        await other.page.close();
      }
    }
    // Cut short: the compressed stream ends early.
    const cut = await session.open({ hash: `#${good.slice(0, -4)}` });
    try {
      await waitFrames(cut.page, 2);
      assert.match(await status(cut.page), /^link: (not valid compressed data|the compressed data ends early|\d+ base64url)/);
      assert.equal(await mirror(cut.page), base.mirror);
    } finally {
      await cut.page.close();
    }
  } finally {
    await page.close();
  }
});

// navigator.clipboard stand-in: what the page copies is kept in window.__copied.
function fakeClipboard() {
  Object.defineProperty(navigator, 'clipboard', {
    value: { writeText: async (t) => void (window.__copied = t), readText: async () => window.__copied ?? '' },
  });
}

test('"Copy link" copies the whole URL of the current state at once', async () => {
  const { page, errors } = await session.open({ initScript: fakeClipboard });
  try {
    await waitFrames(page, 2);
    await typeInto(page, 'Parallelism and traces', 'dp', '16', ',dp=16,');
    await clickItem(page, 'Model', 'Copy link');  // before the 300 ms have passed: the hash is written now
    await page.waitForFunction(() => window.__copied !== undefined, null, { timeout: 5000 });
    const copied = await page.evaluate(() => window.__copied);
    assert.equal(copied, await page.evaluate(() => location.href));
    assert.match(copied, /index\.html#d[A-Za-z0-9_-]+$/);
    assert.equal(await decodeHash(page), await linkText(page));
    assert.match(await linkText(page), /,dp=16,/);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});
