#include "parallel/schedule.h"

#include <algorithm>

namespace sc {

std::vector<PipelineStep> PipelineSchedule(const ParallelConfig& p, int stage) {
    const int M = p.microbatches();
    std::vector<PipelineStep> steps;
    steps.reserve(2 * static_cast<size_t>(M) * p.chunks());
    if (p.schedule == Schedule::gpipe || p.pp == 1) {
        for (int m = 0; m < M; ++m) steps.push_back({true, m, 0});
        for (int m = 0; m < M; ++m) steps.push_back({false, m, 0});
        return steps;
    }
    if (p.schedule == Schedule::one_f_one_b) {
        int warmup = std::min(p.pp - stage - 1, M);
        int f = 0, b = 0;
        for (; f < warmup; ++f) steps.push_back({true, f, 0});
        while (f < M) {
            steps.push_back({true, f++, 0});
            steps.push_back({false, b++, 0});
        }
        while (b < M) steps.push_back({false, b++, 0});
        return steps;
    }
    // Interleaved: the k-th forward runs chunk (k / pp) % v on microbatch (k / (pp*v)) * pp + k % pp;
    // the k-th backward the mirror chunk v-1-(k / pp) % v.
    const int v = p.vstages, pp = p.pp, total = M * v;
    auto mb = [&](int k) { return (k / (pp * v)) * pp + k % pp; };
    auto chunk = [&](int k, bool fwd) {
        int c = (k % (pp * v)) / pp;
        return fwd ? c : v - 1 - c;
    };
    int warmup = std::min((pp - stage - 1) * 2 + (v - 1) * pp, total);
    int f = 0, b = 0;
    for (; f < warmup; ++f) steps.push_back({true, mb(f), chunk(f, true)});
    while (f < total) {
        steps.push_back({true, mb(f), chunk(f, true)});
        ++f;
        steps.push_back({false, mb(b), chunk(b, false)});
        ++b;
    }
    for (; b < total; ++b) steps.push_back({false, mb(b), chunk(b, false)});
    return steps;
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
    for (int i = 0; i < g; ++i) r.first += base + extra(i);
    r.count = base + extra(g);
    return r;
}

}  // namespace sc
