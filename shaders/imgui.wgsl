// Dear ImGui draw data, drawn by web/renderer.js.
// Vertex = ImDrawVert (20 bytes): pos float32x2, uv float32x2, col unorm8x4 (R,G,B,A in memory).
// Colours are straight (non-premultiplied) alpha; the pipeline blends src-alpha / one-minus-src-alpha.

struct Uniforms {
    // Orthographic projection from ImGui's display rectangle (DisplayPos .. DisplayPos + DisplaySize,
    // CSS pixels, y down) to clip space.
    mvp : mat4x4<f32>,
};

@group(0) @binding(0) var<uniform> uniforms : Uniforms;
@group(0) @binding(1) var atlas_sampler : sampler;
@group(1) @binding(0) var atlas : texture_2d<f32>;

struct VertexIn {
    @location(0) pos : vec2<f32>,
    @location(1) uv : vec2<f32>,
    @location(2) col : vec4<f32>,
};

struct VertexOut {
    @builtin(position) position : vec4<f32>,
    @location(0) col : vec4<f32>,
    @location(1) uv : vec2<f32>,
};

@vertex
fn vs_main(v : VertexIn) -> VertexOut {
    var out : VertexOut;
    out.position = uniforms.mvp * vec4<f32>(v.pos, 0.0, 1.0);
    out.col = v.col;
    out.uv = v.uv;
    return out;
}

@fragment
fn fs_main(in : VertexOut) -> @location(0) vec4<f32> {
    return in.col * textureSample(atlas, atlas_sampler, in.uv);
}
