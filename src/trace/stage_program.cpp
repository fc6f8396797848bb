// One stage's program, following its pipeline schedule step by step.
//
// Dependencies: one main stream (compute and the blocking TP/CP/EP collectives) chained in issue order;
// a RECV precedes the first node that needs it; a SEND hangs off the node that produced its data and
// blocks nothing. A side stream holds the data-parallel traffic (gradient buckets, ZeRO-3 gathers and
// gradient scatters, the tied-embedding reduction), chained among itself so every member of a group issues
// its collectives in one order; each waits for the main-stream node that makes it possible, and the main
// stream waits for a side node only where it needs its result (a ZeRO-3 block waits for its gather; the
// optimizer for every reduction). ZeRO-3 gathers are prefetched one block ahead: block i+1's gather may
// run while block i computes (FSDP's forward/backward prefetch, DeepSpeed's prefetch bucket).
// A forward and a backward run as a pair (DualPipe, a2a_overlap) put their MoE layers' all-to-alls beside the main
// stream, in windows (PairLayers). Activation offloading's copies (offload_layers) run on a copy stream of their own,
// each after the compute that made its data; the compute that frees or needs a layer's activations waits for its
// copy (parallel/offload_schedule.h). Collectives of a group whose size is 1 vanish.
//
// Sizes are ASTRA-sim's (README "Conventions"): comm_size is the whole buffer for all-reduce,
// reduce-scatter and all-to-all, and one rank's contribution for all-gather (the graph's all-gather output
// divided by the group size).
#include "trace/stage_program.h"

#include <climits>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "config/error.h"
#include "parallel/memory.h"
#include "parallel/offload_schedule.h"
#include "parallel/schedule.h"
#include "trace/program_builder.h"

namespace sc {

double TraceCommSize(CollectiveType c, int group_size, double buffer_bytes) {
    if (c != CollectiveType::all_gather || group_size <= 1) return buffer_bytes;
    return std::ceil(buffer_bytes / group_size);  // a shard; the buffer padded to a multiple of the group
}

double BufferBytesOf(CollectiveType c, int group_size, double comm_size) {
    return c == CollectiveType::all_gather && group_size > 1 ? comm_size * group_size : comm_size;
}

CollectiveType ToChakra(Collective c) {
    switch (c) {
        case Collective::all_reduce: return CollectiveType::all_reduce;
        case Collective::all_gather: return CollectiveType::all_gather;
        case Collective::reduce_scatter: return CollectiveType::reduce_scatter;
        case Collective::all_to_all: return CollectiveType::all_to_all;
    }
    return CollectiveType::all_reduce;
}

GroupKind ToGroupKind(Group g) {
    switch (g) {
        case Group::tp: return GroupKind::tp;
        case Group::cp: return GroupKind::cp;
        case Group::ep: return GroupKind::ep;
        default: return GroupKind::dp;
    }
}

using trace_detail::GradBuckets;
using trace_detail::ProgramBuilder;

// Build's state between steps: everything the schedule's loop kept in locals, so a stage can be built a slice at a
// time (the page's summary) with the same nodes in the same order as in one go.
struct StageProgramStream::Builder {
    ProgramBuilder B;
    const ParallelConfig& p;
    const int S, M;
    const double gbytes;
    bool scatter = false;       // pipeline scatter/gather (the constructor)
    double boundary_bytes = 0;  // a layer's output activation, what a stage hands the next
    double p2p_bytes = 0;       // what one send carries: the boundary, or its 1/tp share under scatter/gather
    const bool zero3;
    // ZeRO-2 keeps only its shard of the gradients, so it reduce-scatters after every microbatch's backward
    // (DeepSpeed stage 2); plain DP and ZeRO-1 accumulate full gradients and reduce once, after the last.
    const bool reduce_every_microbatch;
    GradBuckets grads;
    std::vector<std::vector<StageBlock>> blocks;                 // [chunk]
    std::vector<std::vector<ProgramBuilder::OpNames>> op_names;  // [chunk][block]
    // fp8 GEMM weights are quantized in a chunk's first forward and kept for the step's other microbatches
    // (Megatron-Core's is_first_microbatch); under ZeRO-3 / FSDP, gathered anew for every microbatch, so
    // quantized in every forward (training/fp8_overheads.h, Fp8WeightCastsPerStep).
    std::vector<bool> quantized;
    std::vector<PipelineStep> schedule;
    std::vector<std::vector<char>> pairable;  // [chunk][block]: PairableBlock, under a schedule that pairs
    // CPU activation offloading (ParallelConfig::offload_layers; pp = 1, one chunk): each offloaded layer's saved
    // bytes, and this microbatch's copy nodes of each (out, in); the copies run on one stream of their own.
    std::vector<double> offload_bytes;
    std::vector<int64_t> copied_out, copied_in;
    int64_t copy_stream = -1;
    size_t next = 0;  // the schedule's next step
    bool complete = false;

