// "Download traces" without the File System Access API (Firefox, Safari): the same files, streamed into one
// zip (fflate's streaming Zip, vendored as vendor/fflate.js) that the browser saves as a download. The files
// inside hold the same bytes as the folder download and `stagecraft trace`: every rank's Chakra ET file, then
// <prefix>.json. Memory stays bounded: a piece of one rank's file is alive at a time in JavaScript, and the zip's output
// is moved into a Blob (the browser's own storage) every few megabytes. Nothing is saved until the last file is
// in: a cancel or an error saves nothing and leaves no partial file. The browser's download manager never
// overwrites an existing file (it picks a new name), so there is nothing to confirm.
import { Zip, ZipDeflate } from './vendor/fflate.js';

const FLUSH_BYTES = 8 << 20; // zip output gathered before it moves into the Blob
const FRAME_MS = 12;         // work between yields, so the page keeps drawing and the Cancel button works

export function zipName(prefix) {
  return `stagecraft-${prefix}.zip`;
}

export async function downloadZip(Module, app, prefix = 'trace', save = saveBlob) {
  const report = (done, total, bytes, running, message) => app.setDownloadProgress(done, total, bytes, running, message);
  const stream = new Module.TraceStream(app.currentModelJson(), app.currentParallelSpec());
  let parts = [];       // Blobs and chunks of the zip so far
  let pending = [];     // chunks not yet moved into a Blob
  let pendingBytes = 0;
  let zipError = null;
  let finished = false;
  const zip = new Zip((err, chunk, final) => {
    if (err) {
      zipError = err;
      return;
    }
    pending.push(chunk);
    pendingBytes += chunk.length;
    if (pendingBytes >= FLUSH_BYTES || final) {
      parts = [new Blob([...parts, ...pending])];
      pending = [];
      pendingBytes = 0;
    }
    if (final) finished = true;
  });
  try {
    const error = stream.error();
    if (error) {
      report(0, 0, 0, false, error);
      return;
    }
    app.timeTraceStream(stream); // compute nodes' duration_micros from the current cluster, as the CLI's --system
    const world = stream.world();
    let bytes = 0;
    let slice = performance.now();
    report(0, world, 0, true, '');
    for (let rank = 0; rank < world; ++rank) {
      if (performance.now() - slice > FRAME_MS) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        slice = performance.now();
      }
      if ((await prepareRank(stream, rank, () => app.downloadCancelled())) === null) {
        zip.terminate();
        report(rank, world, bytes, false, stream.error());
        return;
      }
      if (app.downloadCancelled()) {
        zip.terminate();
        report(rank, world, bytes, false, `Cancelled after ${rank} of ${world} ranks; nothing was saved.`);
        return;
      }
      const file = new ZipDeflate(`${prefix}.${rank}.et`, { level: 1 });
      zip.add(file);
      const written = await rankPieces(stream, rank, (data) => {
        file.push(data, false);
        if (zipError) throw zipError;
        bytes += data.length;
        report(rank, world, bytes, true, '');
      }, () => app.downloadCancelled());
      if (written === null) {
        zip.terminate();
        report(rank, world, bytes, false, stream.error());
        return;
      }
      if (!written) {
        zip.terminate();
        report(rank, world, bytes, false, `Cancelled after ${rank} of ${world} ranks; nothing was saved.`);
        return;
      }
      file.push(new Uint8Array(0), true);
      if (zipError) throw zipError;
      report(rank + 1, world, bytes, true, '');
    }
    const groups = new ZipDeflate(`${prefix}.json`, { level: 1 });
    zip.add(groups);
    groups.push(new TextEncoder().encode(stream.commGroups()), true);
    if (zipError) throw zipError;
    zip.end();
    if (zipError) throw zipError;
    if (!finished) throw new Error('the zip did not finish');
    const blob = new Blob(parts, { type: 'application/zip' });
    save(zipName(prefix), blob);
    report(world, world, bytes, false, `Saved ${zipName(prefix)}: ${world} traces (${(bytes / 1e6).toFixed(1)} MB) and ${prefix}.json.`);
  } catch (e) {
    zip.terminate();
    report(0, 0, 0, false, `Download failed: ${e?.message ?? e}; nothing was saved.`);
  } finally {
    stream.delete();
    parts = [];
    pending = [];
  }
}

// The first rank of a stage builds the stage's bytes, seconds of work in wasm for a stage of millions of nodes:
// TraceStream.prepareRank does a slice of it per call, and the page draws (and Cancel works) between the calls.
// Resolves true when the rank can be written, false when the user cancelled meanwhile, null on an error
// (stream.error() says it). Both downloads call it before rankPieces.
export async function prepareRank(stream, rank, cancelled) {
  for (;;) {
    const ready = stream.prepareRank(rank);
    if (ready !== false) return ready;
    if (cancelled()) return false;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

// A rank's file in pieces of a few megabytes (TraceStream.nextPiece), each copied out of wasm memory and handed to
// `onPiece` (which may return a promise), so that a file of a stage near the node limit (1.4 GB) is never whole in
// wasm memory or here, and the page draws between pieces. Resolves true when the whole file went through, false
// when the user cancelled meanwhile, null on an error (stream.error() says it). Both downloads write ranks so.
export async function rankPieces(stream, rank, onPiece, cancelled) {
  if (stream.startRank(rank) === null) return null;
  let slice = performance.now();
  for (;;) {
    const view = stream.nextPiece();
    if (view === null) return null;
    if (view.length === 0) return true;
    await onPiece(view.slice()); // out of wasm memory: the view dies at the next call into the module
    if (cancelled()) return false;
    if (performance.now() - slice > FRAME_MS) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      slice = performance.now();
    }
  }
}

// Saves a Blob as a download: a temporary link, in every browser (the zip, the Sweeps view's CSV).
export function saveBlob(name, blob) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}
