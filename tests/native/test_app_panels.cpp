// The page's panels driven natively through the same ImGui bridge the browser drives (src/app/imgui_bridge.h):
// the first screen the page opens on, numeric fields that apply an edit on Enter or after a pause (not at every
// keystroke), the memory and layout warnings, and the network table's "modified" mark and reset.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/app.h"
#include "app/app_state.h"
#include "app/imgui_bridge.h"
#include "app/pool_jobs.h"
#include "page_driver.h"
#include "report/layout_warnings.h"
#include "report/search_report.h"
#include "test_util.h"

namespace {

using pagetest::App;
using pagetest::Page;
using pagetest::ShowJob;
using pagetest::ShowLayout;

TEST(AppPanels, TheFirstScreenIsLlama3_8bOnDgxH100AndFits) {
    App s = pagetest::OpenPage();
    EXPECT_EQ(s->model.name, "Llama-3 8B");
    ASSERT_GE(s->system_index, 0);
    EXPECT_EQ(s->systems[s->system_index].file, "dgx-h100-superpod.json");
    ASSERT_TRUE(s->has_estimate) << s->training_error << s->parallel_error;
    EXPECT_TRUE(s->estimate.fits) << s->estimate.memory_message;
    EXPECT_TRUE(sc::LayoutWarnings(s->parallel, s->estimate).empty());
    // Reset goes back to the same screen.
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=1,pp=8,dp=8,batch=8"), "");
    sc::app::ResetToDefaults(*s);
    EXPECT_EQ(s->model.name, "Llama-3 8B");
    EXPECT_TRUE(s->has_estimate && s->estimate.fits);
}

TEST(AppPanels, AFieldAppliesItsEditOnEnterNotAtEveryKeystroke) {
    Page p;
    p.Frames(2);
    const int dp_before = p.app->parallel.dp;
    ASSERT_NE(dp_before, 16);
    const std::string report_before = sc::app::MirrorText(*p.app);
    p.FocusField("Parallelism and traces", "dp");
    p.Type("1");
    EXPECT_EQ(p.app->parallel.dp, dp_before) << "dp=1 was applied while typing 16";
    p.Type("6");
    EXPECT_EQ(p.app->parallel.dp, dp_before);
    EXPECT_EQ(sc::app::MirrorText(*p.app), report_before);
    p.Enter();
    EXPECT_EQ(p.app->parallel.dp, 16);
    EXPECT_NE(sc::app::MirrorText(*p.app), report_before);
    EXPECT_NE(sc::app::MirrorText(*p.app).find("dp=16"), std::string::npos);
}

TEST(AppPanels, AFieldAppliesItsEditAfterAPauseInTyping) {
    Page p;
    p.Frames(2);
    p.FocusField("Parallelism and traces", "dp");
    p.Type("8");
    EXPECT_NE(p.app->parallel.dp, 8);
    p.Frames(10, 0.1);  // one second without a keystroke, the field still focused
    EXPECT_EQ(p.app->parallel.dp, 8);
}

TEST(AppPanels, TypingBackToTheAppliedValueIsNotLost) {
    Page p;
    p.Frames(2);
    const int dp = p.app->parallel.dp;  // 32
    p.FocusField("Parallelism and traces", "dp");
    p.Type("3");  // pending 3
    p.Type("2");  // pending 32 again: the parse equals the applied value and must still count
    p.Enter();
    EXPECT_EQ(p.app->parallel.dp, dp);
}

// The page's link holds each of `parts`, and another page opened with it shows what this one shows; returns it.
App ExpectLinkReopens(Page& p, std::initializer_list<std::string_view> parts) {
    const std::string link = sc::app::LinkState(*p.app);
    for (std::string_view part : parts) EXPECT_NE(link.find(part), std::string::npos) << part << " in " << link;
    App other = pagetest::OpenPage();
    EXPECT_EQ(sc::app::ApplyLink(*other, link), "");
    EXPECT_EQ(sc::app::MirrorText(*other), sc::app::MirrorText(*p.app));
    return other;
}

TEST(AppPanels, AnMoeModelsLoadImbalanceSlowsItsAllToAllAndTravelsInTheLink) {
    // Mixtral with one expert a rank (ep=8): the hottest expert at twice the mean doubles what its rank receives.
    Page p;
    p.Frames(2);
    ASSERT_TRUE(sc::app::SelectPreset(*p.app, "mixtral-8x7b.json"));
    ASSERT_NO_FATAL_FAILURE(ShowLayout(p, "tp=1,ep=8,dp=64,microbatch=1,batch=256,zero=1"));
    const double balanced = p.app->estimate.step.ep_comm;
    ASSERT_GT(balanced, 0);
    p.EnterText("Model", "load_imbalance", "2");
    EXPECT_EQ(p.app->model.moe.load_imbalance, 2);
    // Twice the bytes, and no slower per byte: the measured all-to-all's bandwidth does not fall with the buffer (past
    // its largest one it stays at its plateau, which these buffers reach).
    EXPECT_LE(p.app->estimate.step.ep_comm, 2 * balanced * (1 + 1e-12));
    EXPECT_GT(p.app->estimate.step.ep_comm, 1.99 * balanced);
    App other = ExpectLinkReopens(p, {";load_imbalance=2;"});
    // Beyond experts / top_k = 4 the model says so; a dense model has no such field.
    ASSERT_EQ(sc::app::ApplyLink(*other, "v1;model=mixtral-8x7b;load_imbalance=5;parallel=ep=8,dp=64;end"), "");
    EXPECT_NE(sc::app::MirrorText(*other).find("moe.load_imbalance: must be from 1"), std::string::npos)
        << sc::app::MirrorText(*other);
    EXPECT_NE(
        sc::app::ApplyLink(*other, "v1;model=llama3-8b;load_imbalance=2;parallel=dp=8;end").find("load_imbalance"),
        std::string::npos);
}

// Llama 4 Maverick on 256 GB200: the page places the job in segments of 64 GPUs a rack as the CLI does and says
// so (the Training panel's "placed on" line, the results text); moe_every typed in the Model panel makes every
// layer MoE, slower, and travels in the link.
TEST(AppPanels, MaverickOnNvlRacksRunsInSegmentsAndMoeEveryTravelsInTheLink) {
    Page p;
    ASSERT_NO_FATAL_FAILURE(ShowJob(p, "llama4-maverick.json", "gb200-nvl72.json",
                                    "tp=1,pp=2,vstages=12,schedule=interleaved,ep=64,dp=128,batch=2048,zero=1"));
    ASSERT_TRUE(p.app->evaluation.slice);
    EXPECT_EQ(p.app->evaluation.slice->levels.front().size, 64);
    EXPECT_NE(sc::app::MirrorText(*p.app).find("4 segments of 64"), std::string::npos) << sc::app::MirrorText(*p.app);
    const double interleaved = p.app->estimate.step_seconds;
    p.EnterText("Model", "moe_every", "1");
    EXPECT_EQ(p.app->model.moe.every, 1);
    EXPECT_GT(p.app->estimate.step_seconds, interleaved);
    App other = ExpectLinkReopens(p, {";moe_every=1;"});
    EXPECT_NE(sc::app::ApplyLink(*other, "v1;model=llama3-8b;moe_every=2;parallel=dp=8;end").find("moe_every"),
              std::string::npos);
}

// DeepSeek-V3's MTP module on Megatron-Bridge's PP4 x VP4 layout, typed into the Parallelism panel's layout field,
// then taken out in the Model panel: the page names the mismatch, a layout without 'm' runs faster, a malformed
// one is refused with its reason and changes nothing, and both the module count and the layout travel in the link.
TEST(AppPanels, DeepSeekMtpOnAMegatronLayoutTypedInThePage) {
    Page p;
    p.Frames(2);
    ASSERT_TRUE(sc::app::SelectPreset(*p.app, "deepseek-v3.json"));
    ASSERT_TRUE(sc::app::SelectSystem(*p.app, "gb200-nvl72.json"));
    ASSERT_EQ(p.app->model.mtp_layers, 1);
    ASSERT_NO_FATAL_FAILURE(ShowLayout(p,
                                       "tp=1,pp=4,vstages=4,schedule=interleaved,ep=64,dp=64,batch=8192,zero=1,"
                                       "uneven=1"));
    const double uneven = p.app->estimate.step_seconds;
    p.EnterText("Parallelism and traces", "layout", "Et*4|(t*4|)*14,tmL");
    ASSERT_EQ(p.app->parallel.layout.size(), 16u) << p.app->parallel_error;
    ASSERT_TRUE(p.app->has_estimate) << p.app->parallel_error;
    const double with = p.app->estimate.step_seconds;
    EXPECT_LT(with, uneven);  // the last stage no longer carries 3 layers beside the two LM heads
    p.EnterText("Model", "mtp_layers", "0");
    EXPECT_EQ(p.app->model.mtp_layers, 0);
    EXPECT_NE(p.app->parallel_error.find("mtp_layers=0"), std::string::npos) << p.app->parallel_error;
    p.EnterText("Parallelism and traces", "layout", "Et*4|(t*4|)*14tLx");
    EXPECT_NE(p.app->parallel_error.find("layout: nothing may follow the loss"), std::string::npos)
        << p.app->parallel_error;
    EXPECT_EQ(p.app->parallel.layout_mtp, 1);  // not applied
    p.EnterText("Parallelism and traces", "layout", "Et*4|(t*4|)*14tL");
    ASSERT_TRUE(p.app->has_estimate) << p.app->parallel_error;
    EXPECT_LT(p.app->estimate.step_seconds, with);
    ExpectLinkReopens(p, {";mtp_layers=0;", ",layout=Et*4|(t*4|)*14tL"});
}

// A hybrid model in the page: its layer pattern is a field of the Model panel (Enter applies), a pattern of the
// wrong length shows the model's error, and the edited pattern travels in the link.
TEST(AppPanels, HybridPatternTypedInThePage) {
    Page p;
    ASSERT_NO_FATAL_FAILURE(
        ShowJob(p, "nemotron-h-8b.json", "dgx-h100-superpod.json", "tp=2,sp=1,dp=4,batch=64,zero=1"));
    const double preset = p.app->estimate.step_seconds;
    const std::string all_mamba(52, 'M');
    p.EnterText("Model", "pattern", all_mamba.substr(0, 51));
    EXPECT_NE(p.app->error.find("hybrid_pattern: has 51 symbols for layers=52"), std::string::npos) << p.app->error;
    p.EnterText("Model", "pattern", all_mamba);
    ASSERT_EQ(p.app->model.hybrid, all_mamba);
    ASSERT_TRUE(p.app->has_estimate) << p.app->error << p.app->training_error;
    EXPECT_NE(p.app->estimate.step_seconds, preset);
    ExpectLinkReopens(p, {";hybrid=" + all_mamba + ";"});
}

// Nemotron 3 Super in the page: its latent MoE's width is a Model panel field. Taken out (0), the experts and the
// all-to-alls run on the hidden size, a slower step; the edit travels in the link, and a link's moe_latent on a model
// without experts is refused with the key named.
TEST(AppPanels, SuperLatentWidthTypedInThePage) {
    Page p;
    ASSERT_NO_FATAL_FAILURE(
        ShowJob(p, "nemotron-3-super.json", "gb300-nvl72.json", "tp=1,ep=64,dp=64,microbatch=1,batch=512,zero=1"));
    ASSERT_EQ(p.app->model.moe.latent, 1024);
    const double latent = p.app->estimate.step_seconds;
    p.EnterText("Model", "moe_latent", "0");
    ASSERT_EQ(p.app->model.moe.latent, 0);
    ASSERT_TRUE(p.app->has_estimate) << p.app->error << p.app->training_error;
    EXPECT_GT(p.app->estimate.step_seconds, latent);
    // Its MTP depths taken out: the repeated module has nothing left to share, and the step is shorter.
    const double with_mtp = p.app->estimate.step_seconds;
    p.EnterText("Model", "mtp_layers", "0");
    ASSERT_EQ(p.app->model.mtp_layers, 0);
    ASSERT_TRUE(p.app->has_estimate) << p.app->error << p.app->training_error;
    EXPECT_LT(p.app->estimate.step_seconds, with_mtp);
    App other = ExpectLinkReopens(p, {";moe_latent=0;", ";mtp_layers=0;"});
    EXPECT_NE(sc::app::ApplyLink(*other, "v1;model=llama3-8b;moe_latent=512;parallel=dp=8;end").find("moe_latent"),
              std::string::npos);
}

// Megatron's recompute modules as boxes under selective recomputation: ticking the experts' activation and the
// norms keeps less than the attention core alone, costs recomputation, and travels in the link.
TEST(AppPanels, RecomputeModulesTickedInTheParallelismPanel) {
    Page p;
    p.Frames(2);
    ASSERT_TRUE(sc::app::SelectPreset(*p.app, "mixtral-8x7b.json"));
    ASSERT_NO_FATAL_FAILURE(ShowLayout(p, "tp=2,sp=1,ep=8,dp=32,microbatch=1,batch=256,zero=1,recompute=selective"));
    const double core_attn_only = p.app->estimate.memory_peak, rec = p.app->estimate.step.recompute;
    for (const char* box : {"moe_act", "layernorm"}) {
        p.Click("Parallelism and traces", box);
        p.Frames(2);
    }
    EXPECT_EQ(p.app->parallel.recompute_modules,
              sc::kRecomputeCoreAttn | sc::kRecomputeMoeAct | sc::kRecomputeLayernorm);
    ASSERT_TRUE(p.app->has_estimate) << p.app->parallel_error;
    EXPECT_LT(p.app->estimate.memory_peak, core_attn_only);
    EXPECT_GT(p.app->estimate.step.recompute, rec);
    ExpectLinkReopens(p, {",recompute_modules=core_attn+layernorm+moe_act"});
}

TEST(AppPanels, ASlidingWindowTypedInTheModelPanelShortensAttentionAndTravelsInTheLink) {
    Page p;
    p.Frames(2);
    ASSERT_TRUE(sc::app::SelectPreset(*p.app, "llama3-8b.json"));
    ASSERT_NO_FATAL_FAILURE(ShowLayout(p, "tp=1,dp=8,microbatch=1,batch=64,zero=1"));
    const double full = p.app->estimate.step.compute;
    p.EnterText("Model", "window", "1024");
    ASSERT_EQ(p.app->model.window.size, 1024);
    EXPECT_EQ(p.app->model.window.full_every, 0);  // every layer windowed until full_every is set
    EXPECT_LT(p.app->estimate.step.compute, full);
    App other = ExpectLinkReopens(p, {";window=1024;"});
    EXPECT_EQ(other->model.window.size, 1024);
    // A preset's window is turned off by a link's window=0; full_every=1 windows nothing and says so.
    ASSERT_EQ(sc::app::ApplyLink(*other, "v1;model=gpt-oss-20b;window=0;parallel=ep=8,dp=8;end"), "");
    EXPECT_FALSE(other->model.has_window());
    ASSERT_EQ(sc::app::ApplyLink(*other, "v1;model=gpt-oss-20b;full_every=1;parallel=ep=8,dp=8;end"), "");
    EXPECT_NE(sc::app::MirrorText(*other).find("sliding_window.full_every: 1 keeps every layer full"),
              std::string::npos)
        << sc::app::MirrorText(*other);
}

TEST(AppPanels, AnEditedNetworkLevelIsMarkedAndResetRestoresThePreset) {
    Page p;
    p.Frames(2);
    sc::app::SystemPreset& sys = p.app->systems[p.app->system_index];
    const double preset_bw = sys.preset_levels[0].bandwidth_gbps;
    p.FocusField("Training on a cluster", "##bw");
    p.Type("1");
    p.Enter();
    EXPECT_EQ(sys.system.levels[0].bandwidth_gbps, 1);
    p.Frames(2);
    ASSERT_TRUE(p.Find("Training on a cluster", "reset").found) << "no reset button beside the edited level";
    p.Click("Training on a cluster", "reset");
    EXPECT_EQ(sys.system.levels[0].bandwidth_gbps, preset_bw);
    p.Frames(2);
    EXPECT_FALSE(p.ui.ItemRect("Training on a cluster", "reset").found) << "reset shown on an unedited level";
}

TEST(AppPanels, ATorusLevelTogglesWraparoundAndTheLinkCarriesIt) {
    // On a TPU pod the network table's last column is the dimension's wraparound (a torus has no switch to
    // reduce in): turning it off makes the dimension a mesh, slows the tensor groups, and travels in the link.
    Page p;
    p.Frames(2);
    ASSERT_TRUE(sc::app::SelectSystem(*p.app, "tpu-v4-pod.json"));
    ASSERT_NO_FATAL_FAILURE(ShowLayout(p, "tp=4,dp=16,batch=32"));
    EXPECT_NE(sc::app::MirrorText(*p.app).find("(slice 4x4x4)"), std::string::npos);
    const double ring = p.app->estimate.step.tp_comm;
    p.Click("Training on a cluster", "wrap##wrap");
    p.Frames(2);
    sc::app::SystemPreset& sys = p.app->systems[p.app->system_index];
    EXPECT_FALSE(sys.system.levels[0].wraparound);
    EXPECT_GT(p.app->estimate.step.tp_comm, ring);
    const std::string link = sc::app::LinkState(*p.app);
    EXPECT_NE(link.find("net.0.wrap=0"), std::string::npos) << link;
    const std::string report = sc::app::MirrorText(*p.app);
    App other = pagetest::OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, link), "");
    EXPECT_EQ(sc::app::MirrorText(*other), report);
    // Only a torus level has a wraparound, and a torus no in-network reduction: such links are refused.
    std::string e = sc::app::ApplyLink(*other,
                                       "v1;model=llama3-8b;system=dgx-h100-superpod;net.0.wrap=1;"
                                       "parallel=tp=8,dp=4;end");
    EXPECT_NE(e.find("net.0.wrap"), std::string::npos) << e;
    e = sc::app::ApplyLink(*other, "v1;model=llama3-8b;system=tpu-v4-pod;net.1.inr=1;parallel=tp=8,dp=4;end");
    EXPECT_NE(e.find("net.1.inr"), std::string::npos) << e;
}

