#include "inference/engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <queue>
#include <string>

#include "config/error.h"
#include "inference/completions.h"
#include "inference/pool_checks.h"
#include "inference/prefix_cache.h"
#include "inference/prefix_reuse.h"
#include "inference/request_timeline.h"
#include "inference/retrieval_service.h"
#include "inference/speculator.h"
#include "inference/wait_queue.h"
#include "inference/workload_gen.h"

namespace sc {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// What a replica does with a request. mixed: everything. prefill (disaggregated): the prompt and the first
// token, then the request leaves for the decode pool with its KV cache. decode: requests arrive with the
// prompt's KV cache and the first token; they decode (and, after a recompute preemption, prefill again).
enum class Role { mixed, prefill, decode };

struct Scheduled {
    size_t index;  // into running
    int tokens;
    int drafts = 0;  // speculative decoding: draft tokens it verifies (tokens = 1 + drafts)
};

struct Replica {
    Role role = Role::mixed;
    int pool = 0;  // 0: the pool (prefill when disaggregated), 1: the decode pool
    WaitQueue waiting;
    long long lazy = 0;                  // offline requests not created yet (they arrived at time 0, behind `waiting`)
    std::vector<ServedRequest> running;  // in admission order
    std::vector<Scheduled> batch;
    long long free_blocks = 0, total_blocks = 0;
    long long sending_blocks = 0;  // a prefill replica's blocks held by requests on the link to the decode pool
    double busy_until = kNever;    // end of the running iteration
    // What this replica adds to the engine's totals of waiting and running requests (Engine::Recount).
    long long counted_waiting = 0, counted_running = 0;
    bool ready = false;  // in Engine::ready_: it may start an iteration at the next event
    int pipeline = -1;   // pipelined replica (pp > 1): index into Engine::pipelines_ of its stages
    bool preempted_this_iteration = false;
    double swap_seconds = 0;  // host-link copies this iteration waits for
    PrefixCache prefixes;     // engine.prefix_caching: the shared prefixes whose blocks this scheduler keeps
    // Data-parallel attention (PoolModel::attention_dp > 1): each GPU's sequences this iteration, as BatchShapes,
    // and how many it runs (admission gives a new sequence to the GPU running the fewest).
    std::vector<BatchShape> gpu_shapes;
    std::vector<int> on_gpu;
};

struct InTransfer {
    double done;
    long long seq;  // arrival order at the link, for a stable order among equal times
    ServedRequest q;
    size_t from;  // prefill replica whose blocks it holds until the copy ends
    bool operator>(const InTransfer& o) const { return done != o.done ? done > o.done : seq > o.seq; }
};

class Engine {
public:
    Engine(const ServingConfig& c, PoolModel pool, std::optional<PoolModel> decode, KvTransferModel transfer)
        : c_(c),
          e_(c.engine),
          graph_sizes_(CapturedGraphSizes(c.engine)),
          w_(c.workload),
          transfer_(transfer),
          rng_(w_.seed),
          draw_prefix_(w_.prefixes),
          reuse_(e_, w_),
          retrieval_(w_.retrieval, w_.samples),
          speculator_(e_.speculation, w_.seed),
          completions_(c.slo, c.engine.frontend_s),
          timelines_(c.timelines) {
        pools_[0] = pool;
        if (decode) pools_[1] = *decode;
        kv_[0] = KvLayoutOf(c.model, c.pool.pp, e_.block_size, e_.window_eviction);
        if (decode) kv_[1] = KvLayoutOf(c.model, c.decode_pool->pp, e_.block_size, e_.window_eviction);
        const bool disagg = decode.has_value();
        AddPool(c.pool, disagg ? Role::prefill : Role::mixed, 0);
        first_of_pool_[1] = replicas_.size();
        count_of_pool_[0] = replicas_.size();
        if (disagg) AddPool(*c.decode_pool, Role::decode, 1);
        count_of_pool_[1] = replicas_.size() - first_of_pool_[1];
        // Every replica's cache, the ones never made (AddPool) included.
        all_blocks_ =
            static_cast<double>(c.pool.replicas) * c.pool.pp * static_cast<double>(pool.kv_blocks / c.pool.pp);
        if (decode)
            all_blocks_ += static_cast<double>(c.decode_pool->replicas) * c.decode_pool->pp *
                           static_cast<double>(decode->kv_blocks / c.decode_pool->pp);
        CheckFits();
        SetUpPrefixCaches(c.pool.pp);
        for (Replica& r : replicas_) MarkReady(r);
        if (w_.arrival == ArrivalKind::offline && w_.retrieval.on()) {
            retrieval_.AddUnmade(w_.requests);  // made as servers free up: they all arrived at time 0, in this order
            arrived_ = w_.requests;
            AdvanceRetrieval();
        } else if (w_.arrival == ArrivalKind::offline) {
            const long long n = static_cast<long long>(count_of_pool_[0]);  // every scheduler of the first pool
            for (long long i = 0; i < n; ++i) replicas_[i].lazy = w_.requests / n + (i < w_.requests % n);
            arrived_ = w_.requests;
        } else if (w_.arrival == ArrivalKind::closed_loop) {
            const long long first = std::min<long long>(w_.concurrency, w_.requests);
            for (long long i = 0; i < first; ++i) closed_pending_.push_back({0.0, static_cast<int>(i)});
        } else if (w_.arrival == ArrivalKind::trace) {
            next_arrival_ = w_.trace.front().arrival;
        } else {
            next_arrival_ = NextGap(w_, rng_);
        }
    }

    // Its prefix caches point at idle_cached_blocks_ and remote_store_: never copied or moved.
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // One instant of the clock: what starts, then the next event time and everything that happens at it.
    // False when nothing is left to happen (every request has completed). Each costs O(log replicas): only the
    // replicas something happened to are looked at (an idle replica with nothing queued stays idle until a
    // request is queued to it), the next iteration end comes from a heap, and the totals of waiting and running
    // requests are kept as they change. Replicas are handled in index order at every instant, as a scan of all
    // of them would, so the result does not depend on how many idle ones there are.
    bool Step() {
        StartReady();
        double next = NextArrival();
        if (!busy_.empty()) next = std::min(next, busy_.top().first);
        if (!transfers_.empty()) next = std::min(next, transfers_.top().done);
        next = std::min(next, retrieval_.NextEnd());
        if (next == kNever) return false;
        Advance(next);
        while (!busy_.empty() && busy_.top().first == now_) {  // ties in index order
            const size_t i = busy_.top().second;
            busy_.pop();
            Replica& r = replicas_[i];
            FinishIteration(r);
            MarkReady(r);  // idle now: StartReady recounts it before the clock moves
        }
        TransfersDone();
        RetrievalsDone();
        Arrivals();
        return true;
    }

