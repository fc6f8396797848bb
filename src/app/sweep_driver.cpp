// The page's driver of the co-design sweep (no ImGui here): the engine's sweep shards over a snapshot of the
// page's request, run by the pool of web workers when there is one (pool_jobs.h), else a few points per frame.
// Rows are merged in SweepKey order, as the CLI's threads and the MPI ranks are, so the CSV is the CLI's.
#include <algorithm>
#include <iterator>
#include <numeric>

#include "app/app.h"
#include "app/app_state.h"
#include "app/panels.h"
#include "app/pool_jobs.h"
#include "config/error.h"
#include "report/search_report.h"

namespace sc::app {

namespace {

// The cells' indices in SweepKey order. Shards deal points round-robin, so they arrive interleaved; every key of
// the sweep is there once, so each cell has its place (point x models + model): one pass instead of a sort. An
// index, not the cells moved into order: moving 10^5 cells of some 400 bytes (into a second vector, or by swaps
// in place) took 13-29 ms of the page's thread when a 0.42 s pool sweep finished, a frame over 16 ms.
std::vector<uint32_t> KeyOrder(const std::vector<SweepCell>& cells, size_t models) {
    const size_t n = cells.size();
    constexpr uint32_t kNone = UINT32_MAX;
    std::vector<uint32_t> order(n, kNone);
    for (size_t i = 0; i < n; ++i) {
        const auto& k = cells[i].key;
        const size_t at = k.point * models + static_cast<size_t>(k.model);
        if (models == 0 || static_cast<size_t>(k.model) >= models || at >= n || order[at] != kNone) {
            // Not every key once (a test's hand-made shards): the general way.
            std::iota(order.begin(), order.end(), 0u);
            std::stable_sort(order.begin(), order.end(),
                             [&](uint32_t a, uint32_t b) { return cells[a].key < cells[b].key; });
            return order;
        }
        order[at] = static_cast<uint32_t>(i);
    }
    return order;
}

void FinishSweep(AppState& s) {
    auto& w = s.sweep;
    w.key_order = KeyOrder(w.cells, w.models.size());
    w.seconds = Now() - w.started;
    w.has_result = true;
    w.snapshot.reset();
    w.slices.reset();
    w.next_shard = -1;
    s.pool.sweep_id = 0;
}

}  // namespace

int SweepShardCount(size_t points, bool fixed_layout) {
    const size_t wanted = fixed_layout ? std::max<size_t>(kMinSweepShards, points / kFixedPointsPerShard) : points;
    return static_cast<int>(std::max<size_t>(1, std::min({points, wanted, size_t{kMaxSweepShards}})));
}

std::vector<std::string> SweepAxisArgs(const AppState& s) {
    std::vector<std::string> args;
    for (int i = 0; i < 2; ++i) {
        const int a = s.sweep.axis[i];
        if (a < 0 || a >= static_cast<int>(std::size(kSweepAxes))) continue;
        if (i == 1 && a == s.sweep.axis[0])
            throw Error("axis 2", std::string("\"") + kSweepAxes[a] + "\" is already axis 1");
        args.push_back(std::string(kSweepAxes[a]) + "=" + s.sweep.values[i]);
    }
    return args;
}

void SetSweepAxes(AppState& s, const std::string& axis1, const std::string& axis2) {
    const std::string args[2] = {axis1, axis2};
    for (int i = 0; i < 2; ++i) {
        if (args[i].empty()) {
            if (i == 0) throw Error("axis 1", "empty; give \"name=v1,v2\"");
            s.sweep.axis[1] = -1;
            continue;
        }
        const size_t eq = args[i].find('=');
        const std::string name = args[i].substr(0, eq);
        const auto* it =
            std::find_if(std::begin(kSweepAxes), std::end(kSweepAxes), [&](const char* n) { return name == n; });
        if (eq == std::string::npos || it == std::end(kSweepAxes))
            throw Error("axis " + std::to_string(i + 1),
                        "\"" + args[i] +
                            "\" is not name=v1,v2 with a name of "
                            "flops, hbm_bw, hbm_capacity, domain, net_bw, topology, overlap, inr, gpus, power");
        s.sweep.axis[i] = static_cast<int>(it - std::begin(kSweepAxes));
        s.sweep.values[i] = args[i].substr(eq + 1);
    }
}

void CancelSweep(AppState& s) {
    auto& w = s.sweep;
    w.snapshot.reset();
    w.slices.reset();
    w.next_shard = -1;
    w.shards = w.done = 0;
    s.pool.sweep_id = 0;
    DropWaitingJobs(s, "sweep");
}

void StartSweep(AppState& s) {
    auto& w = s.sweep;
    CancelSweep(s);
    w.error.clear();
    w.has_result = false;
    w.cells.clear();
    w.key_order.clear();
    try {
        engine::Request r = CurrentRequest(s);
        w.args = SweepAxisArgs(s);
        for (const std::string& a : w.args) ParseSweepAxis(a, r.sweep.axes);
        r.sweep.fixed_layout = w.fixed_layout;
        ValidateSweepAxes(r.sweep.axes);
        const size_t points = SweepPointCount(r.sweep.axes);
        if (points > kMaxSweepPoints)
            throw Error("axes", std::to_string(points) + " points; at most " + std::to_string(kMaxSweepPoints) +
                                    " per sweep: narrow the axes");
        w.snapshot = std::make_unique<const engine::SweepSnapshot>(engine::SnapshotSweep(r));
        w.request = w.snapshot->request;
        w.axes = w.snapshot->axes;
        w.models.clear();
        for (const SweepModel& m : w.snapshot->models) w.models.push_back(m.name);
        w.cells.reserve(points * w.models.size());  // every row's place at once: no reallocation per shard
        w.ran[0] = w.axis[0];
        w.ran[1] = w.args.size() > 1 ? w.axis[1] : -1;
        w.shards = SweepShardCount(points, w.fixed_layout);
    } catch (const Error& e) {
        CancelSweep(s);
        w.error = e.what();
        return;
    }
    w.started = Now();
    w.done = 0;
    const std::string link = PoolLink(s);
    if (link.empty()) {  // frame slices: progress counts points
        w.slices = std::make_unique<SweepSlices>();
        w.slices->context = w.snapshot->context;
        w.shards = static_cast<int>(w.slices->context->points);
        w.next_shard = 0;
        return;
    }
    s.pool.sweep_id = RaisePoolJob(s, {0, "sweep", link, w.args, w.shards, w.fixed_layout});
}

void StepSweep(AppState& s, double budget_seconds) {
    auto& w = s.sweep;
    if (w.next_shard < 0 || !w.slices) return;
    SweepSlices& sl = *w.slices;
    const SweepContext& c = *sl.context;
    const int pieces = c.request.layout ? 1 : kSweepSearchPieces;  // a fixed layout's point is one estimate
    const double t0 = Now();
    try {
        do {
            if (!sl.point) {
                sl.point = PrepareSweepPoint(c, sl.next_point);
                sl.model = sl.piece = 0;
                sl.parts.clear();
            }
            sl.parts.push_back(EvaluateSweepPoint(c, *sl.point, sl.model, sl.piece, pieces));
            if (++sl.piece < pieces) continue;
            SearchResult merged = MergeSearchResults(std::move(sl.parts), 1);
            w.cells.push_back(CellOf(SweepRowOf(c, *sl.point, sl.model, std::move(merged))));
            sl.parts.clear();
            sl.piece = 0;
            if (++sl.model < static_cast<int>(c.models.size())) continue;
            sl.point.reset();
            ++sl.next_point;
            ++w.done;
        } while (sl.next_point < c.points && Now() - t0 < budget_seconds);
    } catch (const Error& e) {
        CancelSweep(s);
        w.error = e.what();
        return;
    }
    if (sl.next_point == c.points) FinishSweep(s);
}

std::string AddSweepShard(AppState& s, const std::string& bytes) {
    auto& w = s.sweep;
    try {
        AppendSweepShard(bytes, w.cells);
    } catch (const Error& e) {
        FailPoolJob(s, s.pool.sweep_id, e.what());
        return e.what();
    }
    if (++w.done == w.shards) FinishSweep(s);
    return "";
}

void StepJobs(AppState& s, double budget_seconds) {
    // A large split's trace summary (after the edit that asked for it), the search, the sweep, the Serving tab's
    // rate sweep and its one simulation (both move on with the tab closed). They share the frame's budget: each
    // gets what the ones before it left, and runs at least one unit of its work (a step of a few ms at most), so
    // none stops. Who goes first turns every frame, so none takes every frame's budget. (Each took the whole budget
    // of its own: five at once made frames of 150 ms.)
    static constexpr void (*kSteps[])(AppState&, double) = {StepSummary, StepSearch, StepSweep, StepServeSweep,
                                                            StepServe};
    constexpr size_t n = std::size(kSteps);
    const double start = Now();
    for (size_t i = 0; i < n; ++i) kSteps[(s.job_turn + i) % n](s, std::max(0.0, budget_seconds - (Now() - start)));
    s.job_turn = (s.job_turn + 1) % n;
}

std::string SweepCsv(const AppState& s) {
    if (!s.sweep.has_result) return "";
    std::vector<std::string> rows;
    rows.reserve(s.sweep.cells.size());
    for (size_t i = 0; i < s.sweep.cells.size(); ++i) {
        const SweepCell& c = SweepCellInKeyOrder(s.sweep, i);
        const std::string& model =
            c.key.model < static_cast<int>(s.sweep.models.size()) ? s.sweep.models[c.key.model] : std::string();
        rows.push_back(SweepRowText(RowOf(c, model), s.sweep.request, SweepFormat::csv));
    }
    return AssembleSweep(rows, SweepFormat::csv);
}

// ---- A sweep row as the page keeps it, and back
double SweepMetricValue(int metric, const SweepCell& c) {
    switch (metric) {
        case kMetricStep: return c.step_seconds;
        case kMetricTokensPerJoule:
            return c.energy_joules > 0 ? c.tokens_per_second * c.step_seconds / c.energy_joules : 0;
        default: return c.mfu;
    }
}

SweepCell CellOf(const SweepRow& row) {
    SweepCell c;
    c.key = engine::KeyOf(row);
    c.point = row.point;
    c.found = row.found;
    if (row.found) {
        const TrainingEstimate& e = row.estimate;
        c.step_seconds = e.step_seconds, c.mfu = e.mfu, c.tokens_per_second = e.tokens_per_second;
        c.memory_peak = e.memory_peak, c.energy_joules = e.energy_joules_per_step;
        c.step = e.step;
        c.best = row.best;
    }
    c.stats = row.stats;
    return c;
}

SweepRow RowOf(const SweepCell& c, const std::string& model) {
    SweepRow row;
    row.point_index = c.key.point;
    row.model_index = c.key.model;
    row.model = model;
    row.point = c.point;
    row.found = c.found;
    row.best = c.best;
    row.estimate.step_seconds = c.step_seconds, row.estimate.mfu = c.mfu;
    row.estimate.tokens_per_second = c.tokens_per_second, row.estimate.memory_peak = c.memory_peak;
    row.estimate.energy_joules_per_step = c.energy_joules;
    row.estimate.step = c.step;
    row.stats = c.stats;
    return row;
}

// EncodeSweepShard and DecodeSweepShard: sweep_shard_bytes.cpp.

}  // namespace sc::app