// One "framework kernels" checkbox of the Training panel turned off: the step slows as the CLI's `--options
// <option>=off` makes it, and the link carries `<link_key>=0` to another page, which shows the same report.
void KernelCheckboxMatchesTheCliAndTravelsInTheLink(const char* label, const char* option, const char* link_key,
                                                    bool sc::KernelChoices::*choice) {
    SCOPED_TRACE(label);
    Page p;
    p.Frames(2);
    ASSERT_TRUE(p.app->has_estimate) << p.app->training_error;
    const double before = p.app->estimate.step_seconds;
    p.Click("Training on a cluster", "framework kernels");
    p.Frames(2);
    p.Click("Training on a cluster", label);
    p.Frames(2);
    EXPECT_FALSE(p.app->options.kernels.*choice);
    ASSERT_TRUE(p.app->has_estimate) << p.app->training_error;
    EXPECT_GT(p.app->estimate.step_seconds, before);
    const std::string link = sc::app::LinkState(*p.app);
    EXPECT_NE(link.find(std::string(";") + link_key + "=0;"), std::string::npos) << link;
    const std::string model = (std::filesystem::temp_directory_path() / "sc-kernels-model.json").string();
    {
        std::ofstream f(model);
        f << sc::app::CurrentModelJson(*p.app);
    }
    const std::string system = p.app->systems[p.app->system_index].file;
    const sctest::CliResult cli =
        sctest::RunCli("estimate --json --allow-oom --model " + model + " --system presets/systems/" + system +
                           " --parallel " + sc::app::CurrentParallelSpec(*p.app) + " --options " + option + "=off",
                       false);
    std::filesystem::remove(model);
    ASSERT_EQ(cli.status, 0) << cli.out;
    const double cli_step = nlohmann::json::parse(cli.out)["training"]["step_seconds"].get<double>();
    EXPECT_NEAR(p.app->estimate.step_seconds, cli_step, 1e-9 * cli_step);
    const std::string report = sc::app::MirrorText(*p.app);
    App other = pagetest::OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, link), "");
    EXPECT_FALSE(other->options.kernels.*choice);
    EXPECT_EQ(sc::app::MirrorText(*other), report);
}

