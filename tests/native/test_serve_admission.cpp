// KV admission policies at a long-output shape (the TensorRT-LLM 128/4096 rows' mechanism, closed form):
// reserve_full (TensorRT-LLM GUARANTEED_NO_EVICT: a request is admitted only when blocks for its prompt + its
// whole output are free, capacityScheduler.cpp with KVCacheManager::getRemainingBlocksToCompletion =
// ceilDiv(prompt + maxNewTokens, tokensPerBlock)) runs exactly floor(blocks / blocks per request) sequences at
// once; on_demand (vLLM: blocks as tokens arrive, preemption when none is free) runs more, and preempts.
#include <gtest/gtest.h>

#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::System;

TEST(ServeAdmission, ReserveFullRunsWholeRequestsThatFitAndNoMore) {
    // 128 + 1024 tokens in 64-token blocks: 18 blocks a request; 180 blocks hold exactly 10 whole requests.
    ServingConfig c = Base("llama3-8b", 1, 128, 1024, 40);
    c.engine.block_size = 64;
    c.engine.admission = KvAdmission::reserve_full;
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 128, c.engine.max_tokens);
    const ServingResult reserved = Simulate(c, cost, 180);
    EXPECT_EQ(reserved.completed, 40);
    EXPECT_EQ(reserved.preemptions, 0);
    // Four waves of exactly 10: every iteration runs 10 sequences (each wave prefills in one iteration, 1,280
    // tokens under the 8,192 budget, and decodes 1,023 steps together).
    EXPECT_DOUBLE_EQ(reserved.mean_running, 10);
    EXPECT_EQ(reserved.iterations, 4 * 1024);
    // One block fewer: 9 at once, so four waves of 9 and one of 4 (a mean of 40 / 5 per iteration).
    const ServingResult fewer = Simulate(c, cost, 179);
    EXPECT_EQ(fewer.iterations, 5 * 1024);
    EXPECT_DOUBLE_EQ(fewer.mean_running, 8);
    // On demand the same cache starts all 40 (2 blocks each for the prompt) and preempts as they grow.
    c.engine.admission = KvAdmission::on_demand;
    const ServingResult demand = Simulate(c, cost, 180);
    EXPECT_EQ(demand.completed, 40);
    EXPECT_GT(demand.preemptions, 0);
    EXPECT_GT(demand.mean_running, 10);
}

}  // namespace
