// The page's app (src/app), built natively: its report text (the DOM mirror) is what the CLI prints for the
// same request, because both go through the engine and src/report; and its "Best layout" search runs over the
// snapshot taken at its start, so editing the page mid-search cannot merge shards of two models.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/app.h"
#include "app/app_state.h"
#include "app/summary_driver.h"
#include "config/error.h"
#include "engine/search.h"
#include "report/engine_report.h"
#include "test_util.h"

namespace {

const std::string kRoot = SC_SOURCE_DIR;

struct AppDeleter {
    void operator()(sc::app::AppState* s) const { sc::app::DestroyAppState(s); }
};
using App = std::unique_ptr<sc::app::AppState, AppDeleter>;

// The page as web/main.js sets it up: the presets, the clusters with their accelerators, the calibration.
App OpenPage() {
    App s(sc::app::CreateAppState());
    for (const char* m : {"llama3-8b", "mixtral-8x7b"})
        EXPECT_EQ(sc::app::AddPreset(*s, std::string(m) + ".json",
                                     sctest::ReadFile(kRoot + "/presets/models/" + m + ".json")),
                  "");
    EXPECT_EQ(sc::app::AddSystem(*s, "dgx-h100-superpod.json",
                                 sctest::ReadFile(kRoot + "/presets/systems/dgx-h100-superpod.json"),
                                 sctest::ReadFile(kRoot + "/presets/hardware/h100-sxm.json")),
              "");
    EXPECT_EQ(sc::app::SetCalibration(*s, sctest::ReadFile(kRoot + "/presets/calibration/measured.json")), "");
    return s;
}

std::string Cli(const std::string& args) {
    const sctest::CliResult r = sctest::RunCli(args, false);
    EXPECT_EQ(r.status, 0) << args;
    return r.out;
}

TEST(App, ReportTextEqualsWhatTheCliPrintsForTheSameRequest) {
    struct Case {
        const char* preset;
        const char* split;
    };
    for (const Case& c : {Case{"llama3-8b", "tp=2,pp=2,dp=4,batch=32"},
                          Case{"llama3-8b", "tp=8,pp=4,dp=2,batch=64,schedule=interleaved,recompute=selective,zero=1"},
                          Case{"mixtral-8x7b", "tp=4,sp=1,ep=4,dp=8,batch=64,zero=2"},
                          Case{"llama3-8b", "dp=8,batch=16,offload_layers=16"}}) {
        App s = OpenPage();
        ASSERT_TRUE(sc::app::SelectPreset(*s, c.preset));
        ASSERT_EQ(sc::app::SetParallel(*s, c.split), "");
        const std::string model = std::string("--model presets/models/") + c.preset + ".json";
        // --allow-oom: the MoE case does not fit, which the CLI reports by its exit status alone; the page shows
        // the same report.
        const std::string expected =
            Cli("estimate " + model + " --allow-oom --system dgx-h100-superpod --parallel " + c.split) +
            Cli("summary " + model + " --parallel " + c.split);
        ASSERT_NE(expected.find("step time"), std::string::npos) << expected;  // the estimate really ran
        EXPECT_EQ(sc::app::MirrorText(*s), expected) << c.preset << " " << c.split;
    }
}

TEST(App, ReportTextInFp8EqualsTheCliWithPrecisionFp8) {
    App s = OpenPage();
    sc::app::SetComputePrecision(s->model, sc::Precision::fp8);
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=2,pp=2,dp=4,batch=32"), "");  // recomputes
    const std::string args = "--model presets/models/llama3-8b.json --precision fp8 --parallel tp=2,pp=2,dp=4,batch=32";
    EXPECT_EQ(sc::app::MirrorText(*s),
              Cli("estimate " + args + " --system dgx-h100-superpod") + Cli("summary " + args));
}

TEST(App, AnInvalidSplitShowsTheCliMessageAfterTheModelReport) {
    App s = OpenPage();
    const std::string error = sc::app::SetParallel(*s, "pp=7");
    EXPECT_EQ(error.rfind("pp: pp=7 does not divide 32 layers", 0), 0u) << error;
    const sctest::CliResult cli = sctest::RunCli("summary --model presets/models/llama3-8b.json --parallel pp=7");
    EXPECT_EQ(cli.out, "stagecraft summary: error: " + error + "\n");
    EXPECT_EQ(sc::app::MirrorText(*s),
              Cli("estimate --model presets/models/llama3-8b.json") + "parallel error: " + error + "\n");
}

// The page derives its request from the state every frame (Refresh, which DrawUI calls): an edit made straight
// on the state, with no Recompute call, shows its result; a frame without edits keeps the results as they are.
TEST(App, AnEditWithoutRecomputeShowsTheNewResultAfterTheNextFrame) {
    App s = OpenPage();
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=2,pp=2,dp=4,batch=32"), "");
    const std::string before = sc::app::MirrorText(*s);
    const std::string model = "--model presets/models/llama3-8b.json";

    s->parallel = sc::ParseParallelSpec("tp=4,pp=2,dp=2,batch=32");  // as a panel's widget writes it
    EXPECT_EQ(sc::app::MirrorText(*s), before);                      // nothing recomputed yet: the check below can fail
    sc::app::Refresh(*s);                                            // the next frame
    EXPECT_EQ(sc::app::MirrorText(*s), Cli("estimate " + model +
                                           " --system dgx-h100-superpod --parallel "
                                           "tp=4,pp=2,dp=2,batch=32") +
                                           Cli("summary " + model + " --parallel tp=4,pp=2,dp=2,batch=32"));

    // The network levels slowed, an option flipped, the calibration dropped: each changes the estimate.
    for (auto edit : std::vector<std::function<void(sc::app::AppState&)>>{
             [](sc::app::AppState& a) {
                 for (sc::NetworkLevel& l : a.systems[0].system.levels) l.bandwidth_gbps /= 10;
             },
             [](sc::app::AppState& a) { a.options.overlap_dp = !a.options.overlap_dp; },
             [](sc::app::AppState& a) { a.calibration.reset(); }}) {
        const std::string shown = sc::app::MirrorText(*s);
        edit(*s);
        sc::app::Refresh(*s);
        EXPECT_NE(sc::app::MirrorText(*s), shown);
    }

    // No edit, no recompute: a message that only an edit clears stays.
    s->link_error = "kept";
    sc::app::Refresh(*s);
    EXPECT_EQ(s->link_error, "kept");
}

// Runs the page's search to the end, one shard per step, calling `between` after the first shard.
template <class F>
void RunSearch(sc::app::AppState& s, F between) {
    sc::app::StartSearch(s);
    ASSERT_EQ(s.search.next_shard, 0) << s.search.error;
    sc::app::StepSearch(s, 0);  // a budget of 0 runs exactly one shard
    ASSERT_EQ(s.search.next_shard, 1);
    between();
    int steps = 1;
    while (s.search.next_shard >= 0) sc::app::StepSearch(s, 0), ++steps;
    EXPECT_EQ(steps, sc::app::kSearchShards);
    ASSERT_TRUE(s.search.has_result) << s.search.error;
}

TEST(App, EditingThePageMidSearchDoesNotChangeTheRunningSearch) {
    App s = OpenPage();
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=8,dp=2,batch=64"), "");
    // The search of the page as it is now, in one shard (reported by this snapshot, so only the results differ).
    const sc::engine::SearchSnapshot snap = sc::engine::SnapshotSearch(sc::app::CurrentRequest(*s));
    const std::string expected = sc::SearchReportJson(snap, sc::engine::RunSearchShard(snap, 0, 1));

    // Mid-search: another model, a slower network and no calibration curves (freed while the search runs).
    RunSearch(*s, [&] {
        ASSERT_TRUE(sc::app::SelectPreset(*s, "mixtral-8x7b"));
        for (sc::NetworkLevel& l : s->systems[0].system.levels) l.bandwidth_gbps /= 10;
        s->calibration.reset();
        sc::app::Recompute(*s);
    });
    EXPECT_EQ(sc::SearchReportJson(snap, s->search.result), expected);

    // The edits matter: a search started after them finds other layouts, so the check above could fail. (Reported
    // against the page as it is now: its layouts may be ones the first model cannot run, such as expert parallelism.)
    RunSearch(*s, [] {});
    EXPECT_NE(sc::SearchReportJson(sc::engine::SnapshotSearch(sc::app::CurrentRequest(*s)), s->search.result),
              expected);
}

TEST(App, AFinishedSearchEqualsTheCliSearch) {
    App s = OpenPage();
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=8,dp=2,batch=64"), "");
    RunSearch(*s, [] {});
    EXPECT_EQ(
        sc::SearchReportJson(sc::engine::SnapshotSearch(sc::app::CurrentRequest(*s)), s->search.result),
        Cli("search --model presets/models/llama3-8b.json --system dgx-h100-superpod --gpus 16 --batch 64 --json"));
}

// The "uneven stages" box: Llama 3 8B's 32 layers on 24 GPUs, where pp=3 and pp=6 split only unevenly. With the box
// ticked the page's search is the CLI's --uneven on, and it finds more valid layouts than without.
TEST(App, TheUnevenStagesBoxIsTheCliSearchsUnevenOn) {
    App s = OpenPage();
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=8,dp=3,batch=48"), "");
    RunSearch(*s, [] {});
    const uint64_t even = s->search.result.stats.valid;
    s->search.uneven = true;
    RunSearch(*s, [] {});
    EXPECT_GT(s->search.result.stats.valid, even);
    EXPECT_EQ(sc::SearchReportJson(sc::engine::SnapshotSearch(sc::app::CurrentRequest(*s)), s->search.result),
              Cli("search --model presets/models/llama3-8b.json --system dgx-h100-superpod --gpus 24 --batch 48 "
                  "--uneven on --json"));
    EXPECT_NE(sc::app::LinkState(*s).find(";search_uneven=1;"), std::string::npos);
}

// A split whose summary is more nodes than an edit counts (kSummaryNodesInEdit) is counted over the next frames:
// meanwhile the report says so and the page keeps drawing; then it shows what the CLI prints. An edit mid-count
// drops it.
TEST(App, ALargeSplitsSummaryIsCountedOverFramesThenShowsWhatTheCliPrints) {
    App s = OpenPage();
    const std::string large = "tp=1,dp=1,batch=4096";  // 4,096 microbatches of Llama 3 8B: 3.4 million nodes
    const std::string model = "--model presets/models/llama3-8b.json";
    const std::string estimate =
        Cli("estimate " + model + " --allow-oom --system dgx-h100-superpod --parallel " + large);
    ASSERT_EQ(sc::app::SetParallel(*s, large), "");
    ASSERT_TRUE(sc::app::SummaryRunning(*s));
    EXPECT_EQ(sc::app::MirrorText(*s), estimate + "summary: being counted (1 ranks, 4096 microbatches a step)\n");
    EXPECT_NE(sc::app::ResultJson(*s).find("\"summary_pending\": true"), std::string::npos);

    int frames = 0;
    while (sc::app::SummaryRunning(*s) && frames < 100000) sc::app::StepJobs(*s, 0.001), ++frames;
    EXPECT_GT(frames, 1);  // not within one frame's millisecond
    EXPECT_FALSE(sc::app::SummaryRunning(*s));
    EXPECT_EQ(sc::app::MirrorText(*s), estimate + Cli("summary " + model + " --parallel " + large));
    EXPECT_EQ(sc::app::ResultJson(*s).find("summary_pending"), std::string::npos);

    // Mid-count, another split: the count is dropped, and the new split's summary (small) is shown at once.
    ASSERT_EQ(sc::app::SetParallel(*s, large), "");
    sc::app::StepJobs(*s, 0.001);
    ASSERT_TRUE(sc::app::SummaryRunning(*s));
    const std::string small = "tp=2,pp=2,dp=4,batch=32";
    ASSERT_EQ(sc::app::SetParallel(*s, small), "");
    EXPECT_FALSE(sc::app::SummaryRunning(*s));
    EXPECT_EQ(sc::app::MirrorText(*s), Cli("estimate " + model + " --system dgx-h100-superpod --parallel " + small) +
                                           Cli("summary " + model + " --parallel " + small));
}

// With workers, the count after the edit is the pool's: one "summary" job whose shards hold whole stages, merged
// in stage order into what the CLI prints. A stale job's shards are ignored; a damaged one is a clear error; a pool
// whose workers cannot start hands the count to frame slices.
TEST(App, WithWorkersALargeSplitsSummaryIsCountedInThePool) {
    App s = OpenPage();
    sc::app::SetPoolWorkers(*s, 2);
    const std::string large = "tp=1,pp=4,dp=1,batch=4096";  // 4 stages of 8 layers, 3.4 million nodes in all
    const std::string model = "--model presets/models/llama3-8b.json";
    ASSERT_EQ(sc::app::SetParallel(*s, large), "");
    ASSERT_TRUE(sc::app::SummaryRunning(*s));
    EXPECT_FALSE(s->summarizing.slices) << "not also in frame slices";
    // A button in the same frame raises its own job: both wait, oldest first (one slot lost the first).
    sc::app::StartSearch(*s);
    const sc::app::PoolJob job = sc::app::TakePoolJob(*s);
    ASSERT_EQ(job.kind, "summary");
    EXPECT_EQ(job.shards, 4);  // one a stage (at most 8 a worker)
    EXPECT_EQ(sc::app::TakePoolJob(*s).kind, "search");
    sc::app::CancelSearch(*s);

    App worker = OpenPage();         // a worker: the same presets, nothing else of the page's state
    worker->counts_summary = false;  // as WorkerCore sets it: the job is built, its summary is not counted
    ASSERT_EQ(sc::app::ApplyLink(*worker, job.link), "");
    ASSERT_TRUE(worker->evaluation.job);
    EXPECT_FALSE(sc::app::SummaryRunning(*worker));
    EXPECT_EQ(sc::app::TakePoolJob(*worker).id, 0) << "no job of its own";
    std::vector<std::string> texts;
    for (int shard = 0; shard < job.shards; ++shard)
        texts.push_back(
            sc::app::EncodeSummaryShard(sc::SummarizeStageShard(*worker->evaluation.job, shard, job.shards)));
    for (int shard = job.shards - 1; shard >= 0; --shard) {  // any order
        EXPECT_TRUE(sc::app::PoolJobWanted(*s, job.id));
        EXPECT_EQ(sc::app::SummaryProgress(*s), (job.shards - 1.0 - shard) / job.shards);
        ASSERT_EQ(sc::app::AddPoolShard(*s, job.id, texts[shard]), "");
    }
    EXPECT_FALSE(sc::app::PoolJobWanted(*s, job.id));
    EXPECT_FALSE(sc::app::SummaryRunning(*s));
    const std::string expected =
        Cli("estimate " + model + " --allow-oom --system dgx-h100-superpod --parallel " + large) +
        Cli("summary " + model + " --parallel " + large);
    EXPECT_EQ(sc::app::MirrorText(*s), expected);

    // Another edit mid-job: the old job is no longer wanted and its shards change nothing.
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=1,pp=2,dp=1,batch=4096"), "");
    const sc::app::PoolJob next = sc::app::TakePoolJob(*s);
    ASSERT_EQ(next.kind, "summary");
    ASSERT_EQ(sc::app::SetParallel(*s, large), "");
    EXPECT_FALSE(sc::app::PoolJobWanted(*s, next.id));
    EXPECT_EQ(sc::app::AddPoolShard(*s, next.id, texts[0]), "");
    const sc::app::PoolJob last = sc::app::TakePoolJob(*s);

    // Shards that name a stage twice, or leave one out, end the count with an error saying so.
    for (int shard : {1, 1, 2}) EXPECT_EQ(sc::app::AddPoolShard(*s, last.id, texts[shard]), "");
    EXPECT_NE(sc::app::AddPoolShard(*s, last.id, texts[3]).find("stage 1 comes twice"), std::string::npos);
    EXPECT_FALSE(sc::app::SummaryRunning(*s));
    EXPECT_NE(sc::app::MirrorText(*s).find("summary error: summary shard: malformed result from a worker: stage 1"),
              std::string::npos)
        << sc::app::MirrorText(*s);
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=1,pp=2,dp=1,batch=4096"), "");
    const sc::app::PoolJob two = sc::app::TakePoolJob(*s);
    ASSERT_EQ(two.shards, 2);
    EXPECT_EQ(sc::app::AddPoolShard(*s, two.id, "[]"), "");
    EXPECT_NE(sc::app::AddPoolShard(*s, two.id, "[]").find("no class of stage 0"), std::string::npos);
    EXPECT_NE(sc::app::MirrorText(*s).find("no class of stage 0"), std::string::npos) << sc::app::MirrorText(*s);
    EXPECT_THROW(sc::app::DecodeSummaryShard("[{\"stage\": 0}]"), sc::Error);  // a class with fields missing

    // No worker could start: the pool's count goes on in frame slices, to the same summary.
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=1,pp=2,dp=1,batch=2048"), "");
    ASSERT_NE(s->pool.summary_id, 0);
    sc::app::SetPoolWorkers(*s, 0);
    EXPECT_EQ(s->pool.summary_id, 0);
    EXPECT_EQ(sc::app::TakePoolJob(*s).id, 0) << "the raised job is dropped";
    for (int frames = 0; sc::app::SummaryRunning(*s) && frames < 100000; ++frames) sc::app::StepJobs(*s, 0.001);
    EXPECT_EQ(
        sc::app::MirrorText(*s),
        Cli("estimate " + model + " --allow-oom --system dgx-h100-superpod --parallel tp=1,pp=2,dp=1,batch=2048") +
            Cli("summary " + model + " --parallel tp=1,pp=2,dp=1,batch=2048"));
}

// "Perfetto JSON" in a worker: the link applied to a worker's state gives the bytes `stagecraft trace --format json`
// writes for the page's request; a rank outside the job and a page without a cluster are errors naming them.
// A worker applies a search's or sweep's link for its inputs only (LinkApply::inputs: no estimate, no summary
// counted); the request it builds must be the one the whole link gives, edits of the model (head_dim derived from
// an edited hidden size), cluster and options included.
TEST(App, ALinkAppliedForItsInputsBuildsTheRequestOfTheWholeLink) {
    App s = OpenPage();
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=2,pp=2,dp=4,batch=32,recompute=selective"), "");
    s->model.hidden = 3072;  // heads stay 32: head_dim follows, 96
    s->systems[0].system.levels[1].bandwidth_gbps = 25;
    s->options.overlap_tp = true;
    sc::app::Recompute(*s);
    const std::string link = sc::app::LinkState(*s);
    App whole = OpenPage(), inputs = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*whole, link), "");
    ASSERT_EQ(sc::app::ApplyLink(*inputs, link, sc::app::LinkApply::inputs), "");
    EXPECT_EQ(inputs->report, OpenPage()->report) << "nothing evaluated: the report is still the opening page's";
    EXPECT_EQ(inputs->model.head_dim, 96);
    EXPECT_EQ(sc::app::LinkState(*inputs), link);
    const sc::engine::Request request = sc::app::CurrentRequest(*inputs);
    EXPECT_EQ(sc::PageReportText(request, sc::engine::Evaluate(request)), whole->report);
    EXPECT_EQ(whole->report, s->report);
    // A refused link leaves the defaults either way.
    EXPECT_EQ(sc::app::ApplyLink(*inputs, "v1;model=nope;end", sc::app::LinkApply::inputs),
              sc::app::ApplyLink(*whole, "v1;model=nope;end"));
}

