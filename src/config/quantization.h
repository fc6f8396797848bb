// What quantizing a GEMM's operands costs in memory traffic under each scaling recipe (config/precision.h),
// in bytes per element beyond the 16-bit flow: a producer (norm, activation, another GEMM) writes its output in
// 16 bits either way, and that write is counted with the producer.
//
// Read from Transformer Engine (NVIDIA/TransformerEngine, transformer_engine/pytorch/csrc/quantizer.cpp,
// extensions/normalization.cpp, extensions/activation.cpp, at d0067d0 of Aug 2026):
// Only a LayerNormLinear's norm can quantize its own output: Megatron-Core's activations are its own kernels
// writing 16 bits, quantized by the next TE linear (transformer_ops.cpp, Mlp).
//   delayed  The norm writes fp8 itself (normalization.cpp: Float8Quantizer is FULLY_FUSED); the weight
//            gradient's transposed copy is read and written at a byte each: 1. Any other input and every output
//            gradient: one cast_transpose, read 2, write 1 + 1: 4.
//   current  The norm computes the amax while writing 16 bits (FUSED_NORM_AMAX_FP8), then a quantize reads 2
//            and writes 1 + 1: 4. Other inputs and gradients first pass over the tensor for its amax
//            (Float8CurrentScalingQuantizer::quantize_impl, nvte_compute_amax_with_config) before it: 6.
//   block    The norm does not quantize (Float8BlockQuantizer is neither FULLY_FUSED nor fused-amax): every
//            operand is quantized by one kernel reading 2 and writing rowwise and columnwise bytes, each with an
//            fp32 scale per 128 elements: 2 + 2/32 = 4.0625.
//   mx       The norm does not quantize (normalization.cpp: MXFP8 is fused only with NVTE_NORM_FWD_USE_CUDNN):
//            quantize reads 2 and writes rowwise and columnwise bytes with an E8M0 scale per 32 each: 4.0625.
//   nvfp4    Inputs and output gradients get a random Hadamard transform on their columnwise (weight-gradient)
//            copy, so the norm does not quantize (UNFUSED when with_rht and with_post_rht_amax):
//            nvte_hadamard_transform_amax reads the tensor (2), then nvte_quantize_with_hadamard_transform reads
//            it again (2) and writes rowwise and columnwise fp4 (0.5 + 0.5) with an E4M3 scale per 16 elements
//            each (2/16): 5.125.
// The input a GEMM keeps for its weight gradient is the columnwise copy (TE's linear modules discard the rowwise
// data): 1 byte under the fp8 recipes (+ scales: block 4/128, mx 1/32) and 0.5 + 1/16 under nvfp4.
// Weights (once per step, fp8_overheads.h): delayed and the block recipes read 2 and write two copies (block and
// mx add their scales; nvfp4 weights use 16x16 blocks, one scale per 256 elements a copy); current and nvfp4 pass
// over the weight for its amax first (nvte_compute_amax_with_config, without a Hadamard transform for weights).
#pragma once

#include "config/precision.h"

namespace sc {

struct QuantizationBytes {
    double input_after_norm = 0;  // a GEMM input written by a LayerNormLinear's norm (qkv, fc1, in_proj)
    double input_cast = 0;        // any other input (attention output, activation output, routed tokens)
    double output_grad = 0;       // the output gradient before the input- and weight-gradient GEMMs
    double saved_input = 0;       // bytes an element of the input kept for the weight gradient
    double weight = 0;            // bytes an element of a weight quantized once (both copies)
};

// Zero for 16-bit GEMMs (Scaling::automatic once resolved).
inline QuantizationBytes QuantizationBytesOf(Scaling resolved) {
    switch (resolved) {
        case Scaling::automatic: return {};
        case Scaling::delayed: return {1, 4, 4, 1, 4};
        case Scaling::current: return {4, 6, 6, 1, 6};
        case Scaling::block: return {4.0625, 4.0625, 4.0625, 1 + 4.0 / 128, 4 + 8.0 / (128 * 128)};
        case Scaling::mx: return {4.0625, 4.0625, 4.0625, 1 + 1.0 / 32, 4.0625};
        case Scaling::nvfp4: return {5.125, 5.125, 5.125, 0.5 + 1.0 / 16, 5 + 2.0 / 256};
    }
    return {};
}

inline QuantizationBytes QuantizationBytesOf(Precision compute, Scaling asked) {
    return QuantizationBytesOf(ResolvedScaling(compute, asked));
}

}  // namespace sc
