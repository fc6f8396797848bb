// The GH200 and L40S presets (2026-11-29, for TensorRT-LLM 0.17's GH200 and L40S columns): which measurements each
// part reads (presets/calibration/measured.json), and what their one-domain systems do when asked to grow.
// The GH200's GPU is an H100, so it reads H100's sm_90 curves; the L40S has one measurement, an all-reduce of eight
// cards in one host, and runs everything else at the fallbacks and says so.
#include <gtest/gtest.h>

#include "engine/serve.h"
#include "inference/iteration_cost.h"
#include "serve_test_util.h"
#include "training/compute_model.h"
#include "training/sweep.h"

namespace {

using namespace sc;
using servetest::Calibration;

const Accelerator& Part(const std::string& id) {
    return servetest::System(id == "gh200" ? "dgx-gh200" : "l40s-pcie-server").accelerator;
}

TEST(Gh200, ReadsTheH100CurvesAndItsOwnBestGemms) {
    const CalibrationTable& cal = Calibration();
    const GemmCurve* gh = FindGemmCurve(cal, "gh200", Precision::bf16);
    const GemmCurve* h100 = FindGemmCurve(cal, "h100-sxm", Precision::bf16);
    ASSERT_NE(gh, nullptr);
    ASSERT_NE(h100, nullptr);
    EXPECT_EQ(gh->series, "xla-sm90-bf16");
    EXPECT_EQ(gh, h100);  // the same curve, not a copy
    EXPECT_EQ(FindFrameworkGemm(cal, "gh200", false), FindFrameworkGemm(cal, "h100-sxm", false));
    EXPECT_EQ(FindAttentionCurve(cal, "gh200", AttentionKernel::cudnn, true, true, 128),
              FindAttentionCurve(cal, "h100-sxm", AttentionKernel::cudnn, true, true, 128));
    EXPECT_NE(FindAttentionCurve(cal, "gh200", AttentionKernel::cudnn, true, true, 128), nullptr);
    // Its own MAMF rows, not H100's (828.6 bf16 and 1,535 fp8 TFLOPS against H100's 794.5 and 1,402.6).
    ASSERT_NE(FindGemmMax(cal, "gh200", Precision::bf16), nullptr);
    EXPECT_EQ(FindGemmMax(cal, "gh200", Precision::bf16)->tflops, 828.6);
    EXPECT_EQ(FindGemmMax(cal, "gh200", Precision::fp8)->tflops, 1535.0);
    // Its NVLink-C2C as KTH measured it (a secondary report): what offloading and host KV tiers on it run at.
    EXPECT_EQ(HostLinkGBps(cal, "gh200", HostLinkOp::host_to_device), 375);
    EXPECT_EQ(HostLinkGBps(cal, "gh200", HostLinkOp::device_to_host), 297);
    EXPECT_EQ(HostLinkGBps(cal, "l40s", HostLinkOp::host_to_device), 0);
    // Same compute as H100 SXM; only HBM differs (96 GB at 4.0 TB/s), measured nowhere: the fallback fraction.
    const Accelerator& a = Part("gh200");
    EXPECT_EQ(*a.matrix.bf16, 989);
    EXPECT_EQ(*a.matrix.fp8, 1979);
    ComputeModel cm(a, Precision::bf16, &cal, TrainingOptions{}, AttentionShape{});
    EXPECT_FALSE(cm.hbm_measured());
    // A large GEMM runs at H100's curve efficiency (same peak, same table); only the roofline's memory term
    // differs, by the two parts' HBM (4.0 against 3.35 TB/s), well under a thousandth here.
    ComputeModel h(servetest::System("dgx-h100-superpod").accelerator, Precision::bf16, &cal, TrainingOptions{},
                   AttentionShape{});
    EXPECT_NEAR(cm.MatmulEfficiency(2.0 * 4096 * 4096 * 4096), h.MatmulEfficiency(2.0 * 4096 * 4096 * 4096), 1e-3);
    EXPECT_GE(cm.MatmulEfficiency(2.0 * 4096 * 4096 * 4096), h.MatmulEfficiency(2.0 * 4096 * 4096 * 4096));
}

TEST(L40s, RunsAtTheFallbacksButForItsMeasuredAllReduce) {
    const CalibrationTable& cal = Calibration();
    EXPECT_EQ(FindGemmCurve(cal, "l40s", Precision::bf16), nullptr);
    EXPECT_EQ(FindGemmCurve(cal, "l40s", Precision::fp8), nullptr);
    EXPECT_EQ(FindGemmMax(cal, "l40s", Precision::bf16), nullptr);
    EXPECT_EQ(FindAttentionCurve(cal, "l40s", AttentionKernel::cudnn, true, true, 128), nullptr);
    const TrainingOptions o;
    ComputeModel cm(Part("l40s"), Precision::fp8, &cal, o, AttentionShape{});
    EXPECT_FALSE(cm.hbm_measured());
    EXPECT_DOUBLE_EQ(cm.MatmulEfficiency(2.0 * 4096 * 4096 * 4096), o.fallback_matmul_efficiency);
    EXPECT_DOUBLE_EQ(cm.AttentionEfficiency(true), o.fallback_attention_efficiency);
    // The datasheet: 733 fp8, 362 bf16 dense; 48 GB GDDR6 at 864 GB/s; no NVLink, PCIe Gen4 x16 per direction.
    EXPECT_EQ(*Part("l40s").matrix.fp8, 733);
    EXPECT_EQ(*Part("l40s").matrix.bf16, 362);
    EXPECT_DOUBLE_EQ(Part("l40s").hbm_bandwidth_tbps, 0.864);
    EXPECT_EQ(Part("l40s").scale_up_gbps_per_direction, 32);
    // The server's level: PCIe at NCCL's planning rate (24 GB/s of 32), no in-network reduction; what collectives
    // without a measured curve run at.
    const System& s = servetest::System("l40s-pcie-server");
    ASSERT_EQ(s.levels.size(), 1u);
    EXPECT_DOUBLE_EQ(s.levels[0].EffectiveGBps(), 24);
    EXPECT_FALSE(s.levels[0].in_network_reduction);
}

// The all-reduce of eight L40S in one host (nccl-tests, NCCL_ALGO=Ring; data/calibration.json): 19.35 GB/s of bus
// bandwidth at 8 MiB, 11.3-11.6 from 32 MiB up, under the 24 GB/s the level plans. A serving replica's TP
// all-reduce reads it at the message size the 8-rank curve would carry (bytes x 8 / tp), as on the NVLink systems.
TEST(L40s, TpAllReduceRunsAtTheMeasuredEightCardCurve) {
    const CalibrationTable& cal = Calibration();
    const CollectiveCurve* c = FindCollectiveCurve(cal, "l40s", CollectiveOp::all_reduce, "scale_up", 8);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->series, "nccl-l40s-iommu-fix-8gpu-allreduce-ring");
    EXPECT_EQ(c->n_ranks, 8);
    EXPECT_EQ(BusBandwidthGBps(*c, 8388608), 19.35);
    EXPECT_EQ(BusBandwidthGBps(*c, 67108864), 11.61);
    EXPECT_EQ(FindCollectiveCurve(cal, "l40s", CollectiveOp::all_gather, "scale_up", 8), nullptr);
    const System& server = servetest::System("l40s-pcie-server");
    const ModelConfig m = servetest::Model("llama3-70b");
    ServingPrecision fp8;
    fp8.weights = fp8.compute = Precision::fp8;
    const double h = m.hidden, a = BytesOf(fp8.activations);
    for (int tp : {4, 8}) {
        SCOPED_TRACE(tp);
        IterationCost cost(m, fp8, tp, server, &cal, 1024, 1);
        const double tokens = 4096.0 * tp / 8;  // 64 MiB at the curve's 8 ranks
        const double bytes = tokens * h * a;
        EXPECT_DOUBLE_EQ(cost.LayerLinear(tokens).all_reduce, 2.0 * (tp - 1) / tp * bytes / 11.61e9);
        // Slower than the level's planning rate would give: the measured bus bandwidth is under half of it.
        EXPECT_GT(cost.LayerLinear(tokens).all_reduce, 2.0 * (tp - 1) / tp * bytes / 24e9 * 2);
    }
}

