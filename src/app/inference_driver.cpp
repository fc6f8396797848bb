// The page's serving driver: presets, one simulation, and the rate sweep in frame slices (inference_driver.h).
#include "app/inference_driver.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "app/app.h"
#include "app/app_state.h"
#include "config/error.h"
#include "config/numbers.h"
#include "link/serve_keys.h"
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
    if (!q.has_config) SetServingDescription(s, static_cast<int>(q.presets.size()) - 1);
    return "";
}

void SetServingDescription(AppState& s, int index) {
    InferenceState& q = s.inference;
    q.preset_index = q.base_index = index;
    q.config = q.presets[static_cast<size_t>(index)].description.config;
    q.decode_system = q.presets[static_cast<size_t>(index)].description.decode_system_id;
    q.has_config = true;
    q.has_result = false;
    q.ran_for.clear();  // the Serving tab simulates the new description when it next draws
    q.error.clear();
    CancelServeSweep(s);
    q.sweep.points_done.clear();
    q.sweep.from = q.sweep.to = 0;
}

bool SelectServingPreset(AppState& s, const std::string& file) {
    InferenceState& q = s.inference;
    for (size_t i = 0; i < q.presets.size(); ++i) {
        const ServingDescription& d = q.presets[i].description;
        if (q.presets[i].file != file && q.presets[i].file != file + ".json") continue;
        SetServingDescription(s, static_cast<int>(i));
        // Its model and cluster become the page's, as `stagecraft serve` reads them from the preset.
        if (!SelectPreset(s, d.model_id)) q.error = "model: the page has no preset \"" + d.model_id + "\"";
        else if (!SelectSystem(s, d.system_id)) q.error = "system: the page has no cluster \"" + d.system_id + "\"";
        return true;
    }
    return false;
}

const SystemPreset* DecodeSystemPreset(const AppState& s) {
    const std::string& id = s.inference.decode_system;
    if (id.empty()) return nullptr;
    for (const SystemPreset& p : s.systems)
        if (p.file == id || p.file == id + ".json") return &p;
    return nullptr;
}

engine::ServeRequest CurrentServeRequest(const AppState& s) {
    engine::ServeRequest r;
    r.config = s.inference.config;
    r.config.model = s.model;
    r.system = CurrentSystem(s);
    r.calibration = s.calibration.get();
    if (const std::string& id = s.inference.decode_system; !id.empty()) {
        const SystemPreset* p = DecodeSystemPreset(s);
        if (!p) throw Error("decode_pool.system", "the page has no cluster \"" + id + "\"");
        r.decode_system = &p->system;
    }
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
    q.running.reset();
    try {
        q.running = std::make_unique<engine::ServeRun>(CurrentServeRequest(s));
    } catch (const Error& e) {
        q.error = e.what();
    }
}

void StepServe(AppState& s, double budget_seconds) {
    InferenceState& q = s.inference;
    if (!q.running) return;
    if (q.ran_for != InputsKey(s)) {  // the model or cluster changed under it: the tab starts another
        q.running.reset();
        return;
    }
    const auto start = std::chrono::steady_clock::now();
    try {
        // Events in batches of 4,096 (a few ms at most) between looks at the clock.
        bool done = false;
        do {
            done = q.running->Step(4096);
        } while (!done &&
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < budget_seconds);
        if (!done) return;
        q.result = q.running->Finish();
        q.report = ServeReportText(CurrentServeRequest(s), q.result);  // as it started: the same cluster ids
        q.has_result = true;
    } catch (const Error& e) {
        q.error = e.what();
    }
    q.running.reset();
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
    w.next_point = 0;
    w.point.reset();
    w.snapshot.reset();
    w.parts.clear();
    s.pool.serve_sweep_id = 0;
    DropWaitingJobs(s, "serve-sweep");
}

bool ServeSweepRunning(const AppState& s) { return s.inference.sweep.snapshot != nullptr; }
int ServeSweepShardsDone(const AppState& s) { return static_cast<int>(s.inference.sweep.parts.size()); }

double ServeSweepProgress(const AppState& s) {
    const auto& w = s.inference.sweep;
    if (!w.snapshot) return 0;
    if (w.next_shard < 0) return static_cast<double>(w.parts.size()) / kServeSweepShards;
    const double point = w.point ? w.point->Progress() : 0;
    return (static_cast<double>(w.parts.size()) + point) / static_cast<double>(w.snapshot->rates.size());
}

std::vector<double> ServeSweepJobRates(const std::vector<std::string>& args) {
    if (args.size() != 3) throw Error("sweep", "a serve-sweep job carries from, to and points");
    return SweepRates(ParseNumberIn("sweep.from", args[0], 0, 1e9), ParseNumberIn("sweep.to", args[1], 0, 1e9),
                      static_cast<int>(ParseIntegerIn("sweep.points", args[2], 2, 64)));
}

