// Durations for a stage program's nodes from the training model's compute and network models, and a
// single-rank timeline of it (for the Chrome trace and the ET files' duration_micros). The timeline
// replays one rank alone: a node starts when its dependencies have finished and its stream is free
// (main stream; gradient reductions on their own stream); a RECV is taken to arrive as soon as it is
// posted, so cross-rank waiting is not shown (ASTRA-sim simulates that from the ET files).
#pragma once
#include <vector>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "parallel/job.h"
#include "trace/chrome_trace.h"
#include "trace/stage_program.h"
#include "training/training_options.h"

namespace sc {

// Seconds of every node of `prog` (index-aligned).
std::vector<double> NodeSeconds(const Job& job, const StageProgram& prog, const System& sys, const CalibrationTable* cal,
                                const TrainingOptions& opt);

struct TimedNode {
    double start_us = 0, dur_us = 0;
};
std::vector<TimedNode> ReplayStage(const StageProgram& prog, const std::vector<double>& seconds);

// Chrome trace events of one rank's timeline (category = lane: compute, comm:tp, pipeline, dp, ...).
std::vector<ChromeEvent> ChromeEventsOf(const StageProgram& prog, const std::vector<TimedNode>& timeline);

}  // namespace sc
