// The stagecraft command line, run as a user would.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "report/format.h"
#include "report/training_report.h"
#include "test_util.h"
#include "training/published_runs.h"

namespace {

using sctest::CliResult;
using sctest::RunCli;

TEST(Cli, EstimatePrintsParametersAndFlops) {
    CliResult r = RunCli("estimate --model presets/models/llama3-8b.json");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("parameters                    8.03 B (8030261248)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("attention (causal)"), std::string::npos);
}

TEST(Cli, EstimateWritesThePipelineScheduleForPerfetto) {
    const std::string path = testing::TempDir() + "sc_timeline.json";
    std::filesystem::remove(path);
    const std::string job =
        "estimate --model presets/models/llama3-8b.json --system dgx-h100-superpod "
        "--parallel tp=2,pp=4,batch=64,schedule=dualpipe";
    CliResult r = RunCli(job + " --timeline-json " + path);
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(sctest::ReadFile(path));
    int steps = 0, paired = 0;
    std::set<std::string> lanes;
    std::string process;
    for (const nlohmann::json& e : j.at("traceEvents")) {
        if (e.at("ph") == "M" && e.at("name") == "process_name") process = e.at("args").at("name");
        if (e.at("ph") == "M" && e.at("name") == "thread_name") lanes.insert(e.at("args").at("name"));
        if (e.at("ph") != "X") continue;
        ++steps;
        paired += e.at("args").contains("paired") ? 1 : 0;
        EXPECT_TRUE(e.at("args").contains("microbatch"));
    }
    EXPECT_EQ(process, "pipeline");
    EXPECT_EQ(lanes, (std::set<std::string>{"stage 0", "stage 1", "stage 2", "stage 3"}));
    // 16 of the 64 microbatches (4 pp), each through one of a rank's two chunks: a forward and a backward, or a
    // forward, an input half and a weight half; the steady state's pairs are marked.
    EXPECT_GE(steps, 4 * 16 * 2);
    EXPECT_LE(steps, 4 * 16 * 3);
    EXPECT_GT(paired, 0);
    // No pipeline, no cluster: one clear error each, and no file.
    std::filesystem::remove(path);
    r = RunCli(
        "estimate --model presets/models/llama3-8b.json --system dgx-h100-superpod --parallel tp=8 "
        "--timeline-json " +
        path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--timeline-json: the split has no pipeline (pp=1)"), std::string::npos) << r.out;
    r = RunCli("estimate --model presets/models/llama3-8b.json --parallel pp=4 --timeline-json " + path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--timeline-json: the schedule is timed on a cluster"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Cli, EstimateJson) {
    CliResult r = RunCli("estimate --model presets/models/gpt3-175b.json --json");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("\"params\": 174604259328"), std::string::npos) << r.out;
}

TEST(Cli, OverridesAndPrecisionChangeTheResult) {
    CliResult r = RunCli("estimate --model presets/models/gpt3-175b.json --set layers=48 --precision fp8");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("fp8 weights"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("87.6"), std::string::npos) << r.out;
}

TEST(Cli, BadInputIsOneClearError) {
    CliResult r = RunCli("estimate --model presets/models/gpt3-175b.json --set heads=7");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out,
              "stagecraft estimate: error: presets/models/gpt3-175b.json: heads: 7 attention heads do not divide "
              "hidden size 12288 (give head_dim explicitly, or pick heads dividing 12288)\n");
    r = RunCli("estimate --model no/such.json");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("no/such.json: cannot open file"), std::string::npos);
    r = RunCli("estimate --modle x");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--modle: unknown flag"), std::string::npos);
    // Without --system the report is the model's, but a bad split or option is still an error, not ignored.
    r = RunCli("estimate --model presets/models/gpt3-175b.json --options framework_gemm=maybe");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("framework_gemm: expected on or off, got \"maybe\""), std::string::npos) << r.out;
    r = RunCli("estimate --model presets/models/gpt3-175b.json --parallel tp=0");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("tp"), std::string::npos) << r.out;
    // A hand-set efficiency below 1% of the peak is refused: memory_efficiency=1e-320 printed a NaN MFU, exit 0.
    r = RunCli(
        "estimate --model presets/models/llama3-8b.json --system dgx-h100-superpod --gpus 8 "
        "--parallel tp=8,batch=8 --options memory_efficiency=1e-320");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("memory_efficiency: expected a fraction in [0.01, 1], got \"1e-320\""), std::string::npos)
        << r.out;
}