TEST(AppPanels, FrameworkKernelsAreOptionsOfThePageAndTravelInTheLink) {
    // Unfused attention (Megatron-LM 2021).
    KernelCheckboxMatchesTheCliAndTravelsInTheLink("fused attention", "flash_attention", "flash",
                                                   &sc::KernelChoices::flash_attention);
}

TEST(AppPanels, EagerElementwiseKernelsSlowTheStepAsInTheCliAndTravelInTheLink) {
    // PyTorch eager's RMSNorm, rotary and SwiGLU kernels (the page opens on a Llama-style model, whose norms are
    // RMSNorm).
    KernelCheckboxMatchesTheCliAndTravelsInTheLink("fused elementwise", "fused_elementwise", "fused_ew",
                                                   &sc::KernelChoices::fused_elementwise);
}

TEST(AppPanels, DeepEpFp8DispatchAndContiguousRoutingShrinkTheAllToAllAsInTheCliAndTravelInTheLink) {
    // DeepSeek-V3 with ep=64 over eight nodes (graph/moe_spread.h, training/comm_model.h).
    Page p;
    p.Frames(2);
    ASSERT_TRUE(sc::app::SelectPreset(*p.app, "deepseek-v3.json"));
    const std::string split = "pp=4,dp=64,ep=64,batch=512,zero=1,recompute=full,uneven=1";
    ASSERT_NO_FATAL_FAILURE(ShowLayout(p, split));
    const double all_copies = p.app->estimate.step.ep_comm;
    p.Click("Training on a cluster", "framework kernels");
    p.Frames(2);
    p.Click("Training on a cluster", "DeepEP dispatch");
    p.Frames(2);
    ASSERT_TRUE(p.app->options.kernels.deepep_dispatch);
    ASSERT_TRUE(p.app->has_estimate) << p.app->training_error;
    EXPECT_LT(p.app->estimate.step.ep_comm, all_copies);
    // FP8 dispatch: the token-to-expert direction in FP8 with its scales.
    const double bf16 = p.app->estimate.step.ep_comm;
    p.Click("Training on a cluster", "FP8 dispatch");
    p.Frames(2);
    ASSERT_TRUE(p.app->options.kernels.fp8_dispatch);
    EXPECT_LT(p.app->estimate.step.ep_comm, bf16);
    // Contiguous routing comes in by a link (the model panel's "routing" combo sets the same field).
    std::string link = sc::app::LinkState(*p.app);
    EXPECT_NE(link.find(";deepep=1;"), std::string::npos) << link;
    EXPECT_NE(link.find(";fp8_dispatch=1;"), std::string::npos) << link;
    link.insert(link.find(";parallel="), ";routing=contiguous");
    App other = pagetest::OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, link), "");
    EXPECT_EQ(other->model.moe.routing, sc::MoeRouting::contiguous);
    ASSERT_TRUE(other->has_estimate) << other->training_error;
    EXPECT_LT(other->estimate.step.ep_comm, p.app->estimate.step.ep_comm);
    EXPECT_NE(sc::app::LinkState(*other).find(";routing=contiguous;"), std::string::npos);
    // The CLI on the page's model and options gives the same step.
    const std::string model = (std::filesystem::temp_directory_path() / "sc-deepep-model.json").string();
    {
        std::ofstream f(model);
        f << sc::app::CurrentModelJson(*other);
    }
    const sctest::CliResult cli =
        sctest::RunCli("estimate --json --allow-oom --model " + model + " --system presets/systems/" +
                           other->systems[other->system_index].file + " --parallel " +
                           sc::app::CurrentParallelSpec(*other) + " --options deepep_dispatch=on,fp8_dispatch=on",
                       false);
    std::filesystem::remove(model);
    ASSERT_EQ(cli.status, 0) << cli.out;
    const double cli_step = nlohmann::json::parse(cli.out)["training"]["step_seconds"].get<double>();
    EXPECT_NEAR(other->estimate.step_seconds, cli_step, 1e-9 * cli_step);
    // A dense model has no routing.
    EXPECT_NE(sc::app::ApplyLink(*other, "v1;model=llama3-8b;routing=contiguous;parallel=dp=8;end").find("routing"),
              std::string::npos);
}

