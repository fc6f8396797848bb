// The training estimate as text and JSON (`stagecraft estimate --system ... --parallel ...`).
#pragma once
#include <string>

#include "config/hardware_config.h"
#include "parallel/job.h"
#include "training/estimate.h"

namespace sc {

std::string TrainingReportText(const Job& job, const System& sys, const TrainingEstimate& e);
std::string TrainingReportJson(const Job& job, const System& sys, const TrainingEstimate& e);

}  // namespace sc