// A preset is named by file or by id (presets/<folder>/<id>.json), and an id resolves from any working directory:
// the working directory's presets/ first, then the repository's beside the program. An unknown id names the flag,
// the folders looked in and the ids that exist.
TEST(Cli, PresetIdsWorkFromAnyDirectory) {
    const std::string elsewhere = testing::TempDir();
    const std::string by_path =
        "estimate --model presets/models/llama3-8b.json --system presets/systems/dgx-h100-superpod.json --gpus 8 "
        "--parallel tp=8,batch=8";
    const sctest::CliResult expected = sctest::RunCli(by_path);
    ASSERT_EQ(expected.status, 0) << expected.out;
    for (const std::string& dir : {std::string(SC_SOURCE_DIR), elsewhere}) {
        const sctest::CliResult r = sctest::RunCliFrom(
            dir, "estimate --model llama3-8b --system dgx-h100-superpod --gpus 8 --parallel tp=8,batch=8");
        EXPECT_EQ(r.status, 0) << dir << ": " << r.out;
        EXPECT_EQ(r.out, expected.out) << "from " << dir;
    }
    sctest::CliResult r =
        sctest::RunCliFrom(elsewhere, "serve --preset llama3-8b-h100-poisson --set workload.requests=50");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out, sctest::RunCli("serve --preset presets/inference/llama3-8b-h100-poisson.json --set "
                                    "workload.requests=50")
                         .out);
    // trace's default cluster (dgx-h100-superpod) is an id too.
    const std::string out = elsewhere + "/trace_by_id";
    r = sctest::RunCliFrom(elsewhere, "trace --model llama3-8b --parallel tp=2,batch=2 --quiet --out " + out);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(std::filesystem::exists(out + "/trace.1.et"));
    std::filesystem::remove_all(out);

    r = sctest::RunCliFrom(elsewhere, "estimate --model llama9");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--model: \"llama9\" is neither a file nor a model preset id (looked in presets/models/ or "),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("the ids there: deepseek-v3, gpt-oss-120b"), std::string::npos) << r.out;
    r = sctest::RunCli("estimate --model llama3-8b --system dgx-h9000");
    EXPECT_EQ(r.status, 1);
    // (The folders after the working directory's depend on where the program was built.)
    EXPECT_NE(
        r.out.find("--system: \"dgx-h9000\" is neither a file nor a system preset id (looked in presets/systems/"),
        std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("; the ids there: dgx-a100-40gb-superpod, dgx-a100-superpod"), std::string::npos) << r.out;
    r = sctest::RunCli("serve --preset nope");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--preset: \"nope\" is neither a file nor a serving preset id"), std::string::npos) << r.out;
    r = sctest::RunCli("estimate --model no/such.json");  // a path is read as given
    EXPECT_NE(r.out.find("no/such.json: cannot open file"), std::string::npos) << r.out;
}

TEST(Cli, EstimateBuildsAClusterOfAnySizeWithGpus) {
    // 2,048 ranks on a 1,024-GPU preset: the error names --gpus, and --gpus joins two pods with a core tier.
    const std::string job =
        "estimate --model presets/models/gpt3-175b.json --system dgx-h100-superpod "
        "--parallel tp=8,pp=8,dp=32,batch=1024";
    CliResult r = RunCli(job);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("pass --gpus 2048"), std::string::npos) << r.out;
    r = RunCli(job + " --gpus 2048");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("2 pods of 1024 joined by a core tier"), std::string::npos) << r.out;
    EXPECT_EQ(RunCli(job + " --gpus 1024").status, 1);
    EXPECT_EQ(RunCli(job + " --gpus 2e3").status, 1);
}

