// "Download traces": streams every rank's Chakra ET file, then the communicator groups, into a folder
// the user picks (File System Access API). A piece of one rank's file is alive at a time, so memory stays
// bounded whatever the rank count and the file's size. Progress and cancel go through the app (the ImGui panel shows them).
// Browsers without the API get the same files in a streamed zip (zip.js).
import { downloadZip, prepareRank, rankPieces } from './zip.js';

export function folderSupported() {
  return typeof window.showDirectoryPicker === 'function';
}

// Every browser can download the traces: into a folder, or as a zip.
export function downloadSupported() {
  return true;
}

// saveZip: how the zip is saved where there is no folder API (default: a download; tests capture it).
export async function downloadTraces(Module, app, prefix = 'trace', saveZip = undefined) {
  const report = (done, total, bytes, running, message) => app.setDownloadProgress(done, total, bytes, running, message);
  if (!folderSupported()) {
    await downloadZip(Module, app, prefix, saveZip);
    return;
  }
  let dir;
  try {
    dir = await window.showDirectoryPicker({ id: 'stagecraft-traces', mode: 'readwrite' });
  } catch (e) {
    report(0, 0, 0, false, e && e.name === 'AbortError' ? 'No folder picked.' : `Cannot open the folder: ${e}`);
    return;
  }
  // A folder already holding a set (its <prefix>.json marks one) is replaced only when the user says so.
  if (await hasEntry(dir, `${prefix}.json`) &&
      !window.confirm(`The folder already holds a trace set (${prefix}.json). Replace its files?`)) {
    report(0, 0, 0, false, 'Not written: the folder already holds a trace set.');
    return;
  }
  const stream = new Module.TraceStream(app.currentModelJson(), app.currentParallelSpec());
  const written = [];  // removed again unless the whole set is written (the groups file, last, marks it)
  let complete = false;
  try {
    const error = stream.error();
    if (error) { report(0, 0, 0, false, error); return; }
    app.timeTraceStream(stream);  // compute nodes' duration_micros from the current cluster, as the CLI's --system
    const world = stream.world();
    let bytes = 0;
    report(0, world, 0, true, '');
    for (let rank = 0; rank < world; ++rank) {
      if ((await prepareRank(stream, rank, () => app.downloadCancelled())) === null) {
        report(rank, world, bytes, false, stream.error());
        return;
      }
      if (app.downloadCancelled()) {
        report(rank, world, bytes, false, `Cancelled after ${rank} of ${world} ranks; the files it wrote were removed.`);
        return;
      }
      const name = `${prefix}.${rank}.et`;
      const file = await dir.getFileHandle(name, { create: true });
      written.push(name);
      const w = await file.createWritable();
      let done = null;
      try {
        done = await rankPieces(stream, rank, async (data) => {
          await w.write(data);
          bytes += data.length;
          report(rank, world, bytes, true, '');
        }, () => app.downloadCancelled());
      } finally {
        if (done) await w.close();
        else {
          try {
            await w.abort(); // the swap file goes; the rank's file, empty, is removed below
          } catch {}
        }
      }
      if (done === null) { report(rank, world, bytes, false, stream.error()); return; }
      if (!done) {
        report(rank, world, bytes, false, `Cancelled after ${rank} of ${world} ranks; the files it wrote were removed.`);
        return;
      }
      report(rank + 1, world, bytes, true, '');
    }
    await writeFile(dir, `${prefix}.json`, stream.commGroups());
    complete = true;
    report(world, world, bytes, false, `Wrote ${world} traces (${(bytes / 1e6).toFixed(1)} MB) and ${prefix}.json.`);
  } catch (e) {
    report(0, 0, 0, false, `Download failed: ${e}; the files it wrote were removed.`);
  } finally {
    stream.delete();
    if (!complete) for (const name of written) await dir.removeEntry(name).catch(() => {});
  }
}

// One file, whole: the File System Access API writes a swap file and moves it into place on close.
async function writeFile(dir, name, data) {
  const file = await dir.getFileHandle(name, { create: true });
  const w = await file.createWritable();
  await w.write(data);
  await w.close();
}

async function hasEntry(dir, name) {
  try {
    await dir.getFileHandle(name);
    return true;
  } catch {
    return false;
  }
}
