// Speculative decoding with a draft head (EngineConfig::speculation): closed forms of the steps when every draft is
// accepted and when none is, the accepted tokens against Leviathan et al.'s expectation, and the errors.
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

// One step of a sequence holding `ctx` tokens that verifies `drafts` drafts: its last token and the drafts as a
// chunk with their logits, then the draft head's `drafts` steps that proposed them, one token each.
double VerifySeconds(const IterationCost& cost, double ctx, int drafts) {
    BatchShape b;
    b.AddPrefillChunk(ctx, 1 + drafts, 0);
    b.logits = 1 + drafts;
    double t = cost.Breakdown(b).total();
    for (int s = 0; s < drafts; ++s) {
        BatchShape d;
        d.AddDecode(ctx + s, 0);
        d.logits = 1;
        t += cost.DraftSeconds(d);
    }
    return t;
}

double PrefillSeconds(const IterationCost& cost, double tokens) {
    BatchShape b;
    b.AddPrefillChunk(0, tokens, 0);
    b.logits = 1;
    return cost.Breakdown(b).total();
}

// Every draft accepted: 20 tokens after the first come in five steps of 1 + 3, at contexts 200, 204, ... 216.
TEST(ServeSpeculation, EveryDraftAcceptedGivesOnePlusKTokensAStep) {
    ServingConfig c = Base("llama3-8b", 1, 200, 21, 1);
    c.engine.speculation = {3, 1.0};
    const IterationCost cost = servetest::H100Cost(c);
    const ServingResult r = Simulate(c, cost, 10000);
    ASSERT_EQ(r.completed, 1);
    double expected = PrefillSeconds(cost, 200);
    for (int ctx = 200; ctx <= 216; ctx += 4) expected += VerifySeconds(cost, ctx, 3);
    EXPECT_NEAR(r.e2e.max, expected, 1e-12 * expected);
    EXPECT_EQ(r.iterations, 6);
    EXPECT_EQ(r.spec_steps, 5);
    EXPECT_EQ(r.spec_drafted, 15);
    EXPECT_EQ(r.spec_accepted, 15);
    EXPECT_DOUBLE_EQ(r.output_tokens_per_s * r.duration, 21);
    EXPECT_GT(r.busy.draft, 0);
}

// No draft accepted: one token a step, each paying for its drafts; the drafts shrink to what is left to generate,
// and the last token is a plain decode.
TEST(ServeSpeculation, NoDraftAcceptedGivesOneTokenAStepAndDraftsStopAtTheEnd) {
    ServingConfig c = Base("llama3-8b", 1, 200, 5, 1);
    c.engine.speculation = {2, 0.0};
    const IterationCost cost = servetest::H100Cost(c);
    const ServingResult r = Simulate(c, cost, 10000);
    ASSERT_EQ(r.completed, 1);
    BatchShape last;
    last.AddDecode(203, 0);
    last.logits = 1;
    const double expected = PrefillSeconds(cost, 200) + VerifySeconds(cost, 200, 2) + VerifySeconds(cost, 201, 2) +
                            VerifySeconds(cost, 202, 1) + cost.Breakdown(last).total();
    EXPECT_NEAR(r.e2e.max, expected, 1e-12 * expected);
    EXPECT_EQ(r.spec_steps, 3);
    EXPECT_EQ(r.spec_drafted, 5);
    EXPECT_EQ(r.spec_accepted, 0);

    c.engine.speculation = {};  // without speculation the same request takes four plain decodes, less time
    const ServingResult plain = Simulate(c, cost, 10000);
    EXPECT_EQ(plain.spec_steps, 0);
    EXPECT_LT(plain.e2e.max, r.e2e.max);
}

