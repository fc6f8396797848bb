#include "parallel/job.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "config/error.h"
#include "config/numbers.h"
#include "config/quantization.h"

#include "graph/model_stats.h"
#include "graph/transformer_graph.h"
#include "parallel/memory.h"
#include "parallel/schedule.h"

namespace sc {

// Every FLOP and byte count of a trace node fits int64 with room to spare, and the summary's sums stay positive,
// when one microbatch's training FLOPs F are at most kMaxFlopsPerMicrobatch (2^61) and the model holds at most
// kMaxParams (2^56) weights. A compute node is a per-rank share of one op, so its num_ops is at most F; its
// tensor_size is at most ~3 F (the widest pass per token, fp32 logits read and written, against the LM head's
// 6 h V FLOPs per token); the optimizer node moves at most 32 bytes per weight, 2^61. Pinned near the limits by
// TraceCounts.NearTheLimitsEveryCountIsAPositiveInt64 and TraceCounts.TheWeightLimitKeepsTheOptimizerNodeInRange.
static void CheckMicrobatchFlops(const ModelConfig& m, const ParallelConfig& p, double flops_per_token) {
    const double flops = flops_per_token * m.seq * p.microbatch;
    if (flops <= kMaxFlopsPerMicrobatch) return;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g training FLOPs; at most 2^61 = %.3g", flops, kMaxFlopsPerMicrobatch);
    throw Error(p.microbatch > 1 ? "microbatch" : "seq", "one microbatch of " + std::to_string(p.microbatch) + " x " +
                                                             std::to_string(m.seq) + " tokens of " + m.name + " is " +
                                                             buf + " (use a smaller microbatch or seq)");
}

static void CheckParams(const ModelConfig& m, double params) {
    if (params <= kMaxParams) return;
    char buf[96];
    std::snprintf(buf, sizeof buf, " holds %.3g weights; at most 2^56 = %.3g", params, kMaxParams);
    throw Error("layers", m.name + buf + " (use fewer layers or a smaller hidden size)");
}

void Rebind(Job& job, const ParallelConfig& p) {
    ValidateParallel(job.model, p);
    if (job.model_flops_per_token > 0) CheckMicrobatchFlops(job.model, p, job.model_flops_per_token);
    job.par = p;
    SymbolValues sv;
    sv.microbatch = p.microbatch;
    sv.tp = p.tp;
    sv.cp = p.cp;
    sv.ep = p.ep;
    sv.deepep_dispatch = job.graph.kernels.deepep_dispatch;
    Binding b = BindSymbols(job.model, sv);
    job.padded_vocab = std::ceil(static_cast<double>(job.model.vocab) / p.tp) * p.tp;
    b[static_cast<size_t>(Sym::V)] = job.padded_vocab;
    job.graph.pool.EvalAll(b, job.values);
    for (const Block& blk : job.graph.blocks) {
        BlockSums& t = (blk.bf16 ? job.bf16_sums : job.sums)[static_cast<int>(blk.kind)];
        t = BlockSums{};
        for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full, Recompute::op})
            t.saved[static_cast<int>(rc)] = SavedActivationBytes(job, blk, rc);
        for (const Weight& w : blk.weights)
            (w.tied ? (w.expert ? t.tied_expert : t.tied_dense) : (w.expert ? t.expert : t.dense)) +=
                job.V(w.numel_per_rank);
    }
}

Job MakeJob(const ModelConfig& m, const ParallelConfig& p, const KernelChoices& kernels) {
    ValidateModelConfig(m);
    ValidateParallel(m, p);
    Job job;
    job.model = m;
    const ModelStats stats = ComputeModelStats(m);
    CheckParams(m, stats.params);
    job.model_flops_per_token = stats.model_flops_per_token();
    job.graph = BuildTransformerGraph(m, GraphOptions{p.sp, p.etp > 1, kernels});
    Rebind(job, p);
    return job;
}

double RecomputeShare(const Job& job, const Op& op) {
    switch (job.par.recompute) {
        case Recompute::none: return 0;
        case Recompute::selective: return op.rerun_modules & job.par.selective_modules() ? 1 : 0;
        case Recompute::full: return 1;
        case Recompute::op: return job.V(op.sac_rerun);
    }
    return 0;
}

double RecomputeShareIn(const Job& job, bool layer, const Op& op) {
    if (layer) return RecomputeShare(job, op);
    // An MTP module's part: whole under full recomputation, its layer's selected modules under selective; not
    // torchtitan's op-level policy, which wraps the layers of the schedule only.
    if (!op.mtp_rerun || job.par.recompute == Recompute::op) return 0;
    return RecomputeShare(job, op);
}

double HeldParams(const Job& job, const Weight& w) {
    if (w.tied && job.par.head_on_first_rank()) return 0;
    return job.V(w.numel_per_rank);
}

