// The page for native tests: opened as web/main.js opens it (every preset of each index.json in order, the
// calibration), and driven through the same ImGui bridge the browser drives (src/app/imgui_bridge.h): frames
// on a clock the test advances, clicks, typing, Enter.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/app.h"
#include "app/app_state.h"
#include "app/imgui_bridge.h"
#include "app/inference_driver.h"
#include "test_util.h"

namespace pagetest {

inline const std::string kRoot = SC_SOURCE_DIR;

struct AppDeleter {
    void operator()(sc::app::AppState* s) const { sc::app::DestroyAppState(s); }
};
using App = std::unique_ptr<sc::app::AppState, AppDeleter>;

inline std::vector<std::string> IndexOf(const std::string& dir) {
    return nlohmann::json::parse(sctest::ReadFile(kRoot + "/presets/" + dir + "/index.json"))
        .get<std::vector<std::string>>();
}

// Models, clusters (with their accelerators), calibration and serving presets, in index order: the first model
// and cluster become current, as on a page opened without a link.
inline App OpenPage() {
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

// Frames of the page at the browser tests' default viewport (1024x768, or as set), the clock advancing `dt` s
// each.
struct Page {
    App app = OpenPage();
    sc::app::ImGuiBridge ui;
    double now = 0;
    float width = 1024, height = 768;
    float dpr = 1;  // the device pixel ratio

    void Frames(int n, double dt = 1.0 / 60) {
        for (int i = 0; i < n; ++i) {
            now += dt;
            ui.BeginFrame(width, height, dpr, now);
            sc::app::DrawUI(*app);
            ui.EndFrame();
        }
    }
    // The rect of an item (recorded from the frame after the first request, so two frames are drawn).
    sc::app::Rect Find(const std::string& window, const std::string& label) {
        ui.ItemRect(window, label);
        Frames(2);
        return ui.ItemRect(window, label);
    }
    // Moves to the item, lets a frame pass (ImGui reacts to a press over an item hovered the frame before),
    // presses and releases.
    void Click(const std::string& window, const std::string& label) {
        const sc::app::Rect r = Find(window, label);
        ASSERT_TRUE(r.found) << label;
        ui.MousePos(r.x + r.w / 2, r.y + r.h / 2);
        Frames(1);
        ui.MouseButton(0, true);
        Frames(1);
        ui.MouseButton(0, false);
        Frames(2);
    }
    // Clicks into the field `label` of `window` and selects its text.
    void FocusField(const std::string& window, const std::string& label) {
        Click(window, label);
        ui.Key("KeyA", "a", true, 1);
        Frames(1);
        ui.Key("KeyA", "a", false, 0);
        Frames(1);
    }
    void Type(const std::string& text) {
        for (char c : text) {
            ui.InputUtf8(std::string(1, c));
            Frames(1);
        }
    }
    void Enter() {
        ui.Key("Enter", "Enter", true, 0);
        Frames(1);
        ui.Key("Enter", "Enter", false, 0);
        Frames(1);
    }
    // Types `text` into a window's field, presses Enter and lets the page compute (two frames).
    void EnterText(const std::string& window, const std::string& label, const std::string& text) {
        FocusField(window, label);
        Type(text);
        Enter();
        Frames(2);
    }
};

// The Serving tab's simulation from start to end, as the frames run it (RunInference starts it; StepServe runs
// a slice a frame), in slices of 5 ms so that a test sees more than one.
inline void RunServingToEnd(sc::app::AppState& s) {
    sc::app::RunInference(s);
    while (s.inference.running) sc::app::StepServe(s, 0.005);
}

// The page on the split `spec`, its estimate computed.
inline void ShowLayout(Page& p, const std::string& spec) {
    ASSERT_EQ(sc::app::SetParallel(*p.app, spec), "");
    p.Frames(2);
    ASSERT_TRUE(p.app->has_estimate) << p.app->training_error;
}

// The page on a model and system preset with the split `spec`, estimated.
inline void ShowJob(Page& p, const char* model, const char* system, const std::string& spec) {
    p.Frames(2);
    ASSERT_TRUE(sc::app::SelectPreset(*p.app, model));
    ASSERT_TRUE(sc::app::SelectSystem(*p.app, system));
    ASSERT_NO_FATAL_FAILURE(ShowLayout(p, spec));
}

// The CLI's step time for a model and system preset (presets/models/<model>.json, presets/systems/<system>.json)
// with `flags` (--precision, --set ...) on the split `spec`; NaN, and a failure, when it does not run.
inline double CliStepSeconds(const std::string& model, const std::string& system, const std::string& flags,
                             const std::string& spec) {
    const sctest::CliResult cli =
        sctest::RunCli("estimate --json --allow-oom --model presets/models/" + model + ".json " + flags +
                           " --system presets/systems/" + system + ".json --parallel " + spec,
                       false);
    EXPECT_EQ(cli.status, 0) << cli.out;
    if (cli.status != 0) return std::nan("");
    return nlohmann::json::parse(cli.out)["training"]["step_seconds"].get<double>();
}

}  // namespace pagetest
