// MXFP4 experts (OCP Microscaling: 32 E2M1 weights and one E8M0 scale byte), as gpt-oss was released and is served:
// bytes by hand, the description's "mxfp4", gpt-oss's checkpoint sizes and one 80 GB GPU as its model card gives
// them, the rest of the linear weights at 16 bits.
#include <gtest/gtest.h>

#include "inference/iteration_cost.h"
#include "inference/kv_capacity.h"
#include "inference/serving_parse.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "training/compute_model.h"

namespace {

using namespace sc;
using servetest::Model;
using servetest::System;

ServingPrecision Mxfp4() {
    ServingPrecision p;
    p.int4 = kMxfp4;
    return p;
}

std::string Described(const std::string& precision) {
    return R"({"model": "gpt-oss-120b", "system": "dgx-h100-superpod", "precision": )" + precision +
           R"(, "workload": {"requests": 1, "input": {"tokens": 100}, "output": {"tokens": 10}}})";
}

TEST(ServeMxfp4, AnExpertWeightIsHalfAByteAndAScaleByteEvery32) {
    EXPECT_DOUBLE_EQ(ExpertWeightBytesPerElement(Mxfp4()), 0.5 + 1.0 / 32);  // 0.53125
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(Mxfp4()), 2);                     // attention, router: bf16
    EXPECT_EQ(WeightFormatName(Mxfp4()), "mxfp4");
    // int4 in groups of 32 without zeros keeps AWQ's fp16 scale: 0.5 + 2/32.
    ServingPrecision g32;
    g32.int4 = Int4Weights{32, false};
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(g32), 0.5625);
    EXPECT_DOUBLE_EQ(ExpertWeightBytesPerElement(g32), 0.5625);  // int4 stores every linear weight so
    EXPECT_EQ(WeightFormatName(g32), "int4 g32, no zeros");
}

TEST(ServeMxfp4, TheDescriptionReadsIt) {
    ServingDescription d = ParseServingDescription(Described(R"({"weights": "mxfp4"})"));
    ASSERT_TRUE(d.config.precision.int4.has_value());
    EXPECT_TRUE(d.config.precision.int4->mxfp4());
    EXPECT_EQ(d.config.precision.compute, Precision::bf16);  // W4A16, as Hopper runs it
    d = ParseServingDescription(Described(R"({"weights": "mxfp4", "compute": "fp8"})"));
    EXPECT_EQ(d.config.precision.compute, Precision::fp8);  // W4A8
    EXPECT_EQ(sctest::ErrorOf([] { ParseServingDescription(Described(R"({"weights": "mxfp4", "group_size": 64})")); }),
              "precision.group_size: mxfp4 fixes its blocks (32 weights, one E8M0 scale, no zeros); drop the field or "
              "set precision.weights to \"int4\"");
    auto validated = [](const std::string& precision) {
        return sctest::ErrorOf([&] {
            ServingDescription x = ParseServingDescription(Described(precision));
            x.config.model = Model(x.model_id);
            ValidateServingConfig(x.config);
        });
    };
    EXPECT_EQ(validated(R"({"weights": "mxfp4", "compute": "fp4"})"),
              "precision.compute: mxfp4 weights are dequantized into the GEMM's math; got fp4, valid: bf16, fp16 "
              "(W4A16), fp8 (W4A8)");
    EXPECT_EQ(validated(R"({"weights": "mxfp4"})"), "");
    // A model without routed experts has nothing MXFP4 stores.
    EXPECT_EQ(
        sctest::ErrorOf([] {
            ServingDescription x = ParseServingDescription(
                R"({"model": "llama3-8b", "system": "dgx-h100-superpod", "precision": {"weights": "mxfp4"},
                          "workload": {"requests": 1, "input": {"tokens": 100}, "output": {"tokens": 10}}})");
            x.config.model = Model(x.model_id);
            ValidateServingConfig(x.config);
        }),
        "precision.weights: mxfp4 stores routed experts (gpt-oss's checkpoints, vLLM's Mxfp4Config) and Llama-3 8B "
        "has none; valid for it: int4 (4-bit groups with an fp16 scale), fp8, fp4, bf16");
}

