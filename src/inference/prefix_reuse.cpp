#include "inference/prefix_reuse.h"

#include <algorithm>
#include <cmath>

namespace sc {

PrefixReuse::PrefixReuse(const EngineConfig& e, const Workload& w)
    : block_size_(e.block_size),
      count_(w.prefixes.count),
      turns_(w.turns),
      host_gib_(e.host_cache_gib),
      remote_gib_(e.remote_cache_gib) {
    if (!e.prefix_caching) return;
    prefix_blocks_ = w.prefixes.count > 0 ? w.prefixes.tokens / e.block_size : 0;
    enabled_ = prefix_blocks_ > 0 || w.turns > 1 || w.samples > 1;
}

long long PrefixReuse::TierBlocks(double gib, double block_bytes, int pp) {
    if (gib <= 0) return 0;
    return static_cast<long long>(std::floor(gib * 1073741824.0 / block_bytes / pp));
}

PrefixReuse::Found PrefixReuse::Find(PrefixCache& cache, ServedRequest& q) const {
    Found f;
    if (!enabled_ || q.ctx > 0 || q.swapped) return f;
    auto take = [&](long long key) {
        const PrefixCache::Where w = cache.Find(key);
        if (w == PrefixCache::Where::none) return false;
        const long long parent = cache.Parent(key);
        if (w != PrefixCache::Where::gpu && parent >= 0 && cache.Find(parent) != PrefixCache::Where::gpu) return false;
        const long long blocks = cache.BlocksWithParent(key);
        if (blocks * block_size_ >= q.input) return false;  // a prompt computes at least its last token
        f.where = w, f.key = key, f.parent = parent;
        q.shared_blocks = blocks;
        q.ctx = static_cast<int>(blocks * block_size_);
        if (w == PrefixCache::Where::gpu) {
            cache.Use(key);
            q.cache_key = key;
        } else {
            f.load = cache.Blocks(key);
            cache.Hold(key, w);                  // kept in the tier, and
            if (parent >= 0) cache.Use(parent);  // the prefix before it on the GPU, until the copy back
        }
        return true;
    };
    if (q.turn > 0 && take(ConversationKey(q))) return f;
    if (q.group >= 0 && take(SamplesKey(q))) return f;
    if (q.prefix >= 0 && prefix_blocks_ > 0) take(q.prefix);
    return f;
}

void PrefixReuse::Undo(PrefixCache& cache, ServedRequest& q, const Found& f) const {
    if (f.where == PrefixCache::Where::gpu) Release(cache, q);
    if (f.where == PrefixCache::Where::host || f.where == PrefixCache::Where::remote) {
        cache.Unhold(f.key, f.where);
        if (f.parent >= 0) cache.Release(f.parent);
    }
    if (f.where != PrefixCache::Where::none) q.ctx = 0, q.shared_blocks = 0;
}

void PrefixReuse::Load(PrefixCache& cache, ServedRequest& q, const Found& f) const {
    if (f.where == PrefixCache::Where::remote) cache.Unhold(f.key, f.where);  // this scheduler's read is done
    cache.AddToGpu(f.key, f.load, f.parent, 1);                               // ends a host copy's hold
    if (f.parent >= 0) cache.Release(f.parent);                               // Find's; the entry holds the parent now
    q.cache_key = f.key;
    if (f.where == PrefixCache::Where::remote) cache.WriteBack(f.key);
}

void PrefixReuse::Count(const ServedRequest& q, const Found& f) {
    ++requests_;
    if (f.where == PrefixCache::Where::none) return;
    if (f.where == PrefixCache::Where::gpu) ++gpu_hits_;
    if (f.where == PrefixCache::Where::host) ++host_hits_;
    if (f.where == PrefixCache::Where::remote) ++remote_hits_;
    if (f.key >= count_) ++(q.group >= 0 ? sample_hits_ : turn_hits_);
    tokens_reused_ += static_cast<double>(q.shared_blocks) * block_size_;
}

void PrefixReuse::Scheduled(PrefixCache& cache, ServedRequest& q, int tokens) const {
    SharePrefix(cache, q, tokens);
    SharePrompt(cache, q, tokens);
}

void PrefixReuse::SharePrefix(PrefixCache& cache, ServedRequest& q, int tokens) const {
    if (prefix_blocks_ == 0 || q.prefix < 0 || q.cache_key >= 0) return;
    if (q.ctx + tokens < prefix_blocks_ * block_size_ || cache.Find(q.prefix) == PrefixCache::Where::gpu) return;
    q.blocks -= prefix_blocks_;
    q.cache_key = q.prefix, q.shared_blocks = prefix_blocks_;
    cache.AddToGpu(q.prefix, prefix_blocks_, -1, 1);
}

void PrefixReuse::SharePrompt(PrefixCache& cache, ServedRequest& q, int tokens) const {
    if (q.group < 0) return;
    const long long key = SamplesKey(q), full = (q.input - 1) / block_size_;
    if (q.cache_key == key || q.ctx + tokens < full * block_size_) return;
    const long long own = full - q.shared_blocks;  // after the shared prefix it takes, if any
    if (own <= 0 || cache.Find(key) == PrefixCache::Where::gpu) return;
    const long long parent = q.cache_key;
    cache.AddToGpu(key, own, parent, 1);
    if (parent >= 0) cache.Release(parent);  // the entry holds it now
    q.blocks -= own;
    q.cache_key = key, q.shared_blocks = full;
}

void PrefixReuse::Finished(PrefixCache& cache, ServedRequest& q, bool keep) const {
    if (keep && q.turn + 1 < turns_) {
        const long long key = ConversationKey(q);
        const long long kept = std::clamp<long long>(q.ctx / block_size_ - q.shared_blocks, 0, q.blocks);
        if (q.cache_key == key) {
            cache.Grow(key, kept);
            q.blocks -= kept;
        } else if (kept > 0 && cache.Find(key) != PrefixCache::Where::gpu) {
            cache.AddToGpu(key, kept, q.cache_key, 0);  // after the shared prefix it used, if any
            q.blocks -= kept;
        }
    }
    Release(cache, q);
}

void PrefixReuse::Release(PrefixCache& cache, ServedRequest& q) const {
    if (q.cache_key < 0) return;
    cache.Release(q.cache_key);
    q.cache_key = -1, q.shared_blocks = 0;
}

void PrefixReuse::Fill(ServingResult& r) const {
    r.prefix_requests = requests_, r.prefix_gpu_hits = gpu_hits_, r.prefix_host_hits = host_hits_;
    r.prefix_remote_hits = remote_hits_;
    r.prefix_turn_hits = turn_hits_, r.prefix_sample_hits = sample_hits_, r.prefix_tokens_reused = tokens_reused_;
}

}  // namespace sc