// Long outputs (drafts cut short only at the end): a step yields (1 - a^(k+1)) / (1 - a) tokens on average.
TEST(ServeSpeculation, AcceptedTokensFollowTheGeometricExpectation) {
    ServingConfig c = Base("llama3-8b", 1, 100, 2001, 20);
    c.engine.speculation = {4, 0.7};
    const IterationCost cost = servetest::H100Cost(c);
    const ServingResult r = Simulate(c, cost, 100000);
    ASSERT_EQ(r.completed, 20);
    const double a = 0.7, expected = (1 - std::pow(a, 5)) / (1 - a);
    const double measured = 1 + static_cast<double>(r.spec_accepted) / r.spec_steps;
    // About 14,400 steps; a step's tokens have a standard deviation near 1.4, so the mean's is about 0.012.
    EXPECT_NEAR(measured, expected, 0.06);
    EXPECT_DOUBLE_EQ(r.output_tokens_per_s * r.duration, 20 * 2001);
    EXPECT_GT(r.spec_steps, 13000);
}

// The workload is drawn apart from the acceptances: turning speculation on leaves every arrival and length as it was.
TEST(ServeSpeculation, TheWorkloadDoesNotMoveWithTheAcceptances) {
    ServingConfig c = servetest::Uniform("llama3-8b", 1, 200, {16, 600}, {16, 300}, ArrivalKind::poisson);
    c.workload.rate = 30;
    const IterationCost cost = servetest::H100Cost(c);
    const ServingResult plain = Simulate(c, cost, 100000);
    c.engine.speculation = {3, 0.6};
    const ServingResult spec = Simulate(c, cost, 100000);
    ASSERT_EQ(plain.completed, 200);
    ASSERT_EQ(spec.completed, 200);
    EXPECT_DOUBLE_EQ(plain.input_tokens_per_s * plain.duration, spec.input_tokens_per_s * spec.duration);
    EXPECT_DOUBLE_EQ(plain.output_tokens_per_s * plain.duration, spec.output_tokens_per_s * spec.duration);
    ASSERT_FALSE(plain.timelines.empty());
    for (size_t i = 0; i < plain.timelines.size(); ++i) {
        EXPECT_EQ(plain.timelines[i].arrival, spec.timelines[i].arrival);
        EXPECT_EQ(plain.timelines[i].output, spec.timelines[i].output);
    }
    EXPECT_NEAR(spec.mean_in_system * spec.duration, spec.sum_e2e, 1e-6 * spec.sum_e2e);  // Little's law
}

TEST(ServeSpeculation, DescriptionsSayWhatIsWrong) {
    ServingConfig c = Base("llama3-8b", 1, 64, 8, 4);
    auto error = [&](Speculation s) {
        c.engine.speculation = s;
        return sctest::ErrorOf([&] { ValidateServingConfig(c); });
    };
    EXPECT_NE(error({65, 0.5}).find("engine.speculation.tokens"), std::string::npos);
    EXPECT_NE(error({-1, 0.5}).find("engine.speculation.tokens"), std::string::npos);
    EXPECT_NE(error({2, 1.5}).find("engine.speculation.acceptance"), std::string::npos);
    EXPECT_NE(error({2, std::nan("")}).find("engine.speculation.acceptance"), std::string::npos);
    c.model = servetest::Model("nemotron-3-nano");
    const std::string hybrid = error({2, 0.8});
    EXPECT_NE(hybrid.find("engine.speculation"), std::string::npos) << hybrid;
    EXPECT_NE(hybrid.find("hybrid"), std::string::npos) << hybrid;

    const std::string head = R"({"model": "llama3-8b", "system": "dgx-h100-superpod", "engine": {"speculation": )";
    const std::string tail = R"(}, "workload": {"requests": 4, "input": {"tokens": 64}, "output": {"tokens": 8}}})";
    const ServingDescription d = ParseServingDescription(head + R"({"tokens": 3, "acceptance": 0.8})" + tail);
    EXPECT_EQ(d.config.engine.speculation.tokens, 3);
    EXPECT_DOUBLE_EQ(d.config.engine.speculation.acceptance, 0.8);
    const std::string missing = sctest::ErrorOf([&] { ParseServingDescription(head + R"({"tokens": 3})" + tail); });
    EXPECT_NE(missing.find("engine.speculation.acceptance"), std::string::npos) << missing;
}

}  // namespace
