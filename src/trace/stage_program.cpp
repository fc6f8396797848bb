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
// stream, in windows (PairLayers). Collectives of a group whose size is 1 vanish.
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
#include "parallel/schedule.h"

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

namespace {

struct ProgramBuilder {
    const Job& job;
    const Layout layout;
    StageProgram prog;
    std::unordered_map<std::string, uint32_t> name_index;
    int64_t chain = -1;                  // last node of the main stream
    int64_t wait = -1;                   // a side-stream node the next main-stream node must wait for (a ZeRO-3 gather)
    int64_t last_sync = -1;              // last node of the side stream
    const NodeVisitor* visit = nullptr;  // streaming: nodes go to it and are not kept
    uint64_t emitted = 0;
    uint64_t limit = kMaxHeldTraceNodes;

    ProgramBuilder(const Job& j, const NodeVisitor* v, uint64_t max_nodes)
        : job(j), layout(j.par), visit(v), limit(max_nodes) {}

    [[noreturn]] void TooManyNodes() const {
        const std::string where =
            visit ? "one rank's trace (pipeline stage " + std::to_string(prog.stage) + ") passes " +
                        std::to_string(limit) + " nodes (the most the summary streams)"
                  : "the traces pass " + std::to_string(kMaxHeldTraceNodes) +
                        " nodes held at once (the most a trace or replay keeps in memory; reached in pipeline stage " +
                        std::to_string(prog.stage) + ")";
        throw Error("batch", where + " at " + std::to_string(job.par.microbatches()) +
                                 " microbatches a step; use fewer microbatches (raise microbatch), fewer layers a "
                                 "stage (raise pp) or larger gradient buckets (bucket_mb)");
    }

    uint32_t Name(const std::string& s) {
        auto [it, inserted] = name_index.try_emplace(s, static_cast<uint32_t>(prog.names.size()));
        if (inserted) prog.names.push_back(s);
        return it->second;
    }

    // By reference: the node is copied only when kept (a copy made for every visited node cost the summary 20%).
    int64_t Emit(const ProgNode& n, std::initializer_list<int64_t> deps) {
        if (emitted == limit) TooManyNodes();
        if (visit) {
            (*visit)(n, prog.names);
            return static_cast<int64_t>(emitted++);
        }
        ++emitted;
        const auto dep_begin = static_cast<uint32_t>(prog.deps.size());
        for (int64_t d : deps)
            if (d >= 0) prog.deps.push_back(static_cast<uint32_t>(d));
        ProgNode& kept = prog.nodes.emplace_back(n);
        kept.dep_begin = dep_begin;
        kept.dep_count = static_cast<uint32_t>(prog.deps.size()) - dep_begin;
        return static_cast<int64_t>(prog.nodes.size() - 1);
    }
    int64_t async = -1;  // an async collective: the main-stream node after next waits for it
    // In a pair's windows (Builder::PairLayers): the all-to-all the next main-stream node waits for, and the last
    // all-to-all of the pair's communication stream (each waits for the one before it).
    int64_t also = -1;
    int64_t window_comm = -1;

    // A node on the main stream: after the previous one and whatever it was told to wait for.
    void EmitOnChain(const ProgNode& n) {
        chain = Emit(n, {chain, wait, also});
        wait = async;  // set only right after an async collective: the node after this one waits for it
        async = -1;
        also = -1;
    }

    // An all-to-all of a pair's window: off the main stream, after the compute that produced its data (the chain so
    // far) and the window's previous all-to-all, beside the compute that follows (ParallelConfig::a2a_overlap,
    // DualPipe's pairs; the estimate's PairWindows). Marked async, so the timeline replays it on a stream of its own.
    int64_t EmitWindowComm(const Op& op, NodeRole role, uint32_t name) {
        const GroupKind k = ToGroupKind(op.group);
        if (layout.GroupSize(k) <= 1) return -1;
        ProgNode n;
        n.role = role;
        n.kind = op.kind;
        n.name = name;
        n.type = EtNodeType::comm_coll;
        n.coll = ToChakra(op.collective);
        n.group = k;
        n.comm_bytes = static_cast<int64_t>(TraceCommSize(n.coll, layout.GroupSize(k), job.V(op.comm_bytes)));
        n.async = true;
        window_comm = Emit(n, {chain, window_comm});
        return window_comm;
    }

    // Name ids of a block's ops (by op index), interned on first use: the same every microbatch. Looking each
    // node's name up again made a stage of 10,000 layers, whose name table outgrows the caches, 8x slower a node.
    struct OpNames {
        std::vector<uint32_t> forward, recompute, backward;
    };
    static constexpr uint32_t kUnnamed = UINT32_MAX;
    uint32_t OpName(std::vector<uint32_t>& ids, const std::vector<Op>& ops, size_t k, const StageBlock& sb,
                    const char* extra = "") {
        if (ids.empty()) ids.assign(ops.size(), kUnnamed);
        if (ids[k] == kUnnamed) ids[k] = Name(Prefix(sb) + extra + ops[k].name);
        return ids[k];
    }