    long long completed() const { return completions_.completed(); }
    ServingResult TakeResults() { return Results(); }

private:
    void MarkReady(Replica& r) {
        if (r.ready || r.busy_until != kNever) return;
        r.ready = true;
        ready_.push_back(static_cast<size_t>(IndexOf(r)));
    }

    // Every idle replica that was queued to or has just finished, in index order (StartIteration leaves an idle
    // replica without work as it is; one with work starts an iteration or throws).
    void StartReady() {
        std::sort(ready_.begin(), ready_.end());
        for (const size_t i : ready_) {
            Replica& r = replicas_[i];
            r.ready = false;
            if (r.busy_until != kNever) continue;
            StartIteration(r);
            Recount(r);
            if (r.busy_until != kNever) busy_.push({r.busy_until, i});
        }
        ready_.clear();
    }

    // Brings the engine's totals up to date with the replica's queue and running set.
    void Recount(Replica& r) {
        const long long waiting = static_cast<long long>(r.waiting.Size()) + r.lazy * w_.samples;
        const long long running = static_cast<long long>(r.running.size());
        waiting_total_ += waiting - r.counted_waiting;
        running_total_ += running - r.counted_running;
        r.counted_waiting = waiting, r.counted_running = running;
    }

    // A replica of pp > 1 stages runs pp schedulers, each its own batch in flight through the shared stages
    // with 1/pp of the KV blocks (vLLM's virtual engines); the engine holds one Replica per scheduler.
    // Only the replicas that will receive a request are made (MadeReplicas): requests are dealt round-robin, so
    // with more replicas than requests the rest would stay idle and empty, and a replica's state (its queue) costs
    // about 1 KB.
    void AddPool(const PoolConfig& p, Role role, int pool) {
        per_group_[pool] = static_cast<size_t>(p.pp);
        for (long long g = 0; g < MadeReplicas(p, w_); ++g) {
            if (p.pp > 1) pipelines_.push_back(std::vector<double>(static_cast<size_t>(p.pp), 0.0));
            for (int v = 0; v < p.pp; ++v) {
                Replica r;
                r.role = role;
                r.pool = pool;
                r.waiting = WaitQueue(e_.scheduling == SchedulingPolicy::priority);
                r.free_blocks = r.total_blocks = pools_[pool].kv_blocks / p.pp;
                r.pipeline = p.pp > 1 ? static_cast<int>(pipelines_.size()) - 1 : -1;
                replicas_.push_back(std::move(r));
            }
        }
    }

    // Tokens a request of this role must hold in one replica's cache at most.
    static long long Longest(Role role, long long input, long long output) {
        return role == Role::prefill ? input : input + output;
    }

    void CheckFits() {
        long long input = LongestPrompt(w_), output = w_.output.max;
        if (w_.arrival == ArrivalKind::trace) {
            input = output = 0;
            for (const TraceRequest& t : w_.trace) {
                input = std::max<long long>(input, t.input);
                output = std::max<long long>(output, t.output);
            }
        }
        // Every replica of a pool has the same cache and role: the first of each pool stands for it.
        for (int pool = 0; pool < 2; ++pool) {
            if (count_of_pool_[pool] == 0) continue;
            const Replica& r = replicas_[first_of_pool_[pool]];
            const long long longest = Longest(r.role, input, output);
            const std::string field = r.pool == 1 ? "decode_pool.kv_blocks" : "engine.kv_blocks";
            // With windowed layers the most a request ever holds (KvLayout): its longest prefill (a preempted
            // request's whole context under recompute) computed at most max_tokens at a time; otherwise its whole
            // context.
            const KvLayout& kv = kv_[r.pool];
            const bool recomputes = e_.admission == KvAdmission::on_demand && e_.preemption == Preemption::recompute;
            const long long prompt = std::min(longest, recomputes ? input + output - 1 : input);
            const long long chunk = e_.static_batching ? prompt : std::min<long long>(prompt, e_.max_tokens);
            const long long most =
                e_.admission == KvAdmission::reserve_full ? kv.Reserved(longest) : kv.MostHeld(longest, chunk);
            const long long one_gpu = r.total_blocks / pools_[pool].attention_dp;  // a sequence's cache is on one
            if (most > one_gpu)
                throw Error(field, "a request of " + std::to_string(input) + " + " + std::to_string(output) +
                                       " tokens needs " + std::to_string(most) + " KV blocks but the cache holds " +
                                       std::to_string(one_gpu) +
                                       (pools_[pool].attention_dp > 1 ? " (one GPU's, attention_dp)" : "") +
                                       "; use more memory, more GPUs per replica or shorter requests");
        }
        // Without chunking a prompt runs whole: the longest is the prompt, or under on-demand recompute a
        // preempted request's prompt and all but its last output token, recomputed.
        const bool recomputes = e_.admission == KvAdmission::on_demand && e_.preemption == Preemption::recompute;
        const long long whole = recomputes ? input + output - 1 : input;
        if (!e_.chunked_prefill && !e_.static_batching && whole > e_.max_tokens)
            throw Error("engine.max_tokens", "a prompt (with its recomputed output) of up to " + std::to_string(whole) +
                                                 " tokens does not fit the token budget of " +
                                                 std::to_string(e_.max_tokens) +
                                                 " without chunked prefill; raise "
                                                 "max_tokens or enable chunked_prefill");
    }

    double NextArrival() const {
        const double turn = followups_.empty() ? kNever : followups_.front().arrival;
        if (w_.arrival == ArrivalKind::closed_loop)
            return std::min(turn, closed_pending_.empty() ? kNever : closed_pending_.front().first);
        return std::min(turn, arrived_ < w_.requests ? next_arrival_ : kNever);
    }

    ServedRequest NewRequest(double arrival, int client) {
        ServedRequest q;
        q.id = next_id_++;
        q.arrival = arrival;
        if (w_.arrival == ArrivalKind::trace) {
            const TraceRequest& t = w_.trace[static_cast<size_t>(made_)];
            q.input = t.input, q.output = t.output, q.priority = t.priority;
        } else {
            q.input = DrawLength(w_.input, rng_);
            q.output = DrawLength(w_.output, rng_);
            if (!w_.priority_weights.empty()) q.priority = static_cast<int>(rng_.Pick(w_.priority_weights));
            if (w_.prefixes.count > 0) q.prefix = draw_prefix_(rng_), q.input += w_.prefixes.tokens;
            q.input += static_cast<int>(w_.retrieval.prompt_tokens());  // the passages, before its own input
        }
        ++made_;
        if (w_.turns > 1) q.conversation = conversations_++;
        if (w_.samples > 1) {
            q.group = q.id;
            completions_.BeginGroup(q.id, arrival, q.input, w_.samples);
        }
        q.client = client;
        q.timeline = timelines_.Begin(q.id, q.arrival, q.input, q.output, q.priority);
        return q;
    }

