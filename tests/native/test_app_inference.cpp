// The page's Serving tab (src/app/inference_driver.*, panel_inference.cpp), built natively: picking a serving
// preset picks its model and cluster, and one simulation prints exactly what `stagecraft serve --preset` prints;
// the rate sweep run in frame slices equals the CLI's --rate-sweep at the same rates; the tab draws.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/app.h"
#include "app/app_state.h"
#include "app/imgui_bridge.h"
#include "app/inference_driver.h"
#include "app/pool_jobs.h"
#include "app/serve_link.h"
#include "page_driver.h"
#include "report/serve_report.h"
#include "test_util.h"

namespace {

using pagetest::App;
using pagetest::IndexOf;
using pagetest::kRoot;
using pagetest::OpenPage;
using pagetest::Page;

std::string Cli(const std::string& args) {
    const sctest::CliResult r = sctest::RunCli(args, false);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.out;
    return r.out;
}

TEST(AppInference, EveryServingPresetParsesAndIsListed) {
    App s = OpenPage();
    EXPECT_EQ(s->inference.presets.size(), IndexOf("inference").size());
    EXPECT_TRUE(s->inference.has_config);
}

TEST(AppInference, OneSimulationPrintsWhatTheCliPrints) {
    for (const std::string& file : IndexOf("inference")) {
        App s = OpenPage();
        ASSERT_TRUE(sc::app::SelectServingPreset(*s, file)) << file;
        ASSERT_EQ(s->inference.error, "") << file;
        const std::string id = file.substr(0, file.size() - 5);
        // Picking the preset picked its model and cluster.
        const auto preset = nlohmann::json::parse(sctest::ReadFile(kRoot + "/presets/inference/" + file));
        EXPECT_EQ(s->presets[s->preset_index].file, preset.at("model").get<std::string>() + ".json");
        EXPECT_EQ(s->systems[s->system_index].file, preset.at("system").get<std::string>() + ".json");
        pagetest::RunServingToEnd(*s);
        ASSERT_EQ(s->inference.error, "") << file;
        ASSERT_TRUE(s->inference.has_result);
        EXPECT_EQ(s->inference.report, Cli("serve --preset " + id)) << file;
    }
}

// A simulation runs a slice per frame (StepServe), so a long one never stops the page: 100,000 requests take
// many slices, the tab says how far it is, and the report at the end is the CLI's. (It ran whole inside the frame
// that started it: a million requests stopped the page for about 10 s.)
TEST(AppInference, ALongSimulationRunsInFrameSlices) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-poisson.json"));
    s->inference.config.workload.requests = 100000;
    sc::app::RunInference(*s);
    ASSERT_EQ(s->inference.error, "");
    ASSERT_TRUE(s->inference.running);
    int slices = 0;
    double progress = 0;
    while (s->inference.running) {
        EXPECT_FALSE(s->inference.has_result);
        EXPECT_GE(s->inference.running->Progress(), progress);
        progress = s->inference.running->Progress();
        sc::app::StepServe(*s, 0.001);
        ++slices;
    }
    EXPECT_GT(slices, 5);
    ASSERT_TRUE(s->inference.has_result);
    EXPECT_EQ(s->inference.report, Cli("serve --preset llama3-8b-h100-poisson --set workload.requests=100000"));
}

TEST(AppInference, AnEditedFieldIsSimulatedAsTheCliSetsIt) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-poisson.json"));
    s->inference.config.workload.rate = 8;
    s->inference.config.pool.replicas = 1;
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report,
              Cli("serve --preset llama3-8b-h100-poisson --set workload.rate=8 --set pool.replicas=1"));
}

