// The serving engine's deployments and workloads against closed forms and invariants: disaggregation adds
// exactly the KV transfer; gamma gaps have the asked mean and CV; lengths follow their distributions; trace
// replay, priority and swap preemption do what they say; Little's law holds for every arrival process and on
// the bounded time series; SLO attainment counts the requests within targets.
#include <gtest/gtest.h>

#include <cmath>

#include "config/error.h"
#include "engine/serve.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/trace_parse.h"
#include "inference/workload_gen.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::Model;
using servetest::System;

// Seconds of one request alone from arrival to its last token: its prefill, then a decode per later token.
double AloneE2e(const IterationCost& cost, int input, int output) {
    double t = cost.PrefillSeconds(input);
    for (int k = 1; k < output; ++k) t += cost.DecodeSeconds(input + k - 1);
    return t;
}

TEST(ServeDisaggregated, AddsExactlyTheKvTransferTime) {
    const sc::System& sys = System("dgx-h100-superpod");
    ServingConfig c = Base("llama3-8b", 1, 900, 40, 1);
    IterationCost cost(c.model, c.precision, 1, sys, &Calibration(), 900, c.engine.max_tokens);
    const ServingResult mixed = Simulate(c, cost, 100000);
    c.decode_pool = PoolConfig{1, 1};
    // Two GPUs of one DGX: the KV crosses NVLink, level 0, at its effective bandwidth plus one hop's latency.
    const KvTransferModel link =
        KvTransferOn(sys, c.pool, *c.decode_pool, cost.KvBytesPerToken(), cost.KvBytesPerToken());
    const NetworkLevel& nvlink = sys.levels[0];
    EXPECT_DOUBLE_EQ(link.latency, nvlink.latency_us * 1e-6);
    EXPECT_DOUBLE_EQ(link.seconds_per_token, cost.KvBytesPerToken() / (nvlink.EffectiveGBps() * 1e9));
    const ServingResult dis = Simulate(c, PoolModel{&cost, 100000}, PoolModel{&cost, 100000}, link);
    ASSERT_EQ(dis.completed, 1);
    EXPECT_EQ(dis.kv_transfers, 1);
    EXPECT_NEAR(dis.kv_transfer_mean, link.Seconds(900), 1e-15);
    EXPECT_NEAR(dis.ttft.mean, mixed.ttft.mean, 1e-12);  // the first token comes from the prefill pool
    EXPECT_NEAR(dis.e2e.mean, mixed.e2e.mean + link.Seconds(900), 1e-12);
    EXPECT_NEAR(mixed.e2e.mean, AloneE2e(cost, 900, 40), 1e-12);
    EXPECT_EQ(dis.gpus, 2);
    // Each pool's cache must hold what it keeps: the prefill pool a prompt (900 tokens = 57 blocks of 16), the
    // decode pool the prompt and the output (940 = 59 blocks).
    EXPECT_EQ(Simulate(c, PoolModel{&cost, 57}, PoolModel{&cost, 59}, link).completed, 1);
    EXPECT_NE(sctest::ErrorOf([&] {
                  Simulate(c, PoolModel{&cost, 56}, PoolModel{&cost, 59}, link);
              }).find("engine.kv_blocks: a request of 900 + 40 tokens needs 57 KV blocks"),
              std::string::npos);
    EXPECT_NE(sctest::ErrorOf([&] {
                  Simulate(c, PoolModel{&cost, 57}, PoolModel{&cost, 58}, link);
              }).find("decode_pool.kv_blocks: a request of 900 + 40 tokens needs 59 KV blocks"),
              std::string::npos);
    // Across nodes (8 prefill GPUs + 8 decode GPUs span two DGX): the InfiniBand level, slower than NVLink.
    const KvTransferModel ib = KvTransferOn(sys, PoolConfig{8, 1}, PoolConfig{8, 1}, 1000, 1000);
    EXPECT_DOUBLE_EQ(ib.seconds_per_token, 1000 / (sys.levels[1].EffectiveGBps() * 1e9));
    EXPECT_GT(ib.seconds_per_token, 1000 / (nvlink.EffectiveGBps() * 1e9));
}