// A system that is one scale-up domain runs any job that fits it and refuses a larger one, naming the domain and
// what would be needed; it never stretches NVLink or PCIe to more accelerators.
TEST(OneDomainSystems, RefuseToGrowPastTheirDomain) {
    for (const char* id : {"dgx-gh200", "l40s-pcie-server", "rtx-pro-6000-pcie-server"}) {
        SCOPED_TRACE(id);
        const System& s = servetest::System(id);
        const int size = s.TotalAccelerators();
        EXPECT_EQ(ExtendSystem(s, size).TotalAccelerators(), size);
        EXPECT_LE(ExtendSystem(s, size / 2).TotalAccelerators(), size);
        try {
            ExtendSystem(s, size + 1);
            ADD_FAILURE() << "grew past its domain";
        } catch (const Error& e) {
            EXPECT_EQ(e.field, "gpus");
            EXPECT_NE(std::string(e.what()).find("scale-up domain with no network beyond it"), std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find(s.levels[0].name), std::string::npos) << e.what();
        }
    }
}

// Serving replicas need no network between them: on a one-domain system they take as many copies of it as they
// fill, each replica inside one. A replica larger than the domain, or a disaggregated pair whose KV cache crosses
// between pools, still needs a network and is refused.
TEST(OneDomainSystems, ServingReplicasTakeSeparateCopies) {
    const System& server = servetest::System("l40s-pcie-server");
    ServingConfig c;
    c.model = servetest::Model("llama3-70b");
    c.pool.tp = 4;
    c.pool.replicas = 5;  // two a server: three servers
    const System s = engine::ServingCluster(server, c);
    EXPECT_EQ(s.TotalAccelerators(), 8);  // each replica's collectives stay on one server's PCIe
    EXPECT_EQ(s.name.rfind("3 x " + server.name, 0), 0u) << s.name;
    c.pool.replicas = 2;
    EXPECT_EQ(engine::ServingCluster(server, c).name, server.name);  // fits one server as it is
    c.pool.tp = 16;
    c.pool.replicas = 1;
    try {
        engine::ServingCluster(server, c);
        ADD_FAILURE() << "a 16-GPU replica on an 8-card server";
    } catch (const Error& e) {
        EXPECT_EQ(e.field, "pool.replicas");
        EXPECT_NE(std::string(e.what()).find("scale-up domain with no network beyond it"), std::string::npos);
    }
    c.pool.tp = 8;
    c.decode_pool = c.pool;
    try {
        engine::ServingCluster(server, c);
        ADD_FAILURE() << "a disaggregated pair across two servers with no network";
    } catch (const Error& e) {
        EXPECT_EQ(e.field, "decode_pool.replicas");
    }
}

}  // namespace
