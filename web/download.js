// "Download traces": streams every rank's Chakra ET file, then the communicator groups, into a folder
// the user picks (File System Access API). One rank's bytes are alive at a time, so memory stays
// bounded whatever the rank count. Progress and cancel go through the app (the ImGui panel shows them).

export function downloadSupported() {
  return typeof window.showDirectoryPicker === 'function';
}

export async function downloadTraces(Module, app, prefix = 'trace') {
  const report = (done, total, bytes, running, message) => app.setDownloadProgress(done, total, bytes, running, message);
  if (!downloadSupported()) {
    report(0, 0, 0, false, 'This browser cannot write into a folder (no File System Access API).');
    return;
  }
  let dir;
  try {
    dir = await window.showDirectoryPicker({ id: 'stagecraft-traces', mode: 'readwrite' });
  } catch (e) {
    report(0, 0, 0, false, e && e.name === 'AbortError' ? 'No folder picked.' : `Cannot open the folder: ${e}`);
    return;
  }
  const stream = new Module.TraceStream(app.currentModelJson(), app.currentParallelSpec());
  try {
    const error = stream.error();
    if (error) { report(0, 0, 0, false, error); return; }
    app.timeTraceStream(stream);  // compute nodes' duration_micros from the current cluster, as the CLI's --system
    const world = stream.world();
    let bytes = 0;
    report(0, world, 0, true, '');
    for (let rank = 0; rank < world; ++rank) {
      if (app.downloadCancelled()) {
        report(rank, world, bytes, false, `Cancelled after ${rank} of ${world} ranks.`);
        return;
      }
      // Copy out of wasm memory: the view dies at the next call into the module.
      const view = stream.writeRank(rank);
      if (!view) { report(rank, world, bytes, false, stream.error()); return; }
      const data = view.slice();
      const file = await dir.getFileHandle(`${prefix}.${rank}.et`, { create: true });
      const w = await file.createWritable();
      await w.write(data);
      await w.close();
      bytes += data.length;
      report(rank + 1, world, bytes, true, '');
    }
    const groups = await dir.getFileHandle(`${prefix}.json`, { create: true });
    const w = await groups.createWritable();
    await w.write(stream.commGroups());
    await w.close();
    report(world, world, bytes, false, `Wrote ${world} traces (${(bytes / 1e6).toFixed(1)} MB) and ${prefix}.json.`);
  } catch (e) {
    report(0, 0, 0, false, `Download failed: ${e}`);
  } finally {
    stream.delete();
  }
}