TEST(LayoutWarnings, ABubbleOverHalfTheStepIsNamedInThePageAndTheCli) {
    // 16 stages and 2 microbatches: (p-1)/(m+p-1) = 15/17 of the step is fill and drain.
    const std::string split = "pp=16,dp=2,batch=4";
    const sctest::CliResult r = sctest::RunCli(
        "estimate --model presets/models/llama3-70b.json --system dgx-h100-superpod --allow-oom --parallel " + split,
        false);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("warning                       the pipeline bubble is"), std::string::npos) << r.out;
    const sctest::CliResult j = sctest::RunCli(
        "estimate --json --model presets/models/llama3-70b.json --system dgx-h100-superpod --allow-oom --parallel " +
            split,
        false);
    const auto warnings = nlohmann::json::parse(j.out).at("training").at("warnings");
    ASSERT_EQ(warnings.size(), 1u) << j.out;
    EXPECT_NE(warnings[0].get<std::string>().find("16 stages, 2 microbatches"), std::string::npos) << warnings[0];
}

TEST(LayoutWarnings, NoneForABalancedLayout) {
    const sctest::CliResult j = sctest::RunCli(
        "estimate --json --model presets/models/llama3-8b.json --system dgx-h100-superpod --parallel tp=2,sp=1,dp=32,batch=256,zero=1",
        false);
    ASSERT_EQ(j.status, 0) << j.out;
    EXPECT_TRUE(nlohmann::json::parse(j.out).at("training").at("warnings").empty()) << j.out;
}

}  // namespace