// gpt-oss model card (OpenAI, 2025-08-05, Table 1): checkpoints of 60.8 GiB (gpt-oss-120b) and 12.8 GiB (20b), the
// MoE weights in MXFP4 and the rest in bf16, so that gpt-oss-120b "run[s] within 80GB of memory". The presets leave
// out the biases and attention sinks (0.04B parameters): within 1%. Only the experts shrink against bf16: by exactly
// their parameters (layers x experts x 3 x 2,880^2) times 2 - 0.53125. In bf16 the 120b does not fit an H100.
TEST(ServeMxfp4, GptOssCheckpointsAtTheirPublishedSizes) {
    const double gib = 1024.0 * 1024 * 1024;
    for (const auto& [id, layers, experts, published] :
         {std::tuple{"gpt-oss-120b", 36, 128, 60.8}, std::tuple{"gpt-oss-20b", 24, 32, 12.8}}) {
        const ModelConfig m = Model(id);
        const double w16 = ServingWeightBytesPerRank(m, ServingPrecision{}, 1);
        const double wmx = ServingWeightBytesPerRank(m, Mxfp4(), 1);
        EXPECT_NEAR(wmx / gib, published, 0.01 * published) << id;
        EXPECT_NEAR(w16 - wmx, layers * experts * 3.0 * 2880 * 2880 * (2 - 0.53125), 1e-6 * w16) << id;
    }
    const ModelConfig m = Model("gpt-oss-120b");
    const Accelerator& h100 = System("dgx-h100-superpod").accelerator;
    EngineConfig e;  // vLLM's defaults: 0.9 of the memory
    EXPECT_NE(sctest::ErrorOf([&] { ComputeKvCapacity(m, ServingPrecision{}, 1, h100, e); }), "");
    EXPECT_GT(ComputeKvCapacity(m, Mxfp4(), 1, h100, e).blocks, 1000);
}

// A decode step of one sequence reads the experts it routes to at MXFP4's bytes and the attention at bf16's: against
// all-bf16 weights it saves exactly the hit experts' bytes (4 of 128, whole on one rank) times 2 - 0.53125, where no
// measured MoE op holds the experts (the curves removed). With them, the MXFP4 experts run at the op measured with
// MXFP4 experts (W4A16 on H100, "weights": "mxfp4"), which at one token is slower than its bytes: the step takes
// longer than without, and the bf16 experts' step is held to the bf16 curves, not to those.
TEST(ServeMxfp4, ADecodeStepReadsOnlyTheExpertsAtMxfp4) {
    const ModelConfig m = Model("gpt-oss-120b");
    const sc::System& sys = System("dgx-h100-superpod");
    CalibrationTable without = servetest::Calibration();
    without.grouped_gemm.clear();
    IterationCost b16(m, ServingPrecision{}, 1, sys, &without, 1024, 64);
    IterationCost mx(m, Mxfp4(), 1, sys, &without, 1024, 64);
    const double bw = b16.compute_model().memory_bytes_per_s();
    const double hit_expert_weights = 36 * 4 * 3.0 * 2880 * 2880;
    EXPECT_NEAR(b16.DecodeSeconds(100) - mx.DecodeSeconds(100), hit_expert_weights * (2 - 0.53125) / bw,
                1e-6 * hit_expert_weights / bw);
    IterationCost mx_op(m, Mxfp4(), 1, sys, &servetest::Calibration(), 1024, 64);
    EXPECT_GT(mx_op.DecodeSeconds(100), mx.DecodeSeconds(100));
    ASSERT_FALSE(mx_op.compute_model().grouped_gemms().empty());
    for (const GroupedGemmCurve* g : mx_op.compute_model().grouped_gemms()) EXPECT_EQ(g->weights, "mxfp4");
    const IterationCost b16_op(m, ServingPrecision{}, 1, sys, &servetest::Calibration(), 1024, 64);
    for (const GroupedGemmCurve* g : b16_op.compute_model().grouped_gemms()) EXPECT_EQ(g->weights, "");
}

}  // namespace
