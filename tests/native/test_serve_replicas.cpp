// The serving engine with many replicas: an event looks only at the replicas something happened to (engine.cpp's
// Run), so these check what a scan of every replica guaranteed for free: identical replicas given identical work
// finish together (ties in index order) and serve as one replica does, times their count; Little's law holds on
// the totals of waiting and running requests the engine keeps as they change, with most replicas idle at any
// time; a disaggregated deployment of many replicas per pool does the same, and a prefill replica whose cache is
// all on the link waits for it instead of stopping the run. Replicas beyond the requests are never made, and pools
// larger than their system's preset run on it extended (engine::ServingCluster).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/serve.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/serving_parse.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::System;

// Llama 3 8B on `replicas` one-GPU replicas: `requests` of 50..`in_max` prompt and `out_min`..`out_max` output
// tokens (uniform), arriving as `arrival` says.
ServingConfig Uniform8b(long long requests, int in_max, int out_min, int out_max, ArrivalKind arrival, int replicas) {
    ServingConfig c = servetest::Uniform("llama3-8b", 1, requests, {50, in_max}, {out_min, out_max}, arrival);
    c.pool.replicas = replicas;
    return c;
}

// One pool of Llama 3 8B on one H100 per replica, `c`'s workload: every request completes and Little's law holds
// on the totals the engine keeps.
ServingResult SimulateOnH100(const ServingConfig& c, double typical_prompt) {
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), typical_prompt, 8192);
    const ServingResult r = Simulate(c, cost, 4000);
    EXPECT_EQ(r.completed, c.workload.requests);
    EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-9 * r.sum_e2e);
    return r;
}

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
    ServingConfig c = Uniform8b(6000, 1500, 1, 200, ArrivalKind::poisson, 3000);
    c.workload.rate = 40;
    const ServingResult r = SimulateOnH100(c, 800);
    EXPECT_GT(r.mean_in_system, 0);
    // At this load a request rarely waits: its replica is idle when it arrives (round-robin, 3,000 of them).
    EXPECT_LT(r.mean_waiting, 0.01 * r.mean_in_system);
}

TEST(ServeReplicas, DisaggregatedPoolsOfManyReplicas) {
    ServingConfig c = Uniform8b(4000, 1500, 2, 200, ArrivalKind::poisson, 300);
    c.workload.rate = 200;
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

TEST(ServeReplicas, ReplicasBeyondTheRequestsChangeOnlyTheCacheShare) {
    // 300 requests on 300 replicas or on 30,000: round-robin gives each request a replica of its own either way, so
    // every latency is the same; the mean KV occupancy is over every replica's cache, 100 times more of it.
    ServingConfig c = Uniform8b(300, 1500, 1, 200, ArrivalKind::poisson, 300);
    c.workload.rate = 50;
    ServingConfig wide = c;
    wide.pool.replicas = 30000;
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 800, 8192);
    const ServingResult a = Simulate(c, cost, 4000), b = Simulate(wide, cost, 4000);
    ASSERT_EQ(b.completed, 300);
    EXPECT_EQ(b.iterations, a.iterations);
    EXPECT_EQ(b.duration, a.duration);
    EXPECT_EQ(b.e2e.max, a.e2e.max);
    EXPECT_EQ(b.ttft.p99, a.ttft.p99);
    EXPECT_NEAR(b.kv_occupancy_mean * 100, a.kv_occupancy_mean, 1e-12 * a.kv_occupancy_mean);
    EXPECT_NEAR(b.kv_occupancy_peak * 100, a.kv_occupancy_peak, 1e-12 * a.kv_occupancy_peak);
    // Their state is what bounds a run: a queue per scheduler of a replica that gets a request.
    wide.pool.replicas = 3000000;
    wide.workload.requests = 3000000;
    wide.workload.rate = 1e5;
    const std::string e = sctest::ErrorOf([&] { Simulate(wide, cost, 4000); });
    EXPECT_NE(e.find("pool.replicas: the simulation keeps a queue for each pipeline scheduler"), std::string::npos)
        << e;
    EXPECT_NE(e.find("3000000, about 2929 MiB; at most 2097152"), std::string::npos) << e;
    // A pool's GPU count fits an int: tp x pp x replicas at most 2^24.
    wide.pool = PoolConfig{8, 1 << 22, 1};
    EXPECT_NE(sctest::ErrorOf([&] {
                  ValidateServingConfig(wide);
              }).find("pool.replicas: 4194304 replicas of tp=8 x pp=1 need 33554432 GPUs; at most 16777216"),
              std::string::npos);
}