namespace {

TEST(AppPanels, TheAppliedSearchRowSaysInUse) {
    Page p;
    ASSERT_EQ(sc::app::SetParallel(*p.app, "tp=8,dp=2,batch=64"), "");
    p.Frames(2);
    p.Click("Training on a cluster", "Best layout");
    p.Click("Training on a cluster", "Find the best layouts");
    for (int i = 0; i < 200 && !p.app->search.has_result; ++i) p.Frames(1);
    ASSERT_TRUE(p.app->search.has_result) << p.app->search.error;
    const std::string best = sc::ParallelSpecString(p.app->search.result.top[0].par);
    p.Click("Training on a cluster", "use");
    EXPECT_EQ(sc::ParallelSpecString(p.app->parallel), best);
    // The first row now holds the layout in use: it has no "use" button any more, the second row has one.
    p.Frames(3);
    ASSERT_GE(p.app->search.result.top.size(), 2u);
    EXPECT_TRUE(p.ui.ItemRect("Training on a cluster", "use").found);
}

}  // namespace

namespace {

// An item's rect in CSS px at a device pixel ratio and UI scale.
sc::app::Rect ItemAt(float dpr, float ui_scale) {
    Page p;
    p.dpr = dpr;
    p.app->ui_scale = ui_scale;
    p.Frames(2);
    return p.Find("Model", "layers");
}

// The font is rasterised at the device pixel ratio but laid out in CSS px: the same item has the same CSS size at
// ratio 1 and 2 (the UI scale once overwrote the layout scale, and text at ratio 2 was drawn twice as large); the
// UI scale alone enlarges it.
TEST(AppPanels, TextHasTheSameCssSizeAtEveryPixelRatioAndTheUiScaleEnlargesIt) {
    const sc::app::Rect one = ItemAt(1, 1), two = ItemAt(2, 1), big = ItemAt(1, 1.5f);
    ASSERT_TRUE(one.found && two.found && big.found);
    EXPECT_NEAR(two.h, one.h, 0.5);
    EXPECT_NEAR(two.y, one.y, 0.5);
    EXPECT_GT(big.h, one.h * 1.3);
}

}  // namespace

