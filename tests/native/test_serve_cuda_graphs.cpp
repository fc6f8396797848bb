// Decode CUDA graphs with padding (EngineConfig::cuda_graph_batch_sizes, description "engine.cuda_graph_batch_sizes",
// link key serve.cuda_graphs): an iteration of decodes only replays the captured graph of the smallest size at or
// above its sequences, its other rows dummy requests of one cached token; under data-parallel attention every GPU
// replays the graph of the busiest GPU's count. Against closed forms of the cost model.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/serve.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/serving_parse.h"
#include "report/serve_report.h"
#include "serve_test_util.h"
#include "test_util.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::System;

// One decode of a sequence with `context` tokens cached, beside `dummies` padding rows of one cached token each.
BatchShape Padded(double context, int dummies) {
    BatchShape b;
    b.AddDecode(context, 0);
    for (int i = 0; i < dummies; ++i) b.AddDecode(1, 0);
    b.logits = 1 + dummies;
    return b;
}

// Llama 3 8B on one H100: `requests` of `input` and `output` tokens, all queued, with the graph sizes `sizes`.
ServingConfig Llama8b(int input, int output, long long requests, std::vector<int> sizes) {
    ServingConfig c = Base("llama3-8b", 1, input, output, requests);
    c.engine.cuda_graph_batch_sizes = std::move(sizes);
    return c;
}

// Simulates `c` on one GPU of a DGX H100, its iteration costs read at prompts of `input` tokens.
ServingResult SimulateOnH100(const ServingConfig& c, int input) {
    const IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), input,
                             c.engine.max_tokens);
    return Simulate(c, cost, 100000);
}

// One request alone: its prefill runs eagerly at its own size; each of its decodes replays the graph of 4 rows
// (sizes {4, 8}), three of them dummies; with a graph of one row it runs exactly as without graphs.
TEST(ServeCudaGraphs, ALoneDecodeRunsAtTheSmallestCapturedSize) {
    const ServingResult eager = SimulateOnH100(Llama8b(700, 33, 1, {}), 700);
    const ServingConfig c = Llama8b(700, 33, 1, {4, 8});
    const ServingResult r = SimulateOnH100(c, 700);
    const IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 700,
                             c.engine.max_tokens);
    ASSERT_EQ(r.completed, 1);
    EXPECT_NEAR(r.ttft.mean, cost.PrefillSeconds(700), 1e-12);
    double decode = 0;
    for (int k = 1; k < 33; ++k) decode += cost.Breakdown(Padded(700 + k - 1, 3)).total();
    EXPECT_NEAR(r.tpot.mean, decode / 32, 1e-12);
    EXPECT_GT(r.tpot.mean, eager.tpot.mean);
    EXPECT_EQ(r.graph_iterations, 32);
    EXPECT_DOUBLE_EQ(r.graph_real_rows, 32);
    EXPECT_DOUBLE_EQ(r.graph_dummy_rows, 96);
    const ServingResult one = SimulateOnH100(Llama8b(700, 33, 1, {1, 2}), 700);
    EXPECT_DOUBLE_EQ(one.tpot.mean, eager.tpot.mean);
    EXPECT_DOUBLE_EQ(one.duration, eager.duration);
    EXPECT_EQ(one.graph_iterations, 32);
    EXPECT_DOUBLE_EQ(one.graph_dummy_rows, 0);
}

