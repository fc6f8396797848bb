#include "inference/engine.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <random>
#include <string>

#include "config/error.h"
#include "inference/latency_histogram.h"

namespace sc {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// Deterministic on every standard library (std::mt19937_64 is specified bit for bit; the distributions are
// not, so they are written here): the same seed gives the same run natively and in wasm.
class Rng {
public:
    explicit Rng(uint64_t seed) : g_(seed) {}
    double Uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }  // [0, 1)
    double Exponential(double rate) { return -std::log1p(-Uniform()) / rate; }
    int Between(int lo, int hi) {  // inclusive
        const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
        return lo + static_cast<int>(static_cast<uint64_t>(Uniform() * span) % span);
    }

private:
    std::mt19937_64 g_;
};

struct Request {
    long long id = 0;
    double arrival = 0;
    int input = 0, output = 0;
    int ctx = 0;         // tokens whose K and V are in the cache
    int generated = 0;   // output tokens sampled so far
    double first_token = -1;
    long long blocks = 0;  // KV blocks held
    int client = -1;       // closed-loop client that sent it
    int feed() const { return input + generated - ctx; }  // tokens to run through the model before the next sample
    bool decoding() const { return generated > 0 && feed() == 1; }
};

struct Scheduled {
    size_t index;  // into running
    int tokens;
};

struct Replica {
    std::deque<Request> waiting;
    long long lazy = 0;  // offline requests not created yet (they arrived at time 0, behind `waiting`)
    std::vector<Request> running;  // in admission order
    std::vector<Scheduled> batch;
    long long free_blocks = 0, total_blocks = 0;
    double busy_until = kNever;  // end of the running iteration
    bool preempted_this_iteration = false;
};

long long BlocksFor(long long tokens, int block_size) { return (tokens + block_size - 1) / block_size; }

class Engine {
public:
    Engine(const ServingConfig& c, const IterationCost& cost, long long kv_blocks)
        : c_(c), e_(c.engine), w_(c.workload), cost_(cost), rng_(w_.seed) {
        replicas_.resize(c.pool.replicas);
        for (Replica& r : replicas_) r.free_blocks = r.total_blocks = kv_blocks;
        CheckFits(kv_blocks);
        if (w_.arrival == ArrivalKind::offline) {
            for (size_t i = 0; i < replicas_.size(); ++i)
                replicas_[i].lazy = w_.requests / c.pool.replicas + (static_cast<long long>(i) < w_.requests % c.pool.replicas);
            arrived_ = w_.requests;
        } else if (w_.arrival == ArrivalKind::closed_loop) {
            const long long first = std::min<long long>(w_.concurrency, w_.requests);
            for (long long i = 0; i < first; ++i) closed_pending_.push_back({0.0, static_cast<int>(i)});
        } else {
            next_arrival_ = w_.arrival == ArrivalKind::poisson ? rng_.Exponential(w_.rate) : 1.0 / w_.rate;
        }
    }

    ServingResult Run() {
        while (true) {
            for (Replica& r : replicas_)
                if (r.busy_until == kNever) StartIteration(r);
            double next = NextArrival();
            for (const Replica& r : replicas_) next = std::min(next, r.busy_until);
            if (next == kNever) break;
            Advance(next);
            for (Replica& r : replicas_)
                if (r.busy_until == now_) FinishIteration(r);
            Arrivals();
        }
        return Results();
    }

private:
    void CheckFits(long long kv_blocks) {
        const long long longest = static_cast<long long>(w_.input.max) + w_.output.max;
        if (BlocksFor(longest, e_.block_size) > kv_blocks)
            throw Error("engine.kv_blocks", "a request of " + std::to_string(w_.input.max) + " + " +
                                                std::to_string(w_.output.max) + " tokens needs " +
                                                std::to_string(BlocksFor(longest, e_.block_size)) +
                                                " KV blocks but the cache holds " + std::to_string(kv_blocks) +
                                                "; use more memory, more GPUs per replica or shorter requests");
        // Without chunking a prompt runs whole: the longest is the prompt, or under on-demand blocks a preempted
        // request's prompt and all but its last output token, recomputed.
        const long long whole = e_.admission == KvAdmission::reserve_full ? w_.input.max : longest - 1;
        if (!e_.chunked_prefill && !e_.static_batching && whole > e_.max_tokens)
            throw Error("engine.max_tokens", "a prompt (with its recomputed output) of up to " + std::to_string(whole) +
                                                 " tokens does not fit the token budget of " +
                                                 std::to_string(e_.max_tokens) + " without chunked prefill; raise "
                                                 "max_tokens or enable chunked_prefill");
    }

