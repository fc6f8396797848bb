// Hybrid models (ModelConfig::hybrid, Megatron-Core's hybrid_layer_pattern): a Mamba-2 mixer, attention alone, a
// dense MLP alone or an MoE alone a layer. Checked in closed form against the mixer's own sizes (Megatron-Core
// MambaMixer: in_proj h -> 2 d_inner + 2 groups state + heads, a depthwise convolution over x, B and C, A, D and
// dt's bias a head, a gated norm, out_proj d_inner -> h) and Megatron-Bridge's FLOP count, through the trace, the
// estimate and ASTRA-sim's rules; refused, with the field named, where it is not modelled.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/error.h"
#include "config/model_config.h"
#include "config/overrides.h"
#include "graph/flop_conventions.h"
#include "graph/model_stats.h"
#include "graph/transformer_graph.h"
#include "inference/kv_capacity.h"
#include "inference/serving_config.h"
#include "link/config_link.h"
#include "parallel/job.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace_test_util.h"
#include "training/estimate.h"

namespace {

// Eight layers: four Mamba, two attention, two MLP, tp-divisible everywhere.
const char* kSmall = R"({"name":"h","layers":8,"hidden":128,"heads":4,"kv_heads":2,"ffn":256,"vocab":100,"seq":256,
                         "mlp":"relu2","norm":"rmsnorm","position":"none","tied_embeddings":false,
                         "hybrid_pattern":"M-M*M-M*","mamba":{"heads":8,"head_dim":32,"state":16,"groups":2}})";

std::string ErrorOf(const std::vector<std::string>& sets) {
    return sctest::ErrorOf([&] { sc::ParseModelConfig(sc::ApplyOverrides(kSmall, sets, "test")); });
}

sc::ModelConfig Small() { return sc::ParseModelConfig(kSmall); }

// Parameters of a hybrid model by hand, from its fields.
double HandParams(const sc::ModelConfig& m) {
    const double h = m.hidden, V = m.vocab, a = m.heads, kv = m.kv_heads, d = m.head_dim, f = m.ffn;
    const double nh = m.mamba.heads, di = nh * m.mamba.head_dim, bc = 2.0 * m.mamba.groups * m.mamba.state;
    const double mamba = h + h * (2 * di + bc + nh) + (di + bc) * (m.mamba.conv_kernel + 1) + 3 * nh + di + di * h;
    const double attention = h + h * (a + 2 * kv) * d + a * d * h;
    const double mlp = h + 2 * h * f;
    const double fe = m.moe.expert_ffn;
    const double moe = h + h * m.moe.experts + m.moe.experts * 2 * h * fe + m.moe.shared_experts * 2 * h * fe;
    double n = 2 * V * h + h;  // embedding, untied LM head, final norm
    for (char c : m.hybrid) n += c == 'M' ? mamba : c == '*' ? attention : c == '-' ? mlp : moe;
    return n;
}

TEST(Hybrid, FieldsAreStrictAndRoundTrip) {
    EXPECT_EQ(ErrorOf({}), "");
    const sc::ModelConfig m = Small();
    EXPECT_TRUE(m.is_hybrid());
    EXPECT_EQ(m.mlp, sc::MlpKind::relu2);
    EXPECT_EQ(m.position, sc::PositionKind::none);
    const sc::ModelConfig back = sc::ParseModelConfig(sc::ModelConfigToJson(m));
    EXPECT_EQ(back.hybrid, m.hybrid);
    EXPECT_EQ(back.mamba.heads, 8);
    EXPECT_EQ(back.mamba.state, 16);
    EXPECT_EQ(back.mlp, sc::MlpKind::relu2);
    EXPECT_EQ(back.position, sc::PositionKind::none);
    const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
        {{"hybrid_pattern=\"M-M*M-MX\""}, "hybrid_pattern: symbol 'X' at layer 7 is not one of M"},
        {{"hybrid_pattern=\"M-M*\""}, "hybrid_pattern: has 4 symbols for layers=8"},
        {{"layers=9"}, "hybrid_pattern: has 8 symbols for layers=9"},
        {{"mamba.heads=0"}, "mamba.heads"},
        {{"mamba.groups=3"}, "mamba.groups: 3 groups do not divide 8 Mamba heads"},
        {{"hybrid_pattern=\"\""}, "mamba: describes Mamba layers, but hybrid_pattern is empty"},
        {{"hybrid_pattern=\"M-M*M-ME\""}, "moe: the pattern's E layers need the MoE settings"},
        {{"sliding_window.size=64"}, "sliding_window: windowed attention in a hybrid model is not modelled"},
        {{"mtp_layers=1"}, "mtp_pattern: a hybrid model's MTP module is a pattern"},
        {{"mlp=\"relu\""}, "mlp: \"relu\" is not one of \"gelu\", \"swiglu\", \"relu2\""},
    };
    for (const auto& [sets, want] : bad) {
        const std::string e = ErrorOf(sets);
        EXPECT_EQ(e.rfind(want, 0), 0u) << sets[0] << ": " << e;
    }
    // MoE settings the pattern has no E layer for, and transformer-only MoE placement.
    sc::ModelConfig moe = Small();
    moe.moe.experts = 4, moe.moe.top_k = 2, moe.moe.expert_ffn = 64;
    EXPECT_EQ(sctest::FieldOf([&] { sc::ValidateModelConfig(moe); }), "hybrid_pattern");
    moe.hybrid = "M-M*M-ME";
    EXPECT_NO_THROW(sc::ValidateModelConfig(moe));
    moe.moe.every = 2;
    EXPECT_EQ(sctest::FieldOf([&] { sc::ValidateModelConfig(moe); }), "moe.every");
}

