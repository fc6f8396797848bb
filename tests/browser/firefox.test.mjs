// A second engine: Debian's Firefox ESR, driven by npm's puppeteer-core over WebDriver BiDi (docs/toolchain.md).
// Headless it finds no WebGPU adapter, so the page without WebGPU is what runs: the module loads and computes the
// CLI's results, and the trace download, with no File System Access API there, is the zip whose files hold the
// bytes `stagecraft trace` writes. Skipped, saying why, when firefox-esr or puppeteer-core is missing.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { ROOT, assertFilesEqualCliTrace, serveDir } from './harness.mjs';

const FIREFOX = process.env.SC_FIREFOX ?? '/usr/bin/firefox-esr';
const CLI = path.join(ROOT, 'build', 'stagecraft');
const require = createRequire(path.join(ROOT, 'web', 'package.json'));
let puppeteer = null;
try {
  puppeteer = require('puppeteer-core');
} catch {
  // reported by the skip below
}
const missing = !fs.existsSync(FIREFOX) ? `${FIREFOX} is not installed (apt-get install firefox-esr)`
  : !puppeteer ? 'puppeteer-core is not installed in web/ (npm install in web/)' : '';

let server;
let browser;
let profile;
before(async () => {
  if (missing) return;
  server = await serveDir();
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'sc-firefox-'));
  browser = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile,
    extraPrefsFirefox: { 'network.proxy.type': 0, 'app.update.enabled': false, 'browser.shell.checkDefaultBrowser': false } });
});
after(async () => {
  await browser?.close();
  await server?.close();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
});

const split = 'tp=2,pp=2,dp=2,batch=8';
const cli = (...args) => execFileSync(CLI, args, { cwd: ROOT });

