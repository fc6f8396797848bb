#include "inference/serving_config.h"

#include <cmath>
#include <string>

#include "config/error.h"
#include "config/numbers.h"

namespace sc {

const char* NameOf(ArrivalKind k) {
    switch (k) {
        case ArrivalKind::poisson: return "poisson";
        case ArrivalKind::fixed_rate: return "fixed_rate";
        case ArrivalKind::closed_loop: return "closed_loop";
        case ArrivalKind::offline: return "offline";
    }
    return "?";
}

namespace {
void AtLeast(const char* field, long long v, long long lo, const std::string& what) {
    if (v < lo) throw Error(field, "must be at least " + std::to_string(lo) + " (" + what + "), got " + std::to_string(v));
}
void CheckLengths(const std::string& field, const LengthDist& d) {
    if (d.min < 1) throw Error(field + ".min", "must be at least 1 token, got " + std::to_string(d.min));
    if (d.max < d.min)
        throw Error(field + ".max", "must be at least min (" + std::to_string(d.min) + "), got " + std::to_string(d.max));
    if (d.max > kMaxModelDim)
        throw Error(field + ".max", "must be at most " + std::to_string(kMaxModelDim) + " tokens, got " + std::to_string(d.max));
}
}  // namespace

void ValidateServingConfig(const ServingConfig& c) {
    ValidateModelConfig(c.model);
    AtLeast("pool.tp", c.pool.tp, 1, "GPUs per replica");
    if (c.model.heads % c.pool.tp != 0)
        throw Error("pool.tp", "tp=" + std::to_string(c.pool.tp) + " does not divide " + std::to_string(c.model.heads) +
                                   " attention heads");
    AtLeast("pool.replicas", c.pool.replicas, 1, "copies of the model");
    AtLeast("engine.max_seqs", c.engine.max_seqs, 1, "sequences per iteration");
    AtLeast("engine.max_tokens", c.engine.max_tokens, 1, "tokens per iteration");
    AtLeast("engine.block_size", c.engine.block_size, 1, "tokens per KV block");
    if (!(c.engine.kv_memory_fraction > 0 && c.engine.kv_memory_fraction <= 1))
        throw Error("engine.kv_memory_fraction", "must be in (0, 1], got " + std::to_string(c.engine.kv_memory_fraction));
    if (c.engine.kv_blocks_override < 0)
        throw Error("engine.kv_blocks", "must be at least 1 when given, got " + std::to_string(c.engine.kv_blocks_override));
    const Workload& w = c.workload;
    AtLeast("workload.requests", w.requests, 1, "requests in the run");
    if (w.requests > (1LL << 40)) throw Error("workload.requests", "must be at most 2^40, got " + std::to_string(w.requests));
    if (w.arrival == ArrivalKind::poisson || w.arrival == ArrivalKind::fixed_rate) {
        if (!(w.rate > 0 && std::isfinite(w.rate) && w.rate <= 1e9))
            throw Error("workload.rate", std::string("must be in (0, 1e9] requests/s for ") + NameOf(w.arrival) +
                                             " arrivals, got " + std::to_string(w.rate));
    }
    if (w.arrival == ArrivalKind::closed_loop) AtLeast("workload.concurrency", w.concurrency, 1, "clients");
    CheckLengths("workload.input", w.input);
    CheckLengths("workload.output", w.output);
}

}  // namespace sc
