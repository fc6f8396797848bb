// Sliding-window attention (ModelConfig::window): the field's rules, the pair count and the windowed-layer count in
// closed form against enumeration, the graph's windowed layers (their attention FLOPs and their place in every
// pipeline stage), the trace and the estimate charging the same, and the serving cost's window sums.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/error.h"
#include "config/model_config.h"
#include "config/overrides.h"
#include "engine/serve.h"
#include "graph/model_stats.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "parallel/job.h"
#include "preset_files.h"
#include "report/serve_report.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "trace/stage_program.h"
#include "trace_test_util.h"
#include "training/estimate.h"
#include "training/timeline.h"

namespace {

const std::string kRoot = SC_SOURCE_DIR;
const char* kSmall = R"({"name":"t","layers":6,"hidden":64,"heads":4,"ffn":256,"vocab":100,"seq":512})";

sc::ModelConfig Preset(const std::string& file) {
    return sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/" + file));
}

std::string ErrorOf(const std::vector<std::string>& sets) {
    try {
        sc::ParseModelConfig(sc::ApplyOverrides(kSmall, sets, "test"));
    } catch (const sc::Error& e) {
        return e.what();
    }
    return "";
}

// Query-key pairs of queries 0 .. n-1 when query i sees key j for i - window < j <= i (window 0: every j <= i).
double EnumeratedPairs(int n, int window) {
    double pairs = 0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j <= i; ++j) pairs += window == 0 || i - j < window;
    return pairs;
}

// Forward FLOPs of the attention core a layer of `job` runs on one rank: 2 x pairs x (d_qk + d_v) x heads.
double CoreFlops(const sc::Job& job, double pairs_per_sequence) {
    const sc::ModelConfig& m = job.model;
    return 2.0 * pairs_per_sequence * job.par.microbatch * m.heads / job.par.tp * 2 * m.head_dim / job.par.cp;
}

}  // namespace

TEST(SlidingWindow, PairsAndWindowedLayersAreTheEnumeratedCounts) {
    for (int n : {1, 5, 127, 128, 129, 1000})
        for (int w : {0, 1, 7, 128, 4096})
            EXPECT_EQ(sc::WindowedCausalPairs(n, w), EnumeratedPairs(n, w)) << n << " " << w;
    sc::ModelConfig m = sc::ParseModelConfig(kSmall);
    m.layers = 37;
    for (int every : {0, 2, 3, 6}) {
        m.window = {128, every};
        for (int first = 0; first <= m.layers; ++first)
            for (int count = 0; first + count <= m.layers; ++count) {
                int n = 0;
                for (int i = first; i < first + count; ++i) n += m.windowed_layer(i);
                ASSERT_EQ(m.windowed_layers(first, count), n) << every << " " << first << " " << count;
            }
    }
    // GPT-OSS's config.json layer_types: "sliding_attention", "full_attention", repeated.
    const sc::ModelConfig oss = Preset("gpt-oss-120b.json");
    EXPECT_EQ(oss.window.size, 128);
    EXPECT_TRUE(oss.windowed_layer(0));
    EXPECT_FALSE(oss.windowed_layer(1));
    EXPECT_EQ(oss.windowed_layers(0, oss.layers), 18);
    // Mistral 7B v0.1 windows every layer (4,096 of its 8,192-token context); its released weights hold 7.24B
    // parameters (the mistralai/Mistral-7B-v0.1 model page).
    const sc::ModelConfig mistral = Preset("mistral-7b.json");
    EXPECT_EQ(mistral.graph_windowed_layers(0, mistral.layers), 32);
    EXPECT_NEAR(sc::ComputeModelStats(mistral).params, 7.24e9, 0.005e9);
    // The model summary says which layers the window shortens (CLI text and JSON; the page mirrors the text).
    const sctest::CliResult text = sctest::RunCli(
        "estimate --model presets/models/gpt-oss-120b.json --parallel ep=8,dp=8,batch=64 --allow-oom", false);
    EXPECT_NE(text.out.find("    sliding window            18 of 36 layers see the last 128 keys"), std::string::npos)
        << text.out;
    const sctest::CliResult json = sctest::RunCli(
        "estimate --json --model presets/models/mistral-7b.json --parallel dp=8,batch=64 --allow-oom", false);
    EXPECT_NE(json.out.find("\"windowed_layers\": 32"), std::string::npos) << json.out;
}

