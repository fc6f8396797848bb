#include "inference/workload_gen.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>

namespace sc {

double Rng::Exponential(double rate) { return -std::log1p(-Uniform()) / rate; }

double Rng::Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Marsaglia and Tsang, "A simple method for generating gamma variables", ACM TOMS 26(3), 2000; shape < 1 via
// Gamma(shape + 1) * U^(1/shape) (their section 6).
double Rng::Gamma(double shape) {
    if (shape < 1) {
        const double u = 1.0 - Uniform();
        return Gamma(shape + 1) * std::pow(u, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
        double x, v;
        do {
            x = Normal();
            v = 1.0 + c * x;
        } while (v <= 0);
        v = v * v * v;
        const double u = 1.0 - Uniform();
        if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
}

int Rng::Between(int lo, int hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int>(static_cast<uint64_t>(Uniform() * span) % span);
}

size_t Rng::Pick(const std::vector<double>& w) {
    double total = 0;
    for (double x : w) total += x;
    double u = Uniform() * total;
    for (size_t i = 0; i < w.size(); ++i) {
        if (u < w[i]) return i;
        u -= w[i];
    }
    return w.size() - 1;
}

double NextGap(const Workload& w, Rng& rng) {
    switch (w.arrival) {
        case ArrivalKind::poisson: return rng.Exponential(w.rate);
        case ArrivalKind::gamma: {
            // Mean 1/rate and coefficient of variation cv: shape 1/cv^2, scale cv^2/rate.
            const double shape = 1.0 / (w.cv * w.cv);
            return rng.Gamma(shape) / (shape * w.rate);
        }
        default: return 1.0 / w.rate;
    }
}

int DrawLength(const LengthDist& d, Rng& rng) {
    switch (d.kind) {
        case LengthDist::Kind::fixed: return d.min;
        case LengthDist::Kind::uniform: return rng.Between(d.min, d.max);
        case LengthDist::Kind::normal:
            while (true) {
                const double v = std::round(d.mean + d.stddev * rng.Normal());
                if (v >= d.min && v <= d.max) return static_cast<int>(v);
            }
        case LengthDist::Kind::empirical: return d.values[rng.Pick(d.weights)];
    }
    return d.min;
}

PrefixDraw::PrefixDraw(const SharedPrefixes& p) : count_(p.count) {
    if (p.count <= 0 || p.zipf == 0) return;
    cumulative_.resize(static_cast<size_t>(p.count));
    double sum = 0;
    for (int k = 0; k < p.count; ++k) cumulative_[static_cast<size_t>(k)] = sum += std::pow(k + 1.0, -p.zipf);
}

int PrefixDraw::operator()(Rng& rng) const {
    if (cumulative_.empty()) return rng.Between(0, count_ - 1);
    const double u = rng.Uniform() * cumulative_.back();
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    return static_cast<int>(std::min<std::ptrdiff_t>(it - cumulative_.begin(), count_ - 1));
}

double NormalAcceptance(const LengthDist& d) {
    if (d.stddev == 0) return 1;  // always the mean, which lies in [min, max]
    auto cdf = [&](double x) { return 0.5 * std::erfc(-(x - d.mean) / (d.stddev * std::numbers::sqrt2)); };
    return cdf(d.max + 0.5) - cdf(d.min - 0.5);
}

}  // namespace sc
