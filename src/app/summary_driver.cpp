// A large split's trace summary after the edit: in the worker pool or a slice a frame (summary_driver.h).
#include "app/summary_driver.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "app/app_state.h"
#include "app/pool_jobs.h"
#include "config/error.h"

namespace sc::app {

namespace {

// The count is over: the summary (or its error) goes into the evaluation, for the report (UpdateReport, which
// the caller runs: Recompute runs it once after the edit's count).
void Finish(AppState& s, std::optional<TraceSummary> summary, const std::string& error) {
    CancelSummary(s);
    s.evaluation.summary = std::move(summary);
    s.evaluation.summary_error = error;
    s.evaluation.summary_pending = false;
}

// Counts `nodes` more in frame slices (at least; whole pipeline steps); false while some are left.
bool CountSlice(AppState& s, uint64_t nodes) {
    try {
        if (!s.summarizing.slices->Advance(nodes)) return false;
        Finish(s, s.summarizing.slices->Take(), "");
    } catch (const Error& e) {
        Finish(s, std::nullopt, e.what());
    }
    return true;
}

}  // namespace

bool SummaryRunning(const AppState& s) { return s.summarizing.slices || s.pool.summary_id != 0; }

double SummaryProgress(const AppState& s) {
    const SummaryCount& c = s.summarizing;
    if (c.slices) return c.slices->Progress();
    return c.shards > 0 ? static_cast<double>(c.done) / c.shards : 0;
}

void CancelSummary(AppState& s) {
    s.summarizing = {};
    s.pool.summary_id = 0;
    DropWaitingJobs(s, "summary");
}

void StartSummary(AppState& s) {
    CancelSummary(s);
    if (!s.evaluation.summary_pending || !s.counts_summary) return;
    s.summarizing.slices = std::make_unique<JobSummarizer>(*s.evaluation.job);
    if (CountSlice(s, kSummaryNodesInEdit)) return;
    const std::string link = PoolLink(s);
    if (link.empty()) return;  // frame slices from here
    // The pool counts whole stages again: what the edit counted is a few ms of the seconds left.
    s.summarizing.slices.reset();
    const int pp = s.evaluation.job->par.pp;
    s.summarizing.shards = std::min(pp, kSummaryShardsPerWorker * s.pool.workers);
    s.pool.summary_id = RaisePoolJob(s, {0, "summary", link, {}, s.summarizing.shards});
}

void CountSummaryOnPage(AppState& s) {
    if (s.pool.summary_id == 0) return;
    CancelSummary(s);
    s.summarizing.slices = std::make_unique<JobSummarizer>(*s.evaluation.job);
}

void FailSummary(AppState& s, const std::string& message) {
    if (!SummaryRunning(s)) return;
    Finish(s, std::nullopt, message);
    UpdateReport(s);
}

void StepSummary(AppState& s, double budget_seconds) {
    if (!s.summarizing.slices) return;
    const auto start = std::chrono::steady_clock::now();
    // 2^16 nodes (about 1 ms natively, 6 ms at most in wasm) between looks at the clock.
    while (!CountSlice(s, uint64_t{1} << 16))
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= budget_seconds) return;
    UpdateReport(s);
}

std::string EncodeSummaryShard(const std::vector<RankClass>& classes) {
    nlohmann::json all = nlohmann::json::array();
    for (const RankClass& c : classes) {
        nlohmann::json colls = nlohmann::json::array();
        for (const CollectiveTotal& t : c.collectives)
            colls.push_back({static_cast<int>(t.type), static_cast<int>(t.group), t.group_size, t.count, t.bytes});
        const StageMemory& m = c.memory;
        all.push_back(
            {{"stage", c.stage},
             {"ranks", c.ranks},
             {"examples", c.example_ranks},
             {"nodes", c.nodes},
             {"total_nodes", c.total_nodes},
             {"flops", {c.flops, c.matmul_flops, c.attention_flops, c.recompute_flops}},
             {"compute_bytes", c.compute_bytes},
             {"collectives", colls},
             {"p2p", {c.sends, c.recvs, c.send_bytes, c.recv_bytes}},
             {"host", {c.host_copies, c.host_copy_bytes}},
             {"memory",
              {m.params, m.weights, m.gradients, m.optimizer, m.activations, m.peak_inflight, m.host_activations}}});
    }
    return all.dump();
}

std::vector<RankClass> DecodeSummaryShard(const std::string& text) {
    std::vector<RankClass> out;
    try {
        for (const nlohmann::json& j : nlohmann::json::parse(text)) {
            RankClass& c = out.emplace_back();
            c.stage = j.at("stage").get<int>();
            c.ranks = j.at("ranks").get<int>();
            c.example_ranks = j.at("examples").get<std::vector<int>>();
            c.nodes = j.at("nodes").get<std::array<uint64_t, 8>>();
            c.total_nodes = j.at("total_nodes").get<uint64_t>();
            const auto& f = j.at("flops");
            c.flops = f.at(0), c.matmul_flops = f.at(1), c.attention_flops = f.at(2), c.recompute_flops = f.at(3);
            c.compute_bytes = j.at("compute_bytes").get<double>();
            for (const nlohmann::json& t : j.at("collectives")) {
                const int type = t.at(0).get<int>(), group = t.at(1).get<int>();
                if (type < 0 || type > static_cast<int>(CollectiveType::barrier) || group < 0 ||
                    group >= static_cast<int>(GroupKind::count))
                    throw Error("summary shard", "malformed result from a worker: collective " + t.dump());
                c.collectives.push_back({static_cast<CollectiveType>(type), static_cast<GroupKind>(group),
                                         t.at(2).get<int>(), t.at(3).get<uint64_t>(), t.at(4).get<double>()});
            }
            const auto& p = j.at("p2p");
            c.sends = p.at(0), c.recvs = p.at(1), c.send_bytes = p.at(2), c.recv_bytes = p.at(3);
            const auto& h = j.at("host");
            c.host_copies = h.at(0), c.host_copy_bytes = h.at(1);
            const auto& m = j.at("memory");
            c.memory.params = m.at(0), c.memory.weights = m.at(1), c.memory.gradients = m.at(2);
            c.memory.optimizer = m.at(3), c.memory.activations = m.at(4), c.memory.peak_inflight = m.at(5);
            c.memory.host_activations = m.at(6);
        }
    } catch (const nlohmann::json::exception& e) {
        throw Error("summary shard", std::string("malformed result from a worker: ") + e.what());
    }
    return out;
}

std::string AddSummaryShard(AppState& s, const std::string& text) {
    SummaryCount& c = s.summarizing;
    try {
        c.parts.push_back(DecodeSummaryShard(text));
        if (++c.done < c.shards) return "";
        Finish(s, MergeSummaryShards(*s.evaluation.job, std::move(c.parts)), "");
    } catch (const Error& e) {
        // The merge's "summary shard: stage 3 comes twice" as the decoder words a damaged shard.
        std::string error = e.what();
        const std::string field = "summary shard: ", worker = "malformed result from a worker: ";
        if (e.field == "summary shard" && error.compare(field.size(), worker.size(), worker) != 0)
            error.insert(field.size(), worker);
        FailSummary(s, error);
        return error;
    }
    UpdateReport(s);
    return "";
}

}  // namespace sc::app
