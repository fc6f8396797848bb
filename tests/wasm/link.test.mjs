// The page's side of links (src/app/app_link.cpp) through the Embind API, without a browser: a link naming
// every field the page holds is applied whole and read back the same; a link naming what the page lacks is
// refused by name and leaves the defaults; the message goes with the next edit.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadStagecraft, root } from './load.mjs';

const sc = await loadStagecraft();
const read = (rel) => fs.readFileSync(path.join(root, rel), 'utf8');

// A WebApp with the presets the page loads (models and clusters in index order) and the calibration.
function page() {
  const app = new sc.WebApp();
  assert.equal(app.setCalibration(read('presets/calibration/measured.json')), '');
  for (const file of JSON.parse(read('presets/systems/index.json'))) {
    const system = read(`presets/systems/${file}`);
    const acc = JSON.parse(system).accelerator;
    assert.equal(app.addSystem(file, system, read(`presets/hardware/${acc}.json`)), '', file);
  }
  for (const file of JSON.parse(read('presets/models/index.json'))) {
    assert.equal(app.addPreset(file, read(`presets/models/${file}`)), '', file);
  }
  return app;
}

const moeModel = JSON.parse(read('presets/models/index.json')).find((f) => JSON.parse(read(`presets/models/${f}`)).moe);
const moeId = moeModel.replace(/\.json$/, '');

test('a link with every field the page holds is applied whole and reads back the same', () => {
  const app = page();
  try {
    const defaults = app.mirrorText();
    const link =
      `v1;model=${moeId};layers=16;hidden=2048;heads=16;kv_heads=4;ffn=8192;vocab=50000;seq=2048;experts=16;top_k=4;expert_ffn=7168;` +
      'precision=fp8;system=dgx-h100-superpod;net.0.bandwidth=450.5;net.0.latency=0.25;net.0.efficiency=0.8;net.0.inr=0;' +
      'net.1.latency=12;parallel=tp=4,pp=2,dp=8,cp=1,ep=4,sp=1,microbatch=1,batch=64,schedule=1f1b,vstages=1,recompute=selective,' +
      'zero=1,order=tp-cp-dp-pp;overlap_dp=0;overlap_pp=0;overlap_tp=1;inr=0;tokens=300000000000;search_gpus=1024;end';
    assert.equal(app.applyLink(link), '');
    const back = app.linkState();
    assert.equal(back.ok, true, back.error);
    assert.equal(back.link, link);
    assert.notEqual(app.mirrorText(), defaults);
    assert.match(app.mirrorText(), /on 64 ranks/);
    // The same link on a fresh page gives the same results.
    const other = page();
    try {
      assert.equal(other.applyLink(link), '');
      assert.equal(other.mirrorText(), app.mirrorText());
    } finally {
      other.delete();
    }
  } finally {
    app.delete();
  }
});

test('a link naming what the page lacks is refused by name, on the defaults, until the next edit', () => {
  const app = page();
  try {
    const defaults = { link: app.linkState().link, mirror: app.mirrorText() };
    const cases = [
      ['v1;model=nosuch;parallel=tp=1;end', /^link: model: no model preset "nosuch" on this page; it has [a-z0-9., -]+$/],
      ['v1;model=llama3-8b;experts=8;parallel=tp=1;end', /^link: experts: "llama3-8b" is not a mixture-of-experts model, so it has no experts$/],
      ['v1;model=llama3-8b;system=nosuch;parallel=tp=1;end', /^link: system: no system preset "nosuch" on this page; it has /],
      ['v1;model=llama3-8b;system=dgx-h100-superpod;net.9.inr=1;parallel=tp=1;end', /^link: net\.9: "dgx-h100-superpod" has \d network levels, net\.0 to net\.\d$/],
      ['v1;model=llama3-8b;tokens=1e999;parallel=tp=1;end', /^link: tokens: must be a finite number, got "1e999"$/],
      ['v1;model=llama3-8b;parallel=tp=1', /^link: does not end with ";end"/],
    ];
    for (const [text, re] of cases) {
      assert.equal(app.applyLink('v1;model=llama3-8b;layers=4;parallel=tp=1;end'), '');  // away from the defaults first
      const error = app.applyLink(text);
      assert.match(error, re, text);
      assert.doesNotMatch(error, /^link: link: /);
      assert.equal(app.linkState().link, defaults.link, text);
      assert.equal(app.mirrorText(), defaults.mirror, text);
    }
    // A JS-side failure (the hash would not decompress) takes the same path.
    assert.equal(app.rejectLink('link: unknown format "z"'), '');
    assert.equal(app.linkState().link, defaults.link);
    // An edit ends the message: the state is the user's again (the panel shows app.link_error until then).
    assert.equal(app.setParallel('tp=8,dp=4'), '');
    assert.notEqual(app.linkState().link, defaults.link);
  } finally {
    app.delete();
  }
});

test('a model loaded from outside the presets makes no link, with the reason', () => {
  const app = page();
  try {
    assert.equal(app.applyLink('v1;model=gpt3-175b;parallel=tp=8,dp=4;end'), '');
    assert.equal(app.loadModel(read('presets/models/llama3-8b.json')), '');
    // Without a preset name there is nothing to name in a link (the page then keeps its last hash); naming the
    // preset picked before would describe another model.
    assert.deepEqual(app.linkState(), {
      ok: false,
      error: "model: the current model is not one of the page's presets, and a link names a preset",
    });
    // Picking a preset again makes links again.
    assert.equal(app.selectPreset('llama3-8b'), true);
    assert.match(app.linkState().link, /^v1;model=llama3-8b;/);
  } finally {
    app.delete();
  }
});
