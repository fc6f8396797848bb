// The compact trace summary as text (CLI, page mirror) and JSON (`stagecraft summary --json`).
#pragma once
#include <string>

#include "parallel/job.h"
#include "trace/summary.h"

namespace sc {

std::string SummaryReportText(const Job& job, const TraceSummary& s);
std::string SummaryReportJson(const Job& job, const TraceSummary& s);

}  // namespace sc