namespace {

// The open views are part of the link: a link opens its tab and the Sweeps window, and the user's choice of tab
// changes the link.
TEST(AppPanels, ALinkOpensItsTabAndTheSweepsWindowAndTheTabChosenIsInTheLink) {
    Page p;
    p.Frames(2);
    EXPECT_EQ(p.app->view, sc::app::View::estimate);
    EXPECT_FALSE(p.app->sweeps_open);
    EXPECT_EQ(sc::app::LinkState(*p.app).find("view="), std::string::npos);  // defaults are not written
    std::string link = sc::app::LinkState(*p.app);
    link.replace(link.rfind(";end"), 4, ";view=serving;sweeps=1;end");
    ASSERT_EQ(sc::app::ApplyLink(*p.app, link), "");
    p.Frames(3);
    EXPECT_EQ(p.app->view, sc::app::View::serving);
    EXPECT_TRUE(p.app->sweeps_open);
    EXPECT_TRUE(p.Find("Training on a cluster", "Simulate").found) << "the Serving tab is drawn";
    EXPECT_NE(sc::app::LinkState(*p.app).find(";view=serving;sweeps=1;end"), std::string::npos);

    p.Click("Training on a cluster", "Best layout");
    EXPECT_EQ(p.app->view, sc::app::View::search);
    EXPECT_NE(sc::app::LinkState(*p.app).find(";view=search;"), std::string::npos);
}

}  // namespace

