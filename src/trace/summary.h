// The compact summary of a job's traces: one entry per equivalence class of ranks (ranks whose
// traces are identical up to communicator ids and peers, i.e. one per pipeline stage), computed
// from one stage program each, never from the per-rank traces.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "parallel/job.h"
#include "parallel/layout.h"
#include "parallel/memory.h"
#include "trace/stage_program.h"

namespace sc {

struct CollectiveTotal {
    CollectiveType type;
    GroupKind group;
    int group_size = 0;
    uint64_t count = 0;
    double bytes = 0;  // summed comm_size
};

struct RankClass {
    int stage = 0;
    int ranks = 0;                    // how many ranks share this trace
    std::vector<int> example_ranks;   // up to 4
    std::array<uint64_t, 8> nodes{};  // by EtNodeType value
    uint64_t total_nodes = 0;
    double flops = 0;  // sum of num_ops
    double matmul_flops = 0, attention_flops = 0, recompute_flops = 0;
    double compute_bytes = 0;  // sum of tensor_size
    std::vector<CollectiveTotal> collectives;
    uint64_t sends = 0, recvs = 0;
    double send_bytes = 0, recv_bytes = 0;
    // CPU activation offloading's copies (MEM_STORE out, MEM_LOAD back in) and their bytes.
    uint64_t host_copies = 0;
    double host_copy_bytes = 0;
    StageMemory memory;
};

struct TraceSummary {
    int world = 0;
    int microbatches = 0;
    std::vector<RankClass> classes;
    double total_flops = 0;  // over every rank
    double total_comm_bytes = 0;
};

RankClass SummarizeProgram(const Job& job, const StageProgram& prog);
TraceSummary SummarizeJob(const Job& job);
// One stage's class, its nodes streamed as SummarizeJob streams each stage's (the page's workers count a few each).
RankClass SummarizeStage(const Job& job, int stage);
// The summary of one class per stage, in stage order (SummarizeStage's), with the totals summed in that order as
// SummarizeJob sums them: the same doubles, bit for bit.
TraceSummary AssembleSummary(const Job& job, std::vector<RankClass> classes);
// The classes of stages shard, shard + count, ... (a thread of `stagecraft summary`, a worker of the page).
// Throws sc::Error for a shard outside [0, count).
std::vector<RankClass> SummarizeStageShard(const Job& job, int shard, int count);
// Every shard's classes placed by stage and assembled (AssembleSummary). Throws sc::Error("summary shard", ...)
// when a stage is missing, repeated or outside the job (a damaged shard).
TraceSummary MergeSummaryShards(const Job& job, std::vector<std::vector<RankClass>> shards);

// SummarizeJob a slice at a time: the page builds a large split's summary over several frames (app/app.cpp
// StepSummary) instead of stopping inside the edit (GPT-3 175B at pp=96 and 65,536 microbatches streams 10^9
// nodes). The same summary, bit for bit, as one call. `job` must outlive it.
class JobSummarizer {
public:
    explicit JobSummarizer(const Job& job);
    ~JobSummarizer();
    // Counts whole pipeline steps until at least `min_nodes` (>= 1) more nodes have been counted or every stage is
    // done; returns done(). Throws sc::Error as SummarizeJob does (a stage past kMaxStreamedStageNodes).
    bool Advance(uint64_t min_nodes);
    bool done() const;
    double Progress() const;  // the share of the stages' schedules counted, 0 to 1
    TraceSummary Take();      // once done

    struct Stage;  // the stage being counted (summary.cpp; SummarizeStage counts one alone)

private:
    const Job& job_;
    const Layout layout_;
    TraceSummary summary_;
    std::unique_ptr<Stage> stage_;  // the stage being counted (the next is summary_.classes.size())
    uint64_t nodes_ = 0;            // counted so far, over every stage
};

}  // namespace sc
