// Embind API of the web-worker pool (web/pool.js, web/worker.js), both ends:
//  - WorkerCore, in each worker: holds the page's presets, rebuilds the page's engine request from a link
//    (the page's own app state and ApplyLink, so both build the request the same way) and runs engine shards;
//    results go back as text (src/app/pool_jobs.h).
//  - PagePool, on the page: the handshake between the app state's jobs and the JS pool (WebApp.pool()).
// Every call goes through scweb::Guard: {ok: true, ...} or {ok: false, error}.
//
// One wasm module serves the page and the workers: the C++ side has no WebGPU (the page renders from JS) and a
// worker never creates an ImGui context, so a second, core-only module would only add a download and a build.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <memory>
#include <string>

#include "app/app.h"
#include "app/app_state.h"
#include "app/inference_driver.h"
#include "app/pool_jobs.h"
#include "config/error.h"
#include "config/numbers.h"
#include "engine/search.h"
#include "engine/sweep.h"
#include "guard.h"
#include "page_pool.h"

using emscripten::val;

namespace {

val Text(const std::string& text) {
    val r = val::object();
    r.set("ok", true);
    r.set("text", text);
    return r;
}

// {ok, bytes}: `bytes` a Uint8Array of its own (copied out of the wasm heap), which the worker transfers to the
// page without another copy; the page's addShard takes it as the std::string it was.
val Bytes(const std::string& bytes) {
    val r = val::object();
    r.set("ok", true);
    r.set("bytes", val(emscripten::typed_memory_view(bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data())))
                       .call<val>("slice"));
    return r;
}

// A task's shard `shard` of `count`, both checked.
struct ShardArgs {
    int index = 0, count = 1;
};
ShardArgs ShardOf(val shard, val count) {
    const int n = static_cast<int>(scweb::IntegerArg(count, "count", 1, 1 << 20));
    return {static_cast<int>(scweb::IntegerArg(shard, "shard", 0, n - 1)), n};
}

// An array of strings from JS (`what` says what it must hold, for the error).
std::vector<std::string> StringsOf(val array, const char* name, const char* what) {
    if (!val::global("Array").call<bool>("isArray", array)) throw sc::Error(name, std::string("expected ") + what);
    std::vector<std::string> out;
    for (unsigned k = 0, len = array["length"].as<unsigned>(); k < len; ++k)
        out.push_back(scweb::StringArg(array[k], (std::string(name) + "[]").c_str()));
    return out;
}

// The cache key of a snapshot: the link and the job's arguments.
std::string KeyOf(const std::string& link, const std::vector<std::string>& args) {
    std::string key = link;
    for (const std::string& a : args) key += "\n" + a;
    return key;
}

std::string Checked(const std::string& error) {
    if (!error.empty()) throw sc::Error("preset", error);
    return error;
}

class WorkerCore {
public:
    WorkerCore() : state_(sc::app::CreateAppState()) { state_->counts_summary = false; }
    ~WorkerCore() { sc::app::DestroyAppState(state_); }
    WorkerCore(const WorkerCore&) = delete;
    WorkerCore& operator=(const WorkerCore&) = delete;

    // The page's presets, registered as the page registers them ({ok} or {ok: false, error}).
    val addPreset(val file, val json) {
        return scweb::Guard([&] {
            Checked(sc::app::AddPreset(*state_, scweb::StringArg(file, "file"), scweb::StringArg(json, "json")));
            return Text("");
        });
    }
    val addSystem(val file, val system_json, val accelerator_json) {
        return scweb::Guard([&] {
            Checked(sc::app::AddSystem(*state_, scweb::StringArg(file, "file"), scweb::StringArg(system_json, "system"),
                                       scweb::StringArg(accelerator_json, "accelerator")));
            return Text("");
        });
    }
    // The page's serving presets: a link may name one (its Serving tab), and the worker must accept that link.
    val addServingPreset(val file, val json) {
        return scweb::Guard([&] {
            Checked(sc::app::AddServingPreset(*state_, scweb::StringArg(file, "file"), scweb::StringArg(json, "json")));
            return Text("");
        });
    }
    val setCalibration(val json) {
        return scweb::Guard([&] {
            Checked(sc::app::SetCalibration(*state_, scweb::StringArg(json, "calibration")));
            return Text("");
        });
    }