TEST(ServeDisaggregated, LittlesLawAndEveryRequestCrossesOnce) {
    ServingConfig c = Base("llama3-8b", 1, 0, 0, 2000);
    c.workload.input = LengthDist::Uniform(50, 1500);
    c.workload.output = LengthDist::Uniform(1, 200);
    c.workload.arrival = ArrivalKind::poisson;
    c.workload.rate = 30;
    c.pool.replicas = 2;
    c.decode_pool = PoolConfig{2, 1};
    c.engine.max_tokens = 2048;
    const sc::System& sys = System("dgx-h100-superpod");
    const ServingRun run = SimulateServing(c, sys, &Calibration());
    const ServingResult& r = run.result;
    ASSERT_EQ(r.completed, 2000);
    ASSERT_TRUE(run.decode_kv && run.transfer);
    EXPECT_GT(run.decode_kv->blocks, run.kv.blocks);  // TP2 holds more cache per replica than TP1
    EXPECT_EQ(r.gpus, 4);
    EXPECT_LE(r.kv_transfers, 2000);  // requests of one output token finish on the prefill pool
    EXPECT_GT(r.kv_transfers, 1900);
    EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-9 * r.sum_e2e);
}

TEST(ServeWorkload, GammaGapsHaveTheirMeanAndCv) {
    for (double cv : {0.5, 1.0, 3.0}) {
        Workload w;
        w.arrival = ArrivalKind::gamma;
        w.rate = 8;
        w.cv = cv;
        Rng rng(42);
        const int n = 400000;
        double sum = 0, sq = 0;
        for (int i = 0; i < n; ++i) {
            const double g = NextGap(w, rng);
            sum += g, sq += g * g;
        }
        const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
        SCOPED_TRACE(cv);
        // Sampling error of 400k draws: well under 1% for the mean, 2% for the CV (even at CV 3).
        EXPECT_NEAR(mean, 1.0 / 8, 0.01 / 8);
        EXPECT_NEAR(sd / mean, cv, 0.03 * cv);
    }
}

TEST(ServeWorkload, LengthDistributions) {
    Rng rng(3);
    LengthDist normal;
    normal.kind = LengthDist::Kind::normal;
    normal.mean = 500, normal.stddev = 100, normal.min = 300, normal.max = 700;  // symmetric truncation
    double sum = 0;
    int lo = 1 << 30, hi = 0;
    for (int i = 0; i < 100000; ++i) {
        const int v = DrawLength(normal, rng);
        sum += v, lo = std::min(lo, v), hi = std::max(hi, v);
    }
    EXPECT_NEAR(sum / 100000, 500, 1.5);
    EXPECT_GE(lo, 300);
    EXPECT_LE(hi, 700);
    LengthDist emp;
    emp.kind = LengthDist::Kind::empirical;
    emp.values = {64, 256, 1024};
    emp.weights = {1, 2, 1};
    emp.min = 64, emp.max = 1024;
    int count256 = 0;
    for (int i = 0; i < 100000; ++i) {
        const int v = DrawLength(emp, rng);
        ASSERT_TRUE(v == 64 || v == 256 || v == 1024);
        count256 += v == 256;
    }
    EXPECT_NEAR(count256 / 100000.0, 0.5, 0.01);
    // A normal that puts almost nothing in its bounds is refused, not sampled forever.
    ServingConfig c = Base("llama3-8b", 1, 10, 10, 1);
    c.workload.input = normal;
    c.workload.input.stddev = 1e6;
    EXPECT_NE(sctest::ErrorOf([&] { ValidateServingConfig(c); }).find("workload.input.stddev"), std::string::npos);
}

