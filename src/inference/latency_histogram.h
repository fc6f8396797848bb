// Percentiles of a stream of latencies in bounded memory: a log-bucketed histogram (the HdrHistogram idea,
// Tene) with buckets 0.1% wide from 1 ns to 10^7 s, about 37k counters (300 KB) whatever the number of
// requests. A percentile is reported as its bucket's geometric middle: relative error at most 0.05%. The
// mean, minimum and maximum are exact.
#pragma once
#include <cstdint>
#include <vector>

namespace sc {

class LatencyHistogram {
public:
    LatencyHistogram();
    void Add(double seconds);  // negative values are clamped to 0 (they cannot happen in the engine)
    uint64_t count() const { return count_; }
    double mean() const { return count_ ? sum_ / count_ : 0; }
    double min() const { return count_ ? min_ : 0; }
    double max() const { return count_ ? max_ : 0; }
    // The q-quantile (0 <= q <= 1): the smallest recorded value v with at least q of the values <= v, to
    // within the bucket width. 0 when empty.
    double Quantile(double q) const;
    static constexpr double kRelativeWidth = 0.001;

private:
    std::vector<uint64_t> buckets_;
    uint64_t count_ = 0;
    double sum_ = 0, min_ = 0, max_ = 0;
};

}  // namespace sc
