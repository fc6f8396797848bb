// Recompute::op, PyTorch's op-level selective activation checkpointing with torchtitan's policy
// (parallelisms/parallelize_llama.py, `_custom_policy`: keep the outputs of torch.mm, of SDPA and of reduce-scatters,
// but re-run every second torch.mm of a transformer block; re-run every other op). Checked against closed forms
// written from that policy and the layer's shapes, not against the code's own sums.
#include <gtest/gtest.h>

#include <string>

#include "config/error.h"
#include "config/model_config.h"
#include "parallel/job.h"
#include "parallel/memory.h"
#include "parallel/parallel_config.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace/stage_program.h"
#include "training/estimate.h"

namespace {

sc::ModelConfig Model(const std::string& file) {
    return sc::ParseModelConfig(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/models/" + file));
}

// FLOPs of the recomputed GEMMs one microbatch's trace carries on one rank (stage 0 of a one-stage job).
double RecomputedMatmulFlops(const sc::Job& job) {
    const sc::StageProgram prog = sc::BuildStageProgram(job, 0);
    double flops = 0;
    for (const sc::ProgNode& n : prog.nodes)
        if (n.role == sc::NodeRole::recompute && n.kind == sc::OpKind::matmul) flops += static_cast<double>(n.flops);
    const double microbatches = static_cast<double>(job.par.global_batch()) / (job.par.microbatch * job.par.dp);
    return flops / microbatches;
}

const sc::Block& DenseLayer(const sc::Job& job) {
    for (const sc::Block& b : job.graph.blocks)
        if (b.kind == sc::BlockKind::dense_layer) return b;
    throw std::runtime_error("no dense layer");
}

TEST(OpCheckpointing, ReRunsEverySecondTorchMmOfALlamaBlock) {
    // Llama 3 8B calls wq, wk, wv, wo, w1, w3, w2 in that order: wk, wo and w3 are re-run (one in two, counted over
    // the whole block), the others kept. The graph fuses wq/wk/wv and w1/w3 into one GEMM each.
    const sc::ModelConfig m = Model("llama3-8b.json");
    for (const char* spec : {"tp=1,dp=1,microbatch=1,batch=2,recompute=op", "tp=2,sp=1,dp=1,batch=2,recompute=op"}) {
        SCOPED_TRACE(spec);
        const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec(spec));
        const double T = static_cast<double>(job.par.microbatch) * m.seq, h = m.hidden, d = m.head_dim, tp = job.par.tp;
        const double wk = 2 * T * h * (m.kv_heads * d / tp), wo = 2 * T * (m.heads * d / tp) * h,
                     w3 = 2 * T * h * (m.ffn / tp);
        EXPECT_NEAR(RecomputedMatmulFlops(job), m.layers * (wk + wo + w3), 1e-9 * m.layers * (wk + wo + w3));
    }
}

TEST(OpCheckpointing, CountsTheBlocksMmsAcrossAttentionAndMlp) {
    // GPT-3 (multi-head attention, a GeLU MLP): wq, wk, wv, wo, fc1, fc2 -> wk, wo and fc2 are re-run.
    const sc::ModelConfig m = Model("gpt3-175b.json");
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=8,sp=1,pp=1,dp=1,batch=1,recompute=op"));
    const double T = m.seq, h = m.hidden, d = m.head_dim, tp = 8;
    const double wk = 2 * T * h * (m.kv_heads * d / tp), wo = 2 * T * (m.heads * d / tp) * h,
                 fc2 = 2 * T * (m.ffn / tp) * h;
    EXPECT_NEAR(RecomputedMatmulFlops(job), m.layers * (wk + wo + fc2), 1e-9 * m.layers * (wk + wo + fc2));
}

TEST(OpCheckpointing, KeepsTheLayerInputAndTheSavedOutputs) {
    // Per layer: the block's input (the SP shard), q and v (wq and wv outputs), SDPA's output and fp32 log-sum-exp,
    // w1's output, w2's output (its partial sums, all tokens) and this rank's share of the two reduce-scatters.
    const sc::ModelConfig m = Model("llama3-8b.json");
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,sp=1,dp=1,microbatch=2,batch=2,recompute=op"));
    const double T = 2.0 * m.seq, h = m.hidden, d = m.head_dim, a = m.heads, kv = m.kv_heads, f = m.ffn, tp = 2, w = 2;
    const double expected = T / tp * h * w               // input
                            + T * (a + kv) * d / tp * w  // q, v
                            + T * a * d / tp * w         // SDPA output
                            + T * a / tp * 4             // log-sum-exp
                            + T * f / tp * w             // w1
                            + T * h * w                  // w2
                            + 2 * T * h * w / tp;        // reduce-scatter outputs (attention, MLP)
    EXPECT_DOUBLE_EQ(sc::SavedActivationBytes(job, DenseLayer(job), sc::Recompute::op), expected);
    // Between full recomputation (the input only) and none.
    EXPECT_GT(expected, sc::SavedActivationBytes(job, DenseLayer(job), sc::Recompute::full));
    EXPECT_LT(expected, sc::SavedActivationBytes(job, DenseLayer(job), sc::Recompute::none));
}

TEST(OpCheckpointing, ReRunsElementwiseOpsAndGathersButNotTheAttentionCore) {
    // Norms, rotary, SwiGLU, residual adds and the SP all-gathers are re-run; SDPA and the reduce-scatters are not.
    const sc::ModelConfig m = Model("llama3-8b.json");
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,sp=1,dp=1,batch=1,recompute=op"));
    const sc::StageProgram prog = sc::BuildStageProgram(job, 0);
    auto recomputed = [&](const std::string& op) {
        for (const sc::ProgNode& n : prog.nodes)
            if (n.role == sc::NodeRole::recompute && prog.names[n.name] == "L0.recompute." + op) return true;
        return false;
    };
    for (const char* op : {"attn.norm", "attn.rotary", "mlp.swiglu", "attn.residual", "mlp.residual",
                           "attn.tp_all_gather", "mlp.tp_all_gather", "attn.qkv", "attn.out", "mlp.gate_up"})
        EXPECT_TRUE(recomputed(op)) << op;
    for (const char* op : {"attn.core", "attn.tp_reduce_scatter", "mlp.tp_reduce_scatter", "mlp.fc2"})
        EXPECT_FALSE(recomputed(op)) << op;
}

TEST(OpCheckpointing, EstimateChargesItsRecomputeBetweenSelectiveAndFull) {
    const sc::ModelConfig m = Model("llama3-8b.json");
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    auto recompute = [&](const char* rc) {
        const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec(std::string("tp=1,dp=8,microbatch=2,batch=16,zero=3,"
                                                                             "recompute=") +
                                                                 rc));
        return sc::EstimateTraining(job, sys, &sctest::MeasuredCalibration(), sc::TrainingOptions{}).step.recompute;
    };
    EXPECT_GT(recompute("op"), recompute("selective"));
    EXPECT_LT(recompute("op"), recompute("full"));
}

TEST(OpCheckpointing, IsARecomputeNameOfLayoutsAndLinks) {
    EXPECT_EQ(sc::ParseRecompute("recompute", "op"), sc::Recompute::op);
    EXPECT_STREQ(sc::NameOf(sc::Recompute::op), "op");
    EXPECT_EQ(sc::ParseParallelSpec("tp=2,recompute=op").recompute, sc::Recompute::op);
    try {
        sc::ParseRecompute("recompute", "ops");
        FAIL() << "no error";
    } catch (const sc::Error& e) {
        EXPECT_NE(std::string(e.what()).find("none, selective, full, op"), std::string::npos) << e.what();
    }
}

}  // namespace
