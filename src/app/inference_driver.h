// The page's serving state and its driver (no ImGui here; panel_inference.cpp draws it). The page serves the
// model of its Model panel on the cluster of its Training panel; a serving preset (presets/inference/*.json)
// supplies the pool, engine, number formats and workload, and picking one also picks its model and cluster, so
// the page's result equals `stagecraft serve <preset>` until the user edits something.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/serve.h"
#include "inference/serving_parse.h"

namespace sc::app {

struct AppState;
struct SystemPreset;

struct ServingPreset {
    std::string file;  // "llama3-8b-h100-poisson.json"
    ServingDescription description;
};

struct InferenceState {
    std::vector<ServingPreset> presets;
    int preset_index = -1;  // -1 once the description is edited
    int base_index = -1;    // the preset the description started from (kept through edits; a link names it)
    ServingConfig config;   // as edited; its model is replaced by the page's model when a run starts
    // The decode pool's own cluster: a system preset id of the page (its description's decode_pool.system), or ""
    // for the page's cluster beside the prefill pool.
    std::string decode_system;
    bool has_config = false;

    // One simulation ("Simulate"): results and the report `stagecraft serve` prints for the same request.
    bool has_result = false;
    std::string
        ran_for;  // InputsKey (app_state.h) of the state it ran on: the tab reruns when the model or cluster changed
    engine::ServeResult result;
    std::string report;
    std::string error;
    // The simulation under way: a slice per frame (StepServe), so a run of a million requests never stops the
    // page; null when none runs.
    std::unique_ptr<engine::ServeRun> running;

    // The rate sweep: shards over a snapshot taken at its start, a few per frame, as the layout search runs.
    struct {
        double from = 0, to = 0;  // requests/s; 0: a quarter to twice the workload's rate
        int points = 8;
        int next_shard = -1;  // -1: none running; 0: on the page's thread, point by point (next_point)
        size_t next_point = 0;
        std::unique_ptr<engine::ServeRun> point;  // the point under way on the page's thread, a slice per frame
        std::unique_ptr<const engine::ServeSweepSnapshot> snapshot;
        std::vector<std::vector<engine::ServeSweepPoint>> parts;
        std::vector<engine::ServeSweepPoint> points_done;  // merged, in rate order
        std::string error;
        std::string report;  // ServeSweepReportText of the finished sweep
    } sweep;
};

// Registers a serving preset; the first becomes current. Returns "" or the error naming the file and field.
std::string AddServingPreset(AppState& s, const std::string& file, const std::string& json_text);
// Makes the preset current: its description, and its model and cluster selected in the other panels.
bool SelectServingPreset(AppState& s, const std::string& file);
// Makes preset `index`'s description current without touching the model or cluster (a link sets those itself).
void SetServingDescription(AppState& s, int index);

// The page's cluster preset `decode_system` names (its id, the file name without ".json"); null when it is "" or the
// page has no such preset.
const SystemPreset* DecodeSystemPreset(const AppState& s);
// The request of the current state: the edited description with the page's model, cluster and calibration (and
// the decode pool's own cluster). Throws sc::Error("decode_pool.system") when the page has no such cluster.
engine::ServeRequest CurrentServeRequest(const AppState& s);
// Starts one simulation (StepServe runs it); errors are kept in inference.error, never thrown.
void RunInference(AppState& s);
// Runs the started simulation for about `budget_seconds`; when it ends, its result and report are the tab's.
void StepServe(AppState& s, double budget_seconds);

// The rates a sweep visits: `points` rates evenly spaced from `from` to `to` (both > 0, from < to, points >= 2).
std::vector<double> SweepRates(double from, double to, int points);
constexpr int kServeSweepShards = 8;
// Starts the rate sweep of the current description: in the page's worker pool when it has one (a "serve-sweep"
// job carrying the page's link and the rates), else in frame slices (StepServeSweep).
void StartServeSweep(AppState& s);
// The rates of a serve-sweep job's arguments {from, to, points} (what StartServeSweep puts in the job).
std::vector<double> ServeSweepJobRates(const std::vector<std::string>& args);
// A shard's points as text (worker -> page) and back: the rate and what the sweep's report and chart read of each
// point's result (rates, throughputs, SLO attainment, goodput, the TTFT/TPOT/E2E summaries), every double exact.
std::string EncodeServeSweepShard(const std::vector<engine::ServeSweepPoint>& points);
std::vector<engine::ServeSweepPoint> DecodeServeSweepShard(const std::string& text);
// A pool shard of the running rate sweep (what AddPoolShard calls for a serve-sweep job).
std::string AddServeSweepShard(AppState& s, const std::string& text);
// True while a rate sweep runs (frame slices or pool), and the shards back so far.
bool ServeSweepRunning(const AppState& s);
int ServeSweepShardsDone(const AppState& s);
// How far the running sweep is, 0..1: shards back from the pool, or points (and the current one's requests)
// done on the page's thread.
double ServeSweepProgress(const AppState& s);
// Runs shards until `budget_seconds` have passed (at least one) and merges after the last.
void StepServeSweep(AppState& s, double budget_seconds);
void CancelServeSweep(AppState& s);

}  // namespace sc::app
