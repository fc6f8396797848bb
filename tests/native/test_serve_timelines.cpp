// Per-request timelines (inference/request_timeline.h) against closed forms: one request's timeline is its
// prefill then its decodes and ends at its TTFT and E2E; preemption shows exactly where the closed-form cache
// test triggers it; every timeline tiles its request's life, so the spans sum to the reported latencies; the
// sample is bounded; the Chrome trace holds one event per span.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/serve.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "report/serve_report.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::System;

// The spans start at arrival, each where the previous ended, and the last ends at completion.
void ExpectTiles(const RequestTimeline& t) {
    SCOPED_TRACE("request " + std::to_string(t.id));
    ASSERT_FALSE(t.spans.empty());
    EXPECT_EQ(t.spans.front().start, t.arrival);
    for (size_t i = 1; i < t.spans.size(); ++i) EXPECT_EQ(t.spans[i].start, t.spans[i - 1].end);
    EXPECT_EQ(t.spans.back().end, t.completion);
    double sum = 0, to_first = 0;
    for (const TimelineSpan& s : t.spans) {
        EXPECT_GE(s.end, s.start);
        sum += s.end - s.start;
        if (s.end <= t.first_token) to_first += s.end - s.start;
    }
    EXPECT_NEAR(sum, t.e2e(), 1e-9 * t.e2e());
    EXPECT_NEAR(to_first, t.ttft(), 1e-9 * t.e2e());
}

int Count(const RequestTimeline& t, SpanKind k) {
    int n = 0;
    for (const TimelineSpan& s : t.spans) n += s.kind == k;
    return n;
}

TEST(ServeTimelines, OneRequestIsItsPrefillThenItsDecodes) {
    ServingConfig c = Base("llama3-8b", 1, 700, 33, 1);
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 700, c.engine.max_tokens);
    const ServingResult r = Simulate(c, cost, 100000);
    ASSERT_EQ(r.timelines.size(), 1u);
    const RequestTimeline& t = r.timelines[0];
    ASSERT_EQ(t.spans.size(), 2u);  // no wait: admitted at time 0; 32 decode iterations merge into one span
    EXPECT_EQ(t.spans[0].kind, SpanKind::prefill);
    EXPECT_EQ(t.spans[0].tokens, 700);
    EXPECT_NEAR(t.spans[0].end, cost.PrefillSeconds(700), 1e-12);
    EXPECT_EQ(t.spans[1].kind, SpanKind::decode);
    EXPECT_EQ(t.spans[1].tokens, 32);
    EXPECT_EQ(t.first_token, t.spans[0].end);
    EXPECT_EQ(t.ttft(), r.ttft.mean);
    EXPECT_EQ(t.e2e(), r.e2e.mean);
    EXPECT_EQ(t.preemptions, 0);
    ExpectTiles(t);
}

TEST(ServeTimelines, ChunksAreSpansOfTheirOwn) {
    ServingConfig c = Base("llama3-8b", 1, 1000, 2, 1);
    c.engine.max_tokens = 256;  // 1000 = 3 x 256 + 232
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 256, 256);
    const ServingResult r = Simulate(c, cost, 100000);
    const RequestTimeline& t = r.timelines.at(0);
    ASSERT_EQ(Count(t, SpanKind::prefill), 4);
    EXPECT_EQ(t.spans[0].tokens + t.spans[1].tokens + t.spans[2].tokens + t.spans[3].tokens, 1000);
    EXPECT_EQ(t.spans[3].tokens, 232);
    EXPECT_EQ(t.first_token, t.spans[3].end);
    EXPECT_EQ(t.ttft(), r.ttft.mean);
    ExpectTiles(t);
}

