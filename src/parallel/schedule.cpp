#include "parallel/schedule.h"

#include <algorithm>

namespace sc {

std::vector<PipelineStep> PipelineSchedule(const ParallelConfig& p, int stage) {
    std::vector<PipelineStep> steps;
    steps.reserve(2 * static_cast<size_t>(p.microbatches()) * p.chunks());
    ForEachPipelineStep(p, stage, [&](const PipelineStep& s) { steps.push_back(s); });
    return steps;
}

InFlightPeak PeakInFlight(const ParallelConfig& p, int stage, const double* chunk_act) {
    const int M = p.microbatches();
    InFlightPeak peak;
    auto raise = [&](double bytes, int inflight) {
        if (bytes > peak.bytes) peak.bytes = bytes, peak.inflight = inflight;
    };
    if (p.chunks() == 1) {
        // GPipe: all forwards first. 1F1B: pp-stage-1 warm-up forwards, then the steady state's forward
        // tops it up to pp-stage before each backward. pp == 1 is plain gradient accumulation: one
        // microbatch alive at a time, whatever the schedule (ForEachPipelineStep runs it as 1F1B).
        const int n = p.schedule == Schedule::gpipe && p.pp > 1 ? M : std::min(p.pp - stage, M);
        double cur = 0;
        for (int i = 1; i <= n; ++i) cur += chunk_act[0], raise(cur, i);
        return peak;
    }
    // Interleaved: forward k runs chunk (k % P) / pp, backward k chunk v-1 - (k % P) / pp, P = pp*v; both
    // sequences add every chunk pp times per period, so after the warm-up the alive bytes repeat with period P.
    const int v = p.vstages, pp = p.pp, P = pp * v, total = M * v;
    const int warmup = std::min((pp - stage - 1) * 2 + (v - 1) * pp, total);
    auto fwd_chunk = [&](int k) { return (k % P) / pp; };
    auto bwd_chunk = [&](int k) { return v - 1 - (k % P) / pp; };
    double cur = 0;
    for (int k = 0; k < std::min(warmup, P); ++k) cur += chunk_act[fwd_chunk(k)], raise(cur, k + 1);
    if (warmup > P) {
        // Whole periods of the warm-up, then its remainder: the running sum only grows here.
        double period = 0;
        for (int k = 0; k < P; ++k) period += chunk_act[fwd_chunk(k)];
        const int periods = warmup / P;
        cur = periods * period;
        for (int k = periods * P; k < warmup; ++k) cur += chunk_act[fwd_chunk(k)];
        raise(cur, warmup);
    }
    // Steady state: forward warmup+i, then backward i; one period of pairs holds every value it reaches.
    const int pairs = std::min(total - warmup, P);
    for (int i = 0; i < pairs; ++i) {
        cur += chunk_act[fwd_chunk(warmup + i)];
        raise(cur, warmup + 1);
        cur -= chunk_act[bwd_chunk(i)];
    }
    return peak;
}

LayerRange LayersOfVirtualStage(const ParallelConfig& p, int layers, int g) {
    const int S = p.pp * p.chunks();
    const int base = layers / S, rem = layers % S;
    // Which virtual stages get one extra layer: 1, 2, ... (middle first), then 0 and S-1 if needed.
    auto extra = [&](int i) {
        if (rem == 0) return 0;
        if (S <= 2 || rem > S - 2) {
            // Not enough middle stages: fill from the middle outward, then the ends.
            int middle = std::min(rem, S - 2 > 0 ? S - 2 : 0);
            if (i >= 1 && i <= middle) return 1;
            int left = rem - middle;
            if (left >= 1 && i == 0) return 1;
            if (left >= 2 && i == S - 1) return 1;
            return 0;
        }
        return (i >= 1 && i <= rem) ? 1 : 0;
    };
    LayerRange r;
    if (rem == 0) r.first = g * base;
    else
        for (int i = 0; i < g; ++i) r.first += base + extra(i);
    r.count = base + extra(g);
    return r;
}

}  // namespace sc
