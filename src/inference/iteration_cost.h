// Time of one serving iteration (one forward pass over a continuous batch) on one TP replica.
//
// The training graph (graph/transformer_graph.h) cannot express a decode step: its attention op is causal
// self-attention of s queries over the same s keys, and its per-op bytes carry training choices (weights at
// the activation precision, fp8 cast/transpose passes for the backward, a cross-entropy over every token).
// So this file derives the forward ops of one layer from the ModelConfig with the SAME conventions (a GEMM
// m x k . k x n is 2mnk FLOPs and reads its inputs and writes its output once; causal attention counts the
// query-key pairs it computes, 2 d FLOPs each for QK^T and for AV; elementwise ops with the graph's FLOPs per
// element and passes) and times every op with the training model's ComputeModel (measured GEMM curve,
// measured fused-attention efficiency, achieved HBM bandwidth) and the TP all-reduces with its CommModel.
//
// What one iteration is: prefill chunks (a chunk of c prompt tokens of a sequence that already holds p tokens
// in its KV cache attends to p + its own causal c(c+1)/2 pairs per head) and decodes (one new token of a
// sequence whose cache holds L tokens, L + 1 with its own), all in one batch: the linear layers see the
// T = prefill + decode tokens as one GEMM (weights read once per iteration); attention runs as two kernels,
// context (prefill) and generation (decode), as TensorRT-LLM and vLLM run them.
//
// Under data-parallel attention (PoolConfig::attention_dp) a batch is the replica's: the time is its busiest GPU's
// (RankShare), every op at tp 1 on that GPU's sequences but the routed experts, which see the whole batch
// (RoutedExperts), and the experts' all-to-all (IterationBreakdown::ep_comm).
#pragma once
#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "graph/graph.h"
#include "inference/kernel_floor.h"
#include "inference/serving_config.h"

