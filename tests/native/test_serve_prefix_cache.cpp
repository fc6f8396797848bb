// Shared prefixes and the cache that reuses them (engine.prefix_caching): closed forms of the time a hit saves,
// blocks held once, idle blocks, conversations, and the errors (the tiers below the GPU:
// test_serve_prefix_tiers.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "config/error.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/prefix_cache.h"
#include "inference/serving_parse.h"
#include "inference/workload_gen.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::System;

using servetest::OnePrefixClient;
using servetest::PrefillSeconds;

TEST(ServePrefixCache, ALaterPromptComputesOnlyWhatFollowsTheCachedPrefix) {
    // 1,000 shared tokens in 16-token blocks: 62 full blocks (992 tokens) are cached; the rest is computed.
    ServingConfig c = OnePrefixClient(2, 1, 1000, 200);
    const IterationCost cost = servetest::H100Cost(c);
    const ServingResult r = Simulate(c, cost, 100000);
    ASSERT_EQ(r.completed, 2);
    EXPECT_DOUBLE_EQ(r.ttft.max, PrefillSeconds(cost, 0, 1200));   // the first computes its whole prompt
    EXPECT_DOUBLE_EQ(r.ttft.min, PrefillSeconds(cost, 992, 208));  // the second attends to the cached 992
    EXPECT_EQ(r.prefix_requests, 2);
    EXPECT_EQ(r.prefix_gpu_hits, 1);
    EXPECT_EQ(r.prefix_host_hits, 0);
    EXPECT_DOUBLE_EQ(r.prefix_tokens_reused, 992);
    EXPECT_DOUBLE_EQ(r.input_tokens_per_s * r.duration, 2 * 1200);  // a prompt is its prefix and its own tokens

    c.engine.prefix_caching = false;  // the same prompts, each computed whole
    const ServingResult off = Simulate(c, cost, 100000);
    EXPECT_DOUBLE_EQ(off.ttft.min, PrefillSeconds(cost, 0, 1200));
    EXPECT_DOUBLE_EQ(off.ttft.max, off.ttft.min);
    EXPECT_EQ(off.prefix_requests, 0);
}

TEST(ServePrefixCache, RequestsSharingAPrefixHoldItsBlocksOnce) {
    // Eight queued requests of one 1,024-token prefix run together: the first computes the prefix and, as vLLM
    // caches a block when it is allocated, the seven admitted after it in the same iteration take its 64 blocks.
    ServingConfig c = Base("llama3-8b", 1, 64, 32, 8);
    c.workload.prefixes = {1, 1024, 0};
    c.engine.prefix_caching = true;
    c.engine.max_tokens = 16384;  // all eight whole prompts in the first iteration with or without the cache
    const IterationCost cost = servetest::H100Cost(c);
    const long long blocks = 10000;
    const ServingResult on = Simulate(c, cost, blocks);
    c.engine.prefix_caching = false;
    const ServingResult off = Simulate(c, cost, blocks);
    ASSERT_EQ(on.completed, 8);
    EXPECT_EQ(on.prefix_gpu_hits, 7);
    EXPECT_DOUBLE_EQ(on.prefix_tokens_reused, 7 * 1024);
    // Both run the eight in lockstep; at the peak the copies hold 7 x 64 blocks fewer.
    EXPECT_NEAR((off.kv_occupancy_peak - on.kv_occupancy_peak) * blocks, 7 * 64, 1e-6);
    EXPECT_EQ(on.iterations, off.iterations);
    EXPECT_NEAR((off.mean_batch_tokens - on.mean_batch_tokens) * on.iterations, 7 * 1024, 1e-6);
}