TEST(SlidingWindow, FieldIsStrictAndRoundTrips) {
    EXPECT_EQ(ErrorOf({"sliding_window.size=128", "sliding_window.full_every=2"}), "");
    EXPECT_EQ(ErrorOf({"sliding_window.size=128"}), "");
    EXPECT_EQ(ErrorOf({"sliding_window.size=128", "sliding_window.full_every=1"}),
              "sliding_window.full_every: 1 keeps every layer full, so nothing is windowed: use 0 (every layer "
              "windowed), n >= 2 (every n-th layer full), or leave sliding_window out");
    EXPECT_EQ(ErrorOf({"sliding_window.full_every=2"}), "sliding_window.size: missing required field");
    EXPECT_EQ(ErrorOf({"sliding_window.size=0"}).rfind("sliding_window.size:", 0), 0u);
    EXPECT_EQ(ErrorOf({"sliding_window.size=-4"}).rfind("sliding_window.size:", 0), 0u);
    EXPECT_EQ(
        ErrorOf({"sliding_window.size=128", "sliding_window.full_every=-2"}).rfind("sliding_window.full_every:", 0),
        0u);
    EXPECT_EQ(ErrorOf({"sliding_window.size=128", "sliding_window.width=3"}).rfind("sliding_window.width:", 0), 0u);
    // A window edited in place (the page's fields) is checked the same way; size 0 turns it off.
    sc::ModelConfig m = sc::ParseModelConfig(kSmall);
    m.window = {-3, 2};
    EXPECT_THROW(sc::ValidateModelConfig(m), sc::Error);
    m.window = {0, 2};
    EXPECT_NO_THROW(sc::ValidateModelConfig(m));
    EXPECT_FALSE(m.has_window());
    EXPECT_EQ(m.windowed_layers(0, m.layers), 0);
    const sc::ModelConfig oss = Preset("gpt-oss-20b.json");
    const sc::ModelConfig back = sc::ParseModelConfig(sc::ModelConfigToJson(oss));
    EXPECT_EQ(back.window.size, 128);
    EXPECT_EQ(back.window.full_every, 2);
}

TEST(SlidingWindow, GraphWindowsOnlyTheWindowedLayersCore) {
    sc::ModelConfig m = sc::ParseModelConfig(kSmall);  // seq 512
    m.window = {128, 3};                               // layers 2 and 5 full, 0 1 3 4 windowed
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,pp=1,dp=1,microbatch=2,batch=2"));
    EXPECT_EQ(job.graph.dense_layers, 2);
    EXPECT_EQ(job.graph.dense_window_layers, 4);
    EXPECT_DOUBLE_EQ(sctest::ForwardCoreFlops(job, sc::BlockKind::dense_layer),
                     CoreFlops(job, EnumeratedPairs(512, 0)));
    EXPECT_DOUBLE_EQ(sctest::ForwardCoreFlops(job, sc::BlockKind::dense_window_layer),
                     CoreFlops(job, EnumeratedPairs(512, 128)));
    // Only the core differs: weights, bytes of every op and the other ops' FLOPs are the full layer's.
    const sc::Block& full = *job.graph.Find(sc::BlockKind::dense_layer);
    const sc::Block& win = *job.graph.Find(sc::BlockKind::dense_window_layer);
    ASSERT_EQ(full.forward.size(), win.forward.size());
    for (size_t i = 0; i < full.forward.size(); ++i) {
        EXPECT_EQ(full.forward[i].name, win.forward[i].name);
        EXPECT_EQ(job.V(full.forward[i].bytes), job.V(win.forward[i].bytes));
        if (full.forward[i].kind != sc::OpKind::attention) {
            EXPECT_EQ(job.V(full.forward[i].flops), job.V(win.forward[i].flops));
        }
    }
    EXPECT_EQ(job.sums[static_cast<int>(sc::BlockKind::dense_layer)].dense,
              job.sums[static_cast<int>(sc::BlockKind::dense_window_layer)].dense);
    // The model's attention FLOPs per token: 2 full and 4 windowed layers, forward and backward (3x).
    const sc::ModelStats st = sc::ComputeModelStats(m);
    const double per_layer = 2.0 * m.heads * 2 * m.head_dim * 3 / m.seq;
    EXPECT_DOUBLE_EQ(st.attention_flops_per_token,
                     per_layer * (2 * EnumeratedPairs(512, 0) + 4 * EnumeratedPairs(512, 128)));
    // A window as long as the sequence windows nothing; Megatron's unfused core skips nothing either.
    sc::ModelConfig longer = m;
    longer.window.size = 512;
    EXPECT_EQ(sc::MakeJob(longer, job.par).graph.dense_window_layers, 0);
    sc::KernelChoices unfused;
    unfused.flash_attention = false;
    const sc::Job u = sc::MakeJob(m, job.par, unfused);
    double full_sum = 0, win_sum = 0;
    for (const sc::Op& op : u.graph.Find(sc::BlockKind::dense_layer)->forward) full_sum += u.V(op.flops);
    for (const sc::Op& op : u.graph.Find(sc::BlockKind::dense_window_layer)->forward) win_sum += u.V(op.flops);
    EXPECT_EQ(full_sum, win_sum);
}

