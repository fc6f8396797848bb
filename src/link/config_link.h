// The page's whole configuration as one versioned line of text, so a URL can carry it ("the configuration
// as a link"): a model preset and the fields edited in it, the compute precision, a system preset and the
// edits of its network levels, the parallel split in the CLI's --parallel form, the training options the
// page lets the user change, and the GPU count of the "Best layout" search.
//
// Format, version 1 (README "Links"): "v1;" then key=value entries separated by ';', each key at most once,
// then ";end" (so a link cut short, even inside a number, is refused rather than read as another link):
//   v1;model=llama3-8b;layers=48;precision=fp8;system=dgx-h100-superpod;net.1.bandwidth=100;
//   parallel=tp=8,sp=1,dp=32,batch=256;overlap_dp=1;overlap_pp=1;overlap_tp=0;inr=1;tokens=0;search_gpus=0;end
//   (+ power_limit=500 for a GPU power limit in W (after the level edits); load_imbalance=1.3 and
//    routing=contiguous for an MoE model's routing; flash=0, dropout=1, gaf=0, attn_kernel=flash2,
//    scatter_gather=0, fused_ew=0, deepep=1, fp8_dispatch=1 when the framework's kernels are not the defaults;
//    host_gbps= for a stated host-link rate (CPU activation offloading); moe_every= for MoE layers every n-th layer; moe_latent= for a latent MoE's routed width (0: none);
//    mtp_layers= for multi-token prediction; hybrid= for a hybrid model's layer pattern (M * - E); window= and
//    full_every= for a sliding window, window_kind=chunked for a chunked one (Llama 4's local attention);
//    serve=<serving preset>;serve.<field>=...
//    for the Serving tab, link/serve_keys.h, and view=search|serving and sweeps=1 when those views are open;
//    sweep.axis1=, sweep.axis2=, sweep.fixed=1 for the Sweeps view)
// model and parallel are required; every other key is optional. Model fields and level fields appear only
// when they differ from the preset, so a link names what the user changed; the options always appear, so a
// later change of their defaults does not change what an old link means. Values never contain ';'.
//
// Pure: no I/O, no globals. Which presets and how many network levels exist is the page's business
// (src/app/app_link.cpp checks those when it applies a link).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/hardware_config.h"
#include "config/precision.h"
#include "training/training_options.h"

