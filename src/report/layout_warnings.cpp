#include "report/layout_warnings.h"

#include <cstdio>

namespace sc {

static std::string Percent(double share) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * share);
    return buf;
}

std::vector<std::string> LayoutWarnings(const ParallelConfig& par, const TrainingEstimate& e) {
    std::vector<std::string> out;
    if (!(e.step_seconds > 0)) return out;
    const StepBreakdown& b = e.step;
    const double bubble = b.bubble / e.step_seconds;
    if (bubble > kWarnShareOfStep) {
        const int microbatches = par.microbatch * par.dp > 0 ? par.global_batch() / (par.microbatch * par.dp) : 0;
        out.push_back("the pipeline bubble is " + Percent(bubble) + " of the step (" + std::to_string(par.pp) +
                      " stages, " + std::to_string(microbatches) +
                      " microbatches per step): more microbatches (a larger batch or smaller microbatch), "
                      "an interleaved or zero-bubble schedule, or fewer stages would shrink it");
    }
    const double comm = (b.tp_comm + b.cp_comm + b.ep_comm + b.pp_comm + b.dp_comm) / e.step_seconds;
    if (comm > kWarnShareOfStep)
        out.push_back("exposed communication is " + Percent(comm) +
                      " of the step: keep TP within the scale-up domain, overlap the DP/ZeRO and PP transfers, "
                      "or use fewer, larger groups");
    return out;
}

}  // namespace sc
