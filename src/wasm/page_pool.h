// The page's side of the web-worker pool (src/app/pool_jobs.h): what web/main.js calls to take the jobs the app
// state raises, hand back the workers' shard results and read progress. Returned by WebApp.pool(); bound in
// worker_bindings.cpp.
#pragma once
#include <emscripten/val.h>

#include <string>

namespace sc::app {
struct AppState;
}

class PagePool {
public:
    explicit PagePool(sc::app::AppState& state) : state_(&state) {}
    void setWorkers(int n);
    emscripten::val takeJob();  // {id, kind, link, axes, shards} or null
    bool wanted(int id) const;
    // A shard's result: text (search, serving) or a Uint8Array of bytes (sweep). "" or the error.
    std::string addShard(int id, emscripten::val result);
    void fail(int id, const std::string& message);
    std::string sweepCsv() const;
    bool takeCsvRequest();                                                       // "Export CSV" was pressed
    std::string startSweep(const std::string& axis1, const std::string& axis2);  // "" or the error
    // The next sweeps: the page's layout at every point (true) or the best layout at each (false, the default).
    void setSweepFixedLayout(bool fixed);
    emscripten::val sweepStatus() const;
    void startSearch();
    emscripten::val searchStatus() const;
    // The Serving tab's rate sweep (in the pool when the page has one): {running, done, hasResult, error, pool, text}.
    void startServeSweep();
    emscripten::val serveSweepStatus() const;
    // What the last call threw ("" when none did): every method runs behind scweb::Kept (guard.h), so an
    // exception never reaches JS; it returns the type's empty value and is kept here.
    std::string lastError() const { return error_; }

private:
    emscripten::val TakeJobObject();
    emscripten::val SweepStatusObject() const;
    emscripten::val SearchStatusObject() const;

    sc::app::AppState* state_;  // the WebApp's; the WebApp outlives every PagePool the page holds
    mutable std::string error_;
};
