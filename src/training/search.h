// Layout search: every valid way to split a model over a GPU count at a global batch (tp, pp, dp, cp, ep,
// microbatch, schedule with interleaved vstages, recomputation, ZeRO stage, sequence parallelism), each
// timed with EstimateTraining, ranked by step time among the layouts that fit in memory.
//
// Speed: one Job per structural variant (sp off/on), re-evaluated with Rebind only when the symbol binding
// changes (microbatch, tp, cp, ep; the outer loops), every other knob set on the bound job; cheap arithmetic
// pre-filters (the same rules ValidateParallel checks, which still has the last word on every layout); and a
// memory bound before the time estimate: StageMemoryOf is what EstimateTraining's memory per stage starts
// from (it may only add to it), so a layout whose first stage already exceeds the capacity is counted as not
// fitting without timing it. Ties in step time keep enumeration order, so results are deterministic.
// Offloading is not a knob of the enumeration: a layout that does not fit gets the fewest offloaded layers that make
// it fit (SearchSpace::offload), found on its memory alone.
// Not enumerated: uneven pipelines (pp*vstages must divide the layers) unless space.uneven, explicit pipeline
// layouts (layout=), Megatron's recompute modules, rank orders other than space.order,
// and the exact duplicates sp=1 with tp=1 and GPipe with pp=1 (the same run as sp=0 / 1F1B).
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
    // Megatron-Core's EP all-to-all overlap off/on (ParallelConfig::a2a_overlap); on only where it can run: an MoE
    // model with ep > 1, without full recomputation, under 1F1B on one stage or interleaved.
    std::vector<int> a2a_overlap = {0, 1};
    // CPU activation offloading (ParallelConfig::offload_layers): a layout Megatron-Core can offload (one stage, 1F1B,
    // no recomputation, no a2a_overlap) that does not fit is tried with the fewest offloaded layers that make it fit,
    // where the host link is known (measured for the part, or TrainingOptions::host_link_gbps). Layouts that fit are
    // tried as they are: offloading only adds time.
    bool offload = true;
    // Also pipelines whose pp (or pp x vstages) does not divide the layers, split as uneven=1 splits them: a model of
    // 61 layers (DeepSeek-V3, Kimi K2) has no pipeline otherwise.
    bool uneven = false;
    std::string order = "tp-cp-dp-pp";
    double bucket_mb = 25;
};

struct SearchRequest {
    int gpus = 0;   // tp*cp*pp*dp of every layout
    int batch = 0;  // global batch in sequences
    int top_k = 10;
    SearchSpace space;
    // Evaluate only the candidates whose enumeration index i has i % shard_count == shard_index (threads or
    // processes each take one shard; MergeSearchResults joins them into the unsharded result).
    int shard_index = 0, shard_count = 1;
};

struct RankedLayout {
    uint64_t index = 0;  // enumeration index of the candidate (ties in step time rank by it)
    ParallelConfig par;
    TrainingEstimate estimate;  // step time with its breakdown, memory per stage, MFU
};

struct SearchStats {
    uint64_t candidates = 0;  // layouts past the arithmetic pre-filters, handed to ValidateParallel
    uint64_t valid = 0;       // accepted by ValidateParallel (every one of them evaluated)
    uint64_t fitting = 0;     // valid layouts within the GPU's memory
    uint64_t estimated = 0;   // full EstimateTraining calls (valid layouts the first-stage memory bound let through)
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

// The result of the whole search from the results of its shards (each run with the same request but its
// own shard_index): stats added, top lists merged by (step time, enumeration index), cut to top_k.
SearchResult MergeSearchResults(std::vector<SearchResult> shards, int top_k);

// The candidate layouts of a request in enumeration order (pre-filtered, not yet validated): what
// SearchLayouts evaluates, for tools and tests that rank them themselves.
void ForEachCandidateLayout(const ModelConfig& m, const SearchRequest& req,
                            const std::function<void(const ParallelConfig&)>& f);

}  // namespace sc