namespace {

// The Serving tab's description travels in the link: another page opened on it serves the same description and
// prints the same report; the first preset unedited writes nothing.
TEST(AppPanels, TheServingTabsEditsAreInTheLinkAndRestoreTheSameReport) {
    Page p;
    p.Frames(2);
    EXPECT_EQ(sc::app::LinkState(*p.app).find("serve"), std::string::npos);
    sc::app::InferenceState& q = p.app->inference;
    ASSERT_GE(q.presets.size(), 2u);
    ASSERT_TRUE(sc::app::SelectServingPreset(*p.app, q.presets[1].file));
    q.config.pool.replicas += 1;
    q.config.decode_pool = q.config.pool;
    q.config.decode_pool->tp = 2;
    q.config.engine.max_tokens = 4096;
    q.config.engine.chunked_prefill = !q.config.engine.chunked_prefill;
    q.config.engine.preemption = sc::Preemption::swap;
    q.config.precision.weights = q.config.precision.compute = sc::Precision::fp8;
    q.config.workload.arrival = sc::ArrivalKind::gamma;
    q.config.workload.rate = 3.3;
    q.config.workload.cv = 2.5;
    q.config.workload.requests = 300;
    q.config.slo.ttft = 0.2;
    q.config.slo.tpot = 0.05;
    q.preset_index = -1;
    pagetest::RunServingToEnd(*p.app);
    ASSERT_EQ(q.error, "");
    const std::string link = sc::app::LinkState(*p.app);
    EXPECT_NE(link.find(";serve=" + q.presets[1].file.substr(0, q.presets[1].file.size() - 5) + ";"), std::string::npos)
        << link;

    Page other;
    other.Frames(2);
    ASSERT_EQ(sc::app::ApplyLink(*other.app, link), "");
    pagetest::RunServingToEnd(*other.app);
    const sc::app::InferenceState& r = other.app->inference;
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.preset_index, -1) << "shown as edited";
    EXPECT_EQ(r.base_index, 1);
    EXPECT_EQ(r.report, q.report);
    EXPECT_EQ(sc::app::LinkState(*other.app), link);
}

}  // namespace