// Pipeline stages, expert groups and the timeline sample travel in the page's link (serve.pp, serve.ep,
// serve.decode_pp, serve.decode_ep, serve.timelines) and are simulated as the CLI's --set simulates them.
TEST(AppInference, PipelineAndExpertSplitsTravelInTheLink) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-poisson.json"));
    sc::app::SetPoolWorkers(*s, 2);  // PoolLink gives the page's link only when it has workers
    s->inference.config.pool.pp = 2;
    s->inference.config.timelines = 3;
    s->inference.config.decode_pool = s->inference.config.pool;
    s->inference.config.decode_pool->pp = 4;
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, sc::app::PoolLink(*s)), "");
    const sc::engine::ServeRequest r = sc::app::CurrentServeRequest(*other);
    EXPECT_EQ(r.config.pool.pp, 2);
    EXPECT_EQ(r.config.timelines, 3);
    ASSERT_TRUE(r.config.decode_pool.has_value());
    EXPECT_EQ(r.config.decode_pool->pp, 4);
    s->inference.config.decode_pool.reset();
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report, Cli("serve --preset llama3-8b-h100-poisson --set pool.pp=2 --timelines 3"));
    s->inference.config.pool.ep = 2;  // a dense model has no experts to split
    pagetest::RunServingToEnd(*s);
    EXPECT_NE(s->inference.error.find("pool.ep: ep=2 splits experts"), std::string::npos) << s->inference.error;
}

// The pool's all-reduce (the tab's "TensorRT-LLM all-reduce") travels in the link as serve.all_reduce and runs as the
// CLI's --set pool.all_reduce runs it; the report names the curve it read.
TEST(AppInference, TheEnginesAllReduceTravelsInTheLinkAndRunsAsTheCliRunsIt) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-70b-h100x8-fp8-offline.json"));
    sc::app::SetPoolWorkers(*s, 2);
    s->inference.config.workload.requests = 200;
    ASSERT_EQ(s->inference.config.pool.all_reduce, sc::EngineAllReduce::tensorrt_llm);
    s->inference.config.pool.all_reduce = sc::EngineAllReduce::nccl;
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, sc::app::PoolLink(*s)), "");
    EXPECT_NE(sc::app::PoolLink(*s).find("serve.all_reduce=nccl"), std::string::npos) << sc::app::PoolLink(*s);
    EXPECT_EQ(sc::app::CurrentServeRequest(*other).config.pool.all_reduce, sc::EngineAllReduce::nccl);
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report, Cli("serve --preset llama3-70b-h100x8-fp8-offline --set workload.requests=200 "
                                       "--set pool.all_reduce=nccl"));
    EXPECT_NE(s->inference.report.find("all-reduce   NCCL, measured"), std::string::npos) << s->inference.report;
    s->inference.config.pool.all_reduce = sc::EngineAllReduce::tensorrt_llm;
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report, Cli("serve --preset llama3-70b-h100x8-fp8-offline --set workload.requests=200"));
    EXPECT_NE(s->inference.report.find("aiconf-trtllm1.3.0rc20-h100-sxm-allreduce-8gpu-auto"), std::string::npos);
}

// Data-parallel attention (the tab's "attention DP") travels in the link as serve.attention_dp and runs as the CLI's
// --set pool.attention_dp runs it.
TEST(AppInference, AttentionDpTravelsInTheLinkAndRunsAsTheCliRunsIt) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "deepseek-v3-h200x8-fp8-dp-attention.json"));
    sc::app::SetPoolWorkers(*s, 2);
    s->inference.config.workload.requests = 100;
    s->inference.config.pool.attention_dp = false;
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, sc::app::PoolLink(*s)), "");
    EXPECT_NE(sc::app::PoolLink(*s).find("serve.attention_dp=0"), std::string::npos) << sc::app::PoolLink(*s);
    EXPECT_FALSE(sc::app::CurrentServeRequest(*other).config.pool.attention_dp);
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report, Cli("serve --preset deepseek-v3-h200x8-fp8-dp-attention --set workload.requests=100 "
                                       "--set pool.attention_dp=false"));
    s->inference.config.pool.attention_dp = true;
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report,
              Cli("serve --preset deepseek-v3-h200x8-fp8-dp-attention --set workload.requests=100"));
    EXPECT_NE(s->inference.report.find("attention DP8, EP8"), std::string::npos);
}

