// The wasm build's own memcpy (src/platform/wasm_memcpy.cpp) copies exactly what a byte loop copies.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { root } from './load.mjs';

test('wasm memcpy equals a byte loop for every size to 1100 and every alignment', () => {
  const prog = path.join(root, process.env.WASM_BUILD || 'build-wasm', 'wasm_memcpy_check.js');
  const out = execFileSync('node', [prog], { encoding: 'utf8' });
  assert.match(out, /^memcpy: 70464 copies checked/);
});
