// The wasm core gives the same numbers and the same errors as the native CLI.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { loadStagecraft, root } from './load.mjs';

const sc = await loadStagecraft();
const cli = path.join(root, 'build/stagecraft');
const preset = (f) => fs.readFileSync(path.join(root, 'presets/models', f), 'utf8');
const presets = JSON.parse(preset('index.json'));

test('presets index lists exactly the model files', () => {
  const files = fs.readdirSync(path.join(root, 'presets/models')).filter((f) => f.endsWith('.json') && f !== 'index.json');
  assert.deepEqual([...presets].sort(), files.sort());
});

for (const file of presets) {
  test(`wasm estimate equals CLI for ${file}`, () => {
    const r = sc.estimateModel(preset(file), [], 'text');
    assert.equal(r.ok, true, r.error);
    const out = execFileSync(cli, ['estimate', '--model', path.join('presets/models', file)], { cwd: root, encoding: 'utf8' });
    assert.equal(r.text, out);
    const j = sc.estimateModel(preset(file), [], 'json');
    const outJson = execFileSync(cli, ['estimate', '--model', path.join('presets/models', file), '--json'], { cwd: root, encoding: 'utf8' });
    assert.deepEqual(JSON.parse(j.text), JSON.parse(outJson));
  });
}

test('overrides change the result in wasm as in the CLI', () => {
  const r = sc.estimateModel(preset('gpt3-175b.json'), ['layers=48', 'precision.compute=fp8'], 'text');
  const out = execFileSync(cli, ['estimate', '--model', 'presets/models/gpt3-175b.json', '--set', 'layers=48', '--precision', 'fp8'],
                           { cwd: root, encoding: 'utf8' });
  assert.equal(r.text, out);
});

test('malformed presets give the same clear error in wasm and the CLI', () => {
  const cases = [
    ['{"name": "x", ', /not valid JSON/],
    [preset('llama3-8b.json').replace('"hidden"', '"hiden"'), /^hiden: unknown field \(did you mean "hidden"\?\)$/],
    [preset('llama3-8b.json').replace('"layers": 32', '"layers": 0'), /^layers: must be a positive integer, got 0$/],
    [preset('llama3-8b.json').replace('"heads": 32', '"heads": 7'), /^heads: 7 attention heads do not divide hidden size 4096/],
    [preset('llama3-8b.json').replace('"seq": 8192,', ''), /^seq: missing required field$/],
  ];
  const tmp = fs.mkdtempSync('/tmp/sc-wasm-');
  for (const [text, re] of cases) {
    const r = sc.estimateModel(text, [], 'text');
    assert.equal(r.ok, false);
    assert.match(r.error, re);
    fs.writeFileSync(path.join(tmp, 'bad.json'), text);
    const p = spawnSync(cli, ['estimate', '--model', path.join(tmp, 'bad.json')], { encoding: 'utf8' });
    assert.equal(p.status, 1);
    assert.equal(p.stderr, `stagecraft estimate: error: ${path.join(tmp, 'bad.json')}: ${r.error}\n`);
  }
});