    double NextArrival() const {
        if (w_.arrival == ArrivalKind::closed_loop) {
            double t = kNever;
            for (const auto& p : closed_pending_) t = std::min(t, p.first);
            return t;
        }
        return arrived_ < w_.requests ? next_arrival_ : kNever;
    }

    Request NewRequest(double arrival, int client) {
        Request q;
        q.id = next_id_++;
        q.arrival = arrival;
        auto draw = [&](const LengthDist& d) {
            return d.kind == LengthDist::Kind::fixed ? d.min : rng_.Between(d.min, d.max);
        };
        q.input = draw(w_.input);
        q.output = draw(w_.output);
        q.client = client;
        return q;
    }

    void Enqueue(Request q) {
        Replica& r = replicas_[next_replica_];
        next_replica_ = (next_replica_ + 1) % replicas_.size();
        r.waiting.push_back(q);
    }

    void Arrivals() {
        if (w_.arrival == ArrivalKind::closed_loop) {
            for (size_t i = 0; i < closed_pending_.size();) {
                if (closed_pending_[i].first <= now_) {
                    Enqueue(NewRequest(now_, closed_pending_[i].second));
                    ++arrived_;
                    closed_pending_.erase(closed_pending_.begin() + static_cast<long>(i));
                } else {
                    ++i;
                }
            }
            return;
        }
        while (arrived_ < w_.requests && next_arrival_ <= now_) {
            Enqueue(NewRequest(next_arrival_, -1));
            ++arrived_;
            next_arrival_ += w_.arrival == ArrivalKind::poisson ? rng_.Exponential(w_.rate) : 1.0 / w_.rate;
        }
    }

    bool HasWaiting(const Replica& r) const { return !r.waiting.empty() || r.lazy > 0; }
    Request& FrontWaiting(Replica& r) {
        if (r.waiting.empty()) {  // an offline request: created when first looked at, arrival time 0
            r.waiting.push_back(NewRequest(0.0, -1));
            --r.lazy;
        }
        return r.waiting.front();
    }

    // Preempts the most recently admitted running request that is not yet in this iteration's batch
    // (vLLM's recompute preemption: its blocks are freed and it goes back to the front of the queue).
    // Returns false when there is none left to preempt.
    bool PreemptLast(Replica& r, size_t protect_upto) {
        if (r.running.size() <= protect_upto) return false;
        Request q = r.running.back();
        r.running.pop_back();
        const long long used = r.total_blocks - r.free_blocks;
        if (preemptions_ == 0) first_preempt_used_ = used;
        ++preemptions_;
        r.free_blocks += q.blocks;
        used_blocks_ -= q.blocks;
        q.blocks = 0;
        q.ctx = 0;
        r.waiting.push_front(q);
        r.preempted_this_iteration = true;
        return true;
    }

    bool TakeBlocks(Replica& r, Request& q, long long needed_total) {
        const long long more = needed_total - q.blocks;
        if (more <= 0) return true;
        if (r.free_blocks < more) return false;
        r.free_blocks -= more;
        used_blocks_ += more;
        q.blocks += more;
        return true;
    }

