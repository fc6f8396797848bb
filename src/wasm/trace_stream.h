// Streaming per-rank traces to JavaScript: TraceStream(modelJson, parallelSpec), optionally timed on the
// page's cluster (WebApp.timeTraceStream), then writeRank(r) per rank. Each call returns a view of one
// rank's file in wasm memory, valid until the next call: JS writes it out before asking for the next, so
// memory stays bounded by one rank's trace whatever the rank count.
#pragma once
#include <emscripten/val.h>

#include <memory>
#include <optional>
#include <string>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "parallel/job.h"
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
    std::string commGroups();

private:
    std::unique_ptr<sc::Job> job_;
    std::unique_ptr<sc::RankTraceWriter> writer_;
    std::optional<sc::System> system_;
    std::optional<sc::CalibrationTable> calibration_;
    sc::TrainingOptions options_;
    std::string error_;
};
