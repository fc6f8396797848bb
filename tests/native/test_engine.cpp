// The engine (src/engine): one request, one path to each result. Shards of a search or sweep merge into the
// unsharded result for any shard count and order; a snapshot does not see later edits of what it was taken
// from; the CLI prints exactly the engine's reports; each stage's error names its field.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/estimate.h"
#include "engine/search.h"
#include "engine/sweep.h"
#include "report/engine_report.h"
#include "report/search_report.h"
#include "test_util.h"

namespace {

const std::string kRoot = SC_SOURCE_DIR;

struct Inputs {
    sc::System h100;
    sc::CalibrationTable cal;
    sc::ModelConfig llama;
};

const Inputs& In() {
    static const Inputs in = [] {
        Inputs x;
        x.h100 = sc::ParseSystem(sctest::ReadFile(kRoot + "/presets/systems/dgx-h100-superpod.json"),
                                 sctest::ReadFile(kRoot + "/presets/hardware/h100-sxm.json"));
        x.cal = sc::ParseCalibration(sctest::ReadFile(kRoot + "/presets/calibration/measured.json"));
        x.llama = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/llama3-8b.json"));
        return x;
    }();
    return in;
}

// llama3-8b on 16 H100 at batch 64: small enough to search many times, large enough for many layouts.
sc::engine::Request SearchRequest16() {
    sc::engine::Request r;
    r.model = In().llama;
    r.system = &In().h100;
    r.calibration = &In().cal;
    r.search.gpus = 16;
    r.search.batch = 64;
    r.search.top_k = 10;
    return r;
}

sc::SearchResult Sharded(const sc::engine::SearchSnapshot& snap, int count, bool reversed) {
    std::vector<sc::SearchResult> parts;
    for (int i = 0; i < count; ++i)
        parts.push_back(sc::engine::RunSearchShard(snap, reversed ? count - 1 - i : i, count));
    return sc::engine::MergeSearch(snap, std::move(parts));
}

TEST(Engine, SearchShardsMergeIntoTheUnshardedSearchForAnyCountAndOrder) {
    const sc::engine::SearchSnapshot snap = sc::engine::SnapshotSearch(SearchRequest16());
    const sc::SearchResult whole = sc::engine::RunSearchShard(snap, 0, 1);
    ASSERT_GE(whole.top.size(), 2u);  // something to order
    ASSERT_GT(whole.stats.valid, 100u);
    const std::string expected = sc::SearchReportJson(snap, whole);
    for (int count : {2, 3, 7, 64})
        for (bool reversed : {false, true})
            EXPECT_EQ(sc::SearchReportJson(snap, Sharded(snap, count, reversed)), expected) << count << " shards";
}

TEST(Engine, SearchSnapshotDoesNotSeeLaterEditsOfItsSources) {
    sc::System sys = In().h100;
    sc::CalibrationTable cal = In().cal;
    sc::engine::Request r = SearchRequest16();
    r.system = &sys;
    r.calibration = &cal;
    const sc::engine::SearchSnapshot snap = sc::engine::SnapshotSearch(r);
    const std::string before = sc::SearchReportJson(snap, sc::engine::RunSearchShard(snap, 0, 1));
    // Edit everything the snapshot was taken from: a slower network, no calibration curves, a deeper model.
    for (sc::NetworkLevel& l : sys.levels) l.bandwidth_gbps /= 10;
    cal = sc::CalibrationTable{};
    r.model.layers = 16;
    EXPECT_EQ(sc::SearchReportJson(snap, sc::engine::RunSearchShard(snap, 0, 1)), before);
    // ...and the edits do change a search taken after them: the comparison above could fail.
    const sc::engine::SearchSnapshot edited = sc::engine::SnapshotSearch(r);
    EXPECT_NE(sc::SearchReportJson(edited, sc::engine::RunSearchShard(edited, 0, 1)), before);
}

TEST(Engine, SearchNamesTheBadField) {
    sc::engine::Request r = SearchRequest16();
    r.system = nullptr;
    EXPECT_EQ(sctest::ErrorOf([&] { sc::engine::SnapshotSearch(r); }).rfind("system: ", 0), 0u);
    const sc::engine::SearchSnapshot snap = sc::engine::SnapshotSearch(SearchRequest16());
    EXPECT_EQ(sctest::ErrorOf([&] { sc::engine::RunSearchShard(snap, 3, 3); }).rfind("shard: ", 0), 0u);
    r = SearchRequest16();
    r.search.batch = 0;
    const sc::engine::SearchSnapshot bad = sc::engine::SnapshotSearch(r);
    EXPECT_EQ(sctest::ErrorOf([&] { sc::engine::RunSearchShard(bad, 0, 1); }).rfind("batch: ", 0), 0u);
}

TEST(Engine, CliSearchPrintsTheEngineReportOnAnyThreadCount) {
    const sc::engine::SearchSnapshot snap = sc::engine::SnapshotSearch(SearchRequest16());
    const std::string expected = sc::SearchReportJson(snap, sc::engine::RunSearchShard(snap, 0, 1));
    for (const char* threads : {"1", "3"}) {
        const sctest::CliResult r = sctest::RunCli(
            std::string("search --model presets/models/llama3-8b.json --system dgx-h100-superpod --gpus 16 "
                        "--batch 64 --json --threads ") +
                threads,
            false);
        EXPECT_EQ(r.status, 0);
        EXPECT_EQ(r.out, expected) << threads << " threads";
    }
}

TEST(Engine, SweepShardsMergeIntoTheUnshardedRows) {
    sc::engine::Request r = SearchRequest16();
    r.sweep.axes.flops = {1, 2};
    r.sweep.axes.topology = {sc::Topology::two_tier, sc::Topology::fullflat};
    r.sweep.axes.overlap = {sc::kOverlapAll, 0};
    const sc::engine::SweepSnapshot snap = sc::engine::SnapshotSweep(r);
    ASSERT_EQ(snap.models.size(), 1u);  // no models listed: the request's own
    auto texts = [&](const std::vector<sc::SweepRow>& rows) {
        std::vector<std::string> t;
        for (const sc::SweepRow& row : rows) t.push_back(sc::SweepRowText(row, snap.request, sc::SweepFormat::csv));
        return t;
    };
    const std::vector<std::string> whole = texts(sc::engine::RunSweepShard(snap, 0, 1));
    ASSERT_EQ(whole.size(), 8u);
    for (int count : {2, 3, 5}) {
        std::vector<std::vector<sc::SweepRow>> parts;
        for (int i = count - 1; i >= 0; --i) parts.push_back(sc::engine::RunSweepShard(snap, i, count));  // any order
        EXPECT_EQ(texts(sc::engine::MergeSweep(std::move(parts))), whole) << count << " shards";
    }
}

TEST(Engine, SweepNamesTheBadField) {
    sc::engine::Request r = SearchRequest16();
    r.system = nullptr;
    EXPECT_EQ(sctest::ErrorOf([&] { sc::engine::SnapshotSweep(r); }).rfind("system: ", 0), 0u);
    r = SearchRequest16();
    r.sweep.axes.flops = {};
    EXPECT_NE(sctest::ErrorOf([&] { sc::engine::SnapshotSweep(r); }).find("flops"), std::string::npos);
}

TEST(Engine, EvaluateKeepsEachStagesErrorAndLeavesOutTheStagesAfterIt) {
    sc::engine::Request r;
    r.model = In().llama;
    r.system = &In().h100;
    r.calibration = &In().cal;
    r.parallel = sc::ParseParallelSpec("tp=2,pp=2,dp=4,batch=32");
    sc::engine::Evaluation ok = sc::engine::Evaluate(r);
    EXPECT_TRUE(ok.model_error.empty() && ok.parallel_error.empty() && ok.training_error.empty());
    EXPECT_TRUE(ok.job && ok.training && ok.summary);

    r.parallel = sc::ParseParallelSpec("pp=7");
    sc::engine::Evaluation bad_split = sc::engine::Evaluate(r);
    EXPECT_EQ(bad_split.parallel_error.rfind("pp: pp=7 does not divide 32 layers", 0), 0u) << bad_split.parallel_error;
    EXPECT_FALSE(bad_split.job || bad_split.training || bad_split.summary);
    // The same message the CLI's estimate throws for the same request.
    EXPECT_EQ(sctest::ErrorOf([&] { sc::engine::RunEstimate(r); }), bad_split.parallel_error);
    const std::string page = sc::PageReportText(r, bad_split);
    EXPECT_NE(page.find("\nparallel error: pp: pp=7"), std::string::npos) << page;

    r.model.heads = 7;
    sc::engine::Evaluation bad_model = sc::engine::Evaluate(r);
    EXPECT_FALSE(bad_model.model_error.empty());
    EXPECT_TRUE(bad_model.parallel_error.empty());
    EXPECT_EQ(sc::PageReportText(r, bad_model), "Model: " + r.model.name + "\nerror: " + bad_model.model_error + "\n");

    r = sc::engine::Request{};
    r.model = In().llama;
    r.parallel = sc::ParseParallelSpec("tp=2,dp=2");
    sc::engine::Evaluation no_cluster = sc::engine::Evaluate(r);  // no cluster: no estimate, a summary still
    EXPECT_FALSE(no_cluster.training);
    EXPECT_TRUE(no_cluster.training_error.empty());
    EXPECT_TRUE(no_cluster.summary);
}

TEST(Engine, CliEstimateAndSummaryPrintTheEngineReports) {
    sc::engine::Request r;
    r.model = In().llama;
    r.parallel = sc::ParseParallelSpec("tp=2,pp=2,dp=4,batch=32");
    EXPECT_EQ(sctest::RunCli("estimate --model presets/models/llama3-8b.json", false).out,
              sc::EstimateReportText(r, sc::engine::RunEstimate(r)));
    EXPECT_EQ(
        sctest::RunCli("summary --model presets/models/llama3-8b.json --parallel tp=2,pp=2,dp=4,batch=32 --json", false)
            .out,
        sc::SummaryReportJson(sc::engine::RunSummary(r)));
    r.system = &In().h100;
    r.calibration = &In().cal;
    EXPECT_EQ(sctest::RunCli("estimate --model presets/models/llama3-8b.json --system dgx-h100-superpod "
                             "--parallel tp=2,pp=2,dp=4,batch=32 --json",
                             false)
                  .out,
              sc::EstimateReportJson(r, sc::engine::RunEstimate(r)));
}

}  // namespace
