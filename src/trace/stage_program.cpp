// One stage's program, following its pipeline schedule step by step.
//
// Dependencies: one main stream (compute and the blocking TP/CP/EP collectives) chained in issue order;
// a RECV precedes the first node that needs it; a SEND hangs off the node that produced its data and
// blocks nothing; data-parallel gradient reductions hang off the last backward of the bucket's layers
// (overlapping the rest of the backward) and are chained among themselves so every member issues them
// in the same order; the optimizer waits for all of them. Collectives of a group whose size is 1 vanish.
#include "trace/stage_program.h"

#include <unordered_map>

#include "parallel/memory.h"
#include "parallel/schedule.h"

namespace sc {

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
    int64_t chain = -1;     // last node of the main stream
    int64_t last_sync = -1;  // last gradient reduction

    ProgramBuilder(const Job& j) : job(j), layout(j.par) {}

    uint32_t Name(const std::string& s) {
        auto [it, inserted] = name_index.try_emplace(s, static_cast<uint32_t>(prog.names.size()));
        if (inserted) prog.names.push_back(s);
        return it->second;
    }

    uint32_t Emit(ProgNode n, std::initializer_list<int64_t> deps) {
        n.dep_begin = static_cast<uint32_t>(prog.deps.size());
        for (int64_t d : deps)
            if (d >= 0) prog.deps.push_back(static_cast<uint32_t>(d));
        n.dep_count = static_cast<uint32_t>(prog.deps.size()) - n.dep_begin;
        prog.nodes.push_back(n);
        return static_cast<uint32_t>(prog.nodes.size() - 1);
    }

    // A graph op on the main stream.
    void EmitOp(const Op& op, NodeRole role, const std::string& prefix) {
        ProgNode n;
        n.role = role;
        n.kind = op.kind;
        n.name = Name(prefix + op.name);
        if (op.kind == OpKind::collective) {
            GroupKind k = ToGroupKind(op.group);
            if (layout.GroupSize(k) <= 1) return;
            n.type = EtNodeType::comm_coll;
            n.coll = ToChakra(op.collective);
            n.group = k;
            n.comm_bytes = static_cast<int64_t>(job.V(op.comm_bytes));
        } else {
            n.type = EtNodeType::comp;
            n.flops = static_cast<int64_t>(job.V(op.flops));
            n.bytes = static_cast<uint64_t>(job.V(op.bytes));
        }
        chain = Emit(n, {chain});
    }

    void EmitColl(const std::string& name, NodeRole role, CollectiveType c, GroupKind k, double bytes,
                  bool on_chain, int64_t extra_dep = -1) {
        if (layout.GroupSize(k) <= 1 || bytes <= 0) return;
        ProgNode n;
        n.type = EtNodeType::comm_coll;
        n.role = role;
        n.kind = OpKind::collective;
        n.name = Name(name);
        n.coll = c;
        n.group = k;
        n.comm_bytes = static_cast<int64_t>(bytes);
        if (on_chain) {
            chain = Emit(n, {chain, extra_dep});
        } else {
            last_sync = Emit(n, {extra_dep, last_sync});
        }
    }

    int32_t Tag(int microbatch, int edge, bool backward) const {
        return (microbatch * job.virtual_stages() + edge) * 2 + (backward ? 1 : 0);
    }

    void EmitP2P(bool send, int peer, int microbatch, int edge, bool backward, double bytes, int64_t dep) {
        ProgNode n;
        n.type = send ? EtNodeType::comm_send : EtNodeType::comm_recv;
        n.role = NodeRole::pipeline;
        n.kind = OpKind::collective;
        n.name = Name(std::string(send ? "send." : "recv.") + (backward ? "grad" : "act"));
        n.peer = static_cast<int8_t>(peer);
        n.tag = Tag(microbatch, edge, backward);
        n.comm_bytes = static_cast<int64_t>(bytes);
        uint32_t id = Emit(n, {dep});
        if (!send) chain = id;
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
};

}  // namespace

