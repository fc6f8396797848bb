// A decoder-only transformer's shape: what presets/models/*.json describe.
// ParseModelConfig reads JSON text strictly (unknown or misspelled keys are errors) and validates;
// ValidateModelConfig re-checks a config edited in place (the page's fields).
#pragma once
#include <string>
#include <string_view>

#include "config/precision.h"

namespace sc {

// relu2: squared ReLU, ungated (Nemotron-H; Megatron-Core's squared_relu), two matrices as gelu's.
enum class MlpKind { gelu, swiglu, relu2 };
enum class NormKind { layernorm, rmsnorm };
// none: no position embedding at all (Megatron-Core's position_embedding_type "none", Nemotron-H: its Mamba
// layers carry position).
enum class PositionKind { learned, rotary, none };

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
    // Interleaving: past the leading dense layers, layer i (from 0) has the MoE MLP when (i + 1) % every == 0 and a
    // dense one (of `ffn`) otherwise. 1: every layer. Llama 4 Maverick's config.json interleave_moe_layer_step 2
    // (layers 1, 3, 5, ... MoE: transformers' Llama4TextConfig moe_layers); Megatron-Core's --moe-layer-freq
    // ([0,1]*24) writes the same pattern.
    int every = 1;
    // Latent MoE (NVIDIA Nemotron 3 Super's config.json moe_latent_size; Megatron-Core moe_latent_size, in
    // megatron/core/transformer/moe/moe_layer.py): a duplicated h -> latent linear before the dispatch, the routed
    // experts and the all-to-alls on latent-wide tokens, a latent -> h linear after the combine. The router and the
    // shared experts stay on h. 0: no latent projection, the experts run on h.
    int latent = 0;
    // The width of a routed token: latent, or the hidden size without one.
    int routed_width(int hidden) const { return latent > 0 ? latent : hidden; }
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

// Sliding-window attention (Mistral 7B v0.1, Gemma 2/3, GPT-OSS). A windowed layer's query attends to the last
// `size` keys, itself included (Hugging Face transformers' sliding-window causal mask: key j is seen by query i when
// i - size < j <= i). Which layers: layer i (from 0) keeps full causal attention when (i + 1) % full_every == 0 and
// is windowed otherwise; full_every 0: every layer is windowed. GPT-OSS's config.json `layer_types` alternate
// "sliding_attention", "full_attention" (full_every 2); Gemma 3's sliding_window_pattern 6 (full_every 6);
// Mistral 7B v0.1 windows every layer (0). size 0: no window (full_every then means nothing).
// chunked: Llama 4's chunked local attention (attention_chunk_size 8192 on three of four layers, full_every 4): the
// sequence is cut into chunks of `size` tokens and a query sees the keys from its chunk's start to itself
// (transformers' chunked causal mask: key j is seen by query i when j <= i and j / size == i / size).
struct SlidingWindow {
    int size = 0;
    int full_every = 0;
    bool chunked = false;
};

// Mamba-2 mixer of a hybrid model's "M" layers (Dao & Gu 2024, arXiv 2405.21060; Megatron-Core's MambaMixer):
// d_inner = heads x head_dim channels, heads scalar decays, groups of B and C of `state` each, a depthwise causal
// convolution of conv_kernel taps over x, B and C. Nemotron-H 8B: 128 heads of 64, state 128, 8 groups, kernel 4.
struct MambaConfig {
    int heads = 0;
    int head_dim = 64;
    int state = 128;
    int groups = 8;
    int conv_kernel = 4;
    long long inner() const { return 1LL * heads * head_dim; }
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
    // How narrow GEMM operands are scaled (config/precision.h); `automatic`: the compute precision's usual
    // recipe. ResolvedScaling(compute, scaling) is what runs.
    Scaling scaling = Scaling::automatic;
    // Layers kept in BF16 in an fp8 or fp4 model: the first and the last ones by global layer index (Megatron-Core's
    // first_last_layers_bf16 with num_layers_at_start_in_bf16 / num_layers_at_end_in_bf16, fp8_utils.py
    // is_first_last_bf16_layer: their GEMMs run outside fp8_autocast). Megatron-Bridge's fp8 current-scaling recipe
    // keeps one of each, its Nemotron-H recipes two, Nemotron 3 Super's NVFP4 recipe its last 14 (training/
    // mixed_precision.py). Megatron asserts delayed scaling does not allow them; they need a narrow compute precision.
    int bf16_first_layers = 0, bf16_last_layers = 0;
    // Modules whose GEMMs run in BF16 in every layer (kBf16Attention | ...; config/precision.h): Megatron-Core's
    // quant_recipe matchers by module name. Needs a narrow compute precision and modules the model has.
    uint8_t bf16_modules = 0;
};

// Bytes of one held weight: the compute precision's, or 16 bits in a layer kept in BF16.
inline double WeightBytesOf(const PrecisionConfig& p, bool bf16_layer) {
    return bf16_layer && BytesOf(p.compute) < 2 ? 2.0 : BytesOf(p.compute);
}

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
    // Multi-token prediction modules (DeepSeek-V3 report, arXiv 2412.19437 Sec. 2.2; Megatron-Core mtp_num_layers):
    // each predicts one more future token from the previous depth's hidden state and the next token's embedding
    // through its own norms, a 2h -> h projection and one transformer layer of the main model's last layer kind,
    // sharing the embedding and the output head. They run after the main model, on its last pipeline stage.
    int mtp_layers = 0;
    // A hybrid model's MTP module is its own pattern of hybrid layers (Nemotron 3 Super's config.json
    // mtp_hybrid_override_pattern "*E": an attention layer, then an MoE layer). Empty for a transformer.
    std::string mtp_pattern;
    // The MTP depths share one module's weights, run mtp_layers times (Megatron-Core mtp_use_repeated_layer;
    // Nemotron 3 Super: one module in its checkpoint, num_nextn_predict_layers 1, trained at mtp_num_layers 2).
    // With mtp_layers 0 it has nothing to share (the page's mtp_layers set to 0 on such a preset).
    bool mtp_repeated = false;
    // A hybrid model's layers, one symbol each (Megatron-Core's hybrid_layer_pattern, Nemotron-H's
    // hybrid_override_pattern): M a Mamba-2 mixer, * attention alone, - a dense MLP alone, E an MoE alone; each its
    // own norm and residual. Empty: every layer is attention and an MLP (dense or MoE), the transformer.
    std::string hybrid;
    MambaConfig mamba;
    MoeConfig moe;
    MlaConfig mla;
    SlidingWindow window;
    PrecisionConfig precision;

