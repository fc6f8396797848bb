// Stagecraft page: loads the wasm module (stagecraft.js, MODULARIZE createStagecraft), a model preset,
// and draws the Dear ImGui UI with WebGPU (renderer.js). Without WebGPU the page shows a plain-HTML
// message and the results as text (the module still runs: MirrorText needs no frame).
//
// URL hash: the whole configuration as a link (link.js: "#d" + compressed text), kept up to date while the user
// edits; the older form #model=llama3-8b&system=dgx-h100-superpod&parallel=tp=8,pp=4 (all optional) still opens.
// Test/debug surface: window.stagecraft = { ready, app, module, firstFrameMs, frames, gpu, readPixels,
// windowRect, itemRect, styleColor, clearColor, loadModel, ... }.
import { GpuUnavailableError, Renderer, requestGpu } from './renderer.js';
import { Input } from './input.js';
import { downloadSupported, downloadTraces } from './download.js';
import { decodeLink, encodeLink } from './link.js';
import { createJobs, workersAvailable } from './jobs.js';
import { saveBlob } from './zip.js';
import { ResultsPanel, copyText } from './results_panel.js';
import { FallbackControls } from './fallback.js';

const $ = (id) => document.getElementById(id);
const canvas = $('canvas');
const textInput = $('text-input');
const fallback = $('fallback');
const statusLine = $('status');

let resolveReady;
let rejectReady;
const stagecraft = {
  ready: new Promise((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  }),
  app: null,
  module: null,
  renderer: null,
  gpu: false,
  gpuError: null,
  model: null,
  modelError: '',
  firstFrameMs: null, // performance.now() (ms since navigation start) when the first frame was submitted
  frames: 0,
  clearColor: null,
  readPixels: async () => {
    throw new Error('WebGPU is not available on this page');
  },
  windowRect: (name) => stagecraft.app?.windowRect(name) ?? null,
  itemRect: (window, label) => stagecraft.app?.itemRect(window, label) ?? null,
  styleColor: (name) => stagecraft.app?.styleColor(name) ?? null,
  loadModel: (name) => loadModel(name),
  linkState: () => stagecraft.app?.linkState() ?? null,
  updateReady: false, // a newer build is installed and waits for the page's reload
  linkError: '', // why the link in the hash was refused ("" when it was applied or there was none)
};
stagecraft.ready.catch(() => {}); // failures are reported on the page and the console
window.stagecraft = stagecraft;

function setStatus(text) {
  statusLine.textContent = text;
  statusLine.hidden = !text;
}

// ---- Results as DOM text (results_panel.js: aria-live, selectable, copy as text/JSON/Markdown).
let resultsPanel = null;
function updateMirror() {
  resultsPanel?.update();
}

// ---- Presets: models (presets/models), clusters (presets/systems + their accelerator in
// presets/hardware), calibration (presets/calibration/measured.json). The URL hash picks among them:
// #model=llama3-8b&system=dgx-h100-superpod&parallel=tp=8,pp=4
const SAFE_NAME = /^[A-Za-z0-9._-]+$/;
let modelList = null;

