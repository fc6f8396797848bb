// A walk of Transformer Engine's offload schedule (offload_schedule.h), layer by layer: which layers' activations
// are on the GPU at each step, and when the copy stream lets the compute go on.
#include "parallel/offload_schedule.h"

#include <algorithm>
#include <vector>

namespace sc {

double OffloadResidentPeak(std::span<const double> bytes, int offloaded) {
    const int L = static_cast<int>(bytes.size()), N = std::clamp(offloaded, 0, std::max(0, L - 1));
    double peak = 0, resident = 0;
    // Forward: layer k's activations join; before layer k runs, the copy of layer k - (L - N) has finished and left.
    for (int k = 0; k < L; ++k) {
        if (const int j = OffloadDoneBeforeForward(k, L, N); j >= 0) resident -= bytes[j];
        resident += bytes[k];
        peak = std::max(peak, resident);
    }
    // Backward, from the last layer: before layer k's backward the copy of layer k - (L - 1 - N) comes back in; after
    // its backward layer k's activations are freed.
    for (int k = L - 1; k >= 0; --k) {
        if (const int j = OffloadReloadBeforeBackward(k, L, N); j >= 0) resident += bytes[j];
        peak = std::max(peak, resident);
        resident -= bytes[k];
    }
    return peak;
}

double OffloadWaitSeconds(std::span<const OffloadLayer> layers, int offloaded, double gap, OffloadRates rates) {
    const int L = static_cast<int>(layers.size()), N = std::clamp(offloaded, 0, L - 1);
    if (N <= 0) return 0;
    double t = 0, busy = 0, waited = 0;  // compute clock, copy stream free at, the compute's waits
    auto wait_for = [&](double ready) {
        if (ready > t) waited += ready - t, t = ready;
    };
    std::vector<double> out_done(N), in_done(N);
    for (int k = 0; k < L; ++k) {
        if (const int j = OffloadDoneBeforeForward(k, L, N); j >= 0) wait_for(out_done[j]);
        t += layers[k].fwd;
        if (k < N) busy = out_done[k] = std::max(busy, t) + layers[k].bytes / rates.out;
    }
    t += gap;
    for (int k = L - 1; k >= 0; --k) {
        if (const int j = OffloadReloadBeforeBackward(k, L, N); j >= 0)
            busy = in_done[j] = std::max(busy, t) + layers[j].bytes / rates.in;
        if (k < N) wait_for(in_done[k]);
        t += layers[k].bwd;
    }
    return waited;
}

}  // namespace sc
