// A decoder-only transformer's shape: what presets/models/*.json describe.
// ParseModelConfig reads JSON text strictly (unknown or misspelled keys are errors) and validates;
// ValidateModelConfig re-checks a config edited in place (the page's fields).
#pragma once
#include <string>
#include <string_view>

#include "config/precision.h"

namespace sc {

enum class MlpKind { gelu, swiglu };
enum class NormKind { layernorm, rmsnorm };
enum class PositionKind { learned, rotary };

// Which experts a token's router picks, as far as the EP traffic depends on it (graph/moe_spread.h): uniform:
// k distinct experts, each set equally likely (a trained router with its load-balancing loss, in the
// aggregate); contiguous: token i of a rank takes experts ik .. ik+k-1 (mod experts), NeMo AutoModel's
// FakeBalancedGate (nemo_automodel/components/moe/layers.py), which its benchmark runs use.
enum class MoeRouting { uniform, contiguous };

// Mixture of experts (Mixtral, DeepSeek-V3). experts == 0 means a dense model.
struct MoeConfig {
    int experts = 0;             // routed experts per MoE layer
    int top_k = 0;               // routed experts per token
    int shared_experts = 0;      // always-active experts (DeepSeek-V3: 1)
    int expert_ffn = 0;          // intermediate size of one expert
    int dense_layers = 0;        // leading layers with a dense MLP (DeepSeek-V3: 3)
    double capacity_factor = 0;  // 0: no token dropping; otherwise tokens per expert are capped
    // Dropless routing (capacity_factor 0): tokens routed to the most loaded expert over the mean per expert, from
    // 1 (balanced, the default) to experts / top_k (every token picks it). The all-to-all and the expert GEMMs wait
    // for the expert-parallel rank holding that expert (MoeRankLoad).
    double load_imbalance = 1;
    MoeRouting routing = MoeRouting::uniform;
    // Group-limited routing (DeepSeek-V3: n_group 8, topk_group 4 in its config.json; Megatron-Core
    // moe_router_num_groups / moe_router_group_topk): the experts split into router_groups groups of consecutive
    // experts, and a token's top_k experts come from router_group_topk of them. 0: no limit. With uniform routing
    // it bounds how many ranks and nodes a token reaches (graph/moe_spread.h).
    int router_groups = 0;
    int router_group_topk = 0;
};

// Routed (token, expert) pairs on the most loaded of `ep` expert-parallel ranks over a balanced rank's: the rank
// holding the hottest expert, the others sharing the rest of the load evenly, (r + (n-1)(E-r)/(E-1)) / n with n =
// E/ep experts a rank. r at one expert a rank, 1 when one rank holds every expert (it gets all the pairs either way).
double MoeRankLoad(const MoeConfig& moe, int ep);

// Multi-head latent attention (DeepSeek-V2/V3). kv_lora_rank == 0 means ordinary (grouped-query) attention.
struct MlaConfig {
    int q_lora_rank = 0;
    int kv_lora_rank = 0;
    int qk_nope_head_dim = 0;
    int qk_rope_head_dim = 0;
    int v_head_dim = 0;
};

// Mixed-precision training state, ZeRO paper convention (Rajbhandari et al. 2020, sec. 3.1):
// weights and gradients in `compute`/`grad`, an fp32 master copy plus Adam's two moments.
struct PrecisionConfig {
    Precision compute = Precision::bf16;    // weights and activations used by the kernels
    Precision grad = Precision::bf16;       // gradients as reduced across data parallelism
    Precision master = Precision::fp32;     // master weights kept by the optimizer
    Precision optimizer = Precision::fp32;  // Adam first and second moments
    // Activations as stored for the backward and as communicated (TP/SP/CP/EP/PP). fp8 training keeps
    // them in bf16 outside the GEMMs (Transformer Engine); DeepSeek-V3 caches and dispatches some in fp8
    // (its report, sec. 3.3). Defaults to the compute precision, but not below bf16.
    Precision activation = Precision::bf16;
};

struct ModelConfig {
    std::string name;
    std::string source;  // where the shape was published
    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kv_heads = 0;  // defaults to heads (multi-head attention)
    int head_dim = 0;  // defaults to hidden / heads
    int ffn = 0;       // dense MLP intermediate size
    int vocab = 0;
    int seq = 0;  // training sequence length
    MlpKind mlp = MlpKind::gelu;
    NormKind norm = NormKind::layernorm;
    PositionKind position = PositionKind::learned;
    bool tied_embeddings = true;
    bool bias = false;  // biases on linear layers and norms (GPT-3 yes, Llama no)
    MoeConfig moe;
    MlaConfig mla;
    PrecisionConfig precision;

    bool is_moe() const { return moe.experts > 0; }
    bool is_mla() const { return mla.kv_lora_rank > 0; }
    int moe_layers() const { return is_moe() ? layers - moe.dense_layers : 0; }
    int dense_layers() const { return layers - moe_layers(); }
};

// Throws sc::Error naming the field: not JSON, unknown/misspelled key, missing field, wrong type,
// zero or negative size, heads not dividing hidden, kv_heads not dividing heads, ...
ModelConfig ParseModelConfig(std::string_view json_text);
void ValidateModelConfig(const ModelConfig& m);
// head_dim = hidden / heads; throws naming `heads` when they do not divide.
void DeriveHeadDim(ModelConfig& m);
std::string ModelConfigToJson(const ModelConfig& m);  // round-trips through ParseModelConfig

}  // namespace sc
