#include "inference/prefix_cache.h"

#include "config/error.h"

namespace sc {

namespace {
[[noreturn]] void Internal(const char* what) { throw Error("engine.prefix_caching", std::string("internal: ") + what); }
}  // namespace

int PrefixCache::TierOf(Where where) {
    if (where == Where::host) return 0;
    if (where == Where::remote) return 1;
    Internal("a tier that is not host memory or the remote store");
}

PrefixCache::Where PrefixCache::Find(long long key) const {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return Where::none;
    const Entry& e = it->second;
    return e.gpu_tick >= 0 ? Where::gpu : e.tier_tick[0] >= 0 ? Where::host : Where::remote;
}

long long PrefixCache::Blocks(long long key) const {
    const Where w = Find(key);
    const Entry& e = entries_.at(key);
    return w == Where::gpu ? e.blocks : e.tier_blocks[TierOf(w)];
}

long long PrefixCache::BlocksWithParent(long long key) const {
    const long long p = Parent(key);
    return Blocks(key) + (p >= 0 ? entries_.at(p).blocks : 0);
}

long long PrefixCache::Parent(long long key) const { return entries_.at(key).parent; }

void PrefixCache::Change(long long key, const std::function<void(Entry&)>& change) {
    Entry& e = entries_.at(key);
    const bool was_read = Read(e);
    const long long before = IdleOf(e);
    change(e);
    AddIdle(IdleOf(e) - before);
    // A request reading this entry reads the one before it too (vLLM's chained blocks: all of them referenced).
    if (Read(e) != was_read && e.parent >= 0) Change(e.parent, [&](Entry& p) { p.read_children += Read(e) ? 1 : -1; });
}

void PrefixCache::Use(long long key) {
    if (entries_.at(key).gpu_tick < 0) Internal("a prefix used while not on the GPU");
    Change(key, [&](Entry& e) {
        if (e.users++ == 0) gpu_lru_.erase({e.gpu_tick, key});
    });
}

void PrefixCache::Release(long long key) {
    if (entries_.at(key).users <= 0) Internal("a prefix released more often than used");
    Change(key, [&](Entry& e) {
        if (--e.users == 0) {
            e.gpu_tick = tick_++;
            gpu_lru_.insert({e.gpu_tick, key});
        }
    });
}

void PrefixCache::AddToGpu(long long key, long long blocks, long long parent, long long users) {
    if (parent >= 0) {  // held by this entry while it is on the GPU; read while a request reads this one
        Use(parent);
        Change(parent, [&](Entry& p) { ++p.children, p.read_children += users > 0; });
    }
    Entry& e = entries_[key];
    if (e.gpu_tick >= 0) Internal("a prefix cached twice on the GPU");
    e.blocks = blocks, e.parent = parent, e.users = users, e.children = e.read_children = 0;
    e.gpu_tick = tick_++;
    if (users == 0) gpu_lru_.insert({e.gpu_tick, key});
    AddIdle(IdleOf(e));
    ++gpu_;
    for (int t = 0; t < 2; ++t) {
        if (e.tier_tick[t] < 0) continue;
        if (e.tier_blocks[t] != blocks) {
            Drop(t, key, e);
            continue;
        }
        // A copy back from a tier is now the most recently used there (and no longer held).
        tiers_[t].lru.erase({e.tier_tick[t], key});
        e.tier_tick[t] = tick_++;
        tiers_[t].lru.insert({e.tier_tick[t], key});
    }
}

void PrefixCache::Hold(long long key, Where where) {
    const int t = TierOf(where);
    const Entry& e = entries_.at(key);
    if (e.tier_tick[t] < 0) Internal("a prefix held in a tier while not there");
    tiers_[t].lru.erase({e.tier_tick[t], key});
}

void PrefixCache::Unhold(long long key, Where where) {
    const int t = TierOf(where);
    Entry& e = entries_.at(key);
    e.tier_tick[t] = tick_++;
    tiers_[t].lru.insert({e.tier_tick[t], key});
}

bool PrefixCache::WriteBack(long long key) {
    Entry& e = entries_.at(key);
    if (e.gpu_tick < 0) Internal("a prefix written back to the host tier while not on the GPU");
    return Store(0, key, e);
}

void PrefixCache::Grow(long long key, long long more) {
    Entry& e = entries_.at(key);
    if (e.gpu_tick < 0) Internal("a prefix grown while not on the GPU");
    Change(key, [&](Entry& x) { x.blocks += more; });
    for (int t = 0; t < 2; ++t)
        if (e.tier_tick[t] >= 0) Drop(t, key, e);
}

PrefixCache::Evicted PrefixCache::EvictOne() {
    Evicted out;
    if (gpu_lru_.empty()) return out;
    const long long key = gpu_lru_.begin()->second;
    gpu_lru_.erase(gpu_lru_.begin());
    Entry& e = entries_.at(key);
    out.key = key, out.blocks = e.blocks;
    AddIdle(-IdleOf(e));
    e.gpu_tick = -1;
    --gpu_;
    out.stored_host = Store(0, key, e);
    out.stored_remote = Store(1, key, e);
    const long long parent = e.parent;
    Forget(key);
    if (parent >= 0) {  // the parent may now go too (a later EvictOne)
        Change(parent, [](Entry& p) { --p.children; });
        Release(parent);
    }
    return out;
}

bool PrefixCache::Store(int t, long long key, Entry& e) {
    Tier& tier = tiers_[t];
    if (tier.capacity <= 0 || e.tier_tick[t] >= 0 || e.blocks > tier.capacity) return false;
    while (tier.used + e.blocks > tier.capacity && !tier.lru.empty()) {  // held copies stay
        const long long old = tier.lru.begin()->second;
        Drop(t, old, entries_.at(old));
        Forget(old);
    }
    if (tier.used + e.blocks > tier.capacity) return false;
    e.tier_tick[t] = tick_++;
    e.tier_blocks[t] = e.blocks;
    tier.used += e.blocks;
    tier.lru.insert({e.tier_tick[t], key});
    return true;
}

void PrefixCache::Drop(int t, long long key, Entry& e) {
    tiers_[t].lru.erase({e.tier_tick[t], key});
    tiers_[t].used -= e.tier_blocks[t];
    e.tier_tick[t] = -1, e.tier_blocks[t] = 0;
}

void PrefixCache::Forget(long long key) {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return;
    const Entry& e = it->second;
    if (e.gpu_tick < 0 && e.tier_tick[0] < 0 && e.tier_tick[1] < 0) entries_.erase(it);
}

}  // namespace sc