namespace {

// A sweep with more values than the chart has pixels (2,000 x 10 points of the fixed layout) draws one cell per
// pixel bin and a label where one fits: its draw data is a few pixels' worth, not 20,000 rectangles and 2,000
// labels; the tooltip still names the exact point under the mouse.
TEST(AppPanels, AHeatmapWiderThanItsPixelsDrawsOneCellPerBin) {
    Page p;
    p.Frames(2);
    ASSERT_EQ(sc::app::SetParallel(*p.app, "tp=8,dp=8,batch=64"), "");
    std::string flops = "flops=";
    for (int i = 0; i < 2000; ++i) {
        char v[32];
        std::snprintf(v, sizeof v, i ? ",%.3f" : "%.3f", 0.5 + i * 0.001);
        flops += v;
    }
    p.app->sweeps_open = true;
    p.app->apply_views = true;
    p.app->sweep.fixed_layout = true;
    sc::app::SetSweepAxes(*p.app, flops, "hbm_bw=1,1.5,2,2.5,3,3.5,4,4.5,5,5.5");
    sc::app::StartSweep(*p.app);
    ASSERT_EQ(p.app->sweep.error, "");
    for (int f = 0; f < 10000 && !p.app->sweep.has_result; ++f) sc::app::StepSweep(*p.app, 1.0);
    ASSERT_TRUE(p.app->sweep.has_result);
    ASSERT_EQ(p.app->sweep.cells.size(), 20000u);
    p.Frames(3);
    const std::vector<uint32_t>& dd = p.ui.DrawData();
    uint64_t vertices = 0;
    for (uint32_t n = 0; n < dd[sc::app::drawdata::kListCount]; ++n)
        vertices += dd[sc::app::drawdata::kHeaderWords + n * sc::app::drawdata::kListWords + 1];
    // The chart is at most 1024 px wide: 1024 x 10 bins of 4 vertices, plus the windows around it.
    EXPECT_LT(vertices, 1024u * 10 * 4 + 30000) << "vertices of a 20,000-point heatmap";
    EXPECT_GT(vertices, 2000u);
}

}  // namespace
