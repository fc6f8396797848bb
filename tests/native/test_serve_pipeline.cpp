// Pipeline (pool.pp) and expert (pool.ep) parallelism per replica against closed forms: the layers split as
// vLLM's get_pp_indices; one request's latency is every stage plus the activation sends; two batches in flight
// follow the flow-shop recurrence and long runs go at the slowest stage's pace; each stage's weights and cache
// set the KV capacity, split over the pp schedulers; experts split over ep groups keep the FLOPs and the bytes.
#include <gtest/gtest.h>

#include <numeric>

#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/kv_capacity.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::System;

BatchShape Prefill(double n) {
    BatchShape b;
    b.prefill_tokens = b.prefill_keys = n;
    b.prefill_pairs = n * (n + 1) / 2;
    b.logits = 1;
    return b;
}

TEST(ServePipeline, StagesSplitTheLayersAsVllm) {
    EXPECT_EQ(StageLayers(32, 4), (std::vector<int>{8, 8, 8, 8}));
    EXPECT_EQ(StageLayers(61, 4), (std::vector<int>{15, 15, 16, 15}));  // vLLM's own example for DeepSeek
    EXPECT_EQ(StageLayers(61, 2), (std::vector<int>{31, 30}));
    EXPECT_EQ(StageLayers(7, 3), (std::vector<int>{2, 3, 2}));
    EXPECT_EQ(StageLayers(5, 1), (std::vector<int>{5}));
}

TEST(ServePipeline, OneBatchIsEveryStageAndEverySend) {
    const sc::System& sys = System("dgx-h100-superpod");
    ServingConfig c = Base("llama3-8b", 1, 700, 2, 1);
    PoolConfig split{1, 1, 2, 1};
    IterationCost one(c.model, c.precision, 1, sys, &Calibration(), 700, c.engine.max_tokens);
    IterationCost two(c.model, c.precision, split, sys, &Calibration(), 700, c.engine.max_tokens);
    const BatchShape b = Prefill(700);
    const PipelineTimes p = two.Pipeline(b);
    ASSERT_EQ(p.stage.size(), 2u);
    ASSERT_EQ(p.send.size(), 1u);
    // GPUs 0 and 1 of a DGX: the send crosses NVLink, hidden states and residual of 700 tokens in bf16.
    const NetworkLevel& nvlink = sys.levels[0];
    EXPECT_DOUBLE_EQ(p.send[0], nvlink.latency_us * 1e-6 + 2 * 700 * 4096 * 2 / (nvlink.EffectiveGBps() * 1e9));
    // The stages together do the unsplit pass; the last stage also runs the LM head, so it is the slower.
    EXPECT_NEAR(p.stage[0] + p.stage[1], one.Seconds(b), 1e-12 * one.Seconds(b));
    EXPECT_GT(p.stage[1], p.stage[0]);
    EXPECT_NEAR(two.Seconds(b), one.Seconds(b) + p.send[0], 1e-12 * one.Seconds(b));
    EXPECT_DOUBLE_EQ(two.Breakdown(b).pp_comm, p.send[0]);
    // The engine: a single request's TTFT is the batch through both stages and the send.
    c.pool = split;
    const ServingResult r = Simulate(c, two, 100000);
    EXPECT_NEAR(r.ttft.mean, p.stage[0] + p.send[0] + p.stage[1], 1e-12);
    EXPECT_EQ(r.gpus, 2);
    // Half of each GPU's cache per layer: KV bytes per token per rank are those of 16 layers.
    EXPECT_EQ(two.KvBytesPerToken(), one.KvBytesPerToken() / 2);
}

TEST(ServePipeline, TwoBatchesInFlightFollowTheFlowShop) {
    // Two requests, each on its own scheduler of a two-stage replica, start together: the second waits for
    // stage 0, then for stage 1 to finish the first.
    const sc::System& sys = System("dgx-h100-superpod");
    ServingConfig c = Base("llama3-8b", 1, 700, 1, 2);
    c.pool.pp = 2;
    IterationCost cost(c.model, c.precision, c.pool, sys, &Calibration(), 700, c.engine.max_tokens);
    const PipelineTimes p = cost.Pipeline(Prefill(700));
    const double s0 = p.stage[0], s1 = p.stage[1], x = p.send[0];
    const ServingResult r = Simulate(c, cost, 100000);
    ASSERT_EQ(r.timelines.size(), 2u);
    EXPECT_NEAR(r.timelines[0].ttft(), s0 + x + s1, 1e-12);
    EXPECT_NEAR(r.timelines[1].ttft(), std::max(2 * s0 + x, s0 + x + s1) + s1, 1e-12);
    EXPECT_EQ(r.timelines[0].spans[0].replica, 0);  // one request per scheduler (the least loaded)
    EXPECT_EQ(r.timelines[1].spans[0].replica, 1);
}

