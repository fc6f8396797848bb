// The draw-data layout the module writes (src/app/imgui_bridge.h, header words 10 and 11) is the one
// web/renderer.js reads, and the renderer's check names what differs when it is not.
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadStagecraft } from './load.mjs';
import { drawDataLayoutMismatch } from '../../web/renderer.js';

const sc = await loadStagecraft();

test("the module's draw-data layout is the renderer's", () => {
  const app = new sc.WebApp();
  try {
    app.frame(800, 600, 1, 0);
    assert.equal(app.lastError(), '');
    const dd = app.drawData().slice(); // a copy: the view dies when memory grows
    assert.equal(drawDataLayoutMismatch(dd), '');
  } finally {
    app.delete();
  }
});

test('a different layout is refused with what differs', () => {
  const app = new sc.WebApp();
  try {
    app.frame(800, 600, 1, 0);
    const dd = app.drawData().slice();
    dd[10] = (dd[10] & 0x00ffffff) | (24 << 24); // a 24-byte vertex
    dd[11] = (dd[11] & 0xffffff00) | 4; // 32-bit indices
    const message = drawDataLayoutMismatch(dd);
    assert.match(message, /vertexSize 24 \(renderer expects 20\)/);
    assert.match(message, /indexSize 4 \(renderer expects 2\)/);
    assert.match(drawDataLayoutMismatch(new Uint32Array(3)), /fewer than its 12-word header/);
  } finally {
    app.delete();
  }
});
