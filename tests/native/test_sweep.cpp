// Co-design sweep: axes parse with clear errors, systems are modified as documented, the best step time
// responds to the hardware in the only direction it can (more FLOPS, bandwidth, capacity, FullFlat, overlap,
// in-network reduction never make it slower), and shards merge into exactly the unsharded rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "config/error.h"
#include "preset_files.h"
#include "report/search_report.h"
#include "test_util.h"
#include "trace_test_util.h"
#include "training/compute_model.h"
#include "training/kernel_floor.h"
#include "training/sweep.h"

namespace {

struct Base {
    sc::System sys;
    sc::CalibrationTable cal;
};

const Base& Cluster(const std::string& system, const std::string& acc) {
    static std::map<std::string, Base> cache;
    auto it = cache.find(system);
    if (it != cache.end()) return it->second;
    const std::string root = SC_SOURCE_DIR;
    Base b;
    b.sys = sc::ParseSystem(sctest::ReadFile(root + "/presets/systems/" + system + ".json"),
                            sctest::ReadFile(root + "/presets/hardware/" + acc + ".json"));
    b.cal = sc::ParseCalibration(sctest::ReadFile(root + "/presets/calibration/measured.json"));
    return cache[system] = b;
}
const Base& H100() { return Cluster("dgx-h100-superpod", "h100-sxm"); }
bool SamePoint(const sc::SweepPoint& a, const sc::SweepPoint& b) {
    return std::tie(a.flops, a.hbm_bw, a.hbm_capacity, a.domain, a.net_bw, a.topology, a.overlap, a.inr, a.gpus,
                    a.power_w) == std::tie(b.flops, b.hbm_bw, b.hbm_capacity, b.domain, b.net_bw, b.topology, b.overlap,
                                           b.inr, b.gpus, b.power_w);
}
const Base& A100() { return Cluster("dgx-a100-superpod", "a100-80gb"); }

std::string AxisError(const std::string& axis) {
    sc::SweepAxes a;
    try {
        sc::ParseSweepAxis(axis, a);
    } catch (const sc::Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(Sweep, AxesParseAndNameTheBadValue) {
    sc::SweepAxes a;
    sc::ParseSweepAxis("flops=1,2,4", a);
    sc::ParseSweepAxis("domain=8,72", a);
    sc::ParseSweepAxis("topology=two_tier,fullflat", a);
    sc::ParseSweepAxis("overlap=on,off", a);
    sc::ParseSweepAxis("inr=off", a);
    sc::ParseSweepAxis("hbm_capacity=0.5,1.5", a);
    EXPECT_EQ(a.flops, (std::vector<double>{1, 2, 4}));
    EXPECT_EQ(a.domain, (std::vector<int>{8, 72}));
    EXPECT_EQ(a.topology.size(), 2u);
    EXPECT_EQ(a.overlap, (std::vector<int>{sc::kOverlapAll, 0}));
    EXPECT_EQ(a.inr, (std::vector<int>{0}));
    std::vector<sc::SweepPoint> pts = sc::SweepPoints(a);
    ASSERT_EQ(pts.size(), 3u * 2 * 2 * 2 * 2);
    // flops outermost, inr innermost.
    EXPECT_EQ(pts[0].flops, 1);
    EXPECT_EQ(pts.back().flops, 4);
    EXPECT_EQ(pts[1].overlap, 0);
    EXPECT_EQ(pts[2].topology, sc::Topology::fullflat);
    // A shard reads its points one by one: the same points in the same order.
    ASSERT_EQ(sc::SweepPointCount(a), pts.size());
    for (size_t i = 0; i < pts.size(); ++i) {
        EXPECT_TRUE(SamePoint(sc::SweepPointAt(a, i), pts[i])) << "point " << i;
    }
    sc::SweepAxes every;  // every axis with two values: the digits of all ten
    for (const char* arg : {"flops=1,2", "hbm_bw=1,3", "hbm_capacity=1,1.5", "domain=8,72", "net_bw=1,4",
                            "topology=two_tier,fullflat", "overlap=on,off", "inr=on,off", "gpus=64,128", "power=0,500"})
        sc::ParseSweepAxis(arg, every);
    const std::vector<sc::SweepPoint> all = sc::SweepPoints(every);
    ASSERT_EQ(sc::SweepPointCount(every), 1024u);
    ASSERT_EQ(all.size(), 1024u);
    EXPECT_EQ(all[0].power_w, 0);  // power innermost, then gpus
    EXPECT_EQ(all[1].power_w, 500);
    EXPECT_EQ(all[0].gpus, 64);
    EXPECT_EQ(all[2].gpus, 128);
    for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_TRUE(SamePoint(sc::SweepPointAt(every, i), all[i])) << "point " << i;
    }

    EXPECT_EQ(AxisError("flops=1,0"), "flops: expected a positive factor (e.g. 0.5, 1, 2), got \"0\"");
    EXPECT_EQ(AxisError("flops=1,,2"), "flops: expected a positive factor (e.g. 0.5, 1, 2), got \"\"");
    EXPECT_EQ(AxisError("domain=8,x"), "domain: expected a scale-up domain size in accelerators (1 to 16M), got \"x\"");
    EXPECT_EQ(AxisError("topology=torus"), "topology: \"torus\" is not one of two_tier, fullflat");
    EXPECT_EQ(AxisError("overlap=maybe"), "overlap: expected on or off, got \"maybe\"");
    EXPECT_EQ(AxisError("gpus=64,0"), "gpus: expected a GPU count (1 to 16M), got \"0\"");
    EXPECT_EQ(AxisError("gpus=64,1e9"), "gpus: expected a GPU count (1 to 16M), got \"1e9\"");
    EXPECT_EQ(AxisError("flop=2"),
              "flop: unknown sweep axis; valid: flops hbm_bw hbm_capacity domain net_bw topology overlap inr gpus "
              "power");
    EXPECT_EQ(AxisError("power=500,-1"), "power: must be at least 0, got \"-1\"");
    EXPECT_EQ(AxisError("power=5x"), "power: expected a number, got \"5x\"");
    EXPECT_EQ(AxisError("flops"),
              "axis: expected name=v1,v2,... (e.g. flops=1,2,4), got \"flops\"; axes: flops hbm_bw "
              "hbm_capacity domain net_bw topology overlap inr gpus power");
}

TEST(Sweep, SystemIsModifiedAsDocumented) {
    const sc::System& base = H100().sys;
    sc::SweepPoint pt;
    pt.flops = 2, pt.hbm_bw = 3, pt.hbm_capacity = 1.5, pt.domain = 16, pt.net_bw = 4;
    sc::System s = sc::MakeSweepSystem(base, pt, 100);
    EXPECT_DOUBLE_EQ(sc::PeakFlops(s.accelerator, sc::Precision::bf16),
                     2 * sc::PeakFlops(base.accelerator, sc::Precision::bf16));
    EXPECT_DOUBLE_EQ(s.accelerator.hbm_bandwidth_tbps, 3 * base.accelerator.hbm_bandwidth_tbps);
    EXPECT_DOUBLE_EQ(s.accelerator.MemoryBytes(), 1.5 * base.accelerator.MemoryBytes());
    ASSERT_EQ(s.levels.size(), 2u);
    EXPECT_EQ(s.levels[0].size, 16);
    EXPECT_EQ(s.levels[1].size, 112);  // 100 GPUs in whole domains of 16
    // Any domain size is a what-if the sweep accepts (README Limits): 16 GPUs in domains of 3 are six whole
    // domains, 18 accelerators, where a preset's levels would have to divide each other.
    sc::SweepPoint odd;
    odd.domain = 3;
    sc::System three = sc::MakeSweepSystem(base, odd, 16);
    EXPECT_EQ(three.levels[0].size, 3);
    EXPECT_EQ(three.levels[1].size, 18);
    EXPECT_DOUBLE_EQ(s.levels[1].bandwidth_gbps, 4 * base.levels[1].bandwidth_gbps);
    EXPECT_EQ(s.levels[1].kind, sc::LevelKind::two_tier);

    pt.topology = sc::Topology::fullflat;
    pt.net_bw = 1;
    sc::System f = sc::MakeSweepSystem(base, pt, 100);
    EXPECT_EQ(f.levels[1].kind, sc::LevelKind::fullflat);
    EXPECT_DOUBLE_EQ(f.levels[1].EffectiveGBps(), base.levels[0].EffectiveGBps());  // NVLink-class everywhere
    EXPECT_DOUBLE_EQ(f.levels[1].latency_us, base.levels[0].latency_us);
    EXPECT_EQ(f.levels[0].bandwidth_gbps, base.levels[0].bandwidth_gbps);  // scale-up level unchanged

    // The point's part is an edit of the preset's: the preset figures stay, so the measured curves answer for it
    // scaled by edited / preset (the same fraction of its peak at every size: the test below).
    EXPECT_DOUBLE_EQ(sc::CalibrationScale(s.accelerator, sc::Precision::bf16), 2);
    EXPECT_DOUBLE_EQ(sc::CalibrationScale(s.accelerator, sc::Precision::fp8), 2);
    EXPECT_DOUBLE_EQ(sc::HbmCalibrationScale(s.accelerator), 3);

    // A first level that is neither a scale-up domain, a torus nor the one level of a FullFlat system has no
    // defined sweep (a FullFlat system sweeps: SweepSystem.AFullFlatSystemSweepsItsChipAndNetwork).
    sc::System two_tier_first = base;
    two_tier_first.levels[0].kind = sc::LevelKind::two_tier;
    try {
        sc::MakeSweepSystem(two_tier_first, sc::SweepPoint{}, 64);
        ADD_FAILURE() << "no error";
    } catch (const sc::Error& e) {
        EXPECT_EQ(e.field, "system");
    }
    EXPECT_NO_THROW(sc::MakeSweepSystem(Cluster("gb200-fullflat", "gb200").sys, sc::SweepPoint{}, 64));
    sc::System grown = sc::ExtendSystem(base, 4096);
    EXPECT_EQ(grown.TotalAccelerators(), 4096);
    EXPECT_EQ(grown.levels[0].size, 8);
}

TEST(Sweep, GemmsRunAtTheSameFractionOfTheScaledPeak) {
    // A point at flops=f is a part whose measured GEMM rates are f times the base's, by FLOP count and by shape
    // alike: every GEMM reaches the same fraction of the scaled peak, so a compute-bound one takes 1/f the time.
    // (Until 2026-11-26 the sweep scaled the table's curves but not its by-shape grid (XLA's sm_90 / sm_100
    // tables): on H100 a 2x FLOPS point ran its shaped GEMMs at half the efficiency, in the same time, and the
    // flops axis moved a step by 6%.) The kernel's fixed cost is a time, not a rate: it stays, as under an edit.
    sc::SweepPoint pt;
    pt.flops = 2;
    const sc::TrainingOptions opt;
    const sc::GemmDims shapes[] = {{4096, 4096, 4096}, {512, 8192, 4096}, {8192, 1024, 256}, {}};
    int compared = 0;
    for (const Base* b : {&H100(), &A100()}) {
        const sc::System s = sc::MakeSweepSystem(b->sys, pt, 8);
        const sc::ComputeModel before(b->sys.accelerator, sc::Precision::bf16, &b->cal, opt);
        const sc::ComputeModel after(s.accelerator, sc::Precision::bf16, &b->cal, opt);
        const double alpha = sc::TrainingKernelFloor(&b->cal, b->sys.accelerator).alpha_s;
        EXPECT_GT(alpha, 0) << b->sys.accelerator.id;
        EXPECT_EQ(sc::TrainingKernelFloor(&b->cal, s.accelerator).alpha_s, alpha) << b->sys.accelerator.id;
        for (const sc::GemmDims& d : shapes) {
            const double flops = d.known() ? 2 * d.m * d.n * d.k : 2 * 4096.0 * 4096 * 4096;
            EXPECT_DOUBLE_EQ(after.MatmulEfficiency(flops, d), before.MatmulEfficiency(flops, d))
                << b->sys.accelerator.id << " " << d.m << "x" << d.n << "x" << d.k;
            EXPECT_DOUBLE_EQ(after.Seconds(sc::OpKind::matmul, flops, 0, true, 1, false, false, d),
                             before.Seconds(sc::OpKind::matmul, flops, 0, true, 1, false, false, d) / 2);
            ++compared;
        }
    }
    EXPECT_EQ(compared, 8);
}

std::vector<sc::SweepModel> Models() {
    sc::ModelConfig dense = sctest::SmallGpt(), moe = sctest::SmallMoe();
    dense.layers = moe.layers = 8;
    return {{"dense", dense}, {"moe", moe}};
}

sc::SweepRequest Request() {
    sc::SweepRequest r;
    r.gpus = 16;
    r.batch = 32;
    // A smaller space keeps the test quick; the monotonicity holds for any fixed space.
    r.space.recompute = {sc::Recompute::none, sc::Recompute::full};
    r.space.zero = {1, 3};
    return r;
}

// Best step time per (point, model) over the axes, keyed by the point's fields.
std::vector<sc::SweepRow> Rows(const Base& b, const sc::SweepAxes& axes) {
    return sc::RunSweep(Models(), b.sys, &b.cal, sc::TrainingOptions{}, axes, Request());
}

// For every pair of rows that differ only in `axis`, the row with the better value is no slower.
template <class Better>
void ExpectNoSlower(const std::vector<sc::SweepRow>& rows, Better better, const char* what) {
    int pairs = 0;
    for (const sc::SweepRow& x : rows)
        for (const sc::SweepRow& y : rows) {
            if (x.model_index != y.model_index || !better(x.point, y.point)) continue;
            ASSERT_TRUE(x.found && y.found);
            EXPECT_LE(x.estimate.step_seconds, y.estimate.step_seconds * (1 + 1e-12))
                << what << " " << x.model << " point " << x.point_index << " vs " << y.point_index;
            ++pairs;
        }
    EXPECT_GT(pairs, 0) << what;
}

const auto Same = SamePoint;

TEST(Sweep, MoreHardwareIsNeverSlower) {
    sc::SweepAxes a;
    a.flops = {1, 2, 4};
    a.hbm_bw = {1, 2};
    a.net_bw = {0.5, 1};
    a.hbm_capacity = {0.25, 1};
    std::vector<sc::SweepRow> rows = Rows(H100(), a);
    ASSERT_EQ(rows.size(), 3u * 2 * 2 * 2 * 2);
    ExpectNoSlower(
        rows, [](sc::SweepPoint x, sc::SweepPoint y) { return x.flops > y.flops && (x.flops = y.flops, Same(x, y)); },
        "flops");
    ExpectNoSlower(
        rows,
        [](sc::SweepPoint x, sc::SweepPoint y) { return x.hbm_bw > y.hbm_bw && (x.hbm_bw = y.hbm_bw, Same(x, y)); },
        "hbm_bw");
    ExpectNoSlower(
        rows,
        [](sc::SweepPoint x, sc::SweepPoint y) { return x.net_bw > y.net_bw && (x.net_bw = y.net_bw, Same(x, y)); },
        "net_bw");
    ExpectNoSlower(
        rows,
        [](sc::SweepPoint x, sc::SweepPoint y) {
            return x.hbm_capacity > y.hbm_capacity && (x.hbm_capacity = y.hbm_capacity, Same(x, y));
        },
        "hbm_capacity");
    // Twice the base FLOPS is really faster (not only "not slower"). These small models' steps are about 1 ms of
    // 5 us kernels: at 2x two thirds of the step is the kernels' fixed cost, and from 2x to 4x what the FLOPS save
    // the fixed cost takes back (a launch does not speed up with the tensor cores: it stays, as under --system-set).
    int pairs = 0;
    for (const sc::SweepRow& x : rows)
        for (const sc::SweepRow& y : rows)
            if (x.model_index == y.model_index && x.point.flops == 2 && y.point.flops == 1 &&
                x.point.hbm_bw == y.point.hbm_bw && x.point.net_bw == y.point.net_bw &&
                x.point.hbm_capacity == y.point.hbm_capacity) {
                EXPECT_LT(x.estimate.step_seconds, y.estimate.step_seconds);
                ++pairs;
            }
    EXPECT_EQ(pairs, 16);
}

TEST(Sweep, FullFlatOverlapAndInNetworkReductionAreNeverSlower) {
    for (const Base* b : {&H100(), &A100()}) {  // A100: in-network reduction only on the InfiniBand level
        sc::SweepAxes a;
        a.topology = {sc::Topology::two_tier, sc::Topology::fullflat};
        a.domain = {4, 8};
        a.overlap = {0, sc::kOverlapAll};
        a.inr = {0, 1};
        std::vector<sc::SweepRow> rows = Rows(*b, a);
        ExpectNoSlower(
            rows,
            [](sc::SweepPoint x, sc::SweepPoint y) {
                return x.topology == sc::Topology::fullflat && y.topology == sc::Topology::two_tier &&
                       (x.topology = y.topology, Same(x, y));
            },
            "fullflat");
        ExpectNoSlower(
            rows,
            [](sc::SweepPoint x, sc::SweepPoint y) {
                return x.overlap == sc::kOverlapAll && y.overlap == 0 && (x.overlap = 0, Same(x, y));
            },
            "overlap");
        ExpectNoSlower(
            rows,
            [](sc::SweepPoint x, sc::SweepPoint y) { return x.inr == 1 && y.inr == 0 && (x.inr = 0, Same(x, y)); },
            "inr");
    }
}

TEST(Sweep, ShardsMergeIntoTheUnshardedRows) {
    sc::SweepAxes a;
    a.flops = {1, 2};
    a.topology = {sc::Topology::two_tier, sc::Topology::fullflat};
    const sc::SweepRequest req = Request();
    std::vector<sc::SweepRow> whole = Rows(H100(), a);
    std::vector<std::tuple<size_t, int, std::string>> merged;
    for (int s = 0; s < 3; ++s)
        for (const sc::SweepRow& r :
             sc::RunSweep(Models(), H100().sys, &H100().cal, sc::TrainingOptions{}, a, req, s, 3))
            merged.emplace_back(r.point_index, r.model_index, sc::SweepRowText(r, req, sc::SweepFormat::csv));
    std::sort(merged.begin(), merged.end());
    ASSERT_EQ(merged.size(), whole.size());
    std::vector<std::string> a_rows, b_rows;
    for (size_t i = 0; i < whole.size(); ++i) {
        a_rows.push_back(sc::SweepRowText(whole[i], req, sc::SweepFormat::csv));
        b_rows.push_back(std::get<2>(merged[i]));
    }
    EXPECT_EQ(sc::AssembleSweep(a_rows, sc::SweepFormat::csv), sc::AssembleSweep(b_rows, sc::SweepFormat::csv));
}

// A fixed layout: at every point its row is that layout's own estimate on the point's system, calibration and
// options; a search restricted to exactly that layout finds the same; past the memory it is not found; its GPU
// count and batch must be the sweep's.
TEST(Sweep, FixedLayoutIsThatLayoutsEstimateAtEveryPoint) {
    const Base& b = H100();
    sc::SweepAxes a;
    a.flops = {0.5, 2};
    a.hbm_bw = {1, 3};
    a.topology = {sc::Topology::two_tier, sc::Topology::fullflat};
    a.hbm_capacity = {1e-4, 1};  // 8 MB: these models do not fit
    const sc::ParallelConfig p = sc::ParseParallelSpec("tp=2,pp=2,dp=4,sp=1,microbatch=2,batch=32,zero=1");
    sc::SweepRequest req = Request();
    req.layout = p;
    const std::vector<sc::SweepModel> models = Models();
    const std::vector<sc::SweepRow> rows = sc::RunSweep(models, b.sys, &b.cal, sc::TrainingOptions{}, a, req);
    ASSERT_EQ(rows.size(), 2u * 2 * 2 * 2 * models.size());
    int found = 0;
    for (const sc::SweepRow& row : rows) {
        const sc::SweepPoint& pt = row.point;
        const sc::System sys = sc::MakeSweepSystem(b.sys, pt, req.gpus);
        const sc::CalibrationTable& cal = b.cal;  // the point's part is an edit the table answers for
        const sc::TrainingOptions o = sc::MakeSweepOptions(sc::TrainingOptions{}, pt);
        const sc::TrainingEstimate e =
            sc::EstimateTraining(sc::MakeJob(models[row.model_index].config, p), sys, &cal, o);
        EXPECT_EQ(row.stats.candidates, 1u);
        EXPECT_EQ(row.stats.valid, 1u);
        EXPECT_EQ(row.found, e.fits) << "point " << row.point_index;
        EXPECT_EQ(row.found, pt.hbm_capacity == 1) << "point " << row.point_index;
        if (!row.found) continue;
        ++found;
        EXPECT_EQ(sc::ParallelSpecString(row.best), sc::ParallelSpecString(p));
        EXPECT_EQ(row.estimate.step_seconds, e.step_seconds);
        EXPECT_EQ(row.estimate.mfu, e.mfu);
        // The same layout as the only candidate of a search.
        sc::SearchRequest one;
        one.gpus = req.gpus;
        one.batch = req.batch;
        one.top_k = 1;
        one.space.tp = {2};
        one.space.pp = {2};
        one.space.cp = {1};
        one.space.ep = {1};
        one.space.microbatch = {2};
        one.space.schedules = {p.schedule};
        one.space.recompute = {p.recompute};
        one.space.zero = {1};
        one.space.sp = {1};
        const sc::SearchResult r = sc::SearchLayouts(models[row.model_index].config, sys, &cal, o, one);
        ASSERT_EQ(r.top.size(), 1u);
        EXPECT_EQ(r.top[0].estimate.step_seconds, row.estimate.step_seconds);
    }
    EXPECT_EQ(found, 8 * static_cast<int>(models.size()));

    req.gpus = 32;
    try {
        sc::RunSweep(models, b.sys, &b.cal, sc::TrainingOptions{}, a, req);
        ADD_FAILURE() << "a layout of 16 GPUs in a sweep of 32 was accepted";
    } catch (const sc::Error& e) {
        EXPECT_NE(std::string(e.what()).find("layout"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("16 GPUs"), std::string::npos) << e.what();
    }
}

TEST(Sweep, GpuCountAxisIsTheSearchOrTheStretchedLayoutAtEachCount) {
    // Strong scaling: the global batch stays the request's at every GPU count. A search sweep's point is the
    // search on that many GPUs; a fixed layout's is that layout with dp stretched to the count, and a count the
    // layout cannot run on (dp not whole, or the batch not a multiple of microbatch x dp) has no row.
    const Base& b = H100();
    sc::SweepAxes a;
    sc::ParseSweepAxis("gpus=8,16,24,32", a);
    const std::vector<sc::SweepModel> models = Models();
    sc::SweepRequest req = Request();  // 16 GPUs, batch 32
    const std::vector<sc::SweepRow> searched = sc::RunSweep(models, b.sys, &b.cal, sc::TrainingOptions{}, a, req);
    ASSERT_EQ(searched.size(), 4 * models.size());
    for (const sc::SweepRow& row : searched) {
        sc::SearchRequest sr;
        sr.gpus = a.gpus[row.point_index];
        sr.batch = req.batch;
        sr.top_k = 1;
        sr.space = req.space;
        EXPECT_EQ(row.point.gpus, sr.gpus);
        const sc::System sys = sc::MakeSweepSystem(b.sys, row.point, sr.gpus);
        const sc::CalibrationTable& cal = b.cal;
        const sc::TrainingOptions o = sc::MakeSweepOptions(sc::TrainingOptions{}, row.point);
        const sc::SearchResult r = sc::SearchLayouts(models[row.model_index].config, sys, &cal, o, sr);
        ASSERT_EQ(row.found, !r.top.empty()) << sr.gpus;
        if (!row.found) continue;
        EXPECT_EQ(row.best.world(), sr.gpus);
        EXPECT_EQ(row.estimate.step_seconds, r.top[0].estimate.step_seconds) << sr.gpus;
    }
    req.layout = sc::ParseParallelSpec("tp=2,pp=2,dp=4,sp=1,microbatch=2,batch=32,zero=1");
    const std::vector<sc::SweepRow> fixed = sc::RunSweep(models, b.sys, &b.cal, sc::TrainingOptions{}, a, req);
    ASSERT_EQ(fixed.size(), 4 * models.size());
    for (const sc::SweepRow& row : fixed) {
        const int gpus = a.gpus[row.point_index], dp = gpus / 4;
        EXPECT_EQ(row.point.gpus, gpus);
        // 24 GPUs: dp 6, and 32 sequences are not a multiple of 2 x 6.
        if (gpus == 24) {
            EXPECT_FALSE(row.found);
            continue;
        }
        sc::ParallelConfig p = *req.layout;
        p.dp = dp;
        const sc::CalibrationTable& cal = b.cal;
        const sc::TrainingEstimate e = sc::EstimateTraining(sc::MakeJob(models[row.model_index].config, p),
                                                            sc::MakeSweepSystem(b.sys, row.point, gpus), &cal,
                                                            sc::MakeSweepOptions(sc::TrainingOptions{}, row.point));
        ASSERT_EQ(row.found, e.fits) << gpus;
        if (!row.found) continue;
        EXPECT_EQ(row.best.dp, dp);
        EXPECT_EQ(row.estimate.step_seconds, e.step_seconds) << gpus;
    }
}

using sctest::CliResult;
// stdout only: the CSV and JSON are compared byte for byte.
CliResult RunCli(const std::string& args) { return sctest::RunCli(args, false); }

TEST(SweepCli, CsvAndJsonDoNotDependOnThreads) {
    const std::string base =
        "sweep --model presets/models/llama3-8b.json --model presets/models/mixtral-8x7b.json "
        "--system dgx-h100-superpod --gpus 32 --batch 64 --tp 1,2,4 --pp 1,2 --cp 1 --zero 1 "
        "--axis flops=1,2 --axis topology=two_tier,fullflat";
    CliResult one = RunCli(base + " --threads 1"), three = RunCli(base + " --threads 3");
    ASSERT_EQ(one.status, 0) << one.out;
    EXPECT_EQ(one.out, three.out);
    EXPECT_EQ(std::count(one.out.begin(), one.out.end(), '\n'), 1 + 2 * 2 * 2) << one.out;
    EXPECT_EQ(one.out.rfind(sc::SweepCsvHeader(), 0), 0u);
    CliResult json = RunCli(base + " --threads 2 --json");
    ASSERT_EQ(json.status, 0);
    EXPECT_EQ(json.out.front(), '[');
    EXPECT_NE(json.out.find("\"topology\":\"fullflat\""), std::string::npos) << json.out;
}

// Without an overlap or inr axis a point keeps the request's options, so a sweep of nothing is the estimate of the
// same layout (it used to turn TP overlap on: 1.7% slower here); the row names what it overlapped.
TEST(SweepCli, WithoutOverlapAxesAPointIsTheEstimate) {
    for (const std::string options : {"", " --options overlap_tp=on,in_network_reduction=off"}) {
        const std::string job = " --model presets/models/llama3-8b.json --system dgx-h100-superpod" + options;
        const CliResult sweep = RunCli("sweep --json --layout tp=2,dp=4,sp=1,batch=8" + job);
        const CliResult estimate = RunCli("estimate --json --allow-oom --parallel tp=2,dp=4,sp=1,batch=8" + job);
        ASSERT_EQ(sweep.status, 0) << sweep.out;
        ASSERT_EQ(estimate.status, 0) << estimate.out;
        const nlohmann::json row = nlohmann::json::parse(sweep.out)[0];
        EXPECT_EQ(row["step_seconds"].get<double>(),
                  nlohmann::json::parse(estimate.out)["training"]["step_seconds"].get<double>())
            << options;
        EXPECT_EQ(row["point"]["overlap"], options.empty() ? "dp+pp" : "on");
        EXPECT_EQ(row["point"]["inr"], options.empty());
    }
}

// --layout: the fixed layout's rows, its GPU count and batch in every row; a search flag beside it is refused.
TEST(SweepCli, FixedLayoutRows) {
    const std::string base =
        "sweep --model presets/models/llama3-8b.json --system dgx-a100-superpod --layout tp=8,dp=8,batch=64 "
        "--axis flops=1,2 --axis overlap=on,off";
    CliResult r = RunCli(base);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 2 * 2) << r.out;
    std::istringstream lines(r.out);
    std::string line;
    std::getline(lines, line);
    int rows = 0;
    while (std::getline(lines, line)) {
        ++rows;
        // gpus, power limit (none), batch, found, ... tp, pp, dp: the layout as given.
        EXPECT_NE(line.find(",64,0,64,1,"), std::string::npos) << line;
        EXPECT_NE(line.find(",8,1,8,1,1,0,1,1f1b,1,none,0,"), std::string::npos) << line;
    }
    EXPECT_EQ(rows, 4);
    CliResult bad = sctest::RunCli(base + " --tp 4", true);
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.out.find("--tp"), std::string::npos) << bad.out;
    EXPECT_NE(bad.out.find("--layout"), std::string::npos) << bad.out;
}

}  // namespace