namespace sc {

inline constexpr size_t kMaxLinkBytes = 64 * 1024;              // decoded text; a real link is a few hundred bytes
inline constexpr int kMaxLinkLevels = 16;                       // network levels a link may edit (net.0 to net.15)
inline constexpr double kMinLinkBandwidthGBps = kMinLevelGbps;  // every level's floor (hardware_config.h)
inline constexpr double kMaxLinkBandwidthGBps = 1e6;            // 1 PB/s per GPU and direction
inline constexpr double kMaxLinkLatencyUs = 1e6;                // one second per hop
inline constexpr double kMinLinkEfficiency = 0.05;              // the page's efficiency slider spans 0.05 to 1
inline constexpr double kMaxLinkEfficiency = 1;

// Edits of one network level of the system preset (innermost is 0); unset fields keep the preset's value.
struct LinkLevelEdit {
    int level = 0;
    std::optional<double> bandwidth_gbps;  // GB/s per GPU and direction
    std::optional<double> latency_us;
    std::optional<double> efficiency;
    std::optional<bool> in_network_reduction;
    std::optional<bool> wraparound;  // torus levels only: ring (1) or line (0)
    bool operator==(const LinkLevelEdit&) const = default;
};

// The Serving tab's description: the serving preset it started from and the fields edited since, as the tab
// edits them (unset: the preset's value). Names are checked here; what they mean together is checked when the tab
// simulates (inference/serving_config.h ValidateServingConfig), as for a preset file.
struct LinkServeEdits {
    std::optional<int> tp, replicas;                        // the (prefill) pool
    std::optional<bool> decode;                             // a separate decode pool (1) or none (0)
    std::optional<int> decode_tp, decode_replicas;          // with decode=1 or a preset that has one
    std::optional<int> max_seqs, max_tokens;                // the engine's budgets
    std::optional<bool> chunked;                            // chunked prefill
    std::optional<bool> window_eviction;                    // windowed layers free what left the window
    std::optional<std::vector<int>> cuda_graphs;            // padded decode CUDA graph sizes ("1,2,4"; none: [])
    std::optional<std::string> preemption;                  // recompute, swap
    std::optional<Precision> weights, kv;                   // bf16, fp8, fp4
    std::optional<int> int4_group;                          // int4 weights in groups of this many (0: not int4)
    std::optional<bool> mxfp4;                              // MXFP4 weights (1), or not (0: a preset's MXFP4 off)
    std::optional<bool> fp8_block;                          // fp8 in 128x128 blocks (1), or one scale a tensor (0)
    std::optional<std::string> arrivals;                    // poisson, gamma, fixed_rate, closed_loop, offline
    std::optional<double> rate, cv;                         // requests/s; gaps' coefficient of variation
    std::optional<int> clients, requests;                   // closed-loop concurrency; requests in the run
    std::optional<double> ttft_s, tpot_s;                   // SLO targets in seconds (0: none)
    std::optional<int> pp, ep, decode_pp, decode_ep;        // pipeline stages and expert groups per replica
    std::optional<bool> attention_dp, decode_attention_dp;  // data-parallel attention (PoolConfig::attention_dp)
    std::optional<int> redundant_experts, decode_redundant_experts;   // copies of routed experts in the ep groups
    std::optional<bool> deepep, decode_deepep;                        // DeepEP dispatch (PoolConfig::deepep_dispatch)
    std::optional<bool> allgather, decode_allgather;                  // PoolConfig::allgather_dispatch
    std::optional<bool> two_batch_overlap, decode_two_batch_overlap;  // PoolConfig::two_batch_overlap
    std::optional<std::string> all_reduce,
        decode_all_reduce;                                   // PoolConfig::all_reduce: nccl, tensorrt-llm, vllm, sglang
    std::optional<int> timelines;                            // requests whose timelines the result keeps
    std::optional<int> prefixes, prefix_tokens;              // shared prompt prefixes: how many (0: none), tokens each
    std::optional<int> turns;                                // requests a conversation (1: single requests)
    std::optional<int> samples;                              // completions of each prompt (vLLM's n)
    std::optional<int> draft_tokens;                         // speculative decoding: draft tokens a step (0: off)
    std::optional<double> acceptance;                        // and the probability a draft is accepted
    std::optional<int> passages, passage_tokens;             // retrieval: passages a query (0: none), tokens each
    std::optional<double> retrieval_s;                       // one query's time on a server
    std::optional<int> retrieval_servers;                    // queries served at once
    std::optional<bool> prefix_caching;                      // off also drops the preset's host tier and remote store
    std::optional<double> host_cache_gib, remote_cache_gib;  // the prefix tiers below the GPU, GiB per GPU (0: none)
    std::optional<double> swap_gbps;                         // the host link, GB/s per direction per GPU
    std::optional<double> frontend_ms;                       // each request's time outside the engine
    // The decode pool's own cluster (decode_pool.system): a system preset id, or "shared" for the page's cluster.
    std::optional<std::string> decode_system;
    bool operator==(const LinkServeEdits&) const = default;
};

// A preset id a link names (`field`): letters, digits, '.', '_', '-', at most 128; throws sc::Error naming the field.
std::string CheckLinkId(const std::string& field, std::string_view value);

struct ConfigLink {
    std::string model;  // model preset id: the file name without ".json" ("llama3-8b")
    // The model fields the page edits, set when they differ from the preset.
    std::optional<int> layers, hidden, heads, kv_heads, ffn, vocab, seq;
    std::optional<int> experts, top_k, expert_ffn;  // MoE presets only
    std::optional<int> moe_every;                   // MoeConfig::every (MoE presets only)
    std::optional<int> moe_latent;                  // MoeConfig::latent (MoE presets only; 0: none)
    std::optional<int> window, full_every;          // sliding_window.size and .full_every (0: none)
    std::optional<int> mtp_layers;                  // ModelConfig::mtp_layers (0: none)
    std::optional<std::string> hybrid;              // ModelConfig::hybrid: M * - E, one a layer
    std::optional<double> load_imbalance;           // MoE presets only: moe.load_imbalance
    std::optional<bool> contiguous_routing;         // MoE presets only: moe.routing (routing=contiguous|uniform)
    std::optional<bool> chunked_window;             // sliding_window.chunked (window_kind=chunked|sliding)
    std::optional<Precision> precision;             // compute precision (gradients and activations follow it)
    std::optional<Scaling> scaling;                 // precision.scaling, the fp8/fp4 recipe (after precision)
    std::optional<int> bf16_first, bf16_last;       // precision.bf16_first_layers / bf16_last_layers (after scaling)
    std::optional<uint8_t> bf16_modules;            // precision.bf16_modules, "attention+latent+mtp" (after those)