TEST(ServeTimelines, PreemptionAppearsExactlyWhenTheCacheIsFull) {
    // As Serve.PreemptionHappensExactlyWhenTheCacheIsFull: two requests of 16 + 64 tokens end holding 5 blocks
    // each, so 10 blocks never preempt and 9 must.
    ServingConfig c = Base("llama3-8b", 1, 16, 64, 2);
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 16, c.engine.max_tokens);
    const ServingResult fits = Simulate(c, cost, 10);
    ASSERT_EQ(fits.timelines.size(), 2u);
    for (const RequestTimeline& t : fits.timelines) {
        EXPECT_EQ(t.preemptions, 0);
        EXPECT_EQ(Count(t, SpanKind::preempted), 0);
        ExpectTiles(t);
    }
    const ServingResult full = Simulate(c, cost, 9);
    ASSERT_GE(full.preemptions, 1);
    long long preempted = 0;
    for (const RequestTimeline& t : full.timelines) {
        preempted += t.preemptions;
        EXPECT_EQ(Count(t, SpanKind::preempted), t.preemptions);  // each preemption waits before readmission
        ExpectTiles(t);
    }
    EXPECT_EQ(preempted, full.preemptions);
    // The request admitted last (id 1) is the one preempted, and it recomputes its prompt and output so far.
    const RequestTimeline& victim = full.timelines[1];
    ASSERT_GE(victim.preemptions, 1);
    size_t at = 0;
    while (victim.spans[at].kind != SpanKind::preempted) ++at;
    ASSERT_LT(at + 1, victim.spans.size());
    EXPECT_EQ(victim.spans[at + 1].kind, SpanKind::prefill);
    EXPECT_GT(victim.spans[at + 1].tokens, 16);
}

TEST(ServeTimelines, SpansSumToTheReportedLatenciesUnderLoad) {
    for (Preemption p : {Preemption::recompute, Preemption::swap}) {
        ServingConfig c = Base("llama3-8b", 2, 200, 100, 800);
        c.workload.input = LengthDist::Uniform(50, 800);
        c.workload.output = LengthDist::Uniform(1, 300);
        c.workload.arrival = ArrivalKind::poisson;
        c.workload.rate = 40;
        c.engine.max_seqs = 128;
        c.engine.max_tokens = 2048;
        c.engine.preemption = p;
        c.engine.swap_gbps = 50;
        c.timelines = 800;  // every request
        IterationCost cost(c.model, c.precision, 2, System("dgx-h100-superpod"), &Calibration(), 400, 2048);
        const ServingResult r = Simulate(c, cost, 1200);
        SCOPED_TRACE(NameOf(p));
        ASSERT_EQ(r.timelines.size(), 800u);
        ASSERT_GT(r.preemptions, 0);
        double sum_e2e = 0, sum_ttft = 0, swap_in = 0;
        long long preemptions = 0;
        for (size_t i = 0; i < r.timelines.size(); ++i) {
            const RequestTimeline& t = r.timelines[i];
            EXPECT_EQ(t.id, static_cast<long long>(i));
            ExpectTiles(t);
            sum_e2e += t.e2e();
            sum_ttft += t.ttft();
            preemptions += t.preemptions;
            for (const TimelineSpan& s : t.spans) swap_in += s.swap_in;
        }
        EXPECT_NEAR(sum_e2e, r.sum_e2e, 1e-9 * r.sum_e2e);
        EXPECT_NEAR(sum_e2e / 800, r.e2e.mean, 1e-9 * r.e2e.mean);
        EXPECT_NEAR(sum_ttft / 800, r.ttft.mean, 1e-9 * r.ttft.mean);
        EXPECT_EQ(preemptions, r.preemptions);
        if (p == Preemption::swap) {
            EXPECT_GT(swap_in, 0);
        } else {
            EXPECT_EQ(swap_in, 0);
        }
    }
}

TEST(ServeTimelines, DisaggregatedShowsTheKvTransfer) {
    const sc::System& sys = System("dgx-h100-superpod");
    ServingConfig c = Base("llama3-8b", 1, 900, 40, 1);
    c.decode_pool = PoolConfig{1, 1};
    IterationCost cost(c.model, c.precision, 1, sys, &Calibration(), 900, c.engine.max_tokens);
    const KvTransferModel link =
        KvTransferOn(sys, c.pool, *c.decode_pool, cost.KvBytesPerToken(), cost.KvBytesPerToken());
    const ServingResult r = Simulate(c, PoolModel{&cost, 100000}, PoolModel{&cost, 100000}, link);
    const RequestTimeline& t = r.timelines.at(0);
    ASSERT_EQ(t.spans.size(), 3u);  // prefill on replica 0, the transfer, decode on replica 1
    EXPECT_EQ(t.spans[0].kind, SpanKind::prefill);
    EXPECT_EQ(t.spans[0].replica, 0);
    EXPECT_EQ(t.spans[1].kind, SpanKind::kv_transfer);
    EXPECT_NEAR(t.spans[1].end - t.spans[1].start, link.Seconds(900), 1e-15);
    EXPECT_EQ(t.spans[2].kind, SpanKind::decode);
    EXPECT_EQ(t.spans[2].replica, 1);
    EXPECT_EQ(t.e2e(), r.e2e.mean);
    ExpectTiles(t);
}

