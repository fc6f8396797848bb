// The training estimate as text and JSON (`stagecraft estimate --system ... --parallel ...`).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "config/hardware_config.h"
#include "parallel/job.h"
#include "training/estimate.h"

namespace sc {

std::string TrainingReportText(const Job& job, const System& sys, const TrainingEstimate& e);
std::string TrainingReportJson(const Job& job, const System& sys, const TrainingEstimate& e);
// {"compute": s, "recompute": s, ...} in kBreakdownParts order: the estimate's, search's and sweep's JSON.
nlohmann::ordered_json BreakdownJson(const StepBreakdown& b);
// {"gemm", "attention", "hbm", "kernel_floor", "all_measured"}: the estimate's, search's and serve's rate_sources.
nlohmann::ordered_json RateSourcesJson(const RateSources& r);

}  // namespace sc