// int4 weights (the tab's "int4 g128") travel in the link as serve.int4_group and are simulated as the CLI's
// --set precision.weights=int4 simulates them (W4A16: the GEMMs at the activations' bf16).
TEST(AppInference, Int4WeightsTravelInTheLink) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-poisson.json"));
    sc::app::SetPoolWorkers(*s, 2);
    s->inference.config.precision.int4 = sc::Int4Weights{};
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, sc::app::PoolLink(*s)), "");
    const sc::engine::ServeRequest r = sc::app::CurrentServeRequest(*other);
    ASSERT_TRUE(r.config.precision.int4.has_value());
    EXPECT_EQ(r.config.precision.int4->group_size, 128);
    EXPECT_EQ(r.config.precision.compute, sc::Precision::bf16);
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report, Cli("serve --preset llama3-8b-h100-poisson --set precision.weights=int4"));
    EXPECT_NE(s->inference.report.find("int4 g128 weights"), std::string::npos);
}

// MXFP4 experts (the tab's "mxfp4") travel in the link as serve.mxfp4 and are simulated as the CLI's
// --set precision.weights=mxfp4 simulates them (an MoE model's: Nemotron 3 Nano's 128 experts).
TEST(AppInference, Mxfp4WeightsTravelInTheLink) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "nemotron-3-nano-h100-poisson.json"));
    sc::app::SetPoolWorkers(*s, 2);
    s->inference.config.precision.int4 = sc::kMxfp4;
    const std::string link = sc::app::PoolLink(*s);
    EXPECT_NE(link.find("serve.mxfp4=1"), std::string::npos) << link;
    EXPECT_EQ(link.find("serve.int4_group"), std::string::npos) << link;
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, link), "");
    const sc::engine::ServeRequest r = sc::app::CurrentServeRequest(*other);
    ASSERT_TRUE(r.config.precision.int4.has_value());
    EXPECT_TRUE(r.config.precision.int4->mxfp4());
    EXPECT_EQ(r.config.precision.compute, sc::Precision::bf16);
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report, Cli("serve --preset nemotron-3-nano-h100-poisson --set precision.weights=mxfp4"));
    EXPECT_NE(s->inference.report.find("mxfp4 weights"), std::string::npos);
}

// Block-scaled fp8 (the tab's "fp8 (128x128 blocks)") travels as serve.fp8_block; turned off on a DeepSeek preset,
// the page simulates what the CLI's --set precision.fp8_scaling=tensor simulates.
TEST(AppInference, Fp8BlockScalingTravelsInTheLink) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "deepseek-v3-h200x8-fp8-dp-attention.json"));
    sc::app::SetPoolWorkers(*s, 2);
    ASSERT_EQ(s->inference.config.precision.fp8_scaling, sc::Fp8Scaling::block);
    s->inference.config.precision.fp8_scaling = sc::Fp8Scaling::tensor;
    const std::string link = sc::app::PoolLink(*s);
    EXPECT_NE(link.find("serve.fp8_block=0"), std::string::npos) << link;
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, link), "");
    EXPECT_EQ(sc::app::CurrentServeRequest(*other).config.precision.fp8_scaling, sc::Fp8Scaling::tensor);
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report,
              Cli("serve --preset deepseek-v3-h200x8-fp8-dp-attention --set precision.fp8_scaling=tensor"));
    EXPECT_NE(s->inference.report.find("fp8 weights, fp8 GEMMs"), std::string::npos);
}

