// The training estimate as text and JSON (`stagecraft estimate --system ... --parallel ...`).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "config/hardware_config.h"
#include "parallel/job.h"
#include "training/estimate.h"
#include "training/published_runs.h"

namespace sc {

std::string TrainingReportText(const Job& job, const System& sys, const TrainingEstimate& e);
std::string TrainingReportJson(const Job& job, const System& sys, const TrainingEstimate& e);
// {"compute": s, "recompute": s, ...} in kBreakdownParts order: the estimate's, search's and sweep's JSON.
nlohmann::ordered_json BreakdownJson(const StepBreakdown& b);
// A step's energy as the report and the page print it: "0.948 Wh (500 W a GPU, 19.2 tokens/J)", in Wh below a
// kWh; "" when the part gives no power.
std::string EnergyPerStepText(const TrainingEstimate& e, int gpus);
// The step time at the published runs' ratios (PublishedRunsFor), the spread PublishedRunsText gives: "7.331 s to 8.790 s
// (median 7.570 s)" for the middle half, the range of two or three runs, the one run's; "" for a step not above 0.
// What a run like those would take: a plan should not be sized on the model's own step alone.
std::string PublishedStepText(const PublishedRuns& p, double step_seconds);
// {"min", "p25", "median", "p75", "max"} of a published-runs spread times `scale` (1: the ratios themselves; a step
// time: the step at those ratios): the training and the serving reports' published_runs.
nlohmann::ordered_json PublishedRunsSpreadJson(const PublishedRuns& p, double scale = 1);
// {"gemm", "attention", "hbm", "kernel_floor", "clock", "decode_attention", "scan", "all_measured"}: the estimate's,
// search's and serve's rate_sources.
nlohmann::ordered_json RateSourcesJson(const RateSources& r);

}  // namespace sc
