// Serving a hybrid Mamba-Transformer model (ModelConfig::hybrid): only its attention layers cache keys and values,
// its Mamba layers keep a fixed state per sequence (reserved for max_seqs sequences), a Mamba layer's decode is a
// state update whose cost does not grow with the context, and a prefill computes the FLOPs the training graph's
// forward does. Checked by hand on Nemotron 3 Nano and on a small pattern, and end to end through the CLI.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "config/model_config.h"
#include "inference/iteration_cost.h"
#include "inference/kv_capacity.h"
#include "inference/serving_config.h"
#include "parallel/job.h"
#include "serve_test_util.h"
#include "test_util.h"

namespace {

using servetest::Calibration;
using servetest::Model;
using servetest::System;

// Eight layers of three kinds, no MoE: Mamba, attention, an MLP (tp-divisible everywhere).
sc::ModelConfig Small(const std::string& pattern = "M-M*M-M*") {
    sc::ModelConfig m = sc::ParseModelConfig(
        R"({"name":"h","layers":8,"hidden":128,"heads":4,"kv_heads":2,"ffn":256,"vocab":100,"seq":256,
            "mlp":"relu2","norm":"rmsnorm","position":"none","tied_embeddings":false,
            "hybrid_pattern":"M-M*M-M*","mamba":{"heads":8,"head_dim":32,"state":16,"groups":2}})");
    m.hybrid = pattern;
    sc::ValidateModelConfig(m);
    return m;
}

// Nemotron 3 Nano on one H100 at vLLM's defaults: 6 of its 52 layers are attention (2 KV heads of 128), 23 Mamba.
// A token's cache is 6 layers x K and V x 2 x 128 x 2 bytes; a sequence's state is, in each Mamba layer, 3 inputs
// of the convolution's 4096 + 2 x 8 x 128 channels and 64 heads x 64 x 128 of SSM state, 2 bytes each, reserved for
// all 256 sequences.
TEST(ServeHybrid, OnlyAttentionLayersCacheAndMambaStatesAreHeldForEverySequence) {
    const sc::ModelConfig nano = Model("nemotron-3-nano");
    ASSERT_EQ(std::count(nano.hybrid.begin(), nano.hybrid.end(), '*'), 6);
    ASSERT_EQ(std::count(nano.hybrid.begin(), nano.hybrid.end(), 'M'), 23);
    EXPECT_EQ(sc::KvLayersIn(nano, 0, nano.layers), 6);
    const double state = (3.0 * (4096 + 2 * 8 * 128) + 64.0 * 64 * 128) * 2;
    EXPECT_EQ(sc::MambaStateBytesPerSeqLayer(nano, 1, 2), state);
    EXPECT_EQ(sc::MambaStateBytesPerSeqLayer(nano, 2, 2), state / 2);
    sc::ServingConfig c;
    c.model = nano;
    const sc::KvCapacity k =
        sc::ComputeKvCapacity(nano, c.precision, 1, System("dgx-h100-superpod").accelerator, c.engine);
    EXPECT_EQ(k.kv_bytes_per_token, 6 * 2 * 2 * 128 * 2.0);
    EXPECT_EQ(k.state_bytes, 23 * state * c.engine.max_seqs);
    EXPECT_DOUBLE_EQ(k.runtime_bytes, 0.25 * 1073741824.0);  // one GPU: vLLM's non-torch memory alone
    EXPECT_NEAR(k.kv_bytes, 0.9 * k.memory_bytes - k.weight_bytes - k.workspace_bytes - k.state_bytes - k.runtime_bytes,
                1);
    const sc::IterationCost cost(nano, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 1024, 8192);
    EXPECT_EQ(cost.KvBytesPerToken(), k.kv_bytes_per_token);
    // Two stages: each caches only its own attention layers (the pattern's first 26 layers hold 3 of them).
    sc::PoolConfig pp2;
    pp2.pp = 2;
    const sc::KvCapacity two =
        sc::ComputeKvCapacity(nano, c.precision, pp2, System("dgx-h100-superpod").accelerator, c.engine);
    EXPECT_EQ(two.kv_bytes_per_token, 3 * 2 * 2 * 128 * 2.0);
}

// A prefill on one rank computes what one microbatch's forward computes in the training graph: every layer kind's
// GEMMs, and its attention cores plus its Mamba scans (7 d_inner state FLOPs a token, the graph's convention).
TEST(ServeHybrid, PrefillFlopsEqualTheTrainingGraphsForwardFlops) {
    for (int tp : {1, 2}) {
        sc::ModelConfig m = Small();
        sc::ParallelConfig p;
        p.tp = tp;
        const sc::Job job = sc::MakeJob(m, p);
        double gemm = 0, mixer = 0;
        for (const sc::Block& b : job.graph.blocks) {
            if (!sc::IsLayer(b.kind)) continue;
            for (const sc::Op& op : b.forward) {
                const double n = job.graph.Repeats(b.kind);
                if (op.kind == sc::OpKind::matmul) gemm += n * job.V(op.flops);
                if (op.kind == sc::OpKind::attention || op.kind == sc::OpKind::scan) mixer += n * job.V(op.flops);
            }
        }
        const sc::IterationCost cost(m, sc::ServingPrecision{}, tp, System("dgx-h100-superpod"), &Calibration(), 256,
                                     256);
        sc::BatchShape b;
        b.AddPrefillChunk(0, 256, 0);
        const sc::IterationWork w = cost.Work(b);
        SCOPED_TRACE("tp=" + std::to_string(tp));
        EXPECT_NEAR(w.linear_flops, gemm, 1e-12 * gemm);
        EXPECT_NEAR(w.attention_flops, mixer, 1e-12 * mixer);
    }
}

