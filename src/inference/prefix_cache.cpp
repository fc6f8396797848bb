#include "inference/prefix_cache.h"

#include "config/error.h"

namespace sc {

namespace {
[[noreturn]] void Internal(const char* what) { throw Error("engine.prefix_caching", std::string("internal: ") + what); }
}  // namespace

PrefixCache::Where PrefixCache::Find(long long key) const {
    const auto it = entries_.find(key);
    if (it != entries_.end()) return it->second.gpu_tick >= 0 ? Where::gpu : Where::host;
    return InStore(key) ? Where::remote : Where::none;
}

long long PrefixCache::Blocks(long long key) const {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return store_->Blocks(key);
    return it->second.gpu_tick >= 0 ? it->second.blocks : it->second.host_blocks;
}

long long PrefixCache::BlocksWithParent(long long key) const {
    const long long p = Parent(key);
    return Blocks(key) + (p >= 0 ? entries_.at(p).blocks : 0);
}

long long PrefixCache::Parent(long long key) const {
    const auto it = entries_.find(key);
    return it != entries_.end() ? it->second.parent : store_->Parent(key);
}

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
    if (e.host_tick >= 0 && e.host_blocks != blocks) DropHost(key, e);
    if (e.host_tick >= 0) {  // a copy back from the host is now the most recently used there as well
        host_lru_.erase({e.host_tick, key});
        e.host_tick = tick_++;
        host_lru_.insert({e.host_tick, key});
    }
    if (store_) store_->Refresh(key, blocks);
}

void PrefixCache::Hold(long long key, Where where) {
    if (where == Where::remote) return store_->Hold(key);
    const Entry& e = entries_.at(key);
    if (where != Where::host || e.host_tick < 0) Internal("a prefix held in a tier while not there");
    host_lru_.erase({e.host_tick, key});
}

void PrefixCache::Unhold(long long key, Where where) {
    if (where == Where::remote) return store_->Unhold(key);
    Entry& e = entries_.at(key);
    e.host_tick = tick_++;
    host_lru_.insert({e.host_tick, key});
}

bool PrefixCache::WriteBack(long long key) {
    Entry& e = entries_.at(key);
    if (e.gpu_tick < 0) Internal("a prefix written back to the host tier while not on the GPU");
    return StoreHost(key, e);
}

void PrefixCache::Grow(long long key, long long more) {
    Entry& e = entries_.at(key);
    if (e.gpu_tick < 0) Internal("a prefix grown while not on the GPU");
    Change(key, [&](Entry& x) { x.blocks += more; });
    if (e.host_tick >= 0) DropHost(key, e);
    if (InStore(key)) store_->Drop(key);  // a conversation's context: only its own scheduler reads it
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
    out.stored_host = StoreHost(key, e);
    out.stored_remote = store_ && store_->Store(key, e.blocks, e.parent);
    const long long parent = e.parent;
    Forget(key);
    if (parent >= 0) {  // the parent may now go too (a later EvictOne)
        Change(parent, [](Entry& p) { --p.children; });
        Release(parent);
    }
    return out;
}

bool PrefixCache::StoreHost(long long key, Entry& e) {
    if (host_capacity_ <= 0 || e.host_tick >= 0 || e.blocks > host_capacity_) return false;
    while (host_used_ + e.blocks > host_capacity_ && !host_lru_.empty()) {  // held copies stay
        const long long old = host_lru_.begin()->second;
        DropHost(old, entries_.at(old));
        Forget(old);
    }
    if (host_used_ + e.blocks > host_capacity_) return false;
    e.host_tick = tick_++;
    e.host_blocks = e.blocks;
    host_used_ += e.blocks;
    host_lru_.insert({e.host_tick, key});
    return true;
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
