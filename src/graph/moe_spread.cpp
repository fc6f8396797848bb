#include "graph/moe_spread.h"

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
    return moe.routing == MoeRouting::contiguous ? ContiguousDistinctGroups(moe.experts, moe.top_k, groups)
                                                 : UniformDistinctGroups(moe.experts, moe.top_k, groups);
}

}  // namespace sc
