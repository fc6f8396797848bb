// Reading and copying the results: the DOM results panel shows the CLI's text, its buttons copy it as text, JSON
// (`estimate --json` + `summary --json`) and Markdown to the clipboard, the keyboard can leave the canvas for it,
// and "Perfetto JSON" saves one rank's timeline with the bytes of `stagecraft trace --format json`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { ROOT, blockWorkers, clickItem, startSession, waitFrames } from './harness.mjs';

const CLI = path.join(ROOT, 'build', 'stagecraft');
const cli = (...args) => execFileSync(CLI, args, { cwd: ROOT, encoding: 'utf8' });
const split = 'tp=2,pp=2,dp=2,batch=8';
const model = ['--model', 'presets/models/llama3-8b.json'];
const hash = `#model=llama3-8b&system=dgx-a100-superpod&parallel=${split}`;

let session;
before(async () => {
  session = await startSession();
  await session.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: session.url });
});
after(async () => {
  await session?.close();
});

const clipboard = (page) => page.evaluate(() => navigator.clipboard.readText());
const focused = (page) => page.evaluate(() => document.activeElement?.id ?? '');

test('the results panel shows the CLI text and copies it as text, JSON and Markdown', { timeout: 120000 }, async () => {
  const { page, errors } = await session.open({ hash });
  try {
    await waitFrames(page, 2);
    assert.equal(await page.isVisible('#copy-text'), false, 'closed at first');
    await page.click('#results-toggle');
    assert.equal(await page.isVisible('#results'), true);
    const text = cli('estimate', ...model, '--system', 'dgx-a100-superpod', '--parallel', split) + cli('summary', ...model, '--parallel', split);
    assert.equal(await page.textContent('#results'), text);

    await page.click('#copy-text');
    assert.equal(await clipboard(page), text);
    assert.equal(await page.textContent('#results-note'), 'Copied as text.');

    await page.click('#copy-json');
    const json = JSON.parse(await clipboard(page));
    assert.deepEqual(json.estimate, JSON.parse(cli('estimate', '--json', ...model, '--system', 'dgx-a100-superpod', '--parallel', split)));
    assert.deepEqual(json.summary, JSON.parse(cli('summary', '--json', ...model, '--parallel', split)));

    await page.click('#copy-markdown');
    const md = await clipboard(page);
    const stepTime = text.match(/^step time +(.+)$/m)[1];
    assert.ok(md.includes(`| step time | ${stepTime} |`), md);
    assert.match(md, /^## Model: Llama-3 8B$/m);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('Tab leaves the canvas for the results panel unless a field is being edited; its keys stay out of ImGui', { timeout: 120000 }, async () => {
  const { page, errors } = await session.open({ hash });
  try {
    await waitFrames(page, 2);
    // While a field is edited, Tab goes to ImGui (the next field): the focus stays in the canvas's text input.
    await clickItem(page, 'Model', 'layers');
    await waitFrames(page, 2);
    assert.equal(await focused(page), 'text-input');
    await page.keyboard.press('Tab');
    await waitFrames(page, 2);
    assert.equal(await focused(page), 'text-input', 'Tab moved to the next ImGui field');
    await page.keyboard.press('Escape');
    await waitFrames(page, 2);
    // A click on the canvas background focuses it; nothing is being edited.
    await page.mouse.click(5, 760);
    await waitFrames(page, 2);
    assert.equal(await focused(page), 'canvas');
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), 'results-toggle');
    await page.keyboard.press('Enter');
    assert.equal(await page.isVisible('#copy-text'), true, 'Enter on the toggle opened the panel');
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), 'copy-text');
    // Typing here reaches neither ImGui's fields nor the split.
    const before = await page.evaluate(() => window.stagecraft.app.currentParallelSpec());
    await page.keyboard.type('8');
    await page.keyboard.press('Enter');
    await waitFrames(page, 3);
    assert.equal(await page.evaluate(() => window.stagecraft.app.currentParallelSpec()), before);
    assert.equal(await focused(page), 'copy-text', 'focus stays in the panel');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

// Computed in a worker (every stage is replayed), or on the page when no worker can start: the same bytes.
test('"Perfetto JSON" saves one rank\'s timeline with the bytes `stagecraft trace --format json` writes', { timeout: 180000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sc-timeline-'));
  try {
    execFileSync(CLI, ['trace', ...model, '--parallel', split, '--system', 'dgx-a100-superpod', '--format', 'json', '--rank', '0', '--out', dir], { cwd: ROOT });
    const expected = fs.readFileSync(path.join(dir, 'trace.0.trace.json'));
    for (const [label, initScript] of [['workers', undefined], ['blocked', blockWorkers]]) {
      const { page, errors } = await session.open({ hash, initScript });
      try {
        await waitFrames(page, 2);
        const download = page.waitForEvent('download', { timeout: 60000 });
        await clickItem(page, 'Parallelism and traces', 'Perfetto JSON');
        const d = await download;
        assert.equal(d.suggestedFilename(), 'trace.0.trace.json', label);
        assert.ok(fs.readFileSync(await d.path()).equals(expected), `${label}: same bytes as the CLI`);
        const pooled = await page.evaluate(() => Boolean(window.stagecraft.jobs?.pool && !window.stagecraft.jobs.pool.failed));
        assert.equal(pooled, label === 'workers', `${label}: computed in a worker`);
        await waitFrames(page, 2);
        assert.deepEqual(errors, [], label);
      } finally {
        await page.close();
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