// A Mamba layer's decode updates a fixed state: without attention layers a decode step costs the same at any
// context, with them it grows with the keys read. More sequences in a step read more states.
TEST(ServeHybrid, AMambaLayersDecodeDoesNotGrowWithTheContext) {
    const sc::System& sys = System("dgx-h100-superpod");
    const sc::IterationCost mamba(Small("M-M-M-M-"), sc::ServingPrecision{}, 1, sys, &Calibration(), 256, 256);
    EXPECT_EQ(mamba.DecodeSeconds(100), mamba.DecodeSeconds(100000));
    EXPECT_EQ(mamba.KvBytesPerToken(), 0);
    const sc::IterationCost mixed(Small(), sc::ServingPrecision{}, 1, sys, &Calibration(), 256, 256);
    EXPECT_GT(mixed.DecodeSeconds(100000), mixed.DecodeSeconds(100));
    sc::BatchShape one, many;
    one.AddDecode(100, 0);
    for (int i = 0; i < 64; ++i) many.AddDecode(100, 0);
    EXPECT_GT(mamba.Breakdown(many).attention, mamba.Breakdown(one).attention);
}

// Nemotron 3 Nano served end to end from the CLI, as a user would ask for it; a pattern with nothing to cache is
// refused with the field named.
TEST(ServeHybrid, NemotronNanoServesFromTheCli) {
    const sctest::CliResult r = sctest::RunCli(
        "serve --preset llama3-8b-h100-poisson --set model=nemotron-3-nano --set workload.requests=300 --json");
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["result"]["completed"], 300);
    EXPECT_GT(j["kv"]["state_bytes"].get<double>(), 0);
    const sctest::CliResult text =
        sctest::RunCli("serve --preset llama3-8b-h100-poisson --set model=nemotron-3-nano --set workload.requests=50");
    EXPECT_NE(text.out.find(", Mamba states "), std::string::npos) << text.out;

    sc::ServingConfig c;
    c.model = Small("M-M-M-M-");
    EXPECT_EQ(sctest::FieldOf([&] {
                  sc::ComputeKvCapacity(c.model, c.precision, 1, System("dgx-h100-superpod").accelerator, c.engine);
              }),
              "model.hybrid_pattern");
}

// A latent MoE (Nemotron 3 Super) routes its latent: the experts' GEMMs are latent wide, and the two projections
// around them are whole on every rank. A prefill counts the training graph's forward GEMMs exactly (at tp 2 plus the
// replicated GEMMs' tokens beyond the training rank's sequence shard), and Super serves on eight H100s from the CLI.
TEST(ServeHybrid, ALatentMoeRunsItsExpertsOnTheLatent) {
    const sc::ModelConfig m = sc::ParseModelConfig(
        R"({"name":"h","layers":8,"hidden":128,"heads":4,"kv_heads":2,"ffn":256,"vocab":100,"seq":256,
            "mlp":"relu2","norm":"rmsnorm","position":"none","tied_embeddings":false,
            "hybrid_pattern":"M*MEM*ME","mamba":{"heads":8,"head_dim":32,"state":16,"groups":2},
            "moe":{"experts":8,"top_k":2,"expert_ffn":64,"shared_experts":1,"latent":32}})");
    for (int tp : {1, 2}) {
        sc::ParallelConfig p;
        p.tp = tp, p.sp = tp > 1, p.etp = tp;
        const sc::Job job = sc::MakeJob(m, p);
        double gemm = 0;
        for (const sc::Block& b : job.graph.blocks)
            if (sc::IsLayer(b.kind))
                for (const sc::Op& op : b.forward)
                    if (op.kind == sc::OpKind::matmul) gemm += job.graph.Repeats(b.kind) * job.V(op.flops);
        const sc::IterationCost cost(m, sc::ServingPrecision{}, tp, System("dgx-h100-superpod"), &Calibration(), 256,
                                     256);
        sc::BatchShape b;
        b.AddPrefillChunk(0, 256, 0);
        SCOPED_TRACE("tp=" + std::to_string(tp));
        // Training runs the router and the two projections, whole on every rank, on its sequence shard (MoE under
        // TP needs sequence parallelism); serving runs them on every token of the batch on every rank.
        const double T = 256, h = 128, E = 8, d = 32, moe_layers = 2;
        const double replicated = moe_layers * (2 * T * E * h + 2 * (2 * T * d * h)) * (1 - 1.0 / tp);
        EXPECT_NEAR(cost.Work(b).linear_flops, gemm + replicated, 1e-12 * gemm);
    }
    sc::ModelConfig wide = m;
    wide.moe.latent = 0;  // the experts h wide: more expert FLOPs than the projections add
    const sc::IterationCost latent(m, sc::ServingPrecision{}, 1, System("dgx-h100-superpod"), &Calibration(), 256, 256);
    const sc::IterationCost full(wide, sc::ServingPrecision{}, 1, System("dgx-h100-superpod"), &Calibration(), 256,
                                 256);
    sc::BatchShape b;
    b.AddPrefillChunk(0, 256, 0);
    EXPECT_LT(latent.Work(b).linear_flops, full.Work(b).linear_flops);
    const sctest::CliResult r = sctest::RunCli(
        "serve --preset llama3-8b-h100-poisson --set model=nemotron-3-super --set pool.tp=8 --set pool.replicas=1 "
        "--set workload.requests=50 --json");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(nlohmann::json::parse(r.out)["result"]["completed"], 50);
}

}  // namespace
