// The page's Serving tab (src/app/inference_driver.*, panel_inference.cpp), built natively: picking a serving
// preset picks its model and cluster, and one simulation prints exactly what `stagecraft serve --preset` prints;
// the rate sweep run in frame slices equals the CLI's --rate-sweep at the same rates; the tab draws.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/app.h"
#include "app/app_state.h"
#include "app/imgui_bridge.h"
#include "app/inference_driver.h"
#include "report/serve_report.h"
#include "test_util.h"

namespace {

const std::string kRoot = SC_SOURCE_DIR;

struct AppDeleter {
    void operator()(sc::app::AppState* s) const { sc::app::DestroyAppState(s); }
};
using App = std::unique_ptr<sc::app::AppState, AppDeleter>;

std::vector<std::string> IndexOf(const std::string& dir) {
    return nlohmann::json::parse(sctest::ReadFile(kRoot + "/presets/" + dir + "/index.json"))
        .get<std::vector<std::string>>();
}

// The page as web/main.js opens it: model and cluster presets, calibration, serving presets, in index order.
App OpenPage() {
    App s(sc::app::CreateAppState());
    for (const std::string& m : IndexOf("models"))
        EXPECT_EQ(sc::app::AddPreset(*s, m, sctest::ReadFile(kRoot + "/presets/models/" + m)), "");
    for (const std::string& f : IndexOf("systems")) {
        const std::string system = sctest::ReadFile(kRoot + "/presets/systems/" + f);
        const std::string acc = nlohmann::json::parse(system).at("accelerator").get<std::string>();
        EXPECT_EQ(sc::app::AddSystem(*s, f, system, sctest::ReadFile(kRoot + "/presets/hardware/" + acc + ".json")),
                  "");
    }
    EXPECT_EQ(sc::app::SetCalibration(*s, sctest::ReadFile(kRoot + "/presets/calibration/measured.json")), "");
    for (const std::string& f : IndexOf("inference"))
        EXPECT_EQ(sc::app::AddServingPreset(*s, f, sctest::ReadFile(kRoot + "/presets/inference/" + f)), "");
    return s;
}

std::string Cli(const std::string& args) {
    const sctest::CliResult r = sctest::RunCli(args, false);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.out;
    return r.out;
}

TEST(AppInference, EveryServingPresetParsesAndIsListed) {
    App s = OpenPage();
    EXPECT_EQ(s->inference.presets.size(), IndexOf("inference").size());
    EXPECT_TRUE(s->inference.has_config);
}

TEST(AppInference, OneSimulationPrintsWhatTheCliPrints) {
    for (const std::string& file : IndexOf("inference")) {
        App s = OpenPage();
        ASSERT_TRUE(sc::app::SelectServingPreset(*s, file)) << file;
        ASSERT_EQ(s->inference.error, "") << file;
        const std::string id = file.substr(0, file.size() - 5);
        // Picking the preset picked its model and cluster.
        const auto preset = nlohmann::json::parse(sctest::ReadFile(kRoot + "/presets/inference/" + file));
        EXPECT_EQ(s->presets[s->preset_index].file, preset.at("model").get<std::string>() + ".json");
        EXPECT_EQ(s->systems[s->system_index].file, preset.at("system").get<std::string>() + ".json");
        sc::app::RunInference(*s);
        ASSERT_EQ(s->inference.error, "") << file;
        ASSERT_TRUE(s->inference.has_result);
        EXPECT_EQ(s->inference.report, Cli("serve --preset " + id)) << file;
    }
}

TEST(AppInference, AnEditedFieldIsSimulatedAsTheCliSetsIt) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-poisson.json"));
    s->inference.config.workload.rate = 8;
    s->inference.config.pool.replicas = 1;
    sc::app::RunInference(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report,
              Cli("serve --preset llama3-8b-h100-poisson --set workload.rate=8 --set pool.replicas=1"));
}