namespace sc {

class ComputeModel;
class CommModel;
class Layout;

// What one iteration computes, aggregated over its sequences (the cost depends on nothing else).
struct BatchShape {
    double prefill_tokens = 0;  // prompt tokens computed (all chunks)
    double prefill_pairs = 0;   // sum over chunks of c*p + c(c+1)/2: query-key pairs per head
    double prefill_keys = 0;    // sum over chunks of p + c: cached and new keys each chunk reads
    double decodes = 0;         // sequences generating one token
    double decode_keys = 0;     // sum over decodes of their context including the new token
    double logits = 0;          // tokens whose next-token logits are computed (decodes + finished prompts)
    // The same three sums in a windowed layer (ModelConfig::window; filled only for a model with a window): a
    // query sees at most the last `window` keys, itself included.
    double window_prefill_pairs = 0;  // sum over chunks of LocalCausalPairs(p + c) - LocalCausalPairs(p)
    double window_prefill_keys = 0;   // sum over chunks of the keys their queries see (sliding: min(p + c, W - 1 + c))
    double window_decode_keys = 0;    // sum over decodes of LocalKeys(p) (sliding: min(p + 1, W))
    double sequences = 0;             // decodes and prefill chunks: the sequences in the batch
    double tokens() const { return prefill_tokens + decodes; }
    // One scheduled request's share: a decode (`decode`) reads its cache of p tokens and adds one key; a prefill
    // chunk of c tokens after p attends to p + 1 .. p + c keys. `window`: the model's (0: none).
    void AddDecode(double p, const SlidingWindow& w) {  // inline: once per running sequence per iteration
        decodes += 1;
        sequences += 1;
        decode_keys += p + 1;
        if (w.size > 0) window_decode_keys += LocalKeys(p, w);
    }
    void AddPrefillChunk(double p, double c, const SlidingWindow& w);
    // The same under a sliding window of `window` keys (0: none).
    void AddDecode(double p, double window) { AddDecode(p, Sliding(window)); }
    void AddPrefillChunk(double p, double c, double window) { AddPrefillChunk(p, c, Sliding(window)); }
    // The same batch with every sum times f (a share of its sequences: one GPU's, one micro-batch's).
    BatchShape Scaled(double f) const;
    // Adds `times` copies of `o`'s sequences to this batch (CUDA-graph padding's dummy requests).
    void Add(const BatchShape& o, double times);

private:
    static SlidingWindow Sliding(double window) {
        SlidingWindow w;
        w.size = static_cast<int>(window);
        return w;
    }
};

// Seconds by part, for reports and tests.
struct IterationBreakdown {
    double linear = 0;       // every layer's GEMMs (QKV, output projection, MLP or experts, router)
    double attention = 0;    // context and generation attention kernels, every layer (and a hybrid's Mamba scans)
    double elementwise = 0;  // norms, rotary, activation, residual adds, embedding lookup
    double tp_comm = 0;      // TP all-reduces (2 per layer) and the logits all-gather
    double ep_comm = 0;      // data-parallel attention's expert all-to-all, dispatch and combine per MoE layer
    double head = 0;         // final norm and LM head GEMM
    double pp_comm = 0;      // activations sent between pipeline stages (pp - 1 sends)
    double draft = 0;        // a draft head's steps (speculative decoding; EngineConfig::speculation)
    double total() const { return linear + attention + elementwise + tp_comm + ep_comm + head + pp_comm + draft; }
};

// The FLOPs one rank computes in an iteration, every layer (the LM head apart), for checks against the training
// graph's per-op counts.
struct IterationWork {
    double linear_flops = 0, attention_flops = 0;  // attention_flops: a hybrid model's Mamba scans too
};

// One layer's linear-layer time split as Vidur profiles it (per op, one TP rank), for validation.
struct LayerLinearTimes {
    double qkv = 0, out = 0, mlp_up = 0, mlp_down = 0, all_reduce = 0;  // all_reduce: one call
};

// One iteration of a pipelined replica: every stage's compute time (its layers, the embedding on the first,
// the final norm, LM head and logits gather on the last) and every send of the activations to the next stage.
struct PipelineTimes {
    std::vector<double> stage;  // s, pp entries
    std::vector<double> send;   // s, pp - 1 entries: stage i to stage i + 1
};

class IterationCost {
public:
    // `typical_prefill`: the prompt length the context-attention kernel's measured efficiency is looked up at
    // (its curves are by sequence length). `max_tokens`: largest T the per-T cache covers. `split`: the
    // replica's tp, pp and ep (its replicas are not read).
    IterationCost(const ModelConfig& m, const ServingPrecision& prec, const PoolConfig& split, const System& sys,
                  const CalibrationTable* cal, double typical_prefill, int max_tokens);
    IterationCost(const ModelConfig& m, const ServingPrecision& prec, int tp, const System& sys,
                  const CalibrationTable* cal, double typical_prefill, int max_tokens)
        : IterationCost(m, prec, PoolConfig{tp, 1}, sys, cal, typical_prefill, max_tokens) {}
    ~IterationCost();
    IterationCost(const IterationCost&) = delete;
    IterationCost& operator=(const IterationCost&) = delete;

    // One batch alone through the replica: every stage and every send in turn (pp = 1: the one stage).
    double Seconds(const BatchShape& b) const;
    // Summed over the stages (a pipelined replica's GPUs each do 1/pp of it on average).
    IterationBreakdown Breakdown(const BatchShape& b) const;
    // Under data-parallel attention, the batch `group` with `rank` as the GPU that sets the time (the engine's
    // busiest, from the sequences each GPU holds; RankShare spreads them evenly when it is null).
    IterationBreakdown Breakdown(const BatchShape& group, const BatchShape* rank) const;
    // One micro-batch's compute in one MoE layer (its attention, GEMMs with the routed experts, vector work; not its
    // all-to-all): what hides the other micro-batch's all-to-all under two-batch overlap. For tests and reports.
    double MoeLayerComputeSeconds(const BatchShape& group, const BatchShape* rank = nullptr) const;
    PipelineTimes Pipeline(const BatchShape& b) const;
    // Under data-parallel attention with pp stages: the busiest GPU's iteration `parts` (Breakdown(group, rank)) as
    // stages, every layer's work on the stage holding the layer, the embedding on the first, the LM head on the
    // last, and its pp - 1 sends (parts.pp_comm) in turn.
    PipelineTimes DpPipeline(const IterationBreakdown& parts) const;
    IterationWork Work(const BatchShape& b) const;

