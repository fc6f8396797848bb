// The random parts of a workload, deterministic on every standard library: std::mt19937_64 is specified bit for
// bit, the distributions are not, so they are written here (the same seed gives the same run natively and in
// wasm). Arrival gaps (exponential, gamma, fixed), request lengths (fixed, uniform, truncated normal,
// empirical) and priority classes.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "inference/serving_config.h"

namespace sc {

class Rng {
public:
    explicit Rng(uint64_t seed) : g_(seed) {}
    double Uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }  // [0, 1)
    double Exponential(double rate);
    double Normal();                                  // standard normal (Box-Muller, one of the pair)
    double Gamma(double shape);                       // unit scale (Marsaglia and Tsang 2000)
    int Between(int lo, int hi);                      // inclusive
    size_t Pick(const std::vector<double>& weights);  // index i with probability weights[i] / sum

private:
    std::mt19937_64 g_;
};

// The gap before the next arrival of a rate-driven workload (poisson, gamma, fixed_rate).
double NextGap(const Workload& w, Rng& rng);

// One length drawn from `d` (its bounds are enforced; a normal is redrawn until it rounds into [min, max]).
int DrawLength(const LengthDist& d, Rng& rng);

// A request's shared prefix (Workload::prefixes): prefix k (0-based) with weight 1/(k+1)^zipf, drawn by a binary
// search of the cumulative weights (kept only when zipf > 0: a uniform draw needs none).
class PrefixDraw {
public:
    explicit PrefixDraw(const SharedPrefixes& p);
    int operator()(Rng& rng) const;

private:
    int count_ = 0;
    std::vector<double> cumulative_;
};

// The share of a normal(mean, stddev) that rounds into [min, max]; ValidateServingConfig requires at least 1%
// so that DrawLength's redraws end quickly.
double NormalAcceptance(const LengthDist& d);

}  // namespace sc