// A sweep copies only the base accelerator's calibration rows to each point (CalibrationFor): every lookup must
// answer from them exactly what it answers from the whole table, for every accelerator the table measures, and
// no row of another accelerator may remain.
TEST(SweepCalibration, TheAcceleratorsRowsAnswerEveryLookupAsTheWholeTable) {
    const sc::CalibrationTable& all = H100().cal;
    std::vector<std::string> ids;
    for (const auto& g : all.gemm) ids.insert(ids.end(), g.accelerators.begin(), g.accelerators.end());
    for (const auto& c : all.collectives) ids.insert(ids.end(), c.accelerators.begin(), c.accelerators.end());
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    ASSERT_GE(ids.size(), 3u);
    ids.push_back("no-such-accelerator");
    const auto applies = [](const auto& rows, const std::string& id) {
        return std::all_of(rows.begin(), rows.end(), [&](const auto& r) {
            return std::find(r.accelerators.begin(), r.accelerators.end(), id) != r.accelerators.end();
        });
    };
    size_t rows_kept = 0;
    for (const std::string& id : ids) {
        SCOPED_TRACE(id);
        const sc::CalibrationTable mine = sc::CalibrationFor(all, id);
        EXPECT_TRUE(applies(mine.gemm, id) && applies(mine.collectives, id) && applies(mine.attention, id) &&
                    applies(mine.memory_bandwidth, id) && applies(mine.gemm_max_achievable, id));
        rows_kept += mine.gemm.size() + mine.collectives.size();
        for (sc::Precision p :
             {sc::Precision::fp32, sc::Precision::bf16, sc::Precision::fp16, sc::Precision::fp8, sc::Precision::fp4}) {
            const sc::GemmCurve* a = sc::FindGemmCurve(all, id, p);
            const sc::GemmCurve* b = sc::FindGemmCurve(mine, id, p);
            ASSERT_EQ(a == nullptr, b == nullptr);
            if (a) {
                EXPECT_EQ(a->tflops.y, b->tflops.y);
            }
        }
        for (sc::CollectiveOp op : {sc::CollectiveOp::all_reduce, sc::CollectiveOp::all_gather,
                                    sc::CollectiveOp::reduce_scatter, sc::CollectiveOp::all_to_all})
            for (const char* scope : {"scale_up", "scale_out"})
                for (int n : {2, 8, 64, 1024}) {
                    const sc::CollectiveCurve* a = sc::FindCollectiveCurve(all, id, op, scope, n);
                    const sc::CollectiveCurve* b = sc::FindCollectiveCurve(mine, id, op, scope, n);
                    ASSERT_EQ(a == nullptr, b == nullptr);
                    if (a) {
                        EXPECT_EQ(a->busbw.y, b->busbw.y);
                    }
                }
        for (sc::AttentionKernel k :
             {sc::AttentionKernel::flash2, sc::AttentionKernel::flash3, sc::AttentionKernel::cudnn})
            for (bool fwd : {true, false}) {
                const sc::AttentionCurve* a = sc::FindAttentionCurve(all, id, k, fwd, true, 128);
                const sc::AttentionCurve* b = sc::FindAttentionCurve(mine, id, k, fwd, true, 128);
                ASSERT_EQ(a == nullptr, b == nullptr);
            }
        EXPECT_EQ(sc::AchievedHbmTBps(all, id, "Copy"), sc::AchievedHbmTBps(mine, id, "Copy"));
    }
    EXPECT_GT(rows_kept, 0u);
    EXPECT_EQ(sc::CalibrationFor(all, "no-such-accelerator").gemm.size(), 0u);
}

