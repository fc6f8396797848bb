// int4 weights (W4A16 / W4A8, as AWQ and GPTQ checkpoints are served): bytes per weight by hand, the weights and
// the KV cache of Llama 3 70B on one H100 by hand, a memory-bound decode step faster by exactly the weight bytes
// it no longer reads, a compute-bound prefill unchanged, and every bad field named.
#include <gtest/gtest.h>

#include "config/error.h"
#include "inference/iteration_cost.h"
#include "inference/kv_capacity.h"
#include "inference/serving_parse.h"
#include "serve_test_util.h"
#include "training/compute_model.h"

namespace {

using namespace sc;
using servetest::Calibration;
using servetest::Model;
using servetest::System;

ServingPrecision Fp16() {
    ServingPrecision p;
    p.weights = p.compute = p.kv_cache = p.activations = p.embeddings = Precision::fp16;
    return p;
}

ServingPrecision Int4(int group, bool zeros) {
    ServingPrecision p = Fp16();
    p.int4 = Int4Weights{group, zeros};
    return p;
}

constexpr double kLayerLinear = servetest::kLlama70bLayerLinear;

TEST(ServeInt4, BytesPerWeightAreHalfAByteAndTheGroupsScale) {
    // An fp16 scale per group of g (2/g bytes per weight) and a 4-bit zero point (0.5/g).
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(Int4(128, true)), 0.5 + 2.0 / 128 + 0.5 / 128);  // 0.51953125
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(Int4(128, false)), 0.5 + 2.0 / 128);
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(Int4(32, true)), 0.5 + 2.5 / 32);
    EXPECT_DOUBLE_EQ(WeightBytesPerElement(Fp16()), 2);
    EXPECT_EQ(WeightFormatName(Int4(128, true)), "int4 g128");
    EXPECT_EQ(WeightFormatName(Int4(64, false)), "int4 g64, no zeros");
}

// Weights per rank: the decoder layers at int4 bytes, the embedding and the untied LM head at 16 bits (AWQ and
// GPTQ leave them unquantized), the final norm at 16 bits. The layers' two norm vectors (2 x 8192, replicated
// on every rank) are counted with their layer at its format, as the training graph groups them: real
// checkpoints keep them at 16 bits, 1.3 MB more in 38 GB, which the memory model does not separate.
TEST(ServeInt4, Llama70bWeightsOnOneGpuByHand) {
    const ModelConfig m = Model("llama3-70b");
    const double b = WeightBytesPerElement(Int4(128, true));
    const double emb = 128256.0 * 8192 * 2;  // embedding and LM head, fp16
    for (int tp : {1, 2, 8}) {
        const double hand = 80 * (kLayerLinear / tp + 2 * 8192) * b + 2 * emb / tp + 8192 * 2;
        EXPECT_NEAR(ServingWeightBytesPerRank(m, Int4(128, true), tp), hand, 1e-12 * hand) << "tp=" << tp;
        // Against fp16: the decoder layers shrink by exactly 0.5195.../2, the embedding and head do not.
        const double fp16 = ServingWeightBytesPerRank(m, Fp16(), tp);
        const double layers16 = fp16 - 2 * emb / tp;
        EXPECT_NEAR(ServingWeightBytesPerRank(m, Int4(128, true), tp), layers16 * b / 2 + 2 * emb / tp, 1e-6 * fp16);
    }
}

// The KV cache follows: in fp16 the 70B model does not fit one 80 GB H100 (vLLM's 0.9 of the memory is less
// than its 141 GB of weights); in int4 the cache gets what is left after ~38 GB of weights and the workspace.
TEST(ServeInt4, KvCapacityOfLlama70bOnOneH100) {
    const ModelConfig m = Model("llama3-70b");
    const Accelerator& acc = System("dgx-h100-superpod").accelerator;
    EngineConfig e;  // vLLM defaults: total_fraction 0.9, 16-token blocks, 8192 tokens, 256 sequences
    EXPECT_NE(sctest::ErrorOf([&] { ComputeKvCapacity(m, Fp16(), 1, acc, e); }).find("engine.kv_memory_fraction"),
              std::string::npos);
    const ServingPrecision p = Int4(128, true);
    const KvCapacity k = ComputeKvCapacity(m, p, 1, acc, e);
    const double weights = ServingWeightBytesPerRank(m, p, 1);
    const double workspace = ActivationWorkspaceBytes(m, p, 1, 8192, 256);
    const double block = 16.0 * 80 * 2 * 8 * 128 * 2;  // 16 tokens x 80 layers x K and V x 8 heads x 128 x fp16
    EXPECT_DOUBLE_EQ(k.weight_bytes, weights);
    const double runtime = 0.25 * 1073741824.0;  // one GPU: vLLM's non-torch memory (inference/runtime_memory.h)
    EXPECT_EQ(k.blocks, static_cast<long long>((0.9 * acc.MemoryBytes() - weights - workspace - runtime) / block));
    EXPECT_GT(k.blocks, 1000);  // tens of thousands of tokens: a servable deployment
}

