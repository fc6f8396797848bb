// The engine's pools against a (valid) description, what it needs beyond ValidateServingConfig, and the two rules it
// shares with those checks: which replicas a run makes and the rate of a pool's host link.
#pragma once
#include <algorithm>
#include <optional>

#include "inference/engine.h"
#include "inference/serving_config.h"

namespace sc {

// Replicas of a pool that can receive a request: requests are dealt round-robin (Engine::Enqueue), so never more
// than there are requests.
inline long long MadeReplicas(const PoolConfig& p, const Workload& w) {
    return std::min<long long>(p.replicas, w.requests);
}

// Pipeline schedulers one simulation may keep (each about 1 KB with its queue): 2 GiB.
inline constexpr long long kMaxSchedulers = 1LL << 21;

// The pool's host link in one direction (into the GPU: `in`), GB/s: its own (HostLinkOf), or the description's
// swap_gbps.
double HostGBpsOf(const PoolModel& p, const EngineConfig& e, bool in);

// Throws sc::Error naming the field when the pools cannot run the description: too many schedulers, a decode
// pool's cost missing or extra, costs built for other pipeline depths, fewer KV blocks than stages, a remote store
// without its network, a host tier, store or swap without a host link.
void CheckPools(const ServingConfig& c, const PoolModel& pool, const std::optional<PoolModel>& decode);

}  // namespace sc
