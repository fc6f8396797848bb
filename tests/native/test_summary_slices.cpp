// A stage's program built a slice at a time (StageProgramStream), and a job's summary counted a slice at a time
// (JobSummarizer, the page's summary of a large split over several frames), are what one go builds and counts:
// the same nodes, dependencies and names in the same order, and the same summary bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "app/summary_driver.h"
#include "config/error.h"
#include "parallel/job.h"
#include "test_util.h"
#include "trace/stage_program.h"
#include "trace/summary.h"
#include "trace_test_util.h"

namespace {

struct Case {
    bool moe;
    const char* spec;
    bool fp8 = false;  // GEMMs in fp8: their weights quantized in a chunk's first forward only
};

// Every schedule, ZeRO stage and kind of communication the builder keeps state for between steps: buckets filled
// over microbatches, fp8 quantization once a chunk, ZeRO-3 prefetch, split backward, DualPipe's two directions, the
// tied embedding's reduction, scatter/gather of the pipeline boundary.
const Case kCases[] = {
    {false, "tp=2,pp=2,dp=2,batch=8"},
    {false, "tp=2,pp=2,dp=2,batch=16,schedule=interleaved,vstages=2,recompute=selective,zero=1", true},
    {false, "pp=2,dp=2,batch=8,zero=2,bucket_mb=1,recompute=full"},
    {false, "tp=2,pp=2,dp=2,batch=8,zero=3"},
    {false, "pp=4,batch=8,schedule=zbh1"},
    {false, "pp=2,dp=2,batch=8,schedule=dualpipe"},
    {true, "tp=2,sp=1,ep=2,pp=2,dp=2,batch=8,recompute=op"},
    {false, "dp=4,batch=8,zero=3,offload_layers=2"},  // activation offloading's host copies
};

sc::Job JobOf(const Case& c, bool flash = true) {
    sc::KernelChoices k;
    k.flash_attention = flash;  // off: the score GEMMs the summary counts as attention by name
    sc::ModelConfig m = c.moe ? sctest::SmallMoe() : sctest::SmallGpt();
    if (c.fp8) m.precision.compute = sc::Precision::fp8;  // gradients and activations stay bf16
    return sc::MakeJob(m, sc::ParseParallelSpec(c.spec), k);
}

void ExpectSameNode(const sc::ProgNode& a, const sc::ProgNode& b, size_t i) {
    SCOPED_TRACE("node " + std::to_string(i));
    EXPECT_EQ(a.flops, b.flops);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.comm_bytes, b.comm_bytes);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.groups, b.groups);
    EXPECT_EQ(a.coll, b.coll);
    EXPECT_EQ(a.tag, b.tag);
    EXPECT_EQ(a.dep_begin, b.dep_begin);
    EXPECT_EQ(a.dep_count, b.dep_count);
    EXPECT_EQ(a.gemm_m, b.gemm_m);
    EXPECT_EQ(a.gemm_n, b.gemm_n);
    EXPECT_EQ(a.gemm_k, b.gemm_k);
    EXPECT_EQ(a.role, b.role);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.high_precision, b.high_precision);
    EXPECT_EQ(a.group, b.group);
    EXPECT_EQ(a.peer, b.peer);
    EXPECT_EQ(a.async, b.async);
}

