// One scheduler's cached prompt prefixes (EngineConfig::prefix_caching): which prefixes have their full blocks in
// the GPU cache and how many users each has, which have copies in its host memory (EngineConfig::host_cache_gib),
// and, last, which are in the remote store every scheduler shares (EngineConfig::remote_cache_gib, RemoteStore).
// A prefix is one of the workload's shared prefixes or a conversation's context so far (its earlier turns), cached
// whole: its full blocks (vLLM hashes and shares full blocks only). A conversation's entry holds the blocks after its
// shared prefix and keeps that prefix (its parent) on the GPU while it is there itself, as vLLM's chained block
// hashes make a context's blocks useless without the blocks before them. Copies no one uses leave least recently
// used first, on the GPU (vLLM's free block queue hands out the least recently freed cached block first) and in
// each tier (LMCache's LRU policy). With both tiers the hierarchy is LMCache's (LMCache/LMCache@000620e3,
// lmcache/v1/storage_backend/storage_manager.py): a prefix leaving the GPU is written to every tier (`batched_put`
// submits it to each backend in order), a lookup takes the first tier holding it, and a copy read from the remote
// store is kept in host memory as well (`get` and `batched_get` put a hit from a backend other than the local CPU
// one into it). The engine keeps the GPU's block count; this keeps which prefix is where. Bounded: an entry exists
// only while a GPU or host copy does.
#pragma once
#include <functional>
#include <set>
#include <unordered_map>
#include <utility>

#include "inference/remote_store.h"

namespace sc {

class PrefixCache {
public:
    enum class Where { none, gpu, host, remote };
    // host_blocks: blocks the host tier holds (0: none). store: the remote store (none when null). idle_total, when
    // set, is kept added to as idle_blocks() changes (the engine's sum over its schedulers). Both must outlive this.
    explicit PrefixCache(long long host_blocks = 0, RemoteStore* store = nullptr, long long* idle_total = nullptr)
        : host_capacity_(host_blocks), store_(store), idle_total_(idle_total) {}

    // On the GPU if a copy is there, else in the host tier if one is there, else in the remote store if one is.
    Where Find(long long key) const;
    // Blocks of the copy where Find finds it, and with its parent's (what a request that takes it does not compute).
    long long Blocks(long long key) const;
    long long BlocksWithParent(long long key) const;
    long long Parent(long long key) const;  // -1: none
    // One more user of the GPU copy (which must exist): it cannot be evicted while used.
    void Use(long long key);
    // A user is done with the GPU copy: with no user left it can be evicted, as the most recently used.
    void Release(long long key);
    // A GPU copy of `key` now exists, of `blocks` blocks after `parent` (-1: none; it must be on the GPU and is
    // used by this entry until it leaves the GPU), with `users` users. A tier's copy of another size is dropped; a
    // tier's copy of this size becomes its most recently used (and is no longer held by this scheduler).
    void AddToGpu(long long key, long long blocks, long long parent, long long users);
    // Keeps the copy of `key` in tier `where` (host or remote) while it is being copied back (AddToGpu ends the
    // hold), or ends the hold when it is not copied after all.
    void Hold(long long key, Where where);
    void Unhold(long long key, Where where);
    // The GPU copy of `key`, just read from the remote store, is kept in the host tier too if there is one and it
    // has no copy yet (evicting the host's least recently used ones). Returns whether a host copy was made.
    bool WriteBack(long long key);
    // The GPU copy grows by `more` blocks (a conversation's next turn); the tiers' copies, now shorter, are dropped.
    void Grow(long long key, long long more);
    // Drops the least recently used GPU copy no one uses. Returns its key and blocks, or key -1 when every GPU copy
    // is in use. It is written to each tier that has no copy of it yet and can hold it (evicting that tier's least
    // recently used ones); `stored_host` and `stored_remote` say which copies were made.
    struct Evicted {
        long long key = -1, blocks = 0;
        bool stored_host = false, stored_remote = false;
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
    bool InStore(long long key) const { return store_ && store_->Has(key); }
    // Copies the entry (on or leaving the GPU) into the host tier if it has no copy there and fits, evicting the
    // host's least recently used; returns whether it did.
    bool StoreHost(long long key, Entry& e);
    void DropHost(long long key, Entry& e);
    void Forget(long long key);  // erases the entry once it has no GPU or host copy
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
    RemoteStore* store_ = nullptr;
    long long* idle_total_ = nullptr;
};

}  // namespace sc