TEST(ServeWorkload, ArrivalsStayWhereTheClockResolvesMicroseconds) {
    // At the bound (a trace's last arrival at 1e9 s) a request alone still takes its own service time to a
    // microsecond; past it (5000 requests at 1e-300 requests/s once gave every latency as 0 us) the run is refused,
    // naming the field and the slowest rate that would do.
    ServingConfig c = Base("llama3-8b", 1, 1, 1, 2);
    c.workload.arrival = ArrivalKind::trace;
    c.workload.trace = ParseTraceCsv("0,700,20\n1e9,300,5\n");
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 500, c.engine.max_tokens);
    const ServingResult r = Simulate(c, cost, 100000);
    ASSERT_EQ(r.completed, 2);
    EXPECT_NEAR(r.sum_e2e, AloneE2e(cost, 700, 20) + AloneE2e(cost, 300, 5), 1e-6);
    EXPECT_NE(sctest::ErrorOf([] { ParseTraceCsv("0,10,5\n1.1e9,10,5\n"); }).find("trace line 2 arrival_s"),
              std::string::npos);

    ServingConfig p = Base("llama3-8b", 1, 10, 10, 5000);
    p.workload.arrival = ArrivalKind::poisson;
    p.workload.rate = 5e-6;  // 5000 requests over 1e9 s: the bound
    EXPECT_NO_THROW(ValidateServingConfig(p));
    p.workload.rate = 1e-300;
    const std::string e = sctest::ErrorOf([&] { ValidateServingConfig(p); });
    EXPECT_EQ(e.rfind("workload.rate: ", 0), 0u) << e;
    EXPECT_NE(e.find("at least 5e-06 requests/s"), std::string::npos) << e;
    engine::ServeRequest req;
    req.config = p;
    req.system = &System("dgx-h100-superpod");
    req.sweep_rates = {1, 4e-6};
    EXPECT_NE(sctest::ErrorOf([&] { engine::SnapshotServeSweep(req); }).find("sweep_rates[1]"), std::string::npos);
}

TEST(ServeWorkload, TraceReplaysArrivalsAndLengths) {
    const std::vector<TraceRequest> trace = ParseTraceCsv("arrival_s,input,output\n0,700,20\n# idle\n1000,300,5\n");
    ASSERT_EQ(trace.size(), 2u);
    EXPECT_EQ(trace[1].arrival, 1000);
    ServingConfig c = Base("llama3-8b", 1, 1, 1, 2);
    c.workload.arrival = ArrivalKind::trace;
    c.workload.trace = trace;
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 500, c.engine.max_tokens);
    const ServingResult r = Simulate(c, cost, 100000);
    ASSERT_EQ(r.completed, 2);
    // Far apart, each runs alone: the second ends at 1000 s + its own service time.
    EXPECT_NEAR(r.duration, 1000 + AloneE2e(cost, 300, 5), 1e-9);
    EXPECT_NEAR(r.sum_e2e, AloneE2e(cost, 700, 20) + AloneE2e(cost, 300, 5), 1e-9);
    EXPECT_NE(sctest::ErrorOf([] { ParseTraceCsv("0,10,5\n2,10\n"); }).find("trace line 2"), std::string::npos);
    EXPECT_NE(sctest::ErrorOf([] { ParseTraceCsv("5,10,5\n2,10,5\n"); }).find("must not go back in time"),
              std::string::npos);
    EXPECT_NE(sctest::ErrorOf([] { ParseTraceCsv("0,0,5\n"); }).find("input_tokens"), std::string::npos);
}

TEST(ServeWorkload, PrioritySchedulingRunsTheFirstClassFirst) {
    // One sequence at a time (max_seqs 1): requests run back to back in the queue's order, so the sum of the
    // latencies is a closed form of that order. Three long class-1 requests arrive just before three short
    // class-0 ones.
    std::vector<TraceRequest> t;
    for (int i = 0; i < 3; ++i) t.push_back({0.0, 800, 30, 1});
    for (int i = 0; i < 3; ++i) t.push_back({0.0, 100, 4, 0});
    ServingConfig c = Base("llama3-8b", 1, 1, 1, 6);
    c.workload.arrival = ArrivalKind::trace;
    c.workload.trace = t;
    c.engine.max_seqs = 1;
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 500, c.engine.max_tokens);
    auto sum_in_order = [&](bool short_first) {
        double now = 0, sum = 0;
        for (int k = 0; k < 6; ++k) {
            const bool is_short = short_first ? k < 3 : k >= 3;
            now += is_short ? AloneE2e(cost, 100, 4) : AloneE2e(cost, 800, 30);
            sum += now;
        }
        return sum;
    };
    const ServingResult fcfs = Simulate(c, cost, 100000);
    EXPECT_NEAR(fcfs.sum_e2e, sum_in_order(false), 1e-9);
    c.engine.scheduling = SchedulingPolicy::priority;
    const ServingResult prio = Simulate(c, cost, 100000);
    EXPECT_NEAR(prio.sum_e2e, sum_in_order(true), 1e-9);
    EXPECT_NEAR(prio.duration, fcfs.duration, 1e-12);  // the same work, in another order
}

