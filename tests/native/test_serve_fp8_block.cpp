// Block-scaled FP8 (precision.fp8_scaling "block": DeepSeek-V3's and -R1's FP8 checkpoints, one scale a 128x128 block
// of weights and a 1x128 tile of activations): the serving model's dense GEMMs run at the engine's block-scaled GEMM
// and its routed experts at most at the engine's block-scaled MoE op (presets/calibration/measured.json, "scaling":
// "block"), both measured by aiconfigurator on TensorRT-LLM 1.3.0rc20. docs/serving.md, "Block-scaled FP8".
//   ./build/stagecraft_tests --gtest_filter='Fp8Block.*'
#include <gtest/gtest.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "config/calibration.h"
#include "config/error.h"
#include "inference/iteration_cost.h"
#include "inference/serving_config.h"
#include "inference/serving_parse.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "training/compute_model.h"

namespace {

using namespace sc;
using servetest::Calibration;
using servetest::Part;

TrainingOptions Serving(bool block) {
    TrainingOptions opt;
    opt.engine_moe_op = opt.engine_gemms = true;
    opt.engine_fp8_block = block;
    return opt;
}

// A block-scaled engine reads the block-scaled curves and nothing else does: per-tensor fp8 serving reads the engine's
// per-tensor Linear and MoE ops, training neither (it keeps the GEMM library's curve).
TEST(Fp8Block, OnlyABlockScaledEngineReadsTheBlockCurves) {
    for (const std::string part : {"h100-sxm", "h200", "b200", "gb200", "b300", "gb300"}) {
        SCOPED_TRACE(part);
        const ComputeModel block(Part(part), Precision::fp8, &Calibration(), Serving(true));
        const ComputeModel tensor(Part(part), Precision::fp8, &Calibration(), Serving(false));
        const ComputeModel training(Part(part), Precision::fp8, &Calibration(), TrainingOptions{});
        ASSERT_NE(block.engine_gemm_curve(), nullptr);
        EXPECT_EQ(block.engine_gemm_curve()->scaling, "block");
        EXPECT_EQ(block.engine_gemm_curve()->engine, "tensorrt-llm");
        ASSERT_NE(tensor.engine_gemm_curve(), nullptr);
        EXPECT_EQ(tensor.engine_gemm_curve()->scaling, "");
        EXPECT_EQ(tensor.engine_gemm_curve()->engine, "tensorrt-llm");
        EXPECT_EQ(training.engine_gemm_curve(), nullptr);
        ASSERT_EQ(block.grouped_gemms().size(), 5u);
        for (const GroupedGemmCurve* g : block.grouped_gemms()) EXPECT_EQ(g->scaling, "block");
        for (const GroupedGemmCurve* g : tensor.grouped_gemms()) EXPECT_EQ(g->scaling, "");
        EXPECT_EQ(block.gemm_curve(), tensor.gemm_curve());  // the library's, unchanged
    }
    // A part with no block-scaled measurement keeps the per-tensor curves (the rate sources name them).
    const ComputeModel mi300x(Part("mi300x"), Precision::fp8, &Calibration(), Serving(true));
    EXPECT_EQ(mi300x.engine_gemm_curve(), nullptr);
}

// At a grid point the dense GEMM takes the table's time: 256 x 2,048 x 8,192 on H200, measured with its input
// quantize, each scaling at its own table (1x128 tiles and 128x128 blocks; one scale a tensor).
TEST(Fp8Block, ADenseGemmTakesTheMeasuredTimeOfItsScaling) {
    const double m = 256, n = 2048, k = 8192, flops = 2 * m * n * k, bytes = m * k + k * n + 2 * m * n;
    auto seconds = [&](const ComputeModel& cm) {
        return cm.Seconds(OpKind::matmul, flops, bytes, true, 1, false, false, GemmDims{m, n, k});
    };
    double last = 0;
    for (const bool block : {true, false}) {
        SCOPED_TRACE(block ? "block" : "tensor");
        const std::string series = block ? "aiconf-trtllm1.3-h200-fp8-block" : "aiconf-trtllm1.3-h200-fp8";
        const double measured = servetest::MeasuredGemmTflops(series, m, n, k);
        ASSERT_GT(measured, 0);
        const ComputeModel cm(Part("h200"), Precision::fp8, &Calibration(), Serving(block));
        ASSERT_GT(flops / (measured * 1e12), bytes / cm.memory_bytes_per_s());  // above its bytes: the table's time
        EXPECT_NEAR(flops / seconds(cm) / 1e12, measured * cm.clock_scale(), 1e-6 * measured);
        EXPECT_NE(seconds(cm), last);
        last = seconds(cm);
    }
}

// A one-token GEMM takes the op's measured time too, at well under 1% of peak: 1 x 8,192 x 8,192 per tensor on H100,
// longer than its weights take at the part's STREAM rate.
TEST(Fp8Block, AOneTokenGemmTakesTheMeasuredTime) {
    const double m = 1, n = 8192, k = 8192, flops = 2 * m * n * k, bytes = m * k + k * n + 2 * m * n;
    const double measured = servetest::MeasuredGemmTflops("aiconf-trtllm1.3-h100-fp8", m, n, k);
    ASSERT_GT(measured, 0);
    const ComputeModel cm(Part("h100-sxm"), Precision::fp8, &Calibration(), Serving(false));
    ASSERT_LT(measured * 1e12 / (cm.peak_flops() * cm.clock_scale()), 0.01);
    const double seconds = cm.Seconds(OpKind::matmul, flops, bytes, true, 1, false, false, GemmDims{m, n, k});
    EXPECT_GT(seconds, 1.2 * bytes / cm.memory_bytes_per_s());
    EXPECT_NEAR(flops / seconds / 1e12, measured * cm.clock_scale(), 1e-6 * measured);
}

// A DeepSeek-V3 step on eight H200s with the experts over EP8 at a full batch: the block-scaled MoE op is the
// slower one measured (from 512 tokens the table's block-scaled op takes 1.25-1.9x the per-tensor one at the same
// shape), so the block-scaled description is slower; its weights carry the blocks' scales (4 bytes a 16,384).
TEST(Fp8Block, ADeepSeekStepIsSlowerBlockScaled) {
    ServingDescription d = ParseServingDescription(
        sctest::ReadFile(servetest::kRoot + "/presets/inference/deepseek-v3-h200x8-fp8-dp-attention.json"));
    ASSERT_EQ(d.config.precision.fp8_scaling, Fp8Scaling::block);
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(d.config.precision), 1 + 4.0 / (128 * 128));
    EXPECT_EQ(WeightFormatName(d.config.precision), "fp8 (128x128 blocks)");
    ServingPrecision tensor = d.config.precision;
    tensor.fp8_scaling = Fp8Scaling::tensor;
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(tensor), 1);
    const sc::System& sys = servetest::System(d.system_id);
    d.config.model = servetest::Model(d.model_id);
    const IterationCost block(d.config.model, d.config.precision, d.config.pool, sys, &Calibration(), 4096, 1024);
    const IterationCost per_tensor(d.config.model, tensor, d.config.pool, sys, &Calibration(), 4096, 1024);
    BatchShape step;
    for (int i = 0; i < 2048; ++i) step.AddDecode(2048, 0);
    const double slower = block.Breakdown(step).linear / per_tensor.Breakdown(step).linear;
    std::printf("2,048 decodes on DEP8: GEMMs %.3fx block-scaled\n", slower);
    EXPECT_GT(slower, 1.05);
}

