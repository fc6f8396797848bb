// The measured per-kernel fixed cost (inference/kernel_floor.h): which calibration point it comes from, its
// value by hand, and that every memory-bound kernel of an iteration pays exactly alpha + bytes / bandwidth.
#include <gtest/gtest.h>

#include "inference/iteration_cost.h"
#include "inference/kernel_floor.h"
#include "serve_test_util.h"
#include "training/compute_model.h"

namespace {

using namespace sc;
using servetest::Calibration;

// H100: the XLA sm_90 matmul table's 256 x 256 x 256 bf16 GEMM (6.45 TFLOPS, data/calibration.json) is the
// only H100 point whose roofline is under a tenth of its time; alpha is its time minus its three 256 x 256
// bf16 operands at STREAM copy's 2.90 TB/s.
TEST(ServeKernelFloor, H100FloorIsTheXlaTinyGemmByHand) {
    const Accelerator& acc = servetest::System("dgx-h100-superpod").accelerator;
    const KernelFloor f = MeasuredKernelFloor(&Calibration(), acc, 2.90e12);
    const double flops = 2.0 * 256 * 256 * 256, bytes = 3.0 * 256 * 256 * 2;
    EXPECT_EQ(f.series, "xla-sm90-bf16");
    EXPECT_DOUBLE_EQ(f.gemm_flops, flops);
    EXPECT_NEAR(f.gemm_seconds, flops / 6.45e12, 1e-15);
    EXPECT_NEAR(f.alpha_s, flops / 6.45e12 - bytes / 2.90e12, 1e-15);
    EXPECT_NEAR(f.alpha_s * 1e6, 5.07, 0.01);
}

// XLA's table is keyed by compute capability (sm_90), not by SKU: H200 and H800, the same GH100 SMs, take the
// same point. Serving's alpha subtracts the operands at each part's own bandwidth; training's is the whole time.
TEST(ServeKernelFloor, EverySm90PartTakesTheXlaPoint) {
    const double flops = 2.0 * 256 * 256 * 256, bytes = 3.0 * 256 * 256 * 2;
    for (const char* system : {"dgx-h200-superpod", "h800-cluster"}) {
        SCOPED_TRACE(system);
        const Accelerator& acc = servetest::System(system).accelerator;
        const KernelFloor f = MeasuredKernelFloor(&Calibration(), acc, 4.01e12);
        EXPECT_EQ(f.series, "xla-sm90-bf16");
        EXPECT_NEAR(f.alpha_s, flops / 6.45e12 - bytes / 4.01e12, 1e-15);
        EXPECT_NEAR(TrainingKernelFloor(&Calibration(), acc).alpha_s, flops / 6.45e12, 1e-15);
        // Its 16-bit GEMMs read the same curve as H100's: the same achieved TFLOPS at every size (the 2048^3 point
        // exactly), against the same 989 TFLOPS class of peak.
        const Accelerator& h100 = servetest::System("dgx-h100-superpod").accelerator;
        const ComputeModel on_h100(h100, Precision::bf16, &Calibration(), TrainingOptions{}, AttentionShape{});
        const ComputeModel on_part(acc, Precision::bf16, &Calibration(), TrainingOptions{}, AttentionShape{});
        auto achieved = [](const ComputeModel& m, const Accelerator& a, double gemm_flops) {
            return m.MatmulEfficiency(gemm_flops) * PeakFlops(a, Precision::bf16) /
                   CalibrationScale(a, Precision::bf16);
        };
        EXPECT_NEAR(achieved(on_part, acc, 2.0 * 2048 * 2048 * 2048), 631.98e12, 1e3);
        for (double gemm_flops : {3e8, 1e10, 1e12})
            EXPECT_NEAR(achieved(on_part, acc, gemm_flops) / achieved(on_h100, h100, gemm_flops), 1, 1e-12)
                << gemm_flops;
    }
}

// The same file's sm_100 table (a later commit): bf16 for every sm_100 part, B200 and GB200. Its fp8 entries are
// not used (the same commit's sm_90 fp8 entries exceed the H100's fp8 peak): B200's fp8 GEMMs run at the bf16
// curve's efficiency, GB200's on the FP8 curve measured on the part. A GEMM beyond the table's largest shape
// (4096^3) runs at that shape's rate, as on every curve.
TEST(ServeKernelFloor, Sm100PartsReadXlasSm100Table) {
    const Accelerator& b200 = servetest::System("dgx-b200-superpod").accelerator;
    const Accelerator& gb200 = servetest::System("gb200-nvl72").accelerator;
    auto series = [](const Accelerator& a, Precision p) {
        const GemmCurve* g = FindGemmCurve(Calibration(), a.id, p);
        return g ? g->series : std::string("none");
    };
    EXPECT_EQ(series(b200, Precision::bf16), "xla-sm100-bf16");
    EXPECT_EQ(series(gb200, Precision::bf16), "xla-sm100-bf16");
    EXPECT_EQ(series(b200, Precision::fp8), "none");
    EXPECT_EQ(series(gb200, Precision::fp8), "azure-ndgb200v6-cublaslt-fp8");
    for (const Accelerator* a : {&b200, &gb200}) {
        const ComputeModel m(*a, Precision::bf16, &Calibration(), TrainingOptions{}, AttentionShape{});
        for (double flops : {2.0 * 4096 * 4096 * 4096, 1e13})
            EXPECT_NEAR(m.MatmulEfficiency(flops) * PeakFlops(*a, Precision::bf16), 1416.87e12, 1e3) << a->id;
    }
}

// A100: its GEMM calibration starts at 1024^3 (cuBLASLt fp16, 119 TFLOPS), a GEMM whose roofline is 39% of its
// time: no floor point there, so the floor is the profile's weight-read one, at any bandwidth; without that, none.
TEST(ServeKernelFloor, A100TakesTheWeightReadFloor) {
    const Accelerator& acc = servetest::System("dgx-a100-superpod").accelerator;
    const WeightReadFloor* w = FindWeightReadFloor(Calibration(), acc.id);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(MeasuredKernelFloor(&Calibration(), acc, 1.61e12).alpha_s, w->alpha_us * 1e-6);
    EXPECT_EQ(MeasuredKernelFloor(&Calibration(), acc, 1e15).alpha_s, w->alpha_us * 1e-6);
    CalibrationTable no_profile = Calibration();
    no_profile.weight_read_floor.clear();
    EXPECT_EQ(MeasuredKernelFloor(&no_profile, acc, 1.61e12).alpha_s, 0);
    EXPECT_EQ(MeasuredKernelFloor(nullptr, acc, 1.61e12).alpha_s, 0);
}

// The rule on a made-up table: a point counts only when its roofline is at most a tenth of its time, and the
// smallest alpha over the counted points wins.
TEST(ServeKernelFloor, OnlyOverheadDominatedPointsCount) {
    const Accelerator& acc = servetest::System("dgx-h100-superpod").accelerator;
    const double hbm = 2.9e12, peak = PeakFlops(acc, Precision::bf16);
    auto point_tflops = [](double flops, double seconds) { return flops / seconds / 1e12; };
    CalibrationTable t;
    GemmCurve g;
    g.accelerators = {acc.id};
    g.dtype = Precision::bf16;
    g.series = "made-up";
    const double small = 2.0 * 128 * 128 * 128, big = 2.0 * 8192 * 8192 * 8192;
    const double small_bytes = 3.0 * 128 * 128 * 2;
    g.tflops.x = {small, big};
    g.tflops.y = {point_tflops(small, 8e-6), point_tflops(big, 1.2 * big / peak)};
    t.gemm.push_back(g);
    KernelFloor f = MeasuredKernelFloor(&t, acc, hbm);
    EXPECT_DOUBLE_EQ(f.gemm_flops, small);
    EXPECT_NEAR(f.alpha_s, 8e-6 - small_bytes / hbm, 1e-15);
    // The same small GEMM measured fast enough that its roofline is 11% of its time: not a floor measurement.
    const double roofline = std::max(small / peak, small_bytes / hbm);
    t.gemm[0].tflops.y[0] = point_tflops(small, roofline / 0.11);
    EXPECT_EQ(MeasuredKernelFloor(&t, acc, hbm).alpha_s, 0);
    // Another accelerator's curve never counts.
    t.gemm[0].tflops.y[0] = point_tflops(small, 8e-6);
    t.gemm[0].accelerators = {"a100-80gb"};
    EXPECT_EQ(MeasuredKernelFloor(&t, acc, hbm).alpha_s, 0);
}

// One decode token on H100 TP8: the QKV GEMM reads its weight shard, so it takes exactly alpha + its bytes at
// the achieved bandwidth, on H100 (XLA's floor) and A100 (the weight-read floor) alike.
TEST(ServeKernelFloor, AWeightReadGemmPaysAlphaPlusItsBytes) {
    const ModelConfig m = servetest::Model("llama3-70b");
    ServingPrecision p;
    p.weights = p.compute = p.kv_cache = p.activations = p.embeddings = Precision::fp16;
    const double h = m.hidden, n = (m.heads / 8.0 + 2) * m.head_dim;  // 8 query heads, 1 K and 1 V head per rank
    const double bytes = h * 2 + n * h * 2 + n * 2;                   // input row, weight shard, output row
    for (const char* sys_id : {"dgx-h100-superpod", "dgx-a100-superpod"}) {
        const System& sys = servetest::System(sys_id);
        IterationCost cost(m, p, 8, sys, &Calibration(), 1024, 8);
        ComputeModel cm(sys.accelerator, Precision::fp16, &Calibration(), TrainingOptions{});
        const double expected = cost.kernel_floor().alpha_s + bytes / cm.memory_bytes_per_s();
        EXPECT_NEAR(cost.LayerLinear(1).qkv, expected, 1e-12) << sys_id;
    }
    for (const char* sys_id : {"dgx-h100-superpod", "dgx-a100-superpod"})
        EXPECT_GT(IterationCost(m, p, 8, servetest::System(sys_id), &Calibration(), 1024, 8).kernel_floor().alpha_s, 0);
}

}  // namespace