// Shared prefixes, conversations and prefix caching travel in the link (serve.prefixes, serve.prefix_tokens,
// serve.turns, serve.prefix_caching);
// turned off, prefix caching takes the preset's host tier with it, and either way the page simulates what the CLI's
// --set simulates.
TEST(AppInference, PrefixCachingTravelsInTheLinkAndRunsAsTheCliRunsIt) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-shared-prefix.json"));
    sc::app::SetPoolWorkers(*s, 2);
    s->inference.config.workload.requests = 128;
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    const std::string on = Cli("serve --preset llama3-8b-h100-shared-prefix --set workload.requests=128");
    EXPECT_EQ(s->inference.report, on);
    EXPECT_NE(on.find("prefix cache   "), std::string::npos) << on;

    sc::app::SetPrefixCaching(s->inference.config, false, s->inference.config.engine);
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, sc::app::PoolLink(*s)), "");
    const sc::engine::ServeRequest r = sc::app::CurrentServeRequest(*other);
    EXPECT_FALSE(r.config.engine.prefix_caching);
    EXPECT_EQ(r.config.engine.host_cache_gib, 0);
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    EXPECT_EQ(s->inference.report, Cli("serve --preset llama3-8b-h100-shared-prefix --set workload.requests=128 "
                                       "--set engine.prefix_caching=false --set engine.host_cache_gib=0"));
    EXPECT_EQ(s->inference.report.find("prefix cache   "), std::string::npos);

    // A workload without prefixes gets them in the tab (serve.prefixes, serve.prefix_tokens) and caches them.
    App t = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*t, "llama3-8b-h100-poisson.json"));
    sc::app::SetPoolWorkers(*t, 2);
    t->inference.config.workload.requests = 200;
    t->inference.config.workload.prefixes = {8, 512, 0};
    t->inference.config.workload.turns = 2;
    t->inference.config.engine.prefix_caching = true;
    App third = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*third, sc::app::PoolLink(*t)), "");
    const sc::ServingConfig got = sc::app::CurrentServeRequest(*third).config;
    EXPECT_EQ(got.workload.prefixes.count, 8);
    EXPECT_EQ(got.workload.prefixes.tokens, 512);
    EXPECT_TRUE(got.engine.prefix_caching);
    EXPECT_EQ(got.workload.turns, 2);
    pagetest::RunServingToEnd(*t);
    ASSERT_EQ(t->inference.error, "");
    EXPECT_EQ(t->inference.report,
              Cli("serve --preset llama3-8b-h100-poisson --set workload.requests=200 --set workload.prefixes.count=8 "
                  "--set workload.prefixes.tokens=512 --set engine.prefix_caching=true --set workload.turns=2"));
    EXPECT_NE(t->inference.report.find("earlier turns"), std::string::npos) << t->inference.report;
}

// Parallel sampling travels in the link (serve.samples) and the page simulates what the CLI's --set simulates.
TEST(AppInference, SamplesTravelInTheLinkAndRunAsTheCliRunsThem) {
    App t = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*t, "llama3-8b-h100-poisson.json"));
    sc::app::SetPoolWorkers(*t, 2);
    t->inference.config.workload.requests = 100;
    t->inference.config.workload.samples = 4;
    t->inference.config.engine.prefix_caching = true;
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, sc::app::PoolLink(*t)), "");
    EXPECT_EQ(sc::app::CurrentServeRequest(*other).config.workload.samples, 4);
    pagetest::RunServingToEnd(*t);
    ASSERT_EQ(t->inference.error, "");
    const std::string cli =
        Cli("serve --preset llama3-8b-h100-poisson --set workload.requests=100 --set workload.samples=4 "
            "--set engine.prefix_caching=true");
    EXPECT_EQ(t->inference.report, cli);
    EXPECT_NE(cli.find("4 samples of each prompt"), std::string::npos) << cli;
    EXPECT_NE(cli.find("other samples' prompts"), std::string::npos) << cli;
}

// Speculative decoding travels in the link (serve.draft_tokens, serve.acceptance) and runs as the CLI's --set.
TEST(AppInference, SpeculationTravelsInTheLinkAndRunsAsTheCliRunsIt) {
    App t = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*t, "llama3-8b-h100-poisson.json"));
    sc::app::SetPoolWorkers(*t, 2);
    t->inference.config.workload.requests = 100;
    t->inference.config.engine.speculation = {3, 0.75};
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, sc::app::PoolLink(*t)), "");
    const sc::Speculation got = sc::app::CurrentServeRequest(*other).config.engine.speculation;
    EXPECT_EQ(got.tokens, 3);
    EXPECT_EQ(got.acceptance, 0.75);
    pagetest::RunServingToEnd(*t);
    ASSERT_EQ(t->inference.error, "");
    const std::string cli =
        Cli("serve --preset llama3-8b-h100-poisson --set workload.requests=100 --set engine.speculation.tokens=3 "
            "--set engine.speculation.acceptance=0.75");
    EXPECT_EQ(t->inference.report, cli);
    EXPECT_NE(cli.find("speculation    "), std::string::npos) << cli;
}

