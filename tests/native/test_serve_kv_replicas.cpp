// Serving with more TP ranks than KV heads (Qwen3 on 8 GPUs): each rank holds a copy of one KV head's projections
// and cache, as vLLM's QKVParallelLinear replicates them; a tp that neither divides nor is a multiple of the KV
// heads is refused, naming both.
#include <gtest/gtest.h>

#include <string>

#include "config/error.h"
#include "inference/engine.h"
#include "inference/kv_capacity.h"
#include "serve_test_util.h"

namespace {

using namespace servetest;

TEST(ServeKvReplicas, RanksBeyondTheKvHeadsHoldACopyOfOne) {
    const sc::ModelConfig qwen = Model("qwen3-30b-a3b");  // 4 KV heads of 128
    ASSERT_EQ(qwen.kv_heads, 4);
    // One head's K and V per token and layer on each of 8 ranks, as on each of 4.
    EXPECT_EQ(sc::KvElementsPerTokenLayer(qwen, 8), 2.0 * 128);
    EXPECT_EQ(sc::KvElementsPerTokenLayer(qwen, 4), 2.0 * 128);
    EXPECT_EQ(sc::KvElementsPerTokenLayer(qwen, 2), 2.0 * 2 * 128);
    // The weights a rank holds are those of the same model with 8 KV heads split 8 ways: one head's projections.
    sc::ModelConfig eight = qwen;
    eight.kv_heads = 8;
    sc::ServingPrecision prec;
    EXPECT_EQ(sc::StageWeightBytesPerRank(qwen, prec, 8, 1), sc::StageWeightBytesPerRank(eight, prec, 8, 1));
    // ... which is more than an even split of the 4 heads would give: a copy of 2 x hidden x head_dim a layer.
    const double split = sc::StageWeightBytesPerRank(qwen, prec, 4, 1)[0] / 2;  // an even share of the TP4 rank
    const double copies = (2.0 * 2048 * 128 - 2.0 * 2048 * 128 / 2) * 48 * 2;   // kv heads: 1 a rank, not 1/2
    EXPECT_GT(sc::StageWeightBytesPerRank(qwen, prec, 8, 1)[0], split + 0.99 * copies);
}

TEST(ServeKvReplicas, ATpThatNeitherDividesNorMultipliesIsRefused) {
    sc::ServingConfig c = Base("llama3-8b", 4, 128, 16, 8);
    c.model.heads = 24, c.model.kv_heads = 6, c.model.head_dim = 128;  // tp 4: neither a divisor nor a multiple of 6
    try {
        sc::ValidateServingConfig(c);
        FAIL() << "accepted tp=4 on 6 KV heads";
    } catch (const sc::Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("pool.tp"), std::string::npos) << what;
        EXPECT_NE(what.find("6 key/value heads"), std::string::npos) << what;
    }
    c.pool.tp = 2;  // divides 6
    EXPECT_NO_THROW(sc::ValidateServingConfig(c));
}

TEST(ServeKvReplicas, Qwen3OnEightGpusServes) {
    sc::ServingConfig c = Base("qwen3-30b-a3b", 8, 512, 64, 64);
    const sc::ServingRun run = sc::SimulateServing(c, System("dgx-h100-superpod"), &Calibration());
    EXPECT_EQ(run.result.completed, 64);
    EXPECT_GT(run.result.output_tokens_per_s, 0);
}

}  // namespace