    // searchShard(link, shard, count) -> {ok, text}: one shard of the "Best layout" search of the link's page.
    val searchShard(val link, val shard, val count) {
        return scweb::Guard([&] {
            const ShardArgs sh = ShardOf(shard, count);
            const std::string key = scweb::StringArg(link, "link");
            if (!search_ || search_key_ != key) {
                search_.reset();
                ApplyInputs(key);
                search_ = std::make_unique<const sc::engine::SearchSnapshot>(
                    sc::engine::SnapshotSearch(sc::app::CurrentRequest(*state_)));
                search_key_ = key;
            }
            return Text(sc::app::EncodeSearchShard(sc::engine::RunSearchShard(*search_, sh.index, sh.count)));
        });
    }

    // sweepShard(link, ["flops=1,2", ...], shard, count, fixedLayout) -> {ok, bytes}: one shard of the sweep of the
    // link's page; fixedLayout true: the link's layout at every point instead of a search.
    val sweepShard(val link, val axes, val shard, val count, val fixed_layout) {
        return scweb::Guard([&] {
            const ShardArgs sh = ShardOf(shard, count);
            const std::vector<std::string> args = StringsOf(axes, "axes", "an array of \"name=v1,v2\" strings");
            if (!fixed_layout.isTrue() && !fixed_layout.isFalse())
                throw sc::Error("fixedLayout", "expected true or false");
            const bool fixed = fixed_layout.isTrue();
            const std::string page = scweb::StringArg(link, "link"), key = KeyOf(page, args) + (fixed ? "|fixed" : "");
            if (!sweep_ || sweep_key_ != key) {
                sweep_.reset();
                ApplyInputs(page);
                sc::engine::Request r = sc::app::CurrentRequest(*state_);
                for (const std::string& a : args) sc::ParseSweepAxis(a, r.sweep.axes);
                r.sweep.fixed_layout = fixed;
                sweep_ = std::make_unique<const sc::engine::SweepSnapshot>(sc::engine::SnapshotSweep(r));
                sweep_key_ = key;
            }
            std::vector<sc::app::SweepCell> cells;
            for (const sc::SweepRow& row : sc::engine::RunSweepShard(*sweep_, sh.index, sh.count))
                cells.push_back(sc::app::CellOf(row));
            return Bytes(sc::app::EncodeSweepShard(cells));
        });
    }

    // serveSweepShard(link, [from, to, points], shard, count) -> {ok, text}: one shard of the Serving tab's rate
    // sweep of the link's page (its serve.* keys carry the tab's description).
    val serveSweepShard(val link, val args, val shard, val count) {
        return scweb::Guard([&] {
            const ShardArgs sh = ShardOf(shard, count);
            const std::vector<std::string> rates = StringsOf(args, "args", "[from, to, points] as strings");
            const std::string page = scweb::StringArg(link, "link"), key = KeyOf(page, rates);
            if (!serve_sweep_ || serve_sweep_key_ != key) {
                serve_sweep_.reset();
                ApplyInputs(page);
                sc::engine::ServeRequest r = sc::app::CurrentServeRequest(*state_);
                r.sweep_rates = sc::app::ServeSweepJobRates(rates);
                serve_sweep_ =
                    std::make_unique<const sc::engine::ServeSweepSnapshot>(sc::engine::SnapshotServeSweep(r));
                serve_sweep_key_ = key;
            }
            return Text(
                sc::app::EncodeServeSweepShard(sc::engine::RunServeSweepShard(*serve_sweep_, sh.index, sh.count)));
        });
    }

    // summaryShard(link, shard, count) -> {ok, text}: the trace-summary classes of stages shard, shard + count, ...
    // of the link's split (the page's "summary" job, for a split past kSummaryNodesInEdit nodes).
    val summaryShard(val link, val shard, val count) {
        return scweb::Guard([&] {
            const ShardArgs sh = ShardOf(shard, count);
            const std::string key = scweb::StringArg(link, "link");
            ApplyEvaluated(key);
            const std::optional<sc::Job>& job = state_->evaluation.job;
            if (!job)
                throw sc::Error("parallel", state_->parallel_error.empty() ? state_->error : state_->parallel_error);
            return Text(sc::app::EncodeSummaryShard(sc::SummarizeStageShard(*job, sh.index, sh.count)));
        });
    }

