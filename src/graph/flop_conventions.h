// Training FLOPs as frameworks print them in their TFLOP/s, so a user can compare the estimate with a paper
// or a log in that paper's own convention. Both count attention as full, non-causal s x s: twice the causal
// work this project's "model FLOPs" count (graph/model_stats.h), which is why the same run reads higher in
// them (docs/validation.md, "FLOP conventions are part of the data").
#pragma once
#include "config/model_config.h"

namespace sc {

// Megatron-LM megatron/training/training.py num_floating_point_operations (the Megatron-LM README's
// "per-GPU teraFLOP/s"): 12 B s l h^2 [ (1 + g/a + s/h) q/h + f/h k m + F_shared/h + V/(2 l h) ], g query
// groups, a heads, q = heads x head_dim, f the expert (or dense) FFN, k experts per token, m 3/2 for gated MLPs,
// F_shared the shared experts' FFN, V the (padded) vocabulary. Every layer counts as MoE in a MoE model and
// attention as standard multi-head (the formula's own simplifications). `sequences`: B. MTP modules count as
// that many more layers and LM heads, l -> l + mtp and V -> (1 + mtp) V (Megatron-LM's and Megatron-Bridge's
// num_floating_point_operations: "logits computation ... * (1 + mtp_num_layers)"; their 2h -> h projection is
// not counted). A hybrid model (ModelConfig::hybrid) takes Megatron-Bridge's hybrid_flops instead: each layer
// symbol's own forward count, times 3, with causal attention (flop_conventions.cpp).
double MegatronFlops(const ModelConfig& m, double sequences, double vocab);

// Megatron-Bridge's num_floating_point_operations (src/megatron/bridge/training/utils/flop_utils.py at
// NVIDIA-NeMo/Megatron-Bridge v0.2.0, transformer_flops), what its performance tables print as "Model TFLOP / sec /
// GPU": Megatron-LM's 12 B s l h^2 count with causal attention (the s / 2h term), dense and MoE layers counted apart
// (DeepSeek's first dense layers), MLA's own projections, MTP modules as layers of the last layer's kind plus their
// norms and 2h -> h projection and one more LM head each, and the vocabulary padded to a multiple of 128 x tp
// (calculate_padded_vocab_size with make_vocab_size_divisible_by 128). A gated MLP counts 3/2 only with SiLU:
// Megatron-Bridge counts GPT-OSS's gated quick-GELU as ungated, which a ModelConfig (no activation field) cannot
// say. A hybrid model takes its hybrid_flops, as MegatronFlops does.
double MegatronBridgeFlops(const ModelConfig& m, double sequences, int tp);

// NeMo nemo/utils/flops_formulas.py llama2 / llama3 (NeMo 24.03-25.04): B s l h^2 (12 + 12 g/a + 18 f/h +
// 12 s/h + 6 V/(l h)). The 12 s/h term is non-causal attention; NeMo halved it in August 2025.
double NeMoLlamaFlops(const ModelConfig& m, double sequences, double vocab);

}  // namespace sc
