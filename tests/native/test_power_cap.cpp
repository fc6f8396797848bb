// A GPU under a power limit (training/power_cap.h): its compute runs at (limit / board)^(1/3) of the rated clock, its
// HBM at the rated bandwidth. Checked on the law itself, on one op of each kind, on a whole step (time, energy,
// MFU against the rated peak, trace = estimate), on every way the limit is given (--system-set, a link, the page)
// and on every way it can be wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "app/app.h"
#include "app/app_state.h"
#include "app/pool_jobs.h"
#include "config/system_edits.h"
#include "engine/sweep.h"
#include "link/config_link.h"
#include "page_driver.h"
#include "parallel/job.h"
#include "preset_files.h"
#include "report/search_report.h"
#include "report/training_report.h"
#include "trace_test_util.h"
#include "training/compute_model.h"
#include "training/estimate.h"
#include "training/power_cap.h"
#include "training/rate_sources.h"

namespace {

using sctest::ErrorOf;

sc::System H100At(double watts) {
    sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::ApplySystemEdits(sys, {"accelerator.power_limit_w=" + std::to_string(watts)});
    return sys;
}

TEST(PowerCap, ClockIsTheCubeRootOfThePowerFraction) {
    const sc::System capped = H100At(500);
    EXPECT_NEAR(sc::PowerCapClockScale(capped.accelerator), std::cbrt(500.0 / 700.0), 1e-15);
    EXPECT_NEAR(sc::PowerCapClockScale(capped.accelerator), 0.894, 5e-4);  // the figure the docs quote
    EXPECT_EQ(sc::PowerCapClockScale(H100At(700).accelerator), 1.0);       // a limit at the board power: none
    EXPECT_EQ(sc::PowerCapClockScale(sctest::LoadSystemPreset("dgx-h100-superpod").accelerator), 1.0);
    EXPECT_EQ(*sc::PowerDrawW(capped.accelerator), 500);
    EXPECT_NE(sc::PowerCapText(capped.accelerator).find("power limit 500 W of the 700 W board"), std::string::npos);
}

// Compute-bound ops take 1/clock the time, whatever their kind; an op bound by HBM takes the same time.
TEST(PowerCap, ComputeBoundOpsSlowByTheClockMemoryBoundOnesDoNot) {
    const sc::System full = sctest::LoadSystemPreset("dgx-h100-superpod"), capped = H100At(500);
    const double clock = sc::PowerCapClockScale(capped.accelerator);
    const sc::AttentionShape attn{8, 4096, 4096, 128, 128, 2, 0};
    const sc::ComputeModel a(full.accelerator, sc::Precision::bf16, &sctest::MeasuredCalibration(), {}, attn);
    const sc::ComputeModel b(capped.accelerator, sc::Precision::bf16, &sctest::MeasuredCalibration(), {}, attn);
    const sc::GemmDims big{8192, 8192, 8192};
    const double gemm = 2.0 * 8192 * 8192 * 8192;
    EXPECT_NEAR(b.Seconds(sc::OpKind::matmul, gemm, 3 * 2.0 * 8192 * 8192, true, 1, false, false, big),
                a.Seconds(sc::OpKind::matmul, gemm, 3 * 2.0 * 8192 * 8192, true, 1, false, false, big) / clock, 1e-12);
    EXPECT_NEAR(b.Seconds(sc::OpKind::attention, 1e12, 1e6, false),
                a.Seconds(sc::OpKind::attention, 1e12, 1e6, false) / clock, 1e-12);
    EXPECT_NEAR(b.Seconds(sc::OpKind::elementwise, 1e12, 1, true),
                a.Seconds(sc::OpKind::elementwise, 1e12, 1, true) / clock, 1e-12);
    // A copy of 1 GB at 1 FLOP a byte is bound by HBM on both.
    EXPECT_EQ(b.Seconds(sc::OpKind::elementwise, 1e9, 1e9, true), a.Seconds(sc::OpKind::elementwise, 1e9, 1e9, true));
    EXPECT_EQ(b.peak_flops(), a.peak_flops());  // MFU stays against the rated peak
    EXPECT_EQ(b.clock_scale(), clock);
}

// A step under the limit: slower, but by no more than the clock (communication, HBM-bound ops and the kernels' fixed
// cost do not slow); its energy at the limit's watts; its MFU against the rated peak; its trace as long as the
// estimate's compute.
TEST(PowerCap, AStepUnderALimit) {
    const sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    sc::ParallelConfig p = sc::ParseParallelSpec("tp=2,dp=4,microbatch=1,batch=8,sp=1");
    const sc::Job job = sc::MakeJob(m, p, {});
    const sc::System full = sctest::LoadSystemPreset("dgx-h100-superpod"), capped = H100At(500);
    const double clock = sc::PowerCapClockScale(capped.accelerator);
    const sc::TrainingEstimate a = sc::EstimateTraining(job, full, &sctest::MeasuredCalibration(), {});
    const sc::TrainingEstimate b = sc::EstimateTraining(job, capped, &sctest::MeasuredCalibration(), {});
    EXPECT_GT(b.step.compute, a.step.compute * (1 / clock - 0.02));  // GEMM-bound: nearly the whole factor
    EXPECT_LE(b.step.compute, a.step.compute / clock * (1 + 1e-12));
    EXPECT_GT(b.step_seconds, a.step_seconds);
    EXPECT_LE(b.step_seconds, a.step_seconds / clock * (1 + 1e-12));
    EXPECT_EQ(b.step.kernel_fixed, a.step.kernel_fixed);
    EXPECT_EQ(b.peak_flops_per_gpu, a.peak_flops_per_gpu);
    EXPECT_NEAR(b.mfu / a.mfu, a.step_seconds / b.step_seconds, 1e-12);
    EXPECT_NEAR(b.energy_joules_per_step, 500.0 * 8 * b.step_seconds, 1e-9 * b.energy_joules_per_step);
    EXPECT_NEAR(a.energy_joules_per_step, 700.0 * 8 * a.step_seconds, 1e-9 * a.energy_joules_per_step);
    const std::string said = sc::DescribeRates(job, capped, &sctest::MeasuredCalibration(), {}).clock;
    EXPECT_NE(said.find("compute at 0.894 of its rated clock"), std::string::npos) << said;
    EXPECT_EQ(sc::DescribeRates(job, full, &sctest::MeasuredCalibration(), {}).clock, "");
    sctest::ChargedComputeEqualsTraceCompute(job, capped);
}

TEST(PowerCap, EveryWrongLimitIsRefusedNamingTheField) {
    EXPECT_EQ(ErrorOf([] { H100At(1000); }),
              "accelerator.power_limit_w: 1000 W is outside h100-sxm's range; valid: 200 to 700 W (2/7 of its board "
              "power to all of it)");
    EXPECT_EQ(ErrorOf([] { H100At(150); }),
              "accelerator.power_limit_w: 150 W is outside h100-sxm's range; valid: 200 to 700 W (2/7 of its board "
              "power to all of it)");
    EXPECT_NE(ErrorOf([] { H100At(0); }).find("accelerator.power_limit_w"), std::string::npos);
    sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    EXPECT_NE(ErrorOf([&] { sc::ApplySystemEdits(sys, {"accelerator.power_limit_w=-5"}); }).find("power_limit_w"),
              std::string::npos);
    // A board power edited below an earlier limit leaves the limit above it: the edit as a whole is refused.
    EXPECT_EQ(ErrorOf([&] {
                  sc::ApplySystemEdits(sys, {"accelerator.power_limit_w=600", "accelerator.power_w=500"});
              }),
              "accelerator.power_limit_w: 600 W is outside h100-sxm's range; valid: 142.857 to 500 W (2/7 of its "
              "board power to all of it)");
    EXPECT_FALSE(sys.accelerator.power_limit_w);  // all or none
    sc::Accelerator bare = sys.accelerator;
    bare.board_power_w.reset();
    bare.power_limit_w = 300;
    EXPECT_EQ(ErrorOf([&] { sc::ValidateAcceleratorRates(bare); }),
              "accelerator.power_limit_w: h100-sxm gives no board power for a limit of 300 W to be below; set "
              "accelerator.power_w first");
}

TEST(PowerCap, TheCliTakesItAsASystemEdit) {
    const sctest::CliResult cli = sctest::RunCli(
        "estimate --json --model presets/models/llama3-8b.json --system presets/systems/dgx-h100-superpod.json "
        "--parallel tp=2,dp=4,sp=1,batch=8 --system-set accelerator.power_limit_w=500",
        false);
    ASSERT_EQ(cli.status, 0) << cli.out;
    const nlohmann::json j = nlohmann::json::parse(cli.out);
    EXPECT_NE(j["training"]["rate_sources"]["clock"].get<std::string>().find("power limit 500 W"), std::string::npos);
    const sctest::CliResult text = sctest::RunCli(
        "estimate --model presets/models/llama3-8b.json --system presets/systems/dgx-h100-superpod.json "
        "--parallel tp=2,dp=4,batch=8 --system-set accelerator.power_limit_w=800");
    EXPECT_NE(text.status, 0);
    EXPECT_NE(text.out.find("accelerator.power_limit_w: 800 W is outside h100-sxm's range; valid: 200 to 700 W"),
              std::string::npos)
        << text.out;
}

TEST(PowerCap, TheLinkCarriesItAndChecksItAgainstTheSystem) {
    sc::ConfigLink l;
    l.model = "llama3-8b";
    l.system = "dgx-h100-superpod";
    l.parallel = "tp=2,dp=4";
    l.power_limit_w = 550;
    const std::string text = sc::EncodeConfigLink(l);
    EXPECT_NE(text.find(";power_limit=550;parallel="), std::string::npos) << text;
    EXPECT_EQ(sc::DecodeConfigLink(text), l);
    EXPECT_EQ(ErrorOf([] { sc::DecodeConfigLink("v1;model=llama3-8b;power_limit=500;parallel=tp=2;end"); }),
              "power_limit: a power limit needs a system (\"system=...\") whose GPU it limits");
    EXPECT_NE(ErrorOf([] {
                  sc::DecodeConfigLink("v1;model=llama3-8b;system=x;power_limit=-1;parallel=tp=2;end");
              }).find("power_limit"),
              std::string::npos);
}

// Serving reads the same compute model: a lone request's prefill (compute-bound) slows by nearly 1/clock under a
// limit, its batch-1 decode (the weights read at HBM bandwidth) not at all. The run's energy is every GPU at its
// limit (else its board power) for the run's duration, and the output tokens per joule follow from it.
TEST(PowerCap, AServedRequestsPrefillSlowsItsDecodeDoesNot) {
    auto lone = [](const std::string& edit) {
        const sctest::CliResult cli = sctest::RunCli(
            "serve --json --preset llama3-8b-h100-poisson --set workload.requests=5 --set workload.rate=0.01" + edit,
            false);
        EXPECT_EQ(cli.status, 0) << cli.out;
        const nlohmann::json r = nlohmann::json::parse(cli.out)["result"];
        const double watts = edit.empty() ? 700 : 400,
                     joules = watts * r["gpus"].get<int>() * r["duration_s"].get<double>();
        EXPECT_NEAR(r["energy_joules"].get<double>(), joules, 1e-9 * joules);
        EXPECT_NEAR(r["output_tokens_per_joule"].get<double>(),
                    r["output_tokens_per_s"].get<double>() * r["duration_s"].get<double>() / joules, 1e-9);
        return std::pair{r["ttft_s"]["min"].get<double>(), r["tpot_s"]["min"].get<double>()};
    };
    const auto [ttft, tpot] = lone("");
    const auto [ttft400, tpot400] = lone(" --system-set accelerator.power_limit_w=400");
    const double clock = std::cbrt(400.0 / 700.0);
    EXPECT_GT(ttft400, ttft * 1.1);
    EXPECT_LE(ttft400, ttft / clock * (1 + 1e-12));
    EXPECT_EQ(tpot400, tpot);
}

// The co-design sweep's power axis: each point is the sweep of the system with that limit as a system edit, its
// energy at the limit; 0 keeps the system's (none, or the edit's); a value outside the part's range is refused
// before any point runs.
TEST(PowerCap, TheSweepHasAPowerAxis) {
    const std::string sweep =
        "sweep --json --model presets/models/llama3-8b.json --system presets/systems/dgx-h100-superpod.json "
        "--layout tp=2,dp=4,sp=1,batch=8 --axis power=";
    const sctest::CliResult cli = sctest::RunCli(sweep + "500,0", false);
    ASSERT_EQ(cli.status, 0) << cli.out;
    const nlohmann::json rows = nlohmann::json::parse(cli.out);
    ASSERT_EQ(rows.size(), 2u);
    const sctest::CliResult edited = sctest::RunCli(sweep + "0 --system-set accelerator.power_limit_w=500", false);
    ASSERT_EQ(edited.status, 0) << edited.out;
    const nlohmann::json row = nlohmann::json::parse(edited.out)[0];
    EXPECT_EQ(row["point"]["power_w"], 500);  // the limit it ran under, the edit's
    const double at500 = row["step_seconds"].get<double>(), full = rows[1]["step_seconds"].get<double>();
    EXPECT_EQ(rows[0]["point"]["power_w"], 500);
    EXPECT_EQ(rows[0]["step_seconds"].get<double>(), at500);
    EXPECT_GT(at500, full);
    EXPECT_NEAR(rows[0]["energy_joules_per_step"].get<double>(), 500.0 * 8 * at500, 1e-9 * 500 * 8 * at500);
    EXPECT_EQ(rows[1]["point"]["power_w"], 0);  // none: the board power
    EXPECT_NEAR(rows[1]["energy_joules_per_step"].get<double>(), 700.0 * 8 * full, 1e-9 * 700 * 8 * full);
    const sctest::CliResult bad = sctest::RunCli(sweep + "500,150");
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.out.find("power: 150 W is outside h100-sxm's range; valid: 200 to 700 W"), std::string::npos)
        << bad.out;
}

