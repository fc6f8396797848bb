// MXFP4 weights (OCP Microscaling: 32 E2M1 weights and one E8M0 scale byte), as gpt-oss was released and is served:
// bytes by hand, the description's "mxfp4", and gpt-oss-120b fitting one 80 GB GPU as its model card says.
#include <gtest/gtest.h>

#include "inference/kv_capacity.h"
#include "inference/serving_parse.h"
#include "serve_test_util.h"
#include "test_util.h"

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

TEST(ServeMxfp4, AWeightIsHalfAByteAndAScaleByteEvery32) {
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(Mxfp4()), 0.5 + 1.0 / 32);  // 0.53125
    EXPECT_EQ(WeightFormatName(Mxfp4()), "mxfp4");
    // int4 in groups of 32 without zeros keeps AWQ's fp16 scale: 0.5 + 2/32.
    ServingPrecision g32;
    g32.int4 = Int4Weights{32, false};
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(g32), 0.5625);
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
}

// gpt-oss model card (OpenAI, 2025-08-05): with its MoE weights in MXFP4, "gpt-oss-120b ... run[s] within 80GB of
// memory". In bf16 its 117 billion parameters do not fit an 80 GB H100 at all; in MXFP4 they fit with room for a
// cache. The decoder layers shrink by (2 - 0.53125) against bf16's 2 - 1 for fp8; the 16-bit embedding and head
// do not.
TEST(ServeMxfp4, GptOss120bFitsOne80GbGpu) {
    const ModelConfig m = Model("gpt-oss-120b");
    ServingPrecision b16, f8;
    f8.weights = f8.compute = Precision::fp8;
    const double w16 = ServingWeightBytesPerRank(m, b16, 1), w8 = ServingWeightBytesPerRank(m, f8, 1);
    const double wmx = ServingWeightBytesPerRank(m, Mxfp4(), 1);
    EXPECT_NEAR((w16 - wmx) / (w16 - w8), 2 - 0.53125, 1e-9);
    EXPECT_GT(w16, 200e9);
    EXPECT_LT(wmx, 70e9);
    const Accelerator& h100 = System("dgx-h100-superpod").accelerator;
    EngineConfig e;  // vLLM's defaults: 0.9 of the memory
    EXPECT_NE(sctest::ErrorOf([&] { ComputeKvCapacity(m, b16, 1, h100, e); }), "");
    EXPECT_GT(ComputeKvCapacity(m, Mxfp4(), 1, h100, e).blocks, 1000);
}

}  // namespace
