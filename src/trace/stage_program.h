// The trace of one pipeline stage with communicators and peers left symbolic: every rank of the
// stage runs exactly this program (ranks form one equivalence class per stage); writing rank r's
// file only fills in r's group ids and pipeline peers. Built from the job's evaluated graph, so the
// FLOPs and bytes in a trace are the graph's.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parallel/job.h"
#include "trace/chakra_et.h"

namespace sc {

enum class NodeRole : uint8_t {
    forward,    // forward compute / TP, CP, EP collectives
    backward,   // input and weight gradients
    recompute,  // forward ops re-run before a backward (selective or full recomputation)
    pipeline,   // send / recv between stages
    grad_sync,  // data-parallel gradient reduction (and ZeRO-3 gathers / scatters)
    optimizer,  // optimizer step and ZeRO parameter all-gather after it
};

struct ProgNode {
    // Ordered widest first, so that the GEMM shape fits in what was padding: 72 bytes a node (80 before the shape).
    int64_t flops = 0;
    uint64_t bytes = 0;      // COMP: tensor_size
    int64_t comm_bytes = 0;  // COLL / SEND / RECV
    EtNodeType type = EtNodeType::comp;
    uint32_t name = 0;   // index into StageProgram::names
    int32_t groups = 1;  // COMP matmul: equal GEMMs it stands for (grouped expert GEMM)
    CollectiveType coll = CollectiveType::all_reduce;
    int32_t tag = 0;
    uint32_t dep_begin = 0, dep_count = 0;     // into StageProgram::deps (indices of earlier nodes)
    float gemm_m = 0, gemm_n = 0, gemm_k = 0;  // COMP matmul: one GEMM's shape (GemmDimsOf; 0: by FLOP count)
    NodeRole role = NodeRole::forward;
    OpKind kind = OpKind::elementwise;  // COMP: what kind of op (matmul, attention, ...)
    bool high_precision = false;        // COMP matmul: 16-bit even in an fp8 model (Op::high_precision)
    GroupKind group = GroupKind::tp;    // COLL: which communicator
    int8_t peer = 0;                    // SEND / RECV: +1 next stage, -1 previous stage
    bool async = false;                 // COLL: runs beside the next main-stream node (Op::async)
};

struct StageProgram {
    int stage = 0;
    std::vector<ProgNode> nodes;  // topological order; node i gets id i
    std::vector<uint32_t> deps;
    std::vector<std::string> names;
};

// Trace nodes (README "Limits"). A program kept in memory takes ~90 bytes a node and its encoding ~90 more, so
// what a trace writer or a replay holds at once (every stage's program or bytes, in the worst case) stops at 2^24
// nodes together: a stage of 16.6 million nodes takes the page's wasm memory to 2.60 GiB of its 4 GB (a writer
// drops the program it built for a stage's ranks once they are encoded, trace/rank_traces.h, and a kept program's
// arrays are sized from its first steps, StageProgramStream::Advance; the heap keeps its high-water). The summary streams each stage's nodes and keeps none, so its
// bound is time (60-100 million nodes a second on one core natively, about a third of that in wasm: a stage of
// 2^28 in 3-5 s natively; the page counts it over frames, trace/summary.h JobSummarizer). Past either,
// building throws sc::Error naming the batch and what would bring the count down.
inline constexpr uint64_t kMaxHeldTraceNodes = uint64_t{1} << 24;
inline constexpr uint64_t kMaxStreamedStageNodes = uint64_t{1} << 28;

// At most `max_nodes` nodes: what is left of kMaxHeldTraceNodes beside the programs already held.
StageProgram BuildStageProgram(const Job& job, int stage, uint64_t max_nodes = kMaxHeldTraceNodes);

// The same program node by node, in order, each node handed to `visit` with the program's names so far and
// then dropped (the summary): memory does not grow with the node count. Returns the program with its names
// and stage but no nodes or deps.
using NodeVisitor = std::function<void(const ProgNode& node, const std::vector<std::string>& names)>;
StageProgram VisitStageProgram(const Job& job, int stage, const NodeVisitor& visit,
                               uint64_t max_nodes = kMaxStreamedStageNodes);

// One stage's program built a few pipeline steps at a time, with the nodes, in the order, that one go builds:
// the two functions above run it to the end; the page's summary (trace/summary.h JobSummarizer) runs a slice a
// frame, so a stage of 10^8 nodes never stops the page. `job` and `visit` (null: the nodes are kept) must outlive
// it.
class StageProgramStream {
public:
    StageProgramStream(const Job& job, int stage, const NodeVisitor* visit, uint64_t max_nodes);
    ~StageProgramStream();
    StageProgramStream(StageProgramStream&&) noexcept;
    StageProgramStream& operator=(StageProgramStream&&) noexcept;
    // Builds whole pipeline steps until at least `min_nodes` (>= 1) more nodes have been emitted or the program is
    // complete (after the last step: the last gradient buckets, the tied-embedding reduction, the optimizer).
    // Returns true once complete. Throws sc::Error past max_nodes, as the functions above do.
    bool Advance(uint64_t min_nodes);
    double Progress() const;  // the share of the schedule's steps built, 0 to 1
    StageProgram Take();      // once complete: the program (names and stage only, when visited)

private:
    struct Builder;
    std::unique_ptr<Builder> b_;
};

// The graph's collective and group as the trace names them.
CollectiveType ToChakra(Collective c);
GroupKind ToGroupKind(Group g);

// comm_size as ASTRA-sim reads it, from the bytes of the whole buffer (the graph's size: all-reduce buffer,
// all-gather output, reduce-scatter input, all-to-all send buffer): the same, except an all-gather, which
// ASTRA-sim's ring reads as one rank's contribution (its output is group_size x comm_size).
double TraceCommSize(CollectiveType c, int group_size, double buffer_bytes);
// The inverse: the whole buffer a trace node's comm_size stands for (what the network model times).
double BufferBytesOf(CollectiveType c, int group_size, double comm_size);

}  // namespace sc