    Builder(const Job& job, int stage, const NodeVisitor* visit, uint64_t max_nodes)
        : B(job, visit, max_nodes),
          p(job.par),
          S(job.total_vstages()),
          M(job.par.microbatches()),
          gbytes(BytesOf(job.model.precision.grad)),
          zero3(job.par.zero >= 3),
          reduce_every_microbatch(job.par.zero == 2),
          grads{B, job.par.zero >= 1 ? CollectiveType::reduce_scatter : CollectiveType::all_reduce,
                std::round(job.par.bucket_mb * 1024 * 1024)},
          blocks(job.par.active_vstages()),
          op_names(job.par.active_vstages()),
          quantized(job.par.active_vstages(), false),
          schedule(PipelineSchedule(job.par, stage)) {
        B.prog.stage = stage;
        boundary_bytes = job.V(job.graph.FirstLayer()->boundary_bytes);
        // Pipeline scatter/gather (KernelChoices::pp_scatter_gather; Megatron-LM's default without SP): each TP
        // rank sends its 1/tp share of the boundary over its own link and the receiving TP group all-gathers it
        // before the first block of the stage (or its last, for the gradient) can run. Under SP the boundary is
        // already split.
        scatter = job.graph.kernels.pp_scatter_gather && !p.sp && p.tp > 1;
        p2p_bytes = scatter ? boundary_bytes / p.tp : boundary_bytes;
        pairable.resize(p.active_vstages());
        for (int c = 0; c < p.active_vstages(); ++c) {
            blocks[c] = BlocksOfVstage(job, PositionOf(p, c, stage));
            op_names[c].resize(blocks[c].size());
            for (const StageBlock& sb : blocks[c])
                pairable[c].push_back(PairsChunks(p) && PairableBlock(*sb.block) ? 1 : 0);
        }
        for (const StageBlock& sb : p.offload_layers > 0 ? blocks[0] : std::vector<StageBlock>{})
            if (sb.layer >= 0 && sb.layer < p.offload_layers)
                offload_bytes.push_back((sb.block->bf16 ? job.bf16_sums : job.sums)[static_cast<int>(sb.block->kind)]
                                            .saved[static_cast<int>(Recompute::none)]);
        copied_out.assign(offload_bytes.size(), -1), copied_in.assign(offload_bytes.size(), -1);
    }