TEST(ServeWorkload, SwapPreemptionResumesWithoutRecomputing) {
    // The two requests of PreemptionHappensExactlyWhenTheCacheIsFull (16 + 64 tokens, 9 blocks of 16): the
    // second is preempted. Swapped, nothing is recomputed: the tokens run are the recompute-free total, every
    // request's input + output - 1; and its blocks cross the host link twice.
    ServingConfig c = Base("llama3-8b", 1, 16, 64, 2);
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 16, c.engine.max_tokens);
    const ServingResult recompute = Simulate(c, cost, 9);
    c.engine.preemption = Preemption::swap;
    c.engine.swap_gbps = 64;
    const ServingResult swap = Simulate(c, cost, 9);
    ASSERT_EQ(swap.completed, 2);
    ASSERT_GE(swap.preemptions, 1);
    EXPECT_NEAR(swap.mean_batch_tokens * swap.iterations, 2 * (16 + 64 - 1), 1e-9);
    EXPECT_GT(recompute.mean_batch_tokens * recompute.iterations, 2 * (16 + 64 - 1));
    const double block_bytes = 16 * cost.KvBytesPerToken();
    EXPECT_GT(swap.swapped_bytes, 0);
    EXPECT_NEAR(std::fmod(swap.swapped_bytes, block_bytes), 0, 1e-6 * block_bytes);  // whole blocks
    EXPECT_NEAR(swap.mean_in_system * swap.duration, swap.sum_e2e, 1e-9 * swap.sum_e2e);
    // Swap needs its link.
    c.engine.swap_gbps = 0;
    EXPECT_NE(sctest::ErrorOf([&] { Simulate(c, cost, 9); }).find("engine.swap_gbps"), std::string::npos);
}

TEST(ServeWorkload, LittlesLawOnEveryArrivalProcessAndTheSeries) {
    for (ArrivalKind a : {ArrivalKind::gamma, ArrivalKind::closed_loop, ArrivalKind::offline}) {
        ServingConfig c = Base("llama3-8b", 1, 0, 0, 1500);
        c.workload.input = LengthDist::Uniform(50, 800);
        c.workload.output = LengthDist::Uniform(1, 300);
        c.workload.arrival = a;
        c.workload.rate = 25;
        c.workload.cv = 4;
        c.workload.concurrency = 32;
        c.workload.priority_weights = {1, 1};
        c.engine.scheduling = SchedulingPolicy::priority;
        c.engine.max_tokens = 2048;
        IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 400, 2048);
        const ServingResult r = Simulate(c, cost, 1500);
        SCOPED_TRACE(NameOf(a));
        ASSERT_EQ(r.completed, 1500);
        EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-9 * r.sum_e2e);
        // The series is bounded and integrates to the same areas.
        ASSERT_FALSE(r.series.empty());
        EXPECT_LE(r.series.size(), static_cast<size_t>(SeriesRecorder::kMaxPoints));
        double in_system = 0, kv = 0;
        for (const SeriesPoint& p : r.series) {
            in_system += (p.running + p.waiting) * (p.end - p.start);
            kv += p.kv_occupancy * (p.end - p.start);
            EXPECT_LE(p.kv_occupancy, 1 + 1e-12);
        }
        EXPECT_NEAR(in_system, r.sum_e2e, 1e-6 * r.sum_e2e);
        EXPECT_NEAR(kv, r.kv_occupancy_mean * r.duration, 1e-6 * r.duration);
        EXPECT_NEAR(r.series.back().end, r.duration, 1e-12 * r.duration);
        if (a == ArrivalKind::closed_loop) {
            EXPECT_LE(r.mean_in_system, 32 + 1e-9);
        }
    }
}

