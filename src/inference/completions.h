// What a serving run completed: every request's latencies into bounded histograms (latency_histogram.h), its SLO,
// its tokens, and a request's samples (Workload::samples) until the last of them completes. A request's TTFT is its
// first sample's first token (what a streaming client sees first), its end its last sample's completion, its TPOT
// the mean of its samples' (each (completion - first token) / (output - 1), samples of one token left out); without
// samples a request is its one sequence.
#pragma once
#include <unordered_map>

#include "inference/engine.h"
#include "inference/latency_histogram.h"
#include "inference/serving_config.h"
#include "inference/wait_queue.h"

namespace sc {

class Completions {
public:
    // `frontend`: seconds outside the engine added to every request's TTFT and end-to-end latency
    // (EngineConfig::frontend_s).
    Completions(const SloTargets& slo, double frontend) : slo_(slo), frontend_(frontend) {}
    // A request of `samples` > 1 sequences begins; `group` is ServedRequest::group of each.
    void BeginGroup(long long group, double arrival, int input, int samples) {
        groups_.emplace(group, Group{arrival, -1, 0, 0, input, samples});
    }
    // A sequence's first token at `now`.
    void FirstToken(const ServedRequest& q, double now);
    // A sequence completes at `now`. True when its request completed with it (its client may send the next).
    bool Complete(const ServedRequest& q, double now);
    long long completed() const { return completed_; }
    // Completed requests, the run's duration (its last completion), latencies, rates (per GPU over r.gpus, which the
    // caller sets first), SLO attainment and goodput, and the sequences' latencies summed for Little's law.
    void Fill(ServingResult& r) const;

private:
    struct Group {  // a request's samples in the system, or one sequence's request as it completes
        double arrival = 0, first_token = -1, tpot_sum = 0;
        int tpot_n = 0, input = 0, left = 1;
    };
    void RequestDone(const Group& g, double now);

    SloTargets slo_;
    double frontend_ = 0;
    std::unordered_map<long long, Group> groups_;  // requests of several samples, until the last completes
    LatencyHistogram ttft_, tpot_, e2e_;
    long long completed_ = 0, slo_met_ = 0;
    double in_tokens_ = 0, out_tokens_ = 0, sum_e2e_ = 0, last_ = 0;
};

}  // namespace sc
