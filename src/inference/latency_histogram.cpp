#include "inference/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace sc {

namespace {
constexpr double kLow = 1e-9, kHigh = 1e7;
const double kLogStep = std::log1p(LatencyHistogram::kRelativeWidth);
size_t BucketCount() { return static_cast<size_t>(std::ceil(std::log(kHigh / kLow) / kLogStep)) + 2; }
}  // namespace

LatencyHistogram::LatencyHistogram() : buckets_(BucketCount(), 0) {}

void LatencyHistogram::Add(double s) {
    s = std::max(0.0, s);
    size_t i = 0;  // bucket 0 holds everything below kLow
    if (s >= kLow) i = std::min(buckets_.size() - 1, 1 + static_cast<size_t>(std::log(s / kLow) / kLogStep));
    ++buckets_[i];
    if (count_ == 0) min_ = max_ = s;
    min_ = std::min(min_, s), max_ = std::max(max_, s);
    ++count_;
    sum_ += s;
}

double LatencyHistogram::Quantile(double q) const {
    if (count_ == 0) return 0;
    q = std::clamp(q, 0.0, 1.0);
    const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * count_)));
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
        seen += buckets_[i];
        if (seen >= rank) {
            if (i == 0) return min_;
            const double mid = kLow * std::exp((i - 1 + 0.5) * kLogStep);
            return std::clamp(mid, min_, max_);
        }
    }
    return max_;
}

}  // namespace sc