// A cache that holds one 64-block prefix beside a request (64 + 68 - 1 blocks) and a client cycling over three
// prefixes: each request's prefix is on the GPU when it repeats the previous one, else in the host tier when it
// was evicted before (with one), else computed. The expected time per request is written out from that rule. A
// remote store is the same tier across the network: a copy back crosses it (and pays its latency), a copy out is
// staged in host memory over the host link and uploaded beside the iteration.
// Three tiers, LMCache's hierarchy: a prefix leaving the GPU is written to the host tier (the iteration waits for
// the host link) and to the remote store (uploaded from host memory, beside the iteration); a lookup takes the host's
// copy first, then the store's, which is kept in the host tier as well. The host tier holds one prefix, the store
// all three: the rules written out below give every hit, byte and second of the run.
// The remote store is one for every replica (Mooncake's store pools its servers' memory for all prefill
// instances): a prefix one replica computed and evicted is a hit for the other. Two replicas, a client's requests
// dealt to them in turn, each GPU holding one prefix and the store all three: the run written out rule by rule.
// The cache's books for three tiers: write-through on eviction, the lookup order, a tier's own LRU, the store's
// write-back to the host, a prefix larger than the host tier, and a grown prefix dropping both copies.
// A remote store is reached over the pool's cluster's scale-out network: SimulateServing on the DGX H100 cluster
// runs it at the NDR level's effective bandwidth and hop latency; a TPU pod, whose network is its chips' torus, has
// none and is refused naming the field.
// Idle blocks: GPU copies no request reads, directly or through a conversation's context after them (vLLM counts
// every block of reference count 0 free), summed into the engine's counter as well.
TEST(ServePrefixCache, IdleBlocksAreTheCopiesNoRequestReads) {
    long long total = 0;
    PrefixCache c(0, 0, &total);
    c.AddToGpu(1, 64, -1, 1);  // a shared prefix its first request computed, still in use
    EXPECT_EQ(c.idle_blocks(), 0);
    c.Release(1);
    EXPECT_EQ(c.idle_blocks(), 64);
    c.AddToGpu(100, 4, 1, 1);  // a turn's context after it, its next turn reading both
    EXPECT_EQ(c.idle_blocks(), 0);
    c.Release(100);  // the client thinks: both cached, neither read
    EXPECT_EQ(c.idle_blocks(), 68);
    c.Grow(100, 3);  // (a context grows only while read; the count follows anyway)
    EXPECT_EQ(c.idle_blocks(), 71);
    c.Use(1);  // another request reads the prefix alone
    EXPECT_EQ(c.idle_blocks(), 7);
    c.Release(1);
    c.AddToGpu(200, 5, 1, 0);  // a second context, cached with no reader
    EXPECT_EQ(c.idle_blocks(), 76);
    c.Use(200);
    EXPECT_EQ(c.idle_blocks(), 7);
    EXPECT_EQ(c.EvictOne().key, 100);  // the prefix is held by its contexts: only 100 can go
    EXPECT_EQ(c.idle_blocks(), 0);
    c.Release(200);
    EXPECT_EQ(c.EvictOne().key, 200);
    EXPECT_EQ(c.idle_blocks(), 64);
    EXPECT_EQ(c.EvictOne().key, 1);
    EXPECT_EQ(c.idle_blocks(), 0);
    EXPECT_EQ(total, 0);
    c.AddToGpu(1, 8, -1, 0);
    EXPECT_EQ(total, 8);
}

TEST(ServePrefixCache, PrefixesAreDrawnUniformlyOrByZipf) {
    const int n = 200000;
    for (const double zipf : {0.0, 1.0}) {
        const PrefixDraw draw(SharedPrefixes{4, 100, zipf});
        Rng rng(7);
        std::vector<int> seen(4, 0);
        for (int i = 0; i < n; ++i) ++seen[static_cast<size_t>(draw(rng))];
        double total = 0;
        for (int k = 1; k <= 4; ++k) total += std::pow(k, -zipf);
        for (int k = 0; k < 4; ++k) {
            const double p = std::pow(k + 1, -zipf) / total, sd = std::sqrt(n * p * (1 - p));
            EXPECT_NEAR(seen[static_cast<size_t>(k)], n * p, 5 * sd) << "prefix " << k << ", zipf " << zipf;
        }
    }
}

TEST(ServePrefixCache, PreemptsOnlyWhenEveryUnusedPrefixIsGone) {
    // Many requests over four prefixes in a cache too small for all of them at once, under both preemption modes
    // and with a disaggregated decode pool: everything completes and the first preemption finds the cache full.
    for (const Preemption mode : {Preemption::recompute, Preemption::swap})
        for (const int turns : {1, 3}) {
            SCOPED_TRACE(std::to_string(turns) + " turns");
            ServingConfig c =
                servetest::Uniform("llama3-8b", 1, 300 / turns, {16, 256}, {16, 512}, ArrivalKind::poisson);
            c.workload.turns = turns;
            c.workload.rate = 50.0 / turns;
            c.workload.prefixes = {4, 512, 0.8};
            c.engine.prefix_caching = true;
            c.engine.preemption = mode;
            c.engine.swap_gbps = 25;
            c.engine.host_cache_gib = 0.05;
            const IterationCost cost = servetest::H100Cost(c);
            const ServingResult r = Simulate(c, cost, 400);
            EXPECT_EQ(r.completed, 300);
            EXPECT_GT(r.preemptions, 0);
            EXPECT_EQ(r.prefix_turn_hits > 0, turns > 1);
            EXPECT_EQ(r.used_blocks_at_first_preemption, r.kv_blocks);
            EXPECT_GT(r.prefix_gpu_hits, 0);
            EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-6 * r.sum_e2e);  // Little's law still holds
        }
}