    // Another sample of `first`'s request (Workload::samples), queued with it: the same prompt, an output length of
    // its own (a trace's request gives one length to all of its samples).
    ServedRequest Sample(const ServedRequest& first) {
        ServedRequest q;
        q.id = next_id_++;
        q.arrival = first.arrival, q.input = first.input, q.prefix = first.prefix, q.priority = first.priority;
        q.client = first.client, q.home = first.home, q.group = first.group;
        q.output = w_.arrival == ArrivalKind::trace ? first.output : DrawLength(w_.output, rng_);
        q.timeline = timelines_.Begin(q.id, q.arrival, q.input, q.output, q.priority);
        return q;
    }

    // A new request, with its other samples behind it on the same scheduler (vLLM adds a request's n child requests
    // to one engine at once).
    void EnqueueNew(ServedRequest q) {
        if (w_.samples == 1) return static_cast<void>(Enqueue(std::move(q), 0));
        ServedRequest first = q;
        first.home = static_cast<int>(Enqueue(std::move(q), 0));
        for (int k = 1; k < w_.samples; ++k) QueueAt(replicas_[static_cast<size_t>(first.home)], Sample(first));
    }

    // A conversation's next turn, sent `think` after this one completed: its prompt is this turn's prompt and output,
    // then new input tokens of its own (SGLang's generated-shared-prefix with gsp_num_turns).
    ServedRequest NextTurn(const ServedRequest& prev) {
        ServedRequest q;
        q.id = next_id_++;
        q.arrival = now_ + w_.think;
        q.conversation = prev.conversation, q.turn = prev.turn + 1, q.home = prev.home;
        q.prefix = prev.prefix, q.priority = prev.priority, q.client = prev.client;
        q.input =
            prev.input + prev.output + static_cast<int>(w_.retrieval.prompt_tokens()) + DrawLength(w_.input, rng_);
        q.output = DrawLength(w_.output, rng_);
        q.timeline = timelines_.Begin(q.id, q.arrival, q.input, q.output, q.priority);
        return q;
    }

    // A later turn goes to the scheduler of its conversation's first (session affinity, as SGLang's router sends a
    // conversation where its cache is), which keeps its context.
    void EnqueueHome(ServedRequest q) { QueueAt(replicas_[static_cast<size_t>(q.home)], std::move(q)); }

    void QueueAt(Replica& r, ServedRequest q) {
        timelines_.Wait(q.timeline, SpanKind::queued, Numbered(r));
        r.waiting.PushBack(std::move(q));
        Recount(r);
        MarkReady(r);
    }

    size_t Enqueue(ServedRequest q, int pool) {
        // Round-robin over the pool's replicas; within a pipelined one, the scheduler with the fewest unfinished
        // requests (vLLM's add_request), the first on ties.
        size_t& next = next_replica_[pool];
        const size_t per = per_group_[pool], first = first_of_pool_[pool] + next * per;
        next = (next + 1) % (count_of_pool_[pool] / per);
        size_t pick = first;
        for (size_t v = first + 1; v < first + per; ++v)
            if (Unfinished(replicas_[v]) < Unfinished(replicas_[pick])) pick = v;
        if (pool == 0 && q.home < 0) q.home = static_cast<int>(pick);
        QueueAt(replicas_[pick], std::move(q));
        return pick;
    }

    void Arrivals() {
        while (!followups_.empty() && followups_.front().arrival <= now_) {
            Admit(std::move(followups_.front()));
            followups_.pop_front();
        }
        if (w_.arrival == ArrivalKind::closed_loop) {
            while (!closed_pending_.empty() && closed_pending_.front().first <= now_) {
                Admit(NewRequest(now_, closed_pending_.front().second));
                ++arrived_;
                closed_pending_.pop_front();
            }
            return;
        }
        while (arrived_ < w_.requests && next_arrival_ <= now_) {
            Admit(NewRequest(next_arrival_, -1));
            ++arrived_;
            if (w_.arrival == ArrivalKind::trace)
                next_arrival_ = arrived_ < w_.requests ? w_.trace[static_cast<size_t>(arrived_)].arrival : kNever;
            else next_arrival_ += NextGap(w_, rng_);
        }
    }

    // ---- Retrieval before the prompt (Workload::retrieval; retrieval_service.h keeps its queue) ----

    // What a query starting on a server does to its request's timeline.
    auto RetrievalStarted() {
        return [this](const ServedRequest& q, double end) {
            timelines_.Run(q.timeline, SpanKind::retrieval, now_, end, RetrievalNumber(), 0);
        };
    }
    // A new request, or a conversation's next turn: to the retrieval service first when there is one, else straight
    // to the schedulers.
    void Admit(ServedRequest q) {
        if (!w_.retrieval.on()) return Route(std::move(q));
        timelines_.Wait(q.timeline, SpanKind::queued, RetrievalNumber());
        retrieval_.Arrive(std::move(q), now_, RetrievalStarted());
    }
    void Route(ServedRequest q) {
        if (q.turn > 0) EnqueueHome(std::move(q));
        else EnqueueNew(std::move(q));
    }
    void RetrievalsDone() {
        if (retrieval_.NextEnd() <= now_) AdvanceRetrieval();
    }
    // Routes the queries ended by now and gives the free servers their next.
    void AdvanceRetrieval() {
        retrieval_.Advance(
            now_, [this](ServedRequest q) { Route(std::move(q)); },
            [this] {
                ServedRequest q = NewRequest(0.0, -1);  // offline: arrived at time 0, made as a server takes it
                timelines_.Wait(q.timeline, SpanKind::queued, RetrievalNumber());
                return q;
            },
            RetrievalStarted());
    }
    // The retrieval service's number in the timelines: after every pool's schedulers.
    int RetrievalNumber() const {
        return static_cast<int>(
            static_cast<long long>(c_.pool.replicas) * c_.pool.pp +
            (c_.decode_pool ? static_cast<long long>(c_.decode_pool->replicas) * c_.decode_pool->pp : 0));
    }

