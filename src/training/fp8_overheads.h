// The fp8 copies of the weights Transformer Engine makes for its fp8 GEMMs: what the graph's per-GEMM casts
// (graph/op_builder.h, `<gemm>.fp8_input` and `<gemm>.fp8_grad_cast`, which cover activations and output
// gradients) leave out.
//
// Each TE linear quantizes its 16-bit weight for the forward GEMM (rowwise) and, when a backward follows, for
// the input-gradient GEMM (columnwise: on Hopper a transposed fp8 copy, since its fp8 GEMMs take only the TN
// layout) into a workspace (NVIDIA/TransformerEngine transformer_engine/pytorch/module/linear.py, layernorm_linear.py,
// layernorm_mlp.py, grouped_linear.py: `weight_quantizer.set_usage(rowwise=True, columnwise=...)`,
// `get_weight_workspace(..., update_workspace = is_first_microbatch is None or is_first_microbatch)`). The
// workspace is kept across the microbatches of a step when the caller says which microbatch is the first:
// Megatron-Core does (megatron/core/extensions/transformer_engine.py, TELinear / TEGroupedLinear.forward pass
// `is_first_microbatch` unless `disable_parameter_transpose_cache`, and clear it after the first forward), so
// a rank quantizes each weight once per step. Under ZeRO-3 / FSDP the full weights exist only while a layer
// runs (gathered per microbatch), so they are quantized every microbatch.
//
// Bytes per weight element of one quantization, by the model's scaling recipe (config/quantization.h): under
// delayed scaling read the 16-bit weight (2), write its fp8 copy (1) and the transposed copy (1); MXFP8 adds an
// E8M0 scale per 32 elements a copy; current scaling and NVFP4 first pass over the weight for its amax.
//
// In the trace each block's quantization is a compute node (`<layer>.fp8_weight_quant`, trace/stage_program.cpp)
// of Fp8GemmWeightParams elements and Fp8WeightCastBytesPerParam bytes each (parallel/job.h), timed like every
// other node; the estimate charges the same nodes.
#pragma once

#include "parallel/job.h"

namespace sc {

// How many times per step a rank quantizes its fp8 GEMM weights: once (cached across microbatches), or once per
// microbatch pass of the rank (`rounds`) when the weights are gathered per microbatch (ZeRO-3 / FSDP).
double Fp8WeightCastsPerStep(int zero_stage, double rounds);

}  // namespace sc
