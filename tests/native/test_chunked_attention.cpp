// Chunked local attention (ModelConfig::window with chunked: Llama 4's attention_chunk_size): the pair and key counts
// against enumeration, the serving sums over a prompt's chunks and decodes, the training graph's chunked core, the
// field's parse and round trips (JSON, the page's link), and the Llama 4 presets.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "app/app.h"
#include "app/app_state.h"
#include "config/error.h"
#include "config/model_config.h"
#include "config/overrides.h"
#include "inference/iteration_cost.h"
#include "page_driver.h"
#include "parallel/job.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "trace_test_util.h"

namespace {

const char* kSmall = R"({"name":"t","layers":6,"hidden":64,"heads":4,"ffn":256,"vocab":100,"seq":500})";

// Keys query i (from 0) sees under chunks of C: j <= i in i's chunk (transformers' chunked causal mask).
double EnumeratedKeys(int i, int C) {
    double keys = 0;
    for (int j = 0; j <= i; ++j) keys += j / C == i / C;
    return keys;
}

double EnumeratedPairs(int n, int C) {
    double pairs = 0;
    for (int i = 0; i < n; ++i) pairs += EnumeratedKeys(i, C);
    return pairs;
}

sc::SlidingWindow Chunks(int size, int full_every = 0) {
    sc::SlidingWindow w;
    w.size = size, w.full_every = full_every, w.chunked = true;
    return w;
}

}  // namespace

TEST(ChunkedAttention, PairsAndKeysAreTheEnumeratedCounts) {
    for (int C : {1, 7, 128})
        for (int n : {0, 1, 5, 127, 128, 129, 1000}) {
            EXPECT_EQ(sc::LocalCausalPairs(n, Chunks(C)), EnumeratedPairs(n, C)) << n << " " << C;
            if (n > 0) {
                EXPECT_EQ(sc::LocalKeys(n - 1, Chunks(C)), EnumeratedKeys(n - 1, C)) << n << " " << C;
            }
        }
    // A sliding window and none read as before.
    sc::SlidingWindow sliding;
    sliding.size = 128;
    EXPECT_EQ(sc::LocalCausalPairs(1000, sliding), sc::WindowedCausalPairs(1000, 128));
    EXPECT_EQ(sc::LocalKeys(999, sliding), 128);
    EXPECT_EQ(sc::LocalKeys(999, sc::SlidingWindow{}), 1000);
}

// A prompt's chunks sum to the whole prompt's chunked pairs; a prefill chunk reads from its first query's chunk
// start; a decode reads its chunk so far.
TEST(ChunkedAttention, ServingSumsAreTheChunksPairsAndKeys) {
    const sc::SlidingWindow w = Chunks(512);
    sc::BatchShape one, parts;
    one.AddPrefillChunk(0, 1000, w);
    for (int done = 0; done < 1000; done += 300) parts.AddPrefillChunk(done, std::min(300, 1000 - done), w);
    EXPECT_DOUBLE_EQ(one.window_prefill_pairs, EnumeratedPairs(1000, 512));
    EXPECT_DOUBLE_EQ(parts.window_prefill_pairs, EnumeratedPairs(1000, 512));
    EXPECT_DOUBLE_EQ(parts.prefill_pairs, 1000.0 * 1001 / 2);
    sc::BatchShape later;
    later.AddPrefillChunk(700, 300, w);  // queries 700..999 see keys 512..999
    EXPECT_DOUBLE_EQ(later.window_prefill_keys, 999 - 512 + 1);
    sc::BatchShape d;
    d.AddDecode(5000, w), d.AddDecode(50, w);  // positions 5000 (chunk from 4608) and 50
    EXPECT_DOUBLE_EQ(d.window_decode_keys, 5000 - 4608 + 1 + 51);
    EXPECT_DOUBLE_EQ(d.decode_keys, 5001 + 51);
    // Llama 4 Maverick at 20,000 cached tokens: a decode's chunked layers read 3,617 keys, so its step reads less
    // than with every layer full, and exactly as much as a sliding window of the same keys would.
    const sc::ModelConfig m = servetest::Model("llama4-maverick");
    sc::ModelConfig full = m;
    full.window = {};
    const sc::System& sys = servetest::System("dgx-b200-superpod");
    sc::ServingPrecision fp8;
    fp8.weights = fp8.compute = fp8.kv_cache = sc::Precision::fp8;
    sc::PoolConfig ep8;
    ep8.tp = ep8.ep = 8;
    const sc::IterationCost chunked(m, fp8, ep8, sys, &servetest::Calibration(), 1024, 1);
    const sc::IterationCost whole(full, fp8, ep8, sys, &servetest::Calibration(), 1024, 1);
    EXPECT_LT(chunked.DecodeSeconds(20000), whole.DecodeSeconds(20000));
    EXPECT_DOUBLE_EQ(chunked.DecodeSeconds(4000), whole.DecodeSeconds(4000));  // inside the first chunk
}