namespace {

nlohmann::json SummaryJson(const LatencySummary& l) { return {l.mean, l.p50, l.p90, l.p99, l.min, l.max}; }
LatencySummary SummaryOf(const nlohmann::json& j) {
    return {j.at(0).get<double>(), j.at(1).get<double>(), j.at(2).get<double>(),
            j.at(3).get<double>(), j.at(4).get<double>(), j.at(5).get<double>()};
}

// A finished sweep: its points in rate order and their report.
void FinishServeSweep(AppState& s) {
    auto& w = s.inference.sweep;
    w.points_done = engine::MergeServeSweep(std::move(w.parts));
    w.report = ServeSweepReportText(*w.snapshot, w.points_done);
    CancelServeSweep(s);
}

}  // namespace

std::string EncodeServeSweepShard(const std::vector<engine::ServeSweepPoint>& points) {
    nlohmann::json out = nlohmann::json::array();
    for (const engine::ServeSweepPoint& p : points) {
        const ServingResult& r = p.run.result;
        // nlohmann writes doubles with max_digits10: they read back bit for bit.
        out.push_back({{"index", p.index},
                       {"rate", p.rate},
                       {"requests_per_s", r.requests_per_s},
                       {"output_tokens_per_s", r.output_tokens_per_s},
                       {"goodput_requests_per_s", r.goodput_requests_per_s},
                       {"slo_attainment", r.slo_attainment},
                       {"ttft", SummaryJson(r.ttft)},
                       {"tpot", SummaryJson(r.tpot)},
                       {"e2e", SummaryJson(r.e2e)}});
    }
    return out.dump();
}

std::vector<engine::ServeSweepPoint> DecodeServeSweepShard(const std::string& text) {
    std::vector<engine::ServeSweepPoint> points;
    try {
        for (const nlohmann::json& j : nlohmann::json::parse(text)) {
            engine::ServeSweepPoint p;
            p.index = j.at("index").get<size_t>();
            p.rate = j.at("rate").get<double>();
            ServingResult& r = p.run.result;
            r.requests_per_s = j.at("requests_per_s").get<double>();
            r.output_tokens_per_s = j.at("output_tokens_per_s").get<double>();
            r.goodput_requests_per_s = j.at("goodput_requests_per_s").get<double>();
            r.slo_attainment = j.at("slo_attainment").get<double>();
            r.ttft = SummaryOf(j.at("ttft"));
            r.tpot = SummaryOf(j.at("tpot"));
            r.e2e = SummaryOf(j.at("e2e"));
            points.push_back(std::move(p));
        }
    } catch (const nlohmann::json::exception& e) {
        throw Error("serve-sweep shard", std::string("malformed: ") + e.what());
    }
    return points;
}

std::string AddServeSweepShard(AppState& s, const std::string& text) {
    auto& w = s.inference.sweep;
    try {
        w.parts.push_back(DecodeServeSweepShard(text));
    } catch (const Error& e) {
        CancelServeSweep(s);
        w.error = e.what();
        return e.what();
    }
    if (static_cast<int>(w.parts.size()) == kServeSweepShards) FinishServeSweep(s);
    return "";
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
    } catch (const Error& e) {
        w.error = e.what();
        return;
    }
    const std::string link = PoolLink(s);
    if (link.empty()) {
        w.next_shard = 0;  // frame slices
        return;
    }
    // The workers rebuild the same request from the link (its serve.* keys carry the tab's description).
    s.pool.serve_sweep_id = RaisePoolJob(
        s,
        {0, "serve-sweep", link, {LinkNumber(w.from), LinkNumber(w.to), std::to_string(w.points)}, kServeSweepShards});
}

void StepServeSweep(AppState& s, double budget_seconds) {
    auto& w = s.inference.sweep;
    if (w.next_shard < 0 || !w.snapshot) return;
    const auto start = std::chrono::steady_clock::now();
    // Point by point, each simulation in slices of events (engine::ServeRun), so that no frame runs a whole one:
    // a point of a million requests took the page's thread about 10 s.
    const auto spent = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    try {
        const size_t points = w.snapshot->rates.size();
        do {
            if (!w.point) w.point = std::make_unique<engine::ServeRun>(*w.snapshot, w.next_point);
            if (!w.point->Step(4096)) continue;
            w.parts.push_back({{w.next_point, w.snapshot->rates[w.next_point], w.point->Finish()}});
            w.point.reset();
            ++w.next_point;
        } while (w.next_point < points && spent() < budget_seconds);
        if (w.next_point < points) return;
        FinishServeSweep(s);
        return;
    } catch (const Error& e) {
        w.error = e.what();
    }
    CancelServeSweep(s);
}

}  // namespace sc::app