// A decode step is memory-bound: every GEMM pays alpha + its bytes at the achieved bandwidth, so int4 saves
// exactly the weight bytes it no longer reads, nothing else moves (attention, norms, all-reduces, LM head).
TEST(ServeInt4, ADecodeStepSavesExactlyTheWeightBytesNotRead) {
    const ModelConfig m = Model("llama3-70b");
    const sc::System& sys = System("dgx-h100-superpod");
    const double bw =
        ComputeModel(sys.accelerator, Precision::fp16, &Calibration(), TrainingOptions{}).memory_bytes_per_s();
    const double saved_per_weight = 2 - WeightBytesPerElement(Int4(128, true));
    for (int tp : {1, 8}) {
        IterationCost fp16(m, Fp16(), tp, sys, &Calibration(), 1024, 64);
        IterationCost int4(m, Int4(128, true), tp, sys, &Calibration(), 1024, 64);
        for (int context : {100, 4000}) {
            const double expected = 80 * kLayerLinear / tp * saved_per_weight / bw;
            EXPECT_NEAR(fp16.DecodeSeconds(context) - int4.DecodeSeconds(context), expected, 1e-9 * expected)
                << "tp=" << tp << " context=" << context;
        }
    }
    // Without a kernel floor (A100 with its weight-read floor left out) the GEMMs' time is their bytes at the
    // bandwidth, so one token's QKV GEMM drops by the ratio of its bytes: input row + weights + output row.
    const sc::System& a100 = System("dgx-a100-superpod");
    static const sc::CalibrationTable no_floor = [] {
        sc::CalibrationTable c = Calibration();
        c.weight_read_floor.clear();
        return c;
    }();
    const double n = (64 / 8.0 + 2) * 128, h = 8192;
    auto bytes = [&](double wb) { return h * 2 + h * n * wb + n * 2; };
    const double ratio = bytes(WeightBytesPerElement(Int4(128, true))) / bytes(2);
    const double q16 = IterationCost(m, Fp16(), 8, a100, &no_floor, 1024, 8).LayerLinear(1).qkv;
    const double q4 = IterationCost(m, Int4(128, true), 8, a100, &no_floor, 1024, 8).LayerLinear(1).qkv;
    EXPECT_NEAR(q4 / q16, ratio, 1e-12);
    EXPECT_LT(ratio, 0.27);
}

// A prefill of 4096 tokens is compute-bound in every GEMM: the math runs at 16 bits either way (W4A16 kernels
// dequantize into it), so the time and the FLOPs are those of fp16 weights. W4A8 prefills as fp8 weights do at the
// GEMM library's fp8 curve; fp8 weights served read the engine's own measured fp8 Linear where the part has one, a
// kernel W4A8's mixed-input GEMM is not, so the comparison is made without those curves.
TEST(ServeInt4, APrefillComputesAsSixteenBitWeights) {
    const ModelConfig m = Model("llama3-70b");
    const sc::System& sys = System("dgx-h100-superpod");
    IterationCost fp16(m, Fp16(), 8, sys, &Calibration(), 4096, 4096);
    IterationCost int4(m, Int4(128, true), 8, sys, &Calibration(), 4096, 4096);
    EXPECT_DOUBLE_EQ(int4.PrefillSeconds(4096), fp16.PrefillSeconds(4096));
    BatchShape b;
    b.prefill_tokens = b.prefill_keys = 4096;
    b.prefill_pairs = 4096 * 4097 / 2.0;
    EXPECT_DOUBLE_EQ(int4.Work(b).linear_flops, fp16.Work(b).linear_flops);
    ServingPrecision fp8 = Fp16(), w4a8 = Int4(128, true);
    fp8.weights = fp8.compute = w4a8.compute = Precision::fp8;
    w4a8.weights = Precision::fp8;
    const CalibrationTable& library = servetest::LibraryCalibration();
    EXPECT_DOUBLE_EQ(IterationCost(m, w4a8, 8, sys, &library, 4096, 4096).PrefillSeconds(4096),
                     IterationCost(m, fp8, 8, sys, &library, 4096, 4096).PrefillSeconds(4096));
    EXPECT_NE(IterationCost(m, fp8, 8, sys, &library, 4096, 4096).PrefillSeconds(4096),
              IterationCost(m, fp8, 8, sys, &Calibration(), 4096, 4096).PrefillSeconds(4096));
    EXPECT_LT(IterationCost(m, w4a8, 8, sys, &Calibration(), 4096, 4096).DecodeSeconds(1000),
              IterationCost(m, fp8, 8, sys, &Calibration(), 4096, 4096).DecodeSeconds(1000));
}