TEST(ServePrefixCache, ADecodePoolReceivesTheWholePromptsCache) {
    ServingConfig c = OnePrefixClient(6, 1, 1024, 64);
    c.workload.prefixes.count = 1;
    c.decode_pool = PoolConfig{1, 1};
    c.workload.output = LengthDist::Fixed(8);
    const IterationCost cost = servetest::H100Cost(c);
    KvTransferModel link{1e-5, 1e-7};
    const ServingResult on = Simulate(c, {&cost, 10000}, PoolModel{&cost, 10000}, link);
    c.engine.prefix_caching = false;
    const ServingResult off = Simulate(c, {&cost, 10000}, PoolModel{&cost, 10000}, link);
    ASSERT_EQ(on.completed, 6);
    EXPECT_EQ(on.prefix_gpu_hits, 5);
    // All 1,088 prompt tokens cross, cached or not (a mean of six: equal to rounding).
    EXPECT_NEAR(on.kv_transfer_mean, link.Seconds(1088), 1e-12 * link.Seconds(1088));
    EXPECT_NEAR(off.kv_transfer_mean, link.Seconds(1088), 1e-12 * link.Seconds(1088));
    EXPECT_LT(on.busy.linear, off.busy.linear);  // the prefill pool computed 5 x 1,024 tokens fewer
}

double DecodeSeconds(const IterationCost& cost, double context) {
    BatchShape b;
    b.AddDecode(context, 0);
    b.logits = 1;
    return cost.Breakdown(b).total();
}

// One conversation of three turns, each 100 new tokens and 20 out: turn k + 1's prompt is turn k's prompt and
// output and 100 more, and with prefix caching it computes only what follows turn k's full blocks (every token
// but the last output's has its keys cached: 119 -> 7 blocks, then 239 -> 14). Each turn's time is written out:
// its prefill, then 19 decodes at growing contexts.
TEST(ServeConversations, ALaterTurnComputesOnlyWhatFollowsItsEarlierTurns) {
    ServingConfig c = Base("llama3-8b", 1, 100, 20, 1);
    c.workload.turns = 3;
    const IterationCost cost = servetest::H100Cost(c);
    for (const bool caching : {false, true}) {
        SCOPED_TRACE(caching ? "prefix caching" : "none");
        c.engine.prefix_caching = caching;
        const ServingResult r = Simulate(c, cost, 100000);
        ASSERT_EQ(r.completed, 3);
        double expected = 0, reused = 0;
        int input = 100, kept = 0;
        for (int turn = 0; turn < 3; ++turn) {
            const int cached = caching ? kept * 16 : 0;
            expected += PrefillSeconds(cost, cached, input - cached);
            for (int j = 0; j < 19; ++j) expected += DecodeSeconds(cost, input + j);
            reused += cached;
            kept = (input + 19) / 16;
            input += 20 + 100;
        }
        EXPECT_NEAR(r.sum_e2e, expected, 1e-12 * expected);
        EXPECT_NEAR(r.duration, expected, 1e-12 * expected);  // no think time: one turn after the other
        EXPECT_DOUBLE_EQ(r.input_tokens_per_s * r.duration, 100 + 220 + 340);
        EXPECT_EQ(r.prefix_requests, caching ? 2 : 0);  // a first turn without a shared prefix has none to find
        EXPECT_EQ(r.prefix_gpu_hits, caching ? 2 : 0);
        EXPECT_EQ(r.prefix_turn_hits, caching ? 2 : 0);
        EXPECT_DOUBLE_EQ(r.prefix_tokens_reused, reused);
    }
}

