// Durations for a stage program's nodes from the training model's compute and network models, and the
// timeline of one rank per pipeline stage replayed together (for the Chrome trace of a rank and the ET
// files' duration_micros). A node starts when its dependencies have finished and its stream is free (main
// stream; the side stream of data-parallel traffic; sends on their own); a RECV's transfer starts only when
// the sending stage has posted the matching SEND, so the pipeline bubble shows as idle time. Ranks of one
// stage run the same program, so one replay per stage stands for all of them (cross-rank effects inside a
// group, and contention, are what ASTRA-sim simulates from the ET files).
#pragma once
#include <vector>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "parallel/job.h"
#include "trace/chrome_trace.h"
#include "trace/stage_program.h"
#include "training/comm_sms.h"
#include "training/training_options.h"

namespace sc {

// Seconds of every node of `prog` (index-aligned): what EstimateTraining charges for the same op, its measured
// fixed cost and the SMs a userbuffers TP overlap takes from it (`kernels`, as the estimate's) included.
std::vector<double> NodeSeconds(const Job& job, const StageProgram& prog, const System& sys,
                                const CalibrationTable* cal, const TrainingOptions& opt,
                                const TpOverlapKernels& kernels = {});

struct TimedNode {
    double start_us = 0, dur_us = 0;
};
// programs[s] and seconds[s] for every stage s of the pipeline (index-aligned nodes); returns each stage's
// timeline. Throws sc::Error if a receive never finds its send (a schedule that deadlocks).
std::vector<std::vector<TimedNode>> ReplayPipeline(const std::vector<const StageProgram*>& programs,
                                                   const std::vector<std::vector<double>>& seconds);
// Every stage of `job` built and replayed on `sys`.
std::vector<std::vector<TimedNode>> ReplayJob(const Job& job, const std::vector<const StageProgram*>& programs,
                                              const System& sys, const CalibrationTable* cal,
                                              const TrainingOptions& opt);
// Fraction of the step [0, last node's end] in which the main stream of a stage does nothing (the bubble,
// plus any wait for a side-stream result).
double IdleFraction(const StageProgram& prog, const std::vector<TimedNode>& timeline);

// Chrome trace events of one rank's timeline (category = lane: compute, comm:tp, pipeline, dp, ...).
std::vector<ChromeEvent> ChromeEventsOf(const StageProgram& prog, const std::vector<TimedNode>& timeline);

}  // namespace sc
