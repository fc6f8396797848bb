// The building blocks of one stage's program (trace/stage_program.cpp, its only reader): nodes on the main stream,
// the data-parallel side stream, a pair's all-to-all windows, the pipeline's sends and receives, and the gradient
// buckets. Internal to the trace; the dependencies each kind of node takes are described in stage_program.cpp.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/error.h"
#include "parallel/job.h"
#include "parallel/layout.h"
#include "trace/stage_program.h"

namespace sc::trace_detail {

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
    // A node off the main stream that the next main-stream node waits for: in a pair's windows (Builder::PairLayers)
    // an all-to-all, under activation offloading a layer's copy (Builder::EmitCopy). window_comm: the last all-to-all
    // of the pair's communication stream (each waits for the one before it).
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

}  // namespace sc::trace_detail
