#include "training/estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>

#include "config/error.h"
#include "graph/flop_conventions.h"
#include "parallel/offload_schedule.h"
#include "parallel/schedule.h"
#include "trace/stage_program.h"
#include "training/comm_model.h"
#include "training/comm_sms.h"
#include "training/compute_model.h"
#include "training/fp8_overheads.h"
#include "training/kernel_floor.h"
#include "training/pair_windows.h"
#include "training/pipeline_replay.h"
#include "training/power_cap.h"

namespace sc {

namespace {

enum CommSlot { kSlotTp, kSlotCp, kSlotEp, kSlots };

// Parts of the kernels' time that the breakdown names apart from compute and recompute (StepBreakdown).
enum KernelPart { kPartFixed, kPartFp8, kPartMoeRouting, kKernelParts };

// The part a graph op's roofline time belongs to, by its name (graph/transformer_builder.h's blocks), or -1 for
// compute: the fp8 casts Builder::Matmul adds before a GEMM and before its input gradient, and the MoE layer's
// router, top-k, permute / sort / unsort and weighted combine (Megatron-Core token_dispatcher.py
// MoEAlltoAllTokenDispatcher, moe_utils.py permute / unpermute, which also applies the routing probabilities) with
// their backward ops.
int KernelPartOf(const Op& op) {
    // Called for every op of every block at every estimate (a sweep's hot path): views, no string built.
    const std::string_view name = op.name;
    if (name.ends_with(".fp8_input") || name.ends_with(".fp8_grad_cast")) return kPartFp8;
    for (std::string_view routing :
         {"moe.router", "moe.topk", "moe.permute", "moe.sort_chunks", "moe.unsort_chunks", "moe.weighted_sum"})
        if (name.starts_with(routing)) return kPartMoeRouting;
    return -1;
}

// A weight an fp8 GEMM reads: some matmul of the block not kept in 16 bits is named after it ("attn.qkv",
// "mlp" for "mlp.fc1" and "mlp.fc2", "moe.experts" ...); norms, embeddings, the LM head and the router are not.
// One block's cost for one microbatch on one rank.
struct BlockTime {
    double fwd = 0, bwd = 0, rec = 0;    // compute seconds
    double matmul = 0;                   // of which GEMMs (what TP overlap hides behind)
    double sm_loss = 0;                  // of fwd + bwd + rec: GEMM time lost to TP-overlap kernels' SMs
    double wgrad = 0;                    // of bwd: weight-gradient GEMMs (W of zbh1)
    double part[kKernelParts] = {};      // of fwd + bwd: the named parts (KernelPart)
    double part_rec[kKernelParts] = {};  // of rec
    double fwd_comm[kSlots] = {}, bwd_comm[kSlots] = {}, rec_comm[kSlots] = {};
    double flops = 0;                            // executed FLOPs (fwd + bwd + rec)
    double dense_params = 0, expert_params = 0;  // held by this rank
    // One quantization of the block's fp8 GEMM weights (fp8_overheads.h), the trace's `fp8_weight_quant` node:
    // its roofline and its kernel's fixed cost beyond it. Per step, not per microbatch.
    double fp8_quant = 0, fp8_quant_fixed = 0;
    // The MoE all-to-all a forward of this block hides beside a backward of another block of its kind when the
    // schedule runs them as a pair (PairedAllToAllOverlap), window by window (PairWindows).
    double pair_hidden = 0;
    double comm(CommSlot s) const { return fwd_comm[s] + bwd_comm[s] + rec_comm[s]; }
};

// `ub`: the userbuffers configuration when the TP overlap runs on Transformer Engine's userbuffers, else nullptr.
// `floor`: the measured per-kernel fixed cost (alpha_s = 0: none measured for this accelerator). Every
// non-collective op of the graph is one kernel and pays max(roofline, alpha + bytes / HBM bandwidth), as the
// serving model's kernels do; fused kernels are one op of the graph (the fused attention core forward and
// backward, a LayerNorm writing fp8 beside its output, the grouped expert GEMM).
// `recomputes`: whether this block recomputes in the backward under the job's recomputation (a layer after the first
// recompute_layers of its chunk does not, ParallelConfig::recompute_layers).
BlockTime TimeBlock(const Job& job, const Block& b, const ComputeModel& cm, const CommModel& net,
                    const UserbufferConfig* ub, const KernelFloor& floor, bool recomputes = true) {
    BlockTime t;
    const Recompute rc = recomputes ? job.par.recompute : Recompute::none;
    const bool layer = IsLayer(b.kind);
    const bool windowed = b.kind == BlockKind::dense_window_layer || b.kind == BlockKind::moe_window_layer;
    auto slot_of = [](const Op& op) {
        return op.group == Group::tp ? kSlotTp : op.group == Group::cp ? kSlotCp : kSlotEp;
    };
    auto comm_seconds = [&](const Op& op) {
        return net.Seconds(ToChakra(op.collective), ToGroupKind(op.group), job.V(op.comm_bytes));
    };
    // Userbuffers runs some of its kernels on SMs beside the GEMMs; without the SM margin they share them for one
    // TP collective's time.
    const double tp_collective = ub ? LargestTpCollectiveSeconds(job, b, net) : 0;
    // `share`: the part of the op that runs (op-level checkpointing re-runs some of a fused GEMM's torch.mm calls).
    auto run = [&](const Op& op, double& compute, double* comm, bool forward, double share = 1.0) {
        double* part = &compute == &t.rec ? t.part_rec : t.part;
        if (op.kind == OpKind::collective) {
            comm[slot_of(op)] += share * comm_seconds(op);
        } else {
            const double flops = share * job.V(op.flops), bytes = share * job.V(op.bytes);
            double s = cm.Seconds(op.kind, flops, bytes, forward, job.V(op.groups), op.high_precision, windowed,
                                  GemmDimsOf(job, op, share));
            const double fixed = KernelFloorExcess(floor, s, flops, bytes, cm.memory_bytes_per_s());
            if (op.kind == OpKind::matmul) t.matmul += s;  // the GEMMs' own time: what TP traffic can hide behind
            if (const int p = KernelPartOf(op); p >= 0) part[p] += s;
            part[kPartFixed] += fixed;
            if (const UserbufferOverlap* o = ub ? UserbufferOverlapOf(op, *ub) : nullptr) {
                const double lost = CommSmSeconds(s, tp_collective, *o, cm.sm_count());
                t.sm_loss += lost;
                s += lost;  // a weight-gradient GEMM deferred by a zero-bubble schedule keeps its loss
            }
            s += fixed;
            compute += s;
            if (op.weight_grad) t.wgrad += s;
            t.flops += flops;
        }
    };
    PairWindows pair;
    // An async collective runs beside the next op (context parallelism's ring beside the attention core), in the
    // forward and in its recomputation alike: only what that op does not cover is exposed.
    const Op* fwd_async = nullptr;
    double rec_async_share = 0;
    for (const Op& op : b.forward) {
        if (op.async) {
            fwd_async = &op;
            rec_async_share = rc != Recompute::none ? RecomputeShareIn(job, layer, op) : 0;
            continue;
        }
        const double before = t.fwd, rec_before = t.rec;
        run(op, t.fwd, t.fwd_comm, true);
        if (fwd_async) t.fwd_comm[slot_of(*fwd_async)] += std::max(0.0, comm_seconds(*fwd_async) - (t.fwd - before));
        if (op.expert_all_to_all()) {
            if (pair.fwd_seen < 2) pair.fwd_a2a[pair.fwd_seen] = comm_seconds(op);
            ++pair.fwd_seen;
        } else {
            pair.fwd_compute[std::min(pair.fwd_seen, 2)] += t.fwd - before;
        }
        if (rc != Recompute::none)
            if (const double share = RecomputeShareIn(job, layer, op); share > 0)
                run(op, t.rec, t.rec_comm, true, share);
        if (fwd_async && rec_async_share > 0)
            t.rec_comm[slot_of(*fwd_async)] +=
                std::max(0.0, rec_async_share * comm_seconds(*fwd_async) - (t.rec - rec_before));
        fwd_async = nullptr;
    }
    // An async collective runs beside the next op: only what that op does not cover is exposed.
    const Op* async = nullptr;
    for (const Op& op : b.backward) {
        if (op.async) {
            async = &op;
            continue;
        }
        const double before = t.bwd;
        run(op, t.bwd, t.bwd_comm, false);
        if (async) t.bwd_comm[slot_of(*async)] += std::max(0.0, comm_seconds(*async) - (t.bwd - before));
        async = nullptr;
        if (op.expert_all_to_all()) {
            if (pair.bwd_seen < 2) pair.bwd_a2a[pair.bwd_seen] = comm_seconds(op);
            ++pair.bwd_seen;
        } else {
            pair.bwd_compute[std::min(pair.bwd_seen, 2)] += t.bwd - before;
            if (op.weight_grad) pair.bwd_wgrad[std::min(pair.bwd_seen, 2)] += t.bwd - before;
        }
    }
    t.pair_hidden = pair.Hidden();
    for (const Weight& w : b.weights) (w.expert ? t.expert_params : t.dense_params) += HeldParams(job, w);
    if (const double n = Fp8GemmWeightParams(job, b); n > 0) {
        const double bytes = n * Fp8WeightCastBytesPerParam(job);
        t.fp8_quant = cm.Seconds(OpKind::elementwise, n, bytes, true);
        t.fp8_quant_fixed = KernelFloorExcess(floor, t.fp8_quant, n, bytes, cm.memory_bytes_per_s());
    }
    if (!job.graph.kernels.grad_accumulation_fusion) {
        // The trace's `grad_accum` node after the block's backward (KernelChoices): an add per held parameter.
        // It follows the weight gradients, so a split backward (zbh1) runs it in its weight half.
        const double n = t.dense_params + t.expert_params,
                     bytes = n * GradAccumulationBytesPerParam(job.model.precision);
        const double s = cm.Seconds(OpKind::elementwise, n, bytes);
        const double fixed = KernelFloorExcess(floor, s, n, bytes, cm.memory_bytes_per_s());
        t.part[kPartFixed] += fixed;
        t.bwd += s + fixed;
        t.wgrad += s + fixed;
    }
    return t;
}

std::string GiB(double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    return buf;
}

// ---- Phase 1: block times. Each block kind is timed once; every layer of a kind costs the same. ----

struct BlockKindTimes {
    // By BlockKind; zero for a kind the model does not have. bf16: each layer kind's BF16 twin (Block::bf16), zero
    // unless the model keeps layers in BF16. kept, kept_bf16: the same kinds without recomputation, for the layers
    // full recomputation's block method leaves alone (ParallelConfig::recompute_layers); zero when it is not used.
    BlockTime of[kBlockKinds], bf16[kBlockKinds], kept[kBlockKinds], kept_bf16[kBlockKinds];
};

BlockKindTimes TimeBlockKinds(const Job& job, const ComputeModel& cm, const CommModel& net, const UserbufferConfig* ub,
                              const KernelFloor& floor) {
    BlockKindTimes t;
    const bool block_method = job.par.recompute == Recompute::full && job.par.recompute_layers > 0;
    for (const Block& b : job.graph.blocks) {
        const int k = static_cast<int>(b.kind);
        (b.bf16 ? t.bf16 : t.of)[k] = TimeBlock(job, b, cm, net, ub, floor);
        if (block_method && IsLayer(b.kind))
            (b.bf16 ? t.kept_bf16 : t.kept)[k] = TimeBlock(job, b, cm, net, ub, floor, false);
    }
    return t;
}

// Exposed TP communication of one block. Without overlap all of it. With overlap (collective split into tp
// chunks pipelined with the GEMMs of the block): one chunk, or whatever the GEMMs cannot cover.
double TpExposed(const BlockTime& b, const TrainingOptions& opt, int tp) {
    double c = b.comm(kSlotTp);
    if (!opt.overlap_tp || c <= 0) return c;
    if (opt.overlap_tp_fraction > 0) return c * (1 - std::min(1.0, opt.overlap_tp_fraction));
    return std::max(c / tp, c - b.matmul);
}

// ZeRO-3/FSDP: two gathers (forward, backward) and one gradient scatter per block and microbatch, prefetched
// behind the block's compute when overlapping. Per block kind, since it depends only on it.
double Zero3Seconds(const BlockTime& b, const Job& job, const CommModel& net, bool bf16) {
    if (job.par.zero < 3) return 0.0;
    const double w = WeightBytesOf(job.model.precision, bf16), g = BytesOf(job.model.precision.grad);
    return 2 * net.Seconds(CollectiveType::all_gather, GroupKind::dp, b.dense_params * w) +
           2 * net.Seconds(CollectiveType::all_gather, GroupKind::edp, b.expert_params * w) +
           net.Seconds(CollectiveType::reduce_scatter, GroupKind::dp, b.dense_params * g) +
           net.Seconds(CollectiveType::reduce_scatter, GroupKind::edp, b.expert_params * g);
}

// ---- Phase 2: stage sums, one microbatch of each pipeline stage (all its virtual stages). ----

struct StageCost {
    double fwd = 0, bwd = 0, rec = 0, wgrad = 0, comm[kSlots] = {}, flops = 0;
    double sm_loss = 0;                                           // of fwd + bwd + rec
    double part[kKernelParts] = {}, part_rec[kKernelParts] = {};  // of fwd + bwd, of rec
    double dense_params = 0, expert_params = 0;
    double dense_weight_bytes = 0, expert_weight_bytes = 0;  // of those parameters, each in its layer's precision
    double fp8_quant = 0, fp8_quant_fixed = 0;               // one quantization of the stage's fp8 GEMM weights
    double zero3_exposed = 0;                                // per microbatch
    double zero3_hidden = 0;                                 // per microbatch: the ZeRO-3 traffic behind the compute
    double pair_hidden = 0;                                  // per microbatch: BlockTime::pair_hidden of its blocks
    int layers = 0;
    double work() const { return fwd + bwd + rec + comm[kSlotTp] + comm[kSlotCp] + comm[kSlotEp]; }
    double work_with_zero3() const { return work() + zero3_exposed; }
};

// Of that traffic, per microbatch: what the block's compute cannot cover, and what hides behind it (what its
// kernels' SMs slow, dp_comm_sms).
struct Zero3Part {
    double exposed = 0, hidden = 0;
};
Zero3Part Zero3Of(const BlockTime& b, const Job& job, const CommModel& net, const TrainingOptions& opt, bool bf16) {
    const double t = Zero3Seconds(b, job, net, bf16), hide = opt.overlap_dp ? b.fwd + b.bwd + b.rec : 0;
    return {std::max(0.0, t - hide), std::min(t, hide)};
}

void AddBlocks(StageCost& c, const BlockTime& b, double tp_exposed, Zero3Part zero3, int n, double weight_bytes) {
    if (n <= 0) return;
    c.dense_weight_bytes += n * b.dense_params * weight_bytes,
        c.expert_weight_bytes += n * b.expert_params * weight_bytes;
    c.fwd += n * b.fwd, c.bwd += n * b.bwd, c.rec += n * b.rec, c.wgrad += n * b.wgrad, c.flops += n * b.flops;
    c.sm_loss += n * b.sm_loss;
    for (int k = 0; k < kKernelParts; ++k) c.part[k] += n * b.part[k], c.part_rec[k] += n * b.part_rec[k];
    c.comm[kSlotTp] += n * tp_exposed;
    c.comm[kSlotCp] += n * b.comm(kSlotCp);
    c.comm[kSlotEp] += n * b.comm(kSlotEp);
    c.dense_params += n * b.dense_params, c.expert_params += n * b.expert_params;
    c.fp8_quant += n * b.fp8_quant, c.fp8_quant_fixed += n * b.fp8_quant_fixed;
    c.zero3_exposed += n * zero3.exposed;
    c.zero3_hidden += n * zero3.hidden;
    c.pair_hidden += n * b.pair_hidden;
}

// Stage sums from block counts (every layer of a kind costs the same): no per-layer walk, so an estimate costs
// the same for 4 layers or 126.
// `chunks`, when given: the same sums per chunk, [stage * active_vstages() + chunk] (what a replayed schedule times).
std::vector<StageCost> SumStages(const Job& job, const BlockKindTimes& t, const CommModel& net,
                                 const TrainingOptions& opt, std::vector<StageCost>* chunks = nullptr) {
    const ParallelConfig& p = job.par;
    struct Kind {
        const BlockTime* time;
        double tp_exposed;
        Zero3Part zero3;
    };
    Kind kinds[kBlockKinds], bf16[kBlockKinds], kept[kBlockKinds], kept_bf16[kBlockKinds];
    const double w = WeightBytesOf(job.model.precision, false), w16 = WeightBytesOf(job.model.precision, true);
    for (int k = 0; k < kBlockKinds; ++k) {
        kinds[k] = {&t.of[k], TpExposed(t.of[k], opt, p.tp), Zero3Of(t.of[k], job, net, opt, false)};
        bf16[k] = {&t.bf16[k], TpExposed(t.bf16[k], opt, p.tp), Zero3Of(t.bf16[k], job, net, opt, true)};
        kept[k] = {&t.kept[k], TpExposed(t.kept[k], opt, p.tp), Zero3Of(t.kept[k], job, net, opt, false)};
        kept_bf16[k] = {&t.kept_bf16[k], TpExposed(t.kept_bf16[k], opt, p.tp),
                        Zero3Of(t.kept_bf16[k], job, net, opt, true)};
    }
    auto add_position = [&](StageCost& c, int position) {
        const StageBlockCounts n = BlockCountsOfVstage(job, position);
        for (BlockKind kind : kStageBlockOrder) {
            // Of each kind: the layers that recompute (all, unless the block method keeps some), then the kept ones.
            const int k = static_cast<int>(kind), narrow = n.of(kind) - n.bf16[k];
            const int narrow_kept = n.kept[k] - n.kept_bf16[k];
            AddBlocks(c, *kinds[k].time, kinds[k].tp_exposed, kinds[k].zero3, narrow - narrow_kept, w);
            AddBlocks(c, *bf16[k].time, bf16[k].tp_exposed, bf16[k].zero3, n.bf16[k] - n.kept_bf16[k], w16);
            AddBlocks(c, *kept[k].time, kept[k].tp_exposed, kept[k].zero3, narrow_kept, w);
            AddBlocks(c, *kept_bf16[k].time, kept_bf16[k].tp_exposed, kept_bf16[k].zero3, n.kept_bf16[k], w16);
        }
        c.layers += n.layers();
    };
    const int V = p.active_vstages();
    std::vector<StageCost> stages(p.pp);
    if (chunks) chunks->assign(static_cast<size_t>(p.pp) * V, StageCost{});
    for (int s = 0; s < p.pp; ++s)
        for (int ch = 0; ch < V; ++ch) {
            add_position(stages[s], PositionOf(p, ch, s));
            if (chunks) add_position((*chunks)[static_cast<size_t>(s) * V + ch], PositionOf(p, ch, s));
        }
    return stages;
}

// The stage whose microbatch takes longest (the first of equals): the pipeline runs at its pace.
int BottleneckStage(const std::vector<StageCost>& stages) {
    int bneck = 0;
    for (int s = 0; s < static_cast<int>(stages.size()); ++s)
        if (stages[s].work_with_zero3() > stages[bneck].work_with_zero3()) bneck = s;
    return bneck;
}

// ---- Phase 3: pipeline terms: M microbatches at the pace of the slowest stage, plus fill and drain. ----

// How often a rank runs all of its chunks in a step (a StageCost holds one microbatch through each chunk):
// every microbatch passes through every chunk of a rank, except under DualPipe, where each microbatch passes
// through one of a rank's two chunks (the one of its direction).
double RoundsPerStep(const ParallelConfig& p) {
    return p.schedule == Schedule::dualpipe ? p.microbatches() / 2.0 : p.microbatches();
}

// Overlapped pairs of a forward and a backward of different microbatches: DualPipe's F&B (DeepSeek-V3 report Sec.
// 3.2.1) and Megatron-Core's combined 1F1B (a2a_overlap). The MoE all-to-all of each runs beside the compute of the
// other ("both all-to-all and PP communication can be fully hidden"; combined_1f1b.py: "EP A2A in forward step is
// hidden by the attention/mlp computation in the backward step, and vice versa"), each all-to-all up to the compute
// piece of its window (PairWindows): an all-to-all longer than the attention or the experts beside it stays partly
// exposed.
// The communication kernels run on SMs of their own, which the compute beside them loses while they run
// (CommSmSeconds without margin): DualPipe's 20 of H800's 132 (Sec. 3.2.2, "only 20 SMs are sufficient to fully
// utilize the bandwidths of IB and NVLink"); DeepEP's 20 under the flex dispatcher (deep_ep.Buffer.num_sms, Megatron-
// Core's moe_deepep_num_sms default); NCCL's all-to-all its CTAs (Accelerator::collective_ctas), as any NCCL
// collective overlapped.
struct PairOverlap {
    double ep_hidden = 0;  // per step
    double sm_loss = 0;    // per step
};
constexpr int kDualPipeCommSms = 20;
constexpr int kDeepEpCommSms = 20;

PairOverlap PairedAllToAllOverlap(const Job& job, const StageCost& b, int stage, const Accelerator& acc) {
    const ParallelConfig& p = job.par;
    PairOverlap o;
    if (!PairsChunks(p)) return o;
    int paired = 0;  // forwards run as half of an F&B pair on this stage
    ForEachPipelineStep(p, stage, [&](const PipelineStep& st) { paired += st.paired ? 1 : 0; });
    // b holds one forward and one backward of each of the rank's chunks; a pair is one chunk's worth.
    const double chunks = p.active_vstages();
    const double compute = (b.fwd + b.bwd + b.rec) / chunks, hidden = b.pair_hidden / chunks;
    o.ep_hidden = paired * hidden;
    if (p.a2a_overlap && !job.graph.kernels.deepep_dispatch) {
        o.sm_loss = CollectiveSmSeconds(paired * compute, paired * hidden, acc);
    } else {
        const int sms = p.a2a_overlap ? kDeepEpCommSms : kDualPipeCommSms;
        o.sm_loss = paired * CommSmSeconds(compute, hidden, UserbufferOverlap{sms, false}, acc.sm_count);
    }
    return o;
}

// Schedules without a closed form that holds: a V (ZB-V, DualPipeV), whose rank 0 holds both the embedding and the
// loss, and DualPipe, whose ends hold both. DeepSeek's (pp/2-1)(F&B + B - 3W) (DualPipe, V3 report Table 2; and for
// DualPipeV's 2pp stages, (pp-1)(...)) is a tenth above the replay of their traces, and ASTRA-sim's replay of the
// traces of Llama 3 8B at tp=2 pp=4 dp=2 on 16 H100 took 0.839 s (DualPipe) and 0.952 s (DualPipeV) against
// 0.871 s and 1.026 s with it, 0.818 s and 0.932 s with the replay (tests/astra/README.md).
// interleaved_zb: PyTorch's order has no published closed form either.
bool ReplaysBubble(const ParallelConfig& p) {
    return p.pp > 1 && (p.v_shape() || p.schedule == Schedule::dualpipe || p.schedule == Schedule::interleaved_zb);
}

// Each chunk's times for a replay of the steps (training/pipeline_replay.h): a chunk's exposed communication goes
// with its compute, shared in proportion. Under DualPipe and DualPipeV a forward and a backward that run as a pair
// (PairedAllToAllOverlap) each run without the MoE all-to-all the other's compute hides, as the paper's F&B counts a pair;
// the warm-up and cool-down steps outside pairs, most of fill and drain, run with theirs.
std::vector<ChunkTimes> ChunkTimesOf(const ParallelConfig& p, const std::vector<StageCost>& chunks) {
    const bool pairs = PairsChunks(p);
    std::vector<ChunkTimes> times(chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i) {
        const StageCost& c = chunks[i];
        const double compute = c.fwd + c.bwd + c.rec;
        const double hidden = pairs ? c.pair_hidden : 0;
        const double k = compute > 0 ? c.work_with_zero3() / compute : 0;
        const double k_pair = compute > 0 ? (c.work_with_zero3() - hidden) / compute : 0;
        times[i] = {k * c.fwd, k * (c.bwd + c.rec - c.wgrad), k * c.wgrad, k_pair * c.fwd, k_pair * (c.bwd + c.rec)};
    }
    return times;
}

// The replay runs min(M, 4 pp) microbatches: by then fill and drain are over, and with more the bubble moves by
// under 1% of a chunk's work (PipelineReplay.TheBubbleStaysAsMicrobatchesGrow, tests/native/test_schedule_zbv.cpp).
ParallelConfig ReplayedPart(ParallelConfig p) {
    p.batch = std::min(p.microbatches(), 4 * p.pp) * p.microbatch * p.dp;
    return p;
}

// The bubble of those schedules: what the replay of their steps with each chunk's time takes beyond the bottleneck
// rank's own steps.
double ReplayedBubble(const Job& job, int bneck, const std::vector<StageCost>& chunks) {
    const PipelineReplayTimes r = ReplayPipelineTimes(ReplayedPart(job.par), ChunkTimesOf(job.par, chunks));
    return std::max(0.0, r.end - r.busy[static_cast<size_t>(bneck)]);
}

void AddPipelineTerms(const Job& job, const std::vector<StageCost>& stages, const std::vector<StageCost>& chunks,
                      int bneck, const CommModel& net, const TrainingOptions& opt, const Accelerator& acc,
                      StepBreakdown& br) {
    const ParallelConfig& p = job.par;
    const int V = p.active_vstages();
    const double R = RoundsPerStep(p);
    const StageCost& b = stages[bneck];
    br.compute = R * (b.fwd + b.bwd);
    br.recompute = R * b.rec;
    // The named parts leave compute and recompute, so the breakdown still sums to the step.
    double* parts[kKernelParts] = {&br.kernel_fixed, &br.fp8_cast, &br.moe_routing};
    for (int k = 0; k < kKernelParts; ++k) {
        *parts[k] = R * (b.part[k] + b.part_rec[k]);
        br.compute -= R * b.part[k];
        br.recompute -= R * b.part_rec[k];
    }
    br.comm_sms = R * b.sm_loss;
    br.tp_comm = R * b.comm[kSlotTp];
    br.cp_comm = R * b.comm[kSlotCp];
    br.ep_comm = R * b.comm[kSlotEp];
    br.dp_comm = R * b.zero3_exposed;
    // ZeRO-3's gathers and scatters hidden behind the compute hold SMs meanwhile.
    br.dp_comm_sms = CollectiveSmSeconds(R * (b.fwd + b.bwd + b.rec), R * b.zero3_hidden, acc);
    br.compute += br.dp_comm_sms;
    const PairOverlap pair = PairedAllToAllOverlap(job, b, bneck, acc);
    br.ep_comm -= pair.ep_hidden;
    br.ep_hidden = pair.ep_hidden;
    br.compute += pair.sm_loss;  // comm_sms is part of compute: charged, not only shown
    br.comm_sms += pair.sm_loss;
    // Bubble (Narayanan et al. 2021: (pp-1)/v of one microbatch's work for 1F1B and GPipe alike): the first
    // microbatch's forward and the last one's backward cross every stage once, so fill plus drain is the
    // sum over stages of one microbatch's work less the bottleneck's own, over the v chunks. For equal stages
    // this is the paper's (pp-1)/v * t; stages made longer by the embedding or the LM head add their excess.
    double sum_stage = 0;
    for (const StageCost& c : stages) sum_stage += c.work_with_zero3();
    br.bubble = (sum_stage - b.work_with_zero3()) / V;
    if (SplitsBackward(p)) {
        // ZB-H1 (Qi et al. 2024, Sec. 3.1): the drain runs the deferred weight halves, so fill and drain cost
        // (pp-1)(F + B - W) instead of 1F1B's (pp-1)(F + B + W), B the input half: two W's fewer per stage.
        double w_others = 0;
        for (int s = 0; s < p.pp; ++s)
            if (s != bneck) w_others += stages[s].wgrad;
        br.bubble = std::max(0.0, br.bubble - 2 * w_others);
    }
    if (ReplaysBubble(p)) br.bubble = ReplayedBubble(job, bneck, chunks);
    if (p.pp > 1) {
        double act = job.V(job.graph.FirstLayer()->boundary_bytes);
        double t = net.P2PSeconds(act);
        if (job.graph.kernels.pp_scatter_gather && !p.sp && p.tp > 1)
            t = net.P2PSeconds(act / p.tp) + net.Seconds(CollectiveType::all_gather, GroupKind::tp, act);
        // Overlapped: only the transfers of fill and drain wait. Blocking: each of the M*v forward and
        // backward exchanges of the steady state as well.
        const double passes = R * V;  // chunk passes per rank: each sends activations and gradients once
        // Rank boundaries the first forward (and the last backward) crosses: a V goes down and back up.
        const int hops = p.v_shape() ? 2 * (p.pp - 1) : p.pp - 1;
        br.pp_comm = opt.overlap_pp ? 2 * hops * t : 2.0 * (passes + hops) * t;
    }
}

// ---- CPU activation offloading (ParallelConfig::offload_layers). ----

// What the compute waits for the copies in one microbatch's forward and backward (pp = 1), on Transformer Engine's
// schedule (parallel/offload_schedule.h). A layer takes its compute and its exposed communication, split between its
// forward and backward as its collectives are (ZeRO-3's as its compute is); the loss head runs between the last
// layer's forward and its backward. Each layer moves its saved activations (the memory model's bytes).
double OffloadWaitPerMicrobatch(const Job& job, const BlockKindTimes& t, const CommModel& net,
                                const TrainingOptions& opt, const OffloadLink& link) {
    const ParallelConfig& p = job.par;
    auto time_of = [&](const BlockTime& b, bool bf16) {
        const double fwd_comm = b.fwd_comm[kSlotTp] + b.fwd_comm[kSlotCp] + b.fwd_comm[kSlotEp];
        const double all_comm = b.comm(kSlotTp) + b.comm(kSlotCp) + b.comm(kSlotEp);
        const double exposed = TpExposed(b, opt, p.tp) + b.comm(kSlotCp) + b.comm(kSlotEp);
        const double share = all_comm > 0 ? fwd_comm / all_comm : 0;
        const double z3 = Zero3Of(b, job, net, opt, bf16).exposed, compute = b.fwd + b.bwd;
        const double z3_fwd = compute > 0 ? z3 * b.fwd / compute : 0;
        return OffloadLayer{b.fwd + exposed * share + z3_fwd, b.bwd + exposed * (1 - share) + z3 - z3_fwd, 0};
    };
    // Every layer of a kind (and precision) takes the same: each is worked out once.
    OffloadLayer kinds[2][kBlockKinds];
    bool done[2][kBlockKinds] = {};
    std::vector<OffloadLayer> layers(static_cast<size_t>(job.model.layers));
    for (int l = 0; l < job.model.layers; ++l) {
        const int k = static_cast<int>(LayerBlockKind(job, l));
        const bool bf16 = job.model.bf16_layer(l);
        if (!done[bf16][k]) {
            kinds[bf16][k] = time_of((bf16 ? t.bf16 : t.of)[k], bf16);
            kinds[bf16][k].bytes = (bf16 ? job.bf16_sums : job.sums)[k].saved[static_cast<int>(Recompute::none)];
            done[bf16][k] = true;
        }
        layers[l] = kinds[bf16][k];
    }
    const OffloadLayer head = time_of(t.of[static_cast<int>(BlockKind::head)], false);
    return OffloadWaitSeconds(layers, p.offload_layers, head.fwd + head.bwd, {link.out_gbps * 1e9, link.in_gbps * 1e9});
}

// ---- Phase 4: data-parallel terms. ----

// Gradient reduction in buckets behind the backward: once per step after the last microbatch (plain DP,
// ZeRO-1), or after every microbatch under ZeRO-2, which keeps only its gradient shard (the trace's stage
// program does the same). ZeRO-3's per-block traffic is a pipeline term (AddPipelineTerms). Then the embedding
// table's gradient all-reduce between the first and last stage (a tied head, or the MTP modules' copy).
void AddDataParallelTerms(const Job& job, const StageCost& b, int bneck, const CommModel& net,
                          const TrainingOptions& opt, const Accelerator& acc, StepBreakdown& br) {
    const ParallelConfig& p = job.par;
    const int M = p.microbatches();
    const double g = BytesOf(job.model.precision.grad);
    if (p.zero < 3) {
        const bool every_microbatch = p.zero == 2;
        const CollectiveType red = p.zero >= 1 ? CollectiveType::reduce_scatter : CollectiveType::all_reduce;
        const double grads = b.dense_params * g + b.expert_params * g;
        const double t_red =
            net.Seconds(red, GroupKind::dp, b.dense_params * g) + net.Seconds(red, GroupKind::edp, b.expert_params * g);
        const double t_ag = p.zero >= 1
                                ? net.Seconds(CollectiveType::all_gather, GroupKind::dp, b.dense_weight_bytes) +
                                      net.Seconds(CollectiveType::all_gather, GroupKind::edp, b.expert_weight_bytes)
                                : 0;
        const double buckets = std::max(1.0, std::ceil(grads / (p.bucket_mb * 1024 * 1024)));
        // ZeRO-2 reduces M times, each behind its microbatch's backward; otherwise once, behind the last. Either
        // way a reduction hides behind one microbatch's backward (b.bwd is per microbatch), and the parameter
        // all-gather behind the next step's first forward.
        const double reductions = every_microbatch ? M : 1, window = b.bwd;
        if (opt.overlap_dp) {
            const double red_exposed = std::max(t_red / buckets, t_red - window);
            const double ag_exposed = t_ag > 0 ? std::max(t_ag / buckets, t_ag - b.fwd) : 0;
            br.dp_comm += reductions * red_exposed + ag_exposed;
            // What hides runs beside the backward (the reduction) and the first forward (the gather), whose
            // kernels get the SMs the collectives' kernels leave.
            const double sms = CollectiveSmSeconds(reductions * window, reductions * (t_red - red_exposed), acc) +
                               CollectiveSmSeconds(b.fwd, t_ag - ag_exposed, acc);
            br.dp_comm_sms += sms;
            br.compute += sms;
        } else {
            br.dp_comm += reductions * t_red + t_ag;
        }
    }
    if (job.model.embedding_on_last_stage() && !p.head_on_first_rank() && (bneck == 0 || bneck == p.pp - 1))
        br.dp_comm +=
            net.Seconds(CollectiveType::all_reduce, GroupKind::embed, job.padded_vocab / p.tp * job.model.hidden * g);
}

// Optimizer (Adam, memory-bound): reads gradient, master weights, m, v; writes master, m, v, weights.
double OptimizerSeconds(const Job& job, const StageCost& b, const CommModel& net, const ComputeModel& cm) {
    const ParallelConfig& p = job.par;
    const PrecisionConfig& prec = job.model.precision;
    const double g = BytesOf(prec.grad);
    const double master = prec.master == prec.compute ? 0 : BytesOf(prec.master);
    double shard_dense = p.zero >= 1 ? net.GroupSize(GroupKind::dp) : 1;
    double shard_expert = p.zero >= 1 ? net.GroupSize(GroupKind::edp) : 1;
    double params = b.dense_params / shard_dense + b.expert_params / shard_expert;
    // The weights it writes back, each in its layer's precision (16 bits in a layer kept in BF16).
    const double weights = b.dense_weight_bytes / shard_dense + b.expert_weight_bytes / shard_expert;
    return (params * (g + 2 * (master + 2 * BytesOf(prec.optimizer))) + weights) / cm.memory_bytes_per_s();
}

// ---- Results: throughput and FLOP rates, memory, energy. ----

void FillThroughput(const Job& job, const System& sys, const std::vector<StageCost>& stages, const ComputeModel& cm,
                    int world, TrainingEstimate& e) {
    const ParallelConfig& p = job.par;
    e.step_seconds = e.step.total();
    e.tokens_per_step = 1.0 * p.global_batch() * job.model.seq;
    e.tokens_per_second = e.tokens_per_step / e.step_seconds;
    e.model_flops_per_step = e.tokens_per_step * job.model_flops_per_token;
    double hw = 0;
    for (const StageCost& c : stages) hw += c.flops * RoundsPerStep(p) * (world / p.pp);
    e.hardware_flops_per_step = hw;
    e.peak_flops_per_gpu = cm.peak_flops();
    e.mfu = e.model_flops_per_step / (e.step_seconds * world * e.peak_flops_per_gpu);
    e.hfu = e.hardware_flops_per_step / (e.step_seconds * world * e.peak_flops_per_gpu);
    e.model_flops_per_gpu_per_s = e.model_flops_per_step / (e.step_seconds * world);
    e.hardware_flops_per_gpu_per_s = e.hardware_flops_per_step / (e.step_seconds * world);
    e.bf16_peak_flops_per_gpu = PeakFlops(sys.accelerator, Precision::bf16);
    e.mfu_bf16 = e.model_flops_per_gpu_per_s / e.bf16_peak_flops_per_gpu;
    e.megatron_flops_per_gpu_per_s =
        MegatronFlops(job.model, p.global_batch(), job.padded_vocab) / (e.step_seconds * world);
    e.megatron_bridge_flops_per_gpu_per_s =
        MegatronBridgeFlops(job.model, p.global_batch(), p.tp) / (e.step_seconds * world);
}

// Memory per stage against capacity (the graph's saved activations: its kernel choices' masks and scores included).
void FillMemory(const Job& job, const System& sys, TrainingEstimate& e) {
    const ParallelConfig& p = job.par;
    e.memory_capacity = sys.accelerator.MemoryBytes();
    int worst = 0;
    for (int s = 0; s < p.pp; ++s) {
        e.memory.push_back(StageMemoryOf(job, s));
        if (e.memory[s].total() > e.memory[worst].total()) worst = s;
    }
    e.memory_peak = e.memory[worst].total();
    e.fits = e.memory_peak <= e.memory_capacity;
    if (!e.fits)
        e.memory_message = "does not fit: needs " + GiB(e.memory_peak) + " of " + GiB(e.memory_capacity) +
                           " on stage " + std::to_string(worst);
}

void FillEnergy(const System& sys, const TrainingOptions& opt, int world, TrainingEstimate& e) {
    double watts = PowerDrawW(sys.accelerator).value_or(0);  // the limit when one is set
    e.energy_joules_per_step = watts * world * e.step_seconds;
    if (opt.tokens_to_train > 0) {
        double seconds = opt.tokens_to_train / e.tokens_per_second;
        e.days_to_train = seconds / 86400;
        e.gpu_hours_to_train = seconds / 3600 * world;
        e.energy_mwh_to_train = watts * world * seconds / 3.6e9;
    }
}

}  // namespace

const KernelFloor& EstimateCache::Floor(const CalibrationTable* cal, const Accelerator& acc) {
    if (!floor_ || floor_cal_ != cal || floor_acc_ != &acc) {
        floor_ = TrainingKernelFloor(cal, acc);
        floor_cal_ = cal, floor_acc_ = &acc;
    }
    return *floor_;
}

namespace {

// EstimateTraining; `chunk_times`, when given, gets each chunk's times for the step replay (ChunkTimesOf).
TrainingEstimate Estimate(const Job& job, const System& sys, const CalibrationTable* cal, const TrainingOptions& opt,
                          const TpOverlapKernels& kernels, EstimateCache* cache, std::vector<ChunkTimes>* chunk_times) {
    if (!(opt.kernels == job.graph.kernels)) throw Error("options", kKernelChoicesDiffer);
    const Precision compute = job.model.precision.compute;
    std::optional<ComputeModel> own_cm;
    const ComputeModel& cm = cache ? cache->compute.For(sys.accelerator, compute, cal, opt, AttentionShapeOf(job))
                                   : own_cm.emplace(sys.accelerator, compute, cal, opt, AttentionShapeOf(job));
    std::optional<CommModel> own;
    const CommModel& net =
        cache ? cache->comm.For(sys, job.par, opt.in_network_reduction, cal, job.model.is_moe(), DeepEpMoe(job))
              : own.emplace(sys, Layout(job.par), opt.in_network_reduction, cal, job.model.is_moe(), DeepEpMoe(job));
    const UserbufferConfig* userbuffers = UserbuffersOf(job, opt, kernels, cm.sm_count());

    // The per-kernel fixed cost from the accelerator's calibration (none without a calibration table or a floor
    // measurement: A100's GEMM curve starts at 1024^3, no floor point). TrainingKernelFloor: judged on the
    // compute roof alone, so that more bandwidth never makes a step slower.
    std::optional<KernelFloor> own_floor;
    const KernelFloor& floor =
        cache ? cache->Floor(cal, sys.accelerator) : own_floor.emplace(TrainingKernelFloor(cal, sys.accelerator));
    const BlockKindTimes blocks = TimeBlockKinds(job, cm, net, userbuffers, floor);
    std::vector<StageCost> chunks;  // per chunk, for a schedule whose bubble is replayed
    const bool by_chunk = ReplaysBubble(job.par) || chunk_times;
    const std::vector<StageCost> stages = SumStages(job, blocks, net, opt, by_chunk ? &chunks : nullptr);
    if (chunk_times) *chunk_times = ChunkTimesOf(job.par, chunks);
    TrainingEstimate e;
    e.bottleneck_stage = BottleneckStage(stages);
    const StageCost& bneck = stages[e.bottleneck_stage];
    AddPipelineTerms(job, stages, chunks, e.bottleneck_stage, net, opt, sys.accelerator, e.step);
    AddDataParallelTerms(job, bneck, e.bottleneck_stage, net, opt, sys.accelerator, e.step);
    const double casts = Fp8WeightCastsPerStep(job.par.zero, RoundsPerStep(job.par));
    e.step.fp8_cast += casts * bneck.fp8_quant;
    e.step.kernel_fixed += casts * bneck.fp8_quant_fixed;
    e.step.optimizer = OptimizerSeconds(job, bneck, net, cm);
    if (job.par.offload_layers > 0) {
        e.host_link = OffloadLinkOf(opt, cal, sys.accelerator);
        e.step.offload = job.par.microbatches() * OffloadWaitPerMicrobatch(job, blocks, net, opt, e.host_link);
    }

    FillThroughput(job, sys, stages, cm, job.par.world(), e);
    FillMemory(job, sys, e);
    FillEnergy(sys, opt, job.par.world(), e);
    return e;
}

}  // namespace

TrainingEstimate EstimateTraining(const Job& job, const System& sys, const CalibrationTable* cal,
                                  const TrainingOptions& opt, const TpOverlapKernels& kernels, EstimateCache* cache) {
    return Estimate(job, sys, cal, opt, kernels, cache, nullptr);
}

PipelineTimeline TimePipeline(const Job& job, const System& sys, const CalibrationTable* cal,
                              const TrainingOptions& opt) {
    std::vector<ChunkTimes> times;
    const TrainingEstimate e = Estimate(job, sys, cal, opt, {}, nullptr, &times);
    PipelineTimeline t;
    const ParallelConfig part = ReplayedPart(job.par);
    t.microbatches = part.microbatches();
    t.step_microbatches = job.par.microbatches();
    t.bottleneck_stage = e.bottleneck_stage;
    t.end = ReplayPipelineTimes(part, times, &t.ranks).end;
    return t;
}

}  // namespace sc
