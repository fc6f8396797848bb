#include "parallel/schedule.h"

#include <algorithm>
#include <deque>

namespace sc {

namespace {

// The eight phases DualPipe.step and DualPipeV.step share (deepseek-ai/DualPipe), handed to f. The repository's
// two "phases" are its two chunks of a rank; `chunk[phase]` says which of ours each is. `n` ranks lie along the way
// a microbatch enters by (pp/2 under DualPipe, pp under DualPipeV), this rank `h` steps from where it enters; a
// way carries `rounds` microbatches, chunk c's k-th being first[c] + k; `apart`: this rank runs its first steady
// pair apart (less bubble). F a forward, B a whole backward, B(zb) its input half with the weight half queued, W
// the oldest queued weight half (WeightGradStore's FIFO); a forward marked paired runs with the backward after it.
struct DualPipeRank {
    int n = 0, h = 0, rounds = 0;
    bool apart = false;
    int chunk[2] = {0, 1};
    int first[2] = {0, 0};
};

void RunDualPipePhases(const DualPipeRank& q, const std::function<void(const PipelineStep&)>& f) {
    const int n = q.n, h = q.h;
    int fw[2] = {0, 0}, bw[2] = {0, 0};
    std::deque<PipelineStep> queued;  // deferred weight halves, oldest first
    auto F = [&](int phase, bool paired) {
        const int c = q.chunk[phase];
        PipelineStep st{true, q.first[c] + fw[c]++, c};
        st.paired = paired;
        f(st);
    };
    auto B = [&](int phase, bool zb) {
        const int c = q.chunk[phase];
        PipelineStep st{false, q.first[c] + bw[c]++, c};
        st.split = zb;
        f(st);
        if (zb) queued.push_back(PipelineStep{false, st.microbatch, c, true});
    };
    auto W = [&] {
        f(queued.front());
        queued.pop_front();
    };
    for (int i = 0; i < 2 * (n - h - 1); ++i) F(0, false);             // 1: nF0
    for (int i = 0; i < h + 1; ++i) F(0, false), F(1, false);          // 2: nF0F1
    for (int i = 0; i < n - h - 1; ++i) B(1, true), W(), F(1, false);  // 3: nB1W1F1
    for (int i = 0; i < q.rounds - 2 * n + h + 1; ++i) {               // 4: nF0B1F1B0, the steady state of pairs
        F(0, !(i == 0 && q.apart)), B(1, false);
        F(1, true), B(0, false);
    }
    for (int i = 0; i < n - h - 1; ++i) B(1, false), F(1, true), B(0, false);  // 5: nB1F1B0
    bool zb = false;
    for (int i = 0; i < h + 1; ++i) {  // 6: nB1B0, the second half zero-bubble
        if (i == (h + 1) / 2 && h % 2 == 1) zb = true;
        B(1, zb);
        if (i == (h + 1) / 2 && h % 2 == 0) zb = true;
        B(0, zb);
    }
    for (int i = 0; i < n - h - 1; ++i) W(), B(0, true);  // 7: nWB0
    while (!queued.empty()) W();                          // 8: nW
}

}  // namespace

// DualPipe as DualPipe.step issues it. The repository's "phase 0" is the direction fed from rank 0 on the first half
// of the ranks and the other one on the second half (phase ^= is_in_second_half); here chunk 0 is always the
// direction fed from rank 0, and runs microbatches 0 .. M/2-1, chunk 1 the rest. The middle ranks run their first
// pair apart.
void ForEachDualPipeStep(const ParallelConfig& p, int stage, const std::function<void(const PipelineStep&)>& f) {
    DualPipeRank q;
    q.n = p.pp / 2, q.h = std::min(stage, p.pp - 1 - stage), q.rounds = p.microbatches() / 2;
    q.apart = stage == q.n - 1 || stage == q.n;
    if (stage >= q.n) q.chunk[0] = 1, q.chunk[1] = 0;
    q.first[1] = q.rounds;
    RunDualPipePhases(q, f);
}

// DualPipeV as DualPipeV.step issues it on rank `stage` of pp: chunk 0 is position stage (the way down), chunk 1
// position 2*pp-1-stage (the way back up); every microbatch enters at rank 0 and passes both. The last rank, where
// the V turns, runs its first pair apart.
void ForEachDualPipeVStep(const ParallelConfig& p, int stage, const std::function<void(const PipelineStep&)>& f) {
    DualPipeRank q;
    q.n = p.pp, q.h = stage, q.rounds = p.microbatches();
    q.apart = stage == p.pp - 1;
    RunDualPipePhases(q, f);
}

// ZB-V (Qi et al. 2024, Sec. 6), in the order PyTorch's ScheduleZBVZeroBubble gives rank `stage` of pp: chunk 0 is
// position stage (the way down), chunk 1 position 2*pp-1-stage (the way up). F a forward, I a backward's input half,
// W its weight half. Warm-up: 2(pp-stage)-1 F0; stage times F1 F0; pp-stage times F1 I1 W1. Steady: F0 (while
// microbatches remain) I0 W0 F1 I1 W1 until chunk 1 has caught up. Cool-down: stage times I0 I1; pp-stage times I0
// and the oldest W0; then the W1 and W0 left. PyTorch builds it for max(2*pp-1, M) microbatches and drops the steps
// of those beyond M; so does this.
void ForEachZbvStep(const ParallelConfig& p, int stage, const std::function<void(const PipelineStep&)>& f) {
    const int M = p.microbatches(), pp = p.pp, n = std::max(2 * pp - 1, M);
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    auto step = [&](int chunk, int mb, bool forward, bool weight) {
        if (mb >= M) return;
        PipelineStep st{forward, mb, chunk};
        if (!forward) st.weight = weight, st.split = !weight;
        f(st);
    };
    auto F = [&](int chunk) { step(chunk, chunk == 0 ? f0++ : f1++, true, false); };
    for (int i = 0; i < 2 * (pp - stage) - 1; ++i) F(0);
    for (int i = 0; i < stage; ++i) F(1), F(0);
    for (int i = 0; i < pp - stage; ++i) F(1), step(1, b1, false, false), step(1, b1, false, true), ++b1;
    while (f1 < f0 || f0 < n) {
        if (f0 < n) F(0);
        step(0, b0, false, false), step(0, b0, false, true), ++b0;
        F(1);
        step(1, b1, false, false), step(1, b1, false, true), ++b1;
    }
    int w0 = b0, w1 = b1;
    for (int i = 0; i < stage; ++i) step(0, b0++, false, false), step(1, b1++, false, false);
    for (int i = 0; i < pp - stage; ++i) step(0, b0++, false, false), step(0, w0++, false, true);
    while (w1 < b1) step(1, w1++, false, true);
    while (w0 < b0) step(0, w0++, false, true);
}

// PyTorch's ScheduleInterleavedZeroBubble (torch.distributed.pipelining, _get_1f1b_rank_ops with
// enable_zero_bubble), for M a multiple of pp (one round of pp microbatches): rank `stage`'s k-th forward runs chunk
// (k / pp) % v, its k-th input half chunk v-1 - ((k - warm) / pp) % v, each chunk's microbatches in order; warm =
// (v-1) pp + pp-1-stage forwards first; then each op a forward and an input half and, from op `stage` on, the weight
// half of the oldest input half not yet weighed; then the input halves left, the same way; then the weight halves.
void ForEachInterleavedZbStep(const ParallelConfig& p, int stage, const std::function<void(const PipelineStep&)>& f) {
    const int pp = p.pp, v = p.vstages, total = p.microbatches() * v;
    const int warm = std::min((v - 1) * pp + pp - 1 - stage, total);
    std::vector<int> fw(v, 0), bw(v, 0), ww(v, 0);
    std::deque<int> unweighed;  // chunks of the input halves run, oldest first, whose weight half is still to run
    auto F = [&](int k) {
        const int c = (k / pp) % v;
        f(PipelineStep{true, fw[c]++, c});
    };
    auto I = [&](int k) {
        const int c = v - 1 - ((k - warm) / pp) % v;
        PipelineStep st{false, bw[c]++, c};
        st.split = true;
        f(st);
        unweighed.push_back(c);
    };
    auto W = [&] {
        const int c = unweighed.front();
        unweighed.pop_front();
        f(PipelineStep{false, ww[c]++, c, true});
    };
    for (int k = 0; k < warm; ++k) F(k);
    for (int k = warm; k < total + warm; ++k) {
        if (k < total) F(k);
        I(k);
        if (k - warm >= stage) W();
    }
    while (!unweighed.empty()) W();
}

std::vector<PipelineStep> PipelineSchedule(const ParallelConfig& p, int stage) {
    std::vector<PipelineStep> steps;
    steps.reserve(3 * static_cast<size_t>(p.microbatches()) * p.active_vstages());
    ForEachPipelineStep(p, stage, [&](const PipelineStep& s) { steps.push_back(s); });
    return steps;
}

InFlightPeak PeakInFlight(const ParallelConfig& p, int stage, const double* chunk_act) {
    const int M = p.microbatches();
    InFlightPeak peak;
    if (p.schedule == Schedule::dualpipe || p.schedule == Schedule::dualpipev ||
        ((p.schedule == Schedule::zbv || p.schedule == Schedule::interleaved_zb) && p.pp > 1)) {
        // Walked step by step (O(microbatches)): a forward's activations live until its whole backward or,
        // split, its weight half (counted whole, as for ZB-H1).
        double alive = 0;
        int n = 0;
        ForEachPipelineStep(p, stage, [&](const PipelineStep& st) {
            if (st.forward) alive += chunk_act[st.chunk], ++n;
            else if (st.weight || !st.split) alive -= chunk_act[st.chunk], --n;
            if (alive > peak.bytes) peak.bytes = alive, peak.inflight = n;
        });
        return peak;
    }
    if (p.active_vstages() == 1) {
        // GPipe over stages: all forwards first. 1F1B (and any schedule on one stage, plain gradient
        // accumulation): pp-stage-1 warm-up forwards, then each steady-state forward tops it up to pp-stage.
        // ZB-H1 keeps a microbatch's activations until its weight half, `stage` steps later: pp on every
        // stage, 1F1B's first-stage peak (counted whole; the input half frees what only it needed).
        const int n = p.schedule == Schedule::gpipe && p.pp > 1 ? M
                      : SplitsBackward(p)                       ? std::min(p.pp, M)
                                                                : std::min(p.pp - stage + ExtraWarmupForwards(p), M);
        if (n > 0 && chunk_act[0] > 0) peak.bytes = n * chunk_act[0], peak.inflight = n;
        return peak;
    }
    // Interleaved: forward k runs chunk (k % P) / pp, backward k chunk v-1 - (k % P) / pp, P = pp*v. Both
    // sequences are runs of pp equal chunks and add every chunk pp times per period, so the alive bytes
    // after the warm-up repeat with period P; within a stretch where neither the forward nor the backward
    // chunk changes they move linearly, so each stretch peaks at one of its ends.
    const int v = p.vstages, pp = p.pp, P = pp * v, total = M * v;
    const int warmup = std::min((pp - stage - 1) * 2 + (v - 1) * pp + ExtraWarmupForwards(p), total);
    // Chunks of equal size (every stage but the ends when the layers divide evenly): each steady-state pair
    // adds and frees the same bytes, so the peak is the warm-up plus one forward. Same value as the walk below.
    if (std::all_of(chunk_act + 1, chunk_act + v, [&](double a) { return a == chunk_act[0]; })) {
        const int n = warmup + (total > warmup ? 1 : 0);
        if (n > 0 && chunk_act[0] > 0) peak.bytes = n * chunk_act[0], peak.inflight = n;
        return peak;
    }
    double period = 0;
    for (int c = 0; c < v; ++c) period += pp * chunk_act[c];
    // Warm-up: forwards only, the running sum only grows (every chunk holds at least one layer).
    double cur = (warmup / P) * period;
    for (int k = (warmup / P) * P; k < warmup;) {
        const int c = (k % P) / pp, run = std::min(pp - k % pp, warmup - k);
        cur += run * chunk_act[c];
        k += run;
    }
    if (warmup > 0 && cur > 0) peak.bytes = cur, peak.inflight = warmup;
    // Steady state: pair i is forward warmup+i then backward i; one period of pairs holds every value.
    const int pairs = std::min(total - warmup, P);
    if (pairs <= 0) return peak;
    double after_fwd = cur + chunk_act[(warmup % P) / pp];  // alive bytes after the forward of pair 0
    for (int i = 0; i < pairs;) {
        const int f = warmup + i;
        const int len = std::min({pp - f % pp, pp - i % pp, pairs - i});
        const double fa = chunk_act[(f % P) / pp], ba = chunk_act[v - 1 - (i % P) / pp];
        const double delta = fa - ba;  // change from one pair's post-forward value to the next, in this stretch
        const double last = after_fwd + (len - 1) * delta;
        if (after_fwd > peak.bytes) peak.bytes = after_fwd, peak.inflight = warmup + 1;
        if (last > peak.bytes) peak.bytes = last, peak.inflight = warmup + 1;
        i += len;
        if (i < pairs) after_fwd = last - ba + chunk_act[((warmup + i) % P) / pp];
    }
    return peak;
}

LayerRange LayersOfVirtualStage(const ParallelConfig& p, int layers, int g) {
    if (!p.layout.empty()) {  // Megatron's explicit layout (ValidateParallel checks it against the model)
        LayerRange r;
        for (int i = 0; i < g; ++i) r.first += p.layout[i];
        r.count = p.layout[g];
        return r;
    }
    const int S = p.pipeline_positions();
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