TEST(ServeReplicas, PoolsLargerThanTheirSystemRunOnItExtended) {
    // 100 + 100 replicas of TP8: 1,600 GPUs on a 1,024-GPU SuperPOD preset. It grows as --gpus grows a training
    // cluster: whole 1,024-GPU pods joined by a core tier, and the KV crosses that tier. (Until 2026-11-26 a
    // disaggregated run stopped with "the two pools need 1600 GPUs" and a pool of one kind ran past the preset's
    // size without saying so.)
    engine::ServeRequest q;
    q.config = servetest::Uniform("llama3-8b", 8, 2000, {100, 2000}, {10, 200}, ArrivalKind::poisson);
    q.config.workload.rate = 400;
    q.config.pool.replicas = 100;
    q.config.decode_pool = PoolConfig{8, 100};
    const sc::System& sys = System("dgx-h100-superpod");
    q.system = &sys;
    q.calibration = &Calibration();
    const sc::System grown = engine::ServingCluster(sys, q.config);
    ASSERT_EQ(grown.levels.size(), sys.levels.size() + 1);
    EXPECT_EQ(grown.TotalAccelerators(), 2048);
    EXPECT_EQ(grown.LevelForSpan(1600), static_cast<int>(sys.levels.size()));  // the core tier
    const engine::ServeResult run = engine::RunServe(q);
    EXPECT_EQ(run.system_name, grown.name);
    EXPECT_NE(run.system_name.find("2 pods of 1024 joined by a core tier"), std::string::npos) << run.system_name;
    ASSERT_TRUE(run.transfer);
    EXPECT_DOUBLE_EQ(run.transfer->latency, grown.levels.back().latency_us * 1e-6);
    EXPECT_EQ(run.result.completed, 2000);
    // Within the preset: the preset itself.
    q.config.pool.replicas = q.config.decode_pool->replicas = 10;
    EXPECT_EQ(engine::RunServe(q).system_name, sys.name);
}

TEST(ServeReplicas, ClosedLoopClientsKeepTheirRequestsInTheSystem) {
    // 5,000 clients, each sending its next request the moment its last completes, 20,000 requests on 50
    // replicas: until the last 5,000 are sent, exactly 5,000 are in the system at every instant.
    ServingConfig c = Uniform8b(20000, 500, 1, 50, ArrivalKind::closed_loop, 50);
    c.workload.concurrency = 5000;
    const ServingResult r = SimulateOnH100(c, 300);
    EXPECT_LT(r.mean_in_system, 5000);
    ASSERT_GT(r.series.size(), 8u);
    for (size_t i = 0; i < r.series.size() / 2; ++i) {
        const SeriesPoint& p = r.series[i];
        EXPECT_NEAR(p.running + p.waiting, 5000, 1e-6) << "bucket " << i << " from " << p.start << " s";
    }
}

TEST(ServeSteps, ASimulationInStepsEqualsOneRunToTheEnd) {
    // The page runs a simulation a slice per frame (ServingSimulation::Step): the result must not depend on the
    // slices. Every preset, disaggregated and pipelined ones among them, in steps of 1 and of 97 events.
    const auto files = nlohmann::json::parse(sctest::ReadFile(servetest::kRoot + "/presets/inference/index.json"))
                           .get<std::vector<std::string>>();
    ASSERT_GE(files.size(), 5u);
    for (const std::string& file : files) {
        const ServingDescription d =
            ParseServingDescription(sctest::ReadFile(servetest::kRoot + "/presets/inference/" + file));
        ServingConfig c = d.config;
        c.model = servetest::Model(d.model_id);
        c.workload.requests = std::min<long long>(c.workload.requests, 400);
        if (c.workload.arrival == ArrivalKind::closed_loop || c.workload.arrival == ArrivalKind::offline)
            c.workload.concurrency = std::min(c.workload.concurrency, 400);
        const sc::System& sys = System(d.system_id);
        const sc::System* decode = d.decode_system_id.empty() ? nullptr : &System(d.decode_system_id);
        const ServingRun whole = SimulateServing(c, sys, &Calibration(), decode);
        for (const long long step : {1LL, 97LL}) {
            SCOPED_TRACE(file + ", steps of " + std::to_string(step));
            ServingSimulation sim(c, sys, &Calibration(), decode);
            EXPECT_NE(sctest::ErrorOf([&] { sim.Finish(); }).find("has not finished"), std::string::npos);
            long long steps = 0;
            while (!sim.Step(step)) ++steps;
            // Sliced as asked: every iteration end is an event, so at least iterations / step slices ran.
            EXPECT_GE(steps + 1, whole.result.iterations / step);
            EXPECT_GT(steps, 2);
            EXPECT_EQ(sim.completed(), c.workload.requests);
            const ServingRun run = sim.Finish();
            EXPECT_EQ(run.result.duration, whole.result.duration);
            EXPECT_EQ(run.result.iterations, whole.result.iterations);
            EXPECT_EQ(run.result.sum_e2e, whole.result.sum_e2e);
            EXPECT_EQ(run.result.ttft.p99, whole.result.ttft.p99);
            EXPECT_EQ(run.result.kv_occupancy_mean, whole.result.kv_occupancy_mean);
            EXPECT_EQ(run.result.preemptions, whole.result.preemptions);
            EXPECT_EQ(run.kv.blocks, whole.kv.blocks);
            EXPECT_EQ(run.system_name, whole.system_name);
        }
    }
}

}  // namespace