TEST(SlidingWindow, EveryStageListsItsLayersInOrderOfIndex) {
    // GPT-OSS 120B (36 MoE layers, every other one windowed) on 4 and 5 stages (uneven), and a dense model with
    // leading dense layers under MoE: every listed layer has the kind its index gives, the counts agree.
    sc::ModelConfig mixed = Preset("deepseek-v3.json");
    mixed.window = {1024, 3};
    for (const auto& [m, spec] : std::vector<std::pair<sc::ModelConfig, const char*>>{
             {Preset("gpt-oss-120b.json"), "tp=1,pp=4,dp=1,ep=1,batch=8"},
             {Preset("gpt-oss-120b.json"), "tp=1,pp=5,uneven=1,dp=1,batch=10"},
             {mixed, "tp=1,pp=4,vstages=2,schedule=interleaved,uneven=1,dp=1,batch=8"}}) {
        SCOPED_TRACE(spec);
        const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec(spec));
        int next = 0;
        for (int g = 0; g < job.total_vstages(); ++g) {
            const sc::StageBlockCounts c = sc::BlockCountsOfVstage(job, g);
            int windowed = 0, layers = 0;
            for (const sc::StageBlock& b : sc::BlocksOfVstage(job, g)) {
                if (!sc::IsLayer(b.block->kind)) continue;
                ASSERT_EQ(b.layer, next++);
                const bool w = b.block->kind == sc::BlockKind::dense_window_layer ||
                               b.block->kind == sc::BlockKind::moe_window_layer;
                const bool moe =
                    b.block->kind == sc::BlockKind::moe_layer || b.block->kind == sc::BlockKind::moe_window_layer;
                EXPECT_EQ(w, m.windowed_layer(b.layer)) << b.layer;
                EXPECT_EQ(moe, m.moe_layer(b.layer)) << b.layer;
                windowed += w, ++layers;
            }
            EXPECT_EQ(c.dense_window + c.moe_window, windowed);
            EXPECT_EQ(c.layers(), layers);
        }
        EXPECT_EQ(next, m.layers);
    }
}

TEST(SlidingWindow, TraceNodesCarryEachLayersCoreAndTheEstimateChargesThem) {
    sc::ModelConfig m = Preset("llama3-8b.json");
    m.layers = 4, m.seq = 8192;
    m.window = {1024, 2};  // layers 0 and 2 windowed
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=1,pp=1,dp=1,microbatch=1,batch=2"));
    const sc::StageProgram prog = sc::BuildStageProgram(job, 0);
    int cores = 0;
    for (const sc::ProgNode& n : prog.nodes) {
        const std::string& name = prog.names[n.name];
        if (n.kind != sc::OpKind::attention || n.role != sc::NodeRole::forward) continue;
        const int layer = name[1] - '0';
        const double pairs = EnumeratedPairs(8192, m.windowed_layer(layer) ? 1024 : 0);
        EXPECT_EQ(static_cast<double>(n.flops), CoreFlops(job, pairs)) << name;
        ++cores;
    }
    EXPECT_EQ(cores, 2 * 4);  // two microbatches of four layers
    // The trace's compute durations are the estimate's compute (windowed cores at the windowed efficiency).
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    const sc::TrainingOptions opt;
    const sc::TrainingEstimate e = sc::EstimateTraining(job, sys, &sctest::MeasuredCalibration(), opt);
    const double charged = sctest::ChargedComputeSeconds(e);
    EXPECT_NEAR(sctest::TraceComputeSeconds(job, sys, &sctest::MeasuredCalibration(), opt), charged, 1e-9 * charged);
    // And the window makes the step faster than the same model without one.
    sc::ModelConfig full = m;
    full.window = {};
    const sc::TrainingEstimate f =
        sc::EstimateTraining(sc::MakeJob(full, job.par), sys, &sctest::MeasuredCalibration(), opt);
    EXPECT_LT(e.step.compute, f.step.compute);
}

