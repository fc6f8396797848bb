// Loads dist/stagecraft.js under Node (emscripten 3.1.6 cannot fetch its .wasm by path under
// Node, so the bytes are handed to the factory).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export async function loadStagecraft() {
  const require = createRequire(import.meta.url);
  const factory = require(path.join(root, 'dist/stagecraft.js'));
  return factory({ wasmBinary: fs.readFileSync(path.join(root, 'dist/stagecraft.wasm')) });
}
