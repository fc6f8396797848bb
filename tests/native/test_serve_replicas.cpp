// The serving engine with many replicas: an event looks only at the replicas something happened to (engine.cpp's
// Run), so these check what a scan of every replica guaranteed for free: identical replicas given identical work
// finish together (ties in index order) and serve as one replica does, times their count; Little's law holds on
// the totals of waiting and running requests the engine keeps as they change, with most replicas idle at any
// time; a disaggregated deployment of many replicas per pool does the same, and a prefill replica whose cache is
// all on the link waits for it instead of stopping the run.
#include <gtest/gtest.h>

#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::System;

TEST(ServeReplicas, IdenticalReplicasWithIdenticalWorkServeAsOne) {
    for (const int replicas : {1, 7, 64}) {
        ServingConfig one = Base("llama3-8b", 1, 700, 90, 40);
        one.workload.arrival = ArrivalKind::offline;  // every replica gets the same 40 requests at time 0
        one.engine.max_seqs = 16;                     // several batches, each iteration ending at once everywhere
        ServingConfig many = one;
        many.pool.replicas = replicas;
        many.workload.requests = 40LL * replicas;
        IterationCost cost(one.model, one.precision, 1, System("dgx-h100-superpod"), &Calibration(), 700, 8192);
        const ServingResult a = Simulate(one, cost, 4000), b = Simulate(many, cost, 4000);
        SCOPED_TRACE(replicas);
        ASSERT_EQ(b.completed, 40LL * replicas);
        EXPECT_EQ(b.iterations, a.iterations * replicas);
        EXPECT_DOUBLE_EQ(b.duration, a.duration);
        for (auto [x, y] : {std::pair{a.ttft, b.ttft}, std::pair{a.e2e, b.e2e}}) {
            EXPECT_DOUBLE_EQ(y.p50, x.p50);
            EXPECT_DOUBLE_EQ(y.p99, x.p99);
            EXPECT_DOUBLE_EQ(y.max, x.max);
        }
        EXPECT_NEAR(b.output_tokens_per_s, a.output_tokens_per_s * replicas, 1e-9 * b.output_tokens_per_s);
        EXPECT_NEAR(b.mean_running, a.mean_running, 1e-9 * a.mean_running);
        EXPECT_NEAR(b.mean_in_system, a.mean_in_system * replicas, 1e-9 * b.mean_in_system);
    }
}

TEST(ServeReplicas, LittlesLawWithMostReplicasIdle) {
    // 3,000 replicas, 6,000 Poisson arrivals at 40/s: a replica sees a request every 75 s on average and is idle
    // nearly all the time, so the totals in Little's law come from the few replicas that are busy.
    ServingConfig c = Base("llama3-8b", 1, 0, 0, 6000);
    c.workload.input = LengthDist::Uniform(50, 1500);
    c.workload.output = LengthDist::Uniform(1, 200);
    c.workload.arrival = ArrivalKind::poisson;
    c.workload.rate = 40;
    c.pool.replicas = 3000;
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 800, 8192);
    const ServingResult r = Simulate(c, cost, 4000);
    ASSERT_EQ(r.completed, 6000);
    EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-9 * r.sum_e2e);
    EXPECT_GT(r.mean_in_system, 0);
    // At this load a request rarely waits: its replica is idle when it arrives (round-robin, 3,000 of them).
    EXPECT_LT(r.mean_waiting, 0.01 * r.mean_in_system);
}

TEST(ServeReplicas, DisaggregatedPoolsOfManyReplicas) {
    ServingConfig c = Base("llama3-8b", 1, 0, 0, 4000);
    c.workload.input = LengthDist::Uniform(50, 1500);
    c.workload.output = LengthDist::Uniform(2, 200);
    c.workload.arrival = ArrivalKind::poisson;
    c.workload.rate = 200;
    c.pool.replicas = 300;
    c.decode_pool = PoolConfig{1, 500};
    const ServingRun run = SimulateServing(c, System("dgx-h100-superpod"), &Calibration());
    const ServingResult& r = run.result;
    ASSERT_EQ(r.completed, 4000);
    EXPECT_EQ(r.gpus, 800);
    EXPECT_EQ(r.kv_transfers, 4000);  // every request has a second token, so every one crosses
    EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-9 * r.sum_e2e);
}

TEST(ServeReplicas, APrefillReplicaWaitsForItsBlocksOnTheLink) {
    // The prefill replica holds 3 prompts of 900 tokens (57 blocks each); each prompt's cache takes 1 s to cross.
    // 30 requests queued at time 0 go in waves of 3, each after the last wave's caches have left: the tenth wave's
    // first tokens come after 9 transfers. (The engine stopped with "the scheduler can run nothing" here: no
    // running request, requests waiting, and every free block on the link.)
    ServingConfig c = Base("llama3-8b", 1, 900, 40, 30);
    c.workload.arrival = ArrivalKind::offline;
    c.decode_pool = PoolConfig{1, 1};
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 900, 8192);
    KvTransferModel link;
    link.seconds_per_token = 1.0 / 900;
    const ServingResult r = Simulate(c, PoolModel{&cost, 3 * 57}, PoolModel{&cost, 100000}, link);
    ASSERT_EQ(r.completed, 30);
    EXPECT_EQ(r.kv_transfers, 30);
    EXPECT_NEAR(r.kv_transfer_mean, 1.0, 1e-12);
    BatchShape wave;
    for (int k = 0; k < 3; ++k) wave.AddPrefillChunk(0, 900, cost.window());
    wave.logits = 3;
    const double prefill = cost.Breakdown(wave).total();
    EXPECT_GE(r.ttft.max, 9.0 + 10 * prefill - 1e-9);
    EXPECT_LE(r.ttft.max, 9.0 + 10 * prefill + 1e-9);
    EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-9 * r.sum_e2e);
}

}  // namespace