const withJson = (name) => (name.endsWith('.json') ? name : `${name}.json`);
const hashText = () => location.hash.replace(/^#/, '');
// The older hash names fields (model=...&parallel=...); a link (link.js) never holds '='.
const hashIsLink = () => hashText() !== '' && !hashText().includes('=');
const hashParams = () => new URLSearchParams(hashIsLink() ? '' : hashText());

async function fetchText(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.text();
}

async function fetchList(url) {
  const list = JSON.parse(await fetchText(url));
  if (!Array.isArray(list)) throw new Error(`${url}: not a JSON array`);
  return list.filter((n) => typeof n === 'string' && SAFE_NAME.test(n));
}

async function fetchModelList() {
  try {
    const names = await fetchList('presets/models/index.json');
    if (names.length > 0) return names;
  } catch {
    // no index: use the default below
  }
  return ['gpt3-175b.json'];
}

// Resolves to one promise per cluster of the index, in index order, each resolving to { file, system,
// accelerator } or an Error: the first cluster can be registered before the others have arrived.
async function fetchSystems() {
  let list;
  try {
    list = await fetchList('presets/systems/index.json');
  } catch (e) {
    console.warn(`stagecraft: no cluster presets: ${e.message}`);
    return [];
  }
  return list.map(async (file) => {
    try {
      const system = await fetchText(`presets/systems/${file}`);
      const acc = JSON.parse(system).accelerator;
      if (typeof acc !== 'string' || !SAFE_NAME.test(acc)) throw new Error(`presets/systems/${file}: no valid "accelerator"`);
      return { file, system, accelerator: await fetchText(`presets/hardware/${withJson(acc)}`) };
    } catch (e) {
      return e;
    }
  });
}

function modelFromHash(list) {
  const m = hashParams().get('model');
  if (!m) return list[0];
  const name = withJson(m);
  return SAFE_NAME.test(name) ? name : list[0];
}

// The cluster and parallel split named in the hash, if any. Returns the first error or "".
function applyHashExtras() {
  const app = stagecraft.app;
  const p = hashParams();
  const errors = [];
  const system = p.get('system');
  if (system && !app.selectSystem(withJson(system))) errors.push(`unknown cluster "${system}"`);
  const parallel = p.get('parallel');
  if (parallel) {
    const e = app.setParallel(parallel);
    if (e) errors.push(`parallel ${parallel}: ${e}`);
  }
  for (const e of errors) console.warn(`stagecraft: ${e}`);
  if (errors.length > 0) setStatus(errors.join('; '));
  updateMirror();
}

// ---- The configuration as a link in the URL hash (link.js, src/app/app_link.cpp).
let lastLink = null; // the link text of the state the hash shows (null: not known yet)
let linkTimer = 0;

function currentLink() {
  const r = stagecraft.app.linkState();
  return r.ok ? r.link : null; // a state that cannot be a link keeps the last hash
}

// Applies the link in the hash; a damaged one leaves the page at its defaults with the message shown (in the
// Model panel and the status line) until the next edit.
function applyHashLink() {
  const app = stagecraft.app;
  let error;
  try {
    error = app.applyLink(decodeLink(hashText()));
  } catch (e) {
    error = e.message;
    app.rejectLink(error);
  }
  stagecraft.linkError = error;
  if (error) {
    console.warn(`stagecraft: ${error}`);
    setStatus(error);
  }
  lastLink = currentLink();
  updateMirror();
}

function writeHash(text) {
  clearTimeout(linkTimer);
  history.replaceState(history.state, '', `#${encodeLink(text)}`);
}

// Called every frame: when the state's link changes (the user edited something), the hash follows 300 ms after
// the last change, and a message about a refused link goes away. The link is built at most every LINK_CHECK_MS:
// it is the whole configuration as text, and with a sweep axis of hundreds of values (5.6 KB) building it took
// 1.5 ms of the page's thread, every frame, idle or not (100 us natively).
const LINK_CHECK_MS = 200;
let linkCheckedAt = -Infinity;
function trackLink(now) {
  if (now - linkCheckedAt < LINK_CHECK_MS) return;
  linkCheckedAt = now;
  const link = currentLink();
  if (link === null || link === lastLink) return;
  const first = lastLink === null;
  lastLink = link;
  if (first) return; // the state the page opened with: its URL stays as it was
  if (stagecraft.linkError) {
    if (statusLine.textContent === stagecraft.linkError) setStatus('');
    stagecraft.linkError = '';
  }
  clearTimeout(linkTimer);
  linkTimer = setTimeout(() => writeHash(link), 300);
}

// The hash brought up to date at once (after an edit on the page without WebGPU, and before "Copy link").
function linkNow() {
  const link = currentLink();
  if (link === null) return false;
  if (stagecraft.linkError && statusLine.textContent === stagecraft.linkError) setStatus('');
  stagecraft.linkError = '';
  lastLink = link;
  writeHash(link);
  return true;
}

// "Copy link": the hash brought up to date at once, then the whole URL to the clipboard. Resolves to the note the
// button shows (also set on the app, beside its ImGui button).
async function copyLink() {
  const app = stagecraft.app;
  let note;
  if (!linkNow()) {
    note = `no link: ${app.linkState().error}`;
  } else {
    note = (await copyText(location.href)) ? 'copied' : 'could not copy; the address bar holds the link';
  }
  app.setLinkNote(note);
  return note;
}

const fetchPreset = (name) => fetchText(`presets/models/${name}`);

// Serving presets for the Serving tab (presets/inference/index.json lists them); a missing index or file is a
// warning, never a failed page.
async function fetchServingPresets() {
  let list;
  try {
    list = await fetchList('presets/inference/index.json');
  } catch (e) {
    console.warn(`stagecraft: no serving presets: ${e.message}`);
    return [];
  }
  return Promise.all(list.map((file) => fetchText(`presets/inference/${file}`).then((json) => ({ file, json })).catch((e) => e)));
}

function reportModel(name, error) {
  stagecraft.model = name;
  stagecraft.modelError = error;
  setStatus(error ? `Model ${name}: ${error}` : '');
  if (error) console.warn(`stagecraft: model ${name}: ${error}`);
  updateMirror();
  return error;
}

// Registers the presets list[from..] with the app (its picker), in index order. The first preset registered
// becomes current as it is added (and is computed then); `wanted` (the first, or the one named in the URL hash)
// is selected, and computed, again only when it is another one. Returns the model error ("" when none).
function addPresets(list, texts, from, wanted) {
  const app = stagecraft.app;
  let firstError = '';
  let first = '';
  for (let i = from; i < list.length; i++) {
    const text = texts[i];
    const error = text instanceof Error ? text.message : app.addPreset(list[i], text);
    if (error) {
      console.warn(`stagecraft: preset ${list[i]}: ${error}`);
      firstError ||= error;
    } else {
      first ||= list[i];
    }
  }
  if (wanted === null) return '';
  if (!first) return reportModel(list[0], firstError || 'no presets');
  if (first !== wanted && !app.selectPreset(wanted)) return loadModel(wanted);
  return reportModel(wanted, '');
}

// Loads one preset file as the current model (also one outside the index).
async function loadModel(name) {
  const app = stagecraft.app;
  if (app.selectPreset(name)) return reportModel(name, '');
  let error = '';
  try {
    error = app.loadModel(await fetchPreset(name));
  } catch (e) {
    error = `could not load presets/models/${name}: ${e?.message ?? e}`;
  }
  return reportModel(name, error);
}

// ---- Canvas size: CSS size x devicePixelRatio. A ResizeObserver reports window resizes (and the
// exact device-pixel box where supported); devicePixelRatio (zoom, another screen) is read every
// frame, so both kinds of change resize the backing store on the next frame.
const size = { cssW: 0, cssH: 0, pxW: 0, pxH: 0, exact: false, dpr: 0 };
function observeCanvasSize() {
  const ro = new ResizeObserver((entries) => {
    for (const e of entries) {
      size.cssW = e.contentRect.width;
      size.cssH = e.contentRect.height;
      const box = e.devicePixelContentBoxSize?.[0];
      size.exact = !!box;
      size.dpr = window.devicePixelRatio;
      if (box) {
        size.pxW = box.inlineSize;
        size.pxH = box.blockSize;
      }
    }
  });
  try {
    ro.observe(canvas, { box: 'device-pixel-content-box' });
  } catch {
    ro.observe(canvas);
  }
}

function syncCanvasSize() {
  const dpr = window.devicePixelRatio || 1;
  let cssW = size.cssW;
  let cssH = size.cssH;
  if (!(cssW > 0 && cssH > 0)) {
    cssW = canvas.clientWidth;
    cssH = canvas.clientHeight;
  }
  // The observer's device-pixel size is exact (it snaps fractional ratios), but only for the ratio it was measured
  // at, and only when it agrees with that ratio: an emulated ratio (a browser started with a device scale factor,
  // as tests and some kiosks do) leaves it at the CSS size, which drew a 2x interface into a 1x canvas, clipped.
  const near = (px, css) => Math.abs(px - css * dpr) <= 1;
  const exact = size.exact && size.dpr === dpr && near(size.pxW, cssW) && near(size.pxH, cssH);
  const pxW = Math.max(1, exact ? size.pxW : Math.round(cssW * dpr));
  const pxH = Math.max(1, exact ? size.pxH : Math.round(cssH * dpr));
  if (canvas.width !== pxW) canvas.width = pxW;
  if (canvas.height !== pxH) canvas.height = pxH;
  // ImGui's framebuffer scale is the canvas's own, so its scissor rectangles always match the backing store.
  return { cssW, cssH, dpr: cssW > 0 ? pxW / cssW : dpr };
}

// ---- Fallback without WebGPU: HTML controls over the same state, the results panel open, the link kept.
let fallbackControls = null;
// A large split's trace summary is counted a slice a frame on the canvas page; here, a slice a timer tick, so the
// text shows it when done and the controls stay responsive meanwhile.
let summaryPump = null;
function pumpSummary(app) {
  const busy = app.stepSummary();
  updateMirror();
  summaryPump = setTimeout(() => pumpSummary(app), busy ? 0 : 100);
}
function showFallback(reason) {
  document.body.classList.add('no-gpu');
  fallback.hidden = false;
  $('fallback-reason').textContent = reason;
  const app = stagecraft.app;
  if (app) {
    resultsPanel.setOpen(true);
    fallbackControls ??= new FallbackControls({
      app,
      onEdit: () => {
        updateMirror();
        linkNow();
      },
      copyLink,
    });
    fallbackControls.sync();
    // No more frames, so no more pool ticks (a lost device stops them): what the pool was to count, the timer
    // counts on this thread.
    app.pool().setWorkers(0);
    if (summaryPump === null) pumpSummary(app);
  }
  updateMirror();
}

// "Perfetto JSON": one rank's timeline (every stage replayed on the page's cluster) saved as
// trace.<rank>.trace.json, the bytes `stagecraft trace --format json --rank <rank>` writes.
// With workers it is computed in one (every stage is replayed: seconds for a large split); without, or when none
// can start, here.
async function saveTimeline(module, app, rank) {
  const message = (text) => app.setDownloadProgress(0, 0, 0, false, text);
  const link = app.linkState();
  if (stagecraft.jobs && link.ok) {
    message(`Replaying every stage for rank ${rank}'s timeline in a worker...`);
    try {
      saveTimelineText(message, rank, await stagecraft.jobs.runTask('timeline', link.link, [String(rank)]));
      return;
    } catch (e) {
      if (!e.poolFailed) {
        message(`No timeline: ${e.message}`);
        return;
      }
    }
  }
  const stream = new module.TraceStream(app.currentModelJson(), app.currentParallelSpec());
  try {
    let bytes = null;
    if (!stream.error() && app.timeTraceStream(stream)) bytes = stream.rankTimelineJson(rank);
    if (!bytes) {
      message(`No timeline: ${stream.error() || 'choose a cluster to time the ops'}`);
      return;
    }
    saveTimelineText(message, rank, bytes);
  } finally {
    stream.delete();
  }
}

// `bytes`: the JSON as a Uint8Array (a JavaScript string of it would stop at 2^29 characters).
function saveTimelineText(message, rank, bytes) {
  const name = `trace.${rank}.trace.json`;
  saveBlob(name, new Blob([bytes], { type: 'application/json' }));
  message(`Saved ${name} (${(bytes.length / 1e6).toFixed(1)} MB): open it in ui.perfetto.dev.`);
}

// Saves text as a download (the Sweeps view's CSV), as the zip is saved.
function saveText(name, text, type = 'text/plain') {
  saveBlob(name, new Blob([text], { type }));
}

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = src;
    s.onload = resolve;
    s.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.append(s);
  });
}

