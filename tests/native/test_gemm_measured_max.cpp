// GEMM efficiency bounded by what was measured (training/compute_model.cpp): no matmul runs faster than the best
// shape MAMF found on the part (gemm_max_achievable), and GB300 and B300, with no GEMM measurement of their own, run
// GB200's and B200's curves where the parts have the same peak, and their NVLink curves (presets/calibration/
// measured.json, extraction rules on gb300 and b300).
#include <gtest/gtest.h>

#include <algorithm>

#include "parallel/job.h"
#include "serve_test_util.h"
#include "training/compute_model.h"
#include "training/estimate.h"
#include "training/kernel_floor.h"

namespace {

using namespace sc;
using servetest::Calibration;

const Accelerator& Part(const std::string& id) {
    static std::map<std::string, Accelerator> cache;
    auto it = cache.find(id);
    if (it != cache.end()) return it->second;
    return cache[id] = ParseAccelerator(sctest::ReadFile(servetest::kRoot + "/presets/hardware/" + id + ".json"));
}

double Efficiency(const Accelerator& a, Precision p, double flops, const CalibrationTable& cal = Calibration()) {
    return ComputeModel(a, p, &cal, TrainingOptions{}, AttentionShape{}).MatmulEfficiency(flops);
}

// The table with `id`'s measured maxima at `dtype` set to `tflops`.
CalibrationTable WithMax(const std::string& id, Precision dtype, double tflops) {
    CalibrationTable t = Calibration();
    bool found = false;
    for (GemmMaxAchievable& g : t.gemm_max_achievable)
        for (const std::string& a : g.accelerators)
            if (a == id && g.dtype == dtype) g.tflops = tflops, found = true;
    EXPECT_TRUE(found) << id;
    return t;
}

// A part that shares its sibling's scale-up fabric reads the sibling's scale-up collective curves, none of its
// network ones (a NIC of another rate), except where it has a scale-up measurement of that collective of its own.
void ExpectSiblingReadsOnlyTheScaleUpCurves(const std::string& measured, const std::string& sibling) {
    auto on = [](const CollectiveCurve& c, const std::string& part) {
        return std::find(c.accelerators.begin(), c.accelerators.end(), part) != c.accelerators.end();
    };
    auto own_scale_up = [&](CollectiveOp op) {
        for (const CollectiveCurve& c : Calibration().collectives)
            if (c.op == op && c.scope == "scale_up" && on(c, sibling) && !on(c, measured)) return true;
        return false;
    };
    for (const CollectiveCurve& c : Calibration().collectives) {
        if (on(c, measured)) {
            EXPECT_EQ(on(c, sibling), c.scope == "scale_up" && !own_scale_up(c.op)) << c.id;
        }
    }
}

// A job that touches nothing the two systems differ in takes the same step on both, to the bit. The Blackwell Ultra
// parts have attention curves of their own (GB300's cuDNN runs, which B300 reads) and each part its own HBM rate (a
// streaming kernel timed on it), so the comparison sets attention's efficiency and the memory rate by hand; with the
// measured curves the Ultra part's step is the shorter.
void ExpectTheSameStep(const std::string& sys_a, const std::string& sys_b, const std::string& model,
                       const std::string& spec) {
    const Job job = MakeJob(servetest::Model(model), ParseParallelSpec(spec));
    TrainingOptions same_attention;
    same_attention.attention_efficiency = 0.5;
    same_attention.memory_efficiency = 0.8;
    const double ta = EstimateTraining(job, servetest::System(sys_a), &Calibration(), same_attention).step_seconds;
    EXPECT_GT(ta, 0);
    EXPECT_EQ(ta, EstimateTraining(job, servetest::System(sys_b), &Calibration(), same_attention).step_seconds) << spec;
    EXPECT_LT(EstimateTraining(job, servetest::System(sys_b), &Calibration(), {}).step_seconds,
              EstimateTraining(job, servetest::System(sys_a), &Calibration(), {}).step_seconds)
        << spec;
}

const double kGemms[] = {2.0 * 256 * 256 * 256, 2.0 * 1024 * 1024 * 1024, 2.0 * 4096 * 4096 * 4096, 1e14};

// MI300X has no bf16 curve: the fallback (0.70 of the 1,307 TFLOPS peak, 915) would exceed MAMF's best shape,
// 668.4 TFLOPS; every bf16 GEMM runs at that best instead, by hand.
TEST(GemmMeasuredMax, CapsTheFallbackAtTheBestMeasuredShape) {
    const Accelerator& mi300x = Part("mi300x");
    ASSERT_EQ(FindGemmCurve(Calibration(), "mi300x", Precision::bf16), nullptr);
    const GemmMaxAchievable* best = FindGemmMax(Calibration(), "mi300x", Precision::bf16);
    ASSERT_NE(best, nullptr);
    EXPECT_EQ(best->tflops, 668.4);
    for (double f : kGemms)
        EXPECT_NEAR(Efficiency(mi300x, Precision::bf16, f) * PeakFlops(mi300x, Precision::bf16), 668.4e12, 1e3) << f;
    // Where the part's best is above the fallback, the fallback stands.
    const CalibrationTable high = WithMax("mi300x", Precision::bf16, 1200);
    EXPECT_DOUBLE_EQ(Efficiency(mi300x, Precision::bf16, 1e14, high), TrainingOptions{}.fallback_matmul_efficiency);
    // An efficiency set by hand is the user's: no cap.
    TrainingOptions fixed;
    fixed.matmul_efficiency = 0.9;
    EXPECT_DOUBLE_EQ(ComputeModel(mi300x, Precision::bf16, &Calibration(), fixed).MatmulEfficiency(1e14), 0.9);
}

// Gaudi 2 reads its own MAMF best shapes (ml-engineering: 418.7 of 432 bf16 TFLOPS, 826.5 of 865 fp8). Both are
// above the 0.70 fallback and neither is a curve, so its GEMMs run at the fallback; fp16, for which Intel publishes
// no rate, is refused rather than assumed.
TEST(GemmMeasuredMax, Gaudi2ReadsItsOwnBestShapes) {
    const Accelerator& gaudi2 = Part("gaudi2");
    const GemmMaxAchievable* bf16 = FindGemmMax(Calibration(), "gaudi2", Precision::bf16);
    const GemmMaxAchievable* fp8 = FindGemmMax(Calibration(), "gaudi2", Precision::fp8);
    ASSERT_NE(bf16, nullptr);
    ASSERT_NE(fp8, nullptr);
    EXPECT_EQ(bf16->tflops, 418.7);
    EXPECT_EQ(fp8->tflops, 826.5);
    EXPECT_EQ(FindGemmCurve(Calibration(), "gaudi2", Precision::bf16), nullptr);
    for (double f : kGemms)
        EXPECT_DOUBLE_EQ(Efficiency(gaudi2, Precision::bf16, f), TrainingOptions{}.fallback_matmul_efficiency) << f;
    const CalibrationTable low = WithMax("gaudi2", Precision::bf16, 250);  // a best below the fallback binds
    EXPECT_NEAR(Efficiency(gaudi2, Precision::bf16, 1e14, low) * PeakFlops(gaudi2, Precision::bf16), 250e12, 1e3);
    EXPECT_THROW(PeakFlops(gaudi2, Precision::fp16), Error);
}

// A part measured only in bf16 keeps bf16's fraction of the peak at fp8, as the curves do (MI325X: 784.9 of
// 1,307.4 bf16 TFLOPS, so 0.60 of its fp8 peak too, below the 0.70 fallback).
TEST(GemmMeasuredMax, Fp8WithoutItsOwnMeasurementTakesBf16sFraction) {
    const Accelerator& mi325x = Part("mi325x");
    ASSERT_EQ(FindGemmMax(Calibration(), "mi325x", Precision::fp8), nullptr);
    const double frac = 784.9e12 / PeakFlops(mi325x, Precision::bf16);
    EXPECT_LT(frac, TrainingOptions{}.fallback_matmul_efficiency);
    for (double f : kGemms) EXPECT_NEAR(Efficiency(mi325x, Precision::fp8, f), frac, 1e-12) << f;
}

// Every measured curve stays at or below its part's best shape, so the cap changes none of them; lowered below
// the curve, the best shape bounds the plateau (H100: XLA's 783 TFLOPS at 4096^3 under a best of 700).
TEST(GemmMeasuredMax, BoundsACurveOnlyAboveTheBest) {
    const Accelerator& h100 = Part("h100-sxm");
    const double peak = PeakFlops(h100, Precision::bf16);
    EXPECT_NEAR(Efficiency(h100, Precision::bf16, 1e14) * peak, 783.33e12, 1e3);
    const CalibrationTable low = WithMax("h100-sxm", Precision::bf16, 700);
    EXPECT_NEAR(Efficiency(h100, Precision::bf16, 1e14, low) * peak, 700e12, 1e3);
    // Below the best, the curve is untouched: 1024^3 at 236.3 TFLOPS.
    EXPECT_NEAR(Efficiency(h100, Precision::bf16, 2.0 * 1024 * 1024 * 1024, low) * peak, 236.3e12, 1e3);
    for (const GemmCurve& c : Calibration().gemm) {
        for (const std::string& id : c.accelerators) {
            const GemmMaxAchievable* best = FindGemmMax(Calibration(), id, c.dtype);
            if (best) {
                EXPECT_LE(c.tflops.y.back(), best->tflops) << c.id << " on " << id;
            }
        }
    }
}

// GB300 runs GB200's bf16 and fp8 curves in TFLOPS (the same dense peaks, 2,500 and 5,000), so the same GEMM
// takes the same time on both, and the per-kernel floor those curves give is the same; its fp4 (15,000 against
// GB200's 10,000) takes no GB200 curve.
TEST(GemmMeasuredMax, Gb300RunsGb200sCurvesAtTheSamePeaks) {
    const Accelerator &gb200 = Part("gb200"), &gb300 = Part("gb300");
    for (Precision p : {Precision::bf16, Precision::fp8}) {
        ASSERT_EQ(PeakFlops(gb200, p), PeakFlops(gb300, p));
        const GemmCurve* c = FindGemmCurve(Calibration(), "gb300", p);
        ASSERT_NE(c, nullptr);
        EXPECT_EQ(c, FindGemmCurve(Calibration(), "gb200", p));
        for (double f : kGemms) EXPECT_DOUBLE_EQ(Efficiency(gb300, p, f), Efficiency(gb200, p, f)) << f;
    }
    EXPECT_EQ(FindGemmCurve(Calibration(), "gb300", Precision::bf16)->series, "xla-sm100-bf16");
    EXPECT_EQ(FindGemmCurve(Calibration(), "gb300", Precision::fp8)->series, "azure-ndgb200v6-cublaslt-fp8");
    EXPECT_EQ(FindGemmCurve(Calibration(), "gb300", Precision::fp4), nullptr);
    EXPECT_GT(PeakFlops(gb300, Precision::fp4), PeakFlops(gb200, Precision::fp4));
    const KernelFloor a = TrainingKernelFloor(&Calibration(), gb200), b = TrainingKernelFloor(&Calibration(), gb300);
    EXPECT_GT(b.alpha_s, 0);
    EXPECT_EQ(a.alpha_s, b.alpha_s);
    EXPECT_EQ(a.series, b.series);
}

// GB300 NVL72 has GB200 NVL72's NVLink domain (72 GPUs, 900 GB/s per direction each) but reads its own tray's
// measurements of every collective (2 and 4 GPUs), none of GB200's: neither its NVLink curves nor its InfiniBand ones
// (ConnectX-8 at 800 Gb/s against 400). A job on one GPU, which runs no collective, then takes the same time on both,
// to the bit: nothing else that job touches differs.
TEST(GemmMeasuredMax, Gb300TakesGb200sNvlinkCurvesNotItsInfiniband) {
    ExpectSiblingReadsOnlyTheScaleUpCurves("gb200", "gb300");
    ExpectTheSameStep("gb200-nvl72", "gb300-nvl72", "llama3-8b", "tp=1,microbatch=1,batch=8");
}

// B300 (HGX B300), with no GEMM curve of its own, runs B200's sm_100 bf16 table (the same dense bf16 and fp8 peaks),
// capped by its own MAMF best shapes (presets/calibration/measured.json, extraction rule on b300); its NVLink
// collectives are its own node's measurements. A job on one GPU then takes the same time on the two DGX presets;
// across nodes B300's 800 Gb/s ConnectX-8 moves the data-parallel gradients faster than B200's 400.
TEST(GemmMeasuredMax, B300RunsB200sCurvesAndItsOwnBestShapes) {
    const Accelerator &b200 = Part("b200"), &b300 = Part("b300");
    for (Precision p : {Precision::bf16, Precision::fp8}) {
        ASSERT_EQ(PeakFlops(b200, p), PeakFlops(b300, p));
        EXPECT_EQ(FindGemmCurve(Calibration(), "b300", p), FindGemmCurve(Calibration(), "b200", p));
        for (double f : kGemms) EXPECT_DOUBLE_EQ(Efficiency(b300, p, f), Efficiency(b200, p, f)) << f;
    }
    EXPECT_EQ(FindGemmCurve(Calibration(), "b300", Precision::bf16)->series, "xla-sm100-bf16");
    EXPECT_GT(PeakFlops(b300, Precision::fp4), PeakFlops(b200, Precision::fp4));
    ASSERT_NE(FindGemmMax(Calibration(), "b300", Precision::bf16), nullptr);
    ASSERT_NE(FindGemmMax(Calibration(), "b300", Precision::fp8), nullptr);
    EXPECT_EQ(FindGemmMax(Calibration(), "b300", Precision::bf16)->tflops, 1769.0);
    EXPECT_EQ(FindGemmMax(Calibration(), "b300", Precision::fp8)->tflops, 3353.3);
    // Its own best binds where it is below B200's: lowered under the curve, it bounds B300 and not B200.
    const CalibrationTable low = WithMax("b300", Precision::bf16, 1000);
    EXPECT_NEAR(Efficiency(b300, Precision::bf16, 1e14, low) * PeakFlops(b300, Precision::bf16), 1000e12, 1e3);
    EXPECT_DOUBLE_EQ(Efficiency(b200, Precision::bf16, 1e14, low), Efficiency(b200, Precision::bf16, 1e14));
    ExpectSiblingReadsOnlyTheScaleUpCurves("b200", "b300");
    ExpectTheSameStep("dgx-b200-superpod", "dgx-b300-superpod", "llama3-8b", "tp=1,microbatch=1,batch=8");
    const System &a = servetest::System("dgx-b200-superpod"), &b = servetest::System("dgx-b300-superpod");
    const Job across = MakeJob(servetest::Model("llama3-8b"), ParseParallelSpec("tp=8,dp=4,microbatch=1,batch=4"));
    TrainingOptions exposed;
    exposed.overlap_dp = false;
    EXPECT_LT(EstimateTraining(across, b, &Calibration(), exposed).step_seconds,
              EstimateTraining(across, a, &Calibration(), exposed).step_seconds);
}

// Parts of the same silicon read one measurement: H200 and H800 H100's attention curves (compute-bound, the same
// GH100 SMs and peak), H800 H100's STREAM copy (the same HBM3), the A100 40 GB the 80 GB part's GEMM curve (the same
// GA100 SMs and peak). Each rule is in presets/calibration/measured.json's extraction_rules.
TEST(GemmMeasuredMax, SiblingPartsReadTheSameMeasurements) {
    for (const char* part : {"h200", "h800"})
        for (bool forward : {true, false})
            for (AttentionKernel k : {AttentionKernel::flash2, AttentionKernel::flash3, AttentionKernel::cudnn}) {
                const AttentionCurve* h100 = FindAttentionCurve(Calibration(), "h100-sxm", k, forward, true, 128);
                EXPECT_NE(h100, nullptr);
                EXPECT_EQ(FindAttentionCurve(Calibration(), part, k, forward, true, 128), h100) << part;
            }
    EXPECT_EQ(AchievedHbmTBps(Calibration(), "h800", "Copy"), AchievedHbmTBps(Calibration(), "h100-sxm", "Copy"));
    EXPECT_GT(AchievedHbmTBps(Calibration(), "h800", "Copy"), 0);
    const GemmCurve* a100 = FindGemmCurve(Calibration(), "a100-80gb", Precision::fp16);
    ASSERT_NE(a100, nullptr);
    EXPECT_EQ(FindGemmCurve(Calibration(), "a100-40gb", Precision::fp16), a100);
    EXPECT_DOUBLE_EQ(Efficiency(Part("a100-40gb"), Precision::bf16, 1e13),
                     Efficiency(Part("a100-80gb"), Precision::bf16, 1e13));
}

}  // namespace
