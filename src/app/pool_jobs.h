// The page's long computations (the "Best layout" search, the co-design sweep) as jobs for a pool of web
// workers: the page's state raises a job (the request as its link text, plus what the job asks), the page's
// JS hands its shards to the workers (web/pool.js, each worker one wasm instance: src/wasm/worker_bindings.cpp),
// and every shard's result comes back as text that the state merges through the engine (MergeSearch, the
// sweep's SweepKey order), so the pool's result equals one unsharded run.
//
// Why a link: it is the one serialisation of the page's whole configuration that already exists and is tested
// (src/link/config_link.h); a worker holding the same presets rebuilds the same engine request from it.
// A configuration that cannot be a link (a model loaded from outside the presets) runs in frame slices instead.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/search.h"
#include "engine/sweep.h"
#include "training/sweep.h"

namespace sc::app {

struct AppState;

// ---- Shard results as text (worker -> page). Both sides call these, so the format has one definition.
// A search shard: its stats and its top layouts by enumeration index and CLI --parallel form. The page rebuilds
// each layout's estimate from the search's snapshot (the same pure function on the same inputs), then merges.
std::string EncodeSearchShard(const SearchResult& r);
SearchResult DecodeSearchShard(const engine::SearchSnapshot& snap, const std::string& text);

// One row of the sweep as the page keeps it: what the chart and the hover draw and what the CSV prints
// (SweepRowText reads exactly these fields of a row: RowOf gives them back). Fixed-size but for the layout's
// rank order, so a shard of 10^5 cells moves as bytes and the CSV text is made only on "Export CSV".
struct SweepCell {
    engine::SweepKey key;
    SweepPoint point;    // as evaluated (domain and gpus the ones used)
    bool found = false;  // some layout fits
    double step_seconds = 0, mfu = 0, tokens_per_second = 0, memory_peak = 0;  // of the best layout, when found
    double energy_joules = 0;                                                  // its energy per step
    StepBreakdown step;                                                        // its breakdown
    ParallelConfig best;                                                       // the best layout, when found
    SearchStats stats;                                                         // layouts evaluated at this point
};
SweepCell CellOf(const SweepRow& row);
// The row again, as far as SweepRowText reads it (`model`: the model's name).
SweepRow RowOf(const SweepCell& c, const std::string& model);
// Worker -> page (sweep_shard_bytes.cpp): bytes, not text.
std::string EncodeSweepShard(const std::vector<SweepCell>& cells);
std::vector<SweepCell> DecodeSweepShard(std::string_view bytes);
// The same, appended to `out` (the page's cells); a damaged shard leaves `out` as it was and throws.
void AppendSweepShard(std::string_view bytes, std::vector<SweepCell>& out);

// ---- The job the page raises (the JS side takes it once and runs it; see web/main.js).
struct PoolJob {
    int id = 0;                     // 0: none waiting
    std::string kind;               // "search", "sweep", "serve-sweep" or "summary"
    std::string link;               // the configuration (LinkState)
    std::vector<std::string> axes;  // sweep: ParseSweepAxis arguments ("flops=1,2,4"); serve-sweep: from, to, points
    int shards = 0;                 // run shards 0 .. shards-1 of this count
    bool fixed_layout = false;      // sweep: the link's layout at every point (engine::SweepAsk::fixed_layout)
};

// What the state keeps about the pool (AppState::pool).
struct PoolState {
    int workers = 0;  // set by the page's JS; 0: no pool, jobs run in frame slices
    int last_id = 0;  // ids of raised jobs count up from 1
    // Raised, not yet taken by the JS, oldest first: an edit raises the summary's job in the frame a button may
    // raise another (one slot lost the first, whose result then never came).
    std::vector<PoolJob> waiting;
    int search_id = 0;          // the pool job running the search (0: none, or it runs in frame slices)
    int sweep_id = 0;           // likewise for the sweep
    int serve_sweep_id = 0;     // likewise for the Serving tab's rate sweep (inference_driver.cpp)
    int summary_id = 0;         // likewise for a large split's trace summary (summary_driver.cpp)
    double search_started = 0;  // steady-clock seconds when the search started (its ETA)
};

// Where the page's own thread is in a sweep it runs in frame slices (no pool): point by point in order, each
// model's layout search in kSweepSearchPieces pieces (a point's whole search takes longer than a frame).
struct SweepSlices {
    std::shared_ptr<const SweepContext> context;  // the snapshot's
    size_t next_point = 0;                        // the point being evaluated, or the next one
    std::optional<SweepPointInputs> point;        // made ready (null: next_point not started)
    int model = 0, piece = 0;                     // at that point: the model and the piece of its search next
    std::vector<SearchResult> parts;              // that model's pieces so far
};
inline constexpr int kSweepSearchPieces = 32;

// The Sweeps view (panel_sweep.cpp) and its sweep (sweep_driver.cpp): one or two axes of `stagecraft sweep`
// over the page's model and cluster, the GPU count and batch of the "Best layout" search.
struct SweepState {
    int axis[2] = {0, -1};  // index into kSweepAxes; -1: no second axis
    std::string values[2] = {"0.5,1,2,4", "1,2"};
    std::vector<std::string> args;  // the axis arguments of the running or last sweep
    int ran[2] = {-1, -1};          // and their axes (the chart's, while the pickers may change)
    std::unique_ptr<const engine::SweepSnapshot> snapshot;  // of the running sweep (null: none runs)
    int shards = 0, done = 0;                               // shards of the running sweep and how many came back
    int next_shard = -1;                  // 0: runs in frame slices (then shards counts points), -1: not that way
    std::unique_ptr<SweepSlices> slices;  // frame slices: where they are
    std::vector<SweepCell> cells;         // every row so far, in the order they came
    std::vector<uint32_t> key_order;      // once finished: indices of `cells` in SweepKey order (the CLI's rows)
    std::vector<std::string> models;      // the sweep's model names, by model index (the CSV's first column)
    bool has_result = false;
    std::string error;
    double started = 0;          // steady-clock seconds at the start (for the ETA)
    double seconds = 0;          // wall time of the last finished sweep
    SweepRequest request;        // gpus, batch of the last sweep (for the CSV rows)
    SweepAxes axes;              // of the last sweep: where each point sits on the chart
    int metric = 0;              // what the chart plots: kSweepMetrics (MFU, step time, tokens per joule)
    bool fixed_layout = false;   // the Parallelism panel's layout at every point instead of the best one there
    bool csv_requested = false;  // "Export CSV" pressed; the page's JS takes it and downloads
};
// The finished sweep's i-th row in SweepKey order, the CLI's order (the CSV's).
inline const SweepCell& SweepCellInKeyOrder(const SweepState& w, size_t i) { return w.cells[w.key_order.at(i)]; }
// In SweepPoints' nesting order (flops outermost, gpus innermost): panel_sweep.cpp's Digit relies on it.
// What the Sweeps view charts; tokens per joule is a step's tokens over its energy (every GPU at its power limit,
// else its board power: report/training_report.h).
inline constexpr const char* kSweepMetrics[] = {"MFU", "step time", "tokens/J"};
enum SweepMetric { kMetricMfu = 0, kMetricStep = 1, kMetricTokensPerJoule = 2 };
// The cell's value of `metric` (tokens/J 0 when the part gives no power).
double SweepMetricValue(int metric, const SweepCell& c);

inline constexpr const char* kSweepAxes[] = {"flops",    "hbm_bw",  "hbm_capacity", "domain", "net_bw",
                                             "topology", "overlap", "inr",          "gpus",   "power"};

// The pool's size, set by the page's JS (0: no workers; jobs run in frame slices).
void SetPoolWorkers(AppState& s, int workers);
// The link a pool job carries: the state's link when the page has workers and the state can be a link, else ""
// (the job runs in frame slices: no pool, or a model loaded from outside the presets).
std::string PoolLink(const AppState& s);
// The oldest job raised and not yet taken (id 0 when none); the state now waits for its shards.
PoolJob TakePoolJob(AppState& s);
// Raises a job of `kind` for the JS to take; returns its id (the caller keeps it as its job's).
int RaisePoolJob(AppState& s, PoolJob job);
// Drops the raised, untaken jobs of `kind` (their job was cancelled or replaced).
void DropWaitingJobs(AppState& s, const std::string& kind);
// Whether job `id` still wants shards (false once cancelled, replaced or finished): the JS drops the rest.
bool PoolJobWanted(const AppState& s, int id);
// One shard's result text of job `id` ("" on success, else the error, which also ends the job). Results of a
// job no longer wanted are ignored. The last shard merges.
std::string AddPoolShard(AppState& s, int id, const std::string& text);
// A worker's error for job `id`: the job ends and shows it.
void FailPoolJob(AppState& s, int id, const std::string& message);

// The frame's share of a summary, search or sweep that runs on the page's thread (no pool, or a configuration that
// cannot be a link): called once per frame by DrawUI, whether or not their panels are open.
constexpr double kJobFrameBudget = 0.030;  // seconds per frame: the page stays responsive
void StepJobs(AppState& s, double budget_seconds);

// ---- The co-design sweep of the Sweeps view (sweep_driver.cpp)
// Pool tasks per sweep (SweepShardCount). A point of a searching sweep is a layout search, milliseconds or more: a
// task a point, up to kMaxSweepShards (fine-grained progress, bounded messages). A point of a fixed-layout sweep is
// one estimate, about 5 us in wasm, less than a task's two messages and its merge call cost the page's thread and
// the worker; its tasks hold kFixedPointsPerShard points (about 10 ms of a worker), and a sweep keeps at least
// kMinSweepShards of them (progress, and work for every worker of a pool of 8 until near the end).
constexpr int kMaxSweepShards = 256;
constexpr int kMinSweepShards = 16;
constexpr size_t kFixedPointsPerShard = 2048;
int SweepShardCount(size_t points, bool fixed_layout);
constexpr size_t kMaxSweepPoints = 100000;           // the CLI's limit of rows per run
void StartSweep(AppState& s);                        // from s.sweep's axes; a running one is dropped
void StepSweep(AppState& s, double budget_seconds);  // frame slices when no pool runs it
void CancelSweep(AppState& s);
// The finished sweep as `stagecraft sweep` CSV ("" when none).
std::string SweepCsv(const AppState& s);
// A pool shard of the running sweep (what AddPoolShard calls for a sweep job).
std::string AddSweepShard(AppState& s, const std::string& text);
// Sets the view's axes from arguments of `stagecraft sweep --axis` ("flops=1,2"; axis2 "" for none), as the
// browser tests do. Throws sc::Error naming an unknown axis.
void SetSweepAxes(AppState& s, const std::string& axis1, const std::string& axis2);
// Seconds left of the running search at its pace so far (< 0 when no shard is done yet).
double SearchEta(const AppState& s);
// The last search's result as `stagecraft search` prints it ("" when none).
std::string SearchResultText(const AppState& s);
// The sweep axis arguments of the view ("flops=1,2,4", ...), one per chosen axis.
std::vector<std::string> SweepAxisArgs(const AppState& s);

}  // namespace sc::app