    void StartIteration(Replica& r) {
        if (r.running.empty() && !HasWaiting(r)) return;
        r.batch.clear();
        r.preempted_this_iteration = false;
        const bool stat = e_.static_batching;
        long long budget = stat ? std::numeric_limits<long long>::max() : e_.max_tokens;
        const bool reserve = e_.admission == KvAdmission::reserve_full;
        // 1. The running sequences, oldest first.
        for (size_t i = 0; i < r.running.size() && budget > 0; ++i) {
            Request& q = r.running[i];
            int tokens = q.decoding() ? 1 : static_cast<int>(std::min<long long>(q.feed(), budget));
            if (!e_.chunked_prefill && !stat && tokens < q.feed()) continue;  // a whole prompt or nothing
            if (!reserve) {
                const long long need = BlocksFor(q.ctx + tokens, e_.block_size);
                bool ok = TakeBlocks(r, q, need);
                while (!ok && PreemptLast(r, i + 1)) ok = TakeBlocks(r, q, need);
                if (!ok) {  // nothing after it to preempt: it preempts itself
                    PreemptLast(r, i);
                    break;
                }
            }
            r.batch.push_back({i, tokens});
            budget -= tokens;
        }
        // 2. Admission, first come first served (none in an iteration that preempted, as vLLM does; a static
        // batch admits only when the previous batch has finished).
        const bool may_admit = !r.preempted_this_iteration && (!stat || r.running.empty());
        while (may_admit && HasWaiting(r) && static_cast<int>(r.running.size()) < e_.max_seqs && budget > 0) {
            Request& q = FrontWaiting(r);
            const int feed = q.feed();
            const int tokens = static_cast<int>(std::min<long long>(feed, budget));
            if (!e_.chunked_prefill && !stat && tokens < feed) break;
            const long long need = reserve ? BlocksFor(static_cast<long long>(q.input) + q.output, e_.block_size)
                                           : BlocksFor(q.ctx + tokens, e_.block_size);
            if (!TakeBlocks(r, q, need)) break;
            r.running.push_back(q);
            r.waiting.pop_front();
            r.batch.push_back({r.running.size() - 1, tokens});
            budget -= tokens;
        }
        if (r.batch.empty()) {
            if (!r.running.empty() || HasWaiting(r))
                throw Error("engine", "the scheduler can run nothing: max_seqs=" + std::to_string(e_.max_seqs) +
                                          ", max_tokens=" + std::to_string(e_.max_tokens) + ", " +
                                          std::to_string(r.free_blocks) + " free KV blocks");
            return;
        }
        BatchShape b;
        for (const Scheduled& s : r.batch) {
            const Request& q = r.running[s.index];
            const double p = q.ctx, c = s.tokens;
            if (q.decoding()) {
                b.decodes += 1;
                b.decode_keys += p + 1;
            } else {
                b.prefill_tokens += c;
                b.prefill_pairs += c * p + c * (c + 1) / 2;
                b.prefill_keys += p + c;
            }
            if (q.ctx + s.tokens == q.input + q.generated) b.logits += 1;
        }
        const IterationBreakdown parts = cost_.Breakdown(b);
        const double dt = parts.total();
        parts_.linear += parts.linear, parts_.attention += parts.attention, parts_.elementwise += parts.elementwise;
        parts_.tp_comm += parts.tp_comm, parts_.head += parts.head;
        r.busy_until = now_ + dt;
        ++iterations_;
        batch_tokens_ += b.tokens();
        running_sum_ += static_cast<double>(r.running.size());
    }

    void FinishIteration(Replica& r) {
        r.busy_until = kNever;
        for (const Scheduled& s : r.batch) {
            Request& q = r.running[s.index];
            q.ctx += s.tokens;
            if (q.ctx == q.input + q.generated) {
                ++q.generated;
                if (q.first_token < 0) {
                    q.first_token = now_;
                    ttft_.Add(now_ - q.arrival);
                }
            }
        }
        // Completed requests leave (their state is dropped; their blocks freed).
        std::vector<Request> keep;
        keep.reserve(r.running.size());
        for (Request& q : r.running) {
            if (q.generated < q.output) {
                keep.push_back(q);
                continue;
            }
            const double e2e = now_ - q.arrival;
            e2e_.Add(e2e);
            sum_e2e_ += e2e;
            if (q.output > 1) tpot_.Add((now_ - q.first_token) / (q.output - 1));
            r.free_blocks += q.blocks;
            used_blocks_ -= q.blocks;
            ++completed_;
            in_tokens_ += q.input;
            out_tokens_ += q.output;
            last_completion_ = now_;
            if (w_.arrival == ArrivalKind::closed_loop && arrived_ + static_cast<long long>(closed_pending_.size()) < w_.requests)
                closed_pending_.push_back({now_, q.client});
        }
        r.running.swap(keep);
        r.batch.clear();
    }

