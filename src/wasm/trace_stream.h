// Streaming per-rank traces to JavaScript: TraceStream(modelJson, parallelSpec), optionally timed on the
// page's cluster (WebApp.timeTraceStream), then writeRank(r) per rank. Each call returns a view of one
// rank's file in wasm memory, valid until the next call: JS writes it out before asking for the next, so
// memory stays bounded by one rank's trace whatever the rank count. The job, cluster and writer come from the
// engine's trace snapshot (src/engine/trace.h), as `stagecraft trace` makes them.
#pragma once
#include <emscripten/val.h>

#include <memory>
#include <optional>
#include <string>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "engine/trace.h"
#include "trace/rank_traces.h"
#include "training/training_options.h"

class TraceStream {
public:
    TraceStream(std::string model_json, std::string parallel_spec);
    // Compute nodes get duration_micros from the compute model on `sys` (as the CLI's trace --system).
    void TimeOn(const sc::System& sys, const sc::CalibrationTable* cal, const sc::TrainingOptions& opt);

    std::string error();
    int world();
    // rank: an integer in [0, world); anything else is an error (null, and error() says why).
    emscripten::val writeRank(emscripten::val rank);
    // The first rank of a stage builds the stage's bytes, seconds of work in wasm for millions of nodes: this does
    // a slice of it (kPrepareSliceNodes, some 10-30 ms) and says whether the rank is ready (true) or needs another
    // call (false); null on an error (error()). The download calls it between frames before writeRank.
    emscripten::val prepareRank(emscripten::val rank);
    static constexpr uint64_t kPrepareSliceNodes = uint64_t{1} << 17;
    std::string commGroups();
    // Rank `rank`'s timeline as Chrome trace JSON (Perfetto), every stage replayed together on the cluster the
    // stream was timed on (what `stagecraft trace --format json` writes); "" and error() without a cluster.
    std::string rankTimelineJson(emscripten::val rank);

private:
    std::unique_ptr<sc::engine::TraceSnapshot> snap_;  // null when the model or split was refused
    std::unique_ptr<sc::RankTraceWriter> writer_;      // reads *snap_
    std::string error_;
};