    // A layer's activations copied out after its forward or back in before its backward, on the copy stream after
    // the compute so far (parallel/offload_schedule.h); the compute that needs it waits for it (B.also).
    std::vector<uint32_t> copy_names[2];  // [in][layer], interned on first use
    int64_t EmitCopy(int layer, bool in) {
        std::vector<uint32_t>& ids = copy_names[in];
        if (ids.empty()) ids.assign(offload_bytes.size(), ProgramBuilder::kUnnamed);
        if (ids[layer] == ProgramBuilder::kUnnamed) {
            std::string name = "L";
            name += std::to_string(layer);
            name += in ? ".offload.copy_in" : ".offload.copy_out";
            ids[layer] = B.Name(name);
        }
        ProgNode n;
        n.type = in ? EtNodeType::mem_load : EtNodeType::mem_store;
        n.role = in ? NodeRole::backward : NodeRole::forward;
        n.name = ids[layer];
        n.bytes = static_cast<uint64_t>(offload_bytes[layer]);
        n.async = true;
        return copy_stream = B.Emit(n, {B.chain, copy_stream});
    }
    void OffloadBeforeForward(int layer) {
        const int L = B.job.model.layers, N = p.offload_layers;
        if (const int j = layer >= 0 && N > 0 ? OffloadDoneBeforeForward(layer, L, N) : -1; j >= 0)
            B.also = copied_out[j];
    }
    void OffloadAfterForward(int layer) {
        if (layer >= 0 && layer < p.offload_layers) copied_out[layer] = EmitCopy(layer, false);
    }
    void OffloadBeforeBackward(int layer) {
        const int L = B.job.model.layers, N = p.offload_layers;
        if (layer < 0 || N <= 0) return;
        if (const int j = OffloadReloadBeforeBackward(layer, L, N); j >= 0) copied_in[j] = EmitCopy(j, true);
        if (layer < N) B.also = copied_in[layer];
    }
    uint32_t gather_names[2] = {ProgramBuilder::kUnnamed, ProgramBuilder::kUnnamed};  // [backward]
    void Receive(int peer, int microbatch, int edge, bool backward) {
        B.EmitP2P(false, peer, microbatch, edge, backward, p2p_bytes, B.chain);
        if (!scatter) return;
        auto name_id = [&] {
            uint32_t& id = gather_names[backward];
            if (id == ProgramBuilder::kUnnamed)
                id = B.Name(backward ? "recv.grad.tp_all_gather" : "recv.act.tp_all_gather");
            return id;
        };
        B.EmitCollNamed(name_id, NodeRole::pipeline, CollectiveType::all_gather, GroupKind::tp, boundary_bytes, true);
    }

    // A block's gradients once its backward (or, split, its weight half) has run: ZeRO-3 / FSDP reduce-scatter
    // them at once on the side stream; otherwise they fill the buckets of the step's last microbatch (every
    // microbatch's under ZeRO-2). Under DualPipe a chunk sees only its direction's microbatches (chunk c runs
    // c*M/2 .. (c+1)*M/2-1), so its last is the last of those.
    void SyncGrads(const StageBlock& sb, const PipelineStep& step) {
        const int last = p.schedule == Schedule::dualpipe ? (step.chunk + 1) * (M / 2) - 1 : M - 1;
        const std::string pre = B.Prefix(sb);
        if (zero3) {
            B.EmitColl(pre + "zero3.grad_scatter", NodeRole::grad_sync, CollectiveType::reduce_scatter, GroupKind::dp,
                       B.WeightBytes(*sb.block, false, gbytes), false, B.chain);
            B.EmitColl(pre + "zero3.grad_scatter_experts", NodeRole::grad_sync, CollectiveType::reduce_scatter,
                       GroupKind::edp, B.WeightBytes(*sb.block, true, gbytes), false, B.chain);
        } else if (reduce_every_microbatch || step.microbatch == last) {
            grads.Add(B.WeightBytes(*sb.block, false, gbytes), B.WeightBytes(*sb.block, true, gbytes));
        }
    }

