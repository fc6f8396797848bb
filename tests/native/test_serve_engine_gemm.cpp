// A serving engine's own fp4 GEMM (presets/calibration/measured.json "gemm" curves marked "engine": "tensorrt-llm":
// aiconfigurator's TensorRT-LLM 1.3.0rc20 NVFP4 Linear tables of B200, GB200, B300 and GB300, input quantize
// included): the serving model's dense fp4 GEMMs run at it, by shape; its grouped expert GEMMs, its 16-bit and int4
// GEMMs and every training GEMM keep the library curves. docs/serving.md, "A serving engine's own fp4 GEMMs".
//   ./build/stagecraft_tests --gtest_filter='EngineGemm.*'
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/calibration.h"
#include "inference/iteration_cost.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "training/compute_model.h"

namespace {

using namespace sc;
using servetest::Calibration;
using servetest::Part;

TrainingOptions Serving() {
    TrainingOptions opt;
    opt.engine_moe_op = opt.engine_gemms = true;
    return opt;
}

// One GEMM of m x n x k in fp4 (inputs and weights at NVFP4's 0.5625 bytes, bf16 out) through `cm`.
double Fp4GemmSeconds(const ComputeModel& cm, double m, double n, double k) {
    const double flops = 2 * m * n * k, bytes = (m * k + k * n) * 0.5625 + m * n * 2;
    return cm.Seconds(OpKind::matmul, flops, bytes, true, 1, false, false, GemmDims{m, n, k});
}

// Only the serving model finds the engine's curve; the library lookup never returns it, so training's fp4 GEMMs on
// B200 still have no curve of their own and GB200's stay Azure's cuBLASLt run.
TEST(EngineGemm, OnlyTheServingModelReadsTheEnginesCurve) {
    for (const std::string part : {"b200", "gb200", "b300", "gb300"}) {
        SCOPED_TRACE(part);
        const GemmCurve* e = FindEngineGemmCurve(Calibration(), part, Precision::fp4);
        ASSERT_NE(e, nullptr);
        EXPECT_EQ(e->engine, "tensorrt-llm");
        EXPECT_EQ(e->id, "aiconf-trtllm1.3-" + part + "-nvfp4");
        EXPECT_EQ(FindEngineGemmCurve(Calibration(), part, Precision::bf16), nullptr);
        const GemmCurve* library = FindGemmCurve(Calibration(), part, Precision::fp4);
        EXPECT_TRUE(library == nullptr || library->engine.empty());
        EXPECT_EQ(ComputeModel(Part(part), Precision::fp4, &Calibration(), Serving()).engine_gemm_curve(), e);
        EXPECT_EQ(ComputeModel(Part(part), Precision::fp4, &Calibration(), TrainingOptions{}).engine_gemm_curve(),
                  nullptr);
    }
    EXPECT_EQ(FindGemmCurve(Calibration(), "gb200", Precision::fp4)->series, "azure-ndgb200v6-cublaslt-fp4");
    EXPECT_EQ(FindEngineGemmCurve(Calibration(), "h100-sxm", Precision::fp4), nullptr);
}

// At a grid point the serving model's dense fp4 GEMM takes the table's time (when the time is above its bytes at the
// part's measured HBM rate, as every one of these is): 512 x 8,192 x 8,192 on B200, the Llama 3 70B output projection
// of a 512-sequence decode step, the record's 2,576 TFLOPS; the training model's library rate there is faster.
TEST(EngineGemm, ADenseFp4GemmTakesTheEnginesTimeAtItsShape) {
    const ComputeModel serving(Part("b200"), Precision::fp4, &Calibration(), Serving());
    const ComputeModel training(Part("b200"), Precision::fp4, &Calibration(), TrainingOptions{});
    const double measured = servetest::MeasuredGemmTflops("aiconf-trtllm1.3-b200-nvfp4", 512, 8192, 8192);
    ASSERT_GT(measured, 2500);
    const double t = Fp4GemmSeconds(serving, 512, 8192, 8192);
    EXPECT_NEAR(2 * 512.0 * 8192 * 8192 / t / 1e12, measured * serving.clock_scale(), 1e-6 * measured);
    EXPECT_LT(Fp4GemmSeconds(training, 512, 8192, 8192), 0.8 * t);
}

// The serving engine's fp4 Llama 3 70B decode step on one B200 spends longer in its GEMMs with the engine's curve,
// all of it in the dense GEMMs; attention is untouched; a bf16 step has no engine curve and does not move; an MoE's
// routed experts keep the library rate held to the MoE op.
TEST(EngineGemm, TheServingEngineRunsItsDenseFp4GemmsAtIt) {
    CalibrationTable without = Calibration();
    without.gemm.erase(
        std::remove_if(without.gemm.begin(), without.gemm.end(), [](const GemmCurve& g) { return !g.engine.empty(); }),
        without.gemm.end());
    const System& sys = servetest::System("dgx-b200-superpod");
    BatchShape b;
    b.decodes = b.sequences = b.logits = 384;
    b.decode_keys = 384 * 1024.0;
    ServingPrecision fp4;
    fp4.weights = fp4.compute = Precision::fp4;
    const ModelConfig llama = servetest::Model("llama3-70b");
    const IterationBreakdown a = IterationCost(llama, fp4, 1, sys, &Calibration(), 1024, 1).Breakdown(b);
    const IterationBreakdown d = IterationCost(llama, fp4, 1, sys, &without, 1024, 1).Breakdown(b);
    EXPECT_EQ(a.attention, d.attention);
    EXPECT_GT(a.linear, 1.2 * d.linear);
    ServingPrecision bf16;
    EXPECT_EQ(IterationCost(llama, bf16, 1, sys, &Calibration(), 1024, 1).Breakdown(b).linear,
              IterationCost(llama, bf16, 1, sys, &without, 1024, 1).Breakdown(b).linear);
    // Qwen3-30B-A3B: the experts' share of the step is the same with and without the engine's dense curve.
    const ModelConfig qwen = servetest::Model("qwen3-30b-a3b");
    const IterationCost with_q(qwen, fp4, 1, sys, &Calibration(), 1024, 1),
        without_q(qwen, fp4, 1, sys, &without, 1024, 1);
    const double moe_with = with_q.Breakdown(b).linear, moe_without = without_q.Breakdown(b).linear;
    EXPECT_GT(moe_with, moe_without);        // its attention projections and router run at the engine's rate
    EXPECT_LT(moe_with, 1.2 * moe_without);  // its experts, most of its GEMM time, do not
}

// "engine" names who measured the op; an empty one is refused, naming the field.
TEST(EngineGemm, AnEmptyEngineIsRefused) {
    nlohmann::json j = nlohmann::json::parse(sctest::ReadFile(servetest::kRoot + "/presets/calibration/measured.json"));
    for (nlohmann::json& g : j["gemm"])
        if (g.contains("engine")) g["engine"] = "";
    const std::string e = sctest::ErrorOf([&] { ParseCalibration(j.dump()); });
    EXPECT_NE(e.find(".engine"), std::string::npos) << e;
}

}  // namespace
