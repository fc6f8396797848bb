// Streaming per-rank traces to JavaScript: TraceStream(modelJson, parallelSpec), optionally timed on the
// page's cluster (WebApp.timeTraceStream), then per rank prepareRank(r) until ready, startRank(r) and nextPiece()
// until empty (or writeRank(r), the whole file at once). Each returns a view into wasm memory, valid until the
// next call: JS writes it out before asking for the next, so memory stays bounded by a piece of one rank's trace
// whatever the rank count and the file's size. The job, cluster and writer come from the
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
    // The same file in pieces of about kPieceBytes, which is how both downloads take it: a file of a stage near
    // the node limit (1.4 GB) is never whole in wasm memory or in JavaScript. startRank(rank) (true, or null and
    // error()), then nextPiece() until it returns an empty view; each view is valid until the next call.
    emscripten::val startRank(emscripten::val rank);
    emscripten::val nextPiece();
    static constexpr size_t kPieceBytes = size_t{4} << 20;
    // The first rank of a stage builds the stage's bytes, seconds of work in wasm for millions of nodes: this does
    // a slice of it (kPrepareSliceNodes, some 10-30 ms) and says whether the rank is ready (true) or needs another
    // call (false); null on an error (error()). The download calls it between frames before writeRank.
    emscripten::val prepareRank(emscripten::val rank);
    static constexpr uint64_t kPrepareSliceNodes = uint64_t{1} << 17;
    std::string commGroups();
    // Rank `rank`'s timeline as Chrome trace JSON (Perfetto), every stage replayed together on the cluster the
    // stream was timed on (what `stagecraft trace --format json` writes), as a Uint8Array of its own; null and
    // error() without a cluster or on a bad rank.
    emscripten::val rankTimelineJson(emscripten::val rank);

private:
    std::unique_ptr<sc::engine::TraceSnapshot> snap_;  // null when the model or split was refused
    std::unique_ptr<sc::RankTraceWriter> writer_;      // reads *snap_
    std::string error_;
};
