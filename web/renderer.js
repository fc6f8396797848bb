// WebGPU renderer for Dear ImGui draw data exported by the wasm module (src/app/imgui_bridge.h).
//
// Vertex and index data are uploaded straight out of wasm memory with queue.writeBuffer into GPU
// buffers that grow by powers of two and are otherwise reused frame after frame. One pipeline,
// per-command scissor rectangles, one bind group per texture id (the font atlas is id 1).

// Layout of the draw-data description (keep in sync with sc::app::drawdata).
const HEADER_WORDS = 12;
const LIST_WORDS = 6;
const CMD_WORDS = 8;
const VERTEX_SIZE = 20; // ImDrawVert: pos float2, uv float2, col unorm8x4
const INDEX_SIZE = 2; // ImDrawIdx = uint16
const VERTEX_OFFSETS = { pos: 0, uv: 8, col: 16 }; // the pipeline's vertex attributes below

// The module writes its draw-data layout into header words 10 and 11 (sc::app::drawdata::kLayout and
// kVertexLayout, one byte per field). Returns "" when it is the layout this renderer reads, else what differs.
export function drawDataLayoutMismatch(dd) {
  const bytes = (w) => [w & 0xff, (w >>> 8) & 0xff, (w >>> 16) & 0xff, w >>> 24];
  if (dd.length < HEADER_WORDS) return `the draw data has ${dd.length} words, fewer than its ${HEADER_WORDS}-word header`;
  const [headerWords, listWords, cmdWords, vertexSize] = bytes(dd[10]);
  const [indexSize, pos, uv, col] = bytes(dd[11]);
  const expected = { headerWords: HEADER_WORDS, listWords: LIST_WORDS, cmdWords: CMD_WORDS, vertexSize: VERTEX_SIZE,
    indexSize: INDEX_SIZE, pos: VERTEX_OFFSETS.pos, uv: VERTEX_OFFSETS.uv, col: VERTEX_OFFSETS.col };
  const got = { headerWords, listWords, cmdWords, vertexSize, indexSize, pos, uv, col };
  const diffs = Object.keys(expected).filter((k) => expected[k] !== got[k]).map((k) => `${k} ${got[k]} (renderer expects ${expected[k]})`);
  return diffs.length ? `draw-data layout of the module differs from web/renderer.js: ${diffs.join(', ')}` : '';
}

// Background behind the ImGui windows (sRGB bytes / 255; the canvas format is not *-srgb, so ImGui's
// colours reach the screen unchanged, as ImGui expects).
export const CLEAR_COLOR = [24 / 255, 26 / 255, 31 / 255, 1];

export class GpuUnavailableError extends Error {
  constructor(message) {
    super(message);
    this.name = 'GpuUnavailableError';
  }
}

const align4 = (n) => (n + 3) & ~3;
const nextPow2 = (n) => 2 ** Math.ceil(Math.log2(Math.max(n, 1)));

// Acquires adapter, device and canvas context. Throws GpuUnavailableError when WebGPU is missing or
// refuses us, so the page can fall back to plain HTML.
export async function requestGpu(canvas) {
  const gpu = navigator.gpu;
  if (!gpu) throw new GpuUnavailableError('this browser does not expose WebGPU: navigator.gpu is missing');
  let adapter = null;
  try {
    adapter = await gpu.requestAdapter();
  } catch (e) {
    throw new GpuUnavailableError(`requesting a WebGPU adapter failed: ${e?.message ?? e}`);
  }
  if (!adapter) throw new GpuUnavailableError('no WebGPU adapter is available');
  let device;
  try {
    device = await adapter.requestDevice();
  } catch (e) {
    throw new GpuUnavailableError(`requesting a WebGPU device failed: ${e?.message ?? e}`);
  }
  if (!device) throw new GpuUnavailableError('no WebGPU device is available');
  const context = canvas.getContext('webgpu');
  if (!context) throw new GpuUnavailableError('the canvas has no WebGPU context');
  return { adapter, device, context };
}