TEST(ServeConversations, TurnsAfterASharedPrefixKeepItAndThinkTimeSeparatesThem) {
    // Two conversations of two turns after one 1,024-token prefix, queued together: the second's first turn takes
    // the prefix the first computes; each second turn takes its conversation's context with the prefix before it.
    ServingConfig c = Base("llama3-8b", 1, 64, 8, 2);
    c.workload.prefixes = {1, 1024, 0};
    c.workload.turns = 2;
    c.workload.think = 2;
    c.engine.prefix_caching = true;
    const IterationCost cost = servetest::H100Cost(c);
    const ServingResult r = Simulate(c, cost, 100000);
    ASSERT_EQ(r.completed, 4);
    EXPECT_EQ(r.prefix_requests, 4);
    EXPECT_EQ(r.prefix_gpu_hits, 3);
    EXPECT_EQ(r.prefix_turn_hits, 2);
    // A first turn holds 1,024 + 64 + 7 = 1,095 computed tokens: 68 full blocks, 64 of them the prefix.
    EXPECT_DOUBLE_EQ(r.prefix_tokens_reused, 1024 + 2 * 68 * 16);
    // The second turns start 2 s after the first ones end, which end together: the run is the two turns and the
    // think time between them, and nothing is in the system while the clients think.
    EXPECT_NEAR(r.duration, r.sum_e2e / 2 + 2, 1e-9);
    // While the clients think, the cache holds the prefix and the two contexts after it, 64 + 2 x 4 blocks no
    // request uses: free to evict, so not in the occupancy (vLLM's usage counts them free), and the whole of the
    // cached-idle area. Before and after, every cached block is in use by a turn.
    EXPECT_NEAR(r.kv_cached_idle_mean * r.duration * 100000, 2 * 72, 1e-9);
    const double held = r.kv_occupancy_mean * r.duration * 100000;  // the turns' own blocks, over their time
    EXPECT_GT(held, 0);
    c.engine.prefix_caching = false;  // without the cache, nothing is cached and idle
    EXPECT_EQ(Simulate(c, cost, 100000).kv_cached_idle_mean, 0);
    c.engine.prefix_caching = true;

    // A closed-loop client sends its next conversation when the last turn of this one completes.
    c.workload.arrival = ArrivalKind::closed_loop;
    c.workload.concurrency = 1;
    c.workload.requests = 3;
    c.workload.think = 0;
    const ServingResult loop = Simulate(c, cost, 100000);
    ASSERT_EQ(loop.completed, 6);
    EXPECT_NEAR(loop.duration, loop.sum_e2e, 1e-9 * loop.duration);  // always exactly one request in the system
}

