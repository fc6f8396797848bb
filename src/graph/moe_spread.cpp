#include "graph/moe_spread.h"

#include <algorithm>
#include <numeric>

namespace sc {

static double UniformDistinctGroups(int experts, int k, int groups) {
    // P(a given group holds none of the k experts) = C(E - n, k) / C(E, k) = prod_j (E - n - j) / (E - j).
    const int n = experts / groups;
    double none = 1;
    for (int j = 0; j < k; ++j) {
        if (experts - n - j <= 0) return groups;  // fewer experts outside the group than picks: every group is hit
        none *= static_cast<double>(experts - n - j) / (experts - j);
    }
    return groups * (1 - none);
}

// C(n - a, k) / C(n, k): no pick among the a of n experts, k drawn without replacement.
static double NoneOf(double n, double a, int k) {
    double p = 1;
    for (int j = 0; j < k; ++j) {
        if (n - a - j <= 0) return 0;
        p *= (n - a - j) / (n - j);
    }
    return p;
}

static double Choose(int n, int r) {
    if (r < 0 || r > n) return 0;
    double c = 1;
    for (int i = 1; i <= r; ++i) c = c * (n - r + i) / i;
    return c;
}

// Uniform routing inside router_group_topk of router_groups groups (moe_spread.h); -1 when the split does not line
// up with the router groups.
static double GroupLimitedDistinctGroups(const MoeConfig& moe, int groups) {
    const int E = moe.experts, k = moe.top_k, G = moe.router_groups, t = moe.router_group_topk;
    const double N = static_cast<double>(t) * (E / G);
    if (groups % G == 0) {  // each part inside one router group
        return groups * (static_cast<double>(t) / G) * (1 - NoneOf(N, E / groups, k));
    }
    if (G % groups == 0) {  // each part holds r whole router groups
        const int r = G / groups;
        double hit = 0;
        for (int j = 1; j <= std::min(r, t); ++j)
            hit += Choose(r, j) * Choose(G - r, t - j) / Choose(G, t) * (1 - NoneOf(N, 1.0 * j * (E / G), k));
        return groups * hit;
    }
    return -1;
}

static double ContiguousDistinctGroups(int experts, int k, int groups) {
    const int n = experts / groups, step = std::gcd(k, experts);
    double sum = 0;
    int starts = 0;
    for (int s = 0; s < experts; s += step, ++starts) {
        // Experts s .. s+k-1 (mod E): the groups of the first and the last, and every group between.
        const int last = s + k - 1;
        const int first_group = s / n, last_group = last / n;  // last_group may pass the end and wrap
        sum += std::min(groups, last_group - first_group + 1);
    }
    return sum / starts;
}

double MoeDistinctGroups(const MoeConfig& moe, int groups) {
    if (moe.experts <= 0 || moe.top_k <= 0 || groups <= 1) return groups <= 1 ? 1 : 0;
    if (moe.routing == MoeRouting::contiguous) return ContiguousDistinctGroups(moe.experts, moe.top_k, groups);
    if (moe.router_groups > 0) {
        const double limited = GroupLimitedDistinctGroups(moe, groups);
        if (limited >= 0) return limited;
    }
    return UniformDistinctGroups(moe.experts, moe.top_k, groups);
}

}  // namespace sc