TEST(ServeTimelines, TheSampleIsTheFirstNByArrival) {
    ServingConfig c = Base("llama3-8b", 1, 100, 20, 300);
    c.workload.arrival = ArrivalKind::poisson;
    c.workload.rate = 50;
    c.timelines = 5;
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 100, 8192);
    const ServingResult r = Simulate(c, cost, 100000);
    ASSERT_EQ(r.timelines.size(), 5u);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(r.timelines[static_cast<size_t>(i)].id, i);
    EXPECT_LT(r.timelines[0].arrival, r.timelines[4].arrival);
    c.timelines = 0;
    EXPECT_TRUE(Simulate(c, cost, 100000).timelines.empty());
    c.timelines = -1;
    EXPECT_EQ(sctest::ErrorOf([&] { Simulate(c, cost, 100000); }),
              "timelines: must be 0..100000 (requests whose timelines the result keeps), got -1");
}

TEST(ServeTimelines, ChromeTraceHasOneEventPerSpan) {
    engine::ServeRequest q;
    q.config = Base("llama3-8b", 1, 300, 30, 40);
    q.config.workload.arrival = ArrivalKind::poisson;
    q.config.workload.rate = 30;
    q.config.pool.replicas = 2;
    q.config.timelines = 6;
    q.system = &System("dgx-h100-superpod");
    q.calibration = &Calibration();
    const engine::ServeResult run = engine::RunServe(q);
    const nlohmann::json j = nlohmann::json::parse(ServeTimelineChromeJson(q, run));
    size_t spans = 0;
    for (const RequestTimeline& t : run.result.timelines) spans += t.spans.size();
    size_t complete = 0, processes = 0;
    for (const auto& e : j.at("traceEvents")) {
        if (e.at("ph") == "X") {
            ++complete;
            EXPECT_GE(e.at("dur").get<double>(), 0);
            EXPECT_LT(e.at("pid").get<int>(), 2);
        }
        if (e.at("name") == "process_name") ++processes;
    }
    EXPECT_EQ(complete, spans);
    EXPECT_EQ(processes, 2u);
    // The JSON report carries the same timelines.
    const nlohmann::json rep = nlohmann::json::parse(ServeReportJson(q, run));
    ASSERT_EQ(rep.at("result").at("timelines").size(), 6u);
    EXPECT_EQ(rep["result"]["timelines"][0]["e2e_s"].get<double>(), run.result.timelines[0].e2e());
}

TEST(ServeTimelines, TheCliWritesThePerfettoFileAndTheJson) {
    const std::string file = (std::filesystem::temp_directory_path() / "sc_serve_timeline_test.json").string();
    std::filesystem::remove(file);
    const std::string preset = "serve --preset llama3-8b-h100-poisson --set workload.requests=60 --timelines 4";
    sctest::CliResult r = sctest::RunCli(preset + " --json --timeline-json " + file, false);
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json rep = nlohmann::json::parse(r.out);
    ASSERT_EQ(rep["result"]["timelines"].size(), 4u);
    const nlohmann::json trace = nlohmann::json::parse(sctest::ReadFile(file));
    size_t complete = 0, spans = 0;
    for (const auto& e : trace["traceEvents"]) complete += e["ph"] == "X";
    for (const auto& t : rep["result"]["timelines"]) spans += t["spans"].size();
    EXPECT_EQ(complete, spans);
    std::filesystem::remove(file);
    r = sctest::RunCli(preset + " --timelines -1");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--timelines"), std::string::npos) << r.out;
    r = sctest::RunCli(preset + " --rate-sweep 1,2 --timeline-json " + file);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--timeline-json: a rate sweep keeps no timelines"), std::string::npos) << r.out;
}

}  // namespace