// A decode pool on a cluster of its own travels in the link (serve.decode_system) and runs as the CLI's
// decode_pool.system; an id the page does not have is refused naming the key and the ids it has.
TEST(AppInference, DecodeClusterTravelsInTheLinkAndRunsAsTheCliRunsIt) {
    App t = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*t, "llama3-70b-h100-disaggregated.json"));
    sc::app::SetPoolWorkers(*t, 2);
    t->inference.config.workload.requests = 50;
    t->inference.decode_system = "dgx-a100-superpod";
    const std::string link = sc::app::PoolLink(*t);
    EXPECT_NE(link.find("serve.decode_system=dgx-a100-superpod"), std::string::npos) << link;
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, link), "");
    const sc::engine::ServeRequest got = sc::app::CurrentServeRequest(*other);
    ASSERT_NE(got.decode_system, nullptr);
    EXPECT_EQ(got.decode_system->accelerator.name, "NVIDIA A100-SXM4-80GB");
    pagetest::RunServingToEnd(*t);
    ASSERT_EQ(t->inference.error, "");
    const std::string cli =
        Cli("serve --preset llama3-70b-h100-disaggregated --set workload.requests=50 "
            "--set decode_pool.system=dgx-a100-superpod");
    EXPECT_EQ(t->inference.report, cli);
    EXPECT_NE(cli.find("decode rates   "), std::string::npos) << cli;
    // Back to the page's cluster: the link says so.
    t->inference.decode_system.clear();
    EXPECT_EQ(sc::app::PoolLink(*t).find("serve.decode_system"), std::string::npos);
    std::string bad = link;
    bad.replace(bad.find("dgx-a100-superpod", bad.find("serve.decode_system")), 17, "dgx-z100");
    EXPECT_NE(sc::app::ApplyLink(*other, bad).find("serve.decode_system: no system preset \"dgx-z100\" on this page"),
              std::string::npos);
}

// The tiers below the GPU travel in the link (serve.host_cache_gib, serve.remote_cache_gib, serve.swap_gbps) and
// run as the CLI's --set: here both at once, three tiers, with prefixes too many for the GPU.
TEST(AppInference, PrefixTiersTravelInTheLinkAndRunAsTheCliRunsThem) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-shared-prefix.json"));
    sc::app::SetPoolWorkers(*s, 2);
    sc::ServingConfig& c = s->inference.config;
    c.workload.requests = 512;
    c.workload.prefixes.count = 200, c.workload.prefixes.tokens = 8192;
    c.engine.host_cache_gib = 2, c.engine.remote_cache_gib = 64, c.engine.swap_gbps = 32;
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, sc::app::PoolLink(*s)), "");
    const sc::EngineConfig got = sc::app::CurrentServeRequest(*other).config.engine;
    EXPECT_EQ(got.host_cache_gib, 2);
    EXPECT_EQ(got.remote_cache_gib, 64);
    EXPECT_EQ(got.swap_gbps, 32);
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    const std::string cli =
        Cli("serve --preset llama3-8b-h100-shared-prefix --set workload.requests=512 --set workload.prefixes.count=200 "
            "--set workload.prefixes.tokens=8192 --set engine.host_cache_gib=2 --set engine.remote_cache_gib=64 "
            "--set engine.swap_gbps=32");
    EXPECT_EQ(s->inference.report, cli);
    EXPECT_NE(cli.find("from the remote store"), std::string::npos) << cli;
    EXPECT_NE(cli.find("and a remote store of 64 GiB"), std::string::npos) << cli;
}

// The front end outside the engine travels in the link (serve.frontend_ms) and runs as the CLI's --set.
TEST(AppInference, FrontendTravelsInTheLinkAndRunsAsTheCliRunsIt) {
    App s = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-poisson.json"));
    sc::app::SetPoolWorkers(*s, 2);
    s->inference.config.workload.requests = 100;
    s->inference.config.engine.frontend_s = 3.18e-3;
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, sc::app::PoolLink(*s)), "");
    EXPECT_DOUBLE_EQ(sc::app::CurrentServeRequest(*other).config.engine.frontend_s, 3.18e-3);
    pagetest::RunServingToEnd(*s);
    ASSERT_EQ(s->inference.error, "");
    const std::string cli =
        Cli("serve --preset llama3-8b-h100-poisson --set workload.requests=100 --set engine.frontend_ms=3.18");
    EXPECT_EQ(s->inference.report, cli);
    EXPECT_NE(cli.find("a front end of 3.180 ms a request outside the engine"), std::string::npos) << cli;
}

