// What a prompt reuses of earlier ones under engine.prefix_caching: a workload's shared prefixes, a conversation's
// earlier turns and the prompt of a request's other samples (docs/serving.md, "Shared prefixes, conversations and
// prefix caching", "Parallel sampling"). The rules
// the engine applies to a request against its scheduler's PrefixCache, and the run's counts. The engine keeps the
// books of free blocks and the links' time; these say which cached prefix a request takes, how many of its
// blocks it shares, and move its own blocks to the cache when they become a prefix others can take.
// Keys: shared prefix g is g; conversation c's context is prefixes.count + c; the prompt of the request whose first
// sample has id i is prefixes.count + i (a run has conversations or samples, not both: ValidateServingConfig).
#pragma once
#include "inference/engine.h"
#include "inference/prefix_cache.h"
#include "inference/serving_config.h"
#include "inference/wait_queue.h"

namespace sc {

class PrefixReuse {
public:
    PrefixReuse(const EngineConfig& e, const Workload& w);
    // Prefix caching is on and some prompt could reuse something (a shared prefix of a full block, turns, samples).
    bool enabled() const { return enabled_; }
    // Blocks of one scheduler's host tier (EngineConfig::host_cache_gib per GPU) and of its share of the remote store
    // (remote_cache_gib per GPU): the GiB over the bytes of a block on one GPU, split over a pipelined replica's pp
    // schedulers.
    long long HostBlocks(double block_bytes, int pp) const { return TierBlocks(host_gib_, block_bytes, pp); }
    long long RemoteBlocks(double block_bytes, int pp) const { return TierBlocks(remote_gib_, block_bytes, pp); }

    struct Found {
        PrefixCache::Where where = PrefixCache::Where::none;
        long long key = -1, parent = -1, load = 0;  // load: blocks to copy back from the tier `where`
    };
    // The longest cached prefix of a request about to be admitted: its conversation's earlier turns or its request's
    // prompt cached by another sample, else its shared prefix. On the GPU the request takes it now; in the host tier
    // or the remote store (the first holding it) it takes it once Load has marked the copy back (a conversation's
    // copy only while the shared prefix before it is on the GPU, which it holds until then). Its prompt starts after
    // the prefix either way (q.ctx, q.shared_blocks).
    Found Find(PrefixCache& cache, ServedRequest& q) const;
    // An admission that did not happen gives back what Find took: the request waits holding nothing, so that a
    // cached prefix is never kept by a request not running, and looks again at its next try.
    void Undo(PrefixCache& cache, ServedRequest& q, const Found& f) const;
    // The tier's copy is on the GPU again (the engine has taken f.load blocks and charges the copy); a copy from the
    // remote store is kept in the host tier too (PrefixCache::WriteBack).
    void Load(PrefixCache& cache, ServedRequest& q, const Found& f) const;
    // Counts an admission of a request that could reuse a prefix, and what it found.
    void Count(const ServedRequest& q, const Found& f);
    // A request whose scheduled tokens complete its shared prefix hands the prefix's blocks to the cache, where later
    // prompts find them: vLLM caches a full block when it is allocated for computing, so a request scheduled after
    // it in the same step already hits (the step writes every token's keys and values before attention reads
    // them). If another request's copy is on the GPU this one keeps its own blocks, as vLLM does.
    // A sample (Workload::samples) whose scheduled tokens complete its prompt's full blocks but the last token's hands
    // those to the cache as well, after the shared prefix it uses: its request's other samples take them (vLLM's
    // child requests share the prompt's blocks through the prefix cache; a prompt computes at least its last token).
    void Scheduled(PrefixCache& cache, ServedRequest& q, int tokens) const;
    // A finished request: a turn with more to come (when `keep`) leaves its context's full blocks cached for the next
    // turn, after its shared prefix (vLLM keeps a finished request's blocks, hashed, until they are needed); it then
    // lets go of what it used. The caller frees the blocks left in q.blocks.
    void Finished(PrefixCache& cache, ServedRequest& q, bool keep) const;
    void Release(PrefixCache& cache, ServedRequest& q) const;
    // The counts into a result (ServingResult::prefix_*).
    void Fill(ServingResult& r) const;

private:
    long long ConversationKey(const ServedRequest& q) const { return count_ + q.conversation; }
    long long SamplesKey(const ServedRequest& q) const { return count_ + q.group; }
    void SharePrefix(PrefixCache& cache, ServedRequest& q, int tokens) const;
    void SharePrompt(PrefixCache& cache, ServedRequest& q, int tokens) const;
    static long long TierBlocks(double gib, double block_bytes, int pp);
    int block_size_ = 16, count_ = 0, turns_ = 1;
    long long prefix_blocks_ = 0;  // blocks of one cached shared prefix
    double host_gib_ = 0, remote_gib_ = 0;
    bool enabled_ = false;
    long long requests_ = 0, gpu_hits_ = 0, host_hits_ = 0, remote_hits_ = 0, turn_hits_ = 0, sample_hits_ = 0;
    double tokens_reused_ = 0;
};

}  // namespace sc