    std::string system;                 // system preset id; "" when the page has none chosen
    std::vector<LinkLevelEdit> levels;  // ascending level, each level at most once, each with a field set
    // The accelerator's power limit in W (Accelerator::power_limit_w, training/power_cap.h); unset: none. Its range
    // (by the preset's board power) is the page's check when it applies the link.
    std::optional<double> power_limit_w;
    std::string parallel;  // CLI --parallel form, "tp=8,pp=2,dp=4,batch=64"

    // TrainingOptions the page edits (their defaults are TrainingOptions').
    bool overlap_dp = TrainingOptions{}.overlap_dp;
    bool overlap_pp = TrainingOptions{}.overlap_pp;
    bool overlap_tp = TrainingOptions{}.overlap_tp;
    bool in_network_reduction = TrainingOptions{}.in_network_reduction;
    double tokens = TrainingOptions{}.tokens_to_train;  // 0: no time-to-train
    double host_link_gbps = 0;  // TrainingOptions::host_link_gbps; written only when stated (> 0)
    // The framework's kernels (TrainingOptions::kernels, attention_kernel, pp_scatter_gather), written only when
    // they differ from the defaults: links made before these keys existed meant the defaults.
    bool flash_attention = KernelChoices{}.flash_attention;
    bool dropout = KernelChoices{}.dropout;
    bool grad_accumulation_fusion = KernelChoices{}.grad_accumulation_fusion;
    AttentionKernel attention_kernel = TrainingOptions{}.attention_kernel;
    bool pp_scatter_gather = KernelChoices{}.pp_scatter_gather;
    bool fused_elementwise = KernelChoices{}.fused_elementwise;
    bool deepep_dispatch = KernelChoices{}.deepep_dispatch;
    bool fp8_dispatch = KernelChoices{}.fp8_dispatch;
    bool framework_gemm = TrainingOptions{}.framework_gemm;

    int search_gpus = 0;         // GPU count of the "Best layout" search; 0: the split's
    bool search_uneven = false;  // the search also takes pipelines the layers do not divide (search_uneven=1)

    // The Serving tab (written only when it is not the page's first serving preset, unedited).
    std::string serve;  // serving preset id ("llama3-8b-h100-poisson"); "" for that default
    LinkServeEdits serve_edits;

    // The open views (written only when not the defaults): the Training panel's tab and the Sweeps window.
    std::string view = "estimate";  // "estimate", "search" (Best layout) or "serving"
    bool sweeps = false;            // the Sweeps window expanded
    // The Sweeps view's axes as `stagecraft sweep --axis` writes them ("flops=0.5,1,2"); "" for the view's
    // default (axis 1 flops=0.5,1,2,4; no axis 2), and its "only the current layout" switch.
    std::string sweep_axis1, sweep_axis2;
    bool sweep_fixed = false;

    bool operator==(const ConfigLink&) const = default;
};

// The link as text. Throws sc::Error naming the field when a value is outside what DecodeConfigLink accepts,
// so whatever it returns decodes to an equal ConfigLink.
std::string EncodeConfigLink(const ConfigLink& link);

// Strict: a missing or unknown version, an unknown or repeated key, a malformed entry, a bad number (the rule of
// config/numbers.h), a bad parallel spec or more than kMaxLinkBytes throw sc::Error naming the field, the value
// and what is valid. Never clamps.
ConfigLink DecodeConfigLink(std::string_view text);

}  // namespace sc