TEST(SlidingWindow, ServingSumsAreTheWindowedPairsAndKeys) {
    // Chunks of a prompt sum to the whole prompt's windowed pairs; a decode reads at most the window.
    sc::BatchShape one, chunks;
    one.AddPrefillChunk(0, 1000, 128);
    for (int done = 0; done < 1000; done += 300) chunks.AddPrefillChunk(done, std::min(300, 1000 - done), 128);
    EXPECT_DOUBLE_EQ(one.window_prefill_pairs, EnumeratedPairs(1000, 128));
    EXPECT_DOUBLE_EQ(chunks.window_prefill_pairs, EnumeratedPairs(1000, 128));
    EXPECT_DOUBLE_EQ(chunks.prefill_pairs, EnumeratedPairs(1000, 0));
    EXPECT_DOUBLE_EQ(one.window_prefill_keys, 1000);  // the whole prompt is new
    sc::BatchShape later;
    later.AddPrefillChunk(700, 300, 128);  // queries 700..999 see keys 573..999
    EXPECT_DOUBLE_EQ(later.window_prefill_keys, 999 - 573 + 1);
    sc::BatchShape d;
    d.AddDecode(5000, 128), d.AddDecode(50, 128);
    EXPECT_DOUBLE_EQ(d.window_decode_keys, 128 + 51);
    EXPECT_DOUBLE_EQ(d.decode_keys, 5001 + 51);

    // Every layer windowed: decode steps past the window cost the same; a single request's first token is the
    // per-op prefill of its prompt.
    sc::ModelConfig m = servetest::Model("llama3-8b");
    m.window = {256, 0};
    const sc::System& sys = servetest::System("dgx-h100-superpod");
    sc::ServingPrecision prec;
    sc::IterationCost cost(m, prec, 1, sys, &servetest::Calibration(), 512, 512);
    EXPECT_DOUBLE_EQ(cost.DecodeSeconds(1000), cost.DecodeSeconds(4000));
    sc::ModelConfig full = m;
    full.window = {};
    sc::IterationCost full_cost(full, prec, 1, sys, &servetest::Calibration(), 512, 512);
    EXPECT_LT(cost.DecodeSeconds(4000), full_cost.DecodeSeconds(4000));
    EXPECT_DOUBLE_EQ(cost.DecodeSeconds(100), full_cost.DecodeSeconds(100));  // inside the window: no difference
    sc::ServingConfig c = servetest::Base("llama3-8b", 1, 2000, 1, 1);
    c.model = m;
    c.engine.max_tokens = 4096;
    sc::IterationCost engine_cost(m, c.precision, 1, sys, &servetest::Calibration(), 4096, 4096);
    const sc::ServingResult r = sc::Simulate(c, engine_cost, 1000);
    EXPECT_NEAR(r.ttft.mean, engine_cost.PrefillSeconds(2000), 1e-12);
    EXPECT_LT(engine_cost
                  .Work([] {
                      sc::BatchShape b;
                      b.AddPrefillChunk(0, 2000, 256);
                      return b;
                  }())
                  .attention_flops,
              full_cost
                  .Work([] {
                      sc::BatchShape b;
                      b.AddPrefillChunk(0, 2000, 0);
                      return b;
                  }())
                  .attention_flops);
}

namespace {

// Blocks of one layer's cache holding the positions first .. last (none when last < first).
long long BlocksTouched(long long first, long long last, int block) {
    return last < first ? 0 : last / block - first / block + 1;
}

}  // namespace

