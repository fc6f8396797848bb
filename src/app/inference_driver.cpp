// The page's serving driver: presets, one simulation, and the rate sweep in frame slices (inference_driver.h).
#include "app/inference_driver.h"

#include <chrono>

#include "app/app.h"
#include "app/app_state.h"
#include "config/error.h"
#include "report/serve_report.h"

namespace sc::app {

std::string AddServingPreset(AppState& s, const std::string& file, const std::string& json_text) {
    ServingPreset p{file, {}};
    try {
        p.description = ParseServingDescription(json_text);
    } catch (const Error& e) {
        return file + ": " + e.what();
    }
    InferenceState& q = s.inference;
    q.presets.push_back(std::move(p));
    if (!q.has_config) {
        q.preset_index = static_cast<int>(q.presets.size()) - 1;
        q.config = q.presets.back().description.config;
        q.has_config = true;
    }
    return "";
}

bool SelectServingPreset(AppState& s, const std::string& file) {
    InferenceState& q = s.inference;
    for (size_t i = 0; i < q.presets.size(); ++i) {
        const ServingDescription& d = q.presets[i].description;
        if (q.presets[i].file != file && q.presets[i].file != file + ".json") continue;
        q.preset_index = static_cast<int>(i);
        q.config = d.config;
        q.has_config = true;
        q.has_result = false;
        q.ran_for.clear();  // the Serving tab simulates the new description when it next draws
        q.error.clear();
        CancelServeSweep(s);
        q.sweep.points_done.clear();
        q.sweep.from = q.sweep.to = 0;
        // Its model and cluster become the page's, as `stagecraft serve` reads them from the preset.
        if (!SelectPreset(s, d.model_id)) q.error = "model: the page has no preset \"" + d.model_id + "\"";
        else if (!SelectSystem(s, d.system_id)) q.error = "system: the page has no cluster \"" + d.system_id + "\"";
        return true;
    }
    return false;
}

engine::ServeRequest CurrentServeRequest(const AppState& s) {
    engine::ServeRequest r;
    r.config = s.inference.config;
    r.config.model = s.model;
    r.system = CurrentSystem(s);
    r.calibration = s.calibration.get();
    return r;
}

void RunInference(AppState& s) {
    InferenceState& q = s.inference;
    q.ran_for = InputsKey(s);
    q.has_result = false;
    q.report.clear();
    q.error.clear();
    if (!q.has_config) {
        q.error = "no serving preset is loaded";
        return;
    }
    try {
        const engine::ServeRequest request = CurrentServeRequest(s);
        q.result = engine::RunServe(request);
        q.report = ServeReportText(request, q.result);
        q.has_result = true;
    } catch (const Error& e) {
        q.error = e.what();
    }
}

std::vector<double> SweepRates(double from, double to, int points) {
    if (!(from > 0) || !(to > from))
        throw Error("sweep",
                    "rates need 0 < from < to, got from " + std::to_string(from) + " to " + std::to_string(to));
    if (points < 2 || points > 64) throw Error("sweep.points", "must be in [2, 64], got " + std::to_string(points));
    std::vector<double> r(static_cast<size_t>(points));
    for (int i = 0; i < points; ++i) r[static_cast<size_t>(i)] = from + (to - from) * i / (points - 1);
    return r;
}

void CancelServeSweep(AppState& s) {
    auto& w = s.inference.sweep;
    w.next_shard = -1;
    w.snapshot.reset();
    w.parts.clear();
}

void StartServeSweep(AppState& s) {
    InferenceState& q = s.inference;
    auto& w = q.sweep;
    CancelServeSweep(s);
    w.points_done.clear();
    w.error.clear();
    w.report.clear();
    try {
        engine::ServeRequest request = CurrentServeRequest(s);
        const double rate = request.config.workload.rate;
        if (w.from <= 0) w.from = rate / 4;
        if (w.to <= 0) w.to = 2 * rate;
        request.sweep_rates = SweepRates(w.from, w.to, w.points);
        w.snapshot = std::make_unique<const engine::ServeSweepSnapshot>(engine::SnapshotServeSweep(request));
        w.next_shard = 0;
    } catch (const Error& e) {
        w.error = e.what();
    }
}

void StepServeSweep(AppState& s, double budget_seconds) {
    auto& w = s.inference.sweep;
    if (w.next_shard < 0 || !w.snapshot) return;
    const auto start = std::chrono::steady_clock::now();
    try {
        do {
            w.parts.push_back(engine::RunServeSweepShard(*w.snapshot, w.next_shard++, kServeSweepShards));
        } while (w.next_shard < kServeSweepShards &&
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < budget_seconds);
        if (w.next_shard < kServeSweepShards) return;
        w.points_done = engine::MergeServeSweep(std::move(w.parts));
        w.report = ServeSweepReportText(*w.snapshot, w.points_done);
    } catch (const Error& e) {
        w.error = e.what();
    }
    CancelServeSweep(s);
}

}  // namespace sc::app