// The graph is the pattern's kinds, each once, repeated as often as the pattern has it; the parameters are the
// mixer's, attention's and the MLP's by hand, to the parameter.
TEST(Hybrid, GraphIsThePatternsKindsAndItsParametersAreTheMixers) {
    const sc::ModelConfig m = Small();
    const sc::Graph g = sc::BuildTransformerGraph(m, sc::GraphOptions{});
    EXPECT_EQ(g.Find(sc::BlockKind::dense_layer), nullptr);
    ASSERT_NE(g.Find(sc::BlockKind::mamba_layer), nullptr);
    ASSERT_NE(g.Find(sc::BlockKind::attention_layer), nullptr);
    ASSERT_NE(g.Find(sc::BlockKind::mlp_layer), nullptr);
    EXPECT_EQ(g.Find(sc::BlockKind::moe_mlp_layer), nullptr);
    EXPECT_EQ(g.Repeats(sc::BlockKind::mamba_layer), 4);
    EXPECT_EQ(g.Repeats(sc::BlockKind::attention_layer), 2);
    EXPECT_EQ(g.Repeats(sc::BlockKind::mlp_layer), 2);
    EXPECT_DOUBLE_EQ(sc::ComputeModelStats(m).params, HandParams(m));
    for (const char* id : {"nemotron-h-8b.json", "nemotron-3-nano.json"}) {
        const sc::ModelConfig p = sctest::LoadModelPreset(id);
        EXPECT_DOUBLE_EQ(sc::ComputeModelStats(p).params, HandParams(p)) << id;
    }
    // Nemotron 3 Nano: 31.6B parameters in total (NVIDIA's model card), 23 Mamba, 23 MoE and 6 attention layers.
    const sc::ModelConfig nano = sctest::LoadModelPreset("nemotron-3-nano.json");
    EXPECT_NEAR(sc::ComputeModelStats(nano).params / 1e9, 31.6, 0.05);
    const sc::ModelConfig::LayerKinds k = nano.layer_kinds(0, nano.layers, false);
    EXPECT_EQ(k.mamba, 23);
    EXPECT_EQ(k.moe_mlp, 23);
    EXPECT_EQ(k.attention, 6);
    EXPECT_EQ(nano.moe_layers(), 23);
}

// Megatron-Bridge counts a Mamba layer's in_proj, scan (7 d_inner state) and out_proj, attention causally and each
// MLP's two GEMMs, times 3 (training/utils/flop_utils.py hybrid_flops); the graph's matmul and attention FLOPs are
// the same, but for the causal diagonal (s + 1 over s of the attention cores), where d_inner = 2 h as the file
// assumes (Nemotron-H 8B: 128 x 64 = 2 x 4,096).
TEST(Hybrid, FlopsAreMegatronBridgesHybridCount) {
    const sc::ModelConfig m = sctest::LoadModelPreset("nemotron-h-8b.json");
    ASSERT_EQ(m.mamba.inner(), 2LL * m.hidden);
    const sc::ModelStats st = sc::ComputeModelStats(m);
    const double graph = st.matmul_flops_per_token + st.attention_flops_per_token;
    const double bridge = sc::MegatronFlops(m, 1, m.vocab) / m.seq;
    EXPECT_NEAR(graph / bridge, 1.0, 2e-5);
    EXPECT_GT(graph, bridge);  // the diagonal
}