// Offline and installable: sw.js caches the page, the module and the presets on this first visit.
// stagecraft.offline resolves once the worker is active (its install filled the cache), false without one.
// A newer build's worker waits (sw.js: the page keeps running on the files of its own build); the page then
// offers a reload, which activates it.
function registerServiceWorker() {
  if (!('serviceWorker' in navigator) || new URLSearchParams(location.search).get('sw') === '0') return Promise.resolve(false);
  return navigator.serviceWorker
    .register('sw.js')
    .then((registration) => {
      watchForUpdate(registration);
      return navigator.serviceWorker.ready;
    })
    .then(() => true)
    .catch((e) => {
      console.warn(`stagecraft: no offline copy (${e?.message ?? e})`);
      return false;
    });
}

function watchForUpdate(registration) {
  const offer = (worker) => {
    if (!navigator.serviceWorker.controller) return; // the first install takes over by itself
    stagecraft.updateReady = true;
    const notice = $('update');
    notice.hidden = false;
    $('update-reload').onclick = () => {
      navigator.serviceWorker.addEventListener('controllerchange', () => location.reload(), { once: true });
      worker.postMessage({ type: 'activate' });
    };
  };
  if (registration.waiting) offer(registration.waiting);
  registration.addEventListener('updatefound', () => {
    const worker = registration.installing;
    worker?.addEventListener('statechange', () => {
      if (worker.state === 'installed') offer(worker);
    });
  });
}