std::string Described(const std::string& precision) {
    return R"({"model": "llama3-8b", "system": "dgx-h100-superpod", "precision": )" + precision +
           R"(, "workload": {"requests": 1, "input": {"tokens": 100}, "output": {"tokens": 10}}})";
}

TEST(ServeInt4, TheDescriptionReadsInt4AndItsGroups) {
    ServingDescription d = ParseServingDescription(Described(R"({"weights": "int4", "activations": "fp16"})"));
    ASSERT_TRUE(d.config.precision.int4.has_value());
    EXPECT_EQ(d.config.precision.int4->group_size, 128);  // AWQ's and GPTQ's common setting
    EXPECT_TRUE(d.config.precision.int4->zero_points);
    EXPECT_EQ(d.config.precision.compute, Precision::fp16);  // W4A16: the activations' precision
    d = ParseServingDescription(
        Described(R"({"weights": "int4", "group_size": 64, "zero_points": false, "compute": "fp8"})"));
    EXPECT_EQ(d.config.precision.int4->group_size, 64);
    EXPECT_FALSE(d.config.precision.int4->zero_points);
    EXPECT_EQ(d.config.precision.compute, Precision::fp8);  // W4A8
    EXPECT_FALSE(ParseServingDescription(Described(R"({"weights": "fp8"})")).config.precision.int4.has_value());
}

TEST(ServeInt4, BadInt4FieldsAreNamed) {
    auto error = [](const std::string& precision, int tp = 1) {
        return sctest::ErrorOf([&] {
            ServingDescription d = ParseServingDescription(Described(precision));
            d.config.model = Model(d.model_id);
            d.config.pool.tp = tp;
            ValidateServingConfig(d.config);
        });
    };
    EXPECT_EQ(error(R"({"weights": "bf16", "group_size": 128})"),
              "precision.group_size: only int4 weights are stored in groups; weights are bf16 (set "
              "precision.weights to \"int4\" or drop the field)");
    EXPECT_EQ(error(R"({"weights": "int4", "compute": "fp32"})"),
              "precision.compute: int4 weights are dequantized into the GEMM's math; got fp32, valid: bf16, fp16 "
              "(W4A16), fp8 (W4A8)");
    EXPECT_EQ(error(R"({"weights": "int4", "group_size": 96})"),
              "precision.group_size: group_size=96 does not divide hidden = 4096 at pool.tp=1 (a group may not "
              "straddle a GEMM's input shard); valid: a divisor of every GEMM input per rank, e.g. 32, 64, 128");
    // Llama 3 8B's FFN (14336) on 8 ranks is 1792 per rank: 512 does not divide it (it divides 4096 and 4 x 128).
    EXPECT_EQ(error(R"({"weights": "int4", "group_size": 512})", 8),
              "precision.group_size: group_size=512 does not divide ffn/tp = 1792 at pool.tp=8 (a group may not "
              "straddle a GEMM's input shard); valid: a divisor of every GEMM input per rank, e.g. 32, 64, 128");
    EXPECT_NE(error(R"({"weights": "int5"})").find("precision.weights"), std::string::npos);
    EXPECT_NE(error(R"({"weights": "int4", "group_size": 0})").find("precision.group_size"), std::string::npos);
}

}  // namespace
