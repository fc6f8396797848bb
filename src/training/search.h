// Layout search: every valid way to split a model over a GPU count at a global batch (tp, pp, dp, cp, ep,
// microbatch, schedule with interleaved vstages, recomputation, ZeRO stage, sequence parallelism), each
// timed with EstimateTraining, ranked by step time among the layouts that fit in memory.
//
// Speed: one Job per structural variant (sp off/on), re-evaluated with Rebind only when the symbol binding
// changes (microbatch, tp, cp, ep; the outer loops), every other knob set on the bound job; cheap arithmetic
// pre-filters (the same rules ValidateParallel checks, which still has the last word on every layout); and a
// memory bound before the time estimate: StageMemoryOf over the stages is what EstimateTraining's memory
// starts from (it may only add to it), so a layout whose stages already exceed the capacity is counted as not
// fitting without timing it. Ties in step time keep enumeration order, so results are deterministic.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "parallel/parallel_config.h"
#include "training/estimate.h"
#include "training/training_options.h"

namespace sc {

// Which values each knob may take. An empty list means every value the model, GPU count and batch allow.
struct SearchSpace {
    std::vector<int> tp, pp, cp, ep, microbatch;
    std::vector<Schedule> schedules = {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved};
    std::vector<int> vstages;  // interleaved only; empty: every vstages >= 2 with pp*vstages dividing the layers
    std::vector<Recompute> recompute = {Recompute::none, Recompute::selective, Recompute::full};
    std::vector<int> zero = {0, 1, 2, 3};
    std::vector<int> sp = {0, 1};  // sequence parallelism off/on (on only where tp > 1: with tp = 1 it is a no-op)
    std::string order = "tp-cp-dp-pp";
    double bucket_mb = 25;
};

struct SearchRequest {
    int gpus = 0;   // tp*cp*pp*dp of every layout
    int batch = 0;  // global batch in sequences
    int top_k = 10;
    SearchSpace space;
};

struct RankedLayout {
    ParallelConfig par;
    TrainingEstimate estimate;  // step time with its breakdown, memory per stage, MFU
};

struct SearchStats {
    uint64_t candidates = 0;  // layouts past the arithmetic pre-filters, handed to ValidateParallel
    uint64_t valid = 0;       // accepted by ValidateParallel (every one of them evaluated)
    uint64_t fitting = 0;     // valid layouts within the GPU's memory
    uint64_t estimated = 0;   // full EstimateTraining calls (valid layouts the memory bound did not rule out)
};

struct SearchResult {
    std::vector<RankedLayout> top;  // fitting layouts, fastest first (ties: enumeration order), at most top_k
    SearchStats stats;
};

// Throws sc::Error naming the field for a bad request (gpus or batch not positive, gpus beyond the system,
// a listed value that is not positive, ...). A request no layout satisfies is not an error: top is empty
// and the stats say how far layouts got.
SearchResult SearchLayouts(const ModelConfig& m, const System& sys, const CalibrationTable* cal,
                           const TrainingOptions& opt, const SearchRequest& req);

// The candidate layouts of a request in enumeration order (pre-filtered, not yet validated): what
// SearchLayouts evaluates, for tools and tests that rank them themselves.
void ForEachCandidateLayout(const ModelConfig& m, const SearchRequest& req,
                            const std::function<void(const ParallelConfig&)>& f);

}  // namespace sc