// Emscripten's instantiateWasm hook: instantiates an already compiled module with the glue's imports.
function instantiateWith(wasm) {
  return (imports, receive) => {
    WebAssembly.instantiate(wasm, imports).then(
      (instance) => receive(instance, wasm),
      (e) => {
        setStatus(`Stagecraft could not start: ${e?.message ?? e}`);
        rejectReady(e);
      },
    );
    return {}; // the exports arrive through `receive`
  };
}

// The compiled module, or null when it cannot be compiled here (the glue then fetches and compiles it itself).
async function compileWasm(url) {
  try {
    return await WebAssembly.compileStreaming(fetch(url));
  } catch {
    try {
      const r = await fetch(url);
      return r.ok ? await WebAssembly.compile(await r.arrayBuffer()) : null;
    } catch {
      return null;
    }
  }
}

async function main() {
  stagecraft.offline = registerServiceWorker();
  // Everything independent starts at once: wasm module, GPU device, shader, preset index.
  const shaderP = fetch('shaders/imgui.wgsl').then((r) => {
    if (!r.ok) throw new Error(`shaders/imgui.wgsl: HTTP ${r.status}`);
    return r.text();
  });
  shaderP.catch(() => {});
  const gpuP = requestGpu(canvas).catch((e) => e);
  const listP = fetchModelList();
  const textsP = listP.then((list) => Promise.all(list.map((name) => fetchPreset(name).catch((e) => e))));
  const systemsP = fetchSystems();
  const calibrationP = fetchText('presets/calibration/measured.json').catch((e) => e);
  const servingP = fetchServingPresets();
  // The page compiles the wasm module itself, so that its web workers can be handed the compiled module
  // (structured clone shares the code, with whatever the engine has optimised since) instead of each fetching
  // and compiling its own copy on the CPU they are meant to compute on.
  const wasmP = compileWasm('stagecraft.wasm');
  if (typeof window.createStagecraft !== 'function') await loadScript('stagecraft.js');
  const wasm = await wasmP;
  const module = await window.createStagecraft(wasm ? { instantiateWasm: instantiateWith(wasm) } : {});
  const app = new module.WebApp();
  performance.mark('stagecraft:module');
  stagecraft.module = module;
  stagecraft.app = app;
  resultsPanel = new ResultsPanel(app);
  stagecraft.resultsPanel = resultsPanel;

  app.setDownloadSupported(downloadSupported());
  // The trace download as the button starts it (also on the page without WebGPU, which has no button yet).
  stagecraft.downloadTraces = (saveZip) => downloadTraces(module, app, 'trace', saveZip);

  // What the first frame needs first: the calibration, the first cluster and the current model (registering a
  // model computes it; the calibration and the clusters recompute nothing before). The rest of the presets (the
  // other clusters and models, the serving descriptions) only fill pickers: without a hash they are registered
  // after the first frame is drawn, and `stagecraft.ready` resolves once they are. A hash may name any of them,
  // so with one everything is registered first.
  const calibration = await calibrationP;
  const calibrationError = calibration instanceof Error ? calibration.message : app.setCalibration(calibration);
  if (calibrationError) console.warn(`stagecraft: ${calibrationError}`);
  const addSystem = (sys) => {
    const error = sys instanceof Error ? sys.message : app.addSystem(sys.file, sys.system, sys.accelerator);
    if (error) console.warn(`stagecraft: cluster ${sys.file ?? ''}: ${error}`);
  };
  const systemPs = await systemsP;
  const systems = [];
  const everything = hashText() !== '';
  const firstSystems = everything ? systemPs.length : Math.min(1, systemPs.length);
  for (let i = 0; i < firstSystems; i++) addSystem((systems[i] = await systemPs[i]));
  modelList = await listP;
  stagecraft.models = modelList;
  const texts = await textsP;
  const wantedModel = modelFromHash(modelList);
  let firstPresets = everything ? modelList.length : 1;
  if ((await addPresets(modelList.slice(0, firstPresets), texts, 0, wantedModel)) && !everything) {
    // The first preset failed: the first of the others that loads becomes current, as with everything at once.
    await addPresets(modelList, texts, 1, wantedModel);
    firstPresets = modelList.length;
  }
  // What every worker of the pool registers, as the page did: the same presets build the same requests
  // (filled in by addRest; the page hands jobs to the pool only after that).
  const poolInit = {
    presets: [],
    systems: [],
    calibration: calibration instanceof Error ? null : calibration,
    serving: [],
    wasm, // the compiled module (null: each worker compiles its own)
  };
  function fillPoolInit() {
    poolInit.presets = modelList.map((file, i) => ({ file, json: texts[i] })).filter((p) => typeof p.json === 'string');
    poolInit.systems = systems.filter((sys) => !(sys instanceof Error));
    poolInit.serving = servingPresets.filter((p) => !(p instanceof Error));
  }
  const servingPresets = [];
  const addRest = async () => {
    for (let i = firstSystems; i < systemPs.length; i++) addSystem((systems[i] = await systemPs[i]));
    for (const preset of await servingP) {
      const error = preset instanceof Error ? preset.message : app.addServingPreset(preset.file, preset.json);
      if (error) console.warn(`stagecraft: serving preset ${preset.file ?? ''}: ${error}`);
      servingPresets.push(preset);
    }
    addPresets(modelList, texts, firstPresets, null);
    fillPoolInit();
    updateMirror();
  };
  let restDone = false;
  if (everything) {
    await addRest();
    restDone = true;
  }
  if (hashIsLink()) applyHashLink();
  else applyHashExtras();
  lastLink = currentLink();
  performance.mark('stagecraft:model');
  window.addEventListener('hashchange', async () => {
    if (hashIsLink()) {
      applyHashLink();
    } else {
      await loadModel(modelFromHash(modelList));
      applyHashExtras();
    }
    fallbackControls?.sync();
  });

  const gpu = await gpuP;
  performance.mark('stagecraft:gpu');
  if (gpu instanceof Error) {
    if (!(gpu instanceof GpuUnavailableError)) throw gpu;
    stagecraft.gpuError = gpu.message;
    if (!restDone) await addRest();
    showFallback(gpu.message);
    resolveReady(stagecraft);
    return;
  }
  const renderer = new Renderer({ ...gpu, canvas, shaderSource: await shaderP });
  stagecraft.renderer = renderer;
  stagecraft.gpu = true;
  stagecraft.clearColor = renderer.clearColor;
  stagecraft.readPixels = (x, y, w, h) => renderer.readPixels(x, y, w, h);
  let stop = false;
  gpu.device.addEventListener('uncapturederror', (e) => console.error(`WebGPU: ${e.error.message}`));
  gpu.device.lost.then((info) => {
    if (info.reason === 'destroyed') return;
    stop = true;
    showFallback(`the WebGPU device was lost (${info.message || info.reason})`);
  });

  // The worker pool for the search and the sweep (?workers=0: none, both run in frame slices).
  const wanted = new URLSearchParams(location.search).get('workers');
  const jobs = workersAvailable() && wanted !== '0' ? createJobs(app, poolInit, { saveText, ...(wanted ? { size: Number(wanted) } : {}) }) : null;
  const pagePool = jobs?.pagePool ?? app.pool();
  stagecraft.jobs = jobs;
  stagecraft.pagePool = pagePool;

  observeCanvasSize();
  const input = new Input({ canvas, textInput, app });
  let fontVersion = -1;
  const frameWork = new Float64Array(1024); // ms of the page's work in the last 1,024 frames (a ring)
  stagecraft.workMs = 0; // the same, summed over every frame
  stagecraft.frameWork = () => Array.from(frameWork.subarray(0, Math.min(stagecraft.frames, frameWork.length)));
  let lastError = '';

  const frame = (now) => {
    if (stop) return;
    requestAnimationFrame(frame);
    const workStart = performance.now();
    try {
      const { cssW, cssH, dpr } = syncCanvasSize();
      app.frame(cssW, cssH, dpr, now / 1000);
      const err = app.lastError();
      if (err !== lastError) {
        lastError = err;
        if (err) console.error(`stagecraft UI: ${err}`);
      }
      if (app.fontVersion() !== fontVersion) {
        const atlas = app.fontAtlas();
        renderer.setTexture(atlas.textureId, module.HEAPU8, atlas.ptr, atlas.width, atlas.height);
        fontVersion = atlas.version;
      }
      renderer.prepare(app.drawData(), module.HEAPU8);
      renderer.render();
      input.afterFrame();
      updateMirror();
      if (app.takeDownloadRequest()) downloadTraces(module, app); // async; progress shows in the panel
      const timelineRank = app.takeTimelineRequest();
      if (timelineRank >= 0) {
        saveTimeline(module, app, timelineRank).catch((e) => app.setDownloadProgress(0, 0, 0, false, `No timeline: ${e?.message ?? e}`));
      }
      const pipelineJson = app.takePipelineTimelineJson();
      if (pipelineJson) saveText('pipeline.trace.json', pipelineJson, 'application/json');
      if (jobs && restDone) jobs.tick();
      else if (pagePool.takeCsvRequest()) saveText('stagecraft-sweep.csv', pagePool.sweepCsv(), 'text/csv');
      trackLink(now);
      if (app.takeCopyLinkRequest()) copyLink(); // async; the outcome shows beside the button
      stagecraft.frames++;
      // The page's own work this frame (ImGui frame, draw-data upload, jobs), without the browser's compositing
      // or a software rasteriser's time: the figure a "frame under 16 ms" target is about (bench/browser).
      frameWork[stagecraft.frames % frameWork.length] = performance.now() - workStart;
      stagecraft.workMs += performance.now() - workStart;
      if (stagecraft.firstFrameMs === null) {
        stagecraft.firstFrameMs = performance.now();
        performance.mark('stagecraft:first-frame');
        if (restDone) resolveReady(stagecraft);
        else {
          // The pickers' other presets, after this frame is on screen (see above).
          setTimeout(() =>
            addRest().then(() => {
              restDone = true;
              resolveReady(stagecraft);
            }, rejectReady),
          );
        }
      }
    } catch (e) {
      stop = true;
      console.error('stagecraft: frame failed', e);
      showFallback(`drawing failed: ${e?.message ?? e}`);
      rejectReady(e);
    }
  };
  requestAnimationFrame(frame);
}

main().catch((e) => {
  console.error('stagecraft: start-up failed', e);
  setStatus(`Stagecraft could not start: ${e?.message ?? e}`);
  if (stagecraft.app) showFallback(`start-up failed: ${e?.message ?? e}`);
  rejectReady(e);
});
