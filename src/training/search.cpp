#include "training/search.h"

#include <algorithm>
#include <utility>

#include "config/error.h"
#include "config/numbers.h"
#include "parallel/job.h"
#include "parallel/memory.h"

namespace sc {

namespace {

std::vector<int> Divisors(int n) {
    std::vector<int> out;
    for (int d = 1; d <= n; ++d)
        if (n % d == 0) out.push_back(d);
    return out;
}

bool Allowed(const std::vector<int>& listed, int v) {
    return listed.empty() || std::find(listed.begin(), listed.end(), v) != listed.end();
}

template <class T>
bool Listed(const std::vector<T>& listed, T v) {
    return std::find(listed.begin(), listed.end(), v) != listed.end();
}

void CheckRequest(const ModelConfig& m, const SearchRequest& req) {
    RequirePositiveCount("gpus", req.gpus);
    if (req.gpus > kMaxRanks)
        throw Error("gpus",
                    "gpus=" + std::to_string(req.gpus) + "; at most " + std::to_string(kMaxRanks) + " ranks (2^24)");
    RequirePositiveCount("batch", req.batch, " (sequences per step)");
    if (req.top_k < 0) throw Error("top", "top=" + std::to_string(req.top_k) + " must be zero or positive");
    RequireShard(req.shard_index, req.shard_count);
    const SearchSpace& s = req.space;
    auto positive = [](const char* key, const std::vector<int>& v) {
        for (int x : v) RequirePositiveCount(key, x);
    };
    positive("tp", s.tp);
    positive("pp", s.pp);
    positive("cp", s.cp);
    positive("ep", s.ep);
    positive("microbatch", s.microbatch);
    positive("vstages", s.vstages);
    for (int z : s.zero)
        if (z < 0 || z > 3) throw Error("zero", "zero=" + std::to_string(z) + " is not a ZeRO stage (0, 1, 2 or 3)");
    for (int v : s.sp)
        if (v != 0 && v != 1) throw Error("sp", "sp=" + std::to_string(v) + " must be 0 (off) or 1 (on)");
    for (int v : s.a2a_overlap)
        if (v != 0 && v != 1)
            throw Error("a2a_overlap", "a2a_overlap=" + std::to_string(v) + " must be 0 (off) or 1 (on)");
    if (!(s.bucket_mb >= 1 && s.bucket_mb <= kMaxBucketMb)) throw Error("bucket_mb", "must be from 1 to 1048576 MiB");
    ValidateModelConfig(m);
    ParallelConfig probe;
    probe.order = s.order;
    ValidateParallel(m, probe);  // the rank order, once, with ValidateParallel's own message
}

// Every candidate of `req`, in enumeration order: sp outermost (one Job each), then the symbol binding
// (tp, cp, ep, microbatch), then pp (and so dp), schedule and vstages, recompute, the all-to-all overlap, ZeRO.
template <class F>
void Enumerate(const ModelConfig& m, const SearchRequest& req, F&& emit) {
    const SearchSpace& s = req.space;
    const int G = req.gpus, B = req.batch;
    const bool moe = m.is_moe();
    std::vector<int> sps = s.sp;
    std::sort(sps.begin(), sps.end());
    sps.erase(std::unique(sps.begin(), sps.end()), sps.end());
    const std::vector<int> gdiv = Divisors(G), bdiv = Divisors(B);
    std::vector<int> a2a_list = s.a2a_overlap;
    std::sort(a2a_list.begin(), a2a_list.end());
    a2a_list.erase(std::unique(a2a_list.begin(), a2a_list.end()), a2a_list.end());

    ParallelConfig p;
    p.batch = B;
    p.gpus = G;
    p.order = s.order;
    p.bucket_mb = s.bucket_mb;
    for (int sp : sps) {
        p.sp = sp == 1;
        for (int tp : gdiv) {
            if (!Allowed(s.tp, tp)) continue;
            if (m.heads % tp || (!m.is_mla() && m.kv_heads % tp) || m.ffn % tp) continue;
            if (moe && m.moe.shared_experts > 0 && (m.moe.shared_experts * m.moe.expert_ffn) % tp) continue;
            if (p.sp && tp == 1) continue;         // sequence parallelism without TP changes nothing
            if (moe && tp > 1 && !p.sp) continue;  // Megatron-Core: MoE with TP needs SP
            p.tp = tp;
            for (int cp : gdiv) {
                if ((G / tp) % cp || !Allowed(s.cp, cp)) continue;
                if (cp > 1 && m.seq % (2 * cp)) continue;
                p.cp = cp;
                for (int ep : gdiv) {
                    if (G % ep || !Allowed(s.ep, ep)) continue;
                    if (moe ? m.moe.experts % ep != 0 : ep != 1) continue;
                    p.ep = ep;
                    for (int mb : bdiv) {
                        if (!Allowed(s.microbatch, mb)) continue;
                        if (p.sp && (1LL * mb * m.seq / cp) % tp) continue;
                        p.microbatch = mb;
                        for (int pp : gdiv) {
                            if ((G / tp / cp) % pp || !Allowed(s.pp, pp)) continue;
                            if (pp > m.layers || (m.layers % pp && !s.uneven)) continue;
                            const int dp = G / tp / cp / pp;
                            // Experts fold over the stage's tp x cp x dp ranks (etp = 1: ExpertFoldRanks).
                            if ((G / pp) % ep || B % (1LL * dp * mb)) continue;
                            p.pp = pp;
                            p.dp = dp;
                            const int M = B / (dp * mb);
                            auto inner = [&] {
                                for (Recompute rc : s.recompute) {
                                    p.recompute = rc;
                                    const bool overlap_runs = p.a2a_overlap_runs(moe);
                                    for (int a2a : a2a_list) {
                                        if (a2a && !overlap_runs) continue;
                                        p.a2a_overlap = a2a != 0;
                                        for (int z : s.zero) {
                                            p.zero = z;
                                            emit(static_cast<const ParallelConfig&>(p));
                                        }
                                    }
                                    p.a2a_overlap = false;
                                }
                            };
                            for (Schedule schedule : s.schedules) {
                                p.schedule = schedule;
                                p.vstages = 1;
                                p.uneven = m.layers % pp != 0;
                                if (pp == 1) {
                                    // One stage: GPipe, 1F1B and ZB-H1 are the same run; interleaving, DualPipe
                                    // and the V schedules need pp >= 2.
                                    if (schedule == Schedule::interleaved || schedule == Schedule::dualpipe ||
                                        schedule == Schedule::zbv || schedule == Schedule::dualpipev ||
                                        schedule == Schedule::interleaved_zb)
                                        continue;
                                    if ((schedule == Schedule::gpipe || schedule == Schedule::zbh1) &&
                                        Listed(s.schedules, Schedule::one_f_one_b))
                                        continue;
                                    inner();
                                    continue;
                                }
                                // DualPipe: pp even, an even number of microbatches, at least 2*pp.
                                if (schedule == Schedule::dualpipe && (pp % 2 || M % 2 || M < 2 * pp)) continue;
                                // DualPipeV: at least 2*pp microbatches.
                                if (schedule == Schedule::dualpipev && M < 2 * pp) continue;
                                // ZB-V, DualPipeV: the layers over 2*pp stages, the V's two arms.
                                if (schedule == Schedule::zbv || schedule == Schedule::dualpipev) {
                                    if (2 * pp > m.layers || (m.layers % (2 * pp) && !s.uneven)) continue;
                                    p.uneven = m.layers % (2 * pp) != 0;
                                }
                                if (schedule != Schedule::interleaved && schedule != Schedule::interleaved_zb) {
                                    inner();
                                    continue;
                                }
                                if (M % pp) continue;
                                for (int v = 2; pp * v <= m.layers; ++v) {
                                    if ((m.layers % (pp * v) && !s.uneven) || !Allowed(s.vstages, v)) continue;
                                    p.vstages = v;
                                    p.uneven = m.layers % (pp * v) != 0;
                                    inner();
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

// The fewest offloaded layers that bring `job`'s memory within `capacity`, or 0 when none do (memory only: the
// estimate then times the copies). Sets job.par.offload_layers to the answer.
int FewestOffloadedLayersThatFit(Job& job, double capacity) {
    job.par.offload_layers = job.model.layers - 1;  // the most it can: if that does not fit, nothing does
    if (job.model.layers < 2 || StageMemoryOf(job, 0).total() > capacity) {
        job.par.offload_layers = 0;
        return 0;
    }
    for (int n = 1; n < job.model.layers; ++n) {
        job.par.offload_layers = n;
        if (StageMemoryOf(job, 0).total() <= capacity) return n;
    }
    job.par.offload_layers = 0;
    return 0;
}

bool Faster(const RankedLayout& a, const RankedLayout& b) {
    const double x = a.estimate.step_seconds, y = b.estimate.step_seconds;
    return x != y ? x < y : a.index < b.index;
}

}  // namespace

void ForEachCandidateLayout(const ModelConfig& m, const SearchRequest& req,
                            const std::function<void(const ParallelConfig&)>& f) {
    CheckRequest(m, req);
    Enumerate(m, req, f);
}

SearchResult SearchLayouts(const ModelConfig& m, const System& sys, const CalibrationTable* cal,
                           const TrainingOptions& opt, const SearchRequest& req) {
    CheckRequest(m, req);
    if (req.gpus > sys.TotalAccelerators())
        throw Error("gpus", "gpus=" + std::to_string(req.gpus) + " exceeds the " +
                                std::to_string(sys.TotalAccelerators()) + " accelerators of system " + sys.id);
    SearchResult result;
    SearchStats& st = result.stats;
    const double capacity = sys.accelerator.MemoryBytes();

    struct Variant {
        bool made = false;
        Job job;
        ParallelConfig bound;  // the configuration the job's values were evaluated for
    };
    Variant variants[2];
    std::vector<RankedLayout> heap;  // the top_k fastest so far, slowest on top
    const size_t k = static_cast<size_t>(req.top_k);
    uint64_t seq = 0;

    const uint64_t shards = static_cast<uint64_t>(req.shard_count), mine = static_cast<uint64_t>(req.shard_index);
    EstimateCache cache;  // consecutive layouts mostly share their arrangement of ranks and attention length
    // Offloading needs the host link's rate: where there is none, no layout offloads.
    bool offload = req.space.offload;
    if (offload) try {
            OffloadLinkOf(opt, cal, sys.accelerator);
        } catch (const Error&) {
            offload = false;
        }
    Enumerate(m, req, [&](const ParallelConfig& p) {
        const uint64_t index = seq++;
        if (shards > 1 && index % shards != mine) return;
        ++st.candidates;
        Variant& v = variants[p.sp ? 1 : 0];
        try {
            if (!v.made) {
                v.job = MakeJob(m, p, opt.kernels);
                v.made = true;
                v.bound = p;
            } else if (!SameBinding(v.bound, p)) {
                Rebind(v.job, p);
                v.bound = p;
            } else {
                ValidateParallel(m, p);
                v.job.par = p;
            }
        } catch (const Error&) {
            return;  // not a valid layout
        }
        ++st.valid;
        Job& job = v.job;
        job.par.offload_layers = 0;
        // Memory bound on the first stage (the most microbatches in flight, the embedding): a layout that does not
        // fit there does not fit, and EstimateTraining only adds to these bytes. Other stages: the estimate decides.
        // One that can offload is tried with the fewest offloaded layers that make it fit (one stage: this bound is
        // its memory).
        if (StageMemoryOf(job, 0).total() > capacity &&
            !(offload && p.offload_runs() && FewestOffloadedLayersThatFit(job, capacity) > 0))
            return;
        ++st.estimated;
        TrainingEstimate e = EstimateTraining(job, sys, cal, opt, {}, &cache);
        if (!e.fits) return;
        ++st.fitting;
        if (k == 0) return;
        RankedLayout cand;
        cand.index = index;
        cand.estimate.step_seconds = e.step_seconds;
        if (heap.size() == k && !Faster(cand, heap.front())) return;
        cand.par = p;
        cand.par.offload_layers = job.par.offload_layers;  // the layers it offloads to fit, if any
        cand.estimate = std::move(e);
        if (heap.size() == k) {
            std::pop_heap(heap.begin(), heap.end(), Faster);
            heap.pop_back();
        }
        heap.push_back(std::move(cand));
        std::push_heap(heap.begin(), heap.end(), Faster);
    });

    std::sort_heap(heap.begin(), heap.end(), Faster);
    result.top = std::move(heap);
    return result;
}

SearchResult MergeSearchResults(std::vector<SearchResult> shards, int top_k) {
    SearchResult r;
    for (SearchResult& s : shards) {
        r.stats.candidates += s.stats.candidates;
        r.stats.valid += s.stats.valid;
        r.stats.fitting += s.stats.fitting;
        r.stats.estimated += s.stats.estimated;
        for (RankedLayout& l : s.top) r.top.push_back(std::move(l));
    }
    std::sort(r.top.begin(), r.top.end(), Faster);
    if (r.top.size() > static_cast<size_t>(std::max(top_k, 0))) r.top.resize(static_cast<size_t>(std::max(top_k, 0)));
    return r;
}

}  // namespace sc