TEST(SlidingWindow, KvBlocksAreTheBlocksTheWindowsStillTouch) {
    // Held: vLLM V1 frees a windowed layer's blocks once wholly before the earliest key a query of the iteration
    // sees; a full layer keeps every block. In blocks of the whole stage, the layers' blocks rounded up.
    for (int block : {1, 4, 16})
        for (long long window : {2, 5, 16, 100})
            for (auto [full, win] : {std::pair{0, 4}, {2, 2}, {3, 1}}) {
                sc::KvLayout k;
                k.full_layers = full, k.window_layers = win, k.window = window, k.block_size = block;
                for (long long p = 0; p <= 300; p += 7)
                    for (long long c : {1, 7, 64}) {
                        const long long full_blocks = BlocksTouched(0, p + c - 1, block);
                        const long long win_blocks = BlocksTouched(std::max(0LL, p - window + 1), p + c - 1, block);
                        const long long layers = full + win;
                        ASSERT_EQ(k.Held(p, c), (full * full_blocks + win * win_blocks + layers - 1) / layers)
                            << block << " " << window << " " << full << "/" << win << " " << p << " " << c;
                    }
                // The most a request of `total` tokens holds, computed `chunk` at a time, bounds every iteration.
                for (long long total : {50, 300})
                    for (long long chunk : {1, 64}) {
                        long long most = 0;
                        for (long long p = 0; p < total; ++p)
                            for (long long c = 1; c <= chunk && p + c <= total; ++c)
                                most = std::max(most, k.Held(p, c));
                        EXPECT_LE(most, k.MostHeld(total, chunk));
                        EXPECT_LE(k.MostHeld(total, chunk), k.Blocks(total));
                    }
                // TensorRT-LLM's reservation: ceil(min(total, window) / block) for a windowed layer.
                const long long n = (1000 + block - 1) / block, w = (std::min(1000LL, window) + block - 1) / block;
                EXPECT_EQ(k.Reserved(1000), (full * n + win * w + full + win - 1) / (full + win));
            }
    // Without a window every count is the context's blocks.
    const sc::KvLayout plain = sc::KvLayoutOf(Preset("llama3-8b.json"), 1, 16);
    EXPECT_FALSE(plain.windowed());
    EXPECT_EQ(plain.Held(1000, 24), 64);
    EXPECT_EQ(plain.Reserved(1024), 64);
    EXPECT_EQ(plain.MostHeld(1024, 1), 64);
    // GPT-OSS 120B on 4 stages: the 9-layer stages hold 5 or 4 windowed layers; the first (5) is counted.
    const sc::KvLayout oss = sc::KvLayoutOf(Preset("gpt-oss-120b.json"), 4, 16);
    EXPECT_EQ(oss.window_layers, 5);
    EXPECT_EQ(oss.full_layers, 4);
}

namespace {

// The 3,100-token request of the tests below on a cache of 64 blocks of 16 tokens: refused, needing its 194.
void ExpectRefusedAt194Blocks(const sc::ServingConfig& c, const sc::IterationCost& cost) {
    try {
        sc::Simulate(c, cost, 64);
        ADD_FAILURE() << "a 3,100-token request fitted 64 blocks of 16 tokens";
    } catch (const sc::Error& e) {
        EXPECT_NE(std::string(e.what()).find("needs 194 KV blocks but the cache holds 64"), std::string::npos)
            << e.what();
    }
}

}  // namespace

TEST(SlidingWindow, AWindowedCacheServesContextsLongerThanItHolds) {
    // Every layer windowed to 256 keys, 16-token blocks, a cache of 64 blocks (1,024 token slots): a request of
    // 100 + 3,000 tokens needs 194 blocks of full attention and is refused; windowed it never holds more than
    // MostHeld and completes, its blocks freed as they leave the window.
    sc::ServingConfig c = servetest::Base("llama3-8b", 1, 100, 3000, 2);
    c.engine.block_size = 16;
    c.engine.max_tokens = 512;  // a preempted request's recomputed context comes back 512 tokens at a time
    const sc::System& sys = servetest::System("dgx-h100-superpod");
    sc::IterationCost full_cost(c.model, c.precision, 1, sys, &servetest::Calibration(), 100, c.engine.max_tokens);
    ExpectRefusedAt194Blocks(c, full_cost);
    c.model.window = {256, 0};
    sc::IterationCost cost(c.model, c.precision, 1, sys, &servetest::Calibration(), 100, c.engine.max_tokens);
    const sc::ServingResult r = sc::Simulate(c, cost, 64);
    EXPECT_EQ(r.completed, 2);
    EXPECT_EQ(r.preemptions, 0);
    const sc::KvLayout k = sc::KvLayoutOf(c.model, 1, 16);
    // Both run together at the end: 2 x (256 - 1 + 1) / 16 + 1 = 2 x 17 blocks at most.
    EXPECT_EQ(k.MostHeld(3100, 1), 17);
    EXPECT_LE(r.kv_occupancy_peak, 2.0 * k.MostHeld(3100, 100) / 64);
    EXPECT_GE(r.kv_occupancy_peak, 2.0 * 16 / 64);  // the window's 256 keys, 16 blocks each
    // Reserved whole (TensorRT-LLM): ceil(min(3,100, 256) / 16) = 16 blocks a request.
    c.engine.admission = sc::KvAdmission::reserve_full;
    const sc::ServingResult reserved = sc::Simulate(c, cost, 64);
    EXPECT_EQ(reserved.completed, 2);
    EXPECT_DOUBLE_EQ(reserved.kv_occupancy_peak, 2.0 * 16 / 64);
}

