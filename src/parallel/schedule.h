// Pipeline schedules (the order of forward and backward passes on one stage) and the split of
// layers over (virtual) stages.
#pragma once
#include <algorithm>
#include <functional>
#include <vector>

#include "parallel/parallel_config.h"

namespace sc {

struct PipelineStep {
    bool forward;
    int microbatch;
    int chunk;  // model chunk on this stage (interleaved 1F1B; DualPipe: 0 fed from rank 0, 1 from rank pp-1;
                // a V: 0 the way down, 1 the way back up)
    // Backward steps of a split schedule (zbh1, zbv, part of DualPipe's and DualPipeV's): `weight` is the
    // weight-gradient half (W);
    // a backward step with `split` is the input-gradient half (B) whose W comes later as a step of its own.
    // Otherwise a backward step runs the whole backward.
    bool weight = false;
    bool split = false;
    // DualPipe, DualPipeV, and 1F1B's steady state under a2a_overlap: this forward and the backward step after it
    // run as one overlapped pair (F&B), each chunk's all-to-all beside the other's compute.
    bool paired = false;
};
// Whether the schedule runs forwards and backwards as overlapped pairs (PipelineStep::paired): DualPipe's and
// DualPipeV's F&B, and Megatron-Core's combined 1F1B (ParallelConfig::a2a_overlap).
inline bool PairsChunks(const ParallelConfig& p) {
    return p.schedule == Schedule::dualpipe || p.schedule == Schedule::dualpipev || p.a2a_overlap;
}
// Warm-up forwards before the steady state that Megatron-Core's combined 1F1B adds (one; schedules.py,
// get_pp_rank_microbatches), 0 otherwise.
inline int ExtraWarmupForwards(const ParallelConfig& p) { return p.a2a_overlap ? 1 : 0; }
inline bool SplitsBackward(const ParallelConfig& p) {
    return (p.schedule == Schedule::zbh1 || p.schedule == Schedule::zbv || p.schedule == Schedule::interleaved_zb) &&
           p.pp > 1;
}

// The layer range (pipeline position, 0 .. pipeline_positions()-1) that chunk `chunk` of `stage` runs:
// chunk * pp + stage when interleaved; DualPipe's chunk 1 is stage pp-1-stage of the pipeline fed from the
// last rank; a V's (ZB-V, DualPipeV) chunk 1 is position 2*pp-1-stage, the way back.
inline int PositionOf(const ParallelConfig& p, int chunk, int stage) {
    if (p.schedule == Schedule::dualpipe) return chunk == 0 ? stage : p.pp - 1 - stage;
    if (p.v_shape()) return chunk == 0 ? stage : 2 * p.pp - 1 - stage;
    return chunk * p.pp + stage;
}
// The neighbour (+1 next rank, -1 previous rank) a chunk's forward activations go to; its gradients come back
// from there.
inline int ForwardPeer(const ParallelConfig& p, int chunk) {
    return (p.schedule == Schedule::dualpipe || p.v_shape()) && chunk == 1 ? -1 : +1;
}
// Whether positions g and g + 1 are on one rank (a V's turn at rank pp-1): the activations and their gradient
// stay in its memory, no pipeline transfer.
inline bool SameRankAfter(const ParallelConfig& p, int g) { return p.v_shape() && g == p.pp - 1; }

// DualPipe's order on `stage` (deepseek-ai/DualPipe, DualPipe.step, its eight phases), handed to f one step at
// a time; defined in schedule.cpp.
void ForEachDualPipeStep(const ParallelConfig& p, int stage, const std::function<void(const PipelineStep&)>& f);
// ZB-V's order on `stage` (PyTorch's ScheduleZBVZeroBubble._calculate_single_rank_operations), likewise.
void ForEachZbvStep(const ParallelConfig& p, int stage, const std::function<void(const PipelineStep&)>& f);
// DualPipeV's order on `stage` (deepseek-ai/DualPipe, DualPipeV.step, its eight phases), likewise.
void ForEachDualPipeVStep(const ParallelConfig& p, int stage, const std::function<void(const PipelineStep&)>& f);
// PyTorch's ScheduleInterleavedZeroBubble order on `stage` (interleaved_zb), likewise.
void ForEachInterleavedZbStep(const ParallelConfig& p, int stage, const std::function<void(const PipelineStep&)>& f);

// GPipe (Huang et al. 2019): all forwards, then all backwards. 1F1B (PipeDream-Flush, Narayanan et al.
// 2021): pp-stage-1 warm-up forwards, then one forward one backward. Interleaved 1F1B: Megatron-LM's
// forward_backward_pipelining_with_interleaving (chunk and microbatch of the k-th pass computed alike).
std::vector<PipelineStep> PipelineSchedule(const ParallelConfig& p, int stage);

// The same steps, handed to f(const PipelineStep&) one by one without building the vector (memory's hot path).
template <class F>
void ForEachPipelineStep(const ParallelConfig& p, int stage, F&& f) {
    const int M = p.microbatches();
    if (p.schedule == Schedule::dualpipe) {
        ForEachDualPipeStep(p, stage, f);
        return;
    }
    if (p.schedule == Schedule::zbv && p.pp > 1) {
        ForEachZbvStep(p, stage, f);
        return;
    }
    if (p.schedule == Schedule::dualpipev) {
        ForEachDualPipeVStep(p, stage, f);
        return;
    }
    if (p.schedule == Schedule::interleaved_zb && p.pp > 1) {
        ForEachInterleavedZbStep(p, stage, f);
        return;
    }
    // One stage (pp = 1) is plain gradient accumulation whatever the schedule: each microbatch's forward
    // then its backward, one microbatch's activations alive at a time (the 1F1B branch with no warm-up).
    if (p.schedule == Schedule::gpipe && p.pp > 1) {
        for (int m = 0; m < M; ++m) f(PipelineStep{true, m, 0});
        for (int m = 0; m < M; ++m) f(PipelineStep{false, m, 0});
        return;
    }
    if (SplitsBackward(p)) {
        // ZB-H1: 1F1B's forwards and input-gradient halves; stage s runs the weight half of microbatch j
        // right after the input half of microbatch j + s (s steps late), and the rest at the end.
        const int warmup = std::min(p.pp - stage - 1, M), lag = stage;
        int fw = 0, bw = 0, ww = 0;
        auto backward = [&] {
            f(PipelineStep{false, bw++, 0, false, true});
            if (bw - ww > lag) f(PipelineStep{false, ww++, 0, true});
        };
        for (; fw < warmup; ++fw) f(PipelineStep{true, fw, 0});
        while (fw < M) {
            f(PipelineStep{true, fw++, 0});
            backward();
        }
        while (bw < M) backward();
        while (ww < M) f(PipelineStep{false, ww++, 0, true});
        return;
    }
    // Under a2a_overlap (pp = 1 here) each steady-state forward runs paired with the backward after it.
    if (p.schedule == Schedule::one_f_one_b || p.schedule == Schedule::zbh1) {
        const int warmup = std::min(p.pp - stage - 1 + ExtraWarmupForwards(p), M);
        int fw = 0, bw = 0;
        for (; fw < warmup; ++fw) f(PipelineStep{true, fw, 0});
        while (fw < M) {
            PipelineStep st{true, fw++, 0};
            st.paired = p.a2a_overlap;
            f(st);
            f(PipelineStep{false, bw++, 0});
        }
        while (bw < M) f(PipelineStep{false, bw++, 0});
        return;
    }
    // Interleaved: the k-th forward runs chunk (k / pp) % v on microbatch (k / (pp*v)) * pp + k % pp;
    // the k-th backward the mirror chunk v-1-(k / pp) % v.
    const int v = p.vstages, pp = p.pp, total = M * v;
    auto mb = [&](int k) { return (k / (pp * v)) * pp + k % pp; };
    auto chunk = [&](int k, bool fwd) {
        int c = (k % (pp * v)) / pp;
        return fwd ? c : v - 1 - c;
    };
    const int warmup = std::min((pp - stage - 1) * 2 + (v - 1) * pp + ExtraWarmupForwards(p), total);
    int fw = 0, bw = 0;
    for (; fw < warmup; ++fw) f(PipelineStep{true, mb(fw), chunk(fw, true)});
    while (fw < total) {
        PipelineStep st{true, mb(fw), chunk(fw, true)};
        st.paired = p.a2a_overlap;
        f(st);
        ++fw;
        f(PipelineStep{false, mb(bw), chunk(bw, false)});
        ++bw;
    }
    for (; bw < total; ++bw) f(PipelineStep{false, mb(bw), chunk(bw, false)});
}

// Largest sum of chunk_act[chunk] over the forwards whose backward has not run yet, over the schedule of
// `stage`, and how many were in flight then (the first time it is reached; 0 when nothing is ever alive).
// Equal to walking ForEachPipelineStep, in O(pp * vstages) instead of O(microbatches * vstages): the
// interleaved steady state repeats with period pp * vstages.
struct InFlightPeak {
    double bytes = 0;
    int inflight = 0;
};
InFlightPeak PeakInFlight(const ParallelConfig& p, int stage, const double* chunk_act);

// Layers [first, first + count) of pipeline position g (0 .. pipeline_positions()-1; PositionOf).
// Even split when it divides; with uneven=1 the remaining layers go to the middle stages first, so the
// first stage (embedding) and last stage (head and loss) carry fewer layers; with a layout, the layout's.
struct LayerRange {
    int first = 0;
    int count = 0;
};
LayerRange LayersOfVirtualStage(const ParallelConfig& p, int layers, int virtual_stage);

}  // namespace sc
