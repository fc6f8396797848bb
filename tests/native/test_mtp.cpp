// Multi-token prediction modules (ModelConfig::mtp_layers; DeepSeek-V3 report, arXiv 2412.19437 Sec. 2.2) and
// Megatron's pipeline layout string that places them (`layout=`, parallel/pipeline_layout.h): the field's rules, a
// module's parameters and FLOPs against one more layer, projection and head, Megatron's FLOP convention, the last
// stage's copy of the embedding and its gradient all-reduce, trace against estimate, serving without the module;
// the layout's grammar, its errors, its round trip and the stages it gives.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/error.h"
#include "config/model_config.h"
#include "config/overrides.h"
#include "graph/flop_conventions.h"
#include "graph/model_stats.h"
#include "inference/kv_capacity.h"
#include "inference/serving_config.h"
#include "parallel/job.h"
#include "parallel/memory.h"
#include "parallel/pipeline_layout.h"
#include "parallel/schedule.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace_test_util.h"
#include "training/estimate.h"

namespace {

const char* kSmall = R"({"name":"t","layers":6,"hidden":64,"heads":4,"ffn":256,"vocab":100,"seq":512,
                         "tied_embeddings":false})";

std::string ErrorOf(const std::vector<std::string>& sets) {
    return sctest::ErrorOf([&] { sc::ParseModelConfig(sc::ApplyOverrides(kSmall, sets, "test")); });
}

sc::ModelConfig Small(int layers, int mtp) {
    sc::ModelConfig m = sc::ParseModelConfig(kSmall);
    m.layers = layers, m.mtp_layers = mtp;
    return m;
}

TEST(Mtp, FieldIsStrictAndRoundTrips) {
    EXPECT_EQ(ErrorOf({"mtp_layers=1"}), "");
    EXPECT_EQ(ErrorOf({"mtp_layers=6"}), "");
    for (const char* bad : {"mtp_layers=-1", "mtp_layers=7", "mtp_layers=1.5", "mtp_layers=\"1\""}) {
        const std::string e = ErrorOf({bad});
        EXPECT_NE(e.find("mtp_layers"), std::string::npos) << bad << ": " << e;
    }
    const sc::ModelConfig m = sc::ParseModelConfig(sc::ApplyOverrides(kSmall, {"mtp_layers=2"}, "test"));
    EXPECT_EQ(sc::ParseModelConfig(sc::ModelConfigToJson(m)).mtp_layers, 2);
    EXPECT_EQ(sc::ParseModelConfig(sc::ModelConfigToJson(Small(6, 0))).mtp_layers, 0);
}

// Each module is one more layer of the main model (its twin with a seventh layer), a 2h x h projection, three
// LayerNorms (2h each: embedding, hidden state, output) and one more LM head over the shared table.
TEST(Mtp, ModuleIsALayerAProjectionAndAHead) {
    const double h = 64, V = 100, norm = 2 * h;
    const sc::ModelStats base = sc::ComputeModelStats(Small(6, 0)), twin = sc::ComputeModelStats(Small(7, 0));
    const sc::ModelStats two = sc::ComputeModelStats(Small(6, 2));
    const double layer_params = twin.params - base.params;
    EXPECT_DOUBLE_EQ(two.params - base.params, 2 * (layer_params + 2 * h * h + 3 * norm));
    EXPECT_DOUBLE_EQ(two.embedding_params, base.embedding_params);  // the table is shared, not counted again
    EXPECT_DOUBLE_EQ(two.matmul_flops_per_token - base.matmul_flops_per_token,
                     2 * (twin.matmul_flops_per_token - base.matmul_flops_per_token + 6 * 2 * h * h + 6 * V * h));
    EXPECT_DOUBLE_EQ(two.attention_flops_per_token - base.attention_flops_per_token,
                     2 * (twin.attention_flops_per_token - base.attention_flops_per_token));
}

// The module's layer is the main model's last layer's kind (Megatron-Core builds it from the last layer's spec):
// with MoE every second layer, a 6-layer model ends on an MoE layer (index 5) and a 5-layer one on a dense one. Layer
// L + 1 of either has the last layer's kind again, so the twin with L + 2 layers less the one with L + 1 is that layer.
TEST(Mtp, ModuleLayerIsTheLastLayersKind) {
    const double h = 64;
    for (int layers : {6, 5}) {
        auto params = [&](int n, int mtp) {
            sc::ModelConfig m = Small(n, mtp);
            m.moe = {4, 1, 0, 128, 0, 0};
            m.moe.every = 2;
            return sc::ComputeModelStats(m).params;
        };
        const double layer = params(layers + 2, 0) - params(layers + 1, 0);
        EXPECT_DOUBLE_EQ(params(layers, 1) - params(layers, 0), layer + 2 * h * h + 3 * 2 * h) << layers;
    }
}