    void TransfersDone() {
        while (!transfers_.empty() && transfers_.top().done <= now_) {
            InTransfer t = transfers_.top();
            transfers_.pop();
            Replica& from = replicas_[t.from];
            reuse_.Release(from.prefixes, t.q);  // the prefix stayed for the copy; the decode pool holds it all
            from.free_blocks += t.q.blocks;
            from.sending_blocks -= t.q.blocks;
            MarkReady(from);  // what waited for these blocks may start now
            used_blocks_ -= t.q.blocks;
            t.q.blocks = 0;
            transfer_sum_ += now_ - t.q.prefill_done;
            ++transfer_count_;
            Enqueue(std::move(t.q), 1);
        }
    }

    static long long Unfinished(const Replica& r) {
        return static_cast<long long>(r.waiting.Size() + r.running.size()) + r.lazy;
    }
    int IndexOf(const Replica& r) const { return static_cast<int>(&r - replicas_.data()); }
    // The scheduler's number in the timelines: its place among every pool's schedulers, made or not (the decode
    // pool's come after all of the first pool's), so it does not depend on how many AddPool made.
    int Numbered(const Replica& r) const {
        const size_t i = static_cast<size_t>(IndexOf(r));
        if (r.pool == 0) return static_cast<int>(i);
        return static_cast<int>(static_cast<long long>(c_.pool.replicas) * c_.pool.pp +
                                static_cast<long long>(i - first_of_pool_[1]));
    }
    // An offline request made when first looked at, with its other samples behind it (Workload::samples).
    void PushLazy(Replica& r) {
        ServedRequest q = NewRequest(0.0, -1);
        q.home = IndexOf(r);
        for (int k = 0; k < w_.samples; ++k) {
            ServedRequest s = k == 0 ? q : Sample(q);
            timelines_.Wait(s.timeline, SpanKind::queued, Numbered(r));
            r.waiting.PushBack(std::move(s));
        }
    }

    bool HasWaiting(const Replica& r) const { return !r.waiting.Empty() || r.lazy > 0; }
    // Offline requests arrived at time 0 behind everything queued; they are created when first looked at
    // under FCFS, and all at once under priority scheduling (their order needs their classes).
    ServedRequest& FrontWaiting(Replica& r) {
        if (r.waiting.Prioritized()) {
            for (; r.lazy > 0; --r.lazy) PushLazy(r);
        } else if (r.waiting.Empty()) {
            PushLazy(r);
            --r.lazy;
        }
        return r.waiting.Front();
    }

    // ---- Cached prefixes (engine.prefix_caching; prefix_reuse.h decides, these keep the books) ----

    // Every scheduler that prefills keeps a cache of its own (a pipelined replica's virtual engines each hold 1/pp
    // of its blocks, and of its host tier and remote store; under data-parallel attention one scheduler holds its
    // GPUs' host tiers, a sequence's copies on its own GPU's, spread evenly as the sequences are).
    // The remote store is one for them all: every prefill GPU's share of it, the replicas not made included.
    void SetUpPrefixCaches(int pp) {
        if (!reuse_.enabled()) return;
        const long long dp = pools_[0].attention_dp;
        const long long host = dp * reuse_.HostBlocks(BlockBytes(0), pp);
        const long long remote = dp * reuse_.RemoteBlocks(BlockBytes(0), pp);
        if (remote > 0) remote_store_.emplace(remote * pp * static_cast<long long>(c_.pool.replicas));
        RemoteStore* store = remote_store_ ? &*remote_store_ : nullptr;
        for (Replica& r : replicas_)
            if (r.role != Role::decode) r.prefixes = PrefixCache(host, store, &idle_cached_blocks_);
    }
    bool CachesPrefixes(const Replica& r) const { return reuse_.enabled() && r.role != Role::decode; }
    double BlockBytes(int pool) const {  // one block on one GPU of the pool
        return static_cast<double>(e_.block_size) * pools_[pool].cost->KvBytesPerToken();
    }
    // The host link of a pool's GPUs in one direction (into the GPU: `in`), GB/s.
    double HostGBps(int pool, bool in) const { return HostGBpsOf(pools_[pool], e_, in); }
    // A copy between the GPU and a tier, into the GPU (`in`) or out of it: the host link, or the network to the
    // remote store.
    double TierSeconds(PrefixCache::Where tier, double bytes, bool in) const {
        if (tier == PrefixCache::Where::remote) return pools_[0].remote_latency + bytes / (pools_[0].remote_gbps * 1e9);
        return bytes / (HostGBps(0, in) * 1e9);
    }
    // The copy back from the host tier or the remote store, once TakeBlocks has taken its blocks; the iteration waits
    // for it. A copy from the remote store stays in the host tier too (LMCache's write-back; it arrives through host
    // memory, so no other copy is charged: the network is the slower link).
    void LoadPrefix(Replica& r, ServedRequest& q, const PrefixReuse::Found& f) {
        reuse_.Load(r.prefixes, q, f);
        const double bytes = static_cast<double>(f.load) * BlockBytes(r.pool),
                     seconds = TierSeconds(f.where, bytes, true);
        r.swap_seconds += seconds;
        q.swap_in += seconds;
        (f.where == PrefixCache::Where::remote ? remote_loaded_bytes_ : host_loaded_bytes_) += bytes;
    }
    // Evicts cached prefixes no request uses, least recently used first, until `want` blocks are free; each goes to
    // the tiers below first. The iteration waits for the copy out of the GPU into host memory, over the host link,
    // whether it stays there (the host tier) or is on its way to the remote store: LMCache stages every store in
    // its local CPU allocator, and vLLM's connector waits for the saves (`wait_for_save`) but not for the remote
    // put, which is submitted, not awaited (`batched_submit_put_task`). A prefix with a host copy already uploads
    // from it.
    bool FreeBlocks(Replica& r, long long want) {
        while (r.free_blocks < want && CachesPrefixes(r)) {
            const PrefixCache::Evicted ev = r.prefixes.EvictOne();
            if (ev.key < 0) break;
            r.free_blocks += ev.blocks;
            used_blocks_ -= ev.blocks;
            const double bytes = static_cast<double>(ev.blocks) * BlockBytes(r.pool);
            const bool had_host_copy = !ev.stored_host && r.prefixes.Find(ev.key) == PrefixCache::Where::host;
            if (ev.stored_host || (ev.stored_remote && !had_host_copy))
                r.swap_seconds += TierSeconds(PrefixCache::Where::host, bytes, false);
            if (ev.stored_host) host_stored_bytes_ += bytes;
            if (ev.stored_remote) remote_stored_bytes_ += bytes;
        }
        return r.free_blocks >= want;
    }

    double SwapSeconds(const Replica& r, long long blocks, bool in) const {
        return static_cast<double>(blocks) * BlockBytes(r.pool) / (HostGBps(r.pool, in) * 1e9);
    }