    bool is_moe() const { return moe.experts > 0; }
    bool is_hybrid() const { return !hybrid.empty(); }
    // Layer i (0-based, global) runs its GEMMs in BF16 in a model whose GEMMs are narrower
    // (PrecisionConfig::bf16_first_layers / bf16_last_layers).
    bool bf16_layer(int i) const {
        if (BytesOf(precision.compute) >= 2) return false;
        return i < precision.bf16_first_layers || i >= layers - precision.bf16_last_layers;
    }
    // The modules its layers have (PrecisionConfig::bf16_modules checks against them).
    bool has_attention() const { return !is_hybrid() || hybrid.find('*') != std::string::npos; }
    bool has_dense_mlp() const { return is_hybrid() ? hybrid.find('-') != std::string::npos : dense_layers() > 0; }
    bool has_mamba() const { return is_hybrid() && hybrid.find('M') != std::string::npos; }
    // Those modules as a mask of config/precision.h's kBf16 bits (attention, mlp, experts, ... mtp).
    uint8_t modules() const {
        uint8_t mask = 0;
        if (has_attention()) mask |= kBf16Attention;
        if (has_dense_mlp()) mask |= kBf16Mlp;
        if (is_moe()) mask |= kBf16Experts;
        if (is_moe() && moe.shared_experts > 0) mask |= kBf16SharedExperts;
        if (is_moe() && moe.latent > 0) mask |= kBf16Latent;
        if (has_mamba()) mask |= kBf16Mamba;
        if (mtp_layers > 0) mask |= kBf16Mtp;
        return mask;
    }
    bool has_bf16_layers() const {
        return BytesOf(precision.compute) < 2 && precision.bf16_first_layers + precision.bf16_last_layers > 0;
    }
    // The last pipeline stage needs the embedding table too: as a tied LM head, or for the MTP modules' lookups.
    bool embedding_on_last_stage() const { return tied_embeddings || mtp_layers > 0; }
    bool is_mla() const { return mla.kv_lora_rank > 0; }
    // Whether layer i (from 0) has the MoE MLP (MoeConfig::dense_layers and every).
    bool moe_layer(int i) const {
        if (is_hybrid()) return static_cast<size_t>(i) < hybrid.size() && hybrid[static_cast<size_t>(i)] == 'E';
        return is_moe() && i >= moe.dense_layers && (i + 1) % moe.every == 0;
    }
    // MoE layers among layers first .. first + count - 1 (closed form).
    int moe_layers_in(int first, int count) const;
    int moe_layers() const { return moe_layers_in(0, layers); }
    int dense_layers() const { return layers - moe_layers(); }
    bool has_window() const { return window.size > 0; }
    // Whether layer i is windowed (whatever the sequence length; serving's contexts vary).
    bool windowed_layer(int i) const {
        return has_window() && !is_hybrid() && (window.full_every == 0 || (i + 1) % window.full_every != 0);
    }
    // Windowed layers among layers first .. first + count - 1 (closed form).
    int windowed_layers(int first, int count) const;
    // Windowed layers of the training graph: only a window shorter than the sequence changes a layer's work.
    int graph_windowed_layers(int first, int count) const {
        return window.size < seq ? windowed_layers(first, count) : 0;
    }
    // Layers first .. first + count - 1 by MLP (dense or MoE) and attention (full or windowed); `windows` false
    // counts every layer as full (the training graph's: a window as long as the sequence changes nothing). A hybrid
    // model's layers count by their symbol instead (mamba, attention, mlp, moe_mlp).
    struct LayerKinds {
        int dense = 0, dense_window = 0, moe = 0, moe_window = 0;
        int mamba = 0, attention = 0, mlp = 0, moe_mlp = 0;
    };
    LayerKinds layer_kinds(int first, int count, bool windows) const;
    LayerKinds graph_layer_kinds(int first, int count) const { return layer_kinds(first, count, window.size < seq); }
};