TEST(SlidingWindow, WithoutEvictionAWindowedLayerHoldsItsWholeContext) {
    // The cache and request above, every layer windowed to 256 keys, but an engine that frees nothing
    // (EngineConfig::window_eviction false: TensorRT-LLM's PyTorch backend not given the layers' windows): the
    // 3,100-token request needs its 194 blocks, as under full attention, and is refused.
    sc::ServingConfig c = servetest::Base("llama3-8b", 1, 100, 3000, 2);
    c.engine.block_size = 16;
    c.engine.max_tokens = 512;
    c.engine.window_eviction = false;
    c.model.window = {256, 0};
    const sc::System& sys = servetest::System("dgx-h100-superpod");
    sc::IterationCost cost(c.model, c.precision, 1, sys, &servetest::Calibration(), 100, c.engine.max_tokens);
    ExpectRefusedAt194Blocks(c, cost);
    const sc::KvLayout k = sc::KvLayoutOf(c.model, 1, 16, false);
    EXPECT_FALSE(k.windowed());
    EXPECT_EQ(k.Held(1000, 24), 64);
    EXPECT_EQ(k.Reserved(3100), 194);
    // Its attention still reads only the window: the same iteration costs the same with or without eviction (the
    // cost model does not read the engine), and less than the same model without a window.
    sc::BatchShape b;
    b.AddDecode(3000, c.model.window.size);
    sc::ServingConfig full = c;
    full.model.window = {};
    sc::IterationCost full_cost(full.model, full.precision, 1, sys, &servetest::Calibration(), 100, 512);
    EXPECT_LT(cost.Breakdown(b).attention, full_cost.Breakdown(b).attention);
    // A disaggregated pool sends the whole prompt of every layer.
    c.engine.max_tokens = 8192;
    c.decode_pool = sc::PoolConfig{1, 1};
    const sc::ServingRun run = sc::SimulateServing(c, sys, &servetest::Calibration());
    ASSERT_TRUE(run.transfer.has_value());
    EXPECT_EQ(run.transfer->window, 0);
}

TEST(SlidingWindow, ADisaggregatedPoolSendsWhatTheWindowsStillHold) {
    // GPT-OSS-shaped windows on a Llama 3 8B: 16 of 32 layers windowed to 128 keys. A 900-token prompt crosses to
    // the decode pool with its full layers' 900 tokens and its windowed layers' last 128.
    sc::ServingConfig c = servetest::Base("llama3-8b", 1, 900, 40, 1);
    c.model.window = {128, 2};
    c.decode_pool = sc::PoolConfig{1, 1};
    const sc::System& sys = servetest::System("dgx-h100-superpod");
    const sc::ServingRun run = sc::SimulateServing(c, sys, &servetest::Calibration());
    ASSERT_TRUE(run.transfer.has_value());
    const sc::KvTransferModel& t = *run.transfer;
    EXPECT_EQ(t.window, 128);
    EXPECT_EQ(t.window_share, 0.5);
    EXPECT_DOUBLE_EQ(t.Seconds(900), t.latency + (450 + 0.5 * 128) * t.seconds_per_token);
    EXPECT_DOUBLE_EQ(t.Seconds(100), t.latency + 100 * t.seconds_per_token);  // inside the window: everything
    ASSERT_EQ(run.result.kv_transfers, 1);
    EXPECT_NEAR(run.result.kv_transfer_mean, t.Seconds(900), 1e-15);
    // The report says so (the CLI's and the page's text).
    sc::engine::ServeRequest req;
    req.config = c, req.system = &sys, req.calibration = &servetest::Calibration();
    const std::string text = sc::ServeReportText(req, sc::engine::RunServe(req));
    EXPECT_NE(text.find("us per prompt token (50% of it, the windowed layers', only for the last 128)"),
              std::string::npos)
        << text;
    // Without a window the whole context crosses, as before.
    c.model.window = {};
    const sc::ServingRun full = sc::SimulateServing(c, sys, &servetest::Calibration());
    EXPECT_DOUBLE_EQ(full.transfer->Seconds(900), full.transfer->latency + 900 * full.transfer->seconds_per_token);
    EXPECT_GT(full.result.kv_transfer_mean, run.result.kv_transfer_mean);
}