    // Preempts the most recently admitted running request that is not yet in this iteration's batch (vLLM's
    // choice under FCFS; under priority scheduling too, here). Recompute frees its blocks
    // and sends it back to the queue to be prefilled again; swap copies them to the host first. Returns false
    // when there is none left to preempt.
    bool PreemptLast(Replica& r, size_t protect_upto) {
        if (r.running.size() <= protect_upto) return false;
        ServedRequest q = std::move(r.running.back());
        r.running.pop_back();
        const long long used = r.total_blocks - r.free_blocks;
        if (preemptions_ == 0) first_preempt_used_ = used;
        ++preemptions_;
        if (e_.preemption == Preemption::swap && q.ctx > 0) {
            // A shared prefix goes out too: its cached copy may be evicted while this request is away.
            const long long out = q.blocks + q.shared_blocks;
            r.swap_seconds += SwapSeconds(r, out, false);
            swapped_bytes_ += static_cast<double>(out) * BlockBytes(r.pool);
            q.swapped = true;
        } else {
            q.ctx = 0;
        }
        reuse_.Release(r.prefixes, q);
        r.free_blocks += q.blocks;
        used_blocks_ -= q.blocks;
        q.blocks = 0;
        timelines_.Wait(q.timeline, SpanKind::preempted, Numbered(r));
        r.waiting.PushFront(std::move(q));
        r.preempted_this_iteration = true;
        return true;
    }

    // Brings the request's own blocks to `needed_total`, and takes `extra` more for a prefix copied back from the
    // host tier; cached prefixes no one uses are evicted to make room.
    bool TakeBlocks(Replica& r, ServedRequest& q, long long needed_total, long long extra = 0) {
        const long long more = needed_total - q.blocks;
        if (more < 0 && kv_[r.pool].windowed()) {  // blocks that left every window are freed (KvLayout::Held)
            r.free_blocks -= more;
            used_blocks_ += more;
            q.blocks = needed_total;
            return true;
        }
        if (more <= 0 && extra == 0) return true;
        const long long want = std::max(more, 0LL) + extra;
        if (r.free_blocks < want && !FreeBlocks(r, want)) return false;
        r.free_blocks -= want;
        used_blocks_ += want;
        q.blocks += std::max(more, 0LL);
        return true;
    }

    long long ReservedBlocks(const Replica& r, const ServedRequest& q) const {
        return kv_[r.pool].Reserved(Longest(r.role, q.input, q.output));
    }

    // One scheduled request's share of the iteration: a decode reads its cache and adds one key; a prefill chunk
    // of c tokens after p attends to p + 1 .. p + c keys; the last prompt token or a decode yields logits.
    // A sequence verifying drafts feeds its last token and them, a chunk attending to its cache, each with logits.
    [[gnu::always_inline]] static void AddToShape(BatchShape& b, const ServedRequest& q, int tokens,
                                                  const SlidingWindow& window, int drafts = 0) {
        if (drafts > 0) {
            b.AddPrefillChunk(q.ctx, tokens, window);
            b.logits += tokens;
            return;
        }
        if (q.decoding()) b.AddDecode(q.ctx, window);
        else b.AddPrefillChunk(q.ctx, tokens, window);
        if (q.ctx + tokens == q.input + q.generated) b.logits += 1;
    }