// The Sweeps view's power axis, on the page's thread, over the current layout: the cells are the engine's rows, and
// their step time grows as the limit falls.
TEST(PowerCap, ThePagesSweepsViewHasAPowerAxis) {
    pagetest::Page p;
    ASSERT_NO_FATAL_FAILURE(pagetest::ShowJob(p, "llama3-8b.json", "dgx-h100-superpod.json", "tp=2,dp=4,sp=1,batch=8"));
    sc::app::SetPoolWorkers(*p.app, 0);
    sc::app::SetSweepAxes(*p.app, "power=300,500,700", "");
    p.app->sweep.fixed_layout = true;
    sc::app::StartSweep(*p.app);
    ASSERT_EQ(p.app->sweep.error, "");
    for (int i = 0; i < 100 && !p.app->sweep.has_result; ++i) sc::app::StepSweep(*p.app, 0.0);
    ASSERT_TRUE(p.app->sweep.has_result);
    const auto& cells = p.app->sweep.cells;
    ASSERT_EQ(cells.size(), 3u);
    EXPECT_GT(cells[0].step_seconds, cells[1].step_seconds);
    EXPECT_GT(cells[1].step_seconds, cells[2].step_seconds);
    // Charted as tokens per joule: a step's tokens over its energy at the limit, more of them at a lower limit.
    const double tokens = 8.0 * 8192;
    for (const sc::app::SweepCell& c : cells)
        EXPECT_NEAR(sc::app::SweepMetricValue(sc::app::kMetricTokensPerJoule, c),
                    tokens / (c.point.power_w * 8 * c.step_seconds), 1e-9 * tokens / c.energy_joules);
    EXPECT_GT(sc::app::SweepMetricValue(sc::app::kMetricTokensPerJoule, cells[0]),
              sc::app::SweepMetricValue(sc::app::kMetricTokensPerJoule, cells[2]));
    p.app->sweep.metric = sc::app::kMetricTokensPerJoule;
    p.app->sweeps_open = p.app->apply_views = true;  // as a link with sweeps=1 opens the window
    EXPECT_TRUE(p.Find("Sweeps", "chart").found) << "no chart metric picker";
    sc::engine::Request r = sc::app::CurrentRequest(*p.app);
    sc::ParseSweepAxis("power=300,500,700", r.sweep.axes);
    r.sweep.fixed_layout = true;
    const sc::engine::SweepSnapshot snap = sc::engine::SnapshotSweep(r);
    const std::vector<sc::SweepRow> rows = sc::engine::RunSweepShard(snap, 0, 1);
    ASSERT_EQ(rows.size(), 3u);
    for (size_t i = 0; i < rows.size(); ++i)
        EXPECT_EQ(sc::SweepRowText(rows[i], snap.request, sc::SweepFormat::csv),
                  sc::SweepRowText(sc::app::RowOf(cells[i], rows[i].model), snap.request, sc::SweepFormat::csv));
}

