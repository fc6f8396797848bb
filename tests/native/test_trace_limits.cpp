// The stated limits (README "Limits") keep every count a trace carries an exact positive int64: jobs just under
// the microbatch-FLOP limit (2^61) and the weight limit (2^56), in the shapes that make a node's bytes largest
// against its FLOPs (tiny widths with huge token counts, fp32 everywhere, unfused attention, one token with
// huge weights), and the published 262k-token run that the earlier 2^60 limit refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "config/error.h"
#include "config/model_config.h"
#include "config/numbers.h"
#include "graph/model_stats.h"
#include "parallel/job.h"
#include "test_util.h"
#include "trace/rank_traces.h"
#include "trace/stage_program.h"
#include "trace/summary.h"
#include "trace_test_util.h"

namespace {

constexpr double kInt64Max = static_cast<double>(std::numeric_limits<int64_t>::max());

double MicrobatchFlops(const sc::ModelConfig& m, long long microbatch) {
    return sc::ComputeModelStats(m).model_flops_per_token() * static_cast<double>(m.seq) * microbatch;
}

// The largest microbatch whose training FLOPs stay under the limit.
long long MicrobatchNearTheLimit(const sc::ModelConfig& m) {
    return static_cast<long long>(sc::kMaxFlopsPerMicrobatch / MicrobatchFlops(m, 1));
}

// Every node of every stage: compute counts positive and below int64's range with a factor 2 to spare (the
// replay and the Perfetto export cast tensor_size to int64), communication sizes positive.
void ExpectCountsFit(const sc::Job& job, const std::string& what) {
    double largest = 0;
    for (int stage = 0; stage < job.par.pp; ++stage) {
        const sc::StageProgram prog = sc::BuildStageProgram(job, stage);
        for (const sc::ProgNode& n : prog.nodes) {
            if (n.type == sc::EtNodeType::comp) {
                ASSERT_GE(n.flops, 0) << what << " " << prog.names[n.name];
                ASSERT_TRUE(n.flops > 0 || n.bytes > 0) << what << " " << prog.names[n.name];
                ASSERT_LT(static_cast<double>(n.bytes), kInt64Max / 2) << what << " " << prog.names[n.name];
                largest = std::max({largest, static_cast<double>(n.flops), static_cast<double>(n.bytes)});
            } else {
                ASSERT_GT(n.comm_bytes, 0) << what << " " << prog.names[n.name];
                largest = std::max(largest, static_cast<double>(n.comm_bytes));
            }
        }
    }
    EXPECT_LT(largest, kInt64Max / 2) << what;
    const sc::TraceSummary sum = sc::SummarizeJob(job);
    EXPECT_GT(sum.total_flops, 0) << what;
    EXPECT_TRUE(std::isfinite(sum.total_flops)) << what;
}

// Widths of 8 with the longest sequence and a microbatch that brings the FLOPs to the limit: the passes over
// the activations and the fp32 logits are as large as they can be against the GEMMs' FLOPs.
TEST(TraceCounts, NearTheLimitsEveryCountIsAPositiveInt64) {
    sc::ModelConfig m = sctest::SmallGpt();
    m.layers = 1, m.hidden = 8, m.heads = 1, m.kv_heads = 1, m.head_dim = 8, m.ffn = 8, m.vocab = 1 << 20;
    m.seq = 1 << 20;
    m.precision = {sc::Precision::fp32, sc::Precision::fp32, sc::Precision::fp32, sc::Precision::fp32,
                   sc::Precision::fp32};
    for (bool flash : {true, false}) {
        sc::KernelChoices k;
        k.flash_attention = flash;
        sc::ParallelConfig p = sc::ParseParallelSpec("pp=1");
        p.microbatch = static_cast<int>(std::min<long long>(MicrobatchNearTheLimit(m), 1 << 24));
        p.batch = p.microbatch;
        ASSERT_GT(MicrobatchFlops(m, p.microbatch), sc::kMaxFlopsPerMicrobatch / 2);
        ExpectCountsFit(sc::MakeJob(m, p, k), flash ? "narrow, fused" : "narrow, unfused");
    }
}

// One token through the most weights the limit allows: the optimizer node's bytes (up to 32 a weight).
TEST(TraceCounts, TheWeightLimitKeepsTheOptimizerNodeInRange) {
    sc::ModelConfig m = sctest::SmallGpt();
    m.hidden = 1 << 20, m.heads = 1 << 10, m.kv_heads = 1 << 10, m.head_dim = 1 << 10, m.ffn = 1 << 22;
    m.vocab = 8, m.seq = 1;
    m.precision.grad = sc::Precision::fp32;
    const double per_layer = sc::ComputeModelStats(m).params / m.layers;
    m.layers = static_cast<int>(sc::kMaxParams / per_layer);
    ASSERT_LE(sc::ComputeModelStats(m).params, sc::kMaxParams);
    ASSERT_GT(sc::ComputeModelStats(m).params, sc::kMaxParams * 0.9);
    ExpectCountsFit(sc::MakeJob(m, sc::ParseParallelSpec("pp=1")), "2^56 weights");
    m.layers += 1;
    try {
        sc::MakeJob(m, sc::ParseParallelSpec("pp=1"));
        ADD_FAILURE() << "a model over 2^56 weights was accepted";
    } catch (const sc::Error& e) {
        EXPECT_EQ(e.field, "layers");
        EXPECT_NE(std::string(e.what()).find("weights; at most 2^56"), std::string::npos) << e.what();
    }
}

// The summary streams each stage's nodes instead of keeping them; what it counts is what the kept program holds.
TEST(TraceCounts, TheStreamedSummaryEqualsTheProgramItSummarizes) {
    for (const auto& [model, spec] : std::vector<std::pair<sc::ModelConfig, std::string>>{
             {sctest::SmallGpt(), "tp=2,pp=2,dp=2,batch=8,zero=1"},
             {sctest::SmallGpt(), "tp=2,pp=2,dp=1,batch=8,schedule=interleaved,vstages=2,recompute=full"},
             {sctest::SmallGpt(), "tp=2,dp=2,batch=8,zero=2,bucket_mb=1"},
             {sctest::SmallMoe(), "ep=4,dp=4,pp=2,batch=16,zero=3"}}) {
        const sc::Job job = sc::MakeJob(model, sc::ParseParallelSpec(spec));
        const sc::TraceSummary streamed = sc::SummarizeJob(job);
        ASSERT_EQ(streamed.classes.size(), static_cast<size_t>(job.par.pp)) << spec;
        for (int stage = 0; stage < job.par.pp; ++stage) {
            const sc::StageProgram prog = sc::BuildStageProgram(job, stage);
            const sc::RankClass kept = sc::SummarizeProgram(job, prog);
            const sc::RankClass& got = streamed.classes[stage];
            EXPECT_EQ(got.total_nodes, prog.nodes.size()) << spec;
            EXPECT_EQ(got.nodes, kept.nodes) << spec;
            EXPECT_EQ(got.flops, kept.flops) << spec;
            EXPECT_EQ(got.attention_flops, kept.attention_flops) << spec;
            EXPECT_EQ(got.compute_bytes, kept.compute_bytes) << spec;
            EXPECT_EQ(got.send_bytes, kept.send_bytes) << spec;
            ASSERT_EQ(got.collectives.size(), kept.collectives.size()) << spec;
            for (size_t i = 0; i < got.collectives.size(); ++i) {
                EXPECT_EQ(got.collectives[i].count, kept.collectives[i].count) << spec;
                EXPECT_EQ(got.collectives[i].bytes, kept.collectives[i].bytes) << spec;
            }
            EXPECT_EQ(got.memory.total(), kept.memory.total()) << spec;
        }
    }
}

// Past the node limit a program is refused with the batch named, whether kept or streamed; at the limit it is
// built. (The limits themselves, 2^24 and 2^28, are too large to reach in a unit test; the count is the same.)
TEST(TraceCounts, AProgramPastTheNodeLimitIsRefused) {
    const sc::Job job = sc::MakeJob(sctest::SmallGpt(), sc::ParseParallelSpec("pp=2,batch=64"));
    const uint64_t nodes = sc::BuildStageProgram(job, 1).nodes.size();
    EXPECT_EQ(sc::BuildStageProgram(job, 1, nodes).nodes.size(), nodes);
    try {
        sc::BuildStageProgram(job, 1, nodes - 1);
        ADD_FAILURE() << "a program past its node limit was built";
    } catch (const sc::Error& e) {
        EXPECT_EQ(e.field, "batch");
        EXPECT_EQ(std::string(e.what()),
                  "batch: the traces pass 16777216 nodes held at once (the most a trace or replay keeps in memory; "
                  "reached in pipeline stage 1) at 64 microbatches a step; use fewer microbatches (raise "
                  "microbatch), fewer layers a stage (raise pp) or larger gradient buckets (bucket_mb)");
    }
    uint64_t seen = 0;
    try {
        sc::VisitStageProgram(
            job, 1, [&](const sc::ProgNode&, const std::vector<std::string>&) { ++seen; }, nodes / 2);
        ADD_FAILURE() << "a streamed program past its node limit was summarized";
    } catch (const sc::Error& e) {
        EXPECT_EQ(std::string(e.what()), "batch: one rank's trace (pipeline stage 1) passes " +
                                             std::to_string(nodes / 2) +
                                             " nodes (the most the summary streams) at 64 microbatches a step; use "
                                             "fewer microbatches (raise microbatch), fewer layers a stage (raise pp) "
                                             "or larger gradient buckets (bucket_mb)");
    }
    EXPECT_EQ(seen, nodes / 2);
}

// A trace writer holds every stage's program it has built: the limit is on all of them together.
TEST(TraceCounts, TheWriterStopsWhenItsProgramsTogetherPassTheLimit) {
    const sc::Job job = sc::MakeJob(sctest::SmallGpt(), sc::ParseParallelSpec("pp=2,batch=16"));
    const uint64_t both = sc::BuildStageProgram(job, 0).nodes.size() + sc::BuildStageProgram(job, 1).nodes.size();
    sc::StringSink sink;
    sc::RankTraceWriter enough(job, {}, both);
    enough.WriteRank(0, sink);
    enough.WriteRank(1, sink);
    sc::RankTraceWriter short_by_one(job, {}, both - 1);
    short_by_one.WriteRank(0, sink);
    EXPECT_THROW(short_by_one.WriteRank(1, sink), sc::Error);
}

// A program the writer builds only to encode its stage's ranks is dropped once encoded (the page's 4 GB of wasm
// memory holds a stage at the node limit only so): the stage stays counted once, a program asked for again is
// built again within the limit, one asked for before the ranks is kept, and the ranks' bytes are the same either
// way (with enough nodes that the stage's bytes are reserved from the first ones' size).
TEST(TraceCounts, AStageEncodedForItsRanksIsHeldOnceAsBytes) {
    const sc::Job job = sc::MakeJob(sctest::SmallGpt(), sc::ParseParallelSpec("pp=2,batch=512"));
    const uint64_t n0 = sc::BuildStageProgram(job, 0).nodes.size(), n1 = sc::BuildStageProgram(job, 1).nodes.size();
    ASSERT_GT(n0, 4 * sc::RankTraceWriter::kSizeSample);
    sc::RankTraceWriter dropping(job, {}, n0 + n1), keeping(job, {}, n0 + n1);
    const sc::StageProgram* kept = &keeping.Program(0);
    for (int rank = 0; rank < 2; ++rank) {
        sc::StringSink a, b;
        dropping.WriteRank(rank, a);
        keeping.WriteRank(rank, b);
        EXPECT_EQ(a.bytes, b.bytes) << "rank " << rank;
    }
    EXPECT_EQ(dropping.ProgramNodesHeld(), 0u) << "the programs built to encode the ranks are dropped";
    EXPECT_EQ(keeping.ProgramNodesHeld(), n0) << "only the one asked for is kept";
    EXPECT_EQ(&keeping.Program(0), kept) << "a program asked for stays";
    EXPECT_EQ(dropping.Program(0).nodes.size(), n0) << "built again, counted once";
    EXPECT_EQ(dropping.Program(1).nodes.size(), n1);
    sc::RankTraceWriter short_by_one(job, {}, n0 + n1 - 1);
    sc::StringSink sink;
    short_by_one.WriteRank(0, sink);
    EXPECT_THROW(short_by_one.WriteRank(1, sink), sc::Error) << "the encoded stage still counts";
}

// The page's download prepares a stage a slice between frames (RankTraceWriter::Prepare): the same bytes as in one
// go, a stage left part-built for another is dropped and built again, and one past the node limit leaves nothing
// counted behind it.
TEST(TraceCounts, AStagePreparedInSlicesHasTheBytesOfOneGo) {
    const sc::Job job = sc::MakeJob(sctest::SmallGpt(), sc::ParseParallelSpec("pp=2,batch=512"));
    sc::RankTraceWriter whole(job);
    std::string expected[2];
    for (int rank = 0; rank < 2; ++rank) {
        sc::StringSink s;
        whole.WriteRank(rank, s);
        expected[rank] = s.bytes;
    }
    sc::RankTraceWriter sliced(job);
    int calls = 0;
    while (!sliced.Prepare(1, 1000)) ++calls;  // stage 1 part-built ...
    EXPECT_GT(calls, 10);
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(sliced.Prepare(0, 1000));  // ... stage 0 begun, then left
    for (int rank = 0; rank < 2; ++rank) {
        while (!sliced.Prepare(rank, 1000)) {}
        sc::StringSink s;
        sliced.WriteRank(rank, s);
        EXPECT_EQ(s.bytes, expected[rank]) << "rank " << rank;
    }
    EXPECT_EQ(sliced.ProgramNodesHeld(), 0u);
    EXPECT_THROW(sliced.Prepare(2, 1), sc::Error);

    const uint64_t n0 = sc::BuildStageProgram(job, 0).nodes.size(), n1 = sc::BuildStageProgram(job, 1).nodes.size();
    ASSERT_NE(n0, n1);  // the embedding and the LM head make the stages differ
    const int big = n0 > n1 ? 0 : 1;
    sc::RankTraceWriter tight(job, {}, std::min(n0, n1));
    EXPECT_THROW(
        {
            while (!tight.Prepare(big, 1000)) {}
        },
        sc::Error);
    EXPECT_TRUE(tight.Prepare(1 - big, UINT64_MAX)) << "the refused stage holds no room";
}

// torchtitan's Llama 3.1 405B at 262,144 tokens (CP8 TP8 PP8, 512 H100s): 1.49e18 FLOPs a microbatch.
TEST(TraceCounts, The262kTokenRunIsExpressed) {
    sc::ModelConfig m =
        sc::ParseModelConfig(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/models/llama3-405b.json"));
    m.seq = 262144;
    const sc::ParallelConfig p = sc::ParseParallelSpec("tp=8,cp=8,pp=8,dp=1,batch=8,uneven=1");
    ASSERT_GT(MicrobatchFlops(m, 1), 1.4e18);
    ExpectCountsFit(sc::MakeJob(m, p), "405B at 262k");
}

}  // namespace

// A kept stage program's arrays are sized from its first steps, not grown by doubling (the page's wasm heap held a
// stage near the node limit only so): its capacity is within a few percent of its nodes, on a pipeline stage with
// warm-up and cool-down and on one stage with a gradient sync at the end; the nodes are the same.
TEST(TraceCounts, AStageProgramIsSizedNearItsNodeCount) {
    for (const char* spec : {"pp=4,batch=4096", "dp=2,batch=8192,zero=2", "pp=2,batch=2048,schedule=zbh1"}) {
        const sc::Job job = sc::MakeJob(sctest::SmallGpt(), sc::ParseParallelSpec(spec));
        for (int stage : {0, job.par.pp - 1}) {
            const sc::StageProgram p = sc::BuildStageProgram(job, stage);
            ASSERT_GT(p.nodes.size(), size_t{100000}) << spec;
            const double room = static_cast<double>(p.nodes.capacity()) / static_cast<double>(p.nodes.size());
            const double deps = static_cast<double>(p.deps.capacity()) / static_cast<double>(p.deps.size());
            EXPECT_GE(room, 1.0);
            EXPECT_LT(room, 1.10) << spec << " stage " << stage << ": " << p.nodes.size() << " nodes";
            EXPECT_LT(deps, 1.10) << spec << " stage " << stage;
        }
    }
}
