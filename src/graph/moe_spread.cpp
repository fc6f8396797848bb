#include "graph/moe_spread.h"

#include <algorithm>
#include <numeric>

namespace sc {

// C(n - a, k) / C(n, k): no pick among the a of n experts, k drawn without replacement.
static double NoneOf(double n, double a, int k) {
    double p = 1;
    for (int j = 0; j < k; ++j) {
        if (n - a - j <= 0) return 0;
        p *= (n - a - j) / (n - j);
        if (p < 1e-300) return 0;  // past double's range: a huge top_k hits every group
    }
    return p;
}

static double UniformDistinctGroups(int experts, int k, int groups) {
    return groups * (1 - NoneOf(experts, static_cast<double>(experts) / groups, k));
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

// Token i's experts start at s = ik mod E, which runs over the multiples of gcd(k, E) equally often; the groups it
// spans depend on where s falls in its group, u = s mod n (n = E / groups experts a group), which runs over the
// multiples of g = gcd(k, E, n) in [0, n) equally often. With k = qn + r: q groups, and one more when u + r > 0,
// two more when u + r > n; never more than all the groups (a span that wraps onto its first group).
static double ContiguousDistinctGroups(int experts, int k, int groups) {
    const long long n = experts / groups, g = std::gcd(std::gcd(k, experts), static_cast<int>(n));
    const long long q = k / n, r = k % n, values = n / g;
    const long long none = r == 0 ? 1 : 0;                         // u = 0 with r = 0: exactly q groups
    const long long two = r == 0 ? 0 : (n - 1) / g - (n - r) / g;  // u > n - r
    const long long one = values - none - two;
    auto capped = [&](long long spanned) { return static_cast<double>(std::min<long long>(groups, spanned)); };
    return (none * capped(q) + one * capped(q + 1) + two * capped(q + 2)) / values;
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