    void Forward(const PipelineStep& step, int g, int next_rank) {
        const auto& bl = blocks[step.chunk];
        const int n = static_cast<int>(bl.size());
        if (g > 0 && !SameRankAfter(p, g - 1)) Receive(-next_rank, step.microbatch, g - 1, false);
        int64_t gathered = zero3 ? B.GatherWeights(bl[0], B.chain) : -1;
        const bool quantize = zero3 || !quantized[step.chunk];
        quantized[step.chunk] = true;
        for (int j = 0; j < n; ++j) {
            B.wait = gathered;
            if (zero3 && j + 1 < n) gathered = B.GatherWeights(bl[j + 1], B.chain);  // prefetch
            OffloadBeforeForward(bl[j].layer);
            ForwardBlock(step, j, quantize);
            OffloadAfterForward(bl[j].layer);
        }
        if (g < S - 1 && !SameRankAfter(p, g))
            B.EmitP2P(true, next_rank, step.microbatch, g, false, p2p_bytes, B.chain);
    }

    void ForwardBlock(const PipelineStep& step, int j, bool quantize) {
        const StageBlock& sb = blocks[step.chunk][j];
        if (quantize) B.EmitFp8WeightQuant(sb);
        const std::vector<Op>& ops = sb.block->forward;
        for (size_t k = 0; k < ops.size(); ++k)
            B.EmitOp(ops[k], NodeRole::forward, B.OpName(op_names[step.chunk][j].forward, ops, k, sb));
    }

    // The weight half of a split backward (zbh1): every block's weight-gradient GEMMs, then the synchronisation
    // of those gradients, which exist only now.
    void WeightHalf(const PipelineStep& step) {
        const auto& bl = blocks[step.chunk];
        for (int j = static_cast<int>(bl.size()) - 1; j >= 0; --j) {
            const StageBlock& sb = bl[j];
            const std::vector<Op>& ops = sb.block->backward;
            for (size_t k = 0; k < ops.size(); ++k)
                if (ops[k].weight_grad)
                    B.EmitOp(ops[k], NodeRole::backward, B.OpName(op_names[step.chunk][j].backward, ops, k, sb));
            B.EmitGradAccumulation(sb);
            SyncGrads(sb, step);
        }
        if (reduce_every_microbatch) grads.Flush();
    }

    void Backward(const PipelineStep& step, int g, int next_rank) {
        const auto& bl = blocks[step.chunk];
        const int n = static_cast<int>(bl.size());
        const int first_layer = FirstLayer(step.chunk);
        if (g < S - 1 && !SameRankAfter(p, g)) Receive(next_rank, step.microbatch, g, true);
        int64_t gathered = zero3 ? B.GatherWeights(bl[n - 1], B.chain) : -1;
        for (int j = n - 1; j >= 0; --j) {
            B.wait = gathered;
            if (zero3 && j > 0) gathered = B.GatherWeights(bl[j - 1], B.chain);  // prefetch
            OffloadBeforeBackward(bl[j].layer);
            BackwardBlock(step, j, first_layer);
        }
        if (reduce_every_microbatch && !step.split) grads.Flush();
        if (g > 0 && !SameRankAfter(p, g - 1))
            B.EmitP2P(true, -next_rank, step.microbatch, g - 1, true, p2p_bytes, B.chain);
    }

    int FirstLayer(int chunk) const {  // the chunk's first transformer layer
        int first = INT_MAX;
        for (const StageBlock& sb : blocks[chunk])
            if (sb.layer >= 0) first = std::min(first, sb.layer);
        return first;
    }

    // The re-run forward of a block about to run its backward, on the main stream.
    void EmitRecompute(const PipelineStep& step, int j, int first_layer) {
        const StageBlock& sb = blocks[step.chunk][j];
        // Full recomputation's block method: the chunk's layers after its first recompute_layers do not re-run.
        const bool recomputes = sb.layer < 0 || p.recomputes_layer(sb.layer - first_layer);
        if (p.recompute == Recompute::none || !recomputes) return;
        const std::vector<Op>& ops = sb.block->forward;
        ProgramBuilder::OpNames& names = op_names[step.chunk][j];
        for (size_t k = 0; k < ops.size(); ++k)
            if (const double share = RecomputeShareIn(B.job, sb.layer >= 0, ops[k]); share > 0)
                B.EmitOp(ops[k], NodeRole::recompute, B.OpName(names.recompute, ops, k, sb, "recompute."), share);
    }

