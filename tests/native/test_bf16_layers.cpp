// Layers an fp8 or fp4 model keeps in BF16 (PrecisionConfig::bf16_first_layers / bf16_last_layers, Megatron-Core's
// first_last_layers_bf16): each layer kind's BF16 twin block, which layers take it on every pipeline stage, what the
// estimate, the trace and the memory model charge for them, and the field's errors in a preset, the CLI and a link.
// And modules kept in BF16 in every layer (PrecisionConfig::bf16_modules, Megatron-Core's quant_recipe matchers).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/error.h"
#include "config/model_config.h"
#include "config/overrides.h"
#include "graph/model_stats.h"
#include "link/config_link.h"
#include "parallel/job.h"
#include "parallel/memory.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace_test_util.h"
#include "training/estimate.h"

namespace {

sc::ModelConfig Llama8bFp8(int first, int last, sc::Precision compute = sc::Precision::fp8,
                           sc::Scaling scaling = sc::Scaling::current) {
    sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    m.precision.compute = compute;
    m.precision.scaling = scaling;
    m.precision.bf16_first_layers = first;
    m.precision.bf16_last_layers = last;
    sc::ValidateModelConfig(m);
    return m;
}

bool HasQuantization(const sc::Block& b) {
    for (const auto* ops : {&b.forward, &b.backward})
        for (const sc::Op& op : *ops)
            if (op.name.find("fp8_") != std::string::npos) return true;
    return false;
}

// The twin is the same layer with every GEMM in 16 bits: as many GEMMs of the same shapes, no quantization pass, and
// the graph's other blocks as they were without it.
TEST(Bf16Layers, TheTwinRunsTheSameGemmsIn16BitsWithoutQuantizing) {
    const sc::ParallelConfig par = sc::ParseParallelSpec("tp=2,pp=1,dp=1,sp=1,microbatch=1,batch=1");
    const sc::Job job = sc::MakeJob(Llama8bFp8(1, 1), par);
    const sc::Job plain = sc::MakeJob(Llama8bFp8(0, 0), par);
    const sc::Block* layer = job.graph.Find(sc::BlockKind::dense_layer);
    const sc::Block* twin = job.graph.FindBf16(sc::BlockKind::dense_layer);
    ASSERT_NE(layer, nullptr);
    ASSERT_NE(twin, nullptr);
    EXPECT_FALSE(layer->bf16);
    EXPECT_TRUE(twin->bf16);
    EXPECT_EQ(plain.graph.FindBf16(sc::BlockKind::dense_layer), nullptr);
    EXPECT_EQ(job.graph.blocks.size(), plain.graph.blocks.size() + 1);
    EXPECT_TRUE(HasQuantization(*layer));
    EXPECT_FALSE(HasQuantization(*twin));
    std::vector<double> narrow, wide;  // the FLOPs of each GEMM, in order
    for (const sc::Op& op : layer->forward)
        if (op.kind == sc::OpKind::matmul) narrow.push_back(job.V(op.flops));
    for (const sc::Op& op : twin->forward)
        if (op.kind == sc::OpKind::matmul) {
            wide.push_back(job.V(op.flops));
            EXPECT_TRUE(op.high_precision) << op.name;
        }
    EXPECT_EQ(narrow, wide);
    EXPECT_EQ(sc::Fp8GemmWeightParams(job, *twin), 0);
    EXPECT_GT(sc::Fp8GemmWeightParams(job, *layer), 0);
    // The same weights, counted once in the model's parameters.
    EXPECT_EQ(sc::ComputeModelStats(job.model).params, sc::ComputeModelStats(plain.model).params);
}

// Megatron's is_first_last_bf16_layer by global layer index: layer l is BF16 when l < first or l >= layers - last,
// on every stage of a plain and an interleaved pipeline; the counts the estimate and memory use agree with the list.
TEST(Bf16Layers, EveryStageTakesTheTwinForExactlyTheBf16Layers) {
    for (const char* spec : {"tp=1,pp=4,dp=1,microbatch=1,batch=8",
                             "tp=1,pp=4,dp=1,microbatch=1,batch=8,"
                             "schedule=interleaved,vstages=2"}) {
        SCOPED_TRACE(spec);
        const sc::Job job = sc::MakeJob(Llama8bFp8(2, 3), sc::ParseParallelSpec(spec));
        int seen = 0, bf16 = 0;
        for (int g = 0; g < job.total_vstages(); ++g) {
            int listed = 0;
            for (const sc::StageBlock& sb : sc::BlocksOfVstage(job, g)) {
                if (sb.layer < 0) continue;
                ++seen;
                const bool expected = sb.layer < 2 || sb.layer >= 29;
                EXPECT_EQ(sb.block->bf16, expected) << "layer " << sb.layer;
                listed += sb.block->bf16 ? 1 : 0;
            }
            const sc::StageBlockCounts n = sc::BlockCountsOfVstage(job, g);
            EXPECT_EQ(n.bf16[static_cast<int>(sc::BlockKind::dense_layer)], listed) << "vstage " << g;
            bf16 += listed;
        }
        EXPECT_EQ(seen, 32);
        EXPECT_EQ(bf16, 5);
    }
}

// With every layer in BF16 an fp8 model computes what the bf16 model computes, to rounding, with no quantization
// left (its LM head and embedding were 16-bit GEMMs and lookups in both). Only the embedding's and the head's weights
// stay at the compute precision's width, so the parameter gathers and the optimizer's write differ a little.
TEST(Bf16Layers, EveryLayerInBf16ComputesWhatTheBf16ModelComputes) {
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    for (const char* spec : {"tp=2,pp=2,dp=2,sp=1,microbatch=1,batch=16,zero=1", "tp=2,dp=4,sp=1,batch=8,zero=3"}) {
        SCOPED_TRACE(spec);
        const sc::ParallelConfig par = sc::ParseParallelSpec(spec);
        const sc::TrainingEstimate wide = sc::EstimateTraining(
            sc::MakeJob(sctest::LoadModelPreset("llama3-8b.json"), par), sys, &sctest::MeasuredCalibration(), {});
        const double compute = sctest::ChargedComputeSeconds(wide);
        for (auto [first, last] : {std::pair{32, 0}, std::pair{0, 32}, std::pair{32, 32}, std::pair{20, 20}}) {
            const sc::TrainingEstimate e = sc::EstimateTraining(sc::MakeJob(Llama8bFp8(first, last), par), sys,
                                                                &sctest::MeasuredCalibration(), {});
            EXPECT_NEAR(sctest::ChargedComputeSeconds(e), compute, 1e-12 * compute) << first << " " << last;
            EXPECT_EQ(e.step.fp8_cast, 0);
            EXPECT_EQ(e.step.tp_comm, wide.step.tp_comm);
            EXPECT_NEAR(e.step_seconds, wide.step_seconds, 0.01 * wide.step_seconds);
        }
    }
}

// A few layers in BF16 cost more than none and less than all, in step time and in memory (their 16-bit weights and
// the 16-bit inputs their GEMMs keep); the estimate charges what the trace runs, and the traces keep ASTRA-sim's rules.
TEST(Bf16Layers, SomeLayersInBf16LieBetweenAndTheTraceAgrees) {
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    const sc::ParallelConfig par = sc::ParseParallelSpec("tp=2,pp=2,dp=2,sp=1,microbatch=1,batch=16,zero=1");
    auto step = [&](int first, int last) {
        return sc::EstimateTraining(sc::MakeJob(Llama8bFp8(first, last), par), sys, &sctest::MeasuredCalibration(), {})
            .step_seconds;
    };
    const double none = step(0, 0), some = step(1, 1), all = step(32, 0);
    EXPECT_GT(some, none);
    EXPECT_LT(some, all);
    const sc::Job job = sc::MakeJob(Llama8bFp8(1, 1), par), plain = sc::MakeJob(Llama8bFp8(0, 0), par);
    for (int stage : {0, 1}) {
        const sc::StageMemory a = sc::StageMemoryOf(job, stage), b = sc::StageMemoryOf(plain, stage);
        EXPECT_GT(a.weights, b.weights) << stage;
        EXPECT_GT(a.activations, b.activations) << stage;
        EXPECT_EQ(a.params, b.params) << stage;
        EXPECT_EQ(a.optimizer, b.optimizer) << stage;
    }
    // One stage, so its trace is the stage the estimate charges (with pp = 2 the head's stage sets the pace).
    for (const char* spec : {"tp=2,dp=4,sp=1,batch=8,zero=1", "tp=2,dp=4,sp=1,batch=8,zero=3"})
        sctest::ChargedComputeEqualsTraceCompute(sc::MakeJob(Llama8bFp8(1, 1), sc::ParseParallelSpec(spec)));
    // A hybrid model's kinds have twins too (Nemotron 3 Super's NVFP4 recipe keeps its last 14 layers in BF16).
    sc::ModelConfig nemotron = sctest::LoadModelPreset("nemotron-h-8b.json");
    nemotron.precision.compute = sc::Precision::fp4;
    nemotron.precision.bf16_first_layers = 1;
    nemotron.precision.bf16_last_layers = 3;  // the pattern's "-M-"; its first layer is an M
    sc::ValidateModelConfig(nemotron);
    const sc::Job hybrid = sc::MakeJob(nemotron, sc::ParseParallelSpec("tp=2,dp=4,sp=1,microbatch=1,batch=8"));
    int twins = 0;
    for (const sc::Block& b : hybrid.graph.blocks) twins += b.bf16 ? 1 : 0;
    EXPECT_EQ(twins, 3);  // one for each of its kinds (Mamba, attention, MLP), used or not
    sctest::ChargedComputeEqualsTraceCompute(hybrid, {}, "gb200-nvl72");
    sctest::ExpectTracesKeepAstraSimsRules(job, "bf16_layers");
}

// Bad values name the field, the value and what would be valid: more layers than the model has, BF16 layers of a
// 16-bit model, and delayed scaling, which Megatron-Core refuses with them.
TEST(Bf16Layers, BadValuesAreFieldErrors) {
    auto error = [](const std::vector<std::string>& sets) { return sctest::ModelPresetError("llama3-8b", sets); };
    EXPECT_EQ(error({"precision.compute=fp8", "precision.scaling=current", "precision.bf16_last_layers=1"}), "");
    EXPECT_EQ(error({"precision.compute=fp8", "precision.scaling=current", "precision.bf16_first_layers=33"}),
              "precision.bf16_first_layers: must be at most 32, got 33");
    EXPECT_EQ(error({"precision.bf16_last_layers=1"}),
              "precision.bf16_last_layers: 1 layers kept in BF16, but precision.compute is bf16: every GEMM already "
              "runs in 16 bits (valid: 0, or fp8/fp4)");
    EXPECT_EQ(error({"precision.compute=fp8", "precision.bf16_first_layers=1"}),
              "precision.bf16_first_layers: 1 layers kept in BF16 under delayed scaling, which Megatron-Core refuses "
              "(valid: 0, or precision.scaling current, block or mx)");
    EXPECT_NE(error({"precision.compute=fp8", "precision.scaling=mx", "precision.bf16_first_layers=-1"}), "");
}

// The CLI reports them; a link carries them after the recipe and restores them.
TEST(Bf16Layers, CliAndLinkCarryThem) {
    const sctest::CliResult r = sctest::RunCli(
        "estimate --model presets/models/llama3-8b.json --precision mxfp8 --set precision.bf16_first_layers=1 "
        "--set precision.bf16_last_layers=2");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("  layers in BF16              first 1, last 2 (layers 0 and 30-31 of 32)\n"),
              std::string::npos)
        << r.out;
    const std::string link =
        "v1;model=llama3-8b;precision=fp8;scaling=current;bf16_first=1;bf16_last=14;"
        "parallel=tp=8,dp=4;end";
    const sc::ConfigLink l = sc::DecodeConfigLink(link);
    ASSERT_TRUE(l.bf16_first.has_value() && l.bf16_last.has_value());
    EXPECT_EQ(*l.bf16_first, 1);
    EXPECT_EQ(*l.bf16_last, 14);
    EXPECT_EQ(
        sc::EncodeConfigLink(l).rfind("v1;model=llama3-8b;precision=fp8;scaling=current;bf16_first=1;bf16_last=14;", 0),
        0u);
    EXPECT_EQ(sc::DecodeConfigLink(sc::EncodeConfigLink(l)), l);
    try {
        sc::DecodeConfigLink("v1;model=llama3-8b;bf16_last=-2;parallel=tp=8,dp=4;end");
        ADD_FAILURE() << "no error";
    } catch (const sc::Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("bf16_last:", 0), 0u) << e.what();
    }
}

