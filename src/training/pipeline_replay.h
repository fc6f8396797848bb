// A pipeline schedule replayed with the time of each of its steps: every rank runs its steps (parallel/schedule.h,
// the steps the traces are made of) in order, each one starting when its rank is free and its input is there:
// the forward of pipeline position g after the forward of g - 1, a backward (or its input half) after the backward
// of g + 1 and its own forward, a weight half after its input half. The pipeline's time for one step is when the
// last rank finishes. For equal stages it gives the papers' bubbles (1F1B's (pp-1)(F+B), interleaved's
// (pp-1)(F+B)/v, ZB-H1's (pp-1)(F+B-W): PipelineReplay.* in tests/native/test_schedule_zbv.cpp); the estimate uses
// it where no closed form holds, ZB-V, DualPipe, DualPipeV and interleaved_zb (training/estimate.cpp), DualPipe's and
// DualPipeV's paired steps taking their paired times. Transfers between ranks are not in it (the estimate's pp_comm).
#pragma once
#include <vector>

#include "parallel/parallel_config.h"

namespace sc {

// One microbatch through one chunk of a rank: its forward, its backward's input half (with any recomputation) and
// its weight half (a backward that is not split runs both).
struct ChunkTimes {
    double forward = 0, input = 0, weight = 0;
    // DualPipe and DualPipeV: the forward and the whole backward when they run as one overlapped pair
    // (PipelineStep::paired), each without what the other chunk's compute hides. Read only for paired steps.
    double paired_forward = 0, paired_backward = 0;
};

struct PipelineReplayTimes {
    double end = 0;            // when the last rank finishes
    std::vector<double> busy;  // per rank, the sum of its steps' times
};

// One step of a rank laid out in time.
struct PipelineSpan {
    double start = 0, end = 0;  // seconds from the first step's start
    int microbatch = 0, chunk = 0;
    char pass = 'F';      // F a forward, B a whole backward, I a backward's input half, W its weight half
    bool paired = false;  // DualPipe, DualPipeV: half of an overlapped pair
};

// A pipeline schedule laid out in time, rank by rank (TimePipeline, training/estimate.h).
struct PipelineTimeline {
    int microbatches = 0;                          // replayed: enough for fill, steady state and drain
    int step_microbatches = 0;                     // of the step, whose steady state repeats what the replay shows
    int bottleneck_stage = 0;                      // the estimate's
    double end = 0;                                // seconds: when the last rank finishes the replayed microbatches
    std::vector<std::vector<PipelineSpan>> ranks;  // per pipeline rank, in the order it runs them
    double Idle(int rank) const;                   // end less the rank's steps
};

// The schedule of `p` (p.microbatches() of them) replayed, chunk (stage, c) taking times[stage * p.active_vstages()
// + c]; `spans`, when given, gets every rank's steps in time. Throws sc::Error if the steps cannot all run (a
// schedule that waits on itself), which no schedule of schedule.h does.
PipelineReplayTimes ReplayPipelineTimes(const ParallelConfig& p, const std::vector<ChunkTimes>& times,
                                        std::vector<std::vector<PipelineSpan>>* spans = nullptr);
// When the last rank finishes.
inline double ReplayPipeline(const ParallelConfig& p, const std::vector<ChunkTimes>& times) {
    return ReplayPipelineTimes(p, times).end;
}

}  // namespace sc