    void StartIteration(Replica& r) {
        if (r.running.empty() && !HasWaiting(r)) return;
        r.batch.clear();
        r.preempted_this_iteration = false;
        r.swap_seconds = 0;
        const bool stat = e_.static_batching;
        const int dp = pools_[r.pool].attention_dp;  // GPUs of the batch, each with the engine's limits
        long long budget = stat ? std::numeric_limits<long long>::max() : dp * static_cast<long long>(e_.max_tokens);
        const long long chunk = stat ? budget : e_.max_tokens;  // one sequence's tokens run on one GPU
        const SlidingWindow& window = pools_[r.pool].cost->local_window();
        const bool reserve = e_.admission == KvAdmission::reserve_full;
        const bool speculates = e_.speculation.tokens > 0;
        BatchShape b;  // what the iteration computes, summed as requests join it
        if (dp > 1) {  // each GPU's share, and how many sequences each runs
            r.gpu_shapes.assign(static_cast<size_t>(dp), BatchShape{});
            r.on_gpu.assign(static_cast<size_t>(dp), 0);
            for (const ServedRequest& q : r.running) ++r.on_gpu[static_cast<size_t>(q.gpu)];
        }
        // 1. The running sequences, oldest first.
        for (size_t i = 0; i < r.running.size() && budget > 0; ++i) {
            ServedRequest& q = r.running[i];
            const int drafts = speculates && q.decoding() ? speculator_.Drafts(q, budget) : 0;
            int tokens =
                q.decoding() ? 1 + drafts : static_cast<int>(std::min<long long>(q.feed(), std::min(budget, chunk)));
            if (!e_.chunked_prefill && !stat && tokens < q.feed()) continue;  // a whole prompt or nothing
            if (!reserve) {
                // Most iterations stay inside the blocks a sequence holds: no division for those (a windowed
                // model's holding also shrinks, so it always asks KvLayout).
                const KvLayout& kv = kv_[r.pool];
                const long long shared = q.shared_blocks;
                const bool inside = !kv.windowed() && q.ctx + tokens <= (q.blocks + shared) * e_.block_size;
                const long long need = inside ? q.blocks : kv.Held(q.ctx, tokens) - shared;
                bool ok = TakeBlocks(r, q, need);
                while (!ok && PreemptLast(r, i + 1)) ok = TakeBlocks(r, q, need);
                if (!ok) {  // nothing after it to preempt: it preempts itself
                    PreemptLast(r, i);
                    break;
                }
            }
            r.batch.push_back({i, tokens, drafts});
            if (CachesPrefixes(r)) reuse_.Scheduled(r.prefixes, q, tokens);
            AddToShape(b, q, tokens, window, drafts);
            if (dp > 1) AddToShape(r.gpu_shapes[static_cast<size_t>(q.gpu)], q, tokens, window, drafts);
            budget -= tokens;
        }
        // 2. Admission in the queue's order (none in an iteration that preempted, as vLLM does; a static batch
        // admits only when the previous batch has finished).
        const bool may_admit = !r.preempted_this_iteration && (!stat || r.running.empty());
        const long long max_seqs = static_cast<long long>(dp) * e_.max_seqs;
        while (may_admit && HasWaiting(r) && static_cast<long long>(r.running.size()) < max_seqs && budget > 0) {
            ServedRequest& q = FrontWaiting(r);
            const bool looks =
                (q.prefix >= 0 || q.turn > 0 || q.group >= 0) && CachesPrefixes(r) && !q.swapped && q.ctx == 0;
            const PrefixReuse::Found found = CachesPrefixes(r) ? reuse_.Find(r.prefixes, q) : PrefixReuse::Found{};
            const int feed = q.feed();
            const int tokens = static_cast<int>(std::min<long long>(feed, std::min(budget, chunk)));
            const long long need = (reserve ? ReservedBlocks(r, q) : kv_[r.pool].Held(q.ctx, tokens)) - q.shared_blocks;
            if ((!e_.chunked_prefill && !stat && tokens < feed) || !TakeBlocks(r, q, need, found.load)) {
                reuse_.Undo(r.prefixes, q, found);
                break;
            }
            if (found.where == PrefixCache::Where::host || found.where == PrefixCache::Where::remote)
                LoadPrefix(r, q, found);
            if (looks) reuse_.Count(q, found);
            if (q.swapped) {                                        // its cache comes back from the host before it runs
                const long long back = kv_[r.pool].Held(q.ctx, 0);  // what it held when swapped out
                q.swap_in = SwapSeconds(r, back, true);
                r.swap_seconds += q.swap_in;
                swapped_bytes_ += static_cast<double>(back) * BlockBytes(r.pool);
                q.swapped = false;
            }
            r.running.push_back(r.waiting.PopFront());
            r.batch.push_back({r.running.size() - 1, tokens});
            if (CachesPrefixes(r)) reuse_.Scheduled(r.prefixes, r.running.back(), tokens);
            AddToShape(b, r.running.back(), tokens, window);
            if (dp >
                1) {  // DeepSeek's decode balancer equalizes the requests a GPU runs: the fewest, the first on ties
                ServedRequest& q = r.running.back();
                q.gpu = static_cast<int>(std::min_element(r.on_gpu.begin(), r.on_gpu.end()) - r.on_gpu.begin());
                ++r.on_gpu[static_cast<size_t>(q.gpu)];
                AddToShape(r.gpu_shapes[static_cast<size_t>(q.gpu)], q, tokens, window);
            }
            budget -= tokens;
        }
        if (r.batch.empty()) {
            // A prefill replica whose free blocks are all on the link waits for a transfer to end (TransfersDone
            // marks it ready again), as Splitwise's prompt machines hold a prompt's cache until it is sent.
            if (r.running.empty() && r.sending_blocks > 0) return;
            if (!r.running.empty() || HasWaiting(r))
                throw Error("engine", "the scheduler can run nothing: max_seqs=" + std::to_string(e_.max_seqs) +
                                          ", max_tokens=" + std::to_string(e_.max_tokens) + ", " +
                                          std::to_string(r.free_blocks) + " free KV blocks");
            return;
        }
        PadForCudaGraph(r, b, dp, window);
        const IterationCost& cost = *pools_[r.pool].cost;
        const IterationBreakdown parts = dp > 1 ? BusiestGpu(cost, b, r.gpu_shapes) : cost.Breakdown(b);
        // Busy time per GPU: a pipelined replica's stages each do about 1/pp of the pass.
        const double share = 1.0 / cost.pp();
        parts_.linear += share * parts.linear, parts_.attention += share * parts.attention;
        parts_.elementwise += share * parts.elementwise, parts_.tp_comm += share * parts.tp_comm;
        parts_.ep_comm += share * parts.ep_comm;
        parts_.head += share * parts.head, parts_.pp_comm += share * parts.pp_comm;
        const double draft = speculator_.DraftSeconds(cost, window, [&](auto add) {
            for (const Scheduled& s : r.batch) add(r.running[s.index].ctx, s.drafts);
        });
        parts_.draft += share * draft;
        r.busy_until =
            r.pipeline < 0 ? now_ + parts.total() + draft + r.swap_seconds : ThroughStages(r, b, parts, dp > 1, draft);
        RecordIteration(r);
        ++iterations_;
        batch_tokens_ += b.tokens();
        running_sum_ += static_cast<double>(r.running.size());
    }

    // A decode-only iteration replays the captured CUDA graph of the smallest size at or above its sequences
    // (EngineConfig::cuda_graph_batch_sizes), every GPU of a data-parallel group the one for the busiest GPU's count
    // (TensorRT-LLM's CUDAGraphRunner pads each rank to the size chosen from the all-gathered batch sizes). The
    // padding rows are a dummy generation request of one cached token, computed like any other row; under
    // speculative decoding it carries the engine's draft tokens, as TensorRT-LLM's dummy does (max_num_draft_tokens).
    void PadForCudaGraph(Replica& r, BatchShape& b, int dp, const SlidingWindow& window) {
        const std::vector<int>& sizes = graph_sizes_;
        if (sizes.empty() || r.batch.empty()) return;
        for (const Scheduled& s : r.batch)
            if (!r.running[s.index].decoding()) return;  // prompt tokens: an eager iteration
        double most = b.sequences;
        if (dp > 1) {
            most = 0;
            for (const BatchShape& g : r.gpu_shapes) most = std::max(most, g.sequences);
        }
        const auto size = std::lower_bound(sizes.begin(), sizes.end(), static_cast<int>(std::ceil(most)));
        if (size == sizes.end()) return;  // above the largest graph: eager, unpadded
        ++graph_replays_;
        graph_real_ += b.sequences;
        graph_dummies_ += (dp > 1 ? dp : 1) * static_cast<double>(*size) - b.sequences;
        const int drafts = e_.speculation.tokens;
        BatchShape dummy;
        if (drafts > 0) {
            dummy.AddPrefillChunk(1, 1 + drafts, window);
            dummy.logits = 1 + drafts;
        } else {
            dummy.AddDecode(1, window);
            dummy.logits = 1;
        }
        if (dp <= 1) return b.Add(dummy, *size - b.sequences);
        for (BatchShape& g : r.gpu_shapes) {
            const double n = *size - g.sequences;
            g.Add(dummy, n), b.Add(dummy, n);
        }
    }

    // Under data-parallel attention the iteration is its slowest GPU's, which waits for the others at every MoE
    // layer: of the GPU computing the most tokens and the one reading the most cached keys, the slower (two
    // evaluations, where timing every GPU of a large group would cost one each).
    static IterationBreakdown BusiestGpu(const IterationCost& cost, const BatchShape& group,
                                         const std::vector<BatchShape>& gpus) {
        auto most = [&](auto key) {
            return &*std::max_element(gpus.begin(), gpus.end(),
                                      [&](const BatchShape& x, const BatchShape& y) { return key(x) < key(y); });
        };
        const BatchShape* tokens = most([](const BatchShape& x) { return x.tokens(); });
        const BatchShape* keys = most([](const BatchShape& x) { return x.decode_keys + x.prefill_pairs; });
        IterationBreakdown t = cost.Breakdown(group, tokens);
        if (keys != tokens) {
            const IterationBreakdown k = cost.Breakdown(group, keys);
            if (k.total() > t.total()) t = k;
        }
        return t;
    }