TEST(AppInference, TheRateSweepInFrameSlicesEqualsTheCliSweep) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-poisson.json"));
    s->inference.config.workload.requests = 400;  // a short run per point keeps the test quick
    auto& w = s->inference.sweep;
    w.from = 4;
    w.to = 16;
    w.points = 4;
    sc::app::StartServeSweep(*s);
    ASSERT_EQ(w.error, "");
    for (int frame = 0; frame < 1000 && w.next_shard >= 0; ++frame) sc::app::StepServeSweep(*s, 0.0);
    ASSERT_EQ(w.error, "");
    ASSERT_EQ(w.points_done.size(), 4u);
    EXPECT_EQ(w.report,
              Cli("serve --preset llama3-8b-h100-poisson --set workload.requests=400 --rate-sweep 4,8,12,16"));
}

TEST(AppInference, BadSweepRatesAreAClearError) {
    App s = OpenPage();
    auto& w = s->inference.sweep;
    w.from = 10;
    w.to = 5;
    sc::app::StartServeSweep(*s);
    EXPECT_NE(w.error.find("0 < from < to"), std::string::npos) << w.error;
    EXPECT_EQ(w.next_shard, -1);
}

TEST(AppInference, TheServingTabDrawsItsResultAndCharts) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-poisson.json"));
    s->inference.config.workload.requests = 300;
    sc::app::RunInference(*s);
    ASSERT_TRUE(s->inference.has_result) << s->inference.error;
    EXPECT_FALSE(s->inference.result.result.series.empty());
    sc::app::ImGuiBridge ui;
    double now = 0;
    auto frames = [&](int n) {
        for (int i = 0; i < n; ++i) {
            ui.BeginFrame(1280, 900, 1, now += 1.0 / 60);
            sc::app::DrawUI(*s);
            ui.EndFrame();
        }
    };
    sc::app::Rect tab = ui.ItemRect("Training on a cluster", "Serving");
    frames(2);
    tab = ui.ItemRect("Training on a cluster", "Serving");
    ASSERT_TRUE(tab.found);
    ui.MousePos(tab.x + tab.w / 2, tab.y + tab.h / 2);
    frames(1);
    ui.MouseButton(0, true);
    frames(1);
    ui.MouseButton(0, false);
    frames(3);
    EXPECT_TRUE(ui.ItemRect("Training on a cluster", "Simulate").found);
    EXPECT_TRUE(ui.ItemRect("Training on a cluster", "##kv").found) << "no KV occupancy chart";
    EXPECT_TRUE(ui.ItemRect("Training on a cluster", "##queue").found) << "no running/waiting chart";
}

}  // namespace

namespace {

TEST(AppInference, TheTabSimulatesByItselfAndAgainWhenTheModelChanges) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-poisson.json"));
    s->inference.config.workload.requests = 200;
    sc::app::ImGuiBridge ui;
    double now = 0;
    auto frames = [&](int n) {
        for (int i = 0; i < n; ++i) {
            ui.BeginFrame(1280, 900, 1, now += 1.0 / 60);
            sc::app::DrawUI(*s);
            ui.EndFrame();
        }
    };
    sc::app::Rect tab = ui.ItemRect("Training on a cluster", "Serving");
    frames(2);
    tab = ui.ItemRect("Training on a cluster", "Serving");
    ASSERT_TRUE(tab.found);
    ui.MousePos(tab.x + tab.w / 2, tab.y + tab.h / 2);
    frames(1);
    ui.MouseButton(0, true);
    frames(1);
    ui.MouseButton(0, false);
    frames(2);
    ASSERT_TRUE(s->inference.has_result) << s->inference.error;
    const std::string before = s->inference.report;
    s->model.layers = 16;  // an edit in the Model panel
    sc::app::Recompute(*s);
    frames(2);
    ASSERT_TRUE(s->inference.has_result) << s->inference.error;
    EXPECT_NE(s->inference.report, before) << "the Serving tab kept the result of the old model";
}

}  // namespace