// The page: the cluster's "power limit" field sets it, the estimate equals the CLI's with the same edit, the link
// reopens it, reset removes it, and a link's limit outside the GPU's range is refused naming the key.
TEST(PowerCap, ThePageSetsItAsTheCliDoes) {
    pagetest::Page p;
    ASSERT_NO_FATAL_FAILURE(pagetest::ShowJob(p, "llama3-8b.json", "dgx-h100-superpod.json", "tp=2,dp=4,sp=1,batch=8"));
    const double full = p.app->estimate.step_seconds;
    p.EnterText("Training on a cluster", "##power_limit", "500");
    ASSERT_TRUE(p.app->has_estimate) << p.app->training_error;
    EXPECT_GT(p.app->estimate.step_seconds, full);
    const double cli =
        pagetest::CliStepSeconds("llama3-8b", "dgx-h100-superpod", "--system-set accelerator.power_limit_w=500",
                                 sc::app::CurrentParallelSpec(*p.app));
    EXPECT_NEAR(p.app->estimate.step_seconds, cli, 1e-9 * cli);
    p.Frames(2);
    const std::string shown = sc::app::MirrorText(*p.app);
    // The page's text (its results panel) reads the energy at the limit, as the CLI's report does.
    EXPECT_NE(shown.find(sc::EnergyPerStepText(p.app->estimate, 8)), std::string::npos) << shown;
    EXPECT_NE(shown.find("(500 W a GPU, "), std::string::npos) << shown;
    const std::string link = sc::app::LinkState(*p.app);
    EXPECT_NE(link.find(";power_limit=500;"), std::string::npos) << link;
    pagetest::App other = pagetest::OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, link), "");
    ASSERT_TRUE(other->has_estimate) << other->training_error;
    EXPECT_EQ(other->estimate.step_seconds, p.app->estimate.step_seconds);
    p.Click("Training on a cluster", "reset##power");
    p.Frames(2);
    EXPECT_EQ(p.app->estimate.step_seconds, full);
    EXPECT_EQ(sc::app::LinkState(*p.app).find("power_limit"), std::string::npos);
    std::string bad = link;
    bad.replace(bad.find("power_limit=500"), 15, "power_limit=900");
    EXPECT_EQ(sc::app::ApplyLink(*other, bad),
              "link: power_limit: 900 W is outside h100-sxm's range; valid: 200 to 700 W (2/7 of its board power to "
              "all of it)");
}

}  // namespace
