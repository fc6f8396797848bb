// The ImGui page in a real browser (Debian's Chromium, WebGPU on SwiftShader, headed under X).
// Run: xvfb-run -a -s "-screen 0 1280x1024x24" node --test --test-concurrency=1 tests/browser/
// (without DISPLAY the harness starts its own Xvfb). Screenshots: build/browser-shots/.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';

import { itemRect, screenshotPath, startSession, waitFrames } from './harness.mjs';

let session;
before(async () => {
  session = await startSession();
});
after(async () => {
  await session?.close();
});

// ---- helpers

// Expected framebuffer bytes of an ImGui style colour (0..1 RGBA, quantised to 8 bits as ImGui packs
// vertex colours) blended with src-alpha / one-minus-src-alpha over `under` (0..1 RGB).
function blended(rgba, under) {
  const a = Math.round(rgba[3] * 255) / 255;
  return [0, 1, 2].map((i) => Math.round((Math.round(rgba[i] * 255) / 255) * a * 255 + under[i] * 255 * (1 - a)));
}

// Fraction of RGBA pixels within `tol` of `rgb` in every channel.
function matchRatio(pixels, rgb, tol = 3) {
  let hits = 0;
  const n = pixels.length / 4;
  for (let i = 0; i < n; i++) {
    if (rgb.every((v, c) => Math.abs(pixels[i * 4 + c] - v) <= tol)) hits++;
  }
  return n ? hits / n : 0;
}

function describePixels(pixels, max = 6) {
  const out = [];
  for (let i = 0; i < Math.min(max, pixels.length / 4); i++) out.push(`(${Array.from(pixels.slice(i * 4, i * 4 + 3))})`);
  return out.join(' ');
}

const readPixels = (page, x, y, w, h) =>
  page.evaluate(async ([x, y, w, h]) => Array.from(await window.stagecraft.readPixels(x, y, w, h)), [x, y, w, h]);

// Decodes a PNG screenshot in the page (no image library in node) and returns the number of distinct
// colours plus the RGBA bytes of the requested rectangles (device px).
async function screenshotStats(page, png, rects = []) {
  return page.evaluate(
    async ([b64, rects]) => {
      const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
      const bmp = await createImageBitmap(blob);
      const c = new OffscreenCanvas(bmp.width, bmp.height);
      const ctx = c.getContext('2d', { willReadFrequently: true });
      ctx.drawImage(bmp, 0, 0);
      const all = ctx.getImageData(0, 0, bmp.width, bmp.height).data;
      const colours = new Set();
      for (let i = 0; i < all.length; i += 4) colours.add((all[i] << 16) | (all[i + 1] << 8) | all[i + 2]);
      return {
        width: bmp.width,
        height: bmp.height,
        distinct: colours.size,
        rects: rects.map(([x, y, w, h]) => Array.from(ctx.getImageData(x, y, w, h).data)),
      };
    },
    [png.toString('base64'), rects],
  );
}

// Rect (CSS px) of the item `label` in window `window`, through the WebApp debug export; the export
// needs a frame or two to record it.
const mirrorText = (page) => page.locator('#results').textContent();
const paramsLine = (text) => (/^param.*$/m.exec(text) ?? [null])[0];