// Megatron-LM's and Megatron-Bridge's num_floating_point_operations count a module as one more layer and one more
// logits GEMM (the projection is left out): M(l layers, m modules) = M(l + m layers) + m x 6 B s h V.
TEST(Mtp, MegatronFlopsCountALayerAndAHeadEach) {
    const double B = 16, s = 512, h = 64, V = 128;
    const double with = sc::MegatronFlops(Small(6, 2), B, V), longer = sc::MegatronFlops(Small(8, 0), B, V);
    EXPECT_NEAR(with, longer + 2 * 6 * B * s * h * V, 1e-12 * with);
}

double StageParams(const sc::ModelConfig& m, const std::string& spec, int stage) {
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec(spec));
    return sc::StageMemoryOf(job, stage).params;
}

// On one stage the module adds its own weights; on the last of two it also holds the embedding table (the lookups
// need it), tp's share of the padded vocabulary; the first stage does not change. A tied LM head's copy already is
// that table: nothing more.
TEST(Mtp, LastStageHoldsTheModuleAndACopyOfTheEmbedding) {
    for (bool tied : {false, true}) {
        SCOPED_TRACE(tied ? "tied" : "untied");
        sc::ModelConfig m = sctest::SmallMoe(), with = m;
        m.tied_embeddings = with.tied_embeddings = tied;
        with.mtp_layers = 1;
        const char* one = "tp=2,sp=1,ep=2,dp=2,batch=4";
        const char* two = "tp=2,sp=1,ep=2,dp=2,pp=2,batch=4";
        const double own = StageParams(with, one, 0) - StageParams(m, one, 0);
        EXPECT_GT(own, 0);
        EXPECT_DOUBLE_EQ(StageParams(with, two, 0), StageParams(m, two, 0));
        const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec(two));
        const double table = tied ? 0 : job.padded_vocab / 2 * m.hidden;
        EXPECT_DOUBLE_EQ(StageParams(with, two, 1) - StageParams(m, two, 1), own + table);
    }
}

int NodesNamed(const sc::Job& job, int stage, const std::string& name) {
    const sc::StageProgram prog = sc::BuildStageProgram(job, stage);
    int n = 0;
    for (const sc::ProgNode& node : prog.nodes) n += prog.names[node.name] == name;
    return n;
}

// Megatron's embedding group sums the gradients of the first stage's table and the last stage's copy.
TEST(Mtp, EmbeddingGradientsAreSummedBetweenFirstAndLastStage) {
    sc::ModelConfig m = sctest::SmallMoe();  // untied
    const sc::ParallelConfig p = sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=1,pp=4,batch=4");
    EXPECT_EQ(NodesNamed(sc::MakeJob(m, p), 0, "embedding.tied_grad"), 0);
    m.mtp_layers = 1;
    const sc::Job job = sc::MakeJob(m, p);
    EXPECT_EQ(NodesNamed(job, 0, "embedding.tied_grad"), 1);
    EXPECT_EQ(NodesNamed(job, 1, "embedding.tied_grad"), 0);
    EXPECT_EQ(NodesNamed(job, 3, "embedding.tied_grad"), 1);
    EXPECT_GT(NodesNamed(job, 3, "mtp1.moe.dispatch"), 0);  // the module's all-to-all, on the last stage only
    EXPECT_EQ(NodesNamed(job, 2, "mtp1.moe.dispatch"), 0);
}

TEST(Mtp, TraceAndEstimateChargeTheSameCompute) {
    sc::ModelConfig m = sctest::SmallMoe();
    m.mtp_layers = 1;
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=2,batch=4"));
    const double charged = sctest::ChargedComputeEqualsTraceCompute(job);
    m.mtp_layers = 0;
    const sc::TrainingEstimate without = sc::EstimateTraining(
        sc::MakeJob(m, job.par), sctest::LoadSystemPreset("dgx-h100-superpod"), &sctest::MeasuredCalibration(), {});
    EXPECT_GT(charged, sctest::ChargedComputeSeconds(without));
}