export class Renderer {
  constructor({ canvas, device, context, shaderSource }) {
    this.canvas = canvas;
    this.device = device;
    this.context = context;
    this.format = navigator.gpu.getPreferredCanvasFormat();
    this.clearColor = CLEAR_COLOR;
    context.configure({ device, format: this.format, alphaMode: 'opaque' });

    const module = device.createShaderModule({ label: 'imgui.wgsl', code: shaderSource });
    this.layout0 = device.createBindGroupLayout({
      entries: [
        { binding: 0, visibility: GPUShaderStage.VERTEX, buffer: { type: 'uniform' } },
        { binding: 1, visibility: GPUShaderStage.FRAGMENT, sampler: { type: 'filtering' } },
      ],
    });
    this.layout1 = device.createBindGroupLayout({
      entries: [{ binding: 0, visibility: GPUShaderStage.FRAGMENT, texture: { sampleType: 'float' } }],
    });
    this.pipeline = device.createRenderPipeline({
      label: 'imgui',
      layout: device.createPipelineLayout({ bindGroupLayouts: [this.layout0, this.layout1] }),
      vertex: {
        module,
        entryPoint: 'vs_main',
        buffers: [
          {
            arrayStride: VERTEX_SIZE,
            attributes: [
              { shaderLocation: 0, offset: VERTEX_OFFSETS.pos, format: 'float32x2' },
              { shaderLocation: 1, offset: VERTEX_OFFSETS.uv, format: 'float32x2' },
              { shaderLocation: 2, offset: VERTEX_OFFSETS.col, format: 'unorm8x4' },
            ],
          },
        ],
      },
      fragment: {
        module,
        entryPoint: 'fs_main',
        targets: [
          {
            format: this.format,
            blend: {
              color: { srcFactor: 'src-alpha', dstFactor: 'one-minus-src-alpha', operation: 'add' },
              alpha: { srcFactor: 'one', dstFactor: 'one-minus-src-alpha', operation: 'add' },
            },
          },
        ],
      },
      primitive: { topology: 'triangle-list', cullMode: 'none' },
    });

    this.uniforms = device.createBuffer({ size: 64, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.uniformData = new Float32Array(16);
    this.sampler = device.createSampler({
      minFilter: 'linear',
      magFilter: 'linear',
      mipmapFilter: 'linear',
      addressModeU: 'clamp-to-edge',
      addressModeV: 'clamp-to-edge',
    });
    this.bindGroup0 = device.createBindGroup({
      layout: this.layout0,
      entries: [
        { binding: 0, resource: { buffer: this.uniforms } },
        { binding: 1, resource: this.sampler },
      ],
    });
    this.textures = new Map(); // texture id -> { texture, bindGroup }
    this.vertexBuffer = null;
    this.indexBuffer = null;
    this.vertexCapacity = 0;
    this.indexCapacity = 0;
    this.bufferGrowths = 0; // for tests/diagnostics: how many times a buffer was (re)allocated
    // The last prepared frame: list table and command table (copies; wasm views die on growth).
    this.lists = []; // { baseVertex, firstIndex, firstCmd, cmdCount }
    this.cmds = new Uint32Array(0);
    this.cmdsF = new Float32Array(0);
    this.layoutChecked = false; // prepare() checks the module's draw-data layout on the first frame
    // A frame identical to the one on the canvas is not drawn again (the canvas keeps showing it): the ImGui
    // frame still runs every animation frame, so a change is drawn in the frame it happens, but a still
    // interface (or one whose only change is a progress bar every few frames) costs the GPU (or a software
    // rasteriser on the CPU, beside the web workers) nothing.
    this.last = new Uint32Array(0); // the prepared frame's words: command table, vertices, indices
    this.lastWords = -1;
    this.unchanged = false; // prepare() found the frame equal to the last one
    this.drawn = { width: 0, height: 0, textures: -1 }; // what the canvas shows
    this.textureVersion = 0; // counts setTexture calls
    this.framesDrawn = 0; // for tests/diagnostics
    this.framesSkipped = 0;
  }

  // Whether the frame of `dd` equals the last one prepared, word for word: header (display rectangle), list and
  // command tables, every list's vertices and indices. Keeps this frame's words for the next comparison.
  sameAsLast(dd, heapU8, listCount, tableWords) {
    let words = tableWords;
    for (let n = 0; n < listCount; n++) {
      const l = HEADER_WORDS + n * LIST_WORDS;
      if (dd[l] % 4 !== 0 || dd[l + 2] % 4 !== 0) return false; // not word-aligned: always drawn
      words += (dd[l + 1] * VERTEX_SIZE) / 4 + align4(dd[l + 3] * INDEX_SIZE) / 4;
    }
    if (this.last.length < words) this.last = new Uint32Array(Math.max(words, 2 * this.last.length));
    const last = this.last;
    const heap32 = new Uint32Array(heapU8.buffer, heapU8.byteOffset, heapU8.byteLength >> 2);
    let same = this.lastWords === words;
    let k = 0;
    const take = (src, from, count) => {
      for (let i = 0; i < count; i++, k++) {
        const v = src[from + i];
        if (last[k] !== v) {
          same = false;
          last[k] = v;
        }
      }
    };
    take(dd, 0, tableWords);
    for (let n = 0; n < listCount; n++) {
      const l = HEADER_WORDS + n * LIST_WORDS;
      take(heap32, dd[l] / 4, (dd[l + 1] * VERTEX_SIZE) / 4);
      take(heap32, dd[l + 2] / 4, align4(dd[l + 3] * INDEX_SIZE) / 4);
    }
    this.lastWords = words;
    return same;
  }

  // Uploads an RGBA8 texture from wasm memory and binds it to `id`.
  setTexture(id, heapU8, ptr, width, height) {
    const old = this.textures.get(id);
    if (old) old.texture.destroy();
    const texture = this.device.createTexture({
      label: `imgui texture ${id}`,
      size: [width, height],
      format: 'rgba8unorm',
      usage: GPUTextureUsage.TEXTURE_BINDING | GPUTextureUsage.COPY_DST,
    });
    this.textureVersion++;
    this.device.queue.writeTexture(
      { texture },
      heapU8.subarray(ptr, ptr + width * height * 4),
      { offset: 0, bytesPerRow: width * 4, rowsPerImage: height },
      [width, height],
    );
    const bindGroup = this.device.createBindGroup({
      layout: this.layout1,
      entries: [{ binding: 0, resource: texture.createView() }],
    });
    this.textures.set(id, { texture, bindGroup });
  }

  ensureBuffers(vertexBytes, indexBytes) {
    if (vertexBytes > this.vertexCapacity) {
      this.vertexBuffer?.destroy();
      this.vertexCapacity = nextPow2(Math.max(vertexBytes, 64 * 1024));
      this.vertexBuffer = this.device.createBuffer({
        label: 'imgui vertices',
        size: this.vertexCapacity,
        usage: GPUBufferUsage.VERTEX | GPUBufferUsage.COPY_DST,
      });
      this.bufferGrowths++;
    }
    if (indexBytes > this.indexCapacity) {
      this.indexBuffer?.destroy();
      this.indexCapacity = nextPow2(Math.max(indexBytes, 32 * 1024));
      this.indexBuffer = this.device.createBuffer({
        label: 'imgui indices',
        size: this.indexCapacity,
        usage: GPUBufferUsage.INDEX | GPUBufferUsage.COPY_DST,
      });
      this.bufferGrowths++;
    }
  }

  // Reads the draw-data description (a Uint32Array view into wasm memory) and uploads vertices,
  // indices and the projection. `heapU8` must be the module's current HEAPU8.
  prepare(drawData, heapU8) {
    const dd = drawData;
    if (!this.layoutChecked) {
      // Once, on the first frame: a module built with another layout fails here with what differs.
      const mismatch = drawDataLayoutMismatch(dd);
      if (mismatch) throw new Error(mismatch);
      this.layoutChecked = true;
    }
    const f = new Float32Array(dd.buffer, dd.byteOffset, HEADER_WORDS);
    const listCount = dd[0];
    const cmdCount = dd[1];
    const [posX, posY, dispW, dispH] = [f[4], f[5], f[6], f[7]];
    const cmdStart = HEADER_WORDS + listCount * LIST_WORDS;
    this.unchanged = this.sameAsLast(dd, heapU8, listCount, cmdStart + cmdCount * CMD_WORDS);
    if (this.unchanged) return; // the buffers, lists and commands already hold this frame

    let vertexBytes = 0;
    let indexBytes = 0;
    for (let n = 0; n < listCount; n++) {
      const l = HEADER_WORDS + n * LIST_WORDS;
      vertexBytes += dd[l + 1] * VERTEX_SIZE;
      indexBytes += align4(dd[l + 3] * INDEX_SIZE);
    }
    this.ensureBuffers(vertexBytes, indexBytes);

    const queue = this.device.queue;
    this.lists.length = 0;
    let vOff = 0;
    let iOff = 0;
    for (let n = 0; n < listCount; n++) {
      const l = HEADER_WORDS + n * LIST_WORDS;
      const vBytes = dd[l + 1] * VERTEX_SIZE;
      const iBytes = align4(dd[l + 3] * INDEX_SIZE); // the C++ side reserved the padding
      if (vBytes > 0) queue.writeBuffer(this.vertexBuffer, vOff, heapU8, dd[l], vBytes);
      if (iBytes > 0) queue.writeBuffer(this.indexBuffer, iOff, heapU8, dd[l + 2], iBytes);
      this.lists.push({ baseVertex: vOff / VERTEX_SIZE, firstIndex: iOff / INDEX_SIZE, firstCmd: dd[l + 4], cmdCount: dd[l + 5] });
      vOff += vBytes;
      iOff += iBytes;
    }
    this.cmds = dd.slice(cmdStart, cmdStart + cmdCount * CMD_WORDS);
    this.cmdsF = new Float32Array(this.cmds.buffer);

    // Orthographic projection: DisplayPos (top left) .. DisplayPos + DisplaySize -> clip space.
    const L = posX;
    const R = posX + dispW;
    const T = posY;
    const B = posY + dispH;
    const m = this.uniformData;
    m.fill(0);
    m[0] = 2 / (R - L || 1);
    m[5] = 2 / (T - B || 1);
    m[10] = 0.5;
    m[12] = (R + L) / (L - R || 1);
    m[13] = (T + B) / (B - T || 1);
    m[14] = 0.5;
    m[15] = 1;
    queue.writeBuffer(this.uniforms, 0, m);
  }

  // Records the render pass of the last prepared frame into `encoder`, drawing into `view` whose size
  // is width x height device pixels.
  encode(encoder, view, width, height) {
    const pass = encoder.beginRenderPass({
      label: 'imgui',
      colorAttachments: [
        {
          view,
          clearValue: { r: this.clearColor[0], g: this.clearColor[1], b: this.clearColor[2], a: 1 },
          loadOp: 'clear',
          storeOp: 'store',
        },
      ],
    });
    if (this.lists.length > 0 && this.cmds.length > 0) {
      pass.setPipeline(this.pipeline);
      pass.setBindGroup(0, this.bindGroup0);
      pass.setVertexBuffer(0, this.vertexBuffer);
      pass.setIndexBuffer(this.indexBuffer, 'uint16');
      const c = this.cmds;
      const cf = this.cmdsF;
      const fallback = this.textures.get(1);
      let boundTexture = -1;
      for (const list of this.lists) {
        for (let k = list.firstCmd; k < list.firstCmd + list.cmdCount; k++) {
          const o = k * CMD_WORDS;
          // Clip rect (framebuffer px) -> scissor, clamped to the target.
          const x0 = Math.max(0, Math.floor(cf[o]));
          const y0 = Math.max(0, Math.floor(cf[o + 1]));
          const x1 = Math.min(width, Math.ceil(cf[o + 2]));
          const y1 = Math.min(height, Math.ceil(cf[o + 3]));
          if (x1 <= x0 || y1 <= y0) continue;
          const tex = c[o + 4];
          if (tex !== boundTexture) {
            const t = this.textures.get(tex) ?? fallback;
            if (!t) continue;
            pass.setBindGroup(1, t.bindGroup);
            boundTexture = tex;
          }
          pass.setScissorRect(x0, y0, x1 - x0, y1 - y0);
          pass.drawIndexed(c[o + 7], 1, list.firstIndex + c[o + 5], list.baseVertex + c[o + 6], 0);
        }
      }
    }
    pass.end();
  }

  // Draws the last prepared frame to the canvas, unless the canvas already shows it (same frame, same canvas size,
  // same textures). Returns whether it drew.
  render() {
    const d = this.drawn;
    const { width, height } = this.canvas;
    if (this.unchanged && d.width === width && d.height === height && d.textures === this.textureVersion) {
      this.framesSkipped++;
      return false;
    }
    Object.assign(d, { width, height, textures: this.textureVersion });
    this.framesDrawn++;
    const texture = this.context.getCurrentTexture();
    const encoder = this.device.createCommandEncoder({ label: 'imgui frame' });
    this.encode(encoder, texture.createView(), texture.width, texture.height);
    this.device.queue.submit([encoder.finish()]);
    return true;
  }

  // Debug/test hook: renders the last prepared frame into an offscreen texture of the canvas size and
  // reads back the rectangle (x, y, w, h) in device pixels. Resolves to RGBA bytes, row-major.
  async readPixels(x, y, w, h) {
    const W = this.canvas.width;
    const H = this.canvas.height;
    x = Math.max(0, Math.min(W, Math.floor(x)));
    y = Math.max(0, Math.min(H, Math.floor(y)));
    w = Math.max(0, Math.min(W - x, Math.floor(w)));
    h = Math.max(0, Math.min(H - y, Math.floor(h)));
    if (w === 0 || h === 0) return new Uint8Array(0);
    const device = this.device;
    const texture = device.createTexture({
      label: 'readPixels target',
      size: [W, H],
      format: this.format,
      usage: GPUTextureUsage.RENDER_ATTACHMENT | GPUTextureUsage.COPY_SRC,
    });
    const bytesPerRow = Math.ceil((w * 4) / 256) * 256;
    const buffer = device.createBuffer({ size: bytesPerRow * h, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
    const encoder = device.createCommandEncoder({ label: 'readPixels' });
    this.encode(encoder, texture.createView(), W, H);
    encoder.copyTextureToBuffer({ texture, origin: { x, y } }, { buffer, bytesPerRow, rowsPerImage: h }, [w, h]);
    device.queue.submit([encoder.finish()]);
    try {
      await buffer.mapAsync(GPUMapMode.READ);
      const src = new Uint8Array(buffer.getMappedRange());
      const out = new Uint8Array(w * h * 4);
      for (let row = 0; row < h; row++) out.set(src.subarray(row * bytesPerRow, row * bytesPerRow + w * 4), row * w * 4);
      if (this.format.startsWith('bgra')) {
        for (let i = 0; i < out.length; i += 4) {
          const b = out[i];
          out[i] = out[i + 2];
          out[i + 2] = b;
        }
      }
      buffer.unmap();
      return out;
    } finally {
      buffer.destroy();
      texture.destroy();
    }
  }
}