std::string ErrorOf(const std::string& json) {
    try {
        ServingConfig c = ParseServingDescription(json).config;
        c.model = servetest::Model("llama3-8b");
        ValidateServingConfig(c);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(ServePrefixCache, DescriptionsSayWhatIsWrong) {
    const std::string head = R"({"model": "llama3-8b", "system": "dgx-h100-superpod", )";
    const std::string work = R"("workload": {"requests": 4, "input": {"tokens": 64}, "output": {"tokens": 8})";
    auto with = [&](const std::string& engine, const std::string& more) {
        return head + R"("engine": {)" + engine + "}, " + work + more + "}}";
    };
    const ServingDescription d =
        ParseServingDescription(with(R"("prefix_caching": true, "host_cache_gib": 4, "swap_gbps": 25)",
                                     R"(, "prefixes": {"count": 64, "tokens": 2048, "zipf": 1.1})"));
    EXPECT_TRUE(d.config.engine.prefix_caching);
    EXPECT_DOUBLE_EQ(d.config.engine.host_cache_gib, 4);
    EXPECT_EQ(d.config.workload.prefixes.count, 64);
    EXPECT_EQ(d.config.workload.prefixes.tokens, 2048);
    EXPECT_DOUBLE_EQ(d.config.workload.prefixes.zipf, 1.1);

    EXPECT_NE(ErrorOf(with("", R"(, "prefixes": {"tokens": 16, "share": 1})")).find("workload.prefixes.share"),
              std::string::npos);
    EXPECT_NE(ErrorOf(with("", R"(, "prefixes": {"count": 0, "tokens": 16})")).find("workload.prefixes.count"),
              std::string::npos);
    EXPECT_NE(ErrorOf(with("", R"(, "prefixes": {"tokens": 2147483647})")).find("workload.prefixes.tokens"),
              std::string::npos);
    const std::string host = ErrorOf(with(R"("host_cache_gib": 4, "swap_gbps": 25)", ""));
    EXPECT_NE(host.find("engine.host_cache_gib"), std::string::npos) << host;
    EXPECT_NE(host.find("prefix_caching"), std::string::npos) << host;
    // Without swap_gbps the host tier copies at the part's measured host link, and a part without one is refused.
    EXPECT_EQ(
        ParseServingDescription(with(R"("prefix_caching": true, "host_cache_gib": 4)", "")).config.engine.swap_gbps, 0);
    ServingConfig unstated = OnePrefixClient(4, 1, 64, 64);
    unstated.engine.host_cache_gib = 4;
    const ServingRun measured = SimulateServing(unstated, System("dgx-h100-superpod"), &Calibration());
    EXPECT_TRUE(measured.host_link.measured);
    EXPECT_EQ(measured.host_link.in_gbps, 51);
    EXPECT_EQ(measured.host_link.out_gbps, 52);
    const std::string link =
        sctest::ErrorOf([&] { SimulateServing(unstated, System("dgx-a100-superpod"), &Calibration()); });
    EXPECT_NE(link.find("engine.swap_gbps: the host prefix tier copies over the host link"), std::string::npos) << link;
    EXPECT_NE(sctest::ErrorOf([&] {
                  SimulateServing(unstated, System("dgx-h100-superpod"), nullptr);
              }).find("engine.swap_gbps"),
              std::string::npos);
    unstated.engine.swap_gbps = 25;
    EXPECT_EQ(SimulateServing(unstated, System("dgx-a100-superpod"), &Calibration()).host_link.in_gbps, 25);
    EXPECT_DOUBLE_EQ(ParseServingDescription(with(R"("prefix_caching": true, "remote_cache_gib": 16)", ""))
                         .config.engine.remote_cache_gib,
                     16);
    const std::string remote = ErrorOf(with(R"("remote_cache_gib": 4)", ""));
    EXPECT_NE(remote.find("engine.remote_cache_gib: a remote store holds prefixes"), std::string::npos) << remote;
    const EngineConfig both =
        ParseServingDescription(
            with(R"("prefix_caching": true, "remote_cache_gib": 16, "host_cache_gib": 4, "swap_gbps": 25)", ""))
            .config.engine;  // three tiers: GPU, host, remote store
    EXPECT_DOUBLE_EQ(both.host_cache_gib, 4);
    EXPECT_DOUBLE_EQ(both.remote_cache_gib, 16);
    EXPECT_NE(ErrorOf(with(R"("remote_cache_gib": -1)", "")).find("engine.remote_cache_gib"), std::string::npos);

    ServingConfig windowed = Base("llama3-8b", 1, 64, 8, 4);
    windowed.model = servetest::Model("mistral-7b");
    windowed.engine.prefix_caching = true;
    try {
        ValidateServingConfig(windowed);
        ADD_FAILURE() << "a sliding-window model was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("engine.prefix_caching"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("sliding-window"), std::string::npos) << e.what();
    }
    EXPECT_NE(ErrorOf(with("", R"(, "turns": 0)")).find("workload.turns"), std::string::npos);
    EXPECT_NE(ErrorOf(with("", R"(, "think_s": -1)")).find("workload.think_s"), std::string::npos);
    ServingConfig chat = Base("llama3-8b", 1, 20000, 10, 1);
    chat.workload.turns = 1000;  // a last prompt and output of 1000 x 20,010 tokens: past 2^24
    const std::string longest = sctest::ErrorOf([&] { ValidateServingConfig(chat); });
    EXPECT_NE(longest.find("workload.turns"), std::string::npos) << longest;
    EXPECT_NE(longest.find("20010000 tokens"), std::string::npos) << longest;
    ServingConfig traced = Base("llama3-8b", 1, 64, 8, 1);
    traced.workload.arrival = ArrivalKind::trace;
    traced.workload.trace = {TraceRequest{0, 64, 8, 0}};
    traced.workload.prefixes = {2, 128, 0};
    try {
        ValidateServingConfig(traced);
        ADD_FAILURE() << "a trace with shared prefixes was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("workload.prefixes"), std::string::npos) << e.what();
    }
    traced.workload.prefixes = {};
    traced.workload.turns = 2;
    try {
        ValidateServingConfig(traced);
        ADD_FAILURE() << "a trace of conversations was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("workload.turns"), std::string::npos) << e.what();
    }
}

}  // namespace