// The estimate charges the compute the trace writes (one stage, TP and SP); the traces of a split with PP keep
// ASTRA-sim's rules and the independent checker's.
TEST(Hybrid, TraceAndEstimateChargeTheSameComputeAndKeepAstraSimsRules) {
    EXPECT_GT(
        sctest::ChargedComputeEqualsTraceCompute(sc::MakeJob(Small(), sc::ParseParallelSpec("tp=2,sp=1,dp=2,batch=4"))),
        0);
    sctest::ExpectTracesKeepAstraSimsRules(
        sc::MakeJob(Small(), sc::ParseParallelSpec("tp=2,sp=1,pp=2,dp=2,batch=8,zero=1")), "hybrid");
}

// What a Mamba layer keeps for its backward is what Megatron-Core's memory-efficient path keeps: the norm's input and
// the input projection's (this rank's sequence shard under SP), the projection's whole output zxbcdt (z, x, B, C,
// dt), the scan's output and its fp32 dt and dA, and the output projection's input; under full recomputation only
// the layer's input.
TEST(Hybrid, AMambaLayerKeepsWhatTheMemoryEfficientPathKeeps) {
    const sc::ModelConfig m = Small();
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,sp=1,microbatch=1,batch=1"));
    const double w = 2, tp = 2, T = m.seq, Tn = T / tp, h = m.hidden;
    const double nh = m.mamba.heads, di = nh * m.mamba.head_dim, bc = 2.0 * m.mamba.groups * m.mamba.state;
    const double kept = w * (2 * Tn * h + T * (2 * di + bc + nh) / tp + 2 * T * di / tp) + 8 * T * nh / tp;
    const sc::BlockSums& mamba = job.sums[static_cast<int>(sc::BlockKind::mamba_layer)];
    EXPECT_DOUBLE_EQ(mamba.saved[static_cast<int>(sc::Recompute::none)], kept);
    EXPECT_DOUBLE_EQ(mamba.saved[static_cast<int>(sc::Recompute::full)], w * Tn * h);
}

// A Mamba layer costs what its mixer does: more Mamba heads, more time and memory.
TEST(Hybrid, TheMixerIsWhatAMambaLayerCosts) {
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    const sc::ParallelConfig p = sc::ParseParallelSpec("tp=2,sp=1,dp=4,batch=8");
    sc::ModelConfig wide = Small();
    wide.mamba.heads = 16;
    const sc::TrainingEstimate a =
        sc::EstimateTraining(sc::MakeJob(Small(), p), sys, &sctest::MeasuredCalibration(), {});
    const sc::TrainingEstimate b = sc::EstimateTraining(sc::MakeJob(wide, p), sys, &sctest::MeasuredCalibration(), {});
    EXPECT_GT(b.step_seconds, a.step_seconds);
    EXPECT_GT(b.memory_peak, a.memory_peak);
}

// Splits Megatron-Core's MambaMixer refuses, and what the model does not run, name the field.
TEST(Hybrid, SplitsTheMixerCannotTakeAreRefused) {
    const sc::ModelConfig m = Small();  // 8 Mamba heads in 2 groups
    auto field = [&](const char* spec) {
        return sctest::FieldOf([&] { sc::MakeJob(m, sc::ParseParallelSpec(spec)); });
    };
    EXPECT_EQ(field("tp=4,batch=4"), "tp");  // 2 groups
    EXPECT_EQ(field("cp=2,batch=4"), "cp");
    EXPECT_EQ(field("tp=2,batch=4"), "<no error>");
    // Served, the same splits: the weights are counted on the training graph, which refuses them.
    sc::ServingConfig c;
    c.model = m;
    c.pool.tp = 4;
    EXPECT_NE(sctest::FieldOf([&] { sc::ServingWeightBytesPerRank(c.model, c.precision, 4); }), "<no error>");
}

// The pattern travels in a link; a damaged one is refused with the key named.
TEST(Hybrid, PatternTravelsInALink) {
    sc::ConfigLink l;
    l.model = "nemotron-h-8b";
    l.parallel = "tp=2";
    l.hybrid = "M-M*";
    const sc::ConfigLink back = sc::DecodeConfigLink(sc::EncodeConfigLink(l));
    ASSERT_TRUE(back.hybrid.has_value());
    EXPECT_EQ(*back.hybrid, "M-M*");
    std::string text = sc::EncodeConfigLink(l);
    text.replace(text.find("hybrid=M-M*"), 11, "hybrid=M-Mx");
    EXPECT_EQ(sctest::FieldOf([&] { sc::DecodeConfigLink(text); }), "hybrid");
}

}  // namespace