// The module's nodes and the embedding group's all-reduce keep ASTRA-sim's rules (our reader) and the independent
// checker's, on Megatron's layout of two stages.
TEST(Mtp, TracesKeepAstraSimsRules) {
    sc::ModelConfig m = sctest::SmallMoe();
    m.mtp_layers = 1;
    const sc::Job job =
        sc::MakeJob(m, sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1,layout=Et*3|tmL"));
    sctest::ExpectTracesKeepAstraSimsRules(job, "mtp-layout");
}

// Under full recomputation Megatron-Core checkpoints an MTP module whole (MultiTokenPredictionLayer.
// _checkpointed_forward, recompute_granularity "full", method uniform): its norms, projection, layer and final norm run
// again in the backward, and it keeps only its two inputs, the embedding and the previous hidden state, not its
// layer's activations; its LM head and loss are outside the checkpoint. So the head re-runs the GEMMs of one MoE
// layer and of the 2h -> h projection, and keeps the main head's activations twice (its own and the module's LM head
// and loss) and one more sequence shard of h (two inputs where the main head's norm keeps one).
TEST(Mtp, FullRecomputationCheckpointsTheModuleWhole) {
    sc::ModelConfig m = sctest::SmallMoe(), none = sctest::SmallMoe();
    m.mtp_layers = 1;
    const sc::ParallelConfig p = sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=2,microbatch=1,batch=4,recompute=full");
    const sc::Job job = sc::MakeJob(m, p), without = sc::MakeJob(none, p);
    const int head = static_cast<int>(sc::BlockKind::head), full = static_cast<int>(sc::Recompute::full);
    const double shard = m.seq / 2.0 * m.hidden * 2;  // this rank's tokens of h, bf16
    EXPECT_DOUBLE_EQ(job.sums[head].saved[full], 2 * without.sums[head].saved[full] + shard);
    EXPECT_LT(job.sums[head].saved[full], job.sums[head].saved[static_cast<int>(sc::Recompute::none)]);

    // The re-run GEMMs, in the trace's recompute nodes of the head: an MoE layer's forward and the projection, each
    // microbatch.
    const sc::StageProgram prog = sc::BuildStageProgram(job, 0);
    double rerun = 0;
    for (const sc::ProgNode& n : prog.nodes)
        if (n.role == sc::NodeRole::recompute && n.kind == sc::OpKind::matmul &&
            prog.names[n.name].starts_with("recompute.mtp1."))
            rerun += static_cast<double>(n.flops);
    double layer = 0;
    for (const sc::Op& op : job.graph.Find(sc::BlockKind::moe_layer)->forward)
        if (op.kind == sc::OpKind::matmul) layer += job.V(op.flops);
    const double projection = 2.0 * m.seq * (2.0 * m.hidden) * (m.hidden / 2.0);
    const double microbatches = 1.0 * p.batch / (p.dp * p.microbatch);
    EXPECT_NEAR(rerun, microbatches * (layer + projection), 1e-9 * rerun);

    sctest::ChargedComputeEqualsTraceCompute(job);
    sctest::ExpectTracesKeepAstraSimsRules(
        sc::MakeJob(m, sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1,recompute=full")), "mtp-full");
}

// Selective recomputation reaches the module's layer too (Megatron-Core builds it from the same config, so its
// attention core and the other chosen modules are re-run as a layer's): the head keeps less by exactly what one MoE
// layer saves, and the trace's recompute nodes are the estimate's.
TEST(Mtp, SelectiveRecomputationReachesTheModulesLayer) {
    sc::ModelConfig m = sctest::SmallMoe();
    m.mtp_layers = 1;
    const sc::Job job =
        sc::MakeJob(m, sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=2,microbatch=1,batch=4,"
                                             "recompute=selective,recompute_modules=core_attn+moe_act"));
    const int head = static_cast<int>(sc::BlockKind::head), layer = static_cast<int>(sc::BlockKind::moe_layer);
    const int none = static_cast<int>(sc::Recompute::none), selective = static_cast<int>(sc::Recompute::selective);
    const double layer_saves = job.sums[layer].saved[none] - job.sums[layer].saved[selective];
    EXPECT_GT(layer_saves, 0);
    EXPECT_DOUBLE_EQ(job.sums[head].saved[none] - job.sums[head].saved[selective], layer_saves);
    EXPECT_GT(sctest::ChargedComputeEqualsTraceCompute(job), 0);
}

// An engine serving without speculative decoding loads no MTP module.
TEST(Mtp, ServingLoadsNoModule) {
    sc::ModelConfig ds = sctest::LoadModelPreset("deepseek-v3.json");
    ASSERT_EQ(ds.mtp_layers, 1);
    sc::ServingPrecision prec;
    const std::vector<double> with = sc::StageWeightBytesPerRank(ds, prec, 8, 2);
    ds.mtp_layers = 0;
    EXPECT_EQ(with, sc::StageWeightBytesPerRank(ds, prec, 8, 2));
}

std::string LayoutError(const std::string& text) {
    return sctest::ErrorOf([&] { sc::ParsePipelineLayout(text); });
}

TEST(PipelineLayout, ReadsMegatronsStrings) {
    // Megatron-Bridge's DeepSeek-V3 layout for PP4 x VP4 (recipes/deepseek: embedding + 4, 14 x 4, 1 + MTP + loss).
    sc::PipelineLayout l = sc::ParsePipelineLayout("Et*4|(t*4|)*14tmL");
    std::vector<int> want(16, 4);
    want.back() = 1;
    EXPECT_EQ(l.layers, want);
    EXPECT_EQ(l.mtp, 1);
    // Megatron's cosmetic commas, x*n inside a group, and no E or L (they go to the first and last stage).
    l = sc::ParsePipelineLayout("Ettt|(t*2|)*2,tt,mm,L");
    EXPECT_EQ(l.layers, (std::vector<int>{3, 2, 2, 2}));
    EXPECT_EQ(l.mtp, 2);
    EXPECT_EQ(sc::ParsePipelineLayout("tt|t").layers, (std::vector<int>{2, 1}));
    // The canonical form groups the repeated middle stages and reads back the same.
    for (const char* text : {"Et*4|(t*4|)*14tmL", "Et*3|(t*2|)*2t*2m*2L", "EtL", "Et|tL"}) {
        const sc::PipelineLayout a = sc::ParsePipelineLayout(text);
        const std::string canonical = sc::PipelineLayoutString(a.layers, a.mtp);
        const sc::PipelineLayout b = sc::ParsePipelineLayout(canonical);
        EXPECT_EQ(a.layers, b.layers) << text << " -> " << canonical;
        EXPECT_EQ(a.mtp, b.mtp) << text << " -> " << canonical;
    }
    EXPECT_EQ(sc::PipelineLayoutString({4, 4, 4, 1}, 1), "Et*4|(t*4|)*2tmL");
}

TEST(PipelineLayout, RefusesWhatItCannotPlace) {
    const std::pair<const char*, const char*> cases[] = {
        {"Et|tx", "unknown character 'x'"},
        {"E(tt|", "'(' without its ')'"},
        {"Ett)*2", "')' without its '('"},
        {"((t)*2)*2", "do not nest"},
        {"(tt|)", "followed by *n"},
        {"t*", "repeat count"},
        {"*3", "'*' must follow"},
        {"tE|t", "the embedding 'E' comes once, first"},
        {"Et|E t", "the embedding 'E' comes once, first"},
        {"tL|t", "the loss 'L' must be in the last virtual stage"},
        {"tLt", "nothing may follow the loss"},
        {"|tL", "virtual stage 0 holds no transformer layer"},
        {"Et||tL", "virtual stage 1 holds no transformer layer"},
        {"Et|mL", "virtual stage 1 holds no transformer layer"},
        {"Et|tm|tL", "standalone MTP stage is not modelled"},
        {"(t|)*9999999(t|)*9999999", "characters once its repeats are unrolled"},
        {"t*99999999", "repeat count above"},
    };
    for (const auto& [text, why] : cases) {
        const std::string e = LayoutError(text);
        EXPECT_EQ(e.rfind("layout", 0), 0u) << text << ": " << e;
        EXPECT_NE(e.find(why), std::string::npos) << text << ": " << e;
    }
}

TEST(PipelineLayout, TheJobRunsItsStagesAndChecksThemAgainstTheModel) {
    sc::ModelConfig ds = sctest::LoadModelPreset("deepseek-v3.json");
    const std::string spec = "tp=1,pp=4,vp=4,schedule=interleaved,ep=8,dp=8,batch=64,layout=Et*4|(t*4|)*14,tmL";
    const sc::ParallelConfig p = sc::ParseParallelSpec(spec);  // Megatron's comma continues the layout
    ASSERT_EQ(p.layout.size(), 16u);
    EXPECT_NE(sc::ParallelSpecString(p).find(",layout=Et*4|(t*4|)*14tmL"), std::string::npos);
    EXPECT_EQ(sc::ParseParallelSpec(sc::ParallelSpecString(p)).layout, p.layout);
    const sc::Job job = sc::MakeJob(ds, p);
    int first = 0;
    for (int g = 0; g < 16; ++g) {
        const sc::LayerRange r = sc::LayersOfVirtualStage(p, ds.layers, g);
        EXPECT_EQ(r.first, first);
        EXPECT_EQ(r.count, p.layout[g]);
        first += r.count;
    }
    EXPECT_EQ(first, 61);
    EXPECT_EQ(sc::BlockCountsOfVstage(job, 15).head, 1);
    const auto error = [&](const std::string& s, const sc::ModelConfig& m) {
        return sctest::ErrorOf([&] { sc::MakeJob(m, sc::ParseParallelSpec(s)); });
    };
    // 17 stages for pp*vstages = 16; 60 layers for 61; one MTP module in the string for a model without one.
    std::string e = error("tp=1,pp=4,vp=4,schedule=interleaved,ep=8,dp=8,batch=64,layout=Et*4|(t*4|)*15tL", ds);
    EXPECT_NE(e.find("layout: the layout has 17 virtual stages; pp*vstages = 16"), std::string::npos) << e;
    e = error("tp=1,pp=4,vp=4,schedule=interleaved,ep=8,dp=8,batch=64,layout=Et*4|(t*4|)*13t*3|tmL", ds);
    EXPECT_NE(e.find("places 60 transformer layers"), std::string::npos) << e;
    sc::ModelConfig no_mtp = ds;
    no_mtp.mtp_layers = 0;
    e = error(spec, no_mtp);
    EXPECT_NE(e.find("mtp_layers=0"), std::string::npos) << e;
    EXPECT_EQ(error("tp=1,pp=2,ep=8,dp=8,batch=64,layout=Et*30|t*31mL", ds), "");
    EXPECT_EQ(error("tp=1,pp=2,ep=8,dp=8,batch=64,layout=Et*30|t*31L", ds), "");
}

// Megatron's account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split count the embedding and
// the loss as a layer's slot each, so Llama 3.1 405B's 126 layers fill PP16 x VP8 = 128 virtual stages with one of
// only the embedding first and one of only the loss last (Megatron-Bridge's GB200 MXFP8 and NVFP4 recipes). The
// layout string says so; such a stage holds just that block, the string reads back, the traces keep ASTRA-sim's
// rules, and the 405B job estimates.
TEST(PipelineLayout, TheEmbeddingAndTheLossMayHaveStagesOfTheirOwn) {
    const sc::PipelineLayout l = sc::ParsePipelineLayout("E|(t*2|)*2L");
    EXPECT_EQ(l.layers, (std::vector<int>{0, 2, 2, 0}));
    EXPECT_EQ(sc::PipelineLayoutString(l.layers, 0), "E|(t*2|)*2L");
    const sc::Job job = sc::MakeJob(
        sctest::SmallGpt(),
        sc::ParseParallelSpec("tp=2,pp=2,dp=2,sp=1,schedule=interleaved,vstages=2,batch=8,zero=1,layout=E|(t*2|)*2L"));
    auto kinds = [&](int g) {
        std::string k;
        for (const sc::StageBlock& b : sc::BlocksOfVstage(job, g)) k += std::string(sc::NameOf(b.block->kind)) + " ";
        return k;
    };
    EXPECT_EQ(kinds(0), "embedding ");
    EXPECT_EQ(kinds(1), "dense_layer dense_layer ");
    EXPECT_EQ(kinds(3), "head ");
    sctest::ExpectTracesKeepAstraSimsRules(job, "embedding-loss-stages");
    // Without a layout a stage still needs a layer; with one, a middle stage or an MTP module does too.
    EXPECT_NE(sctest::ErrorOf([&] {
                  sc::MakeJob(sctest::SmallGpt(),
                              sc::ParseParallelSpec("tp=2,pp=2,dp=2,schedule=interleaved,vstages=4,batch=8,uneven=1"));
              }).find("pipeline stages exceed 4 layers"),
              std::string::npos);
    const sctest::CliResult r = sctest::RunCli(
        "estimate --model presets/models/llama3-405b.json --precision nvfp4 --system gb200-nvl72 --gpus 256 "
        "--parallel 'tp=4,pp=16,dp=4,sp=1,microbatch=1,batch=1536,schedule=interleaved,vstages=8,zero=1,"
        "layout=E|(t|)*126L' --set seq=8192");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("tokens/s"), std::string::npos) << r.out;
}

}  // namespace