    void BackwardBlock(const PipelineStep& step, int j, int first_layer) {
        const StageBlock& sb = blocks[step.chunk][j];
        EmitRecompute(step, j, first_layer);
        const std::vector<Op>& ops = sb.block->backward;
        for (size_t k = 0; k < ops.size(); ++k)
            if (!step.split || !ops[k].weight_grad)
                B.EmitOp(ops[k], NodeRole::backward, B.OpName(op_names[step.chunk][j].backward, ops, k, sb));
        if (!step.split) B.EmitGradAccumulation(sb), SyncGrads(sb, step);
    }

    // ---- A forward and a backward run as a pair (DualPipe's F&B, Megatron-Core's combined 1F1B) ----

    // Positions of a pass's two all-to-alls, or false when it has not exactly two (not an MoE layer).
    static bool CutAt(const std::vector<Op>& ops, size_t at[2]) {
        int n = 0;
        for (size_t k = 0; k < ops.size(); ++k)
            if (ops[k].expert_all_to_all()) {
                if (n < 2) at[n] = k;
                ++n;
            }
        return n == 2;
    }
    // Whether a block of a pair runs window by window: an MoE layer whose all-to-alls move data (under ZeRO-3 too, each
    // block after its gather: RunPair). Worked out once per block (the constructor).
    bool PairableBlock(const Block& b) const {
        size_t at[2];
        return B.layout.GroupSize(GroupKind::ep) > 1 && CutAt(b.forward, at) && CutAt(b.backward, at);
    }
    bool Pairable(int chunk, int j) const { return pairable[chunk][j] != 0; }

    // Forward block fj beside backward block bj, in the three windows of Megatron-Core's layer plan
    // (model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run; training/pair_windows.h): the combine's
    // gradient beside the attention's forward, the dispatch beside the experts' input gradient, the dispatch's
    // gradient beside the experts' weight gradient and forward, the combine beside the attention's backward. The
    // compute stays one stream in program order; each all-to-all waits for its data, and the compute that needs an
    // all-to-all's result waits for it.
    void PairLayers(const PipelineStep& f, int fj, const PipelineStep& b, int bj, int first_layer) {
        const StageBlock& fs = blocks[f.chunk][fj];
        const StageBlock& bs = blocks[b.chunk][bj];
        ProgramBuilder::OpNames& fn = op_names[f.chunk][fj];
        ProgramBuilder::OpNames& bn = op_names[b.chunk][bj];
        const std::vector<Op>& fo = fs.block->forward;
        const std::vector<Op>& bo = bs.block->backward;
        size_t fa[2], ba[2];
        CutAt(fo, fa), CutAt(bo, ba);
        auto forward = [&](size_t from, size_t to) {
            for (size_t k = from; k < to; ++k) B.EmitOp(fo[k], NodeRole::forward, B.OpName(fn.forward, fo, k, fs));
        };
        // `weight`: the weight-gradient ops of the range only (1), the others only (0), or all (-1).
        auto backward = [&](size_t from, size_t to, int weight) {
            for (size_t k = from; k < to; ++k)
                if (weight < 0 || bo[k].weight_grad == (weight == 1))
                    B.EmitOp(bo[k], NodeRole::backward, B.OpName(bn.backward, bo, k, bs));
        };
        auto comm = [&](const std::vector<Op>& ops, size_t k, NodeRole role, ProgramBuilder::OpNames& names,
                        std::vector<uint32_t> ProgramBuilder::OpNames::*pass, const StageBlock& sb) {
            return B.EmitWindowComm(ops[k], role, B.OpName(names.*pass, ops, k, sb));
        };
        EmitRecompute(b, bj, first_layer);
        backward(0, ba[0], -1);  // what precedes the combine's gradient
        const int64_t combine_grad = comm(bo, ba[0], NodeRole::backward, bn, &ProgramBuilder::OpNames::backward, bs);
        forward(0, fa[0]);  // attention to permute
        const int64_t dispatch = comm(fo, fa[0], NodeRole::forward, fn, &ProgramBuilder::OpNames::forward, fs);
        B.also = combine_grad;
        backward(ba[0] + 1, ba[1], 0);  // the experts' input gradient
        const int64_t dispatch_grad = comm(bo, ba[1], NodeRole::backward, bn, &ProgramBuilder::OpNames::backward, bs);
        backward(ba[0] + 1, ba[1], 1);  // their weight gradient
        B.also = dispatch;
        forward(fa[0] + 1, fa[1]);  // the experts' forward
        const int64_t combine = comm(fo, fa[1], NodeRole::forward, fn, &ProgramBuilder::OpNames::forward, fs);
        B.also = dispatch_grad;
        backward(ba[1] + 1, bo.size(), -1);  // the attention's backward
        B.also = combine;
        forward(fa[1] + 1, fo.size());  // what follows the combine
        B.EmitGradAccumulation(bs), SyncGrads(bs, b);
    }

