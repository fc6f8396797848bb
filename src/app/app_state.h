// Everything the page shows, in one place (Tracy's rule: data here, views in panel_*.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "app/inference_driver.h"
#include "app/pool_jobs.h"
#include "app/summary_driver.h"
#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "engine/estimate.h"
#include "engine/request.h"
#include "engine/search.h"
#include "graph/model_stats.h"
#include "parallel/job.h"
#include "trace/summary.h"
#include "training/estimate.h"
#include "training/search.h"

namespace sc::app {

struct Preset {
    std::string file;  // "llama3-8b.json"
    std::string json;
    std::string name;    // the preset's "name"
    ModelConfig config;  // as parsed: a link names the fields edited since (app_link.cpp)
};

struct SystemPreset {
    std::string file;
    System system;                            // levels as edited in the Training panel
    std::vector<NetworkLevel> preset_levels;  // as loaded: a link names the edits, and defaults restore these
};

// The "Download traces" flow: the button raises `requested`; the page's JS takes the request, streams
// every rank into the folder the user picked, reports progress, and polls `cancel`.
struct DownloadState {
    bool requested = false;
    bool running = false;
    bool cancel = false;
    int done = 0, total = 0;
    double bytes = 0;
    std::string message;    // last outcome or error ("" while idle)
    bool supported = true;  // the page can save (a folder through File System Access, else a zip; set by JS)
    double started = 0;     // Now() when the running download reported rank 0, for its ETA
    // "Perfetto JSON": one rank's timeline as Chrome trace events, saved by the page's JS.
    int timeline_rank = 0;
    bool timeline_requested = false;
    // The pipeline schedule's "Perfetto JSON" (the estimate's PipelineTimeline), saved by the page's JS.
    bool pipeline_requested = false;
};

// The open views, which a link carries: the Training panel's tab and the Sweeps window.
enum class View { estimate, search, serving };

struct AppState {
    std::vector<Preset> presets;
    int preset_index = -1;

    ModelConfig model;            // as edited in the UI
    bool derive_head_dim = true;  // head_dim follows hidden/heads (false when the preset sets it otherwise)
    bool has_model = false;
    ModelStats stats;   // for `model`, valid when error is empty
    std::string error;  // the one clear message for the model, "" when valid

    // Parallel split and its trace summary.
    ParallelConfig parallel;
    // The last Recompute's results, the report's source: the job (absent when the split is invalid), its estimate
    // and trace summary. The fields below repeat what the panels read.
    engine::Evaluation evaluation;
    // A summary of more than kSummaryNodesInEdit nodes is counted after the edit, by the worker pool or a slice a
    // frame (summary_driver.h); meanwhile evaluation.summary_pending is set and the report says so.
    SummaryCount summarizing;
    // False in a web worker's state (worker_bindings.cpp): it builds the job for its summary shards, and a summary
    // of its own would only be counted (kSummaryNodesInEdit nodes, some 35 ms in wasm) and dropped.
    bool counts_summary = true;
    std::string parallel_error;

    // Cluster and the training estimate.
    std::vector<SystemPreset> systems;
    int system_index = -1;
    std::unique_ptr<CalibrationTable> calibration;
    int calibration_generation = 0;  // counts SetCalibration calls (a new table may reuse the old one's address)
    TrainingOptions options;
    TrainingEstimate estimate;
    bool has_estimate = false;
    std::string training_error;
    std::string summary_error;  // the split is valid but its traces are past the node limit (trace/stage_program.h)

    // "Best layout": the search over every valid split for a GPU count and batch (search_driver.cpp).
    // It runs in shards, a few per frame within a time budget, so the page keeps drawing, shows progress and
    // can cancel; the merged result equals one unsharded search. Every shard reads `snapshot`, the model,
    // cluster, calibration and options copied when the search started, never the live ones: editing the page
    // mid-search cannot mix shards of two models.
    struct {
        int gpus = 0;         // 0: the current split's GPU count
        bool uneven = false;  // also pipelines the layers do not divide (SearchSpace::uneven)
        int next_shard = -1;  // the shard the next frame runs; -1 when no search is running
        std::unique_ptr<const engine::SearchSnapshot> snapshot;  // of the running search; null when none runs
        std::vector<SearchResult> parts;
        bool has_result = false;
        SearchResult result;
        std::string error;
        double seconds = 0;  // compute time of the last search, summed over its shards
    } search;

    DownloadState download;
    PoolState pool;       // the web-worker pool that runs the search and the sweep (pool_jobs.h)
    size_t job_turn = 0;  // which page-thread job StepJobs runs first this frame (they take turns)
    SweepState sweep;     // the Sweeps view

    // Serving ("Serving" tab of the cluster window): inference_driver.h.
    InferenceState inference;

    // The configuration as a link (app_link.cpp; the page keeps it in the URL hash).
    std::string link_error;            // why the link the page opened with was refused; cleared by the next edit
    bool copy_link_requested = false;  // "Copy link" was pressed; the page's JS takes it (it knows the URL)
    std::string link_note;             // the outcome of the last copy, shown beside the button

    float ui_scale = 1.0f;       // text size of the whole page (the Model panel's "UI scale"; applied by DrawUI)
    View view = View::estimate;  // the Training panel's tab, as last drawn
    bool sweeps_open = false;    // the Sweeps window expanded, as last drawn
    bool apply_views = false;    // a link set the two above: the panels open them on the next frame

    std::string report_json;  // the same results as JSON (PageReportJson), for "Copy JSON"
    std::string report;       // the DOM mirror's text: what `stagecraft estimate` and `summary` print

    // The inputs the results above were computed from (InputsKey at the last Recompute): Refresh, every frame,
    // recomputes when the live inputs differ, so an edit shows its result whether or not it called Recompute.
    std::string computed_inputs;
};

// The engine request of the page's current configuration (borrows the state's cluster and calibration).
engine::Request CurrentRequest(const AppState& s);

// Recomputes stats, job, summary, estimate and report from the edited inputs (engine::Evaluate and
// PageReportText, as the CLI's estimate and summary do); errors are stored, never thrown. A summary past
// kSummaryNodesInEdit nodes is counted after the edit (summary_driver.h).
void Recompute(AppState& s);
// The report text and JSON of `evaluation` (Recompute, and a summary counted after the edit once it is done).
void UpdateReport(AppState& s);
// Everything the results depend on (model, head_dim rule, split, cluster and its levels, calibration, options),
// as text: two states with the same key have the same results.
std::string InputsKey(const AppState& s);
// Recomputes when InputsKey differs from the key of the results shown; DrawUI calls it every frame, before and
// after the panels, so the request is derived from the state rather than from every edit remembering to ask.
void Refresh(AppState& s);

// The "Best layout" search, driven a slice at a time (search_driver.cpp; panel_search.cpp draws it).
constexpr int kSearchShards = 64;
// Snapshots the current request (model, cluster, calibration, options; the GPU count of the tab, else the
// split's; the split's batch; the 10 best) and makes shard 0 the next to run. A search already running is dropped.
void StartSearch(AppState& s);
// Runs shards until `budget_seconds` have passed (at least one), merging when the last is done; an error
// ends the search and is kept in search.error. Does nothing when no search runs.
void StepSearch(AppState& s, double budget_seconds);
void CancelSearch(AppState& s);

}  // namespace sc::app
