// Warnings about a layout that works but wastes the cluster: composed once here, printed by
// `stagecraft estimate` (text and JSON) and shown by the page under the step-time bar.
#pragma once
#include <string>
#include <vector>

#include "parallel/parallel_config.h"
#include "training/estimate.h"

namespace sc {

// Above this share of the step, a part is called out: more than half the step is not computing. A reading aid
// (the "pathological layout"), not a modelled quantity.
constexpr double kWarnShareOfStep = 0.5;

// One sentence per warning, each naming the share and what would reduce it; empty when none applies.
// Memory over capacity is not repeated here: the estimate's memory_message says it.
std::vector<std::string> LayoutWarnings(const ParallelConfig& par, const TrainingEstimate& e);

}  // namespace sc