// Strict errors: a scaling only fp8 weights and GEMMs have; a value named with the valid ones; a curve's scaling
// only "block", and only on fp8.
TEST(Fp8Block, BadScalingIsRefusedByName) {
    const std::string base = sctest::ReadFile(servetest::kRoot + "/presets/inference/deepseek-v3-h200x8-fp8-mtp.json");
    nlohmann::json j = nlohmann::json::parse(base);
    j["precision"]["fp8_scaling"] = "blocks";
    const std::string text = j.dump();
    EXPECT_EQ(sctest::FieldOf([&] { ParseServingDescription(text); }), "precision.fp8_scaling");
    j["precision"]["fp8_scaling"] = "block";
    j["precision"]["weights"] = "bf16";
    j["precision"].erase("compute");
    ServingDescription d = ParseServingDescription(j.dump());
    d.config.model = servetest::Model(d.model_id);
    const std::string e = sctest::ErrorOf([&] { ValidateServingConfig(d.config); });
    EXPECT_EQ(e.rfind("precision.fp8_scaling:", 0), 0u) << e;
    EXPECT_NE(e.find("weights are bf16"), std::string::npos) << e;
    EXPECT_NE(servetest::CalibrationErrorWith("grouped_gemm", "\"scaling\": \"block\"", "\"scaling\": \"tile\"")
                  .find("scaling: \"tile\" is not a scaling a curve can state; valid: \"block\""),
              std::string::npos);
    EXPECT_NE(servetest::CalibrationErrorWith("gemm", "\"dtype\": \"fp8\",\n      \"engine\"",
                                              "\"dtype\": \"bf16\",\n      \"engine\"")
                  .find("block scaling is an fp8 format; the curve's dtype is bf16"),
              std::string::npos);
}

}  // namespace
