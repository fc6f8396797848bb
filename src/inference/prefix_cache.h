// One scheduler's cached shared prefixes (EngineConfig::prefix_caching): which prefixes have their full blocks in
// the GPU cache and how many running requests use each, and, with a host tier (EngineConfig::host_cache_gib),
// which are in host memory. A prefix is cached whole: its floor(tokens / block_size) full blocks (vLLM hashes and
// shares full blocks only). Copies no request uses leave least recently used first, on the GPU (vLLM's free block
// queue hands out the least recently freed cached block first) and in the host tier (LMCache's LRU policy).
// The engine keeps the GPU's block count; this keeps which prefix is where. Bounded: an entry exists only while a
// copy does, so there are at most (GPU blocks / prefix blocks) + host capacity of them.
#pragma once
#include <set>
#include <unordered_map>
#include <utility>

namespace sc {

class PrefixCache {
public:
    enum class Where { none, gpu, host };
    // host_capacity: prefixes the host tier holds (0: no host tier).
    explicit PrefixCache(long long host_capacity = 0) : host_capacity_(host_capacity) {}

    // On the GPU if a copy is there, else in the host tier if one is there.
    Where Find(int prefix) const;
    // One more running request uses the GPU copy (which must exist): it cannot be evicted while used.
    void Use(int prefix);
    // A user is done with the GPU copy (it completed, was preempted or sent away): with no user left it can be
    // evicted, as the most recently used.
    void Release(int prefix);
    // A GPU copy of `prefix` now exists (computed, or copied back from the host), used by one request.
    void AddToGpu(int prefix);
    // Drops the least recently used GPU copy no request uses and returns its prefix, or -1 when every GPU copy is
    // in use. With a host tier the prefix is kept there (if it was not already), evicting the host's least
    // recently used one when full; `stored` says whether a copy to the host was made.
    int EvictOne(bool* stored);

    long long gpu_copies() const { return gpu_; }
    long long host_copies() const { return static_cast<long long>(host_lru_.size()); }

private:
    struct Entry {
        long long users = 0;
        long long gpu_tick = -1;   // >= 0: on the GPU; its place in gpu_lru_ while unused
        long long host_tick = -1;  // >= 0: in the host tier; its place in host_lru_
    };
    void Forget(int prefix, const Entry& e);  // erases the entry once no copy is left

    std::unordered_map<int, Entry> entries_;
    std::set<std::pair<long long, int>> gpu_lru_;   // (tick, prefix) of unused GPU copies, oldest first
    std::set<std::pair<long long, int>> host_lru_;  // (tick, prefix) of host copies, oldest first
    long long tick_ = 0, gpu_ = 0, host_capacity_ = 0;
};

}  // namespace sc