// Query-key pairs of one sequence's queries at positions 0 .. n-1 (causal, each sees itself) under a window of
// `window` keys (0: none): sum over positions j of min(j + 1, window). n(n+1)/2 without a window or when n <= window,
// else window(window+1)/2 + (n - window) window.
double WindowedCausalPairs(double n, double window);
// The same under a local window `w` of either kind: WindowedCausalPairs for a sliding window; for a chunked one,
// q C(C+1)/2 + r(r+1)/2 with n = q C + r.
double LocalCausalPairs(double n, const SlidingWindow& w);
// Keys the query at position p (from 0) sees under `w`: min(p + 1, size) sliding, p - C floor(p / C) + 1 chunked; p + 1
// without a window.
double LocalKeys(double p, const SlidingWindow& w);

// Throws sc::Error naming the field: not JSON, unknown/misspelled key, missing field, wrong type,
// zero or negative size, heads not dividing hidden, kv_heads not dividing heads, ...
ModelConfig ParseModelConfig(std::string_view json_text);
void ValidateModelConfig(const ModelConfig& m);
// The layers and modules an fp8/fp4 model keeps in BF16 (PrecisionConfig::bf16_*), as ValidateModelConfig checks
// them: at most its layers, modules it has, a narrow compute precision, no BF16 layers under delayed scaling.
void ValidateBf16Precision(const ModelConfig& m);
// head_dim = hidden / heads; throws naming `heads` when they do not divide.
void DeriveHeadDim(ModelConfig& m);
std::string ModelConfigToJson(const ModelConfig& m);  // round-trips through ParseModelConfig

}  // namespace sc