TEST(ServePipeline, LongRunsGoAtTheSlowestStagesPace) {
    // Two long decodes, one per scheduler: once both are decoding, stage 1 (the layers and the LM head) is
    // busy without a break, so each of the 2,000 steps of the pair takes 2 x stage 1 when that exceeds a
    // batch's trip through the pipeline.
    const sc::System& sys = System("dgx-h100-superpod");
    ServingConfig c = Base("llama3-8b", 1, 64, 2001, 2);
    c.pool.pp = 2;
    IterationCost cost(c.model, c.precision, c.pool, sys, &Calibration(), 64, c.engine.max_tokens);
    BatchShape mid;
    mid.decodes = mid.logits = 1;
    mid.decode_keys = 64 + 1000;
    const PipelineTimes p = cost.Pipeline(mid);
    const double trip = p.stage[0] + p.send[0] + p.stage[1];
    ASSERT_GT(2 * p.stage[1], trip);  // the premise: the bottleneck stage, not the trip, sets the pace
    const ServingResult r = Simulate(c, cost, 100000);
    EXPECT_NEAR(r.duration / (2000 * 2 * p.stage[1]), 1.0, 0.01);
    // Without the pipeline the two requests decode together in one batch on one GPU.
    c.pool.pp = 1;
    IterationCost one(c.model, c.precision, 1, sys, &Calibration(), 64, c.engine.max_tokens);
    EXPECT_GT(Simulate(c, one, 100000).duration, 0);
}

TEST(ServePipeline, EachStagesWeightsAndCacheSetTheCapacity) {
    ServingConfig c = Base("llama3-70b", 8, 128, 128, 1);
    const auto& acc = System("dgx-h100-superpod").accelerator;
    const std::vector<double> stages = StageWeightBytesPerRank(c.model, c.precision, 8, 2);
    const double whole = ServingWeightBytesPerRank(c.model, c.precision, 8);
    ASSERT_EQ(stages.size(), 2u);
    EXPECT_NEAR(stages[0] + stages[1], whole, 1e-9 * whole);  // untied: every parameter once
    // 40 layers each; the embedding on stage 0, the (equal-sized) LM head and final norm on stage 1.
    const double V = 128256, h = 8192;
    EXPECT_NEAR(stages[1] - stages[0], h * 2, 1e-6);  // the final norm's weight
    EXPECT_GT(stages[0], V / 8 * h * 2);
    PoolConfig split{8, 1, 2, 1};
    const KvCapacity one = ComputeKvCapacity(c.model, c.precision, 8, acc, c.engine);
    const KvCapacity two = ComputeKvCapacity(c.model, c.precision, split, acc, c.engine);
    EXPECT_EQ(two.kv_bytes_per_token, one.kv_bytes_per_token / 2);
    // Each stage's blocks by hand; the replica has the fewer (the stages hold the same layers' cache here).
    long long fewest = -1;
    for (double w : stages) {
        const double kv = 0.9 * acc.MemoryBytes() - w - two.workspace_bytes - (0.25 + 1.84) * 1073741824.0;
        const long long blocks = static_cast<long long>(std::floor(kv / (two.kv_bytes_per_token * 16)));
        if (fewest < 0 || blocks < fewest) fewest = blocks;
    }
    EXPECT_EQ(two.blocks, fewest);
    // The engine gives each of the two schedulers half the blocks: 20 blocks hold a 16 + 64 request (5
    // blocks) per scheduler but not a 100 + 100 one (13 > 10).
    ServingConfig e = Base("llama3-8b", 1, 100, 100, 1);
    e.pool.pp = 2;
    IterationCost cost(e.model, e.precision, e.pool, System("dgx-h100-superpod"), &Calibration(), 100, 8192);
    EXPECT_EQ(sctest::ErrorOf([&] { Simulate(e, cost, 20); }),
              "engine.kv_blocks: a request of 100 + 100 tokens needs 13 KV blocks but the cache holds 10; use more "
              "memory, more GPUs per replica or shorter requests");
    EXPECT_EQ(Simulate(e, cost, 26).completed, 1);
    // A cost built for one stage does not serve a two-stage pool.
    IterationCost flat(e.model, e.precision, 1, System("dgx-h100-superpod"), &Calibration(), 100, 8192);
    EXPECT_NE(sctest::ErrorOf([&] { Simulate(e, flat, 26); }).find("pool.pp"), std::string::npos);
}