// Under speculative decoding a verifying step replays a graph too, its dummies carrying the draft tokens: one
// request alone with a graph of 4 pads every verifying step with 3 dummies; a graph of one runs as without graphs.
TEST(ServeCudaGraphs, AVerifyingStepPadsWithDummiesCarryingTheDrafts) {
    ServingConfig c = Llama8b(700, 40, 1, {});
    c.engine.speculation.tokens = 2, c.engine.speculation.acceptance = 0.8;
    const ServingResult eager = SimulateOnH100(c, 700);
    c.engine.cuda_graph_batch_sizes = {1};
    const ServingResult one = SimulateOnH100(c, 700);
    EXPECT_DOUBLE_EQ(one.duration, eager.duration);
    EXPECT_EQ(one.graph_iterations, one.iterations - 1);  // every step after the prompt's
    c.engine.cuda_graph_batch_sizes = {4};
    const ServingResult r = SimulateOnH100(c, 700);
    EXPECT_EQ(r.iterations, eager.iterations);  // the same draws: padding changes times, not tokens
    EXPECT_EQ(r.graph_iterations, r.iterations - 1);
    EXPECT_DOUBLE_EQ(r.graph_real_rows, static_cast<double>(r.graph_iterations));
    EXPECT_DOUBLE_EQ(r.graph_dummy_rows, 3.0 * static_cast<double>(r.graph_iterations));
    EXPECT_GT(r.duration, eager.duration);
    // BatchShape::Add sums every field: three dummies of one token and two drafts add 9 tokens, 9 logits, 3 sequences.
    BatchShape padded, single;
    padded.AddPrefillChunk(720, 3, 0);
    padded.logits = 3;
    single = padded;
    BatchShape dummy;
    dummy.AddPrefillChunk(1, 3, 0);
    dummy.logits = 3;
    padded.Add(dummy, 3);
    EXPECT_DOUBLE_EQ(padded.prefill_tokens, 12);
    EXPECT_DOUBLE_EQ(padded.sequences, 4);
    EXPECT_DOUBLE_EQ(padded.logits, 12);
    EXPECT_DOUBLE_EQ(padded.prefill_keys, single.prefill_keys + 3 * dummy.prefill_keys);
}

// Four sequences decoding together are above a largest graph of two: they run eagerly, unpadded, as without
// graphs; the iteration holding the prompts never replays a graph.
TEST(ServeCudaGraphs, ABatchAboveTheLargestGraphOrWithPromptsRunsEagerly) {
    const ServingResult eager = SimulateOnH100(Llama8b(100, 10, 4, {}), 100);
    const ServingResult r = SimulateOnH100(Llama8b(100, 10, 4, {1, 2}), 100);
    EXPECT_EQ(r.graph_iterations, 0);
    EXPECT_DOUBLE_EQ(r.duration, eager.duration);
    const ServingResult fits = SimulateOnH100(Llama8b(100, 10, 4, {1, 2, 4}), 100);
    EXPECT_EQ(fits.iterations, 10);  // one with the four prompts, nine of four decodes
    EXPECT_EQ(fits.graph_iterations, 9);
    EXPECT_DOUBLE_EQ(fits.graph_dummy_rows, 0);
    EXPECT_DOUBLE_EQ(fits.duration, eager.duration);
}

// Three sequences on a data-parallel group of two GPUs: the balancer puts two on one GPU and one on the other, and
// both replay the graph of two rows, so each decode iteration computes one dummy row.
TEST(ServeCudaGraphs, EveryGpuOfADataParallelGroupReplaysTheBusiestGpusSize) {
    ServingConfig c = Base("mixtral-8x7b", 2, 100, 10, 3);
    c.pool.ep = 2;
    c.pool.attention_dp = true;
    c.engine.cuda_graph_batch_sizes = {1, 2, 4};
    const ServingRun run = SimulateServing(c, System("dgx-h100-superpod"), &Calibration());
    const ServingResult& r = run.result;
    EXPECT_EQ(r.graph_iterations, 9);
    EXPECT_DOUBLE_EQ(r.graph_real_rows, 27);
    EXPECT_DOUBLE_EQ(r.graph_dummy_rows, 9);
    c.engine.cuda_graph_batch_sizes.clear();
    EXPECT_GT(r.duration, SimulateServing(c, System("dgx-h100-superpod"), &Calibration()).result.duration);
}

// The engine captures the sizes an iteration of decodes can reach, and with padding the largest such batch too
// (TensorRT-LLM's _filter_cuda_graph_batch_sizes): the perf overview's list under a batch limit of 160 captures 1-128
// and 160; under 384 it stops at 384, which is listed; a token budget binds as a batch limit does.
TEST(ServeCudaGraphs, TheEngineCapturesTheSizesItsLimitsReach) {
    EngineConfig e;
    e.cuda_graph_batch_sizes = kTrtllmBenchGraphSizes;
    e.max_tokens = 8192;
    e.max_seqs = 160;
    EXPECT_EQ(CapturedGraphSizes(e), (std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 160}));
    e.max_seqs = 384;
    EXPECT_EQ(CapturedGraphSizes(e), (std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256, 384}));
    e.max_seqs = 2048, e.max_tokens = 1000;
    EXPECT_EQ(CapturedGraphSizes(e), (std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1000}));
    e.speculation.tokens = 3, e.max_tokens = 64;  // a decode feeds 4 tokens: 16 fit the budget
    EXPECT_EQ(CapturedGraphSizes(e), (std::vector<int>{1, 2, 4, 8, 16}));
    e.cuda_graph_batch_sizes.clear();
    EXPECT_TRUE(CapturedGraphSizes(e).empty());
}