    // timelineShard(link, [rank], 0, 1) -> {ok, bytes}: rank's timeline of the link's page as Chrome trace JSON (the
    // page's "Perfetto JSON": every stage replayed, seconds for a large split, so not on the page's thread).
    val timelineShard(val link, val args, val shard, val count) {
        return scweb::Guard([&] {
            ShardOf(shard, count);
            const std::vector<std::string> a = StringsOf(args, "args", "[rank] as a string");
            if (a.size() != 1) throw sc::Error("args", "expected [rank]");
            const int rank = static_cast<int>(sc::ParseIntegerIn("rank", a[0], 0, (1 << 24) - 1));
            const std::string key = scweb::StringArg(link, "link");
            ApplyInputs(key);  // RankTimelineJson builds its own trace snapshot from the inputs
            // Bytes, transferred to the page: a JavaScript string stops at 2^29 characters (a rank of a few
            // thousand microbatches) and would be copied again.
            return Bytes(sc::app::RankTimelineJson(*state_, rank));
        });
    }

private:
    // A search, sweep, rate sweep or timeline reads only the inputs of the link (CurrentRequest and the like); the
    // summary's shards read the job Recompute builds (the worker's own summary is not counted: counts_summary).
    // Recompute cost some 60 ms for GPT-3 175B at pp=96 in wasm, which every worker paid for every job.
    void ApplyInputs(const std::string& link) {
        if (inputs_ == link) return;
        Apply(link, sc::app::LinkApply::inputs);
    }
    void ApplyEvaluated(const std::string& link) {
        if (evaluated_ == link) return;
        Apply(link, sc::app::LinkApply::evaluate);
        evaluated_ = link;
    }
    void Apply(const std::string& link, sc::app::LinkApply how) {
        inputs_.clear(), evaluated_.clear();
        const std::string error = sc::app::ApplyLink(*state_, link, how);
        if (!error.empty()) throw sc::Error("link", error);
        inputs_ = link;
    }

    std::string inputs_;     // the link whose inputs the state holds
    std::string evaluated_;  // the link the state's evaluation (its job) was computed from

    sc::app::AppState* state_;
    std::unique_ptr<const sc::engine::SearchSnapshot> search_;
    std::string search_key_;
    std::unique_ptr<const sc::engine::SweepSnapshot> sweep_;
    std::string sweep_key_;
    std::unique_ptr<const sc::engine::ServeSweepSnapshot> serve_sweep_;
    std::string serve_sweep_key_;
};

}  // namespace

// ---- PagePool (page_pool.h)
void PagePool::setWorkers(int n) {
    scweb::Kept(error_, [&] { sc::app::SetPoolWorkers(*state_, n); });
}

val PagePool::takeJob() {
    return scweb::Kept(error_, [&] { return TakeJobObject(); });
}

val PagePool::TakeJobObject() {
    sc::app::PoolJob j = sc::app::TakePoolJob(*state_);
    if (j.id == 0) return val::null();
    val o = val::object();
    o.set("id", j.id);
    o.set("kind", j.kind);
    o.set("link", j.link);
    val axes = val::array();
    for (const std::string& a : j.axes) axes.call<void>("push", a);
    o.set("axes", axes);
    o.set("shards", j.shards);
    o.set("fixedLayout", j.fixed_layout);
    return o;
}

bool PagePool::wanted(int id) const {
    return scweb::Kept(error_, [&] { return sc::app::PoolJobWanted(*state_, id); });
}

std::string PagePool::addShard(int id, val result) {
    std::string returned;
    const std::string thrown = scweb::ErrorOf([&] {
        std::string payload;
        if (result.instanceof (val::global("Uint8Array"))) {
            // One TypedArray.set into the string's own bytes: Embind's std::string conversion copies a typed
            // array byte by byte in JS, a tenth of a 10^5-point sweep's merge on the page's thread.
            payload.resize(result["length"].as<size_t>());
            val(emscripten::typed_memory_view(payload.size(), reinterpret_cast<uint8_t*>(payload.data())))
                .call<void>("set", result);
        } else {
            payload = scweb::StringArg(result, "result");
        }
        returned = sc::app::AddPoolShard(*state_, id, payload);
    });
    return thrown.empty() ? returned : thrown;
}

void PagePool::fail(int id, const std::string& message) {
    scweb::Kept(error_, [&] { sc::app::FailPoolJob(*state_, id, message); });
}

