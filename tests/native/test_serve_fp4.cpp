// fp4 serving is NVFP4: 4-bit values and one E4M3 scale per 16 (0.5 + 1/16 bytes an element) wherever an fp4 tensor
// is stored: the decoder-layer weights (memory and every GEMM's weight read), fp4 GEMM inputs and an fp4 KV cache.
// By hand against fp8, whose one byte has no per-block scale.
#include <gtest/gtest.h>

#include "inference/iteration_cost.h"
#include "inference/kv_capacity.h"
#include "serve_test_util.h"
#include "training/compute_model.h"

namespace {

using namespace sc;
using servetest::Calibration;
using servetest::Model;
using servetest::System;

ServingPrecision Weights(Precision w) {
    ServingPrecision p;
    p.weights = p.compute = w;
    return p;
}

constexpr double kLayerLinear = servetest::kLlama70bLayerLinear;

TEST(ServeFp4, AnFp4ElementIsHalfAByteAndItsBlockScale) {
    EXPECT_DOUBLE_EQ(StoredBytes(Precision::fp4), 0.5625);  // 16 x 4 bits + one 8-bit scale, over 16
    EXPECT_DOUBLE_EQ(StoredBytes(Precision::fp8), 1);
    EXPECT_DOUBLE_EQ(StoredBytes(Precision::bf16), 2);
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(Weights(Precision::fp4)), 0.5625);
}

// Against bf16 and fp8 weights the decoder layers shrink by their bytes per element; the embedding and the LM head
// (16 bits in every ModelOpt checkpoint) do not: (fp8 - fp4) / (bf16 - fp8) = (1 - 0.5625) / (2 - 1).
TEST(ServeFp4, Llama70bWeightsPerRank) {
    const ModelConfig m = Model("llama3-70b");
    for (int tp : {1, 8}) {
        const double b16 = ServingWeightBytesPerRank(m, Weights(Precision::bf16), tp);
        const double b8 = ServingWeightBytesPerRank(m, Weights(Precision::fp8), tp);
        const double b4 = ServingWeightBytesPerRank(m, Weights(Precision::fp4), tp);
        EXPECT_NEAR((b8 - b4) / (b16 - b8), 0.4375, 1e-12) << "tp=" << tp;
        // The layers, by hand, with their two norm vectors counted at their layer's format (as for int4).
        EXPECT_NEAR(b16 - b8, 80 * (kLayerLinear / tp + 2 * 8192), 1e-6 * b16) << "tp=" << tp;
    }
}

// An fp4 KV cache holds K and V at 0.5625 bytes: 0.5625 of the fp8 cache's bytes a token, so 1/0.5625 the tokens
// in the same memory (to a block).
TEST(ServeFp4, AnFp4CacheHoldsItsBlockScales) {
    const ModelConfig m = Model("llama3-70b");
    const Accelerator& acc = System("dgx-b200-superpod").accelerator;
    ServingPrecision p8 = Weights(Precision::fp4), p4 = p8;
    p8.kv_cache = Precision::fp8;
    p4.kv_cache = Precision::fp4;
    EngineConfig e;
    const KvCapacity k8 = ComputeKvCapacity(m, p8, 8, acc, e), k4 = ComputeKvCapacity(m, p4, 8, acc, e);
    EXPECT_DOUBLE_EQ(k8.kv_bytes_per_token, 80 * 2 * 1 * 128 * 1.0);
    EXPECT_DOUBLE_EQ(k4.kv_bytes_per_token, 80 * 2 * 1 * 128 * 0.5625);
    EXPECT_EQ(k4.kv_bytes, k8.kv_bytes);
    EXPECT_NEAR(static_cast<double>(k4.blocks), k8.blocks / 0.5625, 1.0);
    // The serving model reads the same bytes a decode call (IterationCost's KV bytes a token).
    const sc::System& sys = System("dgx-b200-superpod");
    EXPECT_DOUBLE_EQ(IterationCost(m, p4, 8, sys, &Calibration(), 1024, 64).KvBytesPerToken(), k4.kv_bytes_per_token);
}

// A memory-bound decode step reads each weight once: fp4 saves exactly 1 - 0.5625 bytes a weight against fp8, at
// the part's measured streaming rate; nothing else moves. The closed form is the byte model's, so the engine's own
// ops are left out: B200's fp8 and fp4 Linear were timed at one token too, and take their measured times
// (Fp8Block.AOneTokenGemmTakesTheMeasuredTime).
TEST(ServeFp4, ADecodeStepSavesExactlyTheWeightBytesNotRead) {
    const ModelConfig m = Model("llama3-70b");
    const sc::System& sys = System("dgx-b200-superpod");
    const CalibrationTable& library = servetest::LibraryCalibration();
    const double bw = ComputeModel(sys.accelerator, Precision::fp8, &library, TrainingOptions{}).memory_bytes_per_s();
    for (int tp : {1, 8}) {
        IterationCost fp8(m, Weights(Precision::fp8), tp, sys, &library, 1024, 64);
        IterationCost fp4(m, Weights(Precision::fp4), tp, sys, &library, 1024, 64);
        // One token: the weight bytes and, at fp4 GEMM inputs, one row of inputs a GEMM at 0.5625 for 1 byte.
        const double weights = 80 * kLayerLinear / tp * (1 - 0.5625);
        const double inputs = 80 * (2 * 8192 + 64.0 / tp * 128 + 28672.0 / tp) * (1 - 0.5625);
        EXPECT_NEAR(fp8.DecodeSeconds(100) - fp4.DecodeSeconds(100), (weights + inputs) / bw, 1e-6 * weights / bw)
            << "tp=" << tp;
    }
}

}  // namespace
