// One scheduler's cached prompt prefixes (EngineConfig::prefix_caching): which prefixes have their full blocks in
// the GPU cache and how many users each has, and, with a host tier (EngineConfig::host_cache_gib), which are in host
// memory. A prefix is one of the workload's shared prefixes or a conversation's context so far (its earlier turns),
// cached whole: its full blocks (vLLM hashes and shares full blocks only). A conversation's entry holds the blocks
// after its shared prefix and keeps that prefix (its parent) on the GPU while it is there itself, as vLLM's chained
// block hashes make a context's blocks useless without the blocks before them. Copies no one uses leave least
// recently used first, on the GPU (vLLM's free block queue hands out the least recently freed cached block first)
// and in the host tier (LMCache's LRU policy). The engine keeps the GPU's block count; this keeps which prefix is
// where. Bounded: an entry exists only while a copy does.
#pragma once
#include <functional>
#include <set>
#include <unordered_map>
#include <utility>

namespace sc {

class PrefixCache {
public:
    enum class Where { none, gpu, host };
    // host_blocks: blocks the host tier holds (0: no host tier). idle_total, when set, is kept added to as
    // idle_blocks() changes (the engine's sum over its schedulers; it must outlive this).
    explicit PrefixCache(long long host_blocks = 0, long long* idle_total = nullptr)
        : host_capacity_(host_blocks), idle_total_(idle_total) {}

    // On the GPU if a copy is there, else in the host tier if one is there.
    Where Find(long long key) const;
    // Blocks of the entry itself, and with its parent's (what a request that takes it does not compute).
    long long Blocks(long long key) const;
    long long BlocksWithParent(long long key) const;
    long long Parent(long long key) const;  // -1: none
    // One more user of the GPU copy (which must exist): it cannot be evicted while used.
    void Use(long long key);
    // A user is done with the GPU copy: with no user left it can be evicted, as the most recently used.
    void Release(long long key);
    // A GPU copy of `key` now exists, of `blocks` blocks after `parent` (-1: none; it must be on the GPU and is
    // used by this entry until it leaves the GPU), with `users` users. A host copy of another size is dropped.
    void AddToGpu(long long key, long long blocks, long long parent, long long users);
    // Keeps the host copy of `key` in the tier while it is being copied back (AddToGpu ends the hold), or ends the
    // hold when it is not copied after all.
    void HoldHost(long long key);
    void UnholdHost(long long key);
    // The GPU copy grows by `more` blocks (a conversation's next turn); a host copy, now shorter, is dropped.
    void Grow(long long key, long long more);
    // Drops the least recently used GPU copy no one uses. Returns its key and blocks, or key -1 when every GPU copy
    // is in use. With a host tier it is kept there if it fits (evicting the host's least recently used ones) and was
    // not there already; `stored` says whether a copy to the host was made.
    struct Evicted {
        long long key = -1, blocks = 0;
        bool stored = false;
    };
    Evicted EvictOne();

    long long gpu_copies() const { return gpu_; }
    // Blocks of GPU copies no request uses (only the cached entries after them, if any): cached, but free to be
    // evicted as vLLM V1 counts them (every block of reference count 0 sits in its free block queue, and
    // BlockPool.get_usage is 1 - free / all).
    long long idle_blocks() const { return idle_; }
    long long host_copies() const { return static_cast<long long>(host_lru_.size()); }
    long long host_blocks() const { return host_used_; }

private:
    struct Entry {
        long long users = 0, blocks = 0, parent = -1;
        long long children = 0;       // of the users, cached entries after this one (the rest are requests)
        long long read_children = 0;  // of those, entries a request is reading (it reads this one too)
        long long gpu_tick = -1;      // >= 0: on the GPU; its place in gpu_lru_ while unused
        long long host_tick = -1;     // >= 0: in the host tier; its place in host_lru_
        long long host_blocks = 0;
    };
    void DropHost(long long key, Entry& e);
    void Forget(long long key);  // erases the entry once no copy is left
    // Read by a request: its own, or through an entry after it.
    static bool Read(const Entry& e) { return e.users > e.children || e.read_children > 0; }
    static long long IdleOf(const Entry& e) { return e.gpu_tick >= 0 && !Read(e) ? e.blocks : 0; }
    // Applies `change` to the entry and keeps idle_ and the entries before it up to date.
    void Change(long long key, const std::function<void(Entry&)>& change);
    void AddIdle(long long blocks) {
        idle_ += blocks;
        if (idle_total_) *idle_total_ += blocks;
    }

    std::unordered_map<long long, Entry> entries_;
    std::set<std::pair<long long, long long>> gpu_lru_;   // (tick, key) of unused GPU copies, oldest first
    std::set<std::pair<long long, long long>> host_lru_;  // (tick, key) of host copies not held, oldest first
    long long tick_ = 0, gpu_ = 0, host_capacity_ = 0, host_used_ = 0, idle_ = 0;
    long long* idle_total_ = nullptr;
};

}  // namespace sc
