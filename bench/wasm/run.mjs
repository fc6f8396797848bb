// Runs one wasm bench module (built by scripts/bench with emcc: MODULARIZE, NODERAWFS) under Node and prints
// its RESULT lines, then Node's peak RSS. (No EXIT_RUNTIME: with NODERAWFS its FS.quit closes the real stdout.)
// Usage: node bench/wasm/run.mjs build-wasm/bench_x.js [args...]
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [js, ...args] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const factory = require(path.resolve(js));
await factory({
  wasmBinary: fs.readFileSync(path.resolve(js).replace(/\.js$/, '.wasm')),  // 3.1.6 cannot fetch it by path under Node 20
  arguments: args,
  print: (s) => console.log(s),
  printErr: (s) => console.error(s),
});
console.log(`RESULT node_peak_rss ${process.resourceUsage().maxRSS * 1024} B Node process max RSS`);