TEST(App, ARankTimelineFromTheLinkIsTheCliTimeline) {
    App s = OpenPage();
    const std::string split = "tp=2,pp=2,dp=2,batch=16";
    ASSERT_EQ(sc::app::SetParallel(*s, split), "");
    s->options.kernels.flash_attention = false;  // a Training-panel choice the link carries
    sc::app::Recompute(*s);
    App worker = OpenPage();  // as a web worker applies it: the inputs only
    ASSERT_EQ(sc::app::ApplyLink(*worker, sc::app::LinkState(*s), sc::app::LinkApply::inputs), "");
    const std::string dir = ::testing::TempDir() + "sc_timeline_link";
    const sctest::CliResult r = sctest::RunCli("trace --model presets/models/llama3-8b.json --parallel " + split +
                                               " --system dgx-h100-superpod --options flash_attention=off"
                                               " --format json --rank 5 --force --out " +
                                               dir);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(sc::app::RankTimelineJson(*worker, 5), sctest::ReadFile(dir + "/trace.5.trace.json"));
    EXPECT_EQ(sctest::ErrorOf([&] { sc::app::RankTimelineJson(*worker, 8); }).rfind("rank: 8 is outside", 0), 0u);
    worker->system_index = -1;
    EXPECT_EQ(sctest::ErrorOf([&] { sc::app::RankTimelineJson(*worker, 0); }).rfind("system:", 0), 0u);
}

}  // namespace