    void Advance(double t) {
        const double dt = t - now_;
        long long waiting = 0, running = 0;
        for (const Replica& r : replicas_) {
            waiting += static_cast<long long>(r.waiting.size()) + r.lazy;
            running += static_cast<long long>(r.running.size());
        }
        in_system_area_ += dt * static_cast<double>(waiting + running);
        waiting_area_ += dt * static_cast<double>(waiting);
        kv_area_ += dt * static_cast<double>(used_blocks_);
        now_ = t;
        peak_used_ = std::max(peak_used_, used_blocks_);
    }

    ServingResult Results() {
        ServingResult s;
        auto sum = [](const LatencyHistogram& h) {
            return LatencySummary{h.mean(), h.Quantile(0.5), h.Quantile(0.9), h.Quantile(0.99), h.min(), h.max()};
        };
        s.completed = completed_;
        s.gpus = c_.pool.tp * c_.pool.replicas;
        s.duration = last_completion_;
        s.ttft = sum(ttft_), s.tpot = sum(tpot_), s.e2e = sum(e2e_);
        if (s.duration > 0) {
            s.requests_per_s = completed_ / s.duration;
            s.input_tokens_per_s = in_tokens_ / s.duration;
            s.output_tokens_per_s = out_tokens_ / s.duration;
            s.output_tokens_per_s_per_gpu = s.output_tokens_per_s / s.gpus;
            s.mean_in_system = in_system_area_ / s.duration;
            s.mean_waiting = waiting_area_ / s.duration;
        }
        s.kv_blocks = replicas_.empty() ? 0 : replicas_[0].total_blocks;
        const double all_blocks = static_cast<double>(s.kv_blocks) * replicas_.size();
        if (all_blocks > 0 && s.duration > 0) s.kv_occupancy_mean = kv_area_ / s.duration / all_blocks;
        if (all_blocks > 0) s.kv_occupancy_peak = peak_used_ / all_blocks;
        s.preemptions = preemptions_;
        s.used_blocks_at_first_preemption = first_preempt_used_;
        s.iterations = iterations_;
        if (iterations_ > 0) s.mean_batch_tokens = batch_tokens_ / iterations_, s.mean_running = running_sum_ / iterations_;
        s.sum_e2e = sum_e2e_;
        s.busy = parts_;
        return s;
    }

    const ServingConfig& c_;
    const EngineConfig& e_;
    const Workload& w_;
    const IterationCost& cost_;
    Rng rng_;
    std::vector<Replica> replicas_;
    std::vector<std::pair<double, int>> closed_pending_;  // (time, client): at most `concurrency` entries
    double now_ = 0, next_arrival_ = kNever, last_completion_ = 0;
    long long arrived_ = 0, next_id_ = 0, completed_ = 0, preemptions_ = 0, first_preempt_used_ = -1;
    long long iterations_ = 0, used_blocks_ = 0, peak_used_ = 0;
    size_t next_replica_ = 0;
    double in_tokens_ = 0, out_tokens_ = 0, batch_tokens_ = 0, running_sum_ = 0;
    double in_system_area_ = 0, waiting_area_ = 0, kv_area_ = 0, sum_e2e_ = 0;
    LatencyHistogram ttft_, tpot_, e2e_;
    IterationBreakdown parts_;
};

}  // namespace

ServingResult Simulate(const ServingConfig& c, const IterationCost& cost, long long kv_blocks) {
    ValidateServingConfig(c);
    if (kv_blocks < 1) throw Error("engine.kv_blocks", "must be at least 1, got " + std::to_string(kv_blocks));
    Engine engine(c, cost, kv_blocks);
    return engine.Run();
}

ServingRun SimulateServing(const ServingConfig& c, const System& sys, const CalibrationTable* cal) {
    ValidateServingConfig(c);
    ServingRun run;
    run.kv = ComputeKvCapacity(c.model, c.precision, c.pool.tp, sys.accelerator, c.engine);
    // The context-attention kernel's efficiency is looked up at the mean prompt (a chunk when prompts are chunked).
    double typical_prompt = (c.workload.input.min + c.workload.input.max) / 2.0;
    if (c.engine.chunked_prefill && !c.engine.static_batching) typical_prompt = std::min<double>(typical_prompt, c.engine.max_tokens);
    IterationCost cost(c.model, c.precision, c.pool.tp, sys, cal, typical_prompt, c.engine.max_tokens);
    run.result = Simulate(c, cost, run.kv.blocks);
    return run;
}

}  // namespace sc