TEST(ServeSlo, AttainmentCountsTheRequestsWithinTargets) {
    // Two requests queued together, one at a time: the first's TTFT is its prefill, the second's the first's
    // whole latency plus its own prefill. A TTFT target between the two is met by exactly half.
    ServingConfig c = Base("llama3-8b", 1, 500, 20, 2);
    c.engine.max_seqs = 1;
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 500, c.engine.max_tokens);
    const double first = cost.PrefillSeconds(500), second = AloneE2e(cost, 500, 20) + first;
    c.slo.ttft = (first + second) / 2;
    const ServingResult r = Simulate(c, cost, 100000);
    EXPECT_NEAR(r.ttft.max, second, 1e-12);
    EXPECT_EQ(r.slo_attainment, 0.5);
    EXPECT_NEAR(r.goodput_requests_per_s, 1 / r.duration, 1e-12);
    c.slo.ttft = 0;  // no target: everyone meets it
    EXPECT_EQ(Simulate(c, cost, 100000).slo_attainment, 1.0);
    c.slo.tpot = 1e-6;  // nobody decodes a token in a microsecond
    const ServingResult none = Simulate(c, cost, 100000);
    EXPECT_EQ(none.slo_attainment, 0.0);
    EXPECT_EQ(none.goodput_requests_per_s, 0.0);
}

TEST(ServeSweep, ShardsMergeToTheUnshardedSweepAndLowLoadThroughputIsTheRate) {
    engine::ServeRequest req;
    req.config = Base("llama3-8b", 1, 0, 0, 400);
    req.config.workload.input = LengthDist::Uniform(100, 600);
    req.config.workload.output = LengthDist::Uniform(10, 100);
    req.config.workload.arrival = ArrivalKind::poisson;
    req.config.workload.rate = 1;
    req.system = &System("dgx-h100-superpod");
    req.calibration = &Calibration();
    req.sweep_rates = {0.5, 2, 8, 32, 128};
    const engine::ServeSweepSnapshot snap = engine::SnapshotServeSweep(req);
    const auto one = engine::MergeServeSweep({engine::RunServeSweepShard(snap, 0, 1)});
    std::vector<std::vector<engine::ServeSweepPoint>> parts;
    for (int s = 0; s < 3; ++s) parts.push_back(engine::RunServeSweepShard(snap, s, 3));
    const auto three = engine::MergeServeSweep(std::move(parts));
    ASSERT_EQ(one.size(), 5u);
    ASSERT_EQ(three.size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(three[i].rate, req.sweep_rates[i]);
        EXPECT_EQ(three[i].run.result.duration, one[i].run.result.duration);
        EXPECT_EQ(three[i].run.result.e2e.p99, one[i].run.result.e2e.p99);
        // A point keeps its figures, not its series over time (a sweep of 15,000 rates held 180 MB of them).
        EXPECT_TRUE(one[i].run.result.series.empty());
    }
    // At 0.5 req/s the server keeps up: throughput is the offered rate (400 Poisson arrivals: within 10%),
    // and latency grows with the load.
    EXPECT_NEAR(one[0].run.result.requests_per_s, 0.5, 0.05);
    EXPECT_GT(one[4].run.result.e2e.p50, one[0].run.result.e2e.p50);
    // A sweep needs rate-driven arrivals and positive rates.
    req.config.workload.arrival = ArrivalKind::offline;
    EXPECT_NE(sctest::ErrorOf([&] { engine::SnapshotServeSweep(req); }).find("workload.arrival"), std::string::npos);
    req.config.workload.arrival = ArrivalKind::poisson;
    req.sweep_rates = {1, -2};
    EXPECT_NE(sctest::ErrorOf([&] { engine::SnapshotServeSweep(req); }).find("sweep_rates[1]"), std::string::npos);
    req.system = nullptr;
    EXPECT_NE(sctest::ErrorOf([&] { engine::RunServe(req); }).find("system"), std::string::npos);
}

}  // namespace