TEST(Cli, EstimateThatDoesNotFitExitsNonZeroUnlessAllowed) {
    const std::string job =
        "estimate --model presets/models/gpt3-175b.json --system dgx-a100-superpod "
        "--parallel tp=8,pp=2,dp=4,batch=64";
    CliResult r = RunCli(job);
    EXPECT_EQ(r.status, 3);
    EXPECT_NE(r.out.find("step time"), std::string::npos) << r.out;  // the report is still printed
    EXPECT_NE(r.out.find("does not fit: needs"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--allow-oom"), std::string::npos) << r.out;
    EXPECT_EQ(RunCli(job + " --allow-oom").status, 0);
}

TEST(Cli, EstimateReportsTflopsAndMfuUnderEachConvention) {
    CliResult r = RunCli(
        "estimate --model presets/models/llama3-8b.json --precision fp8 --system dgx-h100-superpod "
        "--parallel tp=2,dp=4,batch=64,zero=1,recompute=full");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("of the fp8 dense peak"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("of the bf16 dense peak"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("model (6N + causal attention)"), std::string::npos) << r.out;
    r = RunCli(
        "estimate --model presets/models/llama3-8b.json --precision fp8 --system dgx-h100-superpod "
        "--parallel tp=2,dp=4,batch=64,zero=1,recompute=full --json");
    EXPECT_EQ(r.status, 0) << r.out;
    // FP8's dense peak is twice BF16's on H100, so MFU against bf16 is twice MFU against fp8.
    const auto num = [&](const std::string& key) {
        return std::stod(r.out.substr(r.out.find("\"" + key + "\": ") + key.size() + 4));
    };
    EXPECT_NEAR(num("mfu_bf16"), 2 * num("mfu"), 1e-9);
    EXPECT_NEAR(num("model_tflops_per_gpu") * 1e12 / (num("mfu") * num("peak_flops_per_gpu")), 1, 1e-9);
}

TEST(Cli, EstimateSaysHowFarPublishedRunsOnTheAcceleratorWere) {
    // The spread of docs/validation.md's rows on the system's accelerator in the estimate's precision, beside the
    // model's own step time.
    const sc::PublishedRuns* h100 = sc::PublishedRunsFor("h100-sxm", sc::Precision::bf16);
    const sc::PublishedRuns* h100_fp8 = sc::PublishedRunsFor("h100-sxm", sc::Precision::fp8);
    ASSERT_NE(h100, nullptr);
    ASSERT_NE(h100_fp8, nullptr);
    EXPECT_STREQ(h100->precision, "16-bit");
    EXPECT_STREQ(h100_fp8->precision, "fp8");
    const std::string args =
        "estimate --model presets/models/llama3-8b.json --system dgx-h100-superpod --parallel tp=2,dp=4,batch=64,zero=1";
    CliResult r = RunCli(args);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("published runs                on h100-sxm in 16-bit: " + sc::PublishedRunsText(*h100)),
              std::string::npos)
        << r.out;
    r = RunCli(args + " --precision fp8");
    EXPECT_NE(r.out.find("published runs                on h100-sxm in fp8: " + sc::PublishedRunsText(*h100_fp8)),
              std::string::npos)
        << r.out;
    // The JSON's published_runs of an estimate (exit 0 expected).
    auto runs_json = [](const std::string& estimate) {
        const CliResult j = RunCli(estimate + " --json", false);
        EXPECT_EQ(j.status, 0) << j.out;
        return j.status == 0 ? nlohmann::json::parse(j.out)["training"]["published_runs"] : nlohmann::json();
    };
    const nlohmann::json p = runs_json(args);
    EXPECT_EQ(p["accelerator"], "h100-sxm");
    EXPECT_EQ(p["precision"], "16-bit");
    EXPECT_EQ(p["runs"], h100->runs);
    EXPECT_EQ(p["measured_over_predicted"]["median"], h100->median);
    // Every run compared on A100 was in 16 bits: an fp8 plan sees them, said to be another precision's.
    const sc::PublishedRuns* a100 = sc::PublishedRunsFor("a100-80gb", sc::Precision::fp8);
    ASSERT_NE(a100, nullptr);
    EXPECT_STREQ(a100->precision, "16-bit");
    EXPECT_EQ(sc::PublishedRunsLine(*a100, sc::Precision::fp8, "a100-80gb"),
              "on a100-80gb in 16-bit (none in fp8): " + sc::PublishedRunsText(*a100));
    // No run was compared on H200 or H800: the runs on H100, the same GH100 GPU, stand in, said so.
    EXPECT_EQ(sc::PublishedRunsFor("h200", sc::Precision::bf16), h100);
    EXPECT_EQ(sc::PublishedRunsFor("h800", sc::Precision::fp8), h100_fp8);
    const std::string h200 =
        "estimate --model presets/models/llama3-8b.json --system dgx-h200-superpod --parallel tp=2,dp=4,batch=64,zero=1";
    r = RunCli(h200);
    EXPECT_NE(r.out.find("published runs                on h100-sxm (none on h200: the same GH100 GPU) in 16-bit: " +
                         sc::PublishedRunsText(*h100)),
              std::string::npos)
        << r.out;
    const nlohmann::json h200_runs = runs_json(h200);
    EXPECT_EQ(h200_runs["accelerator"], "h100-sxm");
    EXPECT_EQ(h200_runs["stands_in_because"], "the same GH100 GPU");
    EXPECT_TRUE(p["stands_in_because"].is_null());  // H100's own runs
    // No published run was compared on MI300X: no line, and null in the JSON.
    const std::string mi300x =
        "estimate --model presets/models/llama3-8b.json --system mi300x-cluster "
        "--parallel tp=2,dp=4,batch=64,zero=1";
    r = RunCli(mi300x);
    EXPECT_EQ(r.out.find("published runs"), std::string::npos) << r.out;
    EXPECT_TRUE(runs_json(mi300x).is_null());
}

TEST(Cli, EstimateGivesTheStepTimeAtThePublishedRunsRatios) {
    // The step a run like the published ones would take: the model's step times their ratios, as the spread line
    // gives them (middle half and median; two or three runs: their range; one run: its ratio).
    const std::string args =
        "estimate --model presets/models/llama3-8b.json --system dgx-h100-superpod --parallel tp=2,dp=4,batch=64,zero=1";
    const CliResult j = RunCli(args + " --json", false);
    ASSERT_EQ(j.status, 0) << j.out;
    const nlohmann::json t = nlohmann::json::parse(j.out)["training"];
    const double step = t["step_seconds"];
    const sc::PublishedRuns* h100 = sc::PublishedRunsFor("h100-sxm", sc::Precision::bf16);
    ASSERT_NE(h100, nullptr);
    ASSERT_GE(h100->runs, 4);
    const nlohmann::json at = t["published_runs"]["step_seconds_at_those_ratios"];
    EXPECT_DOUBLE_EQ(at["p25"].get<double>(), h100->p25 * step);
    EXPECT_DOUBLE_EQ(at["median"].get<double>(), h100->median * step);
    EXPECT_DOUBLE_EQ(at["p75"].get<double>(), h100->p75 * step);
    EXPECT_DOUBLE_EQ(at["min"].get<double>(), h100->min * step);
    EXPECT_DOUBLE_EQ(at["max"].get<double>(), h100->max * step);
    const std::string text = sc::PublishedStepText(*h100, step);
    EXPECT_EQ(text, sc::FormatSeconds(h100->p25 * step) + " to " + sc::FormatSeconds(h100->p75 * step) + " (median " +
                        sc::FormatSeconds(h100->median * step) + ")");
    const CliResult r = RunCli(args);
    EXPECT_NE(r.out.find("  a step at those ratios      " + text), std::string::npos) << r.out;

    const sc::PublishedRuns three{"x", "16-bit", 3, 1.1, 1.2, 1.3, 1.4, 1.5};
    EXPECT_EQ(sc::PublishedStepText(three, 10), sc::FormatSeconds(11.0) + " to " + sc::FormatSeconds(15.0));
    const sc::PublishedRuns one{"x", "16-bit", 1, 1.25, 1.25, 1.25, 1.25, 1.25};
    EXPECT_EQ(sc::PublishedStepText(one, 2), sc::FormatSeconds(2.5));
    EXPECT_EQ(sc::PublishedStepText(one, 0), "");
}

TEST(Cli, EveryClusterPresetEstimatesAtAnySize) {
    // Every system the page lists (presets/systems/index.json) gives a finite estimate on its own size and grown
    // to 4,096 GPUs (--gpus), so each accelerator with a system can be planned at scale.
    const nlohmann::json index =
        nlohmann::json::parse(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/systems/index.json"));
    // A system that is one scale-up domain with no network beyond it (dgx-gh200, l40s-pcie-server, mi210-4way-server) runs at its own
    // size and refuses to grow, naming the domain.
    ASSERT_GE(index.size(), 13u);
    for (const nlohmann::json& file : index) {
        const std::string id = file.get<std::string>().substr(0, file.get<std::string>().size() - 5);
        const nlohmann::json sys = nlohmann::json::parse(
            sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/systems/" + file.get<std::string>()));
        const bool one_domain = sys["levels"].size() == 1 && sys["levels"][0]["kind"] == "scale_up";
        const int size = sys["levels"].back()["size"]["value"];
        for (const char* gpus : {"", " --gpus 4096"}) {
            SCOPED_TRACE(id + gpus);
            const int tp = std::min(8, size);  // a system smaller than a DGX (mi210-4way-server: 4) at TP over it
            const std::string layout = *gpus ? "tp=8,pp=4,dp=128,batch=1024,sp=1,zero=1"
                                             : "tp=" + std::to_string(tp) +
                                                   ",dp=" + std::to_string(std::min(4, size / tp)) +
                                                   ",batch=64,sp=1,zero=1";
            CliResult r = RunCli("estimate --model presets/models/llama3-70b.json --system " + id + " --parallel " +
                                     layout + gpus + " --json --allow-oom",
                                 one_domain && *gpus);  // the refusal is on stderr
            if (one_domain && *gpus) {
                EXPECT_NE(r.status, 0);
                EXPECT_NE(r.out.find("scale-up domain with no network beyond it"), std::string::npos) << r.out;
                continue;
            }
            ASSERT_EQ(r.status, 0) << r.out;
            const nlohmann::json t = nlohmann::json::parse(r.out)["training"];
            EXPECT_GT(t["step_seconds"].get<double>(), 0);
            EXPECT_LT(t["step_seconds"].get<double>(), 1e6);
            EXPECT_GT(t["mfu"].get<double>(), 0);
            EXPECT_LE(t["mfu"].get<double>(), 1);
        }
    }
}

TEST(Cli, TraceWritesCompleteSetsOnly) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "sc-cli-trace-set";
    fs::remove_all(dir);
    const std::string out = " --out " + dir.string();
    auto count = [&](const std::string& suffix) {
        int n = 0;
        for (const auto& e : fs::directory_iterator(dir)) {
            const std::string f = e.path().filename().string();
            n += f.size() >= suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0;
        }
        return n;
    };
    const std::string eight = "trace --model presets/models/llama3-8b.json --parallel tp=2,pp=2,dp=2,batch=8 --quiet";
    CliResult r = RunCli(eight + out);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(count(".et"), 8);
    EXPECT_EQ(count(".part"), 0);
    EXPECT_TRUE(fs::exists(dir / "trace.json"));
    // A folder holding a set is refused, untouched, unless --force; --force with fewer ranks leaves no stale rank.
    r = RunCli("trace --model presets/models/llama3-8b.json --parallel tp=2,dp=2,batch=8 --quiet" + out);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--force"), std::string::npos) << r.out;
    EXPECT_EQ(count(".et"), 8);
    r = RunCli("trace --model presets/models/llama3-8b.json --parallel tp=2,dp=2,batch=8 --quiet --force" + out);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(count(".et"), 4);
    EXPECT_FALSE(fs::exists(dir / "trace.4.et"));
    // A failure in the middle (rank 3 cannot be created) removes what the run wrote: no set that looks complete.
    fs::remove_all(dir);
    fs::create_directories(dir / "trace.3.et.part");
    r = RunCli(eight + out);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("trace.3.et: cannot create file"), std::string::npos) << r.out;
    EXPECT_EQ(count(".et"), 0);
    EXPECT_FALSE(fs::exists(dir / "trace.json"));
    fs::remove_all(dir);
}

// Rank 0's Chrome trace of Llama 3 8B under `parallel` on the DGX H100 SuperPOD, written into a fresh `dir`.
CliResult TraceRank0(const std::string& parallel, const std::filesystem::path& dir) {
    std::filesystem::remove_all(dir);
    return RunCli("trace --model presets/models/llama3-8b.json --parallel " + parallel +
                  " --format json --rank 0 --system dgx-h100-superpod --out " + dir.string());
}

TEST(Cli, TraceTimesJobsLargerThanThePresetCluster) {
    // 2,048 ranks on a 1,024-GPU preset: the system grows to the job (as estimate --gpus does) instead of failing.
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "sc-cli-trace-large";
    CliResult r = TraceRank0("tp=8,pp=2,dp=128,batch=256", dir);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(fs::exists(dir / "trace.0.trace.json")) << r.out;
    fs::remove_all(dir);
}

TEST(Cli, TraceJsonNamesEachGemmsShapeAndRate) {
    // A GEMM event says the shape it was timed at and the TFLOPS that gives: Llama 3 8B's QKV projection under TP8,
    // 8,192 tokens x 4,096 inputs -> (32 + 2 x 8) x 128 / 8 = 768 outputs; its weight gradient contracts the tokens.
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "sc-cli-trace-gemm";
    CliResult r = TraceRank0("tp=8,pp=1,dp=1,batch=1", dir);
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json trace = nlohmann::json::parse(sctest::ReadFile((dir / "trace.0.trace.json").string()));
    int gemms = 0, qkv = 0;
    for (const nlohmann::json& e : trace.at("traceEvents")) {
        if (e.value("ph", "") != "X" || !e.contains("args") || !e.at("args").contains("gemm (m x n x k)")) continue;
        const nlohmann::json& a = e.at("args");
        const std::string name = e.at("name");
        if (name.ends_with("attn.qkv")) {
            EXPECT_EQ(a.at("gemm (m x n x k)"), "8192 x 768 x 4096") << name;
            ++qkv;
        }
        if (name.ends_with("attn.qkv.wgrad")) {
            EXPECT_EQ(a.at("gemm (m x n x k)"), "4096 x 768 x 8192") << name;
            ++qkv;
        }
        EXPECT_NEAR(a.at("tflops").get<double>() * e.at("dur").get<double>() * 1e6, a.at("flops").get<double>(),
                    1e-3 * a.at("flops").get<double>())
            << name;
        ++gemms;
    }
    EXPECT_GE(gemms, 32 * 6);  // six GEMMs of every layer's attention alone
    EXPECT_EQ(qkv, 2 * 32);
    fs::remove_all(dir);
}

}  // namespace
