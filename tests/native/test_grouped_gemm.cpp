// A grouped (MoE expert) GEMM's measured ceiling (presets/calibration/measured.json "grouped_gemm"): TensorRT-LLM's
// MoE op on A100 from NVIDIA aiconfigurator's table (data/calibration.json "grouped_gemm"). The curve is the records'
// own numbers; its rate follows the rows per expert, not the expert's width; and the compute model holds grouped GEMMs
// to it where, and only where, it was measured.
//   ./build/stagecraft_tests --gtest_filter='GroupedGemm.*'
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "parallel/job.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "training/compute_model.h"
#include "training/rate_sources.h"

namespace {

using namespace sc;
using json = nlohmann::json;

const json& Records() {
    static const json data =
        json::parse(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/data/calibration.json")).at("grouped_gemm");
    return data;
}

// rows per group -> TFLOPS of the records at one moe_tp (whole experts hit: 4 tokens and up).
std::map<double, double> RecordsAt(int moe_tp) {
    std::map<double, double> out;
    for (const json& r : Records())
        if (r.at("shape").at("moe_tp") == moe_tp && r.at("shape").at("num_tokens").get<int>() >= 4)
            out[r.at("derived").at("rows_per_group")] = r.at("derived").at("tflops");
    return out;
}

const Accelerator& Part(const std::string& id) {
    static std::map<std::string, Accelerator> cache;
    auto it = cache.find(id);
    if (it != cache.end()) return it->second;
    return cache[id] = ParseAccelerator(sctest::ReadFile(servetest::kRoot + "/presets/hardware/" + id + ".json"));
}

// The curve is the moe_tp 1 records as measured, point for point.
TEST(GroupedGemm, TheCurveIsTheRecords) {
    const GroupedGemmCurve* g = FindGroupedGemm(servetest::Calibration(), "a100-80gb", Precision::bf16);
    ASSERT_NE(g, nullptr);
    const std::map<double, double> tp1 = RecordsAt(1);
    ASSERT_EQ(g->tflops.x.size(), tp1.size());
    size_t i = 0;
    for (const auto& [m, tflops] : tp1) {
        EXPECT_EQ(g->tflops.x[i], m);
        EXPECT_EQ(g->tflops.y[i], tflops) << m;
        ++i;
    }
    // Every record is physically possible: under A100's 312 TFLOPS.
    for (const json& r : Records()) EXPECT_LT(r.at("derived").at("tflops").get<double>(), 312.0);
    // Both A100 presets read it, at fp16 too (the same tensor-core rate); H100 has none.
    EXPECT_EQ(FindGroupedGemm(servetest::Calibration(), "a100-40gb", Precision::fp16), g);
    EXPECT_EQ(FindGroupedGemm(servetest::Calibration(), "h100-sxm", Precision::bf16), nullptr);
}

// The experts split over 2 and 4 ranks (half and a quarter of their width) run at the whole experts' rate at the same
// rows per expert: within 5% from 192 rows (3% from 384), within 16% from 64 (aiconfigurator's moe_tp 2 and 4 rows).
TEST(GroupedGemm, TheRateFollowsTheRowsPerExpertNotTheWidth) {
    const std::map<double, double> tp1 = RecordsAt(1);
    int checked = 0;
    for (int tp : {2, 4})
        for (const auto& [m, tflops] : RecordsAt(tp)) {
            if (m < 64 || !tp1.count(m)) continue;
            EXPECT_NEAR(tflops / tp1.at(m), 1.0, m >= 192 ? 0.05 : 0.16) << "moe_tp " << tp << " at " << m;
            ++checked;
        }
    EXPECT_GE(checked, 30);
}

// A grouped GEMM on A100 runs at the curve where it is below the dense rate: 8 experts x 1,024 rows of Mixtral's
// gate/up projection (n 28,672, k 4,096) at the curve's 144.73 TFLOPS, where the same GEMM alone runs faster; H100 and
// a hand-set efficiency keep the dense rate.
TEST(GroupedGemm, GroupedGemmsOnA100RunAtTheMeasuredMoeOp) {
    const TrainingOptions opt;
    const ComputeModel a100(Part("a100-80gb"), Precision::fp16, &servetest::Calibration(), opt);
    const double m = 1024, n = 28672, k = 4096, groups = 8, flops = 2 * m * n * k * groups;
    const double bytes = (m * k + k * n + m * n) * 2 * groups;
    const double grouped = a100.Seconds(OpKind::matmul, flops, bytes, true, groups, false, false, {m, n, k});
    EXPECT_NEAR(flops / grouped / 1e12, 144.73, 1e-6);
    const double dense = a100.Seconds(OpKind::matmul, flops, bytes, true, 1, false, false, {m * groups, n, k});
    EXPECT_LT(dense, grouped / 1.3);  // cuBLASLt's curve (and the framework profile) run these shapes faster
    const ComputeModel h100(Part("h100-sxm"), Precision::bf16, &servetest::Calibration(), opt);
    EXPECT_EQ(h100.grouped_gemm(), nullptr);
    TrainingOptions hand;
    hand.matmul_efficiency = 0.6;
    const ComputeModel set(Part("a100-80gb"), Precision::fp16, &servetest::Calibration(), hand);
    EXPECT_EQ(set.grouped_gemm(), nullptr);
    EXPECT_NEAR(set.Seconds(OpKind::matmul, flops, bytes, true, groups, false, false, {m, n, k}),
                flops / (0.6 * PeakFlops(Part("a100-80gb"), Precision::fp16)), 1e-12);
    // The rates line names it.
    const std::string gemm =
        DescribeRates(MakeJob(servetest::Model("mixtral-8x7b"), ParseParallelSpec("tp=8,ep=8,sp=1")),
                      servetest::System("dgx-a100-superpod"), &servetest::Calibration(), opt)
            .gemm;
    EXPECT_NE(gemm.find("grouped (MoE expert) GEMMs at most aiconf-a100-trtllm1.0-moe-mixtral8x7b"), std::string::npos)
        << gemm;
}

}  // namespace
