// The runtime's own memory on each GPU (inference/runtime_memory.h): the CUDA context and libraries as each KV
// policy counts them, the collective buffers of a GPU that communicates within its replica, a description's own
// figure in their place, and the KV capacity they leave set against vLLM's own memory profiles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "inference/kv_capacity.h"
#include "inference/runtime_memory.h"
#include "inference/serving_parse.h"
#include "serve_test_util.h"
#include "test_util.h"

namespace {

using namespace sc;
constexpr double kGiB = 1073741824.0;

TEST(ServeRuntimeMemory, ContextByPolicyAndBuffersWhenTheGpuCommunicates) {
    EngineConfig vllm, trt;
    trt.memory_policy = KvMemoryPolicy::free_fraction;
    EXPECT_DOUBLE_EQ(RuntimeMemoryBytes(vllm, PoolConfig{1, 1}), 0.25 * kGiB);
    EXPECT_DOUBLE_EQ(RuntimeMemoryBytes(trt, PoolConfig{1, 1}), 0.77 * kGiB);
    for (int tp : {2, 4, 8}) {
        EXPECT_DOUBLE_EQ(RuntimeMemoryBytes(vllm, PoolConfig{tp, 1}), (0.25 + 1.84) * kGiB);
        EXPECT_DOUBLE_EQ(RuntimeMemoryBytes(trt, PoolConfig{tp, 1}), (0.77 + 1.84) * kGiB);
    }
    // Pipeline stages alone exchange activations point to point: no all-reduce workspace.
    EXPECT_DOUBLE_EQ(RuntimeMemoryBytes(vllm, PoolConfig{1, 1, 4}), 0.25 * kGiB);
    PoolConfig dp{8, 1};
    dp.ep = 8;
    dp.attention_dp = true;  // each GPU at tp 1 for its cache, in an all-to-all group of 8
    EXPECT_DOUBLE_EQ(RuntimeMemoryBytes(vllm, dp), (0.25 + 1.84) * kGiB);
    vllm.runtime_memory_gib = 3.5;  // a description's own figure replaces both terms
    EXPECT_DOUBLE_EQ(RuntimeMemoryBytes(vllm, PoolConfig{8, 1}), 3.5 * kGiB);
    vllm.runtime_memory_gib = 0.0;
    EXPECT_DOUBLE_EQ(RuntimeMemoryBytes(vllm, PoolConfig{8, 1}), 0);
}

std::string Description(const std::string& engine_extra) {
    return R"({"model":"llama3-8b","system":"dgx-h100-superpod","pool":{"tp":2},
               "engine":{"kv_memory":"total_fraction")" +
           engine_extra + R"(},"workload":{"requests":10,"input":{"distribution":"fixed","tokens":100},
               "output":{"distribution":"fixed","tokens":10}}})";
}

// The description may state the engine's figure; the KV cache is what is left after it, by the policy's rule.
TEST(ServeRuntimeMemory, ADescriptionStatesItsOwnFigure) {
    const ServingDescription d = ParseServingDescription(Description(R"(,"runtime_memory_gib":3)"));
    ASSERT_TRUE(d.config.engine.runtime_memory_gib.has_value());
    EXPECT_EQ(*d.config.engine.runtime_memory_gib, 3);
    EXPECT_FALSE(ParseServingDescription(Description("")).config.engine.runtime_memory_gib.has_value());
    const ModelConfig m = servetest::Model("llama3-8b");
    const Accelerator& acc = servetest::System("dgx-h100-superpod").accelerator;
    const KvCapacity k = ComputeKvCapacity(m, d.config.precision, 2, acc, d.config.engine);
    EXPECT_DOUBLE_EQ(k.runtime_bytes, 3 * kGiB);
    EXPECT_NEAR(k.kv_bytes, 0.9 * k.memory_bytes - k.weight_bytes - k.workspace_bytes - 3 * kGiB, 1);
    EngineConfig none = d.config.engine;
    none.runtime_memory_gib = 0.0;
    const KvCapacity bare = ComputeKvCapacity(m, d.config.precision, 2, acc, none);
    EXPECT_NEAR(bare.kv_bytes - k.kv_bytes, 3 * kGiB, 1);
}

TEST(ServeRuntimeMemory, BadFiguresAreRefusedNamingTheField) {
    EXPECT_NE(sctest::ErrorOf([] {
                  ParseServingDescription(Description(R"(,"runtime_memory_gib":-1)"));
              }).find("engine.runtime_memory_gib"),
              std::string::npos);
    EXPECT_NE(sctest::ErrorOf([] {
                  ParseServingDescription(Description(R"(,"runtime_memory_gib":"2")"));
              }).find("engine.runtime_memory_gib"),
              std::string::npos);
    ServingConfig c = servetest::Base("llama3-8b", 1, 100, 10, 10);
    c.engine.runtime_memory_gib = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }).rfind("engine.runtime_memory_gib: ", 0), 0u);
    // More than the device has left: the KV cache's own error, with the runtime's share in its numbers.
    c.engine.runtime_memory_gib = 70.0;
    const std::string e = sctest::ErrorOf([&] {
        ComputeKvCapacity(c.model, c.precision, 1, servetest::System("dgx-h100-superpod").accelerator, c.engine);
    });
    EXPECT_NE(e.find("engine.kv_memory_fraction: no memory left for the KV cache"), std::string::npos) << e;
    EXPECT_NE(e.find("runtime 70.00 GiB"), std::string::npos) << e;
}

// vLLM 0.19 prints its cache after profiling (llm-d-incubation/llm-d-planner@d3121e0
// accuracy/results/v0.19.0/logs: H100 80 GB, gpu_memory_utilization 0.95, max_num_batched_tokens 8192,
// max_num_seqs 1024, bf16 cache). The memory model's cache for the same engines, a measurement printed here: its
// weights and workspace are its own, the runtime term is the logs' median non-torch memory, so the rows test the
// rest of the model (weights, workspace) against a profile of the engine that sets it.
TEST(ServeRuntimeMemory, KvCacheBesideVllmsOwnProfiles) {
    struct Logged {
        const char* model;
        bool fp8;
        int tp;
        long long tokens;  // "GPU KV cache size: N tokens"
    };
    const Logged logs[] = {{"llama3-8b", false, 1, 476016},
                           {"llama3-8b", false, 2, 1044688},
                           {"llama3-8b", false, 4, 2209792},
                           {"llama3-70b", true, 2, 244304},
                           {"llama3-70b", true, 4, 708992}};
    const Accelerator& acc = servetest::System("dgx-h100-superpod").accelerator;
    for (const Logged& l : logs) {
        ModelConfig m = servetest::Model(l.model);
        ServingPrecision p;
        if (l.fp8) p.weights = p.compute = Precision::fp8;
        EngineConfig e;
        e.kv_memory_fraction = 0.95;
        e.max_tokens = 8192;
        e.max_seqs = 1024;
        const KvCapacity k = ComputeKvCapacity(m, p, l.tp, acc, e);
        const double err = static_cast<double>(k.tokens()) / l.tokens - 1;
        std::printf("%s tp%d: %lld tokens against vLLM's %lld (%+.1f%%), runtime %.2f GiB\n", l.model, l.tp, k.tokens(),
                    l.tokens, 100 * err, k.runtime_bytes / kGiB);
        EXPECT_LT(std::fabs(err), 0.05) << l.model << " tp" << l.tp;
    }
}

}  // namespace
