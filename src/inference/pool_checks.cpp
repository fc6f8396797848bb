#include "inference/pool_checks.h"

#include <cmath>
#include <string>

#include "config/error.h"

namespace sc {

double HostGBpsOf(const PoolModel& p, const EngineConfig& e, bool in) {
    const double v = in ? p.host_in_gbps : p.host_out_gbps;
    return v > 0 ? v : e.swap_gbps;
}

namespace {
// A host tier, a remote store (staged in host memory) and swap preemption copy over the pool's host link: it must
// be known.
void CheckHostLink(const ServingConfig& c, const PoolModel& p, const char* pool) {
    const bool prefill = std::string(pool) == "pool";
    const bool host_tier = c.engine.host_cache_gib > 0 && prefill, store = c.engine.remote_cache_gib > 0 && prefill;
    if (!host_tier && !store && c.engine.preemption != Preemption::swap) return;
    if (HostGBpsOf(p, c.engine, true) > 0 && HostGBpsOf(p, c.engine, false) > 0) return;
    throw Error("engine.swap_gbps",
                std::string(host_tier ? "the host prefix tier"
                            : store   ? "the remote store (its uploads leave from host memory)"
                                      : "swap preemption") +
                    " copies over the host link, and the " + pool +
                    "'s part has no measured host link (the calibration measures H100, H800, H200, GB200 and "
                    "MI300X): state its GB/s per direction (> 0)");
}

}  // namespace

void CheckPools(const ServingConfig& c, const PoolModel& pool, const std::optional<PoolModel>& decode) {
    const long long schedulers = MadeReplicas(c.pool, c.workload) * c.pool.pp +
                                 (c.decode_pool ? MadeReplicas(*c.decode_pool, c.workload) * c.decode_pool->pp : 0);
    if (schedulers > kMaxSchedulers)
        throw Error(c.decode_pool ? "decode_pool.replicas" : "pool.replicas",
                    "the simulation keeps a queue for each pipeline scheduler of every replica that receives a "
                    "request (min(replicas, workload.requests) x pp per pool): " +
                        std::to_string(schedulers) + ", about " + std::to_string(schedulers / 1024) + " MiB; at most " +
                        std::to_string(kMaxSchedulers) + ": use fewer replicas or requests");
    if (c.decode_pool.has_value() != decode.has_value())
        throw Error("decode_pool",
                    "the decode pool's cost must be given exactly when the description has a decode pool");
    if (pool.cost->pp() != c.pool.pp || (decode && decode->cost->pp() != c.decode_pool->pp))
        throw Error("pool.pp", "the iteration cost was built for another number of pipeline stages than the pool's");
    if (pool.kv_blocks < c.pool.pp)
        throw Error("engine.kv_blocks", "must be at least 1 per pipeline stage (" + std::to_string(c.pool.pp) +
                                            "), got " + std::to_string(pool.kv_blocks));
    if (decode && decode->kv_blocks < c.decode_pool->pp)
        throw Error("decode_pool.kv_blocks", "must be at least 1 per pipeline stage (" +
                                                 std::to_string(c.decode_pool->pp) + "), got " +
                                                 std::to_string(decode->kv_blocks));
    if (c.engine.remote_cache_gib > 0 && !(std::isfinite(pool.remote_gbps) && pool.remote_gbps > 0))
        throw Error("engine.remote_cache_gib",
                    "the remote store needs the link to it (the pool's remote_gbps > 0: "
                    "SimulateServing takes it from the cluster's scale-out network)");
    CheckHostLink(c, pool, "pool");
    if (decode) CheckHostLink(c, *decode, "decode_pool");
}

}  // namespace sc
