// Transformer Engine's CPU activation offloading, as Megatron-Core runs it (--cpu-offloading-num-layers N;
// ParallelConfig::offload_layers): the saved activations of the first N of a rank's L transformer layers go to host
// memory during the forward and come back during the backward, on one copy stream beside the compute. Its default
// synchronization (NVIDIA/TransformerEngine transformer_engine/pytorch/cpu_offload.py @00382b9,
// OffloadSynchronizer._default_offload_sync_init, fwd_step, bwd_step, _start_reloads_finish_offloads):
//   - layer i < N is copied out after its forward, behind the copies queued before it (the stream is one queue);
//   - the forward of layer L - N + i waits until layer i's copy out has finished, which frees its GPU memory;
//   - layer i's copy in starts when the backward reaches layer L - 1 - N + i (the stream waits for the compute
//     queued before that point, and for the copies before it);
//   - the backward of layer i waits for its copy in.
// So at most L - N layers' activations are on the GPU at once (TE: "peak memory usage of saving activations is
// (num_layers - num_offloaded_layers) * T").
// Simplifications, stated: a layer's copy out starts when its forward ends (TE starts each tensor as soon as it is
// saved, so a little earlier), every saved tensor of a layer goes (TE skips tensors under 2^20 elements: norms'
// statistics, a few MB at most), and the copies take no HBM bandwidth or SMs from the compute (copy engines; the
// host link's rate is a few percent of HBM's).
#pragma once
#include <span>

namespace sc {

// The schedule's two rules, for layer k of a rank's L with the first N offloaded (the walks below and the traces'
// copy nodes, trace/stage_program.cpp, read them): the layer whose copy out must have finished before layer k's
// forward, and the layer whose copy in starts before layer k's backward; -1 for none.
inline int OffloadDoneBeforeForward(int k, int L, int N) {
    const int j = k - (L - N);
    return j >= 0 && j < N ? j : -1;
}
inline int OffloadReloadBeforeBackward(int k, int L, int N) {
    const int j = k - (L - 1 - N);
    return j >= 0 && j < N ? j : -1;
}

// The most layer activation bytes on the GPU at once over one microbatch's forward and backward under that
// schedule; `bytes[l]` is layer l's saved activations (forward order), the first `offloaded` of them offloaded.
// With offloaded = 0, the sum of all.
double OffloadResidentPeak(std::span<const double> bytes, int offloaded);

// One transformer layer on one rank, one microbatch: its forward and backward seconds (what the compute stream
// runs) and its saved activation bytes.
struct OffloadLayer {
    double fwd = 0, bwd = 0, bytes = 0;
};

// The host link's rates, bytes per second (device to host, host to device).
struct OffloadRates {
    double out = 0, in = 0;
};

// One microbatch's forward and backward through `layers` with the first `offloaded` offloaded: the seconds the
// compute waits for the copies (0 when every copy hides behind compute). `gap`: the compute between the last layer's
// forward and its backward (the loss head's forward and backward).
double OffloadWaitSeconds(std::span<const OffloadLayer> layers, int offloaded, double gap, OffloadRates rates);

}  // namespace sc
