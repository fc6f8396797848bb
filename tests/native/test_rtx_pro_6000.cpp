// The RTX PRO 6000 Blackwell Server Edition (2026-11-30, for TensorRT-LLM's perf-overview tables of the card): its
// preset and PCIe server, and which measurements it reads. NVIDIA's AIConfigurator collected TensorRT-LLM 1.3.0rc20's
// own ops on it; its Linear (NVFP4, per-tensor and block-scaled FP8) and its MoE op are the card's curves, which
// training does not read: the card has no library GEMM or attention measurement, so those run at the fallbacks. Its
// GDDR7 streams at the engine's fp8 quantize kernel's measured rate, its decode calls at the attention op's floor.
#include <gtest/gtest.h>

#include "serve_test_util.h"
#include "training/compute_model.h"
#include "training/sweep.h"

namespace {

using namespace sc;
using servetest::Calibration;

const char* const kPart = "rtx-pro-6000-server";

TEST(RtxPro6000, PresetIsNvidiasToolsFiguresAtItsMeasuredClock) {
    const System& s = servetest::System("rtx-pro-6000-pcie-server");
    const Accelerator& a = s.accelerator;
    EXPECT_EQ(a.id, kPart);
    // Dense tensor rates at the 2,430 MHz the card reported (aiconfigurator's system file), GDDR7 at 1.792 TB/s.
    EXPECT_EQ(*a.matrix.bf16, 467.8);
    EXPECT_EQ(*a.matrix.fp8, 935.6);
    EXPECT_EQ(*a.matrix.fp4, 1871.2);
    EXPECT_DOUBLE_EQ(a.hbm_bandwidth_tbps, 1.792);
    EXPECT_NEAR(a.MemoryBytes() / 1073741824.0, 95.59, 1e-9);  // 97,887 MiB as nvidia-smi reported it
    EXPECT_EQ(a.sm_count, 188);
    // Eight cards on PCIe Gen5 x16, no NVLink: NCCL plans a Gen5 x16 link at 48 GB/s of its 64.
    ASSERT_EQ(s.levels.size(), 1u);
    EXPECT_EQ(s.TotalAccelerators(), 8);
    EXPECT_EQ(a.scale_up_gbps_per_direction, 64);
    EXPECT_DOUBLE_EQ(s.levels[0].EffectiveGBps(), 48);
    EXPECT_FALSE(s.levels[0].in_network_reduction);
    EXPECT_THROW(ExtendSystem(s, 16), Error);  // one server, no network beyond it
}

TEST(RtxPro6000, ServingReadsTheEnginesOwnOpsAndTrainingTheFallbacks) {
    const CalibrationTable& cal = Calibration();
    // The engine's Linear in every precision it serves in, on the card's own 735-shape grid.
    for (auto [p, scaling, series] :
         {std::tuple{Precision::fp4, "", "aiconf-trtllm1.3-rtx-pro-6000-server-nvfp4"},
          std::tuple{Precision::fp8, "", "aiconf-trtllm1.3-rtx-pro-6000-server-fp8"},
          std::tuple{Precision::fp8, "block", "aiconf-trtllm1.3-rtx-pro-6000-server-fp8-block"}}) {
        SCOPED_TRACE(series);
        const GemmCurve* e = FindEngineGemmCurve(cal, kPart, p, scaling);
        ASSERT_NE(e, nullptr);
        EXPECT_EQ(e->series, series);
        EXPECT_EQ(e->grid.tflops.size(), 735u);
    }
    // NVFP4 at 8192^3 runs at 1,271 TFLOPS, 0.68 of the card's peak (B200's engine: 3,864 of 9,000).
    const GemmCurve* fp4 = FindEngineGemmCurve(cal, kPart, Precision::fp4);
    EXPECT_EQ(GridTflops(fp4->grid, GemmDims{8192, 8192, 8192}), 1271.06);
    // The MoE op at Qwen3's shapes, its own records (not B200's).
    const std::vector<const GroupedGemmCurve*> moe = FindGroupedGemms(cal, kPart, Precision::fp4);
    ASSERT_FALSE(moe.empty());
    const GroupedGemmCurve* q = NearestGroupedGemm(moe, 1536, 128, 4096);  // Qwen3-235B-A22B's experts, moe_ep 1
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->series, "aiconf-rtx-pro-6000-server-trtllm1.3-moe-qwen3-235b-a22b-fp4");
    // Training's paths have nothing measured on the card.
    EXPECT_EQ(FindGemmCurve(cal, kPart, Precision::bf16), nullptr);
    EXPECT_EQ(FindGemmCurve(cal, kPart, Precision::fp4), nullptr);  // the engine's are never the library's
    EXPECT_EQ(FindGemmMax(cal, kPart, Precision::bf16), nullptr);
    EXPECT_EQ(FindAttentionCurve(cal, kPart, AttentionKernel::cudnn, true, true, 128), nullptr);
    const TrainingOptions o;
    ComputeModel cm(servetest::System("rtx-pro-6000-pcie-server").accelerator, Precision::bf16, &cal, o,
                    AttentionShape{});
    EXPECT_DOUBLE_EQ(cm.MatmulEfficiency(2.0 * 4096 * 4096 * 4096), o.fallback_matmul_efficiency);
    // 1.487 TB/s, 0.83 of its 1.792 (the median of three 3-6 GB quantize passes, beyond its 128 MB L2).
    EXPECT_TRUE(cm.hbm_measured());
    EXPECT_DOUBLE_EQ(cm.memory_bytes_per_s(), 1.487e12);
    // The decode call: 3.24 us and 10.31 ns a sequence and KV head, derived as on the B200 parts
    // (DecodeAttentionFloor.*), with the doubt its record names (short caches read from L2).
    const DecodeAttentionFloor* f = FindDecodeAttentionFloor(cal, kPart);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->alpha_us, 3.24);
    EXPECT_EQ(f->sequence_kv_head_ns, 10.31);
}

}  // namespace