async function open(hash) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${server.url}index.html${hash}`);
  await page.waitForFunction(() => window.stagecraft?.app && window.stagecraft.ready, { timeout: 60000 });
  await page.evaluate(() => window.stagecraft.ready.then(() => true));
  return { page, errors };
}

test('Firefox: the page without WebGPU computes what the CLI prints', { skip: missing || false, timeout: 180000 }, async () => {
  const { page, errors } = await open(`#model=llama3-8b&system=dgx-h100-superpod&parallel=${split}`);
  try {
    const state = await page.evaluate(() => ({ gpu: window.stagecraft.gpu, fallback: !document.getElementById('fallback').hidden }));
    assert.deepEqual(state, { gpu: false, fallback: true });
    const text = await page.evaluate(() => document.getElementById('results').textContent);
    const expected = cli('estimate', '--model', 'presets/models/llama3-8b.json', '--system', 'dgx-h100-superpod', '--parallel', split).toString() +
      cli('summary', '--model', 'presets/models/llama3-8b.json', '--parallel', split).toString();
    assert.equal(text, expected);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

// Without frames, the page counts a large split's summary a slice a timer tick (web/main.js pumpSummary).
test('Firefox: the page without WebGPU counts a large split\'s summary, then shows what the CLI prints', { skip: missing || false, timeout: 180000 }, async () => {
  const { page, errors } = await open(`#model=llama3-8b&system=dgx-h100-superpod&parallel=${split}`);
  try {
    const large = 'tp=1,dp=1,batch=16384';
    const model = ['--model', 'presets/models/llama3-8b.json'];
    const estimate = cli('estimate', ...model, '--allow-oom', '--system', 'dgx-h100-superpod', '--parallel', large).toString();
    const expected = estimate + cli('summary', ...model, '--parallel', large).toString();
    const started = await page.evaluate((spec) => {
      const app = window.stagecraft.app;
      return { error: app.setParallel(spec), text: app.mirrorText() };
    }, large);
    assert.deepEqual(started, { error: '', text: `${estimate}summary: being counted (1 ranks, 16384 microbatches a step)\n` });
    await page.waitForFunction((e) => document.getElementById('results').textContent === e, { timeout: 120000 }, expected);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('Firefox: "Download traces" gives a zip of the CLI trace bytes', { skip: missing || false, timeout: 180000 }, async () => {
  const { page, errors } = await open(`#model=llama3-8b&system=dgx-a100-superpod&parallel=${split}`);
  try {
    assert.equal(await page.evaluate(() => typeof window.showDirectoryPicker), 'undefined');
    // The zip as the page would save it, read back as base64 (the download manager itself is Firefox's).
    const zip = await page.evaluate(async () => {
      let saved = null;
      await window.stagecraft.downloadTraces((name, blob) => { saved = { name, blob }; });
      if (!saved) return null;
      const bytes = new Uint8Array(await saved.blob.arrayBuffer());
      let bin = '';
      for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return { name: saved.name, base64: btoa(bin) };
    });
    assert.ok(zip, 'the zip was saved');
    assert.equal(zip.name, 'stagecraft-trace.zip');
    const { unzipSync } = require('fflate');
    const files = unzipSync(new Uint8Array(Buffer.from(zip.base64, 'base64')));
    assertFilesEqualCliTrace(assert, files, split);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('Firefox: the page without WebGPU edits the model, cluster and layout, keeps them in the link, and the link restores them', { skip: missing || false, timeout: 180000 }, async () => {
  const { page, errors } = await open(`#model=llama3-8b&system=dgx-h100-superpod&parallel=${split}`);
  let again = null;
  try {
    const layout = 'tp=4,pp=2,dp=1,batch=8';
    await page.select('#fallback-model', 'llama3-70b.json');
    await page.select('#fallback-system', 'dgx-a100-superpod.json');
    await page.click('#fallback-layout', { count: 3 });
    await page.keyboard.press('Backspace');
    await page.type('#fallback-layout', layout);
    await page.keyboard.press('Enter');
    const text = () => page.evaluate(() => document.getElementById('results').textContent);
    const m70 = ['--model', 'presets/models/llama3-70b.json'];
    const expected = cli('estimate', ...m70, '--system', 'dgx-a100-superpod', '--parallel', layout, '--allow-oom').toString() +
      cli('summary', ...m70, '--parallel', layout).toString();
    assert.equal(await text(), expected);
    const hash = await page.evaluate(() => location.hash);
    assert.ok(hash.length > 2 && !hash.includes('='), `the hash is a link: ${hash}`);

    // A bad layout: its error beside the field, and the results say it.
    await page.click('#fallback-layout', { count: 3 });
    await page.keyboard.press('Backspace');
    await page.type('#fallback-layout', 'tp=3,batch=8');
    await page.keyboard.press('Enter');
    assert.match(await page.evaluate(() => document.getElementById('fallback-note').textContent), /^Layout: tp/);
    assert.match(await text(), /parallel error: tp/);

    ({ page: again } = await open(hash));
    assert.equal(await again.evaluate(() => document.getElementById('results').textContent), expected);
    const controls = await again.evaluate(() => ({
      model: document.getElementById('fallback-model').value,
      system: document.getElementById('fallback-system').value,
    }));
    assert.deepEqual(controls, { model: 'llama3-70b.json', system: 'dgx-a100-superpod.json' });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    await again?.close();
  }
});

test('Firefox: the settings field edits what the link holds beyond the pickers, and refuses a bad entry without a change', { skip: missing || false, timeout: 180000 }, async () => {
  const layout = 'tp=8,dp=2,batch=16'; // 16 GPUs: the data-parallel pair crosses level 1, which the edit slows
  const { page, errors } = await open(`#model=llama3-8b&system=dgx-h100-superpod&parallel=${layout}`);
  let again = null;
  try {
    const text = () => page.evaluate(() => document.getElementById('results').textContent);
    const note = () => page.evaluate(() => document.getElementById('fallback-note').textContent);
    const setSettings = async (value) => {
      await page.click('#fallback-settings', { count: 3 });
      await page.keyboard.press('Backspace');
      await page.type('#fallback-settings', value);
      await page.keyboard.press('Enter');
    };
    const shown = await page.evaluate(() => document.getElementById('fallback-settings').value);
    assert.match(shown, /(^|; )overlap_tp=0(;|$)/, `the field shows the link's options: ${shown}`);
    assert.doesNotMatch(shown, /(^|; )(model|system|parallel)=/, 'the pickers and the layout keep their own entries');

    await setSettings(`${shown}; precision=fp8; power_limit=500; net.1.bandwidth=25`);
    const m8 = ['--model', 'presets/models/llama3-8b.json', '--precision', 'fp8'];
    const expected = cli('estimate', ...m8, '--system', 'dgx-h100-superpod', '--system-set', 'accelerator.power_limit_w=500',
      '--system-set', '1.bandwidth=25', '--parallel', layout, '--allow-oom').toString() +
      cli('summary', ...m8, '--parallel', layout).toString();
    assert.equal(await text(), expected);
    assert.equal(await note(), '');

    // A refused entry: its message beside the field, the typed text kept, and the results and link as they were.
    const hash = await page.evaluate(() => location.hash);
    await setSettings('precision=fp8; power_limit=50');
    assert.match(await note(), /^Settings: link: power_limit: /);
    assert.equal(await page.evaluate(() => document.getElementById('fallback-settings').value), 'precision=fp8; power_limit=50');
    assert.equal(await text(), expected, 'a refused entry changes nothing');
    assert.equal(await page.evaluate(() => location.hash), hash);
    await setSettings('model=llama3-70b');
    assert.match(await note(), /^Settings: "model" is set by its own control above/);

    ({ page: again } = await open(hash));
    assert.equal(await again.evaluate(() => document.getElementById('results').textContent), expected);
    assert.match(await again.evaluate(() => document.getElementById('fallback-settings').value), /precision=fp8; .*power_limit=500/);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    await again?.close();
  }
});

test('Firefox: a damaged link shows its message on the defaults, and the next edit clears it', { skip: missing || false, timeout: 180000 }, async () => {
  const { page: plain } = await open('');
  const defaults = await plain.evaluate(() => document.getElementById('results').textContent);
  await plain.close();
  const { page, errors } = await open('#zzz');
  try {
    const status = () => page.evaluate(() => document.getElementById('status').textContent);
    const message = 'link: unknown format "z" (its first character); this page reads links starting with "d"';
    assert.ok((await status()).startsWith(message), await status());
    assert.equal(await page.evaluate(() => document.getElementById('results').textContent), defaults);
    await page.select('#fallback-system', 'dgx-a100-superpod.json');
    assert.equal(await status(), '');
    assert.ok(!(await page.evaluate(() => location.hash)).startsWith('#zzz'), 'the hash is the edited state');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('Firefox: after one visit the page without WebGPU loads and computes with the server stopped', { skip: missing || false, timeout: 180000 }, async () => {
  const own = await serveDir(); // its own server, so stopping it leaves the other tests theirs
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(`${own.url}index.html#model=llama3-8b&parallel=tp=8,dp=8,batch=64`);
    await page.waitForFunction(() => window.stagecraft?.app && window.stagecraft.ready, { timeout: 60000 });
    assert.equal(await page.evaluate(() => window.stagecraft.offline), true, 'the service worker is active');
    const text = () => page.evaluate(() => document.getElementById('results').textContent);
    const online = await text();
    assert.match(online, /MFU/);
    await own.close();
    await page.reload();
    await page.waitForFunction(() => /MFU/.test(document.getElementById('results')?.textContent ?? ''), { timeout: 60000 });
    assert.equal(await text(), online, 'offline, the page computes the same results');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    await own.close().catch(() => {});
  }
});

test('Firefox: the results panel copies the text, JSON and Markdown of the page without WebGPU', { skip: missing || false, timeout: 180000 }, async () => {
  const { page, errors } = await open(`#model=llama3-8b&system=dgx-h100-superpod&parallel=${split}`);
  try {
    // What the page hands to the clipboard, kept as well (Firefox lets a page write the clipboard on a click but
    // not read it back without asking the user).
    await page.evaluate(() => {
      window.__copied = [];
      const write = navigator.clipboard.writeText.bind(navigator.clipboard);
      navigator.clipboard.writeText = (t) => {
        window.__copied.push(t);
        return write(t);
      };
    });
    const model = ['--model', 'presets/models/llama3-8b.json'];
    const text = cli('estimate', ...model, '--system', 'dgx-h100-superpod', '--parallel', split).toString() +
      cli('summary', ...model, '--parallel', split).toString();
    for (const id of ['copy-text', 'copy-json', 'copy-markdown']) await page.click(`#${id}`);
    await page.waitForFunction(() => window.__copied.length === 3, { timeout: 10000 });
    const [asText, asJson, asMarkdown] = await page.evaluate(() => window.__copied);
    assert.equal(asText, text);
    assert.deepEqual(JSON.parse(asJson).estimate,
      JSON.parse(cli('estimate', '--json', ...model, '--system', 'dgx-h100-superpod', '--parallel', split).toString()));
    assert.ok(asMarkdown.includes(`| step time | ${text.match(/^step time +(.+)$/m)[1]} |`), asMarkdown);
    assert.equal(await page.evaluate(() => document.getElementById('results-note').textContent), 'Copied as Markdown.');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});