// Six sequences under a batch limit of 6 and a listed graph of 8: the engine pads to the 6 it captured instead.
TEST(ServeCudaGraphs, ABatchLimitBelowAListedSizeIsTheGraphPaddedTo) {
    ServingConfig c = Base("llama3-8b", 1, 100, 10, 6);
    c.engine.max_seqs = 6;
    c.engine.cuda_graph_batch_sizes = {4, 8};
    const ServingRun run = SimulateServing(c, System("dgx-h100-superpod"), &Calibration());
    EXPECT_EQ(run.result.graph_iterations, 9);
    EXPECT_DOUBLE_EQ(run.result.graph_dummy_rows, 0);
}

TEST(ServeCudaGraphs, DescriptionsListTheSizesAndBadListsAreRefused) {
    const std::string head = R"({"model":"llama3-8b","system":"dgx-h100-superpod","engine":{"cuda_graph_batch_sizes":)";
    const std::string tail = R"(},"workload":{"requests":10,"input":{"distribution":"fixed","tokens":100},
        "output":{"distribution":"fixed","tokens":10}}})";
    EXPECT_EQ(ParseServingDescription(head + "[1,2,4,384]" + tail).config.engine.cuda_graph_batch_sizes,
              (std::vector<int>{1, 2, 4, 384}));
    EXPECT_TRUE(ParseServingDescription(head + "[]" + tail).config.engine.cuda_graph_batch_sizes.empty());
    struct Case {
        const char* list;
        const char* error;
    };
    for (const Case& k : std::vector<Case>{
             {"[1,4,2]", "engine.cuda_graph_batch_sizes[2]: sizes go up: 2 after 4"},
             {"[1,1]", "engine.cuda_graph_batch_sizes[1]: sizes go up: 1 after 1"},
             {"[0]", "engine.cuda_graph_batch_sizes[0]: must be a whole batch size from 1 to 1048576, got 0"},
             {"[2.5]", "engine.cuda_graph_batch_sizes[0]: must be a whole batch size from 1 to 1048576, got 2.5"},
             {"[\"8\"]", "engine.cuda_graph_batch_sizes[0]: must be a whole batch size"},
             {"[4194304]", "engine.cuda_graph_batch_sizes[0]: must be a whole batch size from 1 to 1048576"},
             {"8", "engine.cuda_graph_batch_sizes: expected an array"},
         }) {
        const std::string e = sctest::ErrorOf([&] { ParseServingDescription(head + k.list + tail); });
        EXPECT_EQ(e.rfind(k.error, 0), 0u) << k.list << ": " << e;
    }
    ServingConfig c = Base("llama3-8b", 1, 100, 10, 10);
    c.engine.cuda_graph_batch_sizes = {8, 4};
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }).rfind("engine.cuda_graph_batch_sizes[1]: ", 0), 0u);
}

TEST(ServeCudaGraphs, TheReportSaysHowManyIterationsReplayedAGraph) {
    engine::ServeRequest req;
    req.config = Base("llama3-8b", 1, 512, 17, 1);
    req.config.engine.cuda_graph_batch_sizes = {4};
    req.system = &System("dgx-h100-superpod");
    req.calibration = &Calibration();
    const engine::ServeResult run = engine::RunServe(req);
    const std::string text = ServeReportText(req, run);
    EXPECT_NE(text.find(", decode CUDA graphs padded to 1 captured size up to 4"), std::string::npos) << text;
    EXPECT_NE(text.find("cuda graphs    16 of 17 iterations replayed a captured decode graph; padding rows were "
                        "75.0% of the decode rows those iterations computed"),
              std::string::npos)
        << text;
    const nlohmann::json j = nlohmann::json::parse(ServeReportJson(req, run));
    EXPECT_EQ(j["result"]["graph_iterations"], 16);
    EXPECT_EQ(j["result"]["graph_dummy_rows"], 48.0);
}

}  // namespace
