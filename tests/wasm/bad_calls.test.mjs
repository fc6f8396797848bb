// Bad calls into the wasm API are errors, never a silent default, and they leave the module usable and its
// heap where it was: 1,000 of them, then a valid call.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadStagecraft, root } from './load.mjs';

const sc = await loadStagecraft();
const preset = fs.readFileSync(path.join(root, 'presets/models/llama3-8b.json'), 'utf8');

test('estimateModel rejects bad arguments with the field named', () => {
  const cases = [
    [[preset, [], 'xml'], /^format: "xml" is not one of text, json$/],
    [[preset, 'layers=4', 'text'], /^overrides: expected an array/],
    [[preset, { layers: 4 }, 'text'], /^overrides: expected an array/],
    [[preset, [4], 'text'], /^overrides\[\]: expected a string, got a number$/],
    [[42, [], 'text'], /^model: expected a string, got a number$/],
    [['{"name": "x", ', [], 'text'], /not valid JSON/],
  ];
  for (const [args, re] of cases) {
    const r = sc.estimateModel(...args);
    assert.equal(r.ok, false, JSON.stringify(args).slice(0, 80));
    assert.match(r.error, re);
  }
});

test('TraceStream.writeRank takes only an integer rank of the job', () => {
  const s = new sc.TraceStream(preset, 'tp=2,pp=2,dp=2,batch=8');
  try {
    assert.equal(s.error(), '');
    for (const bad of [NaN, 'abc', 2 ** 32, -1, 8, 1.5, null, undefined, {}]) {
      assert.equal(s.writeRank(bad), null, String(bad));
      assert.match(s.error(), /^rank: expected an integer/, String(bad));
    }
    assert.ok(s.writeRank(7).length > 0);
  } finally {
    s.delete();
  }
});

test('TraceStream.prepareRank takes a rank as writeRank does, and slices give the bytes of one go', () => {
  const split = 'tp=2,pp=2,dp=2,batch=512';
  const s = new sc.TraceStream(preset, split);
  const whole = new sc.TraceStream(preset, split);
  try {
    for (const bad of [NaN, 'abc', -1, 8, 1.5, null]) {
      assert.equal(s.prepareRank(bad), null, String(bad));
      assert.match(s.error(), /^rank: expected an integer/, String(bad));
    }
    for (const rank of [0, 7]) {  // stages 0 and 1
      let calls = 0;
      for (let ready = false; !ready; ++calls) {
        ready = s.prepareRank(rank);
        assert.notEqual(ready, null, s.error());
      }
      assert.ok(calls > 1, 'a stage of 512 microbatches takes more than one slice');
      assert.deepEqual(s.writeRank(rank).slice(), whole.writeRank(rank).slice(), `rank ${rank}`);
    }
  } finally {
    s.delete();
    whole.delete();
  }
});

test('TraceStream.startRank takes a rank as writeRank does, and nextPiece gives its file in pieces', () => {
  const split = 'tp=2,pp=2,dp=2,batch=2048';
  const s = new sc.TraceStream(preset, split);
  const whole = new sc.TraceStream(preset, split);
  try {
    for (const bad of [NaN, 'abc', -1, 8, 1.5, null]) {
      assert.equal(s.startRank(bad), null, String(bad));
      assert.match(s.error(), /^rank: expected an integer/, String(bad));
      assert.equal(s.nextPiece().length, 0, 'a refused start leaves no file under way');
    }
    for (const rank of [0, 7]) {  // stages 0 and 1
      const expected = whole.writeRank(rank).slice();
      assert.ok(expected.length > 3 * (4 << 20), `rank ${rank}'s file (${expected.length} B) is several pieces`);
      assert.equal(s.startRank(rank), true, s.error());
      const joined = new Uint8Array(expected.length);
      let at = 0, pieces = 0;
      for (let p = s.nextPiece(); p.length > 0; p = s.nextPiece(), ++pieces) {
        assert.ok(p.length <= (4 << 20) + 1024, `piece ${pieces}: ${p.length} B`);
        assert.ok(at + p.length <= joined.length, 'no more bytes than the file');
        joined.set(p, at);
        at += p.length;
      }
      assert.equal(at, expected.length);
      assert.ok(pieces >= 3);
      assert.deepEqual(joined, expected, `rank ${rank}`);
    }
  } finally {
    s.delete();
    whole.delete();
  }
});

test('1,000 bad calls leave the module usable and its heap where it was', () => {
  const deep = '{"layers": ' + '['.repeat(100000) + ']'.repeat(100000) + '}';  // depth 10^5
  const huge = [`${'k'.repeat(1 << 20)}=1`];
  const bad = [
    () => sc.estimateModel(preset, [], 'xml'),
    () => sc.estimateModel(preset, huge, 'text'),
    () => sc.estimateModel(deep, [], 'text'),
    () => sc.estimateModel(preset, ['layers=-1'], 'text'),
    () => sc.estimateModel(preset.replace('"layers": 32', '"layers": 1e999'), [], 'text'),
  ];
  const good = () => sc.estimateModel(preset, ['layers=16'], 'text');
  assert.equal(good().ok, true);
  const before = sc.heapInUse();
  for (let i = 0; i < 1000; ++i) {
    const r = bad[i % bad.length]();
    assert.equal(r.ok, false, `call ${i}`);
    assert.equal(typeof r.error, 'string');
    assert.ok(r.error.length < 2000, `call ${i}: an error of ${r.error.length} characters`);
  }
  const r = good();
  assert.equal(r.ok, true, r.error);
  assert.match(r.text, /parameters/);
  assert.ok(sc.heapInUse() - before < 64 * 1024, `heap grew by ${sc.heapInUse() - before} bytes`);
});