// Retrieval travels in the link (serve.passages, serve.passage_tokens, serve.retrieval_s, serve.retrieval_servers)
// and runs as the CLI's --set.
TEST(AppInference, RetrievalTravelsInTheLinkAndRunsAsTheCliRunsIt) {
    App t = OpenPage();
    ASSERT_TRUE(sc::app::SelectServingPreset(*t, "llama3-8b-h100-poisson.json"));
    sc::app::SetPoolWorkers(*t, 2);
    t->inference.config.workload.requests = 100;
    t->inference.config.workload.retrieval = {5, 128, 0.25, 3};
    App other = OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, sc::app::PoolLink(*t)), "");
    const sc::Retrieval got = sc::app::CurrentServeRequest(*other).config.workload.retrieval;
    EXPECT_EQ(got.documents, 5);
    EXPECT_EQ(got.tokens, 128);
    EXPECT_EQ(got.seconds, 0.25);
    EXPECT_EQ(got.servers, 3);
    pagetest::RunServingToEnd(*t);
    ASSERT_EQ(t->inference.error, "");
    const std::string cli = Cli(
        "serve --preset llama3-8b-h100-poisson --set workload.requests=100 --set workload.retrieval.documents=5 "
        "--set workload.retrieval.tokens=128 --set workload.retrieval.seconds=0.25 --set workload.retrieval.servers=3");
    EXPECT_EQ(t->inference.report, cli);
    EXPECT_NE(cli.find("retrieval      100 queries"), std::string::npos) << cli;
}

// A page on the Llama 3 8B Poisson preset with `requests` a run, its rate sweep set from `from` to `to` in `points`.
App SweepPage(long long requests, double from, double to, int points) {
    App s = OpenPage();
    EXPECT_TRUE(sc::app::SelectServingPreset(*s, "llama3-8b-h100-poisson.json"));
    s->inference.config.workload.requests = requests;
    auto& w = s->inference.sweep;
    w.from = from;
    w.to = to;
    w.points = points;
    return s;
}

TEST(AppInference, TheRateSweepInFrameSlicesEqualsTheCliSweep) {
    App s = SweepPage(400, 4, 16, 4);  // a short run per point keeps the test quick
    auto& w = s->inference.sweep;
    sc::app::StartServeSweep(*s);
    ASSERT_EQ(w.error, "");
    for (int frame = 0; frame < 1000 && w.next_shard >= 0; ++frame) sc::app::StepServeSweep(*s, 0.0);
    ASSERT_EQ(w.error, "");
    ASSERT_EQ(w.points_done.size(), 4u);
    EXPECT_EQ(w.report,
              Cli("serve --preset llama3-8b-h100-poisson --set workload.requests=400 --rate-sweep 4,8,12,16"));
}

// Without workers the sweep's points run one after another on the page's thread, each simulation a slice of
// events per frame (it ran a whole shard of simulations inside one frame): many frames per point, the progress
// never goes back, and the report is still the CLI's.
TEST(AppInference, TheRateSweepOnThePagesThreadSlicesEachPoint) {
    App s = SweepPage(20000, 10, 20, 2);
    auto& w = s->inference.sweep;
    sc::app::StartServeSweep(*s);
    ASSERT_EQ(w.error, "");
    ASSERT_EQ(w.next_shard, 0) << "on the page's thread";
    int frames = 0;
    double progress = 0;
    for (; frames < 100000 && w.next_shard >= 0; ++frames) {
        sc::app::StepServeSweep(*s, 0.0);
        if (w.next_shard < 0) break;  // finished
        EXPECT_GE(sc::app::ServeSweepProgress(*s), progress);
        progress = sc::app::ServeSweepProgress(*s);
    }
    ASSERT_EQ(w.error, "");
    EXPECT_GT(frames, 10);
    ASSERT_EQ(w.points_done.size(), 2u);
    EXPECT_EQ(w.report, Cli("serve --preset llama3-8b-h100-poisson --set workload.requests=20000 --rate-sweep 10,20"));
}

