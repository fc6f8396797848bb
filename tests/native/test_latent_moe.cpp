// Latent MoE (MoeConfig::latent, Megatron-Core moe_latent_size) and a hybrid model's MTP module
// (ModelConfig::mtp_pattern, mtp_repeated), the two things Nemotron 3 Super adds to Nemotron 3 Nano's kinds. Checked
// against the published checkpoint's parameter count, a hand count of the routed path's GEMMs and bytes, and
// Megatron-Bridge's FLOP count; through the trace, the estimate and ASTRA-sim's rules; refused with the field named
// where it is not modelled.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/model_config.h"
#include "config/overrides.h"
#include "graph/flop_conventions.h"
#include "graph/model_stats.h"
#include "graph/transformer_graph.h"
#include "inference/serving_config.h"
#include "parallel/job.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace_test_util.h"
#include "training/estimate.h"

namespace {

// A four-layer transformer MoE whose experts run on a 64-wide latent (h = 256).
sc::ModelConfig SmallLatent() {
    sc::ModelConfig m = sctest::SmallMoe();
    m.moe.latent = 64;
    return m;
}

// A hybrid model with Super's kinds: Mamba, attention and latent MoE layers, two MTP depths of one "*E" module.
sc::ModelConfig SmallSuper() {
    sc::ModelConfig m = SmallLatent();
    m.hybrid = "M*ME";
    m.moe.dense_layers = 0;
    m.mamba = {8, 32, 16, 2, 4};
    m.mtp_layers = 2;
    m.mtp_pattern = "*E";
    m.mtp_repeated = true;
    sc::ValidateModelConfig(m);
    return m;
}

const sc::Op* FindOp(const sc::Job& job, const std::string& name) {
    for (const sc::Block& b : job.graph.blocks)
        for (const sc::Op& op : b.forward)
            if (op.name == name) return &op;
    return nullptr;
}

// Nemotron 3 Super as published: its BF16 checkpoint holds 123,611,012,096 weights (the safetensors headers, as
// public test fixtures of its config.json record them; Megatron-Bridge's verification card counts 123,611,033,088 with
// the 41 fp32 router correction-bias vectors of 512, which are not weights), of which 2,942,324,736 are the MTP module
// and 107,898,470,400 the experts a token does not reach (490 of 512 in each of 40 layers).
TEST(LatentMoe, NemotronThreeSuperIsItsCheckpointToTheWeight) {
    const sc::ModelConfig super = sctest::LoadModelPreset("nemotron-3-super.json");
    const sc::ModelStats st = sc::ComputeModelStats(super);
    EXPECT_DOUBLE_EQ(st.params, 123'611'012'096.0);
    sc::ModelConfig main_only = super;
    main_only.mtp_layers = 0, main_only.mtp_repeated = false;
    const sc::ModelStats main_st = sc::ComputeModelStats(main_only);
    EXPECT_DOUBLE_EQ(st.params - main_st.params, 2'942'324'736.0);
    EXPECT_DOUBLE_EQ(main_st.params - main_st.active_params, 107'898'470'400.0);
    EXPECT_DOUBLE_EQ(main_st.active_params, 12'770'216'960.0);
    // One module in the checkpoint, run at two depths: the second depth adds no weights.
    sc::ModelConfig one_depth = super;
    one_depth.mtp_layers = 1, one_depth.mtp_repeated = false;
    EXPECT_DOUBLE_EQ(sc::ComputeModelStats(one_depth).params, st.params);
}

// The routed path of a latent MoE layer: the duplicated h -> latent projection on this rank's tokens, the all-to-alls
// and the expert GEMMs latent wide, the latent -> h projection; the router and the shared expert stay h wide. The
// training FLOPs per token are six times every GEMM's weights a token passes (the LM head included), by hand.
TEST(LatentMoe, TheExpertsAndTheAllToAllsAreLatentWide) {
    const sc::ModelConfig m = SmallLatent();
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=2,microbatch=1,batch=4"));
    const double L = m.moe.latent, h = m.hidden, Tm = m.seq / 2.0, w = 2;
    const sc::Op* down = FindOp(job, "moe.fc1_latent_proj");
    const sc::Op* up = FindOp(job, "moe.fc2_latent_proj");
    ASSERT_NE(down, nullptr);
    ASSERT_NE(up, nullptr);
    EXPECT_DOUBLE_EQ(job.V(down->gemm_m), Tm);
    EXPECT_DOUBLE_EQ(job.V(down->gemm_n), L);
    EXPECT_DOUBLE_EQ(job.V(down->gemm_k), h);
    EXPECT_DOUBLE_EQ(job.V(up->gemm_n), h);
    EXPECT_DOUBLE_EQ(job.V(up->gemm_k), L);
    const sc::Op* dispatch = FindOp(job, "moe.dispatch");
    ASSERT_NE(dispatch, nullptr);
    EXPECT_DOUBLE_EQ(job.V(dispatch->comm_bytes), Tm * m.moe.top_k * L * w);
    const sc::Op* experts = FindOp(job, "moe.experts.gate_up");
    ASSERT_NE(experts, nullptr);
    EXPECT_DOUBLE_EQ(job.V(experts->gemm_k), L);
    const sc::Op* shared = FindOp(job, "moe.shared.gate_up");
    ASSERT_NE(shared, nullptr);
    EXPECT_DOUBLE_EQ(job.V(shared->gemm_k), h);

    const double a = m.heads, kv = m.kv_heads, d = m.head_dim, E = m.moe.experts, k = m.moe.top_k;
    const double fe = m.moe.expert_ffn, se = m.moe.shared_experts, V = m.vocab;
    const double attention = h * (a + 2 * kv) * d + a * d * h;
    const double moe = h * E + h * L + k * 3 * L * fe + se * 3 * h * fe + L * h;
    const double dense = 3 * h * m.ffn, n_dense = m.moe.dense_layers;  // its leading dense layer
    EXPECT_DOUBLE_EQ(sc::ComputeModelStats(m).matmul_flops_per_token,
                     6 * (m.layers * attention + n_dense * dense + (m.layers - n_dense) * moe + h * V));
}

// Megatron-Bridge's hybrid_flops (training/utils/flop_utils.py @ 067f987): a latent MoE's routed term on the latent
// width plus its two projections, and each MTP depth's layers (Megatron-Core's get_hybrid_layer_counts counts the MTP
// pattern once a depth) and logits. For Nemotron 3 Super at 8,192 tokens that is 84,727,037,952 FLOPs a token, as the
// file's formula evaluates by hand; Megatron-Bridge's 26.08 table prints 831 TFLOP/s at 9,856 tokens/s on GB300 and
// 600 at 7,040 on GB200 (84.3 and 85.2 GFLOP a token, its token rates being multiples of 128).
TEST(LatentMoe, MegatronBridgeCountsSuperAsItsTableDoes) {
    const sc::ModelConfig super = sctest::LoadModelPreset("nemotron-3-super.json");
    const double per_token = sc::MegatronFlops(super, 1, super.vocab) / super.seq;
    EXPECT_NEAR(per_token / 84'727'037'952.0, 1.0, 1e-12);
    for (const auto& [tflops, tokens] : {std::pair{831.0, 9856.0}, std::pair{600.0, 7040.0}})
        EXPECT_NEAR(tflops * 1e12 / tokens / per_token, 1.0, 0.01) << tflops;
}

// The MTP depths of a repeated module share its weights but each runs it: two depths cost twice one depth's FLOPs,
// and the same weights; unrepeated, two depths hold two modules.
TEST(HybridMtp, RepeatedDepthsRunOneModuleTwice) {
    sc::ModelConfig none = SmallSuper(), one = SmallSuper(), two = SmallSuper(), two_own = SmallSuper();
    none.mtp_layers = 0, none.mtp_repeated = false;
    one.mtp_layers = 1, one.mtp_repeated = false;
    two_own.mtp_repeated = false;
    const sc::ModelStats s0 = sc::ComputeModelStats(none), s1 = sc::ComputeModelStats(one);
    const sc::ModelStats s2 = sc::ComputeModelStats(two), s2own = sc::ComputeModelStats(two_own);
    EXPECT_GT(s1.params, s0.params);
    EXPECT_DOUBLE_EQ(s2.params, s1.params);
    EXPECT_DOUBLE_EQ(s2own.params - s0.params, 2 * (s1.params - s0.params));
    EXPECT_NEAR(s2.matmul_flops_per_token - s0.matmul_flops_per_token,
                2 * (s1.matmul_flops_per_token - s0.matmul_flops_per_token), 1e-9 * s2.matmul_flops_per_token);
    EXPECT_DOUBLE_EQ(s2.matmul_flops_per_token, s2own.matmul_flops_per_token);
    // The module is the pattern's layers: its attention and its latent MoE, after the projection 2h -> h.
    const sc::Job job = sc::MakeJob(two, sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=2,microbatch=1,batch=4"));
    EXPECT_NE(FindOp(job, "mtp2.1.moe.fc1_latent_proj"), nullptr);
    EXPECT_NE(FindOp(job, "mtp2.eh_proj"), nullptr);
}

// The estimate charges the compute the trace writes; the traces of a pipelined split keep ASTRA-sim's rules and the
// independent checker's.
TEST(HybridMtp, TraceAndEstimateChargeTheSameComputeAndKeepAstraSimsRules) {
    EXPECT_GT(sctest::ChargedComputeEqualsTraceCompute(
                  sc::MakeJob(SmallSuper(), sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=2,batch=4"))),
              0);
    sctest::ExpectTracesKeepAstraSimsRules(
        sc::MakeJob(SmallSuper(), sc::ParseParallelSpec("tp=2,sp=1,ep=2,pp=2,dp=2,batch=8,zero=1")), "latent-mtp");
}

// What is not modelled, or contradicts itself, names its field.
TEST(LatentMoe, FieldsAreStrictAndRoundTrip) {
    const sc::ModelConfig m = SmallSuper();
    const sc::ModelConfig back = sc::ParseModelConfig(sc::ModelConfigToJson(m));
    EXPECT_EQ(back.moe.latent, 64);
    EXPECT_EQ(back.mtp_pattern, "*E");
    EXPECT_TRUE(back.mtp_repeated);
    const std::string json = sc::ModelConfigToJson(m);
    auto error = [&](const std::vector<std::string>& sets) {
        return sctest::ErrorOf([&] { sc::ParseModelConfig(sc::ApplyOverrides(json, sets, "test")); });
    };
    const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
        {{"mtp_pattern=\"\""}, "mtp_pattern: a hybrid model's MTP module is a pattern"},
        {{"mtp_pattern=\"*X\""}, "mtp_pattern: symbol 'X' at 1"},
        {{"moe.latent=-1"}, "moe.latent"},
    };
    for (const auto& [sets, want] : bad) {
        const std::string e = error(sets);
        EXPECT_EQ(e.rfind(want, 0), 0u) << sets[0] << ": " << e;
    }
    sc::ModelConfig transformer = SmallLatent();
    transformer.mtp_layers = 1, transformer.mtp_pattern = "*E";
    EXPECT_EQ(sctest::FieldOf([&] { sc::ValidateModelConfig(transformer); }), "mtp_pattern");
    sc::ModelConfig dense = sctest::SmallGpt();
    dense.moe.latent = 64;
    EXPECT_EQ(sctest::FieldOf([&] { sc::ValidateModelConfig(dense); }), "moe.latent");
    sc::ServingConfig c;  // served since the twenty-second round (test_serve_hybrid.cpp)
    c.model = SmallLatent();
    EXPECT_EQ(sctest::FieldOf([&] { sc::ValidateServingConfig(c); }), "<no error>");
}

}  // namespace