    // A pipelined replica's batch enters stage 0 when its swaps are done and the stage is free, and each next
    // stage when its activations have arrived and the stage has finished the batches that entered before it:
    // every stage serves batches in the order they started (a permutation flow shop), so reserving each stage
    // when the iteration starts is exact. With pp batches in flight the slowest stage sets the throughput.
    // Under data-parallel attention the stages are the busiest GPU's (`parts`, IterationCost::DpPipeline).
    double ThroughStages(Replica& r, const BatchShape& b, const IterationBreakdown& parts, bool dp, double draft) {
        PipelineTimes p = dp ? pools_[r.pool].cost->DpPipeline(parts) : pools_[r.pool].cost->Pipeline(b);
        p.stage.back() += draft;  // the draft head runs on the last stage, beside the LM head
        std::vector<double>& free_at = pipelines_[static_cast<size_t>(r.pipeline)];
        double t = now_ + r.swap_seconds;
        for (size_t s = 0; s < p.stage.size(); ++s) {
            t = std::max(t, free_at[s]) + p.stage[s];
            free_at[s] = t;
            if (s < p.send.size()) t += p.send[s];
        }
        return t;
    }

    // The sampled requests' spans of the iteration just started: what each running request does in it.
    void RecordIteration(Replica& r) {
        if (!timelines_.Recording()) return;
        for (const Scheduled& s : r.batch) {
            ServedRequest& q = r.running[s.index];
            q.scheduled_in = iterations_;
            const SpanKind kind = q.decoding() ? SpanKind::decode : SpanKind::prefill;
            const int tokens = kind == SpanKind::decode ? 1 + s.drafts : s.tokens;
            timelines_.Run(q.timeline, kind, now_, r.busy_until, Numbered(r), tokens, q.swap_in);
            q.swap_in = 0;
        }
        for (ServedRequest& q : r.running)
            if (q.timeline >= 0 && q.scheduled_in != iterations_)
                timelines_.Run(q.timeline, SpanKind::stalled, now_, r.busy_until, Numbered(r), 0);
    }

    // A sequence completes (completions.h keeps the books); its client sends its next conversation when the last turn
    // of this one completes.
    void Complete(ServedRequest& q) {
        timelines_.Complete(q.timeline, now_);
        if (!completions_.Complete(q, now_)) return;
        if (w_.arrival == ArrivalKind::closed_loop && q.turn + 1 >= w_.turns &&
            arrived_ + static_cast<long long>(closed_pending_.size()) < w_.requests)
            closed_pending_.push_back({now_, q.client});
    }

    void FinishIteration(Replica& r) {
        r.busy_until = kNever;
        for (const Scheduled& s : r.batch) {
            ServedRequest& q = r.running[s.index];
            if (s.drafts > 0) {  // its last token, the drafts accepted and the model's next token
                const int kept = 1 + speculator_.Accepted(s.drafts);
                q.ctx += kept, q.generated += kept;
                continue;
            }
            q.ctx += s.tokens;
            if (q.ctx == q.input + q.generated) {
                ++q.generated;
                if (q.first_token < 0) {
                    q.first_token = now_;
                    timelines_.FirstToken(q.timeline, now_);
                    completions_.FirstToken(q, now_);
                }
            }
        }
        // Completed requests leave (their state is dropped, their blocks freed); a prefill replica's requests
        // leave after their first token, for the link to the decode pool, holding their blocks until it ends.
        size_t kept = 0;
        for (size_t i = 0; i < r.running.size(); ++i) {
            ServedRequest& q = r.running[i];
            const bool done = q.generated >= q.output;
            if (!done && !(r.role == Role::prefill && q.generated >= 1)) {
                if (kept != i) r.running[kept] = std::move(q);
                ++kept;
                continue;
            }
            if (done) {
                reuse_.Finished(r.prefixes, q, CachesPrefixes(r) && r.role == Role::mixed);
                r.free_blocks += q.blocks;
                used_blocks_ -= q.blocks;
                if (q.turn + 1 < w_.turns) followups_.push_back(NextTurn(q));
                Complete(q);
                continue;
            }
            q.prefill_done = now_;
            const double arrives = now_ + transfer_.Seconds(q.ctx);
            timelines_.Transfer(q.timeline, now_, arrives, Numbered(r));
            r.sending_blocks += q.blocks;
            transfers_.push({arrives, transfer_seq_++, std::move(q), static_cast<size_t>(IndexOf(r))});
        }
        r.running.resize(kept);
        r.batch.clear();
    }

    void Advance(double t) {
        const double dt = t - now_;
        const long long waiting = static_cast<long long>(transfers_.size()) + waiting_total_ + retrieval_.InSystem();
        const long long running = running_total_;
        in_system_area_ += dt * static_cast<double>(waiting + running);
        waiting_area_ += dt * static_cast<double>(waiting);
        // Occupancy counts the blocks requests hold; cached prefixes no request uses are free to evict, as vLLM
        // counts them (PrefixCache::idle_blocks), and go in their own area.
        const long long in_use = used_blocks_ - idle_cached_blocks_;
        kv_area_ += dt * static_cast<double>(in_use);
        cached_area_ += dt * static_cast<double>(idle_cached_blocks_);
        series_.Add(now_, t, all_blocks_ > 0 ? in_use / all_blocks_ : 0, static_cast<double>(running),
                    static_cast<double>(waiting));
        now_ = t;
        peak_used_ = std::max(peak_used_, in_use);
    }