// The rate sweep as the page's worker pool runs it: a "serve-sweep" job carrying the page's link, each shard run by
// a worker that rebuilds the request from that link (as worker_bindings.cpp does) and sent back as text; the
// merged report equals the CLI's, as the frame slices' does. A worker's bad shard text ends the sweep with its error.
TEST(AppInference, TheRateSweepInWorkersEqualsTheCliSweep) {
    App s = SweepPage(400, 4, 16, 4);
    auto& w = s->inference.sweep;
    sc::app::SetPoolWorkers(*s, 2);
    sc::app::StartServeSweep(*s);
    ASSERT_EQ(w.error, "");
    const sc::app::PoolJob job = sc::app::TakePoolJob(*s);
    ASSERT_EQ(job.kind, "serve-sweep");
    EXPECT_EQ(w.next_shard, -1) << "not also in frame slices";
    App worker = OpenPage();  // a worker: the same presets, nothing else of the page's state
    ASSERT_EQ(sc::app::ApplyLink(*worker, job.link), "");
    sc::engine::ServeRequest r = sc::app::CurrentServeRequest(*worker);
    r.sweep_rates = sc::app::ServeSweepJobRates(job.axes);
    const sc::engine::ServeSweepSnapshot snap = sc::engine::SnapshotServeSweep(r);
    for (int shard = job.shards - 1; shard >= 0; --shard) {  // any order
        EXPECT_TRUE(sc::app::PoolJobWanted(*s, job.id));
        const std::string text =
            sc::app::EncodeServeSweepShard(sc::engine::RunServeSweepShard(snap, shard, job.shards));
        ASSERT_EQ(sc::app::AddPoolShard(*s, job.id, text), "");
    }
    EXPECT_FALSE(sc::app::PoolJobWanted(*s, job.id));
    ASSERT_EQ(w.points_done.size(), 4u);
    EXPECT_EQ(w.report,
              Cli("serve --preset llama3-8b-h100-poisson --set workload.requests=400 --rate-sweep 4,8,12,16"));

    sc::app::StartServeSweep(*s);
    const sc::app::PoolJob again = sc::app::TakePoolJob(*s);
    EXPECT_NE(sc::app::AddPoolShard(*s, again.id, "[{\"index\": 0}]"), "");
    EXPECT_NE(w.error.find("serve-sweep shard"), std::string::npos) << w.error;
    EXPECT_FALSE(sc::app::ServeSweepRunning(*s));
}

TEST(AppInference, BadSweepRatesAreAClearError) {
    App s = OpenPage();
    auto& w = s->inference.sweep;
    w.from = 10;
    w.to = 5;
    sc::app::StartServeSweep(*s);
    EXPECT_NE(w.error.find("0 < from < to"), std::string::npos) << w.error;
    EXPECT_EQ(w.next_shard, -1);
}

TEST(AppInference, TheServingTabDrawsItsResultAndCharts) {
    Page p;
    p.width = 1280, p.height = 900;  // the whole tab on screen (at 1024x768 the lower part scrolls)
    ASSERT_TRUE(sc::app::SelectServingPreset(*p.app, "llama3-8b-h100-poisson.json"));
    p.app->inference.config.workload.requests = 300;
    p.Click("Training on a cluster", "Serving");  // opening the tab simulates
    ASSERT_TRUE(p.app->inference.has_result) << p.app->inference.error;
    EXPECT_FALSE(p.app->inference.result.result.series.empty());
    EXPECT_TRUE(p.Find("Training on a cluster", "Simulate").found);
    EXPECT_TRUE(p.Find("Training on a cluster", "##kv").found) << "no KV occupancy chart";
    EXPECT_TRUE(p.Find("Training on a cluster", "##queue").found) << "no running/waiting chart";
}

TEST(AppInference, TheTabSimulatesAgainWhenTheModelChanges) {
    Page p;
    ASSERT_TRUE(sc::app::SelectServingPreset(*p.app, "llama3-8b-h100-poisson.json"));
    p.app->inference.config.workload.requests = 200;
    p.Click("Training on a cluster", "Serving");
    ASSERT_TRUE(p.app->inference.has_result) << p.app->inference.error;
    const std::string before = p.app->inference.report;
    p.app->model.layers = 16;  // an edit of the Model panel's model, made on the state as a link would
    p.Frames(2);
    ASSERT_TRUE(p.app->inference.has_result) << p.app->inference.error;
    EXPECT_NE(p.app->inference.report, before) << "the Serving tab kept the result of the old model";
}

}  // namespace
