// How many expert-parallel ranks, and how many of their scale-up domains, one token's routed copies reach: what a
// dispatcher that sends a token once per destination (DeepEP) moves, where Megatron-Core's all-to-all dispatcher
// moves every (token, expert) pair.
//
// Experts sit on ranks in order, experts / groups consecutive experts a group (a rank, or the ranks of one node):
// Megatron-Core's and DeepEP's layout (expert e on EP rank e / (experts / ep)).
#pragma once
#include "config/model_config.h"

namespace sc {

// Expected number of distinct groups among a token's top_k experts when the experts are split into `groups`
// equal groups of consecutive experts (groups divides experts).
//   uniform routing: groups * (1 - C(E - E/groups, k) / C(E, k)), the chance a group holds none of k distinct
//   experts drawn without replacement;
//   contiguous routing: token i takes experts ik .. ik+k-1 (mod E), so its first expert runs over the multiples
//   of gcd(k, E) equally often; the count is averaged over them;
//   uniform routing limited to router_group_topk of router_groups groups (the groups picked uniformly, the k
//   experts uniformly among theirs, N = router_group_topk * E / router_groups of them): a group of the split
//   that lies inside one router group is hit with probability topk/router_groups * (1 - C(N - E/groups, k) /
//   C(N, k)); one that holds r whole router groups, by the hypergeometric count j of them picked,
//   sum_j P(j) (1 - C(N - j E/router_groups, k) / C(N, k)). A split that lines up with neither (neither count
//   divides the other) is taken as unlimited uniform routing.
double MoeDistinctGroups(const MoeConfig& moe, int groups);

}  // namespace sc
