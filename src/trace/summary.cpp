#include "trace/summary.h"

#include <string_view>

#include "config/error.h"
#include "config/numbers.h"

namespace sc {

namespace {

// graph/transformer_attention.cpp MaterializedAttentionCore's GEMMs, under any "L<i>." / "recompute." prefix.
bool IsScoreGemm(std::string_view name) {
    return name.find("attn.scores") != std::string_view::npos || name.find("attn.context") != std::string_view::npos;
}

}  // namespace

namespace {

// The stage's class before its nodes: ranks, examples, memory.
RankClass ClassOf(const Job& job, const Layout& layout, int stage) {
    RankClass rc;
    rc.stage = stage;
    rc.ranks = layout.world() / job.par.pp;
    for (int r = 0; r < layout.world() && rc.example_ranks.size() < 4; ++r)
        if (layout.Stage(r) == stage) rc.example_ranks.push_back(r);
    rc.memory = StageMemoryOf(job, stage);
    return rc;
}

// Whether each name of a stage's program is a score GEMM, looked up once per name (searching the name of every node
// was a tenth of the summary's time).
struct ScoreGemmNames {
    std::vector<int8_t> known;  // by name index: -1 not looked at yet, 0 no, 1 yes
    bool operator()(uint32_t name, const std::vector<std::string>& names) {
        if (name >= known.size()) known.resize(names.size(), -1);
        if (known[name] < 0) known[name] = IsScoreGemm(names[name]) ? 1 : 0;
        return known[name] == 1;
    }
};

void Count(const Layout& layout, const ProgNode& n, const std::vector<std::string>& names, ScoreGemmNames& score,
           RankClass& rc) {
    rc.nodes[static_cast<int>(n.type)]++;
    rc.total_nodes++;
    switch (n.type) {
        case EtNodeType::comp:
            rc.flops += n.flops;
            rc.compute_bytes += n.bytes;
            // Attention is the fused core's nodes, or the unfused core's score GEMMs (QK^T, AV and their
            // gradients; KernelChoices::flash_attention = false): the same query-key work either way.
            // A hybrid model's SSD scan counts with attention (graph/model_stats.cpp does the same).
            if (n.kind == OpKind::attention || n.kind == OpKind::scan ||
                (n.kind == OpKind::matmul && score(n.name, names)))
                rc.attention_flops += n.flops;
            else if (n.kind == OpKind::matmul) rc.matmul_flops += n.flops;
            if (n.role == NodeRole::recompute) rc.recompute_flops += n.flops;
            break;
        case EtNodeType::comm_coll: {
            CollectiveTotal* t = nullptr;
            for (CollectiveTotal& c : rc.collectives)
                if (c.type == n.coll && c.group == n.group) t = &c;
            if (!t)
                rc.collectives.push_back({n.coll, n.group, layout.GroupSize(n.group), 0, 0}),
                    t = &rc.collectives.back();
            t->count++;
            t->bytes += n.comm_bytes;
            break;
        }
        case EtNodeType::comm_send: rc.sends++, rc.send_bytes += n.comm_bytes; break;
        case EtNodeType::comm_recv: rc.recvs++, rc.recv_bytes += n.comm_bytes; break;
        case EtNodeType::mem_store:
        case EtNodeType::mem_load: rc.host_copies++, rc.host_copy_bytes += static_cast<double>(n.bytes); break;
        default: break;
    }
}

}  // namespace

RankClass SummarizeProgram(const Job& job, const StageProgram& prog) {
    const Layout layout(job.par);
    RankClass rc = ClassOf(job, layout, prog.stage);
    ScoreGemmNames score;
    for (const ProgNode& n : prog.nodes) Count(layout, n, prog.names, score, rc);
    return rc;
}

// The stage being streamed: its class so far and the stream that feeds it.
struct JobSummarizer::Stage {
    RankClass rc;
    ScoreGemmNames score;
    NodeVisitor visit;
    StageProgramStream stream;
    Stage(const Job& job, const Layout& layout, int stage)
        : rc(ClassOf(job, layout, stage)),
          visit([this, &layout](const ProgNode& n, const std::vector<std::string>& names) {
              Count(layout, n, names, score, rc);
          }),
          stream(job, stage, &visit, kMaxStreamedStageNodes) {}
};

namespace {

// A stage's class into the summary, after the stages before it: the totals are summed in stage order, so any way
// of counting the stages (one go, slices, the page's workers) gives the same doubles.
void AddClass(TraceSummary& s, RankClass rc) {
    s.total_flops += rc.flops * rc.ranks;
    double comm = rc.send_bytes;
    for (const CollectiveTotal& c : rc.collectives) comm += c.bytes;
    s.total_comm_bytes += comm * rc.ranks;
    s.classes.push_back(std::move(rc));
}

TraceSummary EmptySummary(const Job& job) {
    TraceSummary s;
    s.world = job.par.world();
    s.microbatches = job.par.microbatches();
    return s;
}

}  // namespace

RankClass SummarizeStage(const Job& job, int stage) {
    const Layout layout(job.par);
    JobSummarizer::Stage st(job, layout, stage);
    st.stream.Advance(UINT64_MAX);
    return std::move(st.rc);
}

TraceSummary AssembleSummary(const Job& job, std::vector<RankClass> classes) {
    TraceSummary s = EmptySummary(job);
    for (RankClass& rc : classes) AddClass(s, std::move(rc));
    return s;
}

std::vector<RankClass> SummarizeStageShard(const Job& job, int shard, int count) {
    RequireShard(shard, count);
    std::vector<RankClass> out;
    for (int stage = shard; stage < job.par.pp; stage += count) out.push_back(SummarizeStage(job, stage));
    return out;
}

TraceSummary MergeSummaryShards(const Job& job, std::vector<std::vector<RankClass>> shards) {
    std::vector<RankClass> classes(job.par.pp);
    std::vector<bool> have(job.par.pp, false);
    for (std::vector<RankClass>& shard : shards)
        for (RankClass& rc : shard) {
            if (rc.stage < 0 || rc.stage >= job.par.pp || have[rc.stage])
                throw Error("summary shard",
                            "stage " + std::to_string(rc.stage) +
                                (rc.stage < 0 || rc.stage >= job.par.pp ? " is outside the job" : " comes twice"));
            have[rc.stage] = true;
            classes[rc.stage] = std::move(rc);
        }
    for (int stage = 0; stage < job.par.pp; ++stage)
        if (!have[stage]) throw Error("summary shard", "no class of stage " + std::to_string(stage));
    return AssembleSummary(job, std::move(classes));
}

JobSummarizer::JobSummarizer(const Job& job) : job_(job), layout_(job.par), summary_(EmptySummary(job)) {}
JobSummarizer::~JobSummarizer() = default;

bool JobSummarizer::Advance(uint64_t min_nodes) {
    for (uint64_t before = nodes_; !done() && nodes_ - before < min_nodes;) {
        if (!stage_) stage_ = std::make_unique<Stage>(job_, layout_, static_cast<int>(summary_.classes.size()));
        const uint64_t stage_before = stage_->rc.total_nodes;
        const bool complete = stage_->stream.Advance(min_nodes - (nodes_ - before));
        nodes_ += stage_->rc.total_nodes - stage_before;
        if (!complete) continue;
        // Streamed: the summary's memory does not grow with the microbatches or the layers.
        AddClass(summary_, std::move(stage_->rc));
        stage_.reset();
    }
    return done();
}

bool JobSummarizer::done() const { return static_cast<int>(summary_.classes.size()) == job_.par.pp; }

double JobSummarizer::Progress() const {
    const double stages = static_cast<double>(summary_.classes.size()) + (stage_ ? stage_->stream.Progress() : 0);
    return stages / job_.par.pp;
}

TraceSummary JobSummarizer::Take() { return std::move(summary_); }

TraceSummary SummarizeJob(const Job& job) {
    JobSummarizer s(job);
    s.Advance(UINT64_MAX);
    return s.Take();
}

}  // namespace sc