// The graph's chunked core at a sequence longer than its chunk: the enumerated pairs, s(C+1)/2 + r(r-C)/2 with
// r = s mod C; at a sequence no longer than the chunk, no layer is windowed.
TEST(ChunkedAttention, GraphCountsTheChunkedCore) {
    sc::ModelConfig m = sc::ParseModelConfig(kSmall);  // seq 500
    m.window = Chunks(128, 3);                         // layers 2 and 5 full
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,pp=1,dp=1,microbatch=2,batch=2"));
    EXPECT_EQ(job.graph.dense_window_layers, 4);
    const double per_pair = 2.0 * job.par.microbatch * m.heads / job.par.tp * 2 * m.head_dim;
    EXPECT_DOUBLE_EQ(sctest::ForwardCoreFlops(job, sc::BlockKind::dense_window_layer),
                     per_pair * EnumeratedPairs(500, 128));
    EXPECT_DOUBLE_EQ(sctest::ForwardCoreFlops(job, sc::BlockKind::dense_layer), per_pair * 500.0 * 501 / 2);
    m.window.size = 500;
    EXPECT_EQ(sc::MakeJob(m, job.par).graph.dense_window_layers, 0);
}

TEST(ChunkedAttention, FieldIsStrictAndRoundTrips) {
    auto parse = [](const std::vector<std::string>& sets) {
        return sc::ParseModelConfig(sc::ApplyOverrides(kSmall, sets, "test"));
    };
    EXPECT_TRUE(parse({"sliding_window.size=128", "sliding_window.chunked=true"}).window.chunked);
    EXPECT_FALSE(parse({"sliding_window.size=128"}).window.chunked);
    const std::string e = sctest::ErrorOf([&] {
        parse({"sliding_window.size=128", "sliding_window.chunked=\"yes\""});
    });
    EXPECT_EQ(e.rfind("sliding_window.chunked:", 0), 0u) << e;
    const sc::ModelConfig back = sc::ParseModelConfig(sc::ModelConfigToJson(
        parse({"sliding_window.size=128", "sliding_window.full_every=4", "sliding_window.chunked=true"})));
    EXPECT_TRUE(back.window.chunked);
    EXPECT_EQ(back.window.full_every, 4);
    EXPECT_EQ(sc::ModelConfigToJson(parse({"sliding_window.size=128"})).find("chunked"), std::string::npos);
}

// Llama 4's config: attention_chunk_size 8192, and layer i uses RoPE and the chunked mask unless (i + 1) % 4 == 0.
TEST(ChunkedAttention, Llama4ChunksThreeOfFourLayers) {
    for (const char* id : {"llama4-maverick", "llama4-scout"}) {
        const sc::ModelConfig m = servetest::Model(id);
        EXPECT_TRUE(m.window.chunked) << id;
        EXPECT_EQ(m.window.size, 8192) << id;
        EXPECT_EQ(m.windowed_layers(0, m.layers), 36) << id;
        EXPECT_FALSE(m.windowed_layer(3)) << id;
        EXPECT_EQ(m.graph_windowed_layers(0, m.layers), 0) << id;  // 8,192-token training: every layer causal
    }
}

// The page's model panel and its link: window_kind=chunked opens a chunked window and is written back.
TEST(ChunkedAttention, TheLinkCarriesTheKind) {
    pagetest::App page = pagetest::OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*page,
                                 "v1;model=llama3-8b;window=4096;full_every=4;window_kind=chunked;"
                                 "parallel=dp=8;end"),
              "");
    EXPECT_TRUE(page->model.window.chunked);
    EXPECT_EQ(page->model.window.size, 4096);
    EXPECT_NE(sc::app::LinkState(*page).find(";window_kind=chunked;"), std::string::npos);
    const std::string e = sc::app::ApplyLink(*page, "v1;model=llama3-8b;window=4096;window_kind=local;end");
    EXPECT_NE(e.find("window_kind"), std::string::npos) << e;
    EXPECT_NE(e.find("sliding, chunked"), std::string::npos) << e;
}