// A module kept in BF16 runs its GEMMs in 16 bits and quantizes nothing, in every layer; the other modules stay narrow.
TEST(Bf16Layers, ModulesKeepTheirGemmsIn16Bits) {
    sc::ModelConfig m = Llama8bFp8(0, 0);
    m.precision.bf16_modules = sc::kBf16Attention;
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,dp=4,sp=1,batch=8"));
    const sc::Block& layer = *job.graph.Find(sc::BlockKind::dense_layer);
    int attention = 0, mlp = 0;
    for (const auto* ops : {&layer.forward, &layer.backward})
        for (const sc::Op& op : *ops) {
            const bool in_attention = op.name.rfind("attn.", 0) == 0;
            if (op.kind == sc::OpKind::matmul) {
                EXPECT_EQ(op.high_precision, in_attention) << op.name;
                (in_attention ? attention : mlp) += 1;
            }
            if (in_attention) {
                EXPECT_EQ(op.name.find("fp8_"), std::string::npos) << op.name;
            }
        }
    EXPECT_EQ(attention, 6);  // qkv and out, forward, input and weight gradients
    EXPECT_EQ(mlp, 6);
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    auto step = [&](uint8_t modules) {
        sc::ModelConfig c = Llama8bFp8(0, 0);
        c.precision.bf16_modules = modules;
        return sc::EstimateTraining(sc::MakeJob(c, sc::ParseParallelSpec("tp=2,dp=4,sp=1,batch=8")), sys,
                                    &sctest::MeasuredCalibration(), {})
            .step_seconds;
    };
    EXPECT_GT(step(sc::kBf16Attention), step(0));
    EXPECT_LT(step(sc::kBf16Attention), step(sc::kBf16Attention | sc::kBf16Mlp));
    sctest::ChargedComputeEqualsTraceCompute(job);
    // Nemotron 3 Super's NVFP4 recipe: attention, the latent projections and the MTP modules, with its last 14 layers.
    sc::ModelConfig super = sctest::LoadModelPreset("nemotron-3-super.json");
    super.precision.compute = sc::Precision::fp4;
    super.precision.bf16_last_layers = 14;
    super.precision.bf16_modules = sc::kBf16Attention | sc::kBf16Latent | sc::kBf16Mtp;
    sc::ValidateModelConfig(super);
    const sc::Job sj = sc::MakeJob(super, sc::ParseParallelSpec("tp=1,dp=8,ep=8,microbatch=1,batch=8"));
    for (const sc::Block& b : sj.graph.blocks)
        for (const sc::Op& op : b.forward)
            if (op.kind == sc::OpKind::matmul &&
                (op.name.find("latent_proj") != std::string::npos || op.name.find("attn.") != std::string::npos ||
                 op.name.find("mtp") != std::string::npos)) {
                EXPECT_TRUE(op.high_precision) << op.name;
            }
    sctest::ChargedComputeEqualsTraceCompute(sj, {}, "gb200-nvl72");
}

