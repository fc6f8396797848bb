// The page's driver of the layout search (no ImGui here, so the native tests run it): the engine's shards over
// a snapshot, run by the pool of web workers when the page has one (pool_jobs.h), else in frame slices. Either
// way the shards are merged by engine::MergeSearch, as the CLI merges its threads' shards.
#include <chrono>
#include <nlohmann/json.hpp>

#include "app/app.h"
#include "app/app_state.h"
#include "app/panels.h"
#include "app/pool_jobs.h"
#include "config/error.h"
#include "parallel/job.h"
#include "report/engine_report.h"
#include "training/estimate.h"

namespace sc::app {

namespace {

void FinishSearch(AppState& s) {
    auto& q = s.search;
    q.result = engine::MergeSearch(*q.snapshot, std::move(q.parts));
    CancelSearch(s);
    q.has_result = true;
}

}  // namespace

void CancelSearch(AppState& s) {
    s.search.next_shard = -1;
    s.search.snapshot.reset();
    s.search.parts.clear();
    s.pool.search_id = 0;
    DropWaitingJobs(s, "search");
}

void StartSearch(AppState& s) {
    auto& q = s.search;
    CancelSearch(s);
    q.error.clear();
    q.has_result = false;
    q.seconds = 0;
    try {
        q.snapshot = std::make_unique<const engine::SearchSnapshot>(engine::SnapshotSearch(CurrentRequest(s)));
    } catch (const Error& e) {
        q.error = e.what();
        return;
    }
    q.next_shard = 0;
    s.pool.search_started = Now();
    const std::string link = PoolLink(s);
    if (link.empty()) return;  // frame slices
    s.pool.search_id = RaisePoolJob(s, {0, "search", link, {}, kSearchShards});
    q.seconds = -Now();  // wall time, completed when the last shard is merged
}

void StepSearch(AppState& s, double budget_seconds) {
    auto& q = s.search;
    if (q.next_shard < 0 || !q.snapshot || s.pool.search_id != 0) return;
    const auto t0 = std::chrono::steady_clock::now();
    double spent = 0;
    try {
        do {
            q.parts.push_back(engine::RunSearchShard(*q.snapshot, q.next_shard++, kSearchShards));
            spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        } while (q.next_shard < kSearchShards && spent < budget_seconds);
    } catch (const Error& e) {
        CancelSearch(s);
        q.error = e.what();
        return;
    }
    q.seconds += spent;
    if (q.next_shard == kSearchShards) FinishSearch(s);
}

double SearchEta(const AppState& s) {
    const int done = s.search.next_shard;
    if (done <= 0) return -1;
    return (Now() - s.pool.search_started) / done * (kSearchShards - done);
}

std::string SearchResultText(const AppState& s) {
    if (!s.search.has_result) return "";
    return SearchReportText(engine::SnapshotSearch(CurrentRequest(s)), s.search.result);
}

// ---- Search shards as text
std::string EncodeSearchShard(const SearchResult& r) {
    nlohmann::json top = nlohmann::json::array();
    for (const RankedLayout& l : r.top) top.push_back({l.index, ParallelSpecString(l.par)});
    const SearchStats& st = r.stats;
    return nlohmann::json{{"stats", {st.candidates, st.valid, st.fitting, st.estimated}}, {"top", top}}.dump();
}

SearchResult DecodeSearchShard(const engine::SearchSnapshot& snap, const std::string& text) {
    SearchResult r;
    try {
        const nlohmann::json j = nlohmann::json::parse(text);
        const auto& st = j.at("stats");
        r.stats = {st.at(0).get<uint64_t>(), st.at(1).get<uint64_t>(), st.at(2).get<uint64_t>(),
                   st.at(3).get<uint64_t>()};
        for (const auto& t : j.at("top")) {
            RankedLayout l;
            l.index = t.at(0).get<uint64_t>();
            l.par = ParseParallelSpec(t.at(1).get<std::string>());
            // The estimate the worker computed, recomputed from the same snapshot: EstimateTraining of the layout's
            // job is what the search ranks by (tests/native/test_search.cpp checks the search against it).
            l.estimate = EstimateTraining(MakeJob(snap.model, l.par, snap.options.kernels), snap.system,
                                          snap.calibration.get(), snap.options);
            r.top.push_back(std::move(l));
        }
    } catch (const nlohmann::json::exception& e) {
        throw Error("search shard", std::string("malformed result from a worker: ") + e.what());
    }
    return r;
}

// ---- The pool's jobs (the sweep's side is in sweep_driver.cpp)
void SetPoolWorkers(AppState& s, int workers) {
    s.pool.workers = workers < 0 ? 0 : workers;
    // The summary's job is raised by an edit, not a button: without workers it goes on in frame slices (the other
    // jobs are restarted on the page's thread by the JS that found no worker could start).
    if (s.pool.workers == 0) CountSummaryOnPage(s);
}

std::string PoolLink(const AppState& s) {
    if (s.pool.workers <= 0) return "";
    try {
        return LinkState(s);
    } catch (const Error&) {
        return "";  // not expressible as a link (a custom model)
    }
}

PoolJob TakePoolJob(AppState& s) {
    if (s.pool.waiting.empty()) return {};
    PoolJob j = std::move(s.pool.waiting.front());
    s.pool.waiting.erase(s.pool.waiting.begin());
    return j;
}

int RaisePoolJob(AppState& s, PoolJob job) {
    job.id = ++s.pool.last_id;
    s.pool.waiting.push_back(std::move(job));
    return s.pool.waiting.back().id;
}

void DropWaitingJobs(AppState& s, const std::string& kind) {
    std::erase_if(s.pool.waiting, [&](const PoolJob& j) { return j.kind == kind; });
}

bool PoolJobWanted(const AppState& s, int id) {
    const PoolState& p = s.pool;
    return id != 0 && (id == p.search_id || id == p.sweep_id || id == p.serve_sweep_id || id == p.summary_id);
}

void FailPoolJob(AppState& s, int id, const std::string& message) {
    if (id == 0) return;
    if (id == s.pool.search_id) {
        CancelSearch(s);
        s.search.error = message;
    } else if (id == s.pool.sweep_id) {
        CancelSweep(s);
        s.sweep.error = message;
    } else if (id == s.pool.serve_sweep_id) {
        CancelServeSweep(s);
        s.inference.sweep.error = message;
    } else if (id == s.pool.summary_id) {
        FailSummary(s, message);
    }
}

std::string AddPoolShard(AppState& s, int id, const std::string& text) {
    if (!PoolJobWanted(s, id)) return "";
    if (id == s.pool.sweep_id) return AddSweepShard(s, text);
    if (id == s.pool.serve_sweep_id) return AddServeSweepShard(s, text);
    if (id == s.pool.summary_id) return AddSummaryShard(s, text);
    auto& q = s.search;
    try {
        q.parts.push_back(DecodeSearchShard(*q.snapshot, text));
    } catch (const Error& e) {
        FailPoolJob(s, id, e.what());
        return e.what();
    }
    q.next_shard = static_cast<int>(q.parts.size());
    if (q.next_shard == kSearchShards) {
        q.seconds += Now();
        FinishSearch(s);
    }
    return "";
}

}  // namespace sc::app
