#include "inference/prefix_cache.h"

#include "config/error.h"

namespace sc {

namespace {
[[noreturn]] void Internal(const char* what) { throw Error("engine.prefix_caching", std::string("internal: ") + what); }
}  // namespace

PrefixCache::Where PrefixCache::Find(long long key) const {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return Where::none;
    return it->second.gpu_tick >= 0 ? Where::gpu : Where::host;
}

long long PrefixCache::Blocks(long long key) const {
    const Entry& e = entries_.at(key);
    return e.gpu_tick >= 0 ? e.blocks : e.host_blocks;
}

long long PrefixCache::BlocksWithParent(long long key) const {
    const long long p = Parent(key);
    return Blocks(key) + (p >= 0 ? entries_.at(p).blocks : 0);
}

long long PrefixCache::Parent(long long key) const { return entries_.at(key).parent; }

void PrefixCache::Use(long long key) {
    Entry& e = entries_.at(key);
    if (e.gpu_tick < 0) Internal("a prefix used while not on the GPU");
    if (e.users++ == 0) gpu_lru_.erase({e.gpu_tick, key});
}

void PrefixCache::Release(long long key) {
    Entry& e = entries_.at(key);
    if (e.users <= 0) Internal("a prefix released more often than used");
    if (--e.users == 0) {
        e.gpu_tick = tick_++;
        gpu_lru_.insert({e.gpu_tick, key});
    }
}

void PrefixCache::AddToGpu(long long key, long long blocks, long long parent, long long users) {
    if (parent >= 0) Use(parent);
    Entry& e = entries_[key];
    if (e.gpu_tick >= 0) Internal("a prefix cached twice on the GPU");
    e.blocks = blocks, e.parent = parent, e.users = users;
    e.gpu_tick = tick_++;
    if (users == 0) gpu_lru_.insert({e.gpu_tick, key});
    ++gpu_;
    if (e.host_tick >= 0 && e.host_blocks != blocks) DropHost(key, e);
    if (e.host_tick >= 0) {  // a copy back from the host is now the most recently used there as well
        host_lru_.erase({e.host_tick, key});
        e.host_tick = tick_++;
        host_lru_.insert({e.host_tick, key});
    }
}

void PrefixCache::HoldHost(long long key) {
    const Entry& e = entries_.at(key);
    if (e.host_tick < 0) Internal("a prefix held in the host tier while not there");
    host_lru_.erase({e.host_tick, key});
}

void PrefixCache::UnholdHost(long long key) {
    Entry& e = entries_.at(key);
    e.host_tick = tick_++;
    host_lru_.insert({e.host_tick, key});
}

void PrefixCache::Grow(long long key, long long more) {
    Entry& e = entries_.at(key);
    if (e.gpu_tick < 0) Internal("a prefix grown while not on the GPU");
    e.blocks += more;
    if (e.host_tick >= 0) DropHost(key, e);
}

PrefixCache::Evicted PrefixCache::EvictOne() {
    Evicted out;
    if (gpu_lru_.empty()) return out;
    const long long key = gpu_lru_.begin()->second;
    gpu_lru_.erase(gpu_lru_.begin());
    Entry& e = entries_.at(key);
    out.key = key, out.blocks = e.blocks;
    e.gpu_tick = -1;
    --gpu_;
    if (host_capacity_ > 0 && e.host_tick < 0 && e.blocks <= host_capacity_) {
        while (host_used_ + e.blocks > host_capacity_ && !host_lru_.empty()) {  // held copies stay
            const long long old = host_lru_.begin()->second;
            Entry& o = entries_.at(old);
            DropHost(old, o);
            Forget(old);
        }
    }
    if (host_capacity_ > 0 && e.host_tick < 0 && host_used_ + e.blocks <= host_capacity_) {
        e.host_tick = tick_++;
        e.host_blocks = e.blocks;
        host_used_ += e.blocks;
        host_lru_.insert({e.host_tick, key});
        out.stored = true;
    }
    const long long parent = e.parent;
    Forget(key);
    if (parent >= 0) Release(parent);  // the parent may now go too (a later EvictOne)
    return out;
}

void PrefixCache::DropHost(long long key, Entry& e) {
    host_lru_.erase({e.host_tick, key});
    host_used_ -= e.host_blocks;
    e.host_tick = -1, e.host_blocks = 0;
}

void PrefixCache::Forget(long long key) {
    const auto it = entries_.find(key);
    if (it != entries_.end() && it->second.gpu_tick < 0 && it->second.host_tick < 0) entries_.erase(it);
}

}  // namespace sc