// The modules are named as Megatron's matchers group them; one the model lacks, or any in a 16-bit model, is refused.
TEST(Bf16Layers, BadModulesAreFieldErrors) {
    auto error = [](const std::vector<std::string>& sets) { return sctest::ModelPresetError("llama3-8b", sets); };
    EXPECT_EQ(error({"precision.compute=fp8", "precision.bf16_modules=\"attention+mlp\""}), "");
    EXPECT_EQ(error({"precision.compute=fp8", "precision.bf16_modules=\"attention+qkv\""}),
              "precision.bf16_modules: \"qkv\" is not one of attention, mlp, experts, shared_experts, latent, mamba, "
              "mtp (joined by '+')");
    EXPECT_EQ(error({"precision.compute=fp8", "precision.bf16_modules=\"latent\""}),
              "precision.bf16_modules: \"latent\": Llama-3 8B has no such module (it has attention+mlp)");
    EXPECT_EQ(error({"precision.bf16_modules=\"attention\""}),
              "precision.bf16_modules: \"attention\" kept in BF16, but precision.compute is bf16: every GEMM already "
              "runs in 16 bits (valid: none, or fp8/fp4)");
    const sctest::CliResult r = sctest::RunCli(
        "estimate --model presets/models/llama3-8b.json --precision mxfp8 --set precision.bf16_modules=attention");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("  modules in BF16             attention\n"), std::string::npos) << r.out;
    const sc::ConfigLink l =
        sc::DecodeConfigLink("v1;model=llama3-8b;precision=fp8;bf16_modules=attention+mlp;parallel=tp=8,dp=4;end");
    ASSERT_TRUE(l.bf16_modules.has_value());
    EXPECT_EQ(*l.bf16_modules, sc::kBf16Attention | sc::kBf16Mlp);
    EXPECT_EQ(sc::DecodeConfigLink(sc::EncodeConfigLink(l)), l);
}

}  // namespace
