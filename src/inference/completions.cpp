#include "inference/completions.h"

namespace sc {

void Completions::FirstToken(const ServedRequest& q, double now) {
    if (q.group >= 0) {
        Group& g = groups_.at(q.group);
        if (g.first_token >= 0) return;
        g.first_token = now;
    }
    ttft_.Add(now - q.arrival + frontend_);
}

bool Completions::Complete(const ServedRequest& q, double now) {
    sum_e2e_ += now - q.arrival;  // Little's law on the sequences in the system
    out_tokens_ += q.output;
    last_ = now;
    const bool timed = q.output > 1;
    const double tpot = timed ? (now - q.first_token) / (q.output - 1) : 0;
    if (q.group < 0) {
        RequestDone({q.arrival, q.first_token, tpot, timed ? 1 : 0, q.input, 1}, now);
        return true;
    }
    const auto it = groups_.find(q.group);
    Group& g = it->second;
    if (timed) g.tpot_sum += tpot, ++g.tpot_n;
    if (--g.left > 0) return false;
    const Group done = g;
    groups_.erase(it);
    RequestDone(done, now);
    return true;
}

void Completions::RequestDone(const Group& g, double now) {
    const double ttft = g.first_token - g.arrival + frontend_;
    e2e_.Add(now - g.arrival + frontend_);
    bool met = slo_.ttft <= 0 || ttft <= slo_.ttft;
    if (g.tpot_n > 0) {
        const double tpot = g.tpot_sum / g.tpot_n;
        tpot_.Add(tpot);
        met = met && (slo_.tpot <= 0 || tpot <= slo_.tpot);
    }
    if (met) ++slo_met_;
    ++completed_;
    in_tokens_ += g.input;
}

void Completions::Fill(ServingResult& s) const {
    auto sum = [](const LatencyHistogram& h) {
        return LatencySummary{h.mean(), h.Quantile(0.5), h.Quantile(0.9), h.Quantile(0.99), h.min(), h.max()};
    };
    s.completed = completed_;
    s.duration = last_;
    s.ttft = sum(ttft_), s.tpot = sum(tpot_), s.e2e = sum(e2e_);
    if (s.duration > 0) {
        s.requests_per_s = completed_ / s.duration;
        s.input_tokens_per_s = in_tokens_ / s.duration;
        s.output_tokens_per_s = out_tokens_ / s.duration;
        s.output_tokens_per_s_per_gpu = s.output_tokens_per_s / s.gpus;
        s.requests_per_s_per_gpu = s.requests_per_s / s.gpus;
        s.goodput_requests_per_s = slo_met_ / s.duration;
    }
    if (completed_ > 0) s.slo_attainment = static_cast<double>(slo_met_) / completed_;
    s.sum_e2e = sum_e2e_;
}

}  // namespace sc
