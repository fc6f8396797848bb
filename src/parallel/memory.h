// Memory per GPU on one pipeline stage: weights, gradients and optimizer state (sharded per ZeRO
// stage) and activations, with the number of microbatches in flight taken from the schedule itself.
#pragma once
#include "parallel/job.h"

namespace sc {

struct StageMemory {
    double params = 0;   // parameters this rank holds before ZeRO sharding (after TP/EP/PP splits)
    double weights = 0;  // bytes; ZeRO-3 adds two gathered blocks (current + prefetch)
    double gradients = 0;
    double optimizer = 0;
    double activations = 0;  // peak over the schedule, plus what recomputing one block brings back
    int peak_inflight = 0;   // microbatch-chunks whose activations are alive at the peak
    // In host memory, not in total(): the activations CPU offloading holds there (ParallelConfig::offload_layers).
    double host_activations = 0;
    double total() const { return weights + gradients + optimizer + activations; }
};

// Activation bytes one microbatch leaves alive for the backward pass of `block` under `recompute`.
double SavedActivationBytes(const Job& job, const Block& block, Recompute recompute);

StageMemory StageMemoryOf(const Job& job, int stage);

}  // namespace sc