namespace {

// A FullFlat system (h100-fullflat, one flat level) sweeps as a torus does: the accelerator's factors apply,
// net_bw scales the flat network, the job gets its GPUs; there is no domain to resize nor a pair to flatten. (It
// was refused for every axis: "has no scale_up first level".)
TEST(SweepSystem, AFullFlatSystemSweepsItsChipAndNetwork) {
    const sc::System flat = sctest::LoadSystemPreset("h100-fullflat");
    ASSERT_EQ(flat.levels.size(), 1u);
    sc::SweepPoint pt;
    pt.flops = 2, pt.net_bw = 4;
    const sc::System s = sc::MakeSweepSystem(flat, pt, 64);
    EXPECT_EQ(*s.accelerator.matrix.bf16, 2 * *flat.accelerator.matrix.bf16);
    EXPECT_EQ(s.levels[0].bandwidth_gbps, 4 * flat.levels[0].bandwidth_gbps);
    EXPECT_EQ(s.levels[0].kind, sc::LevelKind::fullflat);
    EXPECT_GE(sc::MakeSweepSystem(flat, sc::SweepPoint{}, 4 * flat.TotalAccelerators()).TotalAccelerators(),
              4 * flat.TotalAccelerators());
    sc::SweepPoint domain;
    domain.domain = 72;
    EXPECT_EQ(sctest::FieldOf([&] { sc::MakeSweepSystem(flat, domain, 64); }), "domain");
    sc::SweepPoint flatten;
    flatten.topology = sc::Topology::fullflat;
    EXPECT_EQ(sctest::FieldOf([&] { sc::MakeSweepSystem(flat, flatten, 64); }), "topology");
    // From the command line: twice the FLOPS is faster.
    const CliResult r = sctest::RunCli(
        "sweep --model presets/models/llama3-8b.json --system h100-fullflat --gpus 8 --batch 8 --axis flops=1,2 --json",
        false);
    ASSERT_EQ(r.status, 0) << r.out;
    const auto rows = nlohmann::json::parse(r.out);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_LT(rows[1].at("step_seconds").get<double>(), rows[0].at("step_seconds").get<double>());
    for (const auto& row : rows)
        EXPECT_EQ(row.at("point").at("topology"), "fullflat") << row;  // not the axis's two_tier
}

}  // namespace
