// The framework profile of 16-bit GEMMs (presets/calibration/measured.json "framework_gemm"): how much longer
// Vidur's PyTorch linear layers took on a DGX H100 and an A100 server than the part's GEMM curve says, by the GEMM's
// smallest side. The preset's points are derived here from data/vidur_*_linear_ms.csv and the model's own curves,
// so a change to either shows as a stale preset; then ComputeModel is checked to apply them where, and only where,
// they were measured.
//   ./build/stagecraft_tests --gtest_filter='FrameworkGemm.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "config/error.h"
#include "training/compute_model.h"
#include "training/kernel_floor.h"
#include "vidur_profile.h"

namespace {

using namespace sc;

// The derivation. A profile GEMM counts when the model says it is compute-bound by at least 2x: its compute roof
// (FLOPs at the curve's efficiency for its shape, without the profile) is twice the kernel's fixed cost plus its
// bytes at the achieved HBM bandwidth, so the measured time is mostly the GEMM's arithmetic. Its ratio is measured
// time / compute roof. GEMMs narrowest in k (`contraction`; k < min(m, n)) and the others (narrowest in m or n) are
// grouped apart, by that narrowest side to the nearest power of two (in log); a group of at least kMinGemms gives the
// point (that power of two, the group's median ratio to 3 decimals).
constexpr double kComputeBound = 2.0;
constexpr size_t kMinGemms = 20;

struct Derived {
    MeasuredCurve curve;
    std::vector<size_t> gemms;  // per point
};

Derived DeriveRatio(const std::string& file, const std::string& system, bool contraction) {
    CalibrationTable cal = servetest::Calibration();
    cal.framework_gemm.clear();
    const Accelerator& acc = servetest::System(system).accelerator;
    TrainingOptions opt;
    opt.framework_gemm = false;
    const ComputeModel cm(acc, Precision::fp16, &cal, opt);
    const KernelFloor floor = MeasuredKernelFloor(&cal, acc, cm.memory_bytes_per_s());
    std::map<int, std::vector<double>> by_side;
    for (const vidur::ProfileRow& r : vidur::ReadProfile(file)) {
        GemmDims g[4];
        vidur::RowGemms(r, g);
        for (int i = 0; i < 4; ++i) {
            const double out = std::min(g[i].m, g[i].n);
            if ((g[i].k < out) != contraction) continue;
            const double flops = 2 * g[i].m * g[i].n * g[i].k;
            const double bytes = 2 * (g[i].m * g[i].k + g[i].k * g[i].n + g[i].m * g[i].n);
            const double compute = flops / (cm.peak_flops() * cm.MatmulEfficiency(flops, g[i]));
            if (compute < kComputeBound * (floor.alpha_s + bytes / cm.memory_bytes_per_s())) continue;
            const int side = static_cast<int>(std::lround(std::log2(std::min(out, g[i].k))));
            by_side[side].push_back(r.ms[i] * 1e-3 / compute);
        }
    }
    Derived d;
    for (auto& [side, ratios] : by_side) {
        if (ratios.size() < kMinGemms) continue;
        std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
        d.curve.x.push_back(std::ldexp(1.0, side));
        d.curve.y.push_back(std::round(ratios[ratios.size() / 2] * 1000) / 1000);
        d.gemms.push_back(ratios.size());
    }
    return d;
}

std::string Points(const MeasuredCurve& c) {
    std::string s = "[";
    for (size_t i = 0; i < c.x.size(); ++i) {
        char b[48];
        std::snprintf(b, sizeof b, "%s[%.0f, %.3f]", i ? ", " : "", c.x[i], c.y[i]);
        s += b;
    }
    return s + "]";
}

// H200 and H800 read the H100's profile as they read the sm_90 table it is relative to (the same GH100 SMs and peak);
// the A100 40 GB part reads the 80 GB part's, as it reads its GEMM curve.
TEST(FrameworkGemm, SameDiePartsReadTheProfiledPartsCurves) {
    const CalibrationTable& cal = servetest::Calibration();
    for (bool contraction : {false, true}) {
        for (const char* part : {"h200", "h800"})
            EXPECT_EQ(FindFrameworkGemm(cal, part, contraction), FindFrameworkGemm(cal, "h100-sxm", contraction))
                << part;
        EXPECT_EQ(FindFrameworkGemm(cal, "a100-40gb", contraction), FindFrameworkGemm(cal, "a100-80gb", contraction));
        EXPECT_EQ(FindFrameworkGemm(cal, "b200", contraction), nullptr);
        EXPECT_EQ(FindFrameworkGemm(cal, "mi300x", contraction), nullptr);
    }
    EXPECT_EQ(FindGemmCurve(cal, "h200", Precision::bf16), FindGemmCurve(cal, "h100-sxm", Precision::bf16));
}

TEST(FrameworkGemm, PresetIsTheProfilesMedianRatio) {
    for (auto [acc, file, system] : {std::tuple{"h100-sxm", "vidur_h100_linear_ms.csv", "dgx-h100-superpod"},
                                     std::tuple{"a100-80gb", "vidur_a100_linear_ms.csv", "dgx-a100-superpod"}})
        for (bool contraction : {false, true}) {
            const char* side = contraction ? "contraction" : "output";
            const Derived derived = DeriveRatio(file, system, contraction);
            std::string counts;
            for (size_t n : derived.gemms) (counts += ' ') += std::to_string(n);
            ASSERT_GE(derived.curve.x.size(), 2u) << acc << " " << side << ": too few compute-bound groups in " << file;
            const FrameworkGemmCurve* f = FindFrameworkGemm(servetest::Calibration(), acc, contraction);
            ASSERT_NE(f, nullptr) << acc << " has no " << side << " framework_gemm entry; its points would be "
                                  << Points(derived.curve) << " (GEMMs per point:" << counts << ")";
            EXPECT_EQ(Points(f->time_ratio), Points(derived.curve))
                << acc << ": presets/calibration/measured.json framework_gemm \"" << f->id
                << "\" is stale; its points are now " << Points(derived.curve) << " (GEMMs per point:" << counts << ")";
        }
}

// The weight-read floor: over the profile's GEMMs that only read their weights (compute roof on the curve under a
// tenth of their bytes at STREAM-copy bandwidth: kernel_floor.h's share), the median of measured time minus those
// bytes at that bandwidth, in us to 2 decimals; and how many GEMMs it is the median of.
struct DerivedFloor {
    double alpha_us = 0;
    int gemms = 0;
};

DerivedFloor DeriveWeightReadFloor(const std::string& file, const std::string& system) {
    CalibrationTable cal = servetest::Calibration();
    cal.framework_gemm.clear();
    cal.weight_read_floor.clear();
    const Accelerator& acc = servetest::System(system).accelerator;
    TrainingOptions opt;
    opt.framework_gemm = false;
    const ComputeModel cm(acc, Precision::fp16, &cal, opt);
    std::vector<double> excess;
    for (const vidur::ProfileRow& r : vidur::ReadProfile(file)) {
        GemmDims g[4];
        vidur::RowGemms(r, g);
        for (int i = 0; i < 4; ++i) {
            const double flops = 2 * g[i].m * g[i].n * g[i].k;
            const double bytes = 2 * (g[i].m * g[i].k + g[i].k * g[i].n + g[i].m * g[i].n);
            const double compute = flops / (cm.peak_flops() * cm.MatmulEfficiency(flops, g[i]));
            const double read = bytes / cm.memory_bytes_per_s();
            if (compute > kFloorRooflineShare * read) continue;
            excess.push_back(r.ms[i] * 1e-3 - read);
        }
    }
    DerivedFloor d;
    if (excess.empty()) return d;
    std::nth_element(excess.begin(), excess.begin() + excess.size() / 2, excess.end());
    d.alpha_us = std::round(excess[excess.size() / 2] * 1e8) / 100;
    d.gemms = static_cast<int>(excess.size());
    return d;
}

TEST(FrameworkGemm, WeightReadFloorIsTheProfilesMedianExcess) {
    const DerivedFloor a100 = DeriveWeightReadFloor("vidur_a100_linear_ms.csv", "dgx-a100-superpod");
    const WeightReadFloor* w = FindWeightReadFloor(servetest::Calibration(), "a100-80gb");
    ASSERT_NE(w, nullptr) << "a100-80gb has no weight_read_floor entry; it would be alpha_us " << a100.alpha_us
                          << " over " << a100.gemms << " GEMMs";
    EXPECT_EQ(w->alpha_us, a100.alpha_us) << "presets/calibration/measured.json weight_read_floor \"" << w->id
                                          << "\" is stale: alpha_us is now " << a100.alpha_us;
    EXPECT_EQ(w->gemms, a100.gemms);
    // The A100's kernels now pay it; a part with a floor point in its GEMM calibration keeps that one.
    const KernelFloor f =
        TrainingKernelFloor(&servetest::Calibration(), servetest::System("dgx-a100-superpod").accelerator);
    EXPECT_EQ(f.alpha_s, w->alpha_us * 1e-6);
    EXPECT_EQ(f.profile_gemms, w->gemms);
    const Accelerator& h100 = servetest::System("dgx-h100-superpod").accelerator;
    const KernelFloor xla = TrainingKernelFloor(&servetest::Calibration(), h100);
    EXPECT_EQ(xla.profile_gemms, 0);
    EXPECT_EQ(xla.series, "xla-sm90-bf16");
    // The same rule on Vidur's H100 profile, as a check of the rule: the H100 floor taken from XLA's table
    // (5.20 us) and the one the profile's weight reads give agree within a factor of two.
    const DerivedFloor h = DeriveWeightReadFloor("vidur_h100_linear_ms.csv", "dgx-h100-superpod");
    EXPECT_GT(h.gemms, 100);
    EXPECT_GT(h.alpha_us * 1e-6, xla.alpha_s / 2) << h.alpha_us;
    EXPECT_LT(h.alpha_us * 1e-6, xla.alpha_s * 2) << h.alpha_us;
}

double GemmSeconds(const ComputeModel& cm, const GemmDims& d, bool high_precision = false) {
    return cm.Seconds(OpKind::matmul, 2 * d.m * d.n * d.k, 0, true, 1, high_precision, false, d);
}

TEST(FrameworkGemm, SlowsSixteenBitGemmsByTheRatioAtTheirNarrowestSide) {
    const Accelerator& h100 = servetest::System("dgx-h100-superpod").accelerator;
    const CalibrationTable& cal = servetest::Calibration();
    const FrameworkGemmCurve* out = FindFrameworkGemm(cal, h100.id, false);
    const FrameworkGemmCurve* k = FindFrameworkGemm(cal, h100.id, true);
    ASSERT_NE(out, nullptr);
    ASSERT_NE(k, nullptr);
    TrainingOptions on, off;
    off.framework_gemm = false;
    const ComputeModel with(h100, Precision::bf16, &cal, on), without(h100, Precision::bf16, &cal, off);
    ASSERT_EQ(with.framework_gemm(false), out);
    ASSERT_EQ(with.framework_gemm(true), k);
    EXPECT_EQ(without.framework_gemm(false), nullptr);
    EXPECT_EQ(without.framework_gemm(true), nullptr);
    auto ratio = [&](const GemmDims& d) { return GemmSeconds(with, d) / GemmSeconds(without, d); };
    // A GEMM whose narrowest side is a profiled point takes that point's ratio from its role's curve; the best
    // shape measured on the part (MAMF) still caps a ratio under 1.
    for (bool contraction : {false, true}) {
        const FrameworkGemmCurve* f = contraction ? k : out;
        for (size_t i = 0; i < f->time_ratio.x.size(); ++i) {
            const double s = f->time_ratio.x[i], y = f->time_ratio.y[i];
            std::vector<GemmDims> shapes = {GemmDims{8192, 8192, s}};
            if (!contraction) shapes = {GemmDims{s, 8192, 8192}, GemmDims{8192, s, 8192}};
            for (const GemmDims& d : shapes) {
                if (y >= 1) EXPECT_NEAR(ratio(d), y, 1e-9) << s << (contraction ? " k" : " m or n");
                else EXPECT_LE(ratio(d), 1.0) << s;
            }
        }
    }
    // A tie between k and an output side reads the output curve.
    EXPECT_NEAR(ratio({2048, 8192, 2048}), Interpolate(out->time_ratio, 2048), 1e-9);
    // Beyond the profiled sides the nearest point's ratio holds.
    EXPECT_NEAR(ratio({65536, 65536, 65536}), out->time_ratio.y.back(), 1e-9);
    // No shape, no ratio: a GEMM timed by FLOP count alone is left as it was.
    EXPECT_EQ(with.Seconds(OpKind::matmul, 1e12, 0), without.Seconds(OpKind::matmul, 1e12, 0));
    // Memory-bound time is not what the profile measured: a GEMM held at its bytes stays there.
    const GemmDims thin{1, 8192, 8192};
    const double bytes = 2.0 * 8192 * 8192;
    EXPECT_EQ(with.Seconds(OpKind::matmul, 2 * 8192.0 * 8192, bytes, true, 1, false, false, thin),
              without.Seconds(OpKind::matmul, 2 * 8192.0 * 8192, bytes, true, 1, false, false, thin));
}

TEST(FrameworkGemm, TakesFp8GemmsLeavesHandSetEfficienciesAndUnprofiledPartsAlone) {
    const CalibrationTable& cal = servetest::Calibration();
    const Accelerator& h100 = servetest::System("dgx-h100-superpod").accelerator;
    TrainingOptions on, off;
    off.framework_gemm = false;
    const GemmDims d{1024, 8192, 8192};
    // FP8 GEMMs take the 16-bit profile's ratio (no fp8 GEMM has one; see ComputeModel::MatmulEfficiency), and so
    // do the 16-bit matmuls of an fp8 model (LM head, router).
    const double ratio = Interpolate(FindFrameworkGemm(cal, h100.id, false)->time_ratio, 1024);
    ASSERT_GT(ratio, 1.05);
    const ComputeModel fp8(h100, Precision::fp8, &cal, on), fp8_off(h100, Precision::fp8, &cal, off);
    EXPECT_NEAR(GemmSeconds(fp8, d) / GemmSeconds(fp8_off, d), ratio, 1e-9);
    EXPECT_NEAR(GemmSeconds(fp8, d, true) / GemmSeconds(fp8_off, d, true), ratio, 1e-9);
    EXPECT_LT(GemmSeconds(fp8, d), GemmSeconds(fp8, d, true)) << "still faster than the 16-bit GEMM";
    // An efficiency set by hand has no curve for the profile to be relative to.
    TrainingOptions fixed;
    fixed.matmul_efficiency = 0.5;
    EXPECT_EQ(ComputeModel(h100, Precision::bf16, &cal, fixed).framework_gemm(false), nullptr);
    // B200 has no profile.
    const Accelerator& b200 = servetest::System("dgx-b200-superpod").accelerator;
    EXPECT_EQ(FindFrameworkGemm(cal, b200.id, false), nullptr);
    EXPECT_EQ(FindFrameworkGemm(cal, b200.id, true), nullptr);
    EXPECT_EQ(GemmSeconds(ComputeModel(b200, Precision::bf16, &cal, on), d),
              GemmSeconds(ComputeModel(b200, Precision::bf16, &cal, off), d));
}

TEST(FrameworkGemm, BadEntriesNameTheField) {
    auto parse = [](const std::string& entry) {
        const std::string text =
            R"({"collectives": [], "gemm": [], "gemm_max_achievable": [], "memory_bandwidth": [], "framework_gemm": [)" +
            entry + "]}";
        try {
            ParseCalibration(text);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const std::string good =
        R"("id": "p", "accelerators": ["h100-sxm"], "narrow_side": "output", "x": "gemm_narrow_side",)"
        R"( "y": "time_ratio", "series": "s",)"
        R"( "hardware": "h", "source": "src")";
    EXPECT_EQ(parse("{" + good + R"(, "dtype": "fp16", "points": [[256, 1.2], [4096, 1.1]]})"), "no error");
    const std::string fp8 = parse("{" + good + R"(, "dtype": "fp8", "points": [[256, 1.2]]})");
    EXPECT_NE(fp8.find("framework_gemm[0].dtype"), std::string::npos) << fp8;
    EXPECT_NE(fp8.find("16-bit"), std::string::npos) << fp8;
    const std::string zero = parse("{" + good + R"(, "dtype": "fp16", "points": [[256, 0]]})");
    EXPECT_NE(zero.find("framework_gemm[0].points[0]"), std::string::npos) << zero;
    const std::string side = parse("{" + good + R"(, "dtype": "fp16", "points": [[256, 1.2]]})");
    EXPECT_EQ(side, "no error");
    const std::string bad_side = parse(
        R"({"id": "p", "accelerators": ["h100-sxm"], "narrow_side": "rows", "x": "gemm_narrow_side", "y": "time_ratio",)"
        R"( "series": "s", "hardware": "h", "source": "src", "dtype": "fp16", "points": [[256, 1.2]]})");
    EXPECT_NE(bad_side.find("framework_gemm[0].narrow_side"), std::string::npos) << bad_side;
    const std::string order = parse("{" + good + R"(, "dtype": "fp16", "points": [[4096, 1.1], [256, 1.2]]})");
    EXPECT_NE(order.find("framework_gemm[0].points"), std::string::npos) << order;
}

}  // namespace