// Bit for bit: the slices count the same nodes in the same order, so even the sums of doubles agree exactly.
void ExpectSameSummary(const sc::TraceSummary& a, const sc::TraceSummary& b) {
    EXPECT_EQ(a.world, b.world);
    EXPECT_EQ(a.microbatches, b.microbatches);
    EXPECT_EQ(std::memcmp(&a.total_flops, &b.total_flops, sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(&a.total_comm_bytes, &b.total_comm_bytes, sizeof(double)), 0);
    ASSERT_EQ(a.classes.size(), b.classes.size());
    for (size_t i = 0; i < a.classes.size(); ++i) {
        const sc::RankClass &x = a.classes[i], &y = b.classes[i];
        SCOPED_TRACE("class " + std::to_string(i));
        EXPECT_EQ(x.stage, y.stage);
        EXPECT_EQ(x.ranks, y.ranks);
        EXPECT_EQ(x.example_ranks, y.example_ranks);
        EXPECT_EQ(x.nodes, y.nodes);
        EXPECT_EQ(x.total_nodes, y.total_nodes);
        for (auto [p, q] : {std::pair{x.flops, y.flops},
                            {x.matmul_flops, y.matmul_flops},
                            {x.attention_flops, y.attention_flops},
                            {x.recompute_flops, y.recompute_flops},
                            {x.compute_bytes, y.compute_bytes},
                            {x.send_bytes, y.send_bytes},
                            {x.recv_bytes, y.recv_bytes},
                            {x.host_copy_bytes, y.host_copy_bytes}})
            EXPECT_EQ(std::memcmp(&p, &q, sizeof(double)), 0) << p << " vs " << q;
        EXPECT_EQ(x.sends, y.sends);
        EXPECT_EQ(x.recvs, y.recvs);
        EXPECT_EQ(x.host_copies, y.host_copies);
        ASSERT_EQ(x.collectives.size(), y.collectives.size());
        for (size_t k = 0; k < x.collectives.size(); ++k) {
            EXPECT_EQ(x.collectives[k].type, y.collectives[k].type);
            EXPECT_EQ(x.collectives[k].group, y.collectives[k].group);
            EXPECT_EQ(x.collectives[k].group_size, y.collectives[k].group_size);
            EXPECT_EQ(x.collectives[k].count, y.collectives[k].count);
            EXPECT_EQ(x.collectives[k].bytes, y.collectives[k].bytes);
        }
        const sc::StageMemory &m = x.memory, &n = y.memory;
        EXPECT_EQ(
            std::tie(m.params, m.weights, m.gradients, m.optimizer, m.activations, m.peak_inflight, m.host_activations),
            std::tie(n.params, n.weights, n.gradients, n.optimizer, n.activations, n.peak_inflight,
                     n.host_activations));
    }
}

TEST(StageProgramStream, SlicesBuildWhatOneGoBuilds) {
    for (const Case& c : kCases) {
        const sc::Job job = JobOf(c);
        for (int stage = 0; stage < job.par.pp; ++stage) {
            const sc::StageProgram whole = sc::BuildStageProgram(job, stage);
            for (uint64_t slice : {uint64_t{1}, uint64_t{97}}) {
                SCOPED_TRACE(std::string(c.spec) + " stage " + std::to_string(stage) + " slice " +
                             std::to_string(slice));
                sc::StageProgramStream stream(job, stage, nullptr, sc::kMaxHeldTraceNodes);
                int calls = 0;
                double progress = 0;
                while (!stream.Advance(slice)) {
                    ++calls;
                    EXPECT_GT(stream.Progress(), progress);  // every call builds at least one step
                    progress = stream.Progress();
                    ASSERT_LT(progress, 1);
                }
                EXPECT_EQ(stream.Progress(), 1);
                EXPECT_GT(calls, 1);  // really in slices
                const sc::StageProgram sliced = stream.Take();
                EXPECT_EQ(sliced.stage, whole.stage);
                EXPECT_EQ(sliced.names, whole.names);
                EXPECT_EQ(sliced.deps, whole.deps);
                ASSERT_EQ(sliced.nodes.size(), whole.nodes.size());
                for (size_t i = 0; i < whole.nodes.size(); ++i) ExpectSameNode(sliced.nodes[i], whole.nodes[i], i);
            }
        }
    }
}

// The node limit stops a stream where it stops one go, with the same message.
TEST(StageProgramStream, TheNodeLimitStopsSlicesAsItStopsOneGo) {
    const sc::Job job = JobOf(kCases[0]);
    const uint64_t limit = sc::BuildStageProgram(job, 0).nodes.size() - 1;
    std::string whole, sliced;
    try {
        sc::BuildStageProgram(job, 0, limit);
    } catch (const sc::Error& e) {
        whole = e.what();
    }
    sc::StageProgramStream stream(job, 0, nullptr, limit);
    try {
        while (!stream.Advance(7)) {}
    } catch (const sc::Error& e) {
        sliced = e.what();
    }
    EXPECT_NE(whole.find("nodes held at once"), std::string::npos) << whole;
    EXPECT_EQ(sliced, whole);
}

TEST(JobSummarizer, SlicesCountWhatSummarizeJobCounts) {
    for (const Case& c : kCases) {
        for (bool flash : {true, false}) {
            const sc::Job job = JobOf(c, flash);
            const sc::TraceSummary whole = sc::SummarizeJob(job);
            if (!flash) {  // the unfused core's score GEMMs are found by name and counted as attention
                double attention = 0;
                for (const sc::RankClass& rc : whole.classes) attention += rc.attention_flops;
                EXPECT_GT(attention, 0) << c.spec;
            }
            for (uint64_t slice : {uint64_t{1}, uint64_t{97}, uint64_t{5000}}) {
                SCOPED_TRACE(std::string(c.spec) + (flash ? "" : " unfused") + " slice " + std::to_string(slice));
                sc::JobSummarizer s(job);
                EXPECT_EQ(s.Progress(), 0);
                int calls = 0;
                double progress = 0;
                while (!s.Advance(slice)) {
                    ++calls;
                    EXPECT_GT(s.Progress(), progress);
                    progress = s.Progress();
                    ASSERT_LT(progress, 1);
                }
                EXPECT_TRUE(s.done());
                EXPECT_EQ(s.Progress(), 1);
                if (slice < 5000) {
                    EXPECT_GT(calls, 1);
                }
                ExpectSameSummary(s.Take(), whole);
            }
        }
    }
}

// The page's workers count whole stages (SummarizeStage), send them as text and the page sums them in stage order
// (AssembleSummary): the same summary bit for bit, whichever shard held which stage.
TEST(JobSummarizer, StagesCountedApartAndSentAsTextSumToSummarizeJob) {
    for (const Case& c : kCases) {
        SCOPED_TRACE(c.spec);
        const sc::Job job = JobOf(c);
        const sc::TraceSummary whole = sc::SummarizeJob(job);
        for (int shards : {1, 2, 3}) {
            std::vector<std::vector<sc::RankClass>> parts;
            for (int shard = shards - 1; shard >= 0; --shard)  // in any order
                parts.push_back(sc::app::DecodeSummaryShard(
                    sc::app::EncodeSummaryShard(sc::SummarizeStageShard(job, shard, shards))));
            ExpectSameSummary(sc::MergeSummaryShards(job, std::move(parts)), whole);
        }
    }
}

// `stagecraft summary --threads N` counts stages on N threads; the text and JSON do not depend on N (4 stages on 1,
// 3 and 8 threads: 8 runs 4, one a stage).
TEST(JobSummarizer, TheCliSummaryIsTheSameOnAnyNumberOfThreads) {
    const std::string args = "summary --model presets/models/llama3-8b.json --parallel tp=2,pp=4,dp=2,batch=64 ";
    for (const char* format : {"", "--json "}) {
        const sctest::CliResult one = sctest::RunCli(args + format + "--threads 1");
        ASSERT_EQ(one.status, 0) << one.out;
        for (const char* threads : {"--threads 3", "--threads 8", ""})
            EXPECT_EQ(sctest::RunCli(args + format + threads).out, one.out) << threads;
    }
    EXPECT_EQ(sctest::RunCli(args + "--threads 0").out,
              "stagecraft summary: error: --threads: expected 1 to 1024 threads, got 0\n");
}

}  // namespace