    // A graph op on the main stream under name id `name`; `share` of it (op-level checkpointing re-runs part of
    // a fused GEMM).
    void EmitOp(const Op& op, NodeRole role, uint32_t name, double share = 1.0) {
        ProgNode n;
        n.role = role;
        n.kind = op.kind;
        n.name = name;
        if (op.kind == OpKind::collective) {
            GroupKind k = ToGroupKind(op.group);
            if (layout.GroupSize(k) <= 1) return;
            n.type = EtNodeType::comm_coll;
            n.coll = ToChakra(op.collective);
            n.group = k;
            n.comm_bytes = static_cast<int64_t>(TraceCommSize(n.coll, layout.GroupSize(k), job.V(op.comm_bytes)));
            if (op.async) {  // issued after the main stream's last node, beside the next one
                n.async = true;
                async = Emit(n, {chain, wait});
                wait = -1;
                return;
            }
        } else {
            n.type = EtNodeType::comp;
            n.flops = static_cast<int64_t>(share * job.V(op.flops));
            if (n.flops == 0 && job.V(op.flops) > 0) n.flops = 1;  // a share of a tiny op still has work to do
            n.bytes = static_cast<uint64_t>(share * job.V(op.bytes));
            n.groups = std::max(1, static_cast<int32_t>(job.V(op.groups)));
            n.high_precision = op.high_precision;
            if (op.kind == OpKind::matmul) {
                const GemmDims d = GemmDimsOf(job, op, share);
                n.gemm_m = static_cast<float>(d.m);
                n.gemm_n = static_cast<float>(d.n);
                n.gemm_k = static_cast<float>(d.k);
            }
            if (n.flops == 0 && n.bytes == 0) return;  // an op this model does not run (fp8 casts in a bf16 model)
        }
        EmitOnChain(n);
    }

    // One elementwise pass over `params` of a block's parameters on the main stream: an op per parameter (at least
    // one, as ASTRA-sim needs), `bytes_per_param` read and written each. Nothing when the block holds none.
    void EmitParamPass(const StageBlock& sb, NodeRole role, const char* name, double params, double bytes_per_param) {
        if (params <= 0) return;
        ProgNode n;
        n.type = EtNodeType::comp;
        n.role = role;
        n.kind = OpKind::elementwise;
        n.name = Name(Prefix(sb) + name);
        n.flops = std::max<int64_t>(1, static_cast<int64_t>(params));
        n.bytes = static_cast<uint64_t>(params * bytes_per_param);
        EmitOnChain(n);
    }

    // Transformer Engine's fp8 copies of a block's GEMM weights (training/fp8_overheads.h): reading 16 bits and
    // writing the fp8 copy and its transpose. Nothing in a model whose GEMMs are not fp8.
    void EmitFp8WeightQuant(const StageBlock& sb) {
        EmitParamPass(sb, NodeRole::forward, "fp8_weight_quant", Fp8GemmWeightParams(job, *sb.block),
                      Fp8WeightCastBytesPerParam(job));
    }

    // Unfused gradient accumulation (KernelChoices::grad_accumulation_fusion = false): after the block's weight
    // gradients, one add per held parameter into the gradient buffer (GradAccumulationBytesPerParam).
    void EmitGradAccumulation(const StageBlock& sb) {
        if (job.graph.kernels.grad_accumulation_fusion) return;
        double n = 0;
        for (const Weight& w : sb.block->weights) n += HeldParams(job, w);
        EmitParamPass(sb, NodeRole::backward, "grad_accum", n, GradAccumulationBytesPerParam(job.model.precision));
    }

    // A collective of `bytes` (the whole buffer) on the main stream, or on the side stream after `after`.
    // Returns its index, or -1 when it vanishes (group of one, nothing to move).
    int64_t EmitColl(const std::string& name, NodeRole role, CollectiveType c, GroupKind k, double bytes, bool on_chain,
                     int64_t after = -1) {
        return EmitCollNamed([&] { return Name(name); }, role, c, k, bytes, on_chain, after);
    }
    // The same under a name id from `name_id()`, asked only when the collective is emitted (so names are interned
    // in the order the nodes come, as by name).
    template <class NameId>
    int64_t EmitCollNamed(NameId name_id, NodeRole role, CollectiveType c, GroupKind k, double bytes, bool on_chain,
                          int64_t after = -1) {
        if (layout.GroupSize(k) <= 1 || bytes <= 0) return -1;
        ProgNode n;
        n.type = EtNodeType::comm_coll;
        n.role = role;
        n.kind = OpKind::collective;
        n.name = name_id();
        n.coll = c;
        n.group = k;
        n.comm_bytes = static_cast<int64_t>(TraceCommSize(c, layout.GroupSize(k), bytes));
        if (on_chain) {
            EmitOnChain(n);
            return chain;
        }
        last_sync = Emit(n, {after, last_sync});
        return last_sync;
    }

