// Megatron-Core's selective recomputation by module (TransformerConfig.recompute_modules, with
// recompute_granularity "selective"; megatron/core/transformer/transformer_config.py). Each module names ops the
// backward re-runs and activations the forward then does not keep. "core_attn" alone is what recompute=selective
// has always meant here (Korthikanti et al. 2022's attention core), and Megatron's default list.
#pragma once
#include <cstdint>

namespace sc {

// Bits of a module mask.
inline constexpr uint8_t kRecomputeCoreAttn = 1;        // the attention core
inline constexpr uint8_t kRecomputeLayernorm = 2;       // input_layernorm and pre_mlp_layernorm: outputs not kept
inline constexpr uint8_t kRecomputeMlaUpProj = 4;       // MLA's q/kv up-projections and rotary: Q, K, V not kept
inline constexpr uint8_t kRecomputeMoeAct = 8;          // the experts' activation: its output not kept
inline constexpr uint8_t kRecomputeMlp = 16;            // the dense MLP: only its input kept
inline constexpr uint8_t kRecomputeMoe = 32;            // the MoE layer after its norm: only its input kept
inline constexpr uint8_t kRecomputeSharedExperts = 64;  // the shared experts: only their input kept
inline constexpr int kRecomputeModuleCount = 7;
// Megatron's names, in bit order.
inline constexpr const char* kRecomputeModuleNames[kRecomputeModuleCount] = {
    "core_attn", "layernorm", "mla_up_proj", "moe_act", "mlp", "moe", "shared_experts"};

}  // namespace sc
