// Whole-model numbers read off the symbolic graph (all parallel degrees 1): parameter count,
// training FLOPs per token, and the bytes of weights, gradients and optimizer state.
// These are what `stagecraft estimate --model` prints and the page's Model panel shows.
#pragma once
#include "config/model_config.h"

namespace sc {

struct ModelStats {
    double params = 0;            // every weight once (tied embeddings counted once)
    double active_params = 0;     // weights one token touches (MoE: top_k of the routed experts)
    double embedding_params = 0;  // lookup tables (no FLOPs in the forward pass)
    // Training FLOPs per token (forward + backward, no recomputation), from the graph's ops.
    double matmul_flops_per_token = 0;     // every GEMM: ~6 x active non-embedding params (+ LM head)
    double attention_flops_per_token = 0;  // causal QK^T and AV, forward and backward
    double vector_flops_per_token = 0;     // norms, activations, softmax, residuals (not model FLOPs)
    double model_flops_per_token() const { return matmul_flops_per_token + attention_flops_per_token; }
    double six_n_flops_per_token() const { return 6 * active_params; }  // the 6N rule, for reference
    double forward_flops_per_token = 0;                                 // matmul + attention, forward only
    // Training state, ZeRO convention (Rajbhandari et al. 2020): weights and gradients in their
    // precisions, the optimizer keeps an fp32 master copy (unless weights already are fp32) and Adam's m and v.
    double weight_bytes = 0;
    double gradient_bytes = 0;
    double optimizer_bytes = 0;
    double state_bytes() const { return weight_bytes + gradient_bytes + optimizer_bytes; }
    int seq = 0;
};

ModelStats ComputeModelStats(const ModelConfig& m);

}  // namespace sc
