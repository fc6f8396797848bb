// Retrieval before the prompt (Workload::retrieval, RAG): closed forms of a request's time through the retrieval
// service and its longer prompt, the service's queue, Little's law with requests in retrieval, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "config/error.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/serving_parse.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;

// One request: 50 ms at the retrieval service, then the prefill of its 300 tokens and five passages of 100.
TEST(ServeRetrieval, ARequestWaitsForItsQueryThenPrefillsThePassagesWithItsInput) {
    ServingConfig c = Base("llama3-8b", 1, 300, 1, 1);
    c.workload.retrieval = {5, 100, 0.05, 1};
    const IterationCost cost = servetest::H100Cost(c);
    const ServingResult r = Simulate(c, cost, 10000);
    ASSERT_EQ(r.completed, 1);
    BatchShape b;
    b.AddPrefillChunk(0, 800, 0);
    b.logits = 1;
    EXPECT_DOUBLE_EQ(r.ttft.max, 0.05 + cost.Breakdown(b).total());
    EXPECT_DOUBLE_EQ(r.input_tokens_per_s * r.duration, 800);
    EXPECT_EQ(r.retrievals, 1);
    EXPECT_DOUBLE_EQ(r.retrieval_wait_mean, 0);
    ASSERT_EQ(r.timelines.size(), 1u);
    const TimelineSpan& first = r.timelines[0].spans.front();
    EXPECT_EQ(first.kind, SpanKind::retrieval);
    EXPECT_DOUBLE_EQ(first.end - first.start, 0.05);
    EXPECT_EQ(first.replica, 1);  // after the pool's one scheduler
}

// Ten requests queued at time 0 on three servers of 0.5 s: the k-th starts at floor(k / 3) x 0.5 s.
TEST(ServeRetrieval, TheServiceServesItsQueueFirstComeFirstServed) {
    ServingConfig c = Base("llama3-8b", 1, 64, 4, 10);
    c.workload.retrieval = {2, 64, 0.5, 3};
    const IterationCost cost = servetest::H100Cost(c);
    const ServingResult r = Simulate(c, cost, 10000);
    ASSERT_EQ(r.completed, 10);
    EXPECT_EQ(r.retrievals, 10);
    EXPECT_NEAR(r.retrieval_wait_mean, 0.5 * (0 + 0 + 0 + 1 + 1 + 1 + 2 + 2 + 2 + 3) / 10, 1e-12);
    EXPECT_NEAR(r.retrieval_utilization, 10 * 0.5 / (3 * r.duration), 1e-12);
    EXPECT_GT(r.duration, 2.0);  // the last query ends at 2 s
    EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-9 * r.sum_e2e);
}

TEST(ServeRetrieval, LittlesLawCountsRequestsInRetrieval) {
    for (const int variant : {0, 1, 2}) {
        SCOPED_TRACE(variant);
        ServingConfig c = servetest::Uniform("llama3-8b", 1, 150, {16, 400}, {16, 200},
                                             variant == 2 ? ArrivalKind::closed_loop : ArrivalKind::poisson);
        c.workload.rate = 25;
        c.workload.concurrency = 6;
        c.workload.retrieval = {4, 128, 0.03, 2};
        if (variant == 0) c.workload.turns = 2, c.workload.think = 0.2, c.engine.prefix_caching = true;
        if (variant == 1) c.workload.samples = 3, c.engine.prefix_caching = true;
        const IterationCost cost = servetest::H100Cost(c);
        const ServingResult r = Simulate(c, cost, 400);
        EXPECT_EQ(r.completed, variant == 0 ? 300 : 150);
        EXPECT_EQ(r.retrievals, variant == 0 ? 300 : 150);  // every turn queries; a request's samples share one
        EXPECT_GT(r.retrieval_wait_mean, 0);
        EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-6 * r.sum_e2e);
    }
}

TEST(ServeRetrieval, DescriptionsSayWhatIsWrong) {
    ServingConfig c = Base("llama3-8b", 1, 64, 8, 4);
    auto error = [&](Retrieval r) {
        c.workload.retrieval = r;
        return sctest::ErrorOf([&] { ValidateServingConfig(c); });
    };
    EXPECT_NE(error({-1, 10, 0.1, 1}).find("workload.retrieval.documents"), std::string::npos);
    EXPECT_NE(error({4, 0, 0.1, 1}).find("workload.retrieval.tokens"), std::string::npos);
    EXPECT_NE(error({4, 10, -1, 1}).find("workload.retrieval.seconds"), std::string::npos);
    EXPECT_NE(error({4, 10, std::nan(""), 1}).find("workload.retrieval.seconds"), std::string::npos);
    EXPECT_NE(error({4, 10, 0.1, 0}).find("workload.retrieval.servers"), std::string::npos);
    const std::string big = error({1 << 20, 1 << 10, 0.1, 1});
    EXPECT_NE(big.find("workload.retrieval.tokens"), std::string::npos) << big;
    c.workload.arrival = ArrivalKind::trace;
    c.workload.trace = {TraceRequest{0, 64, 8, 0}};
    c.workload.requests = 1;
    const std::string traced = error({4, 10, 0.1, 1});
    EXPECT_NE(traced.find("workload.retrieval"), std::string::npos) << traced;
    EXPECT_NE(traced.find("trace"), std::string::npos) << traced;

    const std::string head = R"({"model": "llama3-8b", "system": "dgx-h100-superpod", "workload": {"requests": 4, )"
                             R"("input": {"tokens": 64}, "output": {"tokens": 8}, "retrieval": )";
    const ServingDescription d =
        ParseServingDescription(head + R"({"documents": 5, "tokens": 128, "seconds": 0.001, "servers": 4}}})");
    EXPECT_EQ(d.config.workload.retrieval.documents, 5);
    EXPECT_EQ(d.config.workload.retrieval.tokens, 128);
    EXPECT_DOUBLE_EQ(d.config.workload.retrieval.seconds, 0.001);
    EXPECT_EQ(d.config.workload.retrieval.servers, 4);
    const std::string missing =
        sctest::ErrorOf([&] { ParseServingDescription(head + R"({"documents": 5, "tokens": 128}}})"); });
    EXPECT_NE(missing.find("workload.retrieval.seconds"), std::string::npos) << missing;
}

}  // namespace