    // One request alone: the prefill of `prompt` tokens (TTFT without queueing), and one decode step of a
    // sequence whose cache holds `context` tokens before the new one.
    double PrefillSeconds(int prompt) const;
    // One step of a draft head over the sequences of `b` (speculative decoding, EngineConfig::speculation): one
    // decoder layer of this model's shape (an MoE layer when the model has experts, as DeepSeek-V3's MTP module's
    // is), its input projection of the token's embedding and hidden state (2h -> h, whole on every rank, at the
    // layers' weight format), and the LM head with its logits gathered; on the last pipeline stage.
    double DraftSeconds(const BatchShape& b) const;
    double DecodeSeconds(int context) const;
    LayerLinearTimes LayerLinear(double tokens) const;
    // One MLA layer's absorbed-decode batched GEMMs for `decodes` tokens on one rank, {query absorb, output up}: each
    // head's q_nope x W_UK, then its latent output x W_UV. 0 without MLA. For validation against measured bmm.
    std::pair<double, double> MlaDecodeBmmSeconds(double decodes) const;

    // KV cache bytes of one token on one rank: layers x KvElementsPerTokenLayer x bytes, the layers of the
    // stage with the most of them.
    double KvBytesPerToken() const { return kv_bytes_per_token_; }
    // The per-op model every iteration is timed with (for the report's "rates from").
    const ComputeModel& compute_model() const { return *cm_; }
    int tp() const { return tp_; }
    // GPUs sharing one batch under data-parallel attention (PoolConfig::attention_dp), else 1.
    int attention_dp() const { return dp_; }
    double window() const { return m_.window.size; }                 // keys a windowed layer's query sees; 0: no window
    const SlidingWindow& local_window() const { return m_.window; }  // the window of either kind (BatchShape)
    int pp() const { return static_cast<int>(stage_layers_.size()); }
    // Seconds to send the activations of T tokens from stage `i` to stage i + 1.
    double SendSeconds(int i, double tokens) const;
    // The measured fixed cost of one kernel every op pays on its memory side (kernel_floor.h); alpha_s = 0
    // when the accelerator's calibration has no measurement of it.
    const KernelFloor& kernel_floor() const { return floor_; }
    // The measured fixed cost of one decode-attention call beyond its bytes (config/calibration.h
    // DecodeAttentionFloor), null when the part has none: its decode attention then pays the kernel floor.
    // A copy: the calibration table the cost was built from need not outlive it.
    const DecodeAttentionFloor* decode_attention_floor() const { return decode_floor_ ? &*decode_floor_ : nullptr; }
    // An MLA model's decode attention measured as the engine's op on this part at the rank's heads and the model's
    // cache (config/mla_decode_curve.h), null when there is none: it is then timed by its FLOPs and bytes. A copy.
    const MlaDecodeCurve* mla_decode() const { return mla_decode_ ? &*mla_decode_ : nullptr; }
    // What the TP all-reduce is timed on, in words for the rates line: the engine's own measured curve, NCCL's curve
    // of the group's GPUs, or the network model; "" without TP.
    std::string AllReduceText() const;

private:
    // One layer of each kind (linear, elementwise, TP all-reduces), the embedding, for T tokens.
    struct PerT {
        double linear = -1, elementwise = 0, comm = 0, linear_flops = 0;  // every layer and the embedding
        double a2a = 0;  // data-parallel attention: every MoE layer's dispatch and combine (RoutedExperts apart)
        double dense_layer = 0, moe_layer = 0, embedding = 0;  // one layer's linear + vector + comm
        // A hybrid model's one-symbol layers ('*', '-', 'E', 'M'; the Mamba scan apart, MambaScanPerLayer).
        double attention_layer = 0, mlp_layer = 0, moe_mlp_layer = 0, mamba_layer = 0;
    };
    // A latent MoE's two projections around its experts (MoeConfig::latent), h -> latent before the routing and
    // latent -> h after, each whole on every rank: Megatron-Core duplicates them on every TP rank, and TensorRT-LLM's
    // NemotronH builds them as a Linear without a tensor-parallel mode. 0 without a latent. `gemm` times one GEMM
    // (rows, n, k) and counts its FLOPs.
    template <class Gemm>
    double LatentProjections(double T, Gemm& gemm) const {
        const double d = m_.moe.latent, h = m_.hidden;
        return d > 0 ? gemm(T, d, h) + gemm(T, h, d) : 0.0;
    }
    // A hybrid model's layers of each kind (TokenCosts, from T tokens), summed into c's totals.
    void HybridTokenCosts(double T, PerT& c) const;
    // The Mamba-2 mixer's sequence part in one M layer on one rank: a prefill chunk's chunked scan (SSD) over its
    // tokens, and a decode's state update (read and write the sequence's SSM and convolution state). *flops: its
    // FLOPs. 0 without Mamba layers.
    double MambaScanPerLayer(const BatchShape& b, double* flops) const;
    const PerT& TokenCosts(double T) const;
    // The routed experts of one MoE layer on one GPU when `Tm` tokens enter it across the group: T k / ep rows
    // each (times moe.load_imbalance's busiest share), the E/ep (1 - (1 - k/E)^T) local experts they hit read once,
    // the permutes and the activation. In TokenCosts's MoE layer unless attention is data parallel, where a GPU's
    // experts see every GPU's tokens and this is added per batch (cached by Tm).
    struct Routed {
        double linear = -1, permute = 0, activation = 0, flops = 0;
    };
    const Routed& RoutedExperts(double Tm) const;
    // Data-parallel attention: the busiest GPU's share of the group's batch, ceil(sequences / tp) of its
    // sequences with that fraction of every sum (the sequences spread evenly, as the DP controllers of SGLang and
    // TensorRT-LLM deal them; which GPU holds which is not tracked). Otherwise b.
    BatchShape RankShare(const BatchShape& b) const;
    double RankTokens(const BatchShape& rank) const;  // TokenCosts's T for a RankShare
    IterationBreakdown OneBatch(const BatchShape& group, const BatchShape* rank) const;  // without two-batch overlap
    double AllReduceSeconds(double bytes) const;
    // One MoE layer's all-gather dispatch and reduce-scatter combine (PoolConfig::allgather_dispatch) of `T` tokens a
    // GPU over the group, the routed experts' input `width` wide.
    double GatherDispatchSeconds(double T, double width) const;
    // One GEMM of `rows` x k . k x n in `groups` (its weights read `weight_sets` times), at the serving formats:
    // inputs at a byte under fp8/fp4 GEMMs, else the activations'; adds its FLOPs to *flops. 0 for no rows.
    // `expert_width`: an expert GEMM's intermediate width on this rank, which holds it to the part's measured MoE op
    // (GemmDims::group_width); 0 for other GEMMs.
    double GemmSeconds(double rows, double n, double k, double groups, double weight_sets, bool high, double* flops,
                       double expert_width = 0) const;
    // Bytes of one GEMM input element: fp8 and fp4 GEMMs read their inputs stored as they run (StoredBytes: a byte,
    // or NVFP4's 0.5625), 16-bit GEMMs at the activations' width.
    double GemmInputBytes() const;
    // Bytes of one element the expert dispatch sends, quantized before it goes (TensorRT-LLM's all-to-alls and its
    // all-gather): the GEMMs' input, with one fp32 scale per 128 elements under block-scaled fp8.
    double DispatchInputBytes() const;
    // An elementwise op over `elems` elements: `fpe` FLOPs each, reading `reads` tensors and writing one.
    double VecSeconds(double elems, double fpe, double reads) const;
    // A kernel's roofline time held to the kernel floor (floor_: its fixed cost plus its bytes at the HBM rate).
    double Floored(double roofline, double flops, double bytes) const;
    // One kernel: the training model's roofline, its memory side as alpha + bytes / bandwidth (kernel_floor.h).
    // `dims`: a matmul's shape, one GEMM of its groups (the GEMM table by shape where measured).
    double Kernel(OpKind kind, double flops, double bytes, double groups = 1, bool high_precision = false,
                  bool windowed = false, const GemmDims& dims = {}) const;
    // Attention of one layer of the batch `b` as the layer sees it (WindowView for a windowed layer, whose keys are
    // the window sums): its kernels' efficiency is read at the keys its queries read, so a windowed view times itself.
    double AttentionPerLayer(const BatchShape& b) const;
    double MlaAttentionPerLayer(const BatchShape& b) const;
    // Attention of one full and of one windowed layer (0 without a window), computed once per batch.
    struct LayerAttention {
        double full = 0, windowed = 0;
    };
    LayerAttention AttentionOfLayers(const BatchShape& b) const;
    double AttentionFlops(const BatchShape& b) const;               // every layer's
    double MlaUpSeconds(const BatchShape& b, double* flops) const;  // per layer; 0 without MLA
    double HeadSeconds(const BatchShape& b, double* gather) const;  // final norm + LM head; the logits gather
    double PrefillAttentionFlops(const BatchShape& b) const;        // one layer
    double DecodeAttentionFlops(const BatchShape& b) const;         // cached for integral T <= max_tokens