    // A paired forward and the backward after it: their receives, then both chunks' blocks, MoE layers side by side
    // in windows and the rest one after the other, each pass's send as soon as its last block has run.
    void RunPair(const PipelineStep& f, const PipelineStep& b) {
        const int stage = B.prog.stage;
        const int gf = PositionOf(p, f.chunk, stage), gb = PositionOf(p, b.chunk, stage);
        const int f_next = ForwardPeer(p, f.chunk), b_next = ForwardPeer(p, b.chunk);
        if (gf > 0 && !SameRankAfter(p, gf - 1)) Receive(-f_next, f.microbatch, gf - 1, false);
        if (gb < S - 1 && !SameRankAfter(p, gb)) Receive(b_next, b.microbatch, gb, true);
        const int nf = static_cast<int>(blocks[f.chunk].size());
        const bool quantize = zero3 || !quantized[f.chunk];
        quantized[f.chunk] = true;
        // ZeRO-3: each block waits for its weights' gather, and the next block of the same pass is gathered (prefetched)
        // as it starts, as in Forward and Backward; a paired MoE layer waits for both of its blocks' gathers.
        const auto& fb = blocks[f.chunk];
        const auto& bb = blocks[b.chunk];
        int64_t f_gathered = zero3 && nf > 0 ? B.GatherWeights(fb[0], B.chain) : -1;
        int64_t b_gathered = zero3 && !bb.empty() ? B.GatherWeights(bb.back(), B.chain) : -1;
        auto start_forward = [&](int i) {  // before forward block i: its gather, and the next one's prefetch
            const int64_t mine = f_gathered;
            if (zero3) f_gathered = i + 1 < nf ? B.GatherWeights(fb[i + 1], B.chain) : -1;
            return mine;
        };
        auto start_backward = [&](int j) {
            const int64_t mine = b_gathered;
            if (zero3) b_gathered = j > 0 ? B.GatherWeights(bb[j - 1], B.chain) : -1;
            return mine;
        };
        const int first_layer = FirstLayer(b.chunk);
        auto forward_done = [&] {
            if (gf < S - 1 && !SameRankAfter(p, gf))
                B.EmitP2P(true, f_next, f.microbatch, gf, false, p2p_bytes, B.chain);
        };
        auto backward_done = [&] {
            if (reduce_every_microbatch) grads.Flush();
            if (gb > 0 && !SameRankAfter(p, gb - 1))
                B.EmitP2P(true, -b_next, b.microbatch, gb - 1, true, p2p_bytes, B.chain);
        };
        int i = 0, j = static_cast<int>(blocks[b.chunk].size()) - 1;
        while (i < nf || j >= 0) {
            const bool fp = i < nf && Pairable(f.chunk, i), bp = j >= 0 && Pairable(b.chunk, j);
            if (fp && bp) {
                const int64_t wf = start_forward(i), wb = start_backward(j);
                B.wait = wb, B.also = wf;  // the pair's first node waits for both gathers
                if (quantize) B.EmitFp8WeightQuant(blocks[f.chunk][i]);
                PairLayers(f, i++, b, j--, first_layer);
            } else if (i < nf && (!fp || j < 0)) {
                B.wait = start_forward(i);
                ForwardBlock(f, i++, quantize);
            } else {
                B.wait = start_backward(j);
                BackwardBlock(b, j--, first_layer);
                if (j < 0) backward_done();
                continue;
            }
            if (i == nf) forward_done();
            if (j < 0 && (fp && bp)) backward_done();
        }
    }

