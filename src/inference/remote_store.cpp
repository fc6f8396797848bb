#include "inference/remote_store.h"

#include <string>

#include "config/error.h"

namespace sc {

namespace {
[[noreturn]] void Internal(const char* what) {
    throw Error("engine.remote_cache_gib", std::string("internal: ") + what);
}
}  // namespace

void RemoteStore::Hold(long long key) {
    Copy& c = copies_.at(key);
    if (c.readers++ == 0) lru_.erase({c.tick, key});
}

void RemoteStore::Unhold(long long key) {
    Copy& c = copies_.at(key);
    if (c.readers <= 0) Internal("a remote copy released more often than held");
    if (--c.readers > 0) return;
    c.tick = tick_++;
    lru_.insert({c.tick, key});
}

bool RemoteStore::Store(long long key, long long blocks, long long parent) {
    if (Has(key) || blocks > capacity_) return false;
    while (used_ + blocks > capacity_ && !lru_.empty()) Drop(lru_.begin()->second);  // copies being read stay
    if (used_ + blocks > capacity_) return false;
    const long long tick = tick_++;
    copies_[key] = Copy{blocks, parent, tick, 0};
    lru_.insert({tick, key});
    used_ += blocks;
    return true;
}

void RemoteStore::Refresh(long long key, long long blocks) {
    const auto it = copies_.find(key);
    if (it == copies_.end()) return;
    Copy& c = it->second;
    if (c.blocks != blocks) {
        if (c.readers == 0) Drop(key);
        return;
    }
    if (c.readers > 0) return;  // Unhold makes it the most recent
    lru_.erase({c.tick, key});
    c.tick = tick_++;
    lru_.insert({c.tick, key});
}

void RemoteStore::Drop(long long key) {
    const auto it = copies_.find(key);
    if (it == copies_.end()) return;
    if (it->second.readers > 0) Internal("a remote copy dropped while read");
    lru_.erase({it->second.tick, key});
    used_ -= it->second.blocks;
    copies_.erase(it);
}

}  // namespace sc