double Fp8WeightCastBytesPerParam(const Job& job) {
    return QuantizationBytesOf(job.model.precision.compute, job.model.precision.scaling).weight;
}

double Fp8GemmWeightParams(const Job& job, const Block& b) {
    if (BytesOf(job.model.precision.compute) >= 2) return 0;  // the graph's q8: GEMMs in fp8 (or narrower)
    double n = 0;
    for (const Weight& w : b.weights)
        for (const Op& op : b.forward)
            if (op.kind == OpKind::matmul && !op.high_precision &&
                (op.name == w.name || op.name.rfind(w.name + ".", 0) == 0)) {
                n += HeldParams(job, w);
                break;
            }
    return n;
}

// The BF16 layers among layers [first, first + count): at most the model's first and last few, so this walk stays
// short.
static void CountBf16Layers(const Job& job, int first, int count, int* by_kind) {
    if (!job.model.has_bf16_layers()) return;
    const PrecisionConfig& q = job.model.precision;
    const int end = first + count;
    auto walk = [&](int from, int to) {
        for (int l = std::max(from, first); l < std::min(to, end); ++l)
            ++by_kind[static_cast<int>(LayerBlockKind(job, l))];
    };
    const int last_from = std::max(q.bf16_first_layers, job.model.layers - q.bf16_last_layers);
    walk(0, q.bf16_first_layers);
    walk(last_from, job.model.layers);
}

StageBlockCounts BlockCountsOfVstage(const Job& job, int g) {
    StageBlockCounts c;
    c.embedding = g == 0;
    c.head = g == job.total_vstages() - 1;
    LayerRange r = LayersOfVirtualStage(job.par, job.model.layers, g);
    c.first_layer = r.first;
    // MoE layers follow the leading dense ones, every one or every n-th (ModelConfig::moe_layer).
    const ModelConfig::LayerKinds k = job.model.graph_layer_kinds(r.first, r.count);
    c.dense = k.dense;
    c.dense_window = k.dense_window;
    c.moe = k.moe;
    c.moe_window = k.moe_window;
    c.mamba = k.mamba, c.attention = k.attention, c.mlp = k.mlp, c.moe_mlp = k.moe_mlp;
    CountBf16Layers(job, r.first, r.count, c.bf16);
    // Full recomputation's block method: the chunk's layers after its first recompute_layers keep their activations.
    const int n = job.par.recompute_layers;
    if (job.par.recompute == Recompute::full && n > 0 && r.count > n) {
        const ModelConfig::LayerKinds kk = job.model.graph_layer_kinds(r.first + n, r.count - n);
        c.kept[static_cast<int>(BlockKind::dense_layer)] = kk.dense;
        c.kept[static_cast<int>(BlockKind::dense_window_layer)] = kk.dense_window;
        c.kept[static_cast<int>(BlockKind::moe_layer)] = kk.moe;
        c.kept[static_cast<int>(BlockKind::moe_window_layer)] = kk.moe_window;
        c.kept[static_cast<int>(BlockKind::mamba_layer)] = kk.mamba;
        c.kept[static_cast<int>(BlockKind::attention_layer)] = kk.attention;
        c.kept[static_cast<int>(BlockKind::mlp_layer)] = kk.mlp;
        c.kept[static_cast<int>(BlockKind::moe_mlp_layer)] = kk.moe_mlp;
        CountBf16Layers(job, r.first + n, r.count - n, c.kept_bf16);
    }
    return c;
}

BlockKind LayerBlockKind(const Job& job, int l) {
    const ModelConfig& m = job.model;
    if (m.is_hybrid()) switch (m.hybrid[static_cast<size_t>(l)]) {
            case 'M': return BlockKind::mamba_layer;
            case '*': return BlockKind::attention_layer;
            case '-': return BlockKind::mlp_layer;
            default: return BlockKind::moe_mlp_layer;
        }
    // Windowed kinds exist in the graph only where a window is shorter than the sequence.
    const bool windowed = m.graph_windowed_layers(l, 1) > 0;
    if (m.moe_layer(l)) return windowed ? BlockKind::moe_window_layer : BlockKind::moe_layer;
    return windowed ? BlockKind::dense_window_layer : BlockKind::dense_layer;
}

std::vector<StageBlock> BlocksOfVstage(const Job& job, int g) {
    const Graph& gr = job.graph;
    StageBlockCounts c = BlockCountsOfVstage(job, g);
    std::vector<StageBlock> out;
    out.reserve(c.layers() + 2);
    if (c.embedding) out.push_back({gr.Find(BlockKind::embedding), -1});
    for (int l = c.first_layer; l < c.first_layer + c.layers(); ++l)
        out.push_back(
            {job.model.bf16_layer(l) ? gr.FindBf16(LayerBlockKind(job, l)) : gr.Find(LayerBlockKind(job, l)), l});
    if (c.head) out.push_back({gr.Find(BlockKind::head), -1});
    return out;
}

}  // namespace sc
