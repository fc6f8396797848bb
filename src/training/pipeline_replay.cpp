#include "training/pipeline_replay.h"

#include <algorithm>
#include <string>

#include "config/error.h"
#include "parallel/schedule.h"

namespace sc {

double PipelineTimeline::Idle(int rank) const {
    double busy = 0;
    for (const PipelineSpan& sp : ranks.at(static_cast<size_t>(rank))) busy += sp.end - sp.start;
    return end - busy;
}

PipelineReplayTimes ReplayPipelineTimes(const ParallelConfig& p, const std::vector<ChunkTimes>& times,
                                        std::vector<std::vector<PipelineSpan>>* spans) {
    const int pp = p.pp, V = p.active_vstages(), S = p.pipeline_positions(), M = p.microbatches();
    if (static_cast<int>(times.size()) != pp * V)
        throw Error("pipeline replay",
                    std::to_string(times.size()) + " chunk times for " + std::to_string(pp * V) + " chunks");
    std::vector<std::vector<PipelineStep>> steps(pp);
    for (int s = 0; s < pp; ++s) steps[s] = PipelineSchedule(p, s);
    if (spans) {
        spans->assign(pp, {});
        for (int s = 0; s < pp; ++s) (*spans)[s].reserve(steps[s].size());
    }
    // When the forward, and the backward or its input half, of (position, microbatch) finished; -1: not yet.
    std::vector<double> forward_done(static_cast<size_t>(S) * M, -1), input_done(static_cast<size_t>(S) * M, -1);
    auto at = [&](int g, int m) { return static_cast<size_t>(g) * M + m; };
    std::vector<size_t> next(pp, 0);
    std::vector<double> clock(pp, 0), busy(pp, 0);
    std::vector<char> in_pair(pp, 0);  // the rank's last step was a paired forward: its next, a backward, pairs
    size_t left = 0;
    for (const auto& s : steps) left += s.size();
    // Round after round every rank runs what it can; a round in which none runs is a schedule waiting on itself.
    while (left > 0) {
        size_t ran = 0;
        for (int s = 0; s < pp; ++s) {
            for (; next[s] < steps[s].size(); ++next[s], ++ran) {
                const PipelineStep& st = steps[s][next[s]];
                const int g = PositionOf(p, st.chunk, s), m = st.microbatch;
                const ChunkTimes& t = times[static_cast<size_t>(s) * V + st.chunk];
                double ready = clock[s], took;
                if (st.forward) {
                    if (g > 0 && forward_done[at(g - 1, m)] < 0) break;
                    if (g > 0) ready = std::max(ready, forward_done[at(g - 1, m)]);
                    took = st.paired ? t.paired_forward : t.forward;
                } else if (st.weight) {
                    if (input_done[at(g, m)] < 0) break;
                    ready = std::max(ready, input_done[at(g, m)]);
                    took = t.weight;
                } else {
                    if (forward_done[at(g, m)] < 0 || (g < S - 1 && input_done[at(g + 1, m)] < 0)) break;
                    ready = std::max(ready, forward_done[at(g, m)]);
                    if (g < S - 1) ready = std::max(ready, input_done[at(g + 1, m)]);
                    took = in_pair[s] ? t.paired_backward : st.split ? t.input : t.input + t.weight;
                }
                const bool paired = st.forward ? st.paired : in_pair[s] != 0;
                in_pair[s] = st.forward && st.paired;
                clock[s] = ready + took;
                busy[s] += took;
                if (spans) {
                    const char pass = st.forward ? 'F' : st.weight ? 'W' : st.split ? 'I' : 'B';
                    (*spans)[s].push_back({ready, clock[s], m, st.chunk, pass, paired});
                }
                if (st.forward) forward_done[at(g, m)] = clock[s];
                else if (!st.weight) input_done[at(g, m)] = clock[s];  // the gradient position g - 1 waits for
            }
        }
        if (ran == 0) throw Error("pipeline replay", "the schedule's steps wait on each other");
        left -= ran;
    }
    return {*std::max_element(clock.begin(), clock.end()), busy};
}

}  // namespace sc