    int32_t Tag(int microbatch, int edge, bool backward) const {
        return (microbatch * job.total_vstages() + edge) * 2 + (backward ? 1 : 0);
    }

    uint32_t p2p_names[2][2] = {{kUnnamed, kUnnamed}, {kUnnamed, kUnnamed}};  // [send][backward]
    void EmitP2P(bool send, int peer, int microbatch, int edge, bool backward, double bytes, int64_t dep) {
        ProgNode n;
        n.type = send ? EtNodeType::comm_send : EtNodeType::comm_recv;
        n.role = NodeRole::pipeline;
        n.kind = OpKind::collective;
        uint32_t& id = p2p_names[send][backward];  // one of four names, for every microbatch: interned once
        if (id == kUnnamed) id = Name(std::string(send ? "send." : "recv.") + (backward ? "grad" : "act"));
        n.name = id;
        n.peer = static_cast<int8_t>(peer);
        n.tag = Tag(microbatch, edge, backward);
        n.comm_bytes = static_cast<int64_t>(bytes);
        const int64_t node = Emit(n, {dep});
        if (!send) chain = node;
    }

    double WeightBytes(const Block& b, bool expert, double bytes_per_param) const {
        double n = 0;
        for (const Weight& w : b.weights)
            if (w.expert == expert) n += HeldParams(job, w);
        return n * bytes_per_param;
    }

    std::string Prefix(const StageBlock& sb) const {
        return sb.layer >= 0 ? 'L' + std::to_string(sb.layer) + '.' : std::string();
    }

    // ZeRO-3: all-gather a block's weights (dense over dp, experts over edp, in the block's precision) on the side stream once the main
    // stream has reached `after`. Returns the last gather's index (-1: nothing gathered).
    int64_t GatherWeights(const StageBlock& sb, int64_t after) {
        const std::string pre = Prefix(sb);
        const double wbytes = WeightBytesOf(job.model.precision, sb.block->bf16);  // 16 bits in a BF16 layer
        int64_t a = EmitColl(pre + "zero3.gather", NodeRole::grad_sync, CollectiveType::all_gather, GroupKind::dp,
                             WeightBytes(*sb.block, false, wbytes), false, after);
        int64_t b = EmitColl(pre + "zero3.gather_experts", NodeRole::grad_sync, CollectiveType::all_gather,
                             GroupKind::edp, WeightBytes(*sb.block, true, wbytes), false, after);
        return b >= 0 ? b : a;
    }
};

// Gradients in fixed-size buckets (PyTorch DDP / Megatron-LM's bucketed reduction; README "Conventions"):
// bytes stream in as blocks finish their backward, every full bucket is reduced on the side stream after
// the block that filled it, and Flush reduces the rest. Dense and expert gradients fill separate buckets
// (they reduce over different groups).
struct GradBuckets {
    ProgramBuilder& B;
    CollectiveType coll;
    double bucket;
    double pending[2] = {0, 0};  // dense, expert
    int next = 0;

    void Reduce(int i, double bytes) {
        const bool expert = i == 1;
        B.EmitColl(std::string(expert ? "edp" : "dp") + ".grad_bucket" + std::to_string(next++), NodeRole::grad_sync,
                   coll, expert ? GroupKind::edp : GroupKind::dp, bytes, false, B.chain);
    }
    void Add(double dense, double expert) {
        pending[0] += dense, pending[1] += expert;
        for (int i = 0; i < 2; ++i) {
            // Alone in its group a rank reduces nothing: no buckets to count (a 2^56-weight model has 10^10).
            if (B.layout.GroupSize(i == 1 ? GroupKind::edp : GroupKind::dp) <= 1) pending[i] = 0;
            for (; pending[i] >= bucket; pending[i] -= bucket) Reduce(i, bucket);
        }
    }
    void Flush() {
        for (int i = 0; i < 2; ++i)
            if (pending[i] > 0) Reduce(i, pending[i]), pending[i] = 0;
    }
};

}  // namespace

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
    size_t next = 0;                          // the schedule's next step
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
            ForwardBlock(step, j, quantize);
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
    // Whether a block of a pair runs window by window: an MoE layer whose all-to-alls move data, outside ZeRO-3 (whose
    // per-block gathers keep the serial order). Worked out once per block (the constructor).
    bool PairableBlock(const Block& b) const {
        size_t at[2];
        return !zero3 && B.layout.GroupSize(GroupKind::ep) > 1 && CutAt(b.forward, at) && CutAt(b.backward, at);
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
        const bool quantize = !quantized[f.chunk];
        quantized[f.chunk] = true;
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
                if (quantize) B.EmitFp8WeightQuant(blocks[f.chunk][i]);
                PairLayers(f, i++, b, j--, first_layer);
            } else if (i < nf && (!fp || j < 0)) {
                ForwardBlock(f, i++, quantize);
            } else {
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
        if (step.forward && step.paired && !zero3 && i + 1 < schedule.size()) {
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
