// A large split's trace summary, counted after the edit that asked for it (summary_driver.cpp). An edit counts
// kSummaryNodesInEdit nodes itself, which finishes the summary of every split of the presets' usual sizes; a
// larger one (up to about 2 x 10^8 nodes, GPT-3 175B at pp=96 and 65,536 microbatches) is counted by the worker
// pool when the page has one (a "summary" job: stage i goes to shard i % shards), else a slice a frame, so the
// page keeps drawing. Meanwhile evaluation.summary_pending is set and the report says so; then the report shows
// what `stagecraft summary` prints, bit for bit (the classes are summed in stage order either way).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallel/job.h"
#include "trace/summary.h"

namespace sc::app {

struct AppState;

// Nodes an edit counts itself (about 10 ms natively, 35 ms in wasm).
inline constexpr uint64_t kSummaryNodesInEdit = uint64_t{1} << 20;
// Shards of a pool job per worker: progress in steps, stages shared out evenly enough.
inline constexpr int kSummaryShardsPerWorker = 8;

struct SummaryCount {
    std::unique_ptr<JobSummarizer> slices;      // frame slices: counts *evaluation.job (null otherwise)
    int shards = 0;                             // the pool's job: its shards (0: none runs)
    int done = 0;                               // its shards back
    std::vector<std::vector<RankClass>> parts;  // its shards' classes as they came back
};

// After Recompute's estimate, when evaluation.summary_pending: counts the first nodes, then hands the rest to the
// pool or to frame slices.
void StartSummary(AppState& s);
// Frame slices: counts for about `budget_seconds` (StepJobs calls it every frame); nothing when none runs.
void StepSummary(AppState& s, double budget_seconds);
// Whether some of the summary is still being counted (by the pool or in slices).
bool SummaryRunning(const AppState& s);
// The share counted so far, 0 to 1 (pool: shards back; slices: the schedule's steps).
double SummaryProgress(const AppState& s);
// The pool's job goes on in frame slices instead (no worker could start: SetPoolWorkers(s, 0)).
void CountSummaryOnPage(AppState& s);
// Ends the count with `message` as the summary's error.
void FailSummary(AppState& s, const std::string& message);
// Drops the count under way (the split it counts is being replaced).
void CancelSummary(AppState& s);

// Worker -> page, as text (a few hundred classes at most): every field, doubles exactly (JSON's 17 digits).
std::string EncodeSummaryShard(const std::vector<RankClass>& classes);
std::vector<RankClass> DecodeSummaryShard(const std::string& text);
// Page side: one shard's text of the running job ("" or the error, which ends the count).
std::string AddSummaryShard(AppState& s, const std::string& text);

}  // namespace sc::app