std::string PagePool::sweepCsv() const {
    return scweb::Kept(error_, [&] { return sc::app::SweepCsv(*state_); });
}

bool PagePool::takeCsvRequest() {
    return scweb::Kept(error_, [&] {
        const bool r = state_->sweep.csv_requested;
        state_->sweep.csv_requested = false;
        return r;
    });
}

void PagePool::setSweepFixedLayout(bool fixed) {
    scweb::Kept(error_, [&] { state_->sweep.fixed_layout = fixed; });
}

std::string PagePool::startSweep(const std::string& axis1, const std::string& axis2) {
    return scweb::ErrorOf([&] {
        sc::app::SetSweepAxes(*state_, axis1, axis2);
        sc::app::StartSweep(*state_);
    });
}

val PagePool::sweepStatus() const {
    return scweb::Kept(error_, [&] { return SweepStatusObject(); });
}

val PagePool::SweepStatusObject() const {
    const sc::app::SweepState& w = state_->sweep;
    val o = val::object();
    o.set("running", w.snapshot != nullptr);
    o.set("done", w.done);
    o.set("shards", w.shards);
    o.set("hasResult", w.has_result);
    o.set("rows", static_cast<double>(w.cells.size()));
    o.set("error", w.error);
    o.set("seconds", w.seconds);
    o.set("pool", state_->pool.sweep_id != 0);
    return o;
}

val PagePool::searchStatus() const {
    return scweb::Kept(error_, [&] { return SearchStatusObject(); });
}

val PagePool::SearchStatusObject() const {
    const auto& q = state_->search;
    val o = val::object();
    o.set("running", q.next_shard >= 0);
    o.set("done", q.next_shard < 0 ? 0 : q.next_shard);
    o.set("hasResult", q.has_result);
    o.set("error", q.error);
    o.set("pool", state_->pool.search_id != 0);
    o.set("seconds", q.seconds);
    o.set("text", q.has_result ? sc::app::SearchResultText(*state_) : std::string());
    return o;
}

void PagePool::startServeSweep() {
    scweb::Kept(error_, [&] { sc::app::StartServeSweep(*state_); });
}

val PagePool::serveSweepStatus() const {
    return scweb::Kept(error_, [&] {
        const auto& w = state_->inference.sweep;
        val o = val::object();
        o.set("running", sc::app::ServeSweepRunning(*state_));
        o.set("done", sc::app::ServeSweepShardsDone(*state_));
        o.set("hasResult", !w.points_done.empty());
        o.set("error", w.error);
        o.set("pool", state_->pool.serve_sweep_id != 0);
        o.set("text", w.report);
        return o;
    });
}

void PagePool::startSearch() {
    scweb::Kept(error_, [&] { sc::app::StartSearch(*state_); });
}

EMSCRIPTEN_BINDINGS(stagecraft_workers) {
    emscripten::class_<WorkerCore>("WorkerCore")
        .constructor<>()
        .function("addPreset", &WorkerCore::addPreset)
        .function("addSystem", &WorkerCore::addSystem)
        .function("setCalibration", &WorkerCore::setCalibration)
        .function("addServingPreset", &WorkerCore::addServingPreset)
        .function("searchShard", &WorkerCore::searchShard)
        .function("sweepShard", &WorkerCore::sweepShard)
        .function("serveSweepShard", &WorkerCore::serveSweepShard)
        .function("summaryShard", &WorkerCore::summaryShard)
        .function("timelineShard", &WorkerCore::timelineShard);
    emscripten::class_<PagePool>("PagePool")
        .function("setWorkers", &PagePool::setWorkers)
        .function("takeJob", &PagePool::takeJob)
        .function("wanted", &PagePool::wanted)
        .function("addShard", &PagePool::addShard)
        .function("fail", &PagePool::fail)
        .function("sweepCsv", &PagePool::sweepCsv)
        .function("takeCsvRequest", &PagePool::takeCsvRequest)
        .function("startSweep", &PagePool::startSweep)
        .function("setSweepFixedLayout", &PagePool::setSweepFixedLayout)
        .function("sweepStatus", &PagePool::sweepStatus)
        .function("startSearch", &PagePool::startSearch)
        .function("searchStatus", &PagePool::searchStatus)
        .function("startServeSweep", &PagePool::startServeSweep)
        .function("serveSweepStatus", &PagePool::serveSweepStatus)
        .function("lastError", &PagePool::lastError);
}
