// A request to the engine: everything one result depends on, as plain values. The CLI commands build it from
// flags, the page from its panels; both then call the same engine functions (estimate.h, search.h, sweep.h)
// and the same report functions (src/report), so the two cannot drift apart.
//
// The compute precision is part of `model` (ModelConfig::precision: the CLI's --precision and the Model
// panel's picker both write it there), so it is not repeated here.
#pragma once
#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "parallel/parallel_config.h"
#include "training/search.h"
#include "training/sweep.h"
#include "training/training_options.h"

namespace sc::engine {

// What the layout search ("Best layout", `stagecraft search`) is asked for. gpus, batch and top_k are checked
// by SearchLayouts (sc::Error naming the field).
struct SearchAsk {
    int gpus = 0;    // tp*cp*pp*dp of every layout
    int batch = 0;   // global batch in sequences
    int top_k = 10;  // layouts to keep
    SearchSpace space;
};

// What the co-design sweep (`stagecraft sweep`) is asked for; its GPU count, batch and layout space are the
// search's (Request::search; top_k is not used: a sweep keeps the best layout of each point and model), or,
// with fixed_layout, the layout's own.
struct SweepAsk {
    std::vector<SweepModel> models;  // empty: the request's model alone, named by its name
    SweepAxes axes;
    // true: Request::parallel at every point (its GPU count and batch), no search (SweepRequest::layout).
    bool fixed_layout = false;
};

struct Request {
    ModelConfig model;        // with its precision
    ParallelConfig parallel;  // the split to estimate and summarize
    // The cluster as the driver built and edited it (--gpus, --system-set, the Training panel); null: none, so
    // the estimate is the model's size and FLOPs only. Borrowed: it must outlive the call. A search or sweep
    // copies it into its snapshot (search.h) and never reads it again.
    const System* system = nullptr;
    const CalibrationTable* calibration = nullptr;  // null: no measured curves (peak fractions). Borrowed likewise.
    TrainingOptions options;
    SearchAsk search;
    SweepAsk sweep;
};

}  // namespace sc::engine
