#include "inference/iteration_cost.h"

#include <algorithm>
#include <cmath>

#include "config/error.h"
#include "config/job_segments.h"
#include "config/torus_slice.h"
#include "graph/moe_spread.h"
#include "inference/kv_capacity.h"
#include "parallel/layout.h"
#include "trace/chakra_et.h"
#include "training/comm_model.h"
#include "training/compute_model.h"

namespace sc {

double ExpectedExpertsHit(double experts, double top_k, double tokens) {
    if (experts <= 0 || tokens <= 0) return 0;
    return experts * (1 - std::pow(1 - top_k / experts, tokens));
}

namespace {

// The innermost level whose aligned domains hold both GPUs (levels' sizes each divide the next).
size_t LevelJoining(const System& sys, int a, int b) {
    size_t l = 0;
    while (l + 1 < sys.levels.size() && a / sys.levels[l].size != b / sys.levels[l].size) ++l;
    return l;
}

}  // namespace

IterationCost::IterationCost(const ModelConfig& m, const ServingPrecision& prec, const PoolConfig& split,
                             const System& sys, const CalibrationTable* cal, double typical_prefill, int max_tokens)
    : m_(m), prec_(prec), tp_(split.tp), ep_(split.ep), slots_(m.is_moe() ? split.ExpertSlots(m) : 0) {
    // Data-parallel attention: every op of a GPU at tp 1 on its own sequences but the routed experts (RoutedExperts),
    // split over the group of split.tp GPUs, which the all-to-all and the layout below span.
    if (split.attention_dp) {
        if (split.ep != split.tp || !m.is_moe() || m.is_hybrid())
            throw Error("pool.attention_dp", "needs an MoE transformer with ep=tp (CheckAttentionDp)");
        dp_ = split.tp, tp_ = 1;
    }
    const int tp = tp_;
    if (tp < 1 || m.heads % tp != 0)
        throw Error("pool.tp",
                    "tp=" + std::to_string(tp) + " does not divide " + std::to_string(m.heads) + " attention heads");
    if (split.ep < 1 ||
        (split.ep > 1 && (!m.is_moe() || split.tp % split.ep != 0 || split.ExpertSlots(m) % split.ep != 0)))
        throw Error("pool.ep",
                    "ep=" + std::to_string(split.ep) +
                        " must divide tp and the experts of a mixture-of-experts model (ValidateServingConfig "
                        "lists the valid values)");
    // On a torus pod (TPU) a replica runs on its own slice of tp x pp chips, as a training job does
    // (config/torus_slice.h); elsewhere on the cluster as given.
    sys_ = JobPartFor(sys, split.tp * split.pp).value_or(sys);
    stage_layers_ = StageLayers(m.layers, split.pp);
    // Stages hold consecutive layers; the dense ones lead, then every or every n-th is MoE (ModelConfig::moe_layer).
    int first = 0;
    int most_kv = 0;
    kinds_ = m.layer_kinds(0, m.layers, false);
    for (int n : stage_layers_) {
        stage_dense_.push_back(n - m.moe_layers_in(first, n));
        stage_windowed_.push_back(m.windowed_layers(first, n));
        stage_kinds_.push_back(m.layer_kinds(first, n, false));
        most_kv = std::max(most_kv, KvLayersIn(m, first, n));
        first += n;
    }
    // Stage i's rank r (GPU i * tp + r of the replica) sends to rank r of stage i + 1: the slowest of those
    // pairs' links is the send's (replicas are placed side by side, so replica 0 stands for every one).
    for (int i = 0; i + 1 < split.pp; ++i) {
        size_t level = 0;
        for (int r = 0; r < tp; ++r) level = std::max(level, LevelJoining(sys_, i * tp + r, (i + 1) * tp + r));
        const NetworkLevel& l = sys_.levels[level];
        send_latency_.push_back(l.latency_us * 1e-6);
        // A torus level's bandwidth is both links of the dimension; a send to a neighbour takes one
        // (CommModel::P2PSeconds).
        send_bytes_per_s_.push_back(l.EffectiveGBps() * 1e9 * (l.kind == LevelKind::torus ? 0.5 : 1.0));
    }
    heads_rank_ = static_cast<double>(m.heads) / tp;
    // When tp exceeds the KV heads, each rank keeps (a copy of) one KV head (vLLM and TensorRT-LLM replicate
    // KV heads so every rank holds at least one; trtllm-bench's memory estimate uses max(tp, kv_heads)).
    kv_heads_rank_ = KvHeadsPerRank(m, tp);
    kv_bytes_per_token_ = most_kv * KvElementsPerTokenLayer(m, tp) * StoredBytes(prec.kv_cache);

    TrainingOptions opt;  // measured curves; fused attention (cuDNN / FlashAttention class kernels)
    // Expert GEMMs at most the engine's measured MoE op (GroupedGemmCurve), whose weights were read at its compute
    // precision: not for weights stored narrower (int4 groups, or fp8 weights under 16-bit GEMMs), another kernel.
    // MXFP4 experts (gpt-oss) are held to the op measured with MXFP4 experts; other int4 layouts to none.
    opt.engine_moe_mxfp4 = prec.int4 && prec.int4->mxfp4();
    opt.engine_moe_op = opt.engine_moe_mxfp4 || (!prec.int4 && BytesOf(prec.weights) == BytesOf(prec.compute));
    // Its dense GEMMs at the engine's own measured GEMM where there is one (fp4 on Blackwell, fp8 on Hopper and
    // Blackwell): weights stored as the GEMM runs them, as the measured op read them. W4A8's mixed-input GEMM is
    // another kernel, and keeps the library's curve.
    opt.engine_gemms = !prec.int4 && prec.weights == prec.compute;
    opt.engine_fp8_block = prec.fp8_scaling == Fp8Scaling::block;
    // Prefill attention at the engine's own measured context-attention op where the part has it (TensorRT-LLM's, as
    // the GEMMs and MoE op above; MLA's context attention apart, which keeps the library curve it matches: docs/
    // serving.md, "TensorRT-LLM's context attention"). FP8 context FMHA where trtllm-bench's build turns it on: an
    // FP8 cache under FP8 or FP4 GEMMs (tensorrt_llm/bench/build: use_fp8_context_fmha for QuantAlgo FP8; the
    // builder's list adds NVFP4 and W4A8_AWQ), not gpt-oss's MXFP4 experts.
    if (cal && !m.is_mla() &&
        FindAttentionCurve(*cal, sys.accelerator.id, AttentionKernel::tensorrt_llm, true, true, m.head_dim)) {
        opt.attention_kernel = AttentionKernel::tensorrt_llm;
        const bool mxfp4 = prec.int4 && prec.int4->mxfp4();
        if (prec.kv_cache == Precision::fp8 && BytesOf(prec.compute) <= 1 && !mxfp4)
            opt.attention_dtype = Precision::fp8;
    }
    AttentionShape shape;
    shape.batch = heads_rank_;
    shape.sq = shape.sk = std::max(1.0, typical_prefill);
    shape.dqk = shape.dv = m.head_dim;
    if (m.is_mla()) {  // prefill attends over the up-projected keys and values (MlaUpSeconds)
        shape.dqk = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
        shape.dv = m.mla.v_head_dim;
    }
    shape.w = 2;
    if (m.has_window()) shape.window = m.window.size;  // at min(typical prefill, window): compute_model.h
    cm_ = std::make_unique<ComputeModel>(sys.accelerator, prec.compute, cal, opt, shape);
    // The TP group's collectives; under data-parallel attention the all-to-all of an expert group folded over the
    // group's data-parallel GPUs (the training layout's ep over dp), DeepEP's when the pool dispatches with it.
    ParallelConfig p;
    if (dp_ > 1) p.dp = p.ep = split.tp;
    else p.tp = split.tp;
    layout_ = std::make_unique<Layout>(p);
    slots_moe_ = m.moe;
    slots_moe_.experts = slots_;
    deepep_ = split.deepep_dispatch && dp_ > 1;
    gather_ = split.allgather_dispatch && dp_ > 1;
    tbo_ = split.two_batch_overlap && dp_ > 1;
    net_ = std::make_unique<CommModel>(sys_, *layout_, opt.in_network_reduction, cal, true,
                                       deepep_ ? &slots_moe_ : nullptr);
    if (deepep_ && net_->DeepEpScaleOutShare() < 0)
        throw Error("pool.deepep_dispatch", "DeepEP's per-node sends need the " + std::to_string(slots_) +
                                                " expert slots to divide over the group's " + std::to_string(dp_) +
                                                " GPUs and its nodes, on a switched (not torus) cluster; valid: false");
    floor_ = MeasuredKernelFloor(cal, sys.accelerator, cm_->memory_bytes_per_s());
    if (const DecodeAttentionFloor* f = cal ? FindDecodeAttentionFloor(*cal, sys.accelerator.id) : nullptr)
        decode_floor_ = *f;
    if (m_.is_mla() && cal && heads_rank_ == std::floor(heads_rank_))
        if (const MlaDecodeCurve* c =
                FindMlaDecodeCurve(*cal, sys.accelerator.id, prec_.kv_cache, static_cast<int>(heads_rank_),
                                   m_.mla.kv_lora_rank, m_.mla.qk_rope_head_dim))
            mla_decode_ = *c;
    if (split.all_reduce != EngineAllReduce::nccl && cal && tp_ > 1 && tp_ <= sys_.levels.front().size)
        if (const CollectiveCurve* c = FindEngineAllReduce(*cal, sys.accelerator.id, NameOf(split.all_reduce), tp_))
            engine_ar_ = *c;
    cache_.assign(static_cast<size_t>(std::max(0, max_tokens)) + 1, PerT{});
    // The experts see the whole group's tokens, up to tp budgets (bounded: a larger count is computed each time).
    if (dp_ > 1) routed_cache_.assign(std::min<size_t>(cache_.size() * static_cast<size_t>(dp_), 1u << 20), Routed{});
    head_cache_.assign(cache_.size(), HeadCost{});
}

IterationCost::~IterationCost() = default;

// One TP all-reduce. Where the scale-up fabric has a measured nccl-tests curve, its time at this message size
// (busbw = factor x bytes / time, read at the size a measurement on n ranks would see, as CommModel does; the
// curve measured on tp GPUs where there is one, CommModel::ScaleUpCurve):
// it contains NCCL's fixed per-call latency (16 us for 1 KB on 8 H100s at NCCL's default algorithm, the
// curve's first points), which decides the small all-reduces of decode steps. CommModel instead takes the
// faster of the curve and its alpha-beta line, whose latency is only the per-step link latency: right for
// training's megabyte buffers, 5-10x too fast for a decode's kilobytes.
//
// An engine that runs its own all-reduce (PoolConfig::all_reduce) reads its measured curve on these tp GPUs instead,
// at the message's own size: under the smallest size measured, that size's time (the kernels' fixed cost).
// TensorRT-LLM's AllGatherReduceScatter (tensorrt_llm/_torch/modules/fused_moe/communication/allgather_reducescatter.py):
// "always post-quant dispatch": each GPU's hidden states go out in the GEMMs' input format (NVFP4: half a byte and one
// E4M3 scale per 16 values; FP8: a byte, with block scaling one fp32 scale per 128; else 16 bits), with each token's
// top-k expert slots (int32) and routing weights (fp32); every GPU receives every other GPU's (the group's tokens at
// the busiest GPU's count, as with DP padding). The experts' outputs, one 16-bit row per gathered token, are then
// reduce-scattered back. Both buffers are the whole gathered tensor, as nccl-tests sizes them.
double IterationCost::GatherDispatchSeconds(double T, double width) const {
    const double a = BytesOf(prec_.activations), in = DispatchInputBytes();
    const double tokens = T * dp_, routing = m_.moe.top_k * (4.0 + 4.0);
    return net_->Seconds(CollectiveType::all_gather, GroupKind::ep, tokens * (width * in + routing)) +
           net_->Seconds(CollectiveType::reduce_scatter, GroupKind::ep, tokens * width * a);
}

double IterationCost::AllReduceSeconds(double bytes) const {
    if (tp_ <= 1 || bytes <= 0) return 0;
    const double factor = 2.0 * (tp_ - 1) / tp_;
    if (engine_ar_) {
        const double b = std::max(bytes, engine_ar_->busbw.x.front());
        return factor * b / (BusBandwidthGBps(*engine_ar_, b) * 1e9);
    }
    const CollectiveCurve* c = net_->ScaleUpCurve(CollectiveType::all_reduce, tp_);
    if (c && tp_ <= sys_.levels.front().size) {  // the group within one scale-up domain, where the curve was measured
        return factor * bytes / (BusBandwidthGBps(*c, bytes * c->n_ranks / tp_) * 1e9);
    }
    return net_->Seconds(CollectiveType::all_reduce, GroupKind::tp, bytes);
}

std::string IterationCost::AllReduceText() const {
    if (tp_ <= 1) return "";
    if (engine_ar_) return "the engine's own, measured (" + engine_ar_->id + ")";
    const CollectiveCurve* c = net_->ScaleUpCurve(CollectiveType::all_reduce, tp_);
    if (c && tp_ <= sys_.levels.front().size)
        return "NCCL, measured (" + c->id + (c->n_ranks == tp_ ? "" : ", read for " + std::to_string(tp_) + " GPUs") +
               ")";
    return "the network model (no measured curve for this group)";
}

double IterationCost::Kernel(OpKind kind, double flops, double bytes, double groups, bool high_precision, bool windowed,
                             const GemmDims& dims) const {
    return Floored(cm_->Seconds(kind, flops, bytes, true, groups, high_precision, windowed, dims), flops, bytes);
}

double IterationCost::Floored(double roofline, double flops, double bytes) const {
    if (floor_.alpha_s <= 0 || (flops <= 0 && bytes <= 0)) return roofline;
    return std::max(roofline, floor_.alpha_s + bytes / cm_->memory_bytes_per_s());
}

double IterationCost::GemmInputBytes() const {
    return BytesOf(prec_.compute) < 2 ? StoredBytes(prec_.compute) : BytesOf(prec_.activations);
}

double IterationCost::DispatchInputBytes() const {
    const bool block = prec_.compute == Precision::fp8 && prec_.fp8_scaling == Fp8Scaling::block;
    return GemmInputBytes() + (block ? 4.0 / 128 : 0);
}

double IterationCost::GemmSeconds(double rows, double n, double k, double groups, double weight_sets, bool high,
                                  double* flops, double expert_width) const {
    if (rows <= 0) return 0.0;
    const double in = GemmInputBytes();
    // A routed expert's GEMM (it states its width) reads its weights at the experts' format (MXFP4 stores only them).
    const double wb = expert_width > 0 ? ExpertWeightBytesPerElement(prec_) : WeightBytesPerElement(prec_);
    const double a = BytesOf(prec_.activations);
    *flops += 2 * rows * n * k;
    // An expert GEMM's op holds the rank's experts (slots_ / ep_), which with the width, the hidden size and the rows
    // a token sends the rank (top-k x (slots_ / ep_) / slots_) picks its measured curve.
    const double experts = expert_width > 0 ? static_cast<double>(slots_) / ep_ : 0;
    const double hidden = expert_width > 0 ? m_.hidden : 0;
    const double hits = expert_width > 0 ? static_cast<double>(m_.moe.top_k) / ep_ : 0;
    return Kernel(OpKind::matmul, 2 * rows * n * k, rows * k * in + weight_sets * k * n * wb + rows * n * a, groups,
                  high, false, {rows / std::max(1.0, groups), n, k, expert_width, experts, hidden, hits});
}

double IterationCost::VecSeconds(double elems, double fpe, double reads) const {
    return elems > 0 ? Kernel(OpKind::elementwise, fpe * elems, (reads + 1) * elems * BytesOf(prec_.activations)) : 0.0;
}

LayerLinearTimes IterationCost::LayerLinear(double T) const {
    const double h = m_.hidden, d = m_.head_dim, f = m_.ffn;
    const double in = GemmInputBytes();
    const double wb = WeightBytesPerElement(prec_), out = BytesOf(prec_.activations);
    auto gemm = [&](double rows, double n, double k) {
        return Kernel(OpKind::matmul, 2 * rows * n * k, rows * k * in + k * n * wb + rows * n * out, 1, false, false,
                      {rows, n, k});
    };
    LayerLinearTimes t;
    t.qkv = gemm(T, (heads_rank_ + 2 * kv_heads_rank_) * d, h);
    t.out = gemm(T, h, heads_rank_ * d);
    const bool swiglu = m_.mlp == MlpKind::swiglu;
    t.mlp_up = gemm(T, (swiglu ? 2 : 1) * f / tp_, h);
    t.mlp_down = gemm(T, h, f / tp_);
    t.all_reduce = AllReduceSeconds(T * h * out);
    return t;
}

const IterationCost::PerT& IterationCost::TokenCosts(double T) const {
    const bool cacheable = T == std::floor(T) && T >= 0 && T < static_cast<double>(cache_.size());
    PerT& c = cacheable ? cache_[static_cast<size_t>(T)] : scratch_;
    if (cacheable && c.linear >= 0) return c;
    const double h = m_.hidden, d = m_.head_dim, a = BytesOf(prec_.activations);
    const bool swiglu = m_.mlp == MlpKind::swiglu;
    double fl = 0;  // GEMM FLOPs of the layer being built
    auto gemm = [&](double rows, double n, double k, double groups = 1, double weight_sets = 1, bool high = false) {
        return GemmSeconds(rows, n, k, groups, weight_sets, high, &fl);
    };
    auto vec = [&](double elems, double fpe, double reads) { return VecSeconds(elems, fpe, reads); };
    const double norm_fpe = m_.norm == NormKind::layernorm ? 8 : 5;  // the training graph's FLOPs per element
    if (m_.is_hybrid()) {
        HybridTokenCosts(T, c);
        return c;
    }
    // Attention block, common to dense and MoE layers.
    double attn_linear = 0, attn_vec = 2 * vec(T * h, norm_fpe, 1) + 2 * vec(T * h, 1, 2);  // norms, residuals
    if (m_.is_mla()) {
        // DeepSeek-V2 MLA (arXiv:2405.04434 sec. 2.1): q through its low-rank pair (or one projection), the
        // token's latent c_KV and rotary key k_R (kv_down, replicated on every rank as in the training graph),
        // the output projection. The up-projections of the cache depend on the batch (MlaUpSeconds).
        const MlaConfig& a = m_.mla;
        const double dqk = a.qk_nope_head_dim + a.qk_rope_head_dim;
        if (a.q_lora_rank > 0) {
            attn_linear += gemm(T, a.q_lora_rank, h) + gemm(T, heads_rank_ * dqk, a.q_lora_rank);
            attn_vec += vec(T * a.q_lora_rank, 5, 1);
        } else {
            attn_linear += gemm(T, heads_rank_ * dqk, h);
        }
        attn_linear += gemm(T, a.kv_lora_rank + a.qk_rope_head_dim, h) + gemm(T, h, heads_rank_ * a.v_head_dim);
        attn_vec += vec(T * a.kv_lora_rank, 5, 1);
        if (m_.position == PositionKind::rotary) attn_vec += vec(T * (heads_rank_ + 1) * a.qk_rope_head_dim, 3, 1);
    } else {
        attn_linear = gemm(T, (heads_rank_ + 2 * kv_heads_rank_) * d, h) + gemm(T, h, heads_rank_ * d);
        if (m_.position == PositionKind::rotary) attn_vec += vec(T * (heads_rank_ + kv_heads_rank_) * d, 3, 1);
    }
    const double attn_fl = fl;
    // `width`: the MLP's input and output width (a latent MoE's experts run on its latent).
    auto mlp = [&](double rows, double ff, double groups, double weight_sets, double* vec_out, double width) {
        double t =
            gemm(rows, (swiglu ? 2 : 1) * ff, width, groups, weight_sets) + gemm(rows, width, ff, groups, weight_sets);
        *vec_out += swiglu ? vec(rows * ff, 4, 2) : vec(rows * ff, 8, 1);
        return t;
    };
    double dense_linear = attn_linear, dense_vec = attn_vec;
    dense_linear += mlp(T, static_cast<double>(m_.ffn) / tp_, 1, 1, &dense_vec, h);
    const double dense_fl = fl;
    double moe_linear = 0, moe_vec = 0, moe_fl = 0;
    if (m_.is_moe()) {
        fl = attn_fl;
        // Experts split over ep groups of the TP ranks, each expert over the tp/ep ranks of its group (ep = 1:
        // every rank holds 1/tp of every expert, vLLM's and TensorRT-LLM's default for MoE under TP). The
        // activations are on every rank after the attention's all-reduce, so a rank picks the rows routed to
        // its E/ep experts (T*k/ep with uniform routing, times the most loaded group's share under the model's
        // moe.load_imbalance, MoeRankLoad, which the layer waits for) and the layer's all-reduce combines the
        // partial sums (TensorRT-LLM docs/source/advanced/expert-parallelism.md; no all-to-all inside a TP group).
        // Each local expert hit reads its weights once: E/ep (1 - (1 - k/E)^T) of them on a rank.
        const double experts = m_.moe.experts;
        moe_linear = attn_linear + gemm(T, experts, h, 1, 1, true) + LatentProjections(T, gemm);
        moe_vec = attn_vec + vec(T * experts, 3, 1);
        if (dp_ == 1) {  // the experts see this rank's tokens; under data-parallel attention the group's (Breakdown)
            const Routed& r = RoutedExperts(T);
            moe_vec += r.permute;
            moe_vec += r.activation;
            moe_linear += r.linear;
            fl += r.flops;
        } else {
            // The dispatch carries the experts' GEMM input, quantized before it is sent, and the combine stays in 16
            // bits (the activations'). DeepEP (DeepSeek-V3, arXiv:2412.19437 sec. 3.3.2, "Low-Precision
            // Communication") sends FP8 with one fp32 scale per 128 elements, as its Buffer.dispatch takes them (the
            // training model's fp8 dispatch), whatever the GEMMs compute in. TensorRT-LLM's all-to-alls quantize first
            // and send the GEMMs' own format ("post-quant all-to-all", TRTLLM_MOE_POST_QUANT_ALLTOALLV, on by default
            // for NVFP4: half a byte and one E4M3 scale per 16 values; FP8 a byte, with block scaling one fp32 scale
            // per 128), as its AllGatherReduceScatter does (GatherDispatchSeconds). A token crosses the group once to
            // each GPU holding one of its experts, and its partial output once back: TensorRT-LLM's all-to-all
            // dispatch kernel skips a target rank it has already copied the token to (moeA2ADispatchKernel's
            // already_copied mask, cpp/tensorrt_llm/kernels/communicationKernels/moeAlltoAllKernels.cu) and its
            // combine reads one row a rank; DeepEP does the same within a node and sends once per node over the
            // scale-out network (the communication model's per-node sends).
            const double in = BytesOf(prec_.compute) >= 2 ? a : deepep_ ? 1 + 4.0 / 128 : DispatchInputBytes();
            const double copies = T * MoeDistinctGroups(slots_moe_, dp_);
            const double dm = m_.moe.routed_width(m_.hidden);
            c.a2a = m_.moe_layers() *
                    (gather_ ? GatherDispatchSeconds(T, dm)
                             : net_->Seconds(CollectiveType::all_to_all, GroupKind::ep, copies * dm * in) +
                                   net_->Seconds(CollectiveType::all_to_all, GroupKind::ep, copies * dm * a));
        }
        if (m_.moe.shared_experts > 0)
            moe_linear +=
                mlp(T, static_cast<double>(m_.moe.shared_experts) * m_.moe.expert_ffn / tp_, 1, 1, &moe_vec, h);
        moe_fl = fl;
    }
    const double ar = AllReduceSeconds(T * h * a);
    const double Ld = m_.dense_layers(), Lm = m_.moe_layers();
    c.linear = Ld * dense_linear + Lm * moe_linear;
    c.linear_flops = Ld * dense_fl + Lm * moe_fl;
    // Embedding lookup: one op per element written (the training graph's convention).
    c.embedding = T > 0 ? Kernel(OpKind::gather, T * h, (T * h + T) * a) : 0;
    c.elementwise = Ld * dense_vec + Lm * moe_vec + c.embedding;
    c.comm = m_.layers * 2 * ar;
    c.dense_layer = dense_linear + dense_vec + 2 * ar;
    c.moe_layer = moe_linear + moe_vec + 2 * ar + (Lm > 0 ? c.a2a / Lm : 0);
    return c;
}

// A hybrid model's one-symbol layers (ModelConfig::hybrid; the training graph's HybridSublayer), each with its own
// norm, residual and one TP all-reduce: attention alone ('*'), an MLP alone ('-'), an MoE alone ('E'), and the Mamba-2
// mixer ('M': norm; the input projection h -> z, x, B, C, dt; the depthwise convolution over x, B, C; the gated
// RMSNorm; the output projection), with the training graph's FLOPs per element. The mixer's scan, which depends
// on the batch's prefill and decode mix, is MambaScanPerLayer.
void IterationCost::HybridTokenCosts(double T, PerT& c) const {
    const double h = m_.hidden, d = m_.head_dim, a = BytesOf(prec_.activations);
    double fl = 0;
    auto gemm = [&](double rows, double n, double k, double groups = 1, double weight_sets = 1, bool high = false,
                    double expert_width = 0) {
        return GemmSeconds(rows, n, k, groups, weight_sets, high, &fl, expert_width);
    };
    auto vec = [&](double elems, double fpe, double reads) { return VecSeconds(elems, fpe, reads); };
    auto mlp = [&](double rows, double ff, double groups, double weight_sets, double* vec_out, double width,
                   bool routed = false) {
        const bool swiglu = m_.mlp == MlpKind::swiglu;
        const double expert_width = routed ? ff : 0;  // routed experts: held to the measured MoE op
        const double t = gemm(rows, (swiglu ? 2 : 1) * ff, width, groups, weight_sets, false, expert_width) +
                         gemm(rows, width, ff, groups, weight_sets, false, expert_width);
        *vec_out += swiglu                     ? vec(rows * ff, 4, 2)
                    : m_.mlp == MlpKind::relu2 ? vec(rows * ff, 2, 1)
                                               : vec(rows * ff, 8, 1);
        return t;
    };
    const double norm_fpe = m_.norm == NormKind::layernorm ? 8 : 5;
    const double nr = vec(T * h, norm_fpe, 1) + vec(T * h, 1, 2);  // the layer's norm and residual add
    const double ar = AllReduceSeconds(T * h * a);
    const ModelConfig::LayerKinds& k = kinds_;
    double linear = 0, vector = 0, flops = 0;
    // Each kind: its GEMMs, its vector work, its GEMM FLOPs; added `count` times to the totals.
    auto add = [&](double count, double lin, double vecs, double layer_flops, double* layer) {
        *layer = lin + vecs + ar;
        linear += count * lin, vector += count * vecs, flops += count * layer_flops;
    };
    {  // '*': attention alone
        fl = 0;
        const double lin = gemm(T, (heads_rank_ + 2 * kv_heads_rank_) * d, h) + gemm(T, h, heads_rank_ * d);
        double vecs = nr;
        if (m_.position == PositionKind::rotary) vecs += vec(T * (heads_rank_ + kv_heads_rank_) * d, 3, 1);
        add(k.attention, lin, vecs, fl, &c.attention_layer);
    }
    if (k.mlp > 0) {  // '-': an MLP alone
        fl = 0;
        double vecs = nr;
        const double lin = mlp(T, static_cast<double>(m_.ffn) / tp_, 1, 1, &vecs, h);
        add(k.mlp, lin, vecs, fl, &c.mlp_layer);
    }
    if (k.moe_mlp > 0) {  // 'E': an MoE alone, routed as a transformer's MoE layer (TokenCosts)
        fl = 0;
        const double experts = m_.moe.experts, topk = m_.moe.top_k, ep = ep_;
        const double routed = T * topk / ep * MoeRankLoad(m_.moe, ep_);
        const double hit = std::max(1.0, ExpectedExpertsHit(experts, topk, T) / ep);
        const double dm = m_.moe.routed_width(m_.hidden);
        double vecs = nr + vec(T * experts, 3, 1) + vec(routed * dm, 2, 2);
        double lin = gemm(T, experts, h, 1, 1, true) + LatentProjections(T, gemm);
        lin += mlp(routed, static_cast<double>(m_.moe.expert_ffn) * ep / tp_, hit, hit, &vecs, dm, true);
        if (m_.moe.shared_experts > 0)
            lin += mlp(T, static_cast<double>(m_.moe.shared_experts) * m_.moe.expert_ffn / tp_, 1, 1, &vecs, h);
        add(k.moe_mlp, lin, vecs, fl, &c.moe_mlp_layer);
    }
    if (k.mamba > 0) {  // 'M': the Mamba-2 mixer around its scan
        fl = 0;
        const MambaConfig& mb = m_.mamba;
        const double inner = static_cast<double>(mb.inner()), bc = 2.0 * mb.groups * mb.state;
        const double conv = (inner + bc) / tp_, in_proj = (2 * inner + bc + mb.heads) / tp_;
        const double lin = gemm(T, in_proj, h) + gemm(T, h, inner / tp_);
        const double vecs = nr + vec(T * conv, 2.0 * mb.conv_kernel + 4, 1) + vec(T * inner / tp_, 9, 2);
        add(k.mamba, lin, vecs, fl, &c.mamba_layer);
    }
    c.linear = linear;
    c.linear_flops = flops;
    c.embedding = T > 0 ? Kernel(OpKind::gather, T * h, (T * h + T) * a) : 0;
    c.elementwise = vector + c.embedding;
    c.comm = m_.layers * ar;
}

// Prefill: the chunked scan (SSD, Dao & Gu 2024) over the chunk's tokens at the training graph's 7 d_inner state
// FLOPs a token (Megatron-Bridge's flop_utils.py mamba_layer_flops "scan"), timed as the training graph times it
// (the measured scan curve at the batch's prefill sequences x heads and their mean length: ComputeModel::
// ScanSeconds), reading x, B, C and dt and writing y.
// Decode: mamba_ssm's selective_state_update (and causal_conv1d_update) per sequence: the same 7 d_inner state
// FLOPs for its one token (dA = exp(dt A), h = dA h + dt B x, y = C h + D x), reading and writing the sequence's
// state, a memory-bound kernel. States at the activation precision (vLLM's mamba_cache_dtype "auto": the model's).
double IterationCost::MambaScanPerLayer(const BatchShape& b, double* flops) const {
    *flops = 0;
    if (!m_.is_hybrid() || kinds_.mamba == 0) return 0;
    const MambaConfig& mb = m_.mamba;
    const double a = BytesOf(prec_.activations), inner = static_cast<double>(mb.inner()) / tp_;
    const double conv = (mb.inner() + 2.0 * mb.groups * mb.state) / tp_, heads = static_cast<double>(mb.heads) / tp_;
    const double state = MambaStateBytesPerSeqLayer(m_, tp_, a);
    double t = 0;
    if (b.prefill_tokens > 0) {
        const double f = 7 * b.prefill_tokens * inner * mb.state;
        *flops += f;
        const double bytes = b.prefill_tokens * (conv + heads + inner) * a;
        const double seqs = std::max(1.0, b.sequences - b.decodes);  // the prefill chunks
        t += Floored(cm_->ScanSeconds(f, bytes, seqs * heads, heads, b.prefill_tokens / seqs), f, bytes);
    }
    if (b.decodes > 0) {
        const double f = 7 * b.decodes * inner * mb.state;
        *flops += f;
        t += Kernel(OpKind::elementwise, f, b.decodes * (2 * state + (conv + heads + inner) * a));
    }
    return t;
}

// MLA's batch-dependent GEMMs of one layer on one rank (DeepSeek-V2 sec. 2.1.2-2.1.3; vLLM's MLA backends,
// vllm/v1/attention/backends/mla/common.py): a prefill chunk up-projects the latents of every key it attends to
// (its own and the cached context's) into per-head k_nope and v (kv_up); a decode instead absorbs W_UK into its
// query and W_UV into its output (two per-head batched GEMMs, which vLLM keeps in 16 bits), so its attention
// runs in the latent space. *flops: their FLOPs.
double IterationCost::MlaUpSeconds(const BatchShape& b, double* flops) const {
    *flops = 0;
    if (!m_.is_mla()) return 0;
    const MlaConfig& m = m_.mla;
    const double hr = heads_rank_, a = BytesOf(prec_.activations), in = GemmInputBytes();
    const double wb = WeightBytesPerElement(prec_), kvl = m.kv_lora_rank, dn = m.qk_nope_head_dim, dv = m.v_head_dim;
    double t = 0;
    if (b.prefill_tokens > 0) {
        const double rows = b.prefill_keys, n = hr * (dn + dv);
        *flops += 2 * rows * n * kvl;
        t += Kernel(OpKind::matmul, 2 * rows * n * kvl, rows * kvl * in + kvl * n * wb + rows * n * a, 1, false, false,
                    {rows, n, kvl});
    }
    if (b.decodes > 0) {
        *flops += 2 * b.decodes * hr * dn * kvl + 2 * b.decodes * hr * kvl * dv;
        const auto [absorb, up] = MlaDecodeBmmSeconds(b.decodes);
        t += absorb + up;
    }
    return t;
}

// A strided-batched GEMM (torch.bmm, TensorRT-LLM's bmm_out) runs every head's tiles in one grid: its efficiency is
// that of one GEMM of the heads' rows stacked (heads x tokens rows, the same n and k), not that of one head's small
// GEMM, which the curves put near 1% of the peak (358 us a layer for 240 tokens x 128 heads on B200, where
// TensorRT-LLM's two bmm take 21 us: docs/serving.md, "MLA's absorbed decode as one batched GEMM").
std::pair<double, double> IterationCost::MlaDecodeBmmSeconds(double decodes) const {
    if (!m_.is_mla() || decodes <= 0) return {0, 0};
    const MlaConfig& m = m_.mla;
    const double hr = heads_rank_, a = BytesOf(prec_.activations), D = decodes;
    const double kvl = m.kv_lora_rank, dn = m.qk_nope_head_dim, dv = m.v_head_dim;
    return {Kernel(OpKind::matmul, 2 * D * hr * dn * kvl, (D * hr * dn + hr * dn * kvl + D * hr * kvl) * a, 1, true,
                   false, {D * hr, kvl, dn}),
            Kernel(OpKind::matmul, 2 * D * hr * kvl * dv, (D * hr * kvl + hr * kvl * dv + D * hr * dv) * a, 1, true,
                   false, {D * hr, dv, kvl})};
}

// MLA attention of one layer on one rank. Prefill: ordinary causal attention over the up-projected keys
// (d_nope + d_rope wide) and values, reading and writing the latent cache. Decode: every head's absorbed query
// (kv_lora_rank + d_rope) against the one shared latent per key, values in the latent space: 2 (kvl + dr) +
// 2 kvl FLOPs per pair and head, the latent read once for all heads (as multi-query attention).
double IterationCost::MlaAttentionPerLayer(const BatchShape& b) const {
    const MlaConfig& m = m_.mla;
    const double hr = heads_rank_, a = BytesOf(prec_.activations), kvb = StoredBytes(prec_.kv_cache);
    const double kvl = m.kv_lora_rank, dr = m.qk_rope_head_dim, dqk = m.qk_nope_head_dim + dr, dv = m.v_head_dim;
    const double latent = kvl + dr;
    double attn = 0;
    if (b.prefill_tokens > 0) {
        const double bytes = (b.prefill_tokens * hr * (dqk + dv) + b.prefill_keys * hr * (dqk + dv)) * a +
                             (b.prefill_keys + b.prefill_tokens) * latent * kvb;
        const double flops = PrefillAttentionFlops(b), length = 2 * b.prefill_pairs / b.prefill_tokens;
        attn += Floored(cm_->ForwardAttentionSecondsAt(flops, bytes, length), flops, bytes);  // as AttentionPerLayer
    }
    if (b.decodes > 0 && mla_decode_) {
        // The engine's op as measured, at the batch's mean cached tokens (decode_keys counts the new one too).
        attn += MlaDecodeSeconds(*mla_decode_, b.decodes, b.decode_keys / b.decodes - 1);
    } else if (b.decodes > 0) {
        const double bytes = b.decodes * hr * (latent + kvl) * a + (b.decode_keys + b.decodes) * latent * kvb;
        const double flops = DecodeAttentionFlops(b), length = 2 * b.decode_keys / b.decodes;
        attn += Floored(cm_->ForwardAttentionSecondsAt(flops, bytes, length), flops, bytes);
    }
    return attn;
}

namespace {

// The batch as a windowed layer sees it: its window sums in place of the full ones.
BatchShape WindowView(const BatchShape& b) {
    BatchShape w = b;
    w.prefill_pairs = b.window_prefill_pairs;
    w.prefill_keys = b.window_prefill_keys;
    w.decode_keys = b.window_decode_keys;
    return w;
}

}  // namespace

// Attention of one full layer at the batch's sums, and of one windowed layer at its window sums (0 for a model
// without a window), each read at its own keys a query.
IterationCost::LayerAttention IterationCost::AttentionOfLayers(const BatchShape& b) const {
    LayerAttention a;
    a.full = AttentionPerLayer(b);
    if (m_.has_window()) a.windowed = AttentionPerLayer(WindowView(b));
    return a;
}

double IterationCost::AttentionFlops(const BatchShape& b) const {
    const double win = m_.windowed_layers(0, m_.layers);
    double f = (KvLayersIn(m_, 0, m_.layers) - win) * (PrefillAttentionFlops(b) + DecodeAttentionFlops(b));
    if (win > 0) {
        const BatchShape w = WindowView(b);
        f += win * (PrefillAttentionFlops(w) + DecodeAttentionFlops(w));
    }
    return f;
}

// Context and generation attention of one layer on one rank (`windowed`: b is a windowed layer's view).
double IterationCost::AttentionPerLayer(const BatchShape& b) const {
    if (m_.is_mla()) return MlaAttentionPerLayer(b);
    const double d = m_.head_dim, a = BytesOf(prec_.activations), kvb = StoredBytes(prec_.kv_cache);
    const double kv_elems = 2 * kv_heads_rank_ * d;  // K and V of one token on one rank, one layer
    double attn = 0;
    if (b.prefill_tokens > 0) {
        const double flops = PrefillAttentionFlops(b);
        const double bytes = b.prefill_tokens * heads_rank_ * d * 2 * a + b.prefill_keys * kv_elems * kvb +
                             b.prefill_tokens * kv_elems * kvb;  // Q, O; cached and new K, V read; new K, V written
        // At the curve's efficiency for a causal prompt whose queries read as many keys on average as this batch's
        // (a prompt of L tokens reads (L + 1) / 2): a chunk late in a long prompt reads its whole past, a windowed
        // layer's view its window.
        const double length = 2 * b.prefill_pairs / b.prefill_tokens;
        attn += Floored(cm_->ForwardAttentionSecondsAt(flops, bytes, length), flops, bytes);
    }
    if (b.decodes > 0) {
        const double flops = DecodeAttentionFlops(b);
        const double bytes =
            b.decodes * heads_rank_ * d * 2 * a + b.decode_keys * kv_elems * kvb + b.decodes * kv_elems * kvb;
        // A paged decode kernel and its split-KV reduction cost a fixed time beyond their bytes, measured apart
        // from the GEMMs' floor where the part has it (DecodeAttentionFloor), and, where the op's timings give it,
        // a time a block: one a sequence and KV head.
        const double fixed = decode_floor_ ? decode_floor_->alpha_us * 1e-6 + bytes / cm_->memory_bytes_per_s() +
                                                 decode_floor_->sequence_kv_head_ns * 1e-9 * b.decodes * kv_heads_rank_
                                           : 0;
        // Its compute at the curve's efficiency for a causal prompt whose queries read as many keys on average (twice
        // the mean context; a windowed layer's view holds its window's keys), as the prefill above.
        const double length = 2 * b.decode_keys / b.decodes;
        const double roof = Floored(cm_->ForwardAttentionSecondsAt(flops, bytes, length), flops, bytes);
        attn += std::max(roof, fixed);
    }
    return attn;
}

// Final norm and the vocabulary-parallel LM head (16-bit weights, see ServingPrecision) on the tokens whose next
// token is sampled; TensorRT-LLM's ColumnLinear(gather_output=True) all-gathers the logits (*gather).
double IterationCost::HeadSeconds(const BatchShape& b, double* gather) const {
    *gather = 0;
    if (b.logits <= 0) return 0;
    const bool cacheable = b.logits == std::floor(b.logits) && b.logits < static_cast<double>(head_cache_.size());
    HeadCost scratch;
    HeadCost& c = cacheable ? head_cache_[static_cast<size_t>(b.logits)] : scratch;
    if (c.head < 0) {
        const double h = m_.hidden, V = std::ceil(static_cast<double>(m_.vocab) / tp_);
        const double a = BytesOf(prec_.activations), eb = BytesOf(prec_.embeddings);
        const double norm_fpe = m_.norm == NormKind::layernorm ? 8 : 5;
        if (tp_ > 1) c.gather = net_->Seconds(CollectiveType::all_gather, GroupKind::tp, b.logits * V * tp_ * a);
        c.head = Kernel(OpKind::elementwise, norm_fpe * b.logits * h, 2 * b.logits * h * a) +
                 Kernel(OpKind::matmul, 2 * b.logits * V * h, b.logits * h * eb + V * h * eb + b.logits * V * a, 1,
                        true, false, {b.logits, V, h});
    }
    *gather = c.gather;
    return c.head;
}

// vLLM sends a stage's hidden states and residual (IntermediateTensors {"hidden_states", "residual"} of its
// decoder models): 2 T h activations from every TP rank to its peer, all pairs at once.
double IterationCost::SendSeconds(int i, double tokens) const {
    const double bytes = 2 * tokens * m_.hidden * BytesOf(prec_.activations);
    return send_latency_[static_cast<size_t>(i)] + bytes / send_bytes_per_s_[static_cast<size_t>(i)];
}

IterationBreakdown IterationCost::OneBatch(const BatchShape& group, const BatchShape* rank) const {
    IterationBreakdown r;
    const BatchShape b = rank && dp_ > 1 ? *rank : RankShare(group);
    const double T = RankTokens(b);
    const PerT& c = TokenCosts(T);
    r.linear = c.linear;
    r.elementwise = c.elementwise;
    r.tp_comm = c.comm;
    r.ep_comm = c.a2a;
    if (dp_ > 1) {
        const Routed& x = RoutedExperts(group.tokens());
        r.linear += m_.moe_layers() * x.linear;
        r.elementwise += m_.moe_layers() * (x.permute + x.activation);
    }
    const LayerAttention attn = AttentionOfLayers(b);
    const double win = m_.windowed_layers(0, m_.layers);
    r.attention = (KvLayersIn(m_, 0, m_.layers) - win) * attn.full + win * attn.windowed;
    double scan_flops = 0;  // a hybrid model's Mamba scans, its other sequence mixer
    r.attention += kinds_.mamba * MambaScanPerLayer(b, &scan_flops);
    double up_flops = 0;
    r.linear += m_.layers * MlaUpSeconds(b, &up_flops);
    double gather = 0;
    r.head = HeadSeconds(b, &gather);
    r.tp_comm += gather;
    for (int i = 0; i + 1 < pp(); ++i) r.pp_comm += SendSeconds(i, T);
    return r;
}

PipelineTimes IterationCost::Pipeline(const BatchShape& b) const {
    PipelineTimes p;
    if (dp_ > 1) return DpPipeline(Breakdown(b));
    const double T = b.tokens();
    const PerT& c = TokenCosts(T);
    double up_flops = 0;
    const double up = MlaUpSeconds(b, &up_flops);
    double gather = 0;
    const double head = HeadSeconds(b, &gather);
    const LayerAttention attn = AttentionOfLayers(b);
    double scan_flops = 0;
    const double scan = MambaScanPerLayer(b, &scan_flops);
    for (int i = 0; i < pp(); ++i) {
        const double dense = stage_dense_[static_cast<size_t>(i)], all = stage_layers_[static_cast<size_t>(i)];
        const double win = stage_windowed_[static_cast<size_t>(i)];
        double t = 0;
        if (m_.is_hybrid()) {
            const ModelConfig::LayerKinds& k = stage_kinds_[static_cast<size_t>(i)];
            t = k.attention * (c.attention_layer + attn.full) + k.mlp * c.mlp_layer + k.moe_mlp * c.moe_mlp_layer +
                k.mamba * (c.mamba_layer + scan);
        } else {
            t = dense * c.dense_layer + (all - dense) * c.moe_layer + all * up + (all - win) * attn.full +
                win * attn.windowed;
        }
        if (i == 0) t += c.embedding;
        if (i + 1 == pp()) t += head + gather;
        p.stage.push_back(t);
        if (i + 1 < pp()) p.send.push_back(SendSeconds(i, T));
    }
    return p;
}

// The layers' work (all but the LM head and the sends) shared by the layers each stage holds: exact for a model whose
// layers cost alike (every layer MoE, no window), by layer count otherwise. The embedding lookup, a few microseconds,
// is shared with them.
PipelineTimes IterationCost::DpPipeline(const IterationBreakdown& parts) const {
    PipelineTimes p;
    const double layers = parts.total() - parts.head - parts.pp_comm - parts.draft;
    for (int i = 0; i < pp(); ++i) {
        p.stage.push_back(layers * stage_layers_[static_cast<size_t>(i)] / m_.layers +
                          (i + 1 == pp() ? parts.head : 0));
        if (i + 1 < pp()) p.send.push_back(parts.pp_comm / (pp() - 1));  // the stages' sends cross one level alike
    }
    return p;
}

double IterationCost::Seconds(const BatchShape& b) const { return Breakdown(b).total(); }

double IterationCost::DraftSeconds(const BatchShape& b) const {
    const double T = b.tokens();
    if (T <= 0) return 0;
    double flops = 0, gather = 0;
    const double layer = (m_.is_moe() ? TokenCosts(T).moe_layer : TokenCosts(T).dense_layer) + MlaUpSeconds(b, &flops) +
                         AttentionOfLayers(b).full;
    const double projection = GemmSeconds(T, m_.hidden, 2.0 * m_.hidden, 1, 1, false, &flops);
    const double head = HeadSeconds(b, &gather);
    return layer + projection + head + gather;
}

// QK^T and AV: 2 d FLOPs each per query-key pair and head (the training graph's causal-attention convention;
// MLA's prefill: d_nope + d_rope for QK^T, d_v for AV; its absorbed decode: kvl + d_rope and kvl).
double IterationCost::PrefillAttentionFlops(const BatchShape& b) const {
    if (m_.is_mla())
        return 2 * b.prefill_pairs * heads_rank_ *
               (m_.mla.qk_nope_head_dim + m_.mla.qk_rope_head_dim + m_.mla.v_head_dim);
    return 2 * b.prefill_pairs * 2 * m_.head_dim * heads_rank_;
}
double IterationCost::DecodeAttentionFlops(const BatchShape& b) const {
    if (m_.is_mla()) return 2 * b.decode_keys * heads_rank_ * (2.0 * m_.mla.kv_lora_rank + m_.mla.qk_rope_head_dim);
    return 2 * b.decode_keys * 2 * m_.head_dim * heads_rank_;
}

IterationWork IterationCost::Work(const BatchShape& group) const {
    IterationWork w;
    const BatchShape b = RankShare(group);
    double up_flops = 0;
    MlaUpSeconds(b, &up_flops);
    w.linear_flops = TokenCosts(RankTokens(b)).linear_flops + m_.layers * up_flops;
    if (dp_ > 1) w.linear_flops += m_.moe_layers() * RoutedExperts(group.tokens()).flops;
    double scan_flops = 0;
    MambaScanPerLayer(b, &scan_flops);
    w.attention_flops = AttentionFlops(b) + kinds_.mamba * scan_flops;
    return w;
}

double IterationCost::PrefillSeconds(int prompt) const {
    BatchShape b;
    b.AddPrefillChunk(0, prompt, m_.window);
    b.logits = 1;
    return Seconds(b);
}

double IterationCost::DecodeSeconds(int context) const {
    BatchShape b;
    b.AddDecode(context, m_.window);
    b.logits = 1;
    return Seconds(b);
}

}  // namespace sc