TEST(ServePipeline, ExpertsSplitOverEpKeepFlopsAndBytes) {
    ServingConfig c = Base("mixtral-8x7b", 4, 512, 2, 1);
    const sc::System& sys = System("dgx-h100-superpod");
    IterationCost tp(c.model, c.precision, PoolConfig{4, 1, 1, 1}, sys, &Calibration(), 512, 8192);
    IterationCost ep(c.model, c.precision, PoolConfig{4, 1, 1, 4}, sys, &Calibration(), 512, 8192);
    for (double n : {1.0, 64.0, 512.0}) {
        const BatchShape b = Prefill(n);
        EXPECT_NEAR(ep.Work(b).linear_flops, tp.Work(b).linear_flops, 1e-12 * tp.Work(b).linear_flops);
        // No all-to-all inside the TP group: the layer's all-reduces are the same.
        EXPECT_EQ(ep.Breakdown(b).tp_comm, tp.Breakdown(b).tp_comm);
        EXPECT_EQ(ep.Breakdown(b).attention, tp.Breakdown(b).attention);
    }
    EXPECT_EQ(ep.KvBytesPerToken(), tp.KvBytesPerToken());
    c.pool.ep = 4;
    ServingRun run = SimulateServing(c, sys, &Calibration());
    c.pool.ep = 1;
    ServingRun base = SimulateServing(c, sys, &Calibration());
    EXPECT_EQ(run.kv.weight_bytes, base.kv.weight_bytes);  // the same bytes, whole experts instead of slices
    EXPECT_EQ(run.kv.blocks, base.kv.blocks);
}

TEST(ServePipeline, LoadImbalanceGrowsTheHottestGroupsExpertWork) {
    // Mixtral (8 experts, top-2) at tp=4: with the hottest expert at twice the mean, the ep=4 group holding it
    // (2 experts) computes (2 + 6/7) / 2 = 10/7 of a uniform group's rows; with ep=1 every rank holds a slice of
    // every expert, so the imbalance changes nothing.
    ServingConfig c = Base("mixtral-8x7b", 4, 512, 2, 1);
    const sc::System& sys = System("dgx-h100-superpod");
    sc::ModelConfig hot = c.model;
    hot.moe.load_imbalance = 2;
    const double h = c.model.hidden, fe = c.model.moe.expert_ffn, k = c.model.moe.top_k, L = c.model.moe_layers();
    for (double n : {64.0, 512.0}) {
        const BatchShape b = Prefill(n);
        auto linear = [&](const sc::ModelConfig& m, int ep) {
            return IterationCost(m, c.precision, PoolConfig{4, 1, 1, ep}, sys, &Calibration(), 512, 8192)
                .Work(b)
                .linear_flops;
        };
        EXPECT_EQ(linear(hot, 1), linear(c.model, 1));
        // SwiGLU experts: 3 h x fe matrices, 2 FLOPs a weight, over the group's tp/ep = 1 rank's whole experts.
        EXPECT_NEAR(linear(hot, 4) - linear(c.model, 4), (10.0 / 7 - 1) * n * k / 4 * 6 * h * fe * L,
                    1e-9 * linear(c.model, 4));
    }
}

TEST(ServePipeline, InvalidSplitsNameTheFieldAndTheValidValues) {
    ServingConfig c = Base("llama3-70b", 8, 10, 10, 1);
    c.pool.pp = 81;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }),
              "pool.pp: pp=81 pipeline stages for 80 layers; valid: 1..80 (every stage holds at least one layer)");
    c.pool.pp = 0;
    EXPECT_NE(sctest::ErrorOf([&] { ValidateServingConfig(c); }).find("pool.pp: pp=0"), std::string::npos);
    c.pool.pp = 1;
    c.pool.ep = 2;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }),
              "pool.ep: ep=2 splits experts, but Llama-3 70B has no mixture-of-experts layers; valid: 1");
    ServingConfig m = Base("mixtral-8x7b", 8, 10, 10, 1);
    m.decode_pool = PoolConfig{8, 1, 1, 3};
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(m); }),
              "decode_pool.ep: ep=3 must divide tp=8 (the experts are split over ep groups of a stage's tp ranks) "
              "and the 8 experts; valid: 1, 2, 4, 8");
}

}  // namespace
