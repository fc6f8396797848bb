// Pipeline schedules (the order of forward and backward passes on one stage) and the split of
// layers over (virtual) stages.
#pragma once
#include <vector>

#include "parallel/parallel_config.h"

namespace sc {

struct PipelineStep {
    bool forward;
    int microbatch;
    int chunk;  // model chunk on this stage (interleaved 1F1B); 0 otherwise
};

// GPipe (Huang et al. 2019): all forwards, then all backwards. 1F1B (PipeDream-Flush, Narayanan et al.
// 2021): pp-stage-1 warm-up forwards, then one forward one backward. Interleaved 1F1B: Megatron-LM's
// forward_backward_pipelining_with_interleaving (chunk and microbatch of the k-th pass computed alike).
std::vector<PipelineStep> PipelineSchedule(const ParallelConfig& p, int stage);

// Layers [first, first + count) of virtual stage g = chunk * pp + stage (0 .. pp*chunks-1).
// Even split when it divides; with uneven=1 the remaining layers go to the middle stages first, so the
// first stage (embedding) and last stage (head and loss) carry fewer layers.
struct LayerRange {
    int first = 0;
    int count = 0;
};
LayerRange LayersOfVirtualStage(const ParallelConfig& p, int layers, int virtual_stage);

}  // namespace sc
