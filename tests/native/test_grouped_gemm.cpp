// A grouped (MoE expert) GEMM's measured ceiling (presets/calibration/measured.json "grouped_gemm"): TensorRT-LLM's
// MoE op from NVIDIA aiconfigurator's tables (data/calibration.json "grouped_gemm"), on A100 (TensorRT-LLM 1.0.0) and
// on H100 and H200 (1.3.0rc20, fp8 and bf16, one curve per expert width). The curves are the records' own numbers;
// on A100 the rate follows the rows per expert, not the expert's width, on Hopper it falls with the width; the serving
// engine holds its expert GEMMs to the curve of the nearest width where, and only where, one was measured, and the
// training model (other kernels, balanced routing) not at all.
//   ./build/stagecraft_tests --gtest_filter='GroupedGemm.*'
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "inference/iteration_cost.h"
#include "parallel/job.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "training/compute_model.h"
#include "training/rate_sources.h"

namespace {

using namespace sc;
using json = nlohmann::json;

using servetest::Part;

const json& Records() { return servetest::CalibrationRecords("grouped_gemm"); }

// rows per group -> TFLOPS of one series' records at one moe_tp (whole experts hit: 4 tokens and up).
std::map<double, double> RecordsAt(const std::string& series, int moe_tp) {
    std::map<double, double> out;
    for (const json& r : Records())
        if (r.at("series") == series && r.at("shape").at("moe_tp") == moe_tp &&
            r.at("shape").at("num_tokens").get<int>() >= 4)
            out[r.at("derived").at("rows_per_group")] = r.at("derived").at("tflops");
    return out;
}

TrainingOptions Serving() {
    TrainingOptions opt;
    opt.engine_moe_op = true;
    return opt;
}

// Every curve is its series' records at the moe_tp that splits an expert to its width, point for point; every record
// is physically possible (under its part's dense peak at its precision).
TEST(GroupedGemm, TheCurvesAreTheRecords) {
    const CalibrationTable& cal = servetest::Calibration();
    ASSERT_EQ(cal.grouped_gemm.size(), 17u);  // A100's one, H100's and H200's four widths in fp8 and bf16
    for (const GroupedGemmCurve& g : cal.grouped_gemm) {
        SCOPED_TRACE(g.id);
        EXPECT_EQ(g.routing, "power_law_1.01");
        const int moe_tp = static_cast<int>(std::lround(14336 / g.expert_width));
        ASSERT_EQ(14336 / moe_tp, g.expert_width);
        const std::map<double, double> pts = RecordsAt(g.series, moe_tp);
        ASSERT_EQ(g.tflops.x.size(), pts.size());
        size_t i = 0;
        for (const auto& [m, tflops] : pts) {
            EXPECT_EQ(g.tflops.x[i], m);
            EXPECT_EQ(g.tflops.y[i], tflops) << m;
            ++i;
        }
    }
    const std::map<std::string, double> peak = {
        {"a100", 312.0}, {"h100-fp8", 1979}, {"h100-bf16", 989.5}, {"h200-fp8", 1979}, {"h200-bf16", 989.5}};
    for (const json& r : Records()) {
        const std::string s = r.at("series");
        const std::string part = s.substr(7, 4);
        const double p =
            part == "a100" ? peak.at("a100") : peak.at(part + (s.find("fp8") != s.npos ? "-fp8" : "-bf16"));
        EXPECT_LT(r.at("derived").at("tflops").get<double>(), p) << s;
    }
    // Who reads which: both A100 presets A100's (fp16 too, the same tensor-core rate), H800 H100's (the same GH100
    // SMs and HBM3), H200 its own; GH200 (another HBM) and the Blackwell parts none.
    EXPECT_EQ(FindGroupedGemms(cal, "a100-40gb", Precision::fp16).size(), 1u);
    EXPECT_EQ(FindGroupedGemms(cal, "h100-sxm", Precision::fp8).size(), 4u);
    EXPECT_EQ(FindGroupedGemms(cal, "h800", Precision::bf16), FindGroupedGemms(cal, "h100-sxm", Precision::bf16));
    EXPECT_EQ(FindGroupedGemms(cal, "h200", Precision::fp8).front()->series,
              "aiconf-h200-trtllm1.3-moe-mixtral8x7b-fp8");
    EXPECT_TRUE(FindGroupedGemms(cal, "gh200", Precision::fp8).empty());
    EXPECT_TRUE(FindGroupedGemms(cal, "b200", Precision::bf16).empty());
}

// On A100 the experts split over 2 and 4 ranks (half and a quarter of their width) run at the whole experts' rate at
// the same rows per expert: within 5% from 192 rows (3% from 384), within 16% from 64 (aiconfigurator's moe_tp 2 and
// 4 rows); one curve serves every width there.
TEST(GroupedGemm, OnA100TheRateFollowsTheRowsPerExpertNotTheWidth) {
    const std::string a100 = "aiconf-a100-trtllm1.0-moe-mixtral8x7b";
    const std::map<double, double> tp1 = RecordsAt(a100, 1);
    int checked = 0;
    for (int tp : {2, 4})
        for (const auto& [m, tflops] : RecordsAt(a100, tp)) {
            if (m < 64 || !tp1.count(m)) continue;
            EXPECT_NEAR(tflops / tp1.at(m), 1.0, m >= 192 ? 0.05 : 0.16) << "moe_tp " << tp << " at " << m;
            ++checked;
        }
    EXPECT_GE(checked, 30);
}

// On H100 and H200 in fp8 the op slows as its experts narrow: at moe_tp 8 (1,792 a rank) it runs at 0.55-0.85 of the
// whole experts' rate from 128 rows per expert, which one curve by rows per expert would miss.
TEST(GroupedGemm, OnHopperTheRateFallsWithTheWidth) {
    for (const std::string series :
         {"aiconf-h100-trtllm1.3-moe-mixtral8x7b-fp8", "aiconf-h200-trtllm1.3-moe-mixtral8x7b-fp8"}) {
        const std::map<double, double> tp1 = RecordsAt(series, 1), tp8 = RecordsAt(series, 8);
        int checked = 0;
        for (const auto& [m, tflops] : tp8) {
            if (m < 128) continue;
            EXPECT_GT(tflops / tp1.at(m), 0.55) << series << " at " << m;
            EXPECT_LT(tflops / tp1.at(m), 0.85) << series << " at " << m;
            ++checked;
        }
        EXPECT_GE(checked, 10) << series;
    }
}

// A grouped GEMM of a stated expert width runs at the curve of the nearest width where it is below the dense rate:
// on A100, 8 experts x 1,024 rows of Mixtral's gate/up projection (n 28,672, k 4,096) at the curve's 144.73 TFLOPS;
// on H100 in fp8 a 1,792-wide expert (TP8) at the moe_tp 8 curve, a 3,000-wide one at the moe_tp 4 curve (nearer by
// ratio) and a 7,168-wide one (TP2) at the moe_tp 2 curve, each the slower of it and the dense rate, which at some
// rows per expert the curve is well below. Without a stated width, in the training model, or with a hand-set
// efficiency, the dense rate holds.
TEST(GroupedGemm, ExpertGemmsRunAtTheMeasuredMoeOpOfTheNearestWidth) {
    const CalibrationTable& cal = servetest::Calibration();
    const double groups = 8;
    // `w`: bytes of an input or weight element (1 in fp8); outputs in 16 bits.
    auto time = [&](const ComputeModel& cm, double m, double n, double k, double width, double w = 2) {
        const double flops = 2 * m * n * k * groups, bytes = ((m * k + k * n) * w + m * n * 2) * groups;
        GemmDims d{m, n, k};
        d.group_width = width;
        return std::pair{flops, cm.Seconds(OpKind::matmul, flops, bytes, true, groups, false, false, d)};
    };
    const ComputeModel a100(Part("a100-80gb"), Precision::fp16, &cal, Serving());
    const auto [fa, ta] = time(a100, 1024, 28672, 4096, 14336);
    EXPECT_NEAR(fa / ta / 1e12, 144.73, 1e-6);
    const ComputeModel h100(Part("h100-sxm"), Precision::fp8, &cal, Serving());
    const auto curve = [&](double width) {
        for (const GroupedGemmCurve* g : FindGroupedGemms(cal, "h100-sxm", Precision::fp8))
            if (g->expert_width == width) return g;
        return static_cast<const GroupedGemmCurve*>(nullptr);
    };
    ASSERT_NE(curve(1792), nullptr);
    ASSERT_NE(curve(3584), nullptr);
    ASSERT_NE(curve(7168), nullptr);
    bool binds = false;
    for (double m : {32.0, 64.0, 128.0, 256.0, 1024.0, 4096.0}) {
        SCOPED_TRACE(m);
        for (const auto& [width, measured] :
             {std::pair{1792.0, 1792.0}, std::pair{3000.0, 3584.0}, std::pair{7168.0, 7168.0}}) {
            const auto [f, t] = time(h100, m, 2 * width, 4096, width, 1);
            const double dense = time(h100, m, 2 * width, 4096, 0, 1).second;
            EXPECT_NEAR(t, std::max(dense, f / (Interpolate(curve(measured)->tflops, m) * 1e12)), 1e-12) << width;
            binds |= t > 1.2 * dense;
        }
    }
    EXPECT_TRUE(binds);
    // The training model and a hand-set efficiency read no curve.
    const ComputeModel training(Part("h100-sxm"), Precision::fp8, &cal, TrainingOptions{});
    EXPECT_TRUE(training.grouped_gemms().empty());
    EXPECT_EQ(time(training, 64, 2 * 1792, 4096, 1792).second, time(h100, 64, 2 * 1792, 4096, 0).second);
    TrainingOptions hand = Serving();
    hand.matmul_efficiency = 0.6;
    const ComputeModel set(Part("a100-80gb"), Precision::fp16, &cal, hand);
    EXPECT_TRUE(set.grouped_gemms().empty());
    const auto [fs, ts] = time(set, 1024, 28672, 4096, 14336);
    EXPECT_NEAR(ts, fs / (0.6 * PeakFlops(Part("a100-80gb"), Precision::fp16)), 1e-12);
}

// The serving model states its experts' width: Mixtral 8x7B in fp8 on two H100s (each expert 7,168 wide on a rank)
// decodes 512 sequences slower with the curves than without them, all of it in the expert GEMMs; a dense model is
// untouched, and so are weights stored narrower than the GEMMs run (fp8 weights under bf16 GEMMs: the measured op
// read its weights at its own precision).
TEST(GroupedGemm, TheServingEngineHoldsItsExpertsToTheOp) {
    CalibrationTable without = servetest::Calibration();
    without.grouped_gemm.clear();
    ServingPrecision fp8;
    fp8.weights = fp8.compute = Precision::fp8;
    const System& sys = servetest::System("dgx-h100-superpod");
    BatchShape b;
    b.decodes = b.sequences = b.logits = 512;
    b.decode_keys = 512 * 1024.0;
    for (const std::string model : {"mixtral-8x7b", "llama3-70b"}) {
        SCOPED_TRACE(model);
        const ModelConfig mc = servetest::Model(model);
        const IterationCost with_op(mc, fp8, 2, sys, &servetest::Calibration(), 1024, 1);
        const IterationCost dense(mc, fp8, 2, sys, &without, 1024, 1);
        const IterationBreakdown a = with_op.Breakdown(b), d = dense.Breakdown(b);
        EXPECT_EQ(a.attention, d.attention);
        EXPECT_EQ(a.tp_comm, d.tp_comm);
        if (model == "mixtral-8x7b") EXPECT_GT(a.linear, d.linear * 1.15);
        else EXPECT_EQ(a.linear, d.linear);
    }
    ServingPrecision weight_only;
    weight_only.weights = Precision::fp8;
    const ModelConfig mixtral = servetest::Model("mixtral-8x7b");
    const IterationCost with_op(mixtral, weight_only, 2, sys, &servetest::Calibration(), 1024, 1);
    const IterationCost dense(mixtral, weight_only, 2, sys, &without, 1024, 1);
    EXPECT_EQ(with_op.Breakdown(b).linear, dense.Breakdown(b).linear);
}

// The rates line names the curves where they apply (the serving engine's) and not in training.
TEST(GroupedGemm, TheRatesLineNamesThem) {
    const Job job = MakeJob(servetest::Model("mixtral-8x7b"), ParseParallelSpec("tp=8,ep=8,sp=1"));
    const std::string serving =
        DescribeRates(job, servetest::System("dgx-a100-superpod"), &servetest::Calibration(), Serving()).gemm;
    EXPECT_NE(serving.find("grouped (MoE expert) GEMMs at most aiconf-a100-trtllm1.0-moe-mixtral8x7b"),
              std::string::npos)
        << serving;
    const std::string training =
        DescribeRates(job, servetest::System("dgx-a100-superpod"), &servetest::Calibration(), TrainingOptions{}).gemm;
    EXPECT_EQ(training.find("grouped"), std::string::npos) << training;
}

}  // namespace