    ServingResult Results() {
        ServingResult s;
        s.gpus = c_.pool.gpus() + (c_.decode_pool ? c_.decode_pool->gpus() : 0);
        completions_.Fill(s);
        if (s.duration > 0)
            s.mean_in_system = in_system_area_ / s.duration, s.mean_waiting = waiting_area_ / s.duration;
        s.kv_blocks = pools_[0].kv_blocks;
        s.decode_kv_blocks = c_.decode_pool ? pools_[1].kv_blocks : 0;
        if (all_blocks_ > 0 && s.duration > 0) s.kv_occupancy_mean = kv_area_ / s.duration / all_blocks_;
        if (all_blocks_ > 0 && s.duration > 0) s.kv_cached_idle_mean = cached_area_ / s.duration / all_blocks_;
        if (all_blocks_ > 0) s.kv_occupancy_peak = peak_used_ / all_blocks_;
        s.preemptions = preemptions_;
        // Per rank: each swap moved its bytes on every rank of its replica (on its one GPU under data-parallel
        // attention, which counts each GPU as a replica here); the sum over replicas divided by them.
        const long long replicas = c_.pool.replicas * static_cast<long long>(pools_[0].attention_dp) +
                                   (c_.decode_pool ? c_.decode_pool->replicas * 1LL * pools_[1].attention_dp : 0);
        s.swapped_bytes = swapped_bytes_ / static_cast<double>(replicas);
        s.used_blocks_at_first_preemption = first_preempt_used_;
        s.iterations = iterations_;
        s.graph_iterations = graph_replays_, s.graph_dummy_rows = graph_dummies_, s.graph_real_rows = graph_real_;
        if (iterations_ > 0)
            s.mean_batch_tokens = batch_tokens_ / iterations_, s.mean_running = running_sum_ / iterations_;
        speculator_.Fill(s);
        s.retrievals = retrieval_.queries(), s.retrieval_wait_mean = retrieval_.mean_wait();
        s.retrieval_utilization = retrieval_.Utilization(s.duration);
        s.busy = parts_;
        reuse_.Fill(s);
        // Each copy moved a block's bytes on every GPU of its replica: per GPU is the sum over the prefill pool's
        // replicas (every one of them, as the GPUs they hold) divided by them.
        const double prefill_replicas = static_cast<double>(c_.pool.replicas) * pools_[0].attention_dp;
        s.host_tier_loaded_bytes = host_loaded_bytes_ / prefill_replicas;
        s.host_tier_stored_bytes = host_stored_bytes_ / prefill_replicas;
        s.remote_tier_loaded_bytes = remote_loaded_bytes_ / prefill_replicas;
        s.remote_tier_stored_bytes = remote_stored_bytes_ / prefill_replicas;
        s.kv_transfers = transfer_count_;
        if (transfer_count_ > 0) s.kv_transfer_mean = transfer_sum_ / transfer_count_;
        s.series = series_.Points(s.duration);
        s.timelines = timelines_.Take();
        std::sort(s.timelines.begin(), s.timelines.end(),
                  [](const RequestTimeline& a, const RequestTimeline& b) { return a.id < b.id; });
        return s;
    }

    const ServingConfig& c_;
    const EngineConfig& e_;
    const std::vector<int> graph_sizes_;  // the decode graphs captured (CapturedGraphSizes)
    const Workload& w_;
    std::array<PoolModel, 2> pools_{};
    std::array<KvLayout, 2> kv_{};  // how each pool's sequences take blocks (sliding windows)
    KvTransferModel transfer_;
    Rng rng_;
    PrefixDraw draw_prefix_;
    PrefixReuse reuse_;
    RetrievalService retrieval_;
    Speculator speculator_;
    long long conversations_ = 0;          // started (Workload::turns > 1)
    long long made_ = 0;                   // requests made (a trace's index; with samples, ids count sequences)
    std::deque<ServedRequest> followups_;  // next turns, by the time they are sent (think time is fixed)
    // Bytes one GPU of the replica moved, summed over the replicas: by the host prefix tier, by the remote store.
    double host_loaded_bytes_ = 0, host_stored_bytes_ = 0;
    double remote_loaded_bytes_ = 0, remote_stored_bytes_ = 0;
    std::vector<Replica> replicas_;
    std::vector<size_t> ready_;  // replicas to look at at the next event (Replica::ready)
    // Iterations in flight: (end, replica), the earliest first and ties in index order.
    std::priority_queue<std::pair<double, size_t>, std::vector<std::pair<double, size_t>>,
                        std::greater<std::pair<double, size_t>>>
        busy_;
    long long waiting_total_ = 0, running_total_ = 0;  // over the replicas (Recount)
    std::array<size_t, 2> first_of_pool_{0, 0}, count_of_pool_{0, 0}, next_replica_{0, 0};
    std::array<size_t, 2> per_group_{1, 1};       // schedulers per replica of each pool (its pp)
    std::vector<std::vector<double>> pipelines_;  // per pipelined replica: when each stage is next free
    // (time, client), at most `concurrency`: a client sends its next request when its last completes, so times
    // are pushed in the clock's order and the front is always the earliest (a scan of every entry per event made
    // 100,000 clients take 4 s).
    std::deque<std::pair<double, int>> closed_pending_;
    std::priority_queue<InTransfer, std::vector<InTransfer>, std::greater<InTransfer>> transfers_;
    long long transfer_seq_ = 0, transfer_count_ = 0;
    double transfer_sum_ = 0;
    double now_ = 0, next_arrival_ = kNever, all_blocks_ = 0;
    long long arrived_ = 0, next_id_ = 0, preemptions_ = 0, first_preempt_used_ = -1;
    long long iterations_ = 0, used_blocks_ = 0, peak_used_ = 0;
    long long graph_replays_ = 0;                // iterations that replayed a captured CUDA graph (PadForCudaGraph)
    double graph_dummies_ = 0, graph_real_ = 0;  // their dummy and real decode rows
    std::optional<RemoteStore> remote_store_;    // engine.remote_cache_gib: every prefill scheduler's
    long long idle_cached_blocks_ = 0;           // of used_blocks_, cached prefixes no request uses (every scheduler's)
    double batch_tokens_ = 0, running_sum_ = 0, swapped_bytes_ = 0;
    double in_system_area_ = 0, waiting_area_ = 0, kv_area_ = 0, cached_area_ = 0;
    Completions completions_;
    IterationBreakdown parts_;
    SeriesRecorder series_;
    TimelineRecorder timelines_;
};

}  // namespace

// Built in place: the engine's prefix caches point at its own counter (PrefixCache's idle_total), so it never moves.
struct EngineSteps::State {
    State(const ServingConfig& c, PoolModel pool, std::optional<PoolModel> decode, KvTransferModel transfer)
        : engine(c, pool, decode, transfer) {}
    Engine engine;
};

EngineSteps::EngineSteps(const ServingConfig& c, PoolModel pool, std::optional<PoolModel> decode,
                         KvTransferModel transfer) {
    CheckPools(c, pool, decode);
    s_ = std::make_unique<State>(c, pool, decode, transfer);
}

EngineSteps::~EngineSteps() = default;
bool EngineSteps::Step() { return s_->engine.Step(); }
long long EngineSteps::completed() const { return s_->engine.completed(); }
ServingResult EngineSteps::Results() { return s_->engine.TakeResults(); }

}  // namespace sc
