#include "inference/runtime_memory.h"

namespace sc {

double RuntimeMemoryBytes(const EngineConfig& e, const PoolConfig& split) {
    constexpr double kGiB = 1073741824.0;
    if (e.runtime_memory_gib) return *e.runtime_memory_gib * kGiB;
    const double context =
        e.memory_policy == KvMemoryPolicy::free_fraction ? kFreeFractionContextGiB : kTotalFractionContextGiB;
    const bool communicates = split.tp > 1 || split.ep > 1;
    return (context + (communicates ? kCommunicationBuffersGiB : 0)) * kGiB;
}

}  // namespace sc
