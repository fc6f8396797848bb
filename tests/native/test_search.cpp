// Layout search: every result valid and fitting, the ranking equal to a brute-force loop that builds a fresh
// job for every layout (so Rebind reuse and the pre-filters are checked too), shards merging to the whole,
// and the fast memory / layout paths equal to the straightforward walks they replaced.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "config/error.h"
#include "parallel/layout.h"
#include "parallel/memory.h"
#include "parallel/schedule.h"
#include "test_util.h"
#include "trace_test_util.h"
#include "training/search.h"

namespace {

struct Cluster {
    sc::System sys;
    sc::CalibrationTable cal;
};

const Cluster& H100() {
    static const Cluster c = [] {
        const std::string root = SC_SOURCE_DIR;
        Cluster x;
        x.sys = sc::ParseSystem(sctest::ReadFile(root + "/presets/systems/dgx-h100-superpod.json"),
                                sctest::ReadFile(root + "/presets/hardware/h100-sxm.json"));
        x.cal = sc::ParseCalibration(sctest::ReadFile(root + "/presets/calibration/measured.json"));
        return x;
    }();
    return c;
}

struct Brute {
    sc::ParallelConfig par;
    sc::TrainingEstimate e;
};

// Every valid layout of (gpus, batch) found without the search's enumeration: all degrees 1..gpus, every
// microbatch, schedule, vstages, recompute, ZeRO, sp and the all-to-all overlap, filtered by ValidateParallel only,
// each estimated on a job of its own; one that does not fit and can offload, with the fewest offloaded layers that
// make it fit (each count estimated in turn). Skips the two exact duplicates the search drops: sp=1 with tp=1, gpipe with
// pp=1.
// With `uneven`, a pipeline whose positions do not divide the layers is split as uneven=1 splits it.
std::vector<Brute> BruteForce(const sc::ModelConfig& m, const sc::System& sys, const sc::CalibrationTable* cal,
                              const sc::TrainingOptions& opt, int gpus, int batch, bool uneven = false) {
    std::vector<Brute> out;
    for (int tp = 1; tp <= gpus; ++tp)
        for (int pp = 1; pp <= gpus; ++pp)
            for (int cp = 1; cp <= gpus; ++cp) {
                if (1LL * tp * pp * cp > gpus || gpus % (tp * pp * cp)) continue;
                const int dp = gpus / (tp * pp * cp);
                for (int ep = 1; ep <= tp * cp * dp; ++ep)  // experts fold over a stage's tp x cp x dp ranks
                    for (int mb = 1; mb <= batch; ++mb)
                        for (auto sched : {sc::Schedule::gpipe, sc::Schedule::one_f_one_b, sc::Schedule::interleaved})
                            for (int v = 1; v <= m.layers; ++v)
                                for (auto rc : {sc::Recompute::none, sc::Recompute::selective, sc::Recompute::full})
                                    for (int z = 0; z <= 3; ++z)
                                        for (int sp = 0; sp <= 1; ++sp)
                                            for (int a2a = 0; a2a <= 1; ++a2a) {
                                                if (sp && tp == 1) continue;
                                                if (sched == sc::Schedule::gpipe && pp == 1) continue;
                                                if (v > 1 && sched != sc::Schedule::interleaved) continue;
                                                // ValidateParallel says so too:
                                                if ((tp * cp * dp) % ep || batch % (mb * dp)) continue;
                                                sc::ParallelConfig p;
                                                p.tp = tp, p.pp = pp, p.dp = dp, p.cp = cp, p.ep = ep, p.sp = sp;
                                                p.microbatch = mb, p.batch = batch, p.schedule = sched, p.vstages = v;
                                                p.recompute = rc, p.zero = z, p.gpus = gpus, p.a2a_overlap = a2a;
                                                p.uneven = uneven && m.layers % p.pipeline_positions() != 0;
                                                try {
                                                    sc::ValidateParallel(m, p);
                                                } catch (const sc::Error&) {
                                                    continue;
                                                }
                                                sc::Job job = sc::MakeJob(m, p);
                                                sc::TrainingEstimate e = sc::EstimateTraining(job, sys, cal, opt);
                                                // Where Megatron-Core can offload and it does not fit: the fewest
                                                // offloaded layers that make it fit, by the estimate's own verdict.
                                                const bool can_offload = pp == 1 &&
                                                                         sched == sc::Schedule::one_f_one_b &&
                                                                         rc == sc::Recompute::none && !a2a;
                                                for (int n = 1; !e.fits && can_offload && n < m.layers; ++n) {
                                                    sc::ParallelConfig q = p;
                                                    q.offload_layers = n;
                                                    sc::TrainingEstimate f =
                                                        sc::EstimateTraining(sc::MakeJob(m, q), sys, cal, opt);
                                                    if (f.fits) p = q, e = std::move(f);
                                                }
                                                out.push_back({p, std::move(e)});
                                            }
            }
    return out;
}

std::string Key(const sc::ParallelConfig& p) { return sc::ParallelSpecString(p); }

// `offloaded`, when given, gets how many of the fitting layouts fit by offloading.
void ExpectSearchEqualsBruteForce(const sc::ModelConfig& m, int gpus, int batch, bool uneven = false,
                                  int* offloaded = nullptr) {
    sc::System sys = H100().sys;
    const sc::CalibrationTable* cal = &H100().cal;
    sc::TrainingOptions opt;
    // Capacity at the median memory peak: half of the layouts fit.
    std::vector<Brute> all = BruteForce(m, sys, cal, opt, gpus, batch, uneven);
    ASSERT_GT(all.size(), 20u);
    std::vector<double> peaks;
    for (const Brute& b : all) peaks.push_back(b.e.memory_peak);
    std::sort(peaks.begin(), peaks.end());
    sys.accelerator.hbm_capacity_gib_usable = peaks[peaks.size() / 2] / (1024.0 * 1024 * 1024);
    sys.accelerator.capacity_uses_marketing = false;
    all = BruteForce(m, sys, cal, opt, gpus, batch, uneven);

    sc::SearchRequest req;
    req.gpus = gpus, req.batch = batch, req.top_k = 1000000;
    req.space.uneven = uneven;
    sc::SearchResult r = sc::SearchLayouts(m, sys, cal, opt, req);

    std::vector<const Brute*> fit;
    for (const Brute& b : all)
        if (b.e.fits) fit.push_back(&b);
    EXPECT_EQ(r.stats.valid, all.size());
    EXPECT_EQ(r.stats.candidates, all.size());  // the pre-filters drop only invalid layouts
    EXPECT_EQ(r.stats.fitting, fit.size());
    ASSERT_GT(fit.size(), 0u);
    ASSERT_LT(fit.size(), all.size());
    ASSERT_EQ(r.top.size(), fit.size());

    // The same layouts with the same step times, fastest first.
    std::map<std::string, double> brute_time;
    for (const Brute* b : fit) brute_time[Key(b->par)] = b->e.step_seconds;
    double best_brute = 1e300;
    for (const Brute* b : fit) best_brute = std::min(best_brute, b->e.step_seconds);
    EXPECT_EQ(r.top[0].estimate.step_seconds, best_brute);
    for (size_t i = 0; i < r.top.size(); ++i) {
        const sc::RankedLayout& l = r.top[i];
        auto it = brute_time.find(Key(l.par));
        ASSERT_NE(it, brute_time.end()) << Key(l.par);
        EXPECT_DOUBLE_EQ(l.estimate.step_seconds, it->second) << Key(l.par);
        EXPECT_TRUE(l.estimate.fits);
        EXPECT_NO_THROW(sc::ValidateParallel(m, l.par));
        EXPECT_EQ(l.par.world(), gpus);
        EXPECT_EQ(l.par.global_batch(), batch);
        if (i > 0) {
            EXPECT_LE(r.top[i - 1].estimate.step_seconds, l.estimate.step_seconds);
        }
    }
    if (offloaded)
        for (const sc::RankedLayout& l : r.top) *offloaded += l.par.offload_layers > 0;
}

TEST(Search, DenseEqualsBruteForce) {
    // Some layouts fit only by offloading, and the search finds the same ones with the same fewest layers.
    int offloaded = 0;
    ExpectSearchEqualsBruteForce(sctest::SmallGpt(), 8, 8, false, &offloaded);
    EXPECT_GT(offloaded, 0);
}

TEST(Search, MoeEqualsBruteForce) { ExpectSearchEqualsBruteForce(sctest::SmallMoe(), 8, 8); }

// Six layers on 8 GPUs: pp=4, and pp=2 with 4 or 5 chunks, split only unevenly, are searched with --uneven on
// (the brute force sets uneven=1 on exactly those), and the uneven layouts are among the results.
TEST(Search, UnevenPipelinesEqualBruteForce) {
    sc::ModelConfig m = sctest::SmallGpt();
    m.layers = 6;
    ExpectSearchEqualsBruteForce(m, 8, 8, true);
    sc::SearchRequest req;
    req.gpus = 8, req.batch = 8, req.top_k = 1000000;
    const sc::SearchResult even = sc::SearchLayouts(m, H100().sys, &H100().cal, sc::TrainingOptions{}, req);
    req.space.uneven = true;
    const sc::SearchResult all = sc::SearchLayouts(m, H100().sys, &H100().cal, sc::TrainingOptions{}, req);
    EXPECT_GT(all.stats.valid, even.stats.valid);
    int pp4 = 0;
    for (const sc::RankedLayout& l : all.top) pp4 += l.par.pp == 4 && l.par.uneven;
    for (const sc::RankedLayout& l : even.top) EXPECT_FALSE(l.par.uneven || l.par.pp == 4) << Key(l.par);
    EXPECT_GT(pp4, 0);
}

TEST(Search, TopKIsThePrefixAndShardsMergeToTheWhole) {
    const sc::ModelConfig m = sctest::SmallGpt();
    sc::SearchRequest req;
    req.gpus = 16, req.batch = 32, req.top_k = 7;
    const sc::TrainingOptions opt;
    sc::SearchResult whole = sc::SearchLayouts(m, H100().sys, &H100().cal, opt, req);
    ASSERT_EQ(whole.top.size(), 7u);
    req.top_k = 100;
    sc::SearchResult more = sc::SearchLayouts(m, H100().sys, &H100().cal, opt, req);
    for (size_t i = 0; i < 7; ++i) EXPECT_EQ(Key(more.top[i].par), Key(whole.top[i].par));
    std::vector<sc::SearchResult> parts;
    for (int s = 0; s < 3; ++s) {
        sc::SearchRequest q = req;
        q.top_k = 7, q.shard_index = s, q.shard_count = 3;
        parts.push_back(sc::SearchLayouts(m, H100().sys, &H100().cal, opt, q));
    }
    sc::SearchResult merged = sc::MergeSearchResults(parts, 7);
    EXPECT_EQ(merged.stats.candidates, whole.stats.candidates);
    EXPECT_EQ(merged.stats.valid, whole.stats.valid);
    EXPECT_EQ(merged.stats.fitting, whole.stats.fitting);
    ASSERT_EQ(merged.top.size(), whole.top.size());
    for (size_t i = 0; i < merged.top.size(); ++i) {
        EXPECT_EQ(Key(merged.top[i].par), Key(whole.top[i].par));
        EXPECT_EQ(merged.top[i].estimate.step_seconds, whole.top[i].estimate.step_seconds);
    }
}

TEST(Search, RestrictedSpaceAndNothingFits) {
    const sc::ModelConfig m = sctest::SmallGpt();
    sc::SearchRequest req;
    req.gpus = 16, req.batch = 32;
    req.space.tp = {2};
    req.space.schedules = {sc::Schedule::one_f_one_b};
    req.space.zero = {1};
    sc::SearchResult r = sc::SearchLayouts(m, H100().sys, &H100().cal, sc::TrainingOptions{}, req);
    ASSERT_FALSE(r.top.empty());
    for (const sc::RankedLayout& l : r.top) {
        EXPECT_EQ(l.par.tp, 2);
        EXPECT_EQ(l.par.schedule, sc::Schedule::one_f_one_b);
        EXPECT_EQ(l.par.zero, 1);
    }
    sc::System tiny = H100().sys;
    tiny.accelerator.hbm_capacity_gib_usable = 1e-6;
    tiny.accelerator.capacity_uses_marketing = false;
    r = sc::SearchLayouts(m, tiny, &H100().cal, sc::TrainingOptions{}, req);
    EXPECT_TRUE(r.top.empty());
    EXPECT_GT(r.stats.valid, 0u);
    EXPECT_EQ(r.stats.fitting, 0u);
}

TEST(Search, BadRequestsNameTheField) {
    const sc::ModelConfig m = sctest::SmallGpt();
    sc::SearchRequest req;
    req.gpus = 4096, req.batch = 32;
    auto field = [&](const sc::SearchRequest& q) {
        try {
            sc::SearchLayouts(m, H100().sys, &H100().cal, sc::TrainingOptions{}, q);
        } catch (const sc::Error& e) {
            return e.field + " | " + e.what();
        }
        return std::string("no error");
    };
    EXPECT_EQ(field(req), "gpus | gpus: gpus=4096 exceeds the 1024 accelerators of system dgx-h100-superpod");
    req.gpus = 16;
    req.batch = 0;
    EXPECT_EQ(field(req).substr(0, 8), "batch | ");
    req.batch = 32;
    req.space.zero = {4};
    EXPECT_EQ(field(req), "zero | zero: zero=4 is not a ZeRO stage (0, 1, 2 or 3)");
    req.space.zero = {0};
    req.space.order = "tp-dp-pp";
    EXPECT_EQ(field(req).substr(0, 8), "order | ");
}

// ---- the fast paths the search relies on, against the walks they replaced ----

sc::StageMemory ReferenceStageMemory(const sc::Job& job, int stage) {
    const sc::ParallelConfig& p = job.par;
    const sc::PrecisionConfig& prec = job.model.precision;
    const double dp_group = 1.0 * p.dp * p.cp, edp_group = 1.0 * p.dp / p.ep * p.cp;
    sc::StageMemory mem;
    std::vector<double> act(p.active_vstages(), 0);
    double dense = 0, expert = 0, largest = 0, working = 0;
    for (int c = 0; c < p.active_vstages(); ++c)
        for (const sc::StageBlock& sb : sc::BlocksOfVstage(job, c * p.pp + stage)) {
            double bp = 0;
            for (const sc::Weight& w : sb.block->weights) {
                double n = sc::HeldParams(job, w);
                (w.expert ? expert : dense) += n;
                bp += n;
            }
            largest = std::max(largest, bp);
            act[c] += sc::SavedActivationBytes(job, *sb.block, p.recompute);
            if (p.recompute != sc::Recompute::none)
                working = std::max(working, sc::SavedActivationBytes(job, *sb.block, sc::Recompute::none) -
                                                sc::SavedActivationBytes(job, *sb.block, p.recompute));
        }
    mem.params = dense + expert;
    const double w = sc::BytesOf(prec.compute), g = sc::BytesOf(prec.grad);
    const double opt = (prec.master == prec.compute ? 0 : sc::BytesOf(prec.master)) + 2 * sc::BytesOf(prec.optimizer);
    auto sharded = [&](double b, bool s) {
        return s ? b * (dense / dp_group + expert / edp_group) : b * (dense + expert);
    };
    mem.weights = sharded(w, p.zero >= 3) + (p.zero >= 3 ? 2 * largest * w : 0);
    mem.gradients = sharded(g, p.zero >= 2);
    mem.optimizer = sharded(opt, p.zero >= 1);
    double cur = 0, peak = 0;
    int inflight = 0;
    for (const sc::PipelineStep& s : sc::PipelineSchedule(p, stage)) {
        if (s.forward) {
            cur += act[s.chunk], ++inflight;
            if (cur > peak) peak = cur, mem.peak_inflight = inflight;
        } else {
            cur -= act[s.chunk], --inflight;
        }
    }
    mem.activations = peak + working;
    return mem;
}

TEST(FastPaths, StageMemoryEqualsTheScheduleWalk) {
    sc::ModelConfig moe = sctest::SmallMoe();
    moe.moe.capacity_factor = 1.25;  // fractional activation sizes
    moe.layers = 24;
    sc::ModelConfig dense = sctest::SmallGpt();
    dense.layers = 24;
    int checked = 0;
    for (const sc::ModelConfig& m : {dense, moe})
        for (const char* spec :
             {"pp=4,dp=2,batch=64,schedule=interleaved,vstages=3", "pp=4,dp=2,batch=8,schedule=interleaved,vstages=2",
              "pp=2,dp=4,batch=32,schedule=interleaved,vstages=6", "pp=4,dp=1,batch=4,schedule=1f1b",
              "pp=4,dp=1,batch=32,schedule=1f1b,recompute=full", "pp=3,dp=2,batch=24,schedule=gpipe,zero=3",
              "pp=1,dp=4,batch=64,recompute=selective", "pp=5,dp=1,batch=10,uneven=1,schedule=1f1b",
              "pp=4,dp=2,batch=48,schedule=interleaved,vstages=2,microbatch=2,zero=1,uneven=1"}) {
            sc::ParallelConfig p = sc::ParseParallelSpec(spec);
            if (m.is_moe()) p.ep = 2, p.dp = std::max(p.dp, 2), p.batch = std::max(p.batch, 2 * p.microbatch * p.pp);
            if (p.schedule == sc::Schedule::interleaved && p.microbatches() % p.pp) continue;
            try {
                sc::ValidateParallel(m, p);
            } catch (const sc::Error& e) {
                ADD_FAILURE() << spec << ": " << e.what();
                continue;
            }
            sc::Job job = sc::MakeJob(m, p);
            for (int s = 0; s < p.pp; ++s) {
                sc::StageMemory a = sc::StageMemoryOf(job, s), b = ReferenceStageMemory(job, s);
                EXPECT_DOUBLE_EQ(a.params, b.params) << spec << " stage " << s;
                EXPECT_DOUBLE_EQ(a.weights, b.weights) << spec << " stage " << s;
                EXPECT_DOUBLE_EQ(a.gradients, b.gradients) << spec << " stage " << s;
                EXPECT_DOUBLE_EQ(a.optimizer, b.optimizer) << spec << " stage " << s;
                EXPECT_DOUBLE_EQ(a.activations, b.activations) << spec << " stage " << s;
                EXPECT_EQ(a.peak_inflight, b.peak_inflight) << spec << " stage " << s;
                ++checked;
            }
        }
    EXPECT_GT(checked, 40);
}

TEST(FastPaths, InterleavedPeakEqualsTheWalkForUnevenChunks) {
    // Uneven layer counts make the chunks' activations differ, so the alive bytes rise and fall in the steady state.
    int checked = 0;
    for (int layers : {24, 26, 29})
        for (int pp : {2, 3, 4})
            for (int v : {2, 3, 4})
                for (int mpp : {1, 2, 3, 5}) {
                    if (pp * v > layers) continue;
                    sc::ModelConfig m = sctest::SmallGpt();
                    m.layers = layers;
                    sc::ParallelConfig p;
                    p.pp = pp, p.vstages = v, p.schedule = sc::Schedule::interleaved, p.uneven = true;
                    p.batch = mpp * pp;
                    for (auto rc : {sc::Recompute::none, sc::Recompute::full}) {
                        p.recompute = rc;
                        sc::Job job = sc::MakeJob(m, p);
                        for (int st = 0; st < pp; ++st) {
                            sc::StageMemory a = sc::StageMemoryOf(job, st), b = ReferenceStageMemory(job, st);
                            EXPECT_DOUBLE_EQ(a.activations, b.activations)
                                << layers << " " << sc::ParallelSpecString(p) << " stage " << st;
                            EXPECT_EQ(a.peak_inflight, b.peak_inflight)
                                << layers << " " << sc::ParallelSpecString(p) << " stage " << st;
                            ++checked;
                        }
                    }
                }
    EXPECT_GT(checked, 300);
}

TEST(FastPaths, CommModelCacheEqualsAFreshModel) {
    // The search keeps one comm model while only microbatch, schedule, recomputation or ZeRO change; every other
    // field it reads (degrees, expert split, rank order, in-network reduction) must rebuild it, and a layout that
    // does not fit the system must not leave the previous model behind.
    const sc::System& sys = H100().sys;
    const sc::CalibrationTable* cal = &H100().cal;
    sc::CommModelCache cache;
    int compared = 0;
    const char* specs[] = {"tp=8,dp=16,pp=4,ep=8",      "tp=8,dp=16,pp=4,ep=8,microbatch=2,zero=1",
                           "tp=8,dp=16,pp=4,ep=16",     "tp=8,dp=16,pp=4,ep=8,etp=8",
                           "tp=4,cp=2,dp=16,pp=4,ep=8", "tp=8,dp=16,pp=4,ep=8,order=dp-tp-cp-pp",
                           "tp=8,dp=16,pp=4,ep=8",      "tp=8,dp=4096,pp=4"};
    for (bool inr : {false, true})
        for (const char* spec : specs) {
            const sc::ParallelConfig p = sc::ParseParallelSpec(spec);
            if (p.world() > sys.TotalAccelerators()) {
                EXPECT_THROW(cache.For(sys, p, inr, cal, true), sc::Error) << spec;
                continue;
            }
            const sc::CommModel& cached = cache.For(sys, p, inr, cal, true);
            const sc::CommModel fresh(sys, sc::Layout(p), inr, cal, true);
            for (int k = 0; k < static_cast<int>(sc::GroupKind::embed); ++k) {
                const auto g = static_cast<sc::GroupKind>(k);
                EXPECT_EQ(cached.GroupSize(g), fresh.GroupSize(g)) << spec;
                EXPECT_EQ(cached.MembersPerLevel(g), fresh.MembersPerLevel(g)) << spec;
                if (fresh.GroupSize(g) <= 1) continue;
                for (auto type :
                     {sc::CollectiveType::all_reduce, sc::CollectiveType::all_gather, sc::CollectiveType::all_to_all}) {
                    EXPECT_EQ(cached.Seconds(type, g, 64e6), fresh.Seconds(type, g, 64e6)) << spec;
                    ++compared;
                }
            }
            EXPECT_EQ(cached.P2PSeconds(1e6), fresh.P2PSeconds(1e6)) << spec;
        }
    EXPECT_GT(compared, 40);
}

TEST(FastPaths, EstimateCacheEqualsFreshEstimates) {
    // The search keeps one compute model while the attention call's length (s/cp) stays, and the kernel floor for
    // the whole search. Every field the compute model reads must rebuild it: a change of cp (the length), of the
    // accelerator (another System object) or of a windowed model's window; the estimates must be bit for bit the
    // ones without the cache.
    const std::string root = SC_SOURCE_DIR;
    const sc::CalibrationTable* cal = &H100().cal;
    const sc::System a100 = sc::ParseSystem(sctest::ReadFile(root + "/presets/systems/dgx-a100-superpod.json"),
                                            sctest::ReadFile(root + "/presets/hardware/a100-80gb.json"));
    const sc::ModelConfig dense = sc::ParseModelConfig(sctest::ReadFile(root + "/presets/models/llama3-8b.json"));
    const sc::ModelConfig windowed = sc::ParseModelConfig(sctest::ReadFile(root + "/presets/models/mistral-7b.json"));
    const sc::TrainingOptions opt;
    sc::EstimateCache cache;
    const char* specs[] = {"tp=8,dp=8,batch=64",      "tp=8,dp=8,batch=64,microbatch=2", "tp=4,cp=2,dp=8,batch=64",
                           "tp=2,cp=4,dp=8,batch=64", "tp=4,cp=2,dp=8,batch=64",         "tp=8,dp=8,batch=64"};
    int compared = 0;
    for (const sc::System* sys : {&H100().sys, &a100, &H100().sys})
        for (const sc::ModelConfig* m : {&dense, &windowed, &dense})
            for (const char* spec : specs) {
                const sc::Job job = sc::MakeJob(*m, sc::ParseParallelSpec(spec));
                const sc::TrainingEstimate cached = sc::EstimateTraining(job, *sys, cal, opt, {}, &cache);
                const sc::TrainingEstimate fresh = sc::EstimateTraining(job, *sys, cal, opt);
                EXPECT_EQ(cached.step_seconds, fresh.step_seconds) << m->name << " " << spec;
                for (const sc::BreakdownPart& part : sc::kBreakdownParts)
                    EXPECT_EQ(cached.step.*part.seconds, fresh.step.*part.seconds) << part.key << " " << spec;
                EXPECT_EQ(cached.memory_peak, fresh.memory_peak) << spec;
                ++compared;
            }
    EXPECT_EQ(compared, 54);
}

TEST(FastPaths, BlockCountsMatchTheBlockList) {
    sc::ModelConfig m = sctest::SmallMoe();
    m.layers = 11;
    m.moe.dense_layers = 3;
    sc::ParallelConfig p = sc::ParseParallelSpec("pp=3,dp=2,ep=2,batch=12,schedule=interleaved,vstages=2,uneven=1");
    sc::Job job = sc::MakeJob(m, p);
    for (int g = 0; g < job.total_vstages(); ++g) {
        sc::StageBlockCounts c = sc::BlockCountsOfVstage(job, g);
        std::array<int, 4> kinds{};
        int first = -1;
        for (const sc::StageBlock& sb : sc::BlocksOfVstage(job, g)) {
            kinds[static_cast<int>(sb.block->kind)]++;
            if (sb.layer >= 0 && first < 0) first = sb.layer;
        }
        EXPECT_EQ(kinds[0], c.embedding ? 1 : 0);
        EXPECT_EQ(kinds[1], c.dense);
        EXPECT_EQ(kinds[2], c.moe);
        EXPECT_EQ(kinds[3], c.head ? 1 : 0);
        if (first >= 0) {
            EXPECT_EQ(first, c.first_layer);
        }
    }
}

TEST(FastPaths, GroupMembersAreAscendingAndComplete) {
    for (const char* spec : {"tp=2,cp=2,dp=4,ep=2,pp=3", "tp=4,cp=1,dp=6,ep=3,pp=2,order=pp-dp-tp-cp",
                             "tp=2,cp=3,dp=2,pp=2,order=dp-pp-cp-tp",
                             // Expert parallelism folded over TP and DP ranks (ep does not divide dp), with
                             // pp in the middle of the order, and experts split over TP.
                             "tp=2,cp=1,dp=3,ep=6,pp=2", "tp=2,cp=2,dp=3,ep=4,pp=2,order=tp-pp-dp-cp",
                             "tp=2,cp=2,dp=3,ep=3,etp=2,pp=2,order=cp-dp-tp-pp"}) {
        sc::ParallelConfig p = sc::ParseParallelSpec(spec);
        sc::Layout L(p);
        std::vector<int> members;
        for (int k = 0; k < static_cast<int>(sc::GroupKind::count); ++k) {
            auto kind = static_cast<sc::GroupKind>(k);
            if (L.GroupSize(kind) <= 1 || kind == sc::GroupKind::embed) continue;
            for (int g = 0; g < L.GroupCount(kind); ++g) {
                L.Members(kind, g, members);
                std::vector<int> expect;
                for (int r = 0; r < L.world(); ++r)
                    if (L.GroupId(kind, r) == L.FirstId(kind) + static_cast<uint32_t>(g)) expect.push_back(r);
                EXPECT_EQ(members, expect) << spec << " " << sc::NameOf(kind) << " group " << g;
                const auto [lo_rank, hi_rank] = L.MemberBounds(kind, g);
                EXPECT_EQ(lo_rank, members.front()) << spec << " " << sc::NameOf(kind) << " group " << g;
                EXPECT_EQ(hi_rank, members.back()) << spec << " " << sc::NameOf(kind) << " group " << g;
                for (long long lo : {0LL, 3LL, 5LL, 8LL, 17LL})
                    for (long long span : {1LL, 2LL, 4LL, 6LL, 16LL, 100LL}) {
                        long long n = std::count_if(members.begin(), members.end(),
                                                    [&](int r) { return r >= lo && r < lo + span; });
                        EXPECT_EQ(L.MembersInRange(kind, g, lo, lo + span), n)
                            << spec << " " << sc::NameOf(kind) << " [" << lo << ", +" << span << ")";
                    }
            }
        }
    }
}

// ---- the command ----

using sctest::CliResult;
using sctest::RunCli;

TEST(SearchCli, RanksLayoutsAndThreadsDoNotChangeTheAnswer) {
    const std::string base =
        "search --model presets/models/llama3-8b.json --system dgx-h100-superpod --gpus 64 --batch 128 "
        "--tp 1,2,4,8 --pp 1,2,4 --cp 1 --top 5 --json";
    CliResult one = RunCli(base + " --threads 1", false), three = RunCli(base + " --threads 3", false);
    ASSERT_EQ(one.status, 0) << one.out;
    EXPECT_EQ(one.out, three.out);
    EXPECT_NE(one.out.find("\"rank\": 5"), std::string::npos) << one.out;
    CliResult text = RunCli(
        "search --model presets/models/llama3-8b.json --system dgx-h100-superpod --gpus 64 --batch 128 "
        "--tp 8 --pp 1 --top 3");
    EXPECT_EQ(text.status, 0) << text.out;
    EXPECT_NE(text.out.find("layouts evaluated in"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("best: tp=8,pp=1"), std::string::npos) << text.out;
}

TEST(SearchCli, ClearErrors) {
    CliResult r =
        RunCli("search --model presets/models/gpt3-175b.json --system dgx-h100-superpod --gpus 4096 --batch 1536");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(
        r.out,
        "stagecraft search: error: --gpus: 4096 GPUs exceed the 1024 accelerators of dgx-h100-superpod; pass --extend "
        "to build it at that size (4 pods of 1024 joined by a core tier), or pick a larger system\n");
    // The hint says what --extend builds: a wider outer level where it is not a leaf-spine pod, nothing for a
    // torus pod with no network beyond it (it said "pods joined by a core tier" for every system).
    r = RunCli("search --model presets/models/llama3-8b.json --system tpu-v5p-pod --gpus 20000 --batch 1024");
    EXPECT_NE(r.out.find("pass --extend to build it at that size (dcn extended to 24576 accelerators)"),
              std::string::npos)
        << r.out;
    r = RunCli("search --model presets/models/llama3-8b.json --system tpu-v4-pod --gpus 8192 --batch 1024");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--gpus: 8192 GPUs exceed the 4096 accelerators of tpu-v4-pod; it cannot be extended: "
                         "gpus: 8192 accelerators do not fit in Google TPU v4 pod"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("--extend"), std::string::npos) << r.out;
    r = RunCli("search --model presets/models/gpt3-175b.json --system dgx-h100-superpod --gpus 64");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--batch: missing"), std::string::npos) << r.out;
    r = RunCli(
        "search --model presets/models/gpt3-175b.json --system dgx-h100-superpod --gpus 64 --batch 64 --schedule 2f2b");
    EXPECT_NE(r.out.find("--schedule: \"2f2b\" is not one of gpipe, 1f1b, interleaved"), std::string::npos) << r.out;
    r = RunCli(
        "search --model presets/models/gpt3-175b.json --system dgx-h100-superpod --gpus 64 --batch 64 --uneven 2");
    EXPECT_NE(r.out.find("--uneven: expected on or off, got \"2\""), std::string::npos) << r.out;
    r = RunCli(
        "search --model presets/models/mixtral-8x7b.json --system dgx-h100-superpod --gpus 16 --batch 64 "
        "--a2a-overlap maybe");
    EXPECT_NE(r.out.find("--a2a-overlap: expected on or off, got \"maybe\""), std::string::npos) << r.out;
    // The pipelines the layers do not divide are named, with the flag that searches them (96 layers: pp=64).
    r = RunCli("search --model presets/models/gpt3-175b.json --system dgx-h100-superpod --gpus 64 --batch 64 --tp 8");
    EXPECT_NE(r.out.find("not searched: pp=64, which do not divide the 96 layers (--uneven on splits them unevenly)"),
              std::string::npos)
        << r.out;
}

// An MoE model's search tries the EP all-to-all overlap where it can run, and --a2a-overlap restricts it: off leaves
// it out, on keeps only the layouts that run it. The two split the default search between them.
TEST(Search, TheAllToAllOverlapIsSearchedWhereItCanRun) {
    const sc::ModelConfig m = sctest::LoadModelPreset("mixtral-8x7b.json");
    const sc::System sys = H100().sys;
    sc::SearchRequest req;
    req.gpus = 16, req.batch = 64, req.top_k = 1000000;
    req.space.tp = {1}, req.space.ep = {1, 8}, req.space.zero = {1};
    auto run = [&](std::vector<int> a2a) {
        req.space.a2a_overlap = a2a;
        return sc::SearchLayouts(m, sys, &H100().cal, {}, req);
    };
    const sc::SearchResult both = run({0, 1}), off = run({0}), on = run({1});
    int with = 0;
    for (const sc::RankedLayout& l : both.top) {
        if (!l.par.a2a_overlap) continue;
        ++with;
        EXPECT_GT(l.par.ep, 1);
        EXPECT_NE(l.par.recompute, sc::Recompute::full);
        EXPECT_TRUE(l.par.pp == 1 ? l.par.schedule == sc::Schedule::one_f_one_b
                                  : l.par.schedule == sc::Schedule::interleaved);
    }
    EXPECT_GT(with, 0);
    for (const sc::RankedLayout& l : off.top) EXPECT_FALSE(l.par.a2a_overlap);
    for (const sc::RankedLayout& l : on.top) EXPECT_TRUE(l.par.a2a_overlap);
    EXPECT_EQ(on.top.size(), static_cast<size_t>(with));
    EXPECT_GT(on.stats.valid, 0u);
    EXPECT_EQ(off.stats.valid + on.stats.valid, both.stats.valid);
    EXPECT_EQ(off.stats.candidates + on.stats.candidates, both.stats.candidates);  // nothing tried that cannot run
}

}  // namespace