StageProgram BuildStageProgram(const Job& job, int stage) {
    ProgramBuilder B(job);
    B.prog.stage = stage;
    const ParallelConfig& p = job.par;
    const int S = job.virtual_stages(), M = p.microbatches();
    const double wbytes = BytesOf(job.model.precision.compute), gbytes = BytesOf(job.model.precision.grad);
    const Block* layer_block = job.graph.Find(BlockKind::dense_layer);
    const double act_bytes = job.V(layer_block->boundary_bytes);
    const double bucket = p.bucket_mb * 1024 * 1024;
    const bool zero3 = p.zero >= 3;
    const CollectiveType grad_coll = p.zero >= 1 ? CollectiveType::reduce_scatter : CollectiveType::all_reduce;

    std::vector<std::vector<StageBlock>> blocks(p.chunks());
    for (int c = 0; c < p.chunks(); ++c) blocks[c] = BlocksOfVirtualStage(job, c * p.pp + stage);

    // Gradient buckets of the last microbatch's backward (one reduction per iteration, overlapped).
    double pending_dense = 0, pending_expert = 0;
    int bucket_no = 0;
    auto flush = [&](bool force) {
        if (pending_dense > 0 && (force || pending_dense >= bucket)) {
            B.EmitColl("dp.grad_bucket" + std::to_string(bucket_no++), NodeRole::grad_sync, grad_coll, GroupKind::dp,
                       pending_dense, false, B.chain);
            pending_dense = 0;
        }
        if (pending_expert > 0 && (force || pending_expert >= bucket)) {
            B.EmitColl("edp.grad_bucket" + std::to_string(bucket_no++), NodeRole::grad_sync, grad_coll, GroupKind::edp,
                       pending_expert, false, B.chain);
            pending_expert = 0;
        }
    };

    for (const PipelineStep& step : PipelineSchedule(p, stage)) {
        const int g = step.chunk * p.pp + stage;
        const auto& bl = blocks[step.chunk];
        if (step.forward) {
            if (g > 0) B.EmitP2P(false, -1, step.microbatch, g - 1, false, act_bytes, B.chain);
            for (const StageBlock& sb : bl) {
                std::string pre = B.Prefix(sb);
                if (zero3) {
                    B.EmitColl(pre + "zero3.gather", NodeRole::grad_sync, CollectiveType::all_gather, GroupKind::dp,
                               B.WeightBytes(*sb.block, false, wbytes), true);
                    B.EmitColl(pre + "zero3.gather_experts", NodeRole::grad_sync, CollectiveType::all_gather,
                               GroupKind::edp, B.WeightBytes(*sb.block, true, wbytes), true);
                }
                for (const Op& op : sb.block->forward) B.EmitOp(op, NodeRole::forward, pre);
            }
            if (g < S - 1) B.EmitP2P(true, +1, step.microbatch, g, false, act_bytes, B.chain);
        } else {
            if (g < S - 1) B.EmitP2P(false, +1, step.microbatch, g, true, act_bytes, B.chain);
            const bool last_pass = step.microbatch == M - 1;
            for (auto it = bl.rbegin(); it != bl.rend(); ++it) {
                const StageBlock& sb = *it;
                std::string pre = B.Prefix(sb);
                bool layer = sb.layer >= 0;
                if (zero3) {
                    B.EmitColl(pre + "zero3.gather", NodeRole::grad_sync, CollectiveType::all_gather, GroupKind::dp,
                               B.WeightBytes(*sb.block, false, wbytes), true);
                    B.EmitColl(pre + "zero3.gather_experts", NodeRole::grad_sync, CollectiveType::all_gather,
                               GroupKind::edp, B.WeightBytes(*sb.block, true, wbytes), true);
                }
                if (layer && p.recompute != Recompute::none)
                    for (const Op& op : sb.block->forward)
                        if (p.recompute == Recompute::full || op.selective)
                            B.EmitOp(op, NodeRole::recompute, pre + "recompute.");
                for (const Op& op : sb.block->backward) B.EmitOp(op, NodeRole::backward, pre);
                if (zero3) {
                    // ZeRO-3 / FSDP reduce-scatter each block's gradients as soon as they exist.
                    B.EmitColl(pre + "zero3.grad_scatter", NodeRole::grad_sync, CollectiveType::reduce_scatter,
                               GroupKind::dp, B.WeightBytes(*sb.block, false, gbytes), true);
                    B.EmitColl(pre + "zero3.grad_scatter_experts", NodeRole::grad_sync, CollectiveType::reduce_scatter,
                               GroupKind::edp, B.WeightBytes(*sb.block, true, gbytes), true);
                } else if (last_pass) {
                    pending_dense += B.WeightBytes(*sb.block, false, gbytes);
                    pending_expert += B.WeightBytes(*sb.block, true, gbytes);
                    flush(false);
                }
            }
            if (g > 0) B.EmitP2P(true, -1, step.microbatch, g - 1, true, act_bytes, B.chain);
        }
    }
    if (!zero3) flush(true);

    // Tied embeddings across pipeline stages: the first stage's embedding and the last stage's LM head
    // hold copies of one matrix, whose gradients are summed between them (Megatron's embedding group).
    if (job.model.tied_embeddings && p.pp > 1 && (stage == 0 || stage == p.pp - 1)) {
        double bytes = job.padded_vocab / p.tp * job.model.hidden * gbytes;
        B.EmitColl("embedding.tied_grad", NodeRole::grad_sync, CollectiveType::all_reduce, GroupKind::embed, bytes,
                   false, B.chain);
    }

    // Optimizer step (Adam): ~13 FLOPs per parameter; reads gradient, master, m, v; writes master, m, v
    // and the compute copy. ZeRO shards it over the data-parallel group.
    StageMemory mem = StageMemoryOf(job, stage);
    const PrecisionConfig& prec = job.model.precision;
    double shard = 1;
    if (p.zero >= 1) shard = mem.params > 0 ? 1.0 * p.dp * p.cp : 1;  // expert shards are close enough here
    double params = mem.params / shard;
    double master = prec.master == prec.compute ? 0 : BytesOf(prec.master);
    ProgNode opt;
    opt.type = EtNodeType::comp;
    opt.role = NodeRole::optimizer;
    opt.kind = OpKind::elementwise;
    opt.name = B.Name("optimizer.adam");
    opt.flops = static_cast<int64_t>(13 * params);
    opt.bytes = static_cast<uint64_t>(params * (gbytes + 2 * (master + 2 * BytesOf(prec.optimizer)) + wbytes));
    B.chain = B.Emit(opt, {B.chain, B.last_sync});
    if (p.zero == 1 || p.zero == 2) {
        double dense = 0, expert = 0;
        for (const auto& bl : blocks)
            for (const StageBlock& sb : bl) dense += B.WeightBytes(*sb.block, false, wbytes), expert += B.WeightBytes(*sb.block, true, wbytes);
        B.EmitColl("dp.param_gather", NodeRole::optimizer, CollectiveType::all_gather, GroupKind::dp, dense, true);
        B.EmitColl("edp.param_gather", NodeRole::optimizer, CollectiveType::all_gather, GroupKind::edp, expert, true);
    }
    return std::move(B.prog);
}

}  // namespace sc
