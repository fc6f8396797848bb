// The remote prefix store (EngineConfig::remote_cache_gib): one store every prefill scheduler of the deployment
// reaches over the network, as Mooncake's distributed KV store pools its servers' memory for all its prefill
// instances and LMCache's remote backends (Redis, Mooncake) serve every engine that points at them. A prefix one
// replica computed and evicted is there for every other replica's prompts. Its capacity is the GiB per GPU of the
// description over all the prefill pool's GPUs; copies no one is reading leave least recently used first
// (LMCache's LRU policy). Each scheduler's PrefixCache keeps its GPU and host copies and looks here last.
// Bounded: a key exists only while its copy does.
#pragma once
#include <set>
#include <unordered_map>
#include <utility>

namespace sc {

class RemoteStore {
public:
    explicit RemoteStore(long long capacity_blocks) : capacity_(capacity_blocks) {}

    bool Has(long long key) const { return copies_.count(key) > 0; }
    long long Blocks(long long key) const { return copies_.at(key).blocks; }
    // The prefix the copy follows (a conversation's context after its shared prefix; -1: none).
    long long Parent(long long key) const { return copies_.at(key).parent; }
    // A scheduler reading the copy back keeps it while the copy runs (several may at once); Unhold ends one read,
    // leaving the copy the most recently used.
    void Hold(long long key);
    void Unhold(long long key);
    // Writes a copy of `key` (`blocks` after `parent`) if there is none and it fits, evicting the least recently
    // used copies no one reads. Returns whether it did.
    bool Store(long long key, long long blocks, long long parent);
    // A copy of another size is stale (a conversation's context grew on its GPU): dropped. One of this size is
    // the most recently used.
    void Refresh(long long key, long long blocks);
    void Drop(long long key);

    long long used_blocks() const { return used_; }
    long long copies() const { return static_cast<long long>(copies_.size()); }

private:
    struct Copy {
        long long blocks = 0, parent = -1, tick = 0, readers = 0;
    };
    std::unordered_map<long long, Copy> copies_;
    std::set<std::pair<long long, long long>> lru_;  // (tick, key) of copies no one reads, oldest first
    long long capacity_ = 0, used_ = 0, tick_ = 0;
};

}  // namespace sc
