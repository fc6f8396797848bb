// The reports of the engine's results (src/engine), composed once here for every driver: `stagecraft estimate`,
// `summary` and `search` print them, and the page mirrors PageReportText (its DOM text and no-WebGPU fallback),
// so the page shows what the CLI prints because both call these functions.
#pragma once
#include <string>

#include "engine/estimate.h"
#include "engine/request.h"
#include "engine/search.h"

namespace sc {

// `stagecraft estimate`: the model summary, then (with a cluster) the training estimate.
std::string EstimateReportText(const engine::Request& request, const engine::EstimateResult& result);
std::string EstimateReportJson(const engine::Request& request, const engine::EstimateResult& result);

// `stagecraft summary`.
std::string SummaryReportText(const engine::SummaryResult& result);
std::string SummaryReportJson(const engine::SummaryResult& result);

// `stagecraft search`.
std::string SearchReportText(const engine::SearchSnapshot& snap, const SearchResult& result);
std::string SearchReportJson(const engine::SearchSnapshot& snap, const SearchResult& result);

// The page's report: for a valid request exactly EstimateReportText followed by SummaryReportText (what
// `stagecraft estimate` then `stagecraft summary` print); a stage that failed is one line "<stage> error: ..."
// where its report would be, and the stages after it are left out as Evaluate leaves them out. A summary still
// being counted (ev.summary_pending) is one line "summary: being counted (...)".
std::string PageReportText(const engine::Request& request, const engine::Evaluation& ev);
// The same as JSON (the page's "Copy JSON"): {"estimate": what `stagecraft estimate --json` prints, "summary":
// what `stagecraft summary --json` prints}, and "errors": [{"stage", "message"}] for a stage that failed;
// "summary_pending": true in place of "summary" while it is being counted.
std::string PageReportJson(const engine::Request& request, const engine::Evaluation& ev);

}  // namespace sc