    // Whether a chunk holds a block a pair can run in windows.
    bool AnyPairable(int chunk) const {
        return std::find(pairable[chunk].begin(), pairable[chunk].end(), 1) != pairable[chunk].end();
    }

    // Runs the step at schedule[i], or the pair starting there; returns how many steps it took.
    size_t RunAt(size_t i) {
        const PipelineStep& step = schedule[i];
        if (step.forward && step.paired && i + 1 < schedule.size()) {
            const PipelineStep& next_step = schedule[i + 1];
            if (!next_step.forward && !next_step.weight && !next_step.split && AnyPairable(step.chunk) &&
                AnyPairable(next_step.chunk)) {
                RunPair(step, next_step);
                return 2;
            }
        }
        Run(step);
        return 1;
    }

    void Run(const PipelineStep& step) {
        const int g = PositionOf(p, step.chunk, B.prog.stage);
        const int next_rank = ForwardPeer(p, step.chunk);  // the rank of position g + 1 (DualPipe's chunk 1: g - 1)
        if (step.forward) Forward(step, g, next_rank);
        else if (step.weight) WeightHalf(step);
        else Backward(step, g, next_rank);
    }

    // After the schedule's last step: the last buckets, the tied-embedding reduction, the optimizer.
    void Finish() {
        grads.Flush();
        const Job& job = B.job;
        const int stage = B.prog.stage;
        // The embedding table on the first and the last stage (a tied LM head, or the MTP modules' lookups): two
        // copies of one matrix, whose gradients are summed between them (Megatron's embedding group).
        if (job.model.embedding_on_last_stage() && !p.head_on_first_rank() && (stage == 0 || stage == p.pp - 1)) {
            double bytes = job.padded_vocab / p.tp * job.model.hidden * gbytes;
            B.EmitColl("embedding.tied_grad", NodeRole::grad_sync, CollectiveType::all_reduce, GroupKind::embed, bytes,
                       false, B.chain);
        }

        // Optimizer step (Adam): ~13 FLOPs per parameter; reads gradient, master, m, v; writes master, m, v
        // and the compute copy. ZeRO shards it: dense parameters over the data-parallel group, expert ones over
        // the expert-data-parallel group.
        const PrecisionConfig& prec = job.model.precision;
        double dense = 0, expert = 0, dense_w = 0, expert_w = 0;  // parameters, and their weights' bytes
        for (const auto& bl : blocks)
            for (const StageBlock& sb : bl) {
                const double d = B.WeightBytes(*sb.block, false, 1), e = B.WeightBytes(*sb.block, true, 1);
                const double wb = WeightBytesOf(prec, sb.block->bf16);  // 16 bits in a layer kept in BF16
                dense += d, expert += e, dense_w += d * wb, expert_w += e * wb;
            }
        const double dp = p.zero >= 1 ? B.layout.GroupSize(GroupKind::dp) : 1;
        const double edp = p.zero >= 1 ? B.layout.GroupSize(GroupKind::edp) : 1;
        const double params = dense / dp + expert / edp, weights = dense_w / dp + expert_w / edp;
        const double master = prec.master == prec.compute ? 0 : BytesOf(prec.master);
        ProgNode opt;
        opt.type = EtNodeType::comp;
        opt.role = NodeRole::optimizer;
        opt.kind = OpKind::elementwise;
        opt.name = B.Name("optimizer.adam");
        opt.flops = std::max<int64_t>(1, static_cast<int64_t>(13 * params));
        opt.bytes = static_cast<uint64_t>(params * (gbytes + 2 * (master + 2 * BytesOf(prec.optimizer))) + weights);
        B.wait = B.last_sync;
        B.EmitOnChain(opt);
        if (p.zero == 1 || p.zero == 2) {
            B.EmitColl("dp.param_gather", NodeRole::optimizer, CollectiveType::all_gather, GroupKind::dp, dense_w,
                       true);
            B.EmitColl("edp.param_gather", NodeRole::optimizer, CollectiveType::all_gather, GroupKind::edp, expert_w,
                       true);
        }
    }
};

StageProgramStream::StageProgramStream(const Job& job, int stage, const NodeVisitor* visit, uint64_t max_nodes)
    : b_(std::make_unique<Builder>(job, stage, visit, max_nodes)) {}
StageProgramStream::~StageProgramStream() = default;
StageProgramStream::StageProgramStream(StageProgramStream&&) noexcept = default;
StageProgramStream& StageProgramStream::operator=(StageProgramStream&&) noexcept = default;

// A kept program's vectors sized once from its first 1/32 of the schedule (at least 64 steps), 5% over: grown
// by doubling, a stage of millions of nodes held the old and the new node array at once on its last growth
// (the page's download stopped for 200 ms copying one) and up to twice the nodes it needed after it, room the
// page's 4 GB of wasm memory then lacked for the stage's encoding. An estimate short of the end grows as before.
// Called after each run of steps (`before` to `steps_done`: one, or a pair).
static void ReserveFromFirstSteps(StageProgram& prog, size_t before, size_t steps_done, size_t steps, uint64_t limit) {
    constexpr size_t kMinSteps = 64;
    const size_t at = std::max(kMinSteps, steps / 32);
    if (steps < 2 * kMinSteps || before >= at || steps_done < at) return;
    const double scale = 1.05 * static_cast<double>(steps) / static_cast<double>(steps_done);
    const double nodes = std::min(scale * static_cast<double>(prog.nodes.size()), static_cast<double>(limit));
    prog.nodes.reserve(static_cast<size_t>(nodes));
    prog.deps.reserve(static_cast<size_t>(nodes * static_cast<double>(prog.deps.size()) /
                                          std::max<double>(1, static_cast<double>(prog.nodes.size()))));
}

bool StageProgramStream::Advance(uint64_t min_nodes) {
    Builder& b = *b_;
    const uint64_t until = b.B.emitted + std::min(min_nodes, UINT64_MAX - b.B.emitted);
    while (!b.complete && b.B.emitted < until) {
        if (b.next < b.schedule.size()) {
            const size_t before = b.next;
            b.next += b.RunAt(b.next);
            if (!b.B.visit) ReserveFromFirstSteps(b.B.prog, before, b.next, b.schedule.size(), b.B.limit);
        } else {
            b.Finish();
            b.complete = true;
        }
    }
    return b.complete;
}

double StageProgramStream::Progress() const {
    if (b_->complete) return 1;
    return static_cast<double>(b_->next) / static_cast<double>(b_->schedule.size() + 1);
}

StageProgram StageProgramStream::Take() { return std::move(b_->B.prog); }

StageProgram BuildStageProgram(const Job& job, int stage, uint64_t max_nodes) {
    StageProgramStream s(job, stage, nullptr, max_nodes);
    s.Advance(UINT64_MAX);
    return s.Take();
}

StageProgram VisitStageProgram(const Job& job, int stage, const NodeVisitor& visit, uint64_t max_nodes) {
    StageProgramStream s(job, stage, &visit, max_nodes);
    s.Advance(UINT64_MAX);
    return s.Take();
}

}  // namespace sc