// The pixels every frame of the Model window must show: its title bar (rows 2 px below its top
// edge, clear of the border's anti-aliasing) and its background (a strip just inside its left
// border, left of the content clip rect). Returns failures as strings.
async function checkModelWindowPixels(page) {
  // Locate the field first: without ImGui's item hooks the locator focuses the Model window, which
  // changes its title bar colour; let that settle before reading the window state.
  const field = await itemRect(page, 'Model', 'layers');
  await waitFrames(page, 2);
  const info = await page.evaluate(() => ({
    win: window.stagecraft.windowRect('Model'),
    dpr: window.devicePixelRatio,
    clear: window.stagecraft.clearColor,
    titleBg: window.stagecraft.styleColor('TitleBg'),
    titleBgActive: window.stagecraft.styleColor('TitleBgActive'),
    titleBgCollapsed: window.stagecraft.styleColor('TitleBgCollapsed'),
    windowBg: window.stagecraft.styleColor('WindowBg'),
    frameBg: window.stagecraft.styleColor('FrameBg'),
  }));
  // The translucent frame of the "layers" field checks the blending: FrameBg (alpha 0.54 in the dark
  // style) over the window background over the clear colour.
  const { win, dpr } = info;
  assert.ok(win && !win.hidden, 'the ImGui window "Model" is not on screen');
  assert.ok(win.titleBarHeight > 0 && win.h > win.titleBarHeight + 20, `unexpected Model window rect ${JSON.stringify(win)}`);
  const titleStyle = win.collapsed ? info.titleBgCollapsed : win.focused ? info.titleBgActive : info.titleBg;
  const titleRgb = blended(titleStyle, info.clear);
  const bgRgb = blended(info.windowBg, info.clear);
  const title = [(win.x + 2) * dpr, (win.y + 2) * dpr, (win.w - 4) * dpr, 1].map(Math.round);
  const body = [(win.x + 2) * dpr, (win.y + win.titleBarHeight + 4) * dpr, 2 * dpr, (win.h - win.titleBarHeight - 12) * dpr].map(Math.round);
  const frameRgb = blended(info.frameBg, bgRgb.map((v) => v / 255));
  const frame = [(field.x + field.w * 0.6) * dpr, (field.y + field.h / 2) * dpr, (field.w * 0.4 - 3) * dpr, 2 * dpr].map(Math.round);
  const framePx = await readPixels(page, ...frame);
  const fr = matchRatio(framePx, frameRgb);
  assert.ok(fr >= 0.95, `"layers" field frame: ${(fr * 100).toFixed(1)}% of pixels are ${frameRgb}; got ${describePixels(framePx)}`);
  const titlePx = await readPixels(page, ...title);
  const bodyPx = await readPixels(page, ...body);
  assert.equal(titlePx.length, title[2] * title[3] * 4, 'read-back size');
  const tr = matchRatio(titlePx, titleRgb);
  const br = matchRatio(bodyPx, bgRgb);
  assert.ok(tr >= 0.95, `title bar: ${(tr * 100).toFixed(1)}% of pixels are ${titleRgb}; got ${describePixels(titlePx)}`);
  assert.ok(br >= 0.95, `window background: ${(br * 100).toFixed(1)}% of pixels are ${bgRgb}; got ${describePixels(bodyPx)}`);
  return { info, title, body, titleRgb, bgRgb, titlePx };
}

// ---- tests

test('page loads and draws frames with no console error and no page error', async (t) => {
  const { page, errors, ready } = await session.open();
  try {
    assert.equal(ready.gpu, true, `WebGPU unavailable in the test browser: ${ready.gpuError}`);
    assert.equal(ready.modelError, '', 'the first preset did not load');
    await waitFrames(page, 10);
    const text = await mirrorText(page);
    assert.ok(paramsLine(text), `results mirror has no "param..." line:\n${text}`);
    assert.equal(text, await page.evaluate(() => window.stagecraft.app.mirrorText()), 'DOM mirror != mirrorText()');
    const growths = await page.evaluate(() => window.stagecraft.renderer.bufferGrowths);
    assert.ok(growths <= 4, `GPU buffers were reallocated ${growths} times in a steady UI (they must grow, not be recreated)`);
    assert.deepEqual(errors, []);
    t.diagnostic(`first frame at ${ready.firstFrameMs.toFixed(0)} ms after navigation start`);
  } finally {
    await page.close();
  }
});

