#include "inference/prefix_cache.h"

#include "config/error.h"

namespace sc {

PrefixCache::Where PrefixCache::Find(int prefix) const {
    const auto it = entries_.find(prefix);
    if (it == entries_.end()) return Where::none;
    return it->second.gpu_tick >= 0 ? Where::gpu : Where::host;
}

void PrefixCache::Use(int prefix) {
    Entry& e = entries_.at(prefix);
    if (e.gpu_tick < 0) throw Error("engine.prefix_caching", "internal: a prefix used while not on the GPU");
    if (e.users++ == 0) gpu_lru_.erase({e.gpu_tick, prefix});
}

void PrefixCache::Release(int prefix) {
    Entry& e = entries_.at(prefix);
    if (e.users <= 0) throw Error("engine.prefix_caching", "internal: a prefix released more often than used");
    if (--e.users == 0) {
        e.gpu_tick = tick_++;
        gpu_lru_.insert({e.gpu_tick, prefix});
    }
}

void PrefixCache::AddToGpu(int prefix) {
    Entry& e = entries_[prefix];
    if (e.gpu_tick >= 0) throw Error("engine.prefix_caching", "internal: a prefix cached twice on the GPU");
    e.gpu_tick = tick_++;
    e.users = 1;
    ++gpu_;
    if (e.host_tick >= 0) {  // a copy back from the host is now the most recently used there as well
        host_lru_.erase({e.host_tick, prefix});
        e.host_tick = tick_++;
        host_lru_.insert({e.host_tick, prefix});
    }
}

int PrefixCache::EvictOne(bool* stored) {
    *stored = false;
    if (gpu_lru_.empty()) return -1;
    const int prefix = gpu_lru_.begin()->second;
    gpu_lru_.erase(gpu_lru_.begin());
    Entry& e = entries_.at(prefix);
    e.gpu_tick = -1;
    --gpu_;
    if (host_capacity_ > 0 && e.host_tick < 0) {
        if (static_cast<long long>(host_lru_.size()) >= host_capacity_) {
            const int old = host_lru_.begin()->second;
            host_lru_.erase(host_lru_.begin());
            Entry& o = entries_.at(old);
            o.host_tick = -1;
            Forget(old, o);
        }
        e.host_tick = tick_++;
        host_lru_.insert({e.host_tick, prefix});
        *stored = true;
    }
    Forget(prefix, e);
    return prefix;
}

void PrefixCache::Forget(int prefix, const Entry& e) {
    if (e.gpu_tick < 0 && e.host_tick < 0) entries_.erase(prefix);
}

}  // namespace sc