    ModelConfig m_;
    ServingPrecision prec_;
    int tp_ = 1, ep_ = 1;
    MoeConfig slots_moe_;  // the model's MoE with its slots as experts (DeepEP's distinct GPUs and nodes)
    bool deepep_ = false;  // PoolConfig::deepep_dispatch
    bool gather_ = false;  // PoolConfig::allgather_dispatch
    bool tbo_ = false;     // PoolConfig::two_batch_overlap
    int slots_ = 0;  // routed expert slots: the experts and their redundant copies (PoolConfig::redundant_experts)
    int dp_ = 1;     // GPUs running attention data parallel (PoolConfig::attention_dp: the pool's tp; tp_ is then 1)
    std::vector<int> stage_layers_, stage_dense_;          // layers, and dense (non-MoE) layers, of each stage
    std::vector<int> stage_windowed_;                      // windowed layers of each stage (ModelConfig::window)
    std::vector<ModelConfig::LayerKinds> stage_kinds_;     // a hybrid model's layers of each kind, each stage
    ModelConfig::LayerKinds kinds_;                        // and the whole model's
    std::vector<double> send_latency_, send_bytes_per_s_;  // per stage boundary
    double kv_heads_rank_ = 1, heads_rank_ = 1, kv_bytes_per_token_ = 0;
    System sys_;  // CommModel keeps a reference to it
    std::unique_ptr<ComputeModel> cm_;
    std::unique_ptr<Layout> layout_;
    std::unique_ptr<CommModel> net_;
    KernelFloor floor_;
    std::optional<DecodeAttentionFloor> decode_floor_;
    std::optional<MlaDecodeCurve> mla_decode_;
    // The engine's own all-reduce measured on tp_ GPUs of this part (PoolConfig::all_reduce); a copy, as above.
    std::optional<CollectiveCurve> engine_ar_;
    mutable std::vector<PerT> cache_;
    mutable std::vector<Routed> routed_cache_;  // by the group's tokens, under data-parallel attention
    mutable Routed routed_scratch_;
    // HeadSeconds by logits count (at most the token budget, as T): the LM head GEMM's curve lookup and the logits'
    // all-gather were a sixth of a serving simulation's work, asked again every iteration for the same few counts.
    struct HeadCost {
        double head = -1, gather = 0;
    };
    mutable std::vector<HeadCost> head_cache_;
    mutable PerT scratch_;
};

// Expected distinct experts that T tokens choosing k of E experts each hit, with uniform routing:
// E (1 - (1 - k/E)^T). Every hit expert's weights are read once per iteration.
double ExpectedExpertsHit(double experts, double top_k, double tokens);

}  // namespace sc