test('the ImGui frame is really drawn: screenshot and GPU read-back show the Model window', async () => {
  const { page, errors } = await session.open();
  try {
    await waitFrames(page, 5);
    const { title, titlePx } = await checkModelWindowPixels(page);
    const png = await page.screenshot({ path: screenshotPath('page.png') });
    const shot = await screenshotStats(page, png, [title]);
    assert.ok(shot.distinct >= 20, `screenshot looks blank: ${shot.distinct} distinct colours`);
    // What reaches the screen is what the read-back rendered.
    const onScreen = shot.rects[0];
    const rgb = Array.from(titlePx.slice(0, 3));
    const r = matchRatio(onScreen, rgb, 4);
    assert.ok(r >= 0.95, `screenshot title bar differs from the GPU read-back (${rgb}): ${describePixels(onScreen)}`);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

// A frame identical to the one on the canvas is not drawn again (renderer.js): a still page costs the GPU nothing,
// while the ImGui frame runs every animation frame, so a change shows in the frame it happens, on screen.
test('a still page is not redrawn; a change is drawn in its frame and reaches the screen', async () => {
  const { page, errors } = await session.open();
  try {
    const count = () => page.evaluate(() => ({ frames: window.stagecraft.frames, drawn: window.stagecraft.renderer.framesDrawn }));
    await waitFrames(page, 10);
    const a = await count();
    await waitFrames(page, 20);
    const b = await count();
    assert.ok(b.frames - a.frames >= 20, 'the ImGui frame runs every animation frame');
    assert.equal(b.drawn, a.drawn, 'nothing changed, so nothing was drawn');
    const before = await page.screenshot();
    await page.evaluate(() => window.stagecraft.app.setParallel('tp=4,dp=16,batch=64'));
    await waitFrames(page, 3);
    const c = await count();
    assert.ok(c.drawn > b.drawn, 'the edit changed the results, and they were drawn');
    const after = await page.screenshot();
    assert.notDeepEqual(after, before, 'the change reached the screen');
    await waitFrames(page, 10);
    assert.equal((await count()).drawn, c.drawn, 'and then the page is still again');
    await checkModelWindowPixels(page); // the read-back (offscreen) still renders the last frame
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('clicking the "layers" field of the Model window and typing a value changes the results mirror', async () => {
  const { page, errors } = await session.open();
  try {
    await waitFrames(page, 3);
    const before = paramsLine(await mirrorText(page));
    assert.ok(before, 'no "param..." line in the results mirror');
    const r = await itemRect(page, 'Model', 'layers');
    await page.mouse.click(r.x + r.w / 2, r.y + r.h / 2);
    await page.waitForFunction(
      () => window.stagecraft.app.wantTextInput() && document.activeElement?.id === 'text-input',
      null,
      { timeout: 5000 },
    );
    await page.keyboard.press('Control+A');
    await page.keyboard.type('12');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      (b) => {
        const line = /^param.*$/m.exec(document.getElementById('results').textContent);
        return line && line[0] !== b;
      },
      before,
      { timeout: 5000 },
    );
    // Enter ends the edit: the hidden input is released.
    await page.waitForFunction(() => !window.stagecraft.app.wantTextInput(), null, { timeout: 5000 });
    const text = await mirrorText(page);
    assert.notEqual(paramsLine(text), before);
    assert.equal(text, await page.evaluate(() => window.stagecraft.app.mirrorText()));
    await page.screenshot({ path: screenshotPath('typed-layers.png') });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('clipboard: Ctrl+C copies the field text out of ImGui, a paste event types into it', async () => {
  const { page, errors } = await session.open();
  try {
    await waitFrames(page, 3);
    const r = await itemRect(page, 'Model', 'layers');
    await page.mouse.click(r.x + r.w / 2, r.y + r.h / 2);
    await page.waitForFunction(() => window.stagecraft.app.wantTextInput(), null, { timeout: 5000 });
    const serial = await page.evaluate(() => window.stagecraft.app.clipboardSerial());
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Control+C');
    await page.waitForFunction((s) => window.stagecraft.app.clipboardSerial() !== s, serial, { timeout: 5000 });
    const copied = await page.evaluate(() => window.stagecraft.app.getClipboard());
    assert.match(copied, /^\d+$/, `copied "${copied}", expected the layers value`);
    const before = paramsLine(await mirrorText(page));
    // A paste (as from the browser's Ctrl+V or context menu) replaces the selection.
    const pasted = copied === '24' ? '16' : '24';
    await page.keyboard.press('Control+A');
    await page.evaluate((text) => {
      const data = new DataTransfer();
      data.setData('text/plain', text);
      document.activeElement.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    }, pasted);
    await page.waitForFunction((b) => /^param.*$/m.exec(document.getElementById('results').textContent)?.[0] !== b, before, {
      timeout: 5000,
    });
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Control+C');
    await page.waitForFunction((p) => window.stagecraft.app.getClipboard() === p, pasted, { timeout: 5000 });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('high-DPI: devicePixelRatio 2 doubles the backing store and keeps the layout in CSS px', async () => {
  const { page, errors } = await session.open();
  try {
    await waitFrames(page, 3);
    const before = await page.evaluate(() => ({ win: window.stagecraft.windowRect('Model'), font: window.stagecraft.app.fontVersion() }));
    before.item = await itemRect(page, 'Model', 'layers');
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Emulation.setDeviceMetricsOverride', { width: 1024, height: 768, deviceScaleFactor: 2, mobile: false });
    await page.waitForFunction(
      () => {
        const c = document.getElementById('canvas');
        return window.devicePixelRatio === 2 && c.width === 2048 && c.height === 1536;
      },
      null,
      { timeout: 5000 },
    );
    await waitFrames(page, 3);
    const after = await page.evaluate(() => {
      const d = window.stagecraft.app.drawData();
      const f = new Float32Array(d.buffer, d.byteOffset, 12);
      return {
        win: window.stagecraft.windowRect('Model'), font: window.stagecraft.app.fontVersion(), scale: [f[8], f[9]], size: [f[6], f[7]],
      };
    });
    after.item = await itemRect(page, 'Model', 'layers');
    assert.deepEqual(after.item, before.item, 'text and fields keep their CSS size');
    assert.deepEqual(after.scale, [2, 2], 'DisplayFramebufferScale');
    assert.deepEqual(after.size, [1024, 768], 'DisplaySize stays in CSS px');
    assert.deepEqual([after.win.x, after.win.y, after.win.w, after.win.h], [before.win.x, before.win.y, before.win.w, before.win.h]);
    assert.ok(after.font > before.font, 'font atlas not rebuilt for the new pixel ratio');
    const { title, titlePx } = await checkModelWindowPixels(page);
    // Playwright's own screenshot re-applies the context's scale factor; ask the browser directly.
    const { data } = await cdp.send('Page.captureScreenshot', { format: 'png' });
    const png = Buffer.from(data, 'base64');
    fs.writeFileSync(screenshotPath('page-dpr2.png'), png);
    const shot = await screenshotStats(page, png, [title]);
    assert.deepEqual([shot.width, shot.height], [2048, 1536], 'device-pixel screenshot size');
    const rgb = Array.from(titlePx.slice(0, 3));
    assert.ok(matchRatio(shot.rects[0], rgb, 4) >= 0.95, `screenshot title bar at 2x differs from the read-back (${rgb})`);
    await cdp.send('Emulation.clearDeviceMetricsOverride');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('high-DPI at launch: a browser started at devicePixelRatio 2 draws the same layout into a 2x canvas', async () => {
  const { page: one } = await session.open();
  let hi = null;
  try {
    await waitFrames(one, 3);
    const expected = await itemRect(one, 'Model', 'layers');
    hi = await startSession({ deviceScaleFactor: 2 });
    const { page, errors } = await hi.open();
    await waitFrames(page, 3);
    const got = await page.evaluate(() => ({
      dpr: window.devicePixelRatio, canvas: [document.getElementById('canvas').width, document.getElementById('canvas').height],
      css: [innerWidth, innerHeight],
    }));
    got.item = await itemRect(page, 'Model', 'layers');
    assert.equal(got.dpr, 2);
    assert.deepEqual(got.canvas, got.css.map((v) => 2 * v), 'the backing store is 2x the CSS size (it was 1x, and clipped)');
    assert.deepEqual(got.item, expected, 'the same CSS layout as at ratio 1');
    await checkModelWindowPixels(page);
    assert.deepEqual(errors, []);
  } finally {
    await one.close();
    await hi?.close();
  }
});

// Variant 1 also switches the model with the fallback's <select>; variant 2 picks it by URL hash.
const fallbackTexts = [];
for (const { name, initScript, reason, hash } of [
  {
    name: 'navigator.gpu removed',
    initScript: () => {
      delete Navigator.prototype.gpu;
    },
    reason: /navigator\.gpu is missing/,
    hash: '',
  },
  {
    name: 'requestAdapter() resolves to null',
    initScript: () => {
      if (navigator.gpu) navigator.gpu.requestAdapter = async () => null;
    },
    reason: /no WebGPU adapter/,
    hash: '#model=mixtral-8x7b',
  },
]) {
  test(`without WebGPU (${name}) the page shows a plain HTML message and the results text`, async () => {
    const { page, errors, ready } = await session.open({ initScript, hash });
    try {
      assert.equal(ready.gpu, false);
      assert.equal(ready.frames, 0);
      if (hash) assert.equal(ready.model, 'mixtral-8x7b.json');
      const fallback = page.locator('#fallback');
      assert.ok(await fallback.isVisible(), 'fallback message not visible');
      assert.match(await fallback.textContent(), /WebGPU is unavailable/);
      assert.match(await fallback.textContent(), reason);
      assert.equal(await page.locator('#canvas').isVisible(), false, 'an empty canvas is still shown');
      const results = page.locator('#results');
      assert.ok(await results.isVisible(), 'results text not visible');
      const text = await results.textContent();
      assert.ok(paramsLine(text), `results text has no "param..." line:\n${text}`);
      assert.equal(text, await page.evaluate(() => window.stagecraft.app.mirrorText()));
      for (const other of fallbackTexts) assert.notEqual(text, other, 'the hash did not select another model');
      fallbackTexts.push(text);
      await page.screenshot({ path: screenshotPath(`no-webgpu-${name.split(' ')[0].replace(/\W/g, '')}.png`) });
      if (!hash) {
        const options = await page.locator('#fallback-model option').evaluateAll((o) => o.map((x) => x.value));
        assert.ok(options.length >= 2, 'no model list in the fallback');
        await page.selectOption('#fallback-model', options[1]);
        await page.waitForFunction((t) => document.getElementById('results').textContent !== t, text, { timeout: 5000 });
        assert.equal(await page.evaluate(() => window.stagecraft.app.choices().model), options[1]);
      }
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });
}
