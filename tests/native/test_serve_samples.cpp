// Parallel sampling (Workload::samples, vLLM's n): a request is `samples` sequences of one prompt, queued together;
// with prefix caching the first caches the prompt's full blocks and the others take them. Closed forms of the
// iteration times, the blocks held, the request's TTFT, TPOT and end, Little's law over the sequences, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "config/error.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/workload_gen.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;

// One iteration of prefill chunks (tokens cached before the chunk, tokens computed) and decodes (contexts), each
// yielding a token.
double IterationSeconds(const IterationCost& cost, const std::vector<std::pair<double, double>>& prefills,
                        const std::vector<double>& decodes) {
    BatchShape b;
    for (const auto& [cached, computed] : prefills) b.AddPrefillChunk(cached, computed, 0);
    for (const double ctx : decodes) b.AddDecode(ctx, 0);
    b.logits = static_cast<double>(prefills.size() + decodes.size());
    return cost.Breakdown(b).total();
}

// One request of a 1,000-token prompt and four samples of 20 tokens, all in one iteration: with prefix caching the
// first sample computes the prompt and the three admitted after it take its 62 full blocks (992 tokens; the last
// token's block is computed by each, as vLLM computes at least a prompt's last token), so they compute 8 tokens each.
// Then 19 decodes of four sequences. The request ends with its samples, its TPOT theirs.
TEST(ServeSamples, ARequestsSamplesShareItsPromptAndEndWithTheLast) {
    ServingConfig c = Base("llama3-8b", 1, 1000, 20, 1);
    c.workload.samples = 4;
    c.engine.max_tokens = 16384;
    const IterationCost cost = servetest::H100Cost(c);
    const long long blocks = 10000;
    for (const bool caching : {false, true}) {
        SCOPED_TRACE(caching ? "prefix caching" : "none");
        c.engine.prefix_caching = caching;
        const ServingResult r = Simulate(c, cost, blocks);
        const std::vector<std::pair<double, double>> first =
            caching ? std::vector<std::pair<double, double>>{{0, 1000}, {992, 8}, {992, 8}, {992, 8}}
                    : std::vector<std::pair<double, double>>(4, {0, 1000});
        const double ttft = IterationSeconds(cost, first, {});
        double decodes = 0;
        for (int j = 0; j < 19; ++j) decodes += IterationSeconds(cost, {}, std::vector<double>(4, 1000 + j));
        ASSERT_EQ(r.completed, 1);
        EXPECT_DOUBLE_EQ(r.ttft.max, ttft);
        EXPECT_NEAR(r.e2e.max, ttft + decodes, 1e-12 * r.e2e.max);
        EXPECT_NEAR(r.tpot.mean, decodes / 19, 1e-12 * r.tpot.mean);
        EXPECT_NEAR(r.sum_e2e, 4 * (ttft + decodes), 1e-12 * r.sum_e2e);  // four sequences, each to the end
        EXPECT_DOUBLE_EQ(r.input_tokens_per_s * r.duration, 1000);        // the prompt is the request's, once
        EXPECT_DOUBLE_EQ(r.output_tokens_per_s * r.duration, 4 * 20);     // every sample's tokens
        EXPECT_EQ(r.iterations, 20);
        // At the last decode each sample holds 1,019 tokens, 64 blocks; with caching 62 of them are held once.
        EXPECT_NEAR(r.kv_occupancy_peak * blocks, caching ? 62 + 4 * 2 : 4 * 64, 1e-6);
        EXPECT_EQ(r.prefix_requests, caching ? 4 : 0);
        EXPECT_EQ(r.prefix_gpu_hits, caching ? 3 : 0);
        EXPECT_EQ(r.prefix_sample_hits, caching ? 3 : 0);
        EXPECT_EQ(r.prefix_turn_hits, 0);
        EXPECT_DOUBLE_EQ(r.prefix_tokens_reused, caching ? 3 * 992 : 0);
    }
}

// Samples of their own lengths: the request's TTFT is its first sample's first token, its end its last sample's,
// its TPOT the mean of its samples' (read back from the samples' timelines), and its output every sample's tokens.
TEST(ServeSamples, TheRequestTakesItsFirstTokenLastCompletionAndMeanTpotFromItsSamples) {
    ServingConfig c = Base("llama3-8b", 1, 300, 0, 1);
    c.workload.output = LengthDist::Uniform(5, 60);
    c.workload.samples = 6;
    c.engine.prefix_caching = true;
    const IterationCost cost = servetest::H100Cost(c);
    const ServingResult r = Simulate(c, cost, 10000);
    ASSERT_EQ(r.completed, 1);
    ASSERT_EQ(r.timelines.size(), 6u);  // one per sample
    Rng rng(c.workload.seed);           // the engine's draws: the first sample's output, then the others'
    double first = 1e300, last = 0, tpot = 0, outputs = 0;
    for (const RequestTimeline& t : r.timelines) {
        EXPECT_EQ(t.output, DrawLength(c.workload.output, rng));
        first = std::min(first, t.first_token), last = std::max(last, t.completion);
        tpot += (t.completion - t.first_token) / (t.output - 1) / 6;
        outputs += t.output;
    }
    EXPECT_DOUBLE_EQ(r.ttft.max, first);
    EXPECT_DOUBLE_EQ(r.e2e.max, last);
    EXPECT_NEAR(r.tpot.mean, tpot, 1e-12 * tpot);
    EXPECT_DOUBLE_EQ(r.output_tokens_per_s * r.duration, outputs);
    EXPECT_EQ(r.prefix_sample_hits, 5);
}

TEST(ServeSamples, LittlesLawHoldsOverSequencesUnderLoadAndPreemption) {
    for (const ArrivalKind arrival : {ArrivalKind::poisson, ArrivalKind::closed_loop, ArrivalKind::offline})
        for (const bool caching : {false, true}) {
            SCOPED_TRACE(std::string(NameOf(arrival)) + (caching ? ", prefix caching" : ""));
            ServingConfig c = servetest::Uniform("llama3-8b", 1, 120, {16, 600}, {16, 300}, arrival);
            c.workload.samples = 4;
            c.workload.rate = 20;
            c.workload.concurrency = 8;
            c.engine.prefix_caching = caching;
            const IterationCost cost = servetest::H100Cost(c);
            const ServingResult r = Simulate(c, cost, 300);  // small: preemptions
            EXPECT_EQ(r.completed, 120);
            EXPECT_GT(r.preemptions, 0);
            EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-6 * r.sum_e2e);
            EXPECT_EQ(r.prefix_sample_hits > 0, caching);
        }
}

TEST(ServeSamples, DescriptionsSayWhatIsWrong) {
    ServingConfig c = Base("llama3-8b", 1, 64, 8, 4);
    for (const int bad : {0, kMaxSamples + 1}) {
        c.workload.samples = bad;
        const std::string e = sctest::ErrorOf([&] { ValidateServingConfig(c); });
        EXPECT_NE(e.find("workload.samples"), std::string::npos) << e;
        EXPECT_NE(e.find("1..1024"), std::string::npos) << e;
    }
    c.workload.samples = 4;
    c.workload.turns = 2;
    const std::string e = sctest::ErrorOf([&] { ValidateServingConfig(c); });
    EXPECT_NE(e.find("workload.samples"), std::string::npos) << e;
    EXPECT_NE(e.find("turns"), std::string::npos) << e;
}

}  // namespace
