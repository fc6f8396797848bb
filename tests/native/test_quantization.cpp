// The fp8 and fp4 scaling recipes (PrecisionConfig::scaling, config/quantization.h): what quantizing a GEMM's
// operands costs under Transformer Engine's delayed, current, block, MXFP8 and NVFP4 recipes, checked by hand on one
// Llama 3 8B layer (each quantization node's bytes, the copy kept for the weight gradient, the weights' casts),
// through the trace and the estimate, and as the CLI, a link and a bad preset give it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/error.h"
#include "config/model_config.h"
#include "config/overrides.h"
#include "config/quantization.h"
#include "link/config_link.h"
#include "parallel/job.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace_test_util.h"
#include "training/estimate.h"

namespace {

sc::ModelConfig Llama8b(sc::Precision compute, sc::Scaling scaling) {
    sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    m.precision.compute = compute;
    m.precision.scaling = scaling;
    sc::ValidateModelConfig(m);
    return m;
}

sc::Job LayerJob(sc::Precision compute, sc::Scaling scaling) {
    return sc::MakeJob(Llama8b(compute, scaling), sc::ParseParallelSpec("tp=1,pp=1,dp=1,microbatch=1,batch=1"));
}

const sc::Op& OpNamed(const sc::Job& job, const std::string& suffix) {
    const sc::Block& layer = *job.graph.Find(sc::BlockKind::dense_layer);
    for (const auto* ops : {&layer.forward, &layer.backward})
        for (const sc::Op& op : *ops)
            if (op.name.ends_with(suffix)) return op;
    ADD_FAILURE() << "no op " << suffix;
    static const sc::Op none{};
    return none;
}

// Bytes of each quantization in one Llama 3 8B layer (s = 8192 tokens, h = 4096, ffn 14336, GQA 32/8 x 128):
// the norm-fed inputs (qkv, gate_up) at the recipe's norm rate, the attention output and the activation output
// (fc2's input, written in 16 bits by Megatron-Core's own SwiGLU) at its cast rate, every output gradient at its
// gradient rate; and what the weight gradient keeps of each input.
TEST(Quantization, EachRecipesBytesOnOneLayerByHand) {
    const double T = 8192, h = 4096, f = 14336, qkv = (32 + 2 * 8) * 128.0;
    struct Case {
        sc::Precision compute;
        sc::Scaling scaling;
        double norm, cast, grad, saved;
    };
    const Case cases[] = {
        {sc::Precision::fp8, sc::Scaling::automatic, 1, 4, 4, 1},  // auto is delayed for fp8
        {sc::Precision::fp8, sc::Scaling::delayed, 1, 4, 4, 1},
        {sc::Precision::fp8, sc::Scaling::current, 4, 6, 6, 1},
        {sc::Precision::fp8, sc::Scaling::block, 4.0625, 4.0625, 4.0625, 1 + 4.0 / 128},
        {sc::Precision::fp8, sc::Scaling::mx, 4.0625, 4.0625, 4.0625, 1 + 1.0 / 32},
        {sc::Precision::fp4, sc::Scaling::automatic, 5.125, 5.125, 5.125, 0.5625},  // auto is NVFP4 for fp4
        {sc::Precision::fp4, sc::Scaling::nvfp4, 5.125, 5.125, 5.125, 0.5625},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(sc::NameOf(c.compute)) + " " + sc::NameOf(c.scaling));
        const sc::Job job = LayerJob(c.compute, c.scaling);
        EXPECT_EQ(job.V(OpNamed(job, "attn.qkv.fp8_input").bytes), c.norm * T * h);
        EXPECT_EQ(job.V(OpNamed(job, "mlp.gate_up.fp8_input").bytes), c.norm * T * h);
        EXPECT_EQ(job.V(OpNamed(job, "attn.out.fp8_input").bytes), c.cast * T * 32 * 128);
        EXPECT_EQ(job.V(OpNamed(job, "mlp.fc2.fp8_input").bytes), c.cast * T * f);
        EXPECT_EQ(job.V(OpNamed(job, "attn.qkv.fp8_grad_cast").bytes), c.grad * T * qkv);
        EXPECT_EQ(job.V(OpNamed(job, "mlp.fc2.fp8_grad_cast").bytes), c.grad * T * h);
        EXPECT_EQ(job.V(OpNamed(job, "mlp.fc2").saved_bytes), c.saved * T * f);
    }
    // bf16 GEMMs quantize nothing and keep their 16-bit input.
    const sc::Job bf16 = LayerJob(sc::Precision::bf16, sc::Scaling::automatic);
    EXPECT_EQ(bf16.V(OpNamed(bf16, "attn.qkv.fp8_input").bytes), 0);
    EXPECT_EQ(bf16.V(OpNamed(bf16, "mlp.fc2.fp8_grad_cast").bytes), 0);
    EXPECT_EQ(bf16.V(OpNamed(bf16, "mlp.fc2").saved_bytes), 2 * T * f);
}

// A weight's quantization once a step: delayed reads 2 bytes and writes two fp8 copies (4); current and NVFP4 read
// it once more for the amax (6; 2 + 2 + 0.5 + 0.5 + two E4M3 scales per 16x16 block); MXFP8 adds an E8M0 scale per
// 32 elements a copy.
TEST(Quantization, WeightCastBytesByRecipe) {
    EXPECT_EQ(sc::Fp8WeightCastBytesPerParam(LayerJob(sc::Precision::fp8, sc::Scaling::delayed)), 4);
    EXPECT_EQ(sc::Fp8WeightCastBytesPerParam(LayerJob(sc::Precision::fp8, sc::Scaling::current)), 6);
    EXPECT_EQ(sc::Fp8WeightCastBytesPerParam(LayerJob(sc::Precision::fp8, sc::Scaling::mx)), 4 + 2.0 / 32);
    EXPECT_EQ(sc::Fp8WeightCastBytesPerParam(LayerJob(sc::Precision::fp4, sc::Scaling::nvfp4)), 5 + 2.0 / 256);
    EXPECT_EQ(sc::Fp8WeightCastBytesPerParam(LayerJob(sc::Precision::bf16, sc::Scaling::automatic)), 0);
}

// On one H100 the quantization part of the step is its bytes at the achieved HBM bandwidth, so current scaling
// costs more than delayed and the GEMMs themselves do not change; the trace's nodes charge what the estimate
// charges under every recipe.
TEST(Quantization, EstimateChargesWhatTheTraceRuns) {
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    auto estimate = [&](sc::Scaling q) {
        const sc::Job job =
            sc::MakeJob(Llama8b(sc::Precision::fp8, q), sc::ParseParallelSpec("tp=2,dp=4,sp=1,batch=8"));
        return sc::EstimateTraining(job, sys, &sctest::MeasuredCalibration(), {});
    };
    const sc::TrainingEstimate delayed = estimate(sc::Scaling::delayed), current = estimate(sc::Scaling::current);
    EXPECT_GT(current.step.fp8_cast, 1.3 * delayed.step.fp8_cast);
    EXPECT_DOUBLE_EQ(current.step.compute, delayed.step.compute);
    for (sc::Scaling q : {sc::Scaling::current, sc::Scaling::block, sc::Scaling::mx}) {
        SCOPED_TRACE(sc::NameOf(q));
        sctest::ChargedComputeEqualsTraceCompute(
            sc::MakeJob(Llama8b(sc::Precision::fp8, q), sc::ParseParallelSpec("tp=2,dp=4,sp=1,batch=8")));
    }
    // NVFP4 on a GB200 (H100 has no fp4), a small MoE with its grouped expert GEMMs.
    sc::ModelConfig moe = sctest::SmallMoe();
    moe.precision.compute = sc::Precision::fp4;
    const sc::Job nvfp4 = sc::MakeJob(moe, sc::ParseParallelSpec("tp=2,dp=2,ep=2,sp=1,microbatch=1,batch=8"));
    sctest::ChargedComputeEqualsTraceCompute(nvfp4, {}, "gb200-nvl72");
    sctest::ExpectTracesKeepAstraSimsRules(nvfp4, "quantization_nvfp4");
}

// A recipe scales one format; anything else is refused with the field, the value and what would be valid.
TEST(Quantization, MismatchedRecipeIsAFieldError) {
    auto error = [](const std::vector<std::string>& sets) { return sctest::ModelPresetError("llama3-8b", sets); };
    EXPECT_EQ(error({"precision.scaling=mx"}),
              "precision.scaling: \"mx\" scales fp8 GEMMs, but precision.compute is bf16; valid with bf16: auto");
    EXPECT_EQ(error({"precision.compute=fp8", "precision.scaling=nvfp4"}),
              "precision.scaling: \"nvfp4\" scales fp4 GEMMs, but precision.compute is fp8; valid with fp8: auto, "
              "delayed, current, block or mx");
    EXPECT_EQ(error({"precision.compute=fp4", "precision.scaling=current"}),
              "precision.scaling: \"current\" scales fp8 GEMMs, but precision.compute is fp4; valid with fp4: auto "
              "or nvfp4");
    EXPECT_NE(error({"precision.compute=fp8", "precision.scaling=mxfp8"}).find("precision.scaling"), std::string::npos);
    EXPECT_EQ(error({"precision.compute=fp8", "precision.scaling=current"}), "");
}

// `--precision mxfp8` and `nvfp4` name a format and its recipe; a --set after them picks another recipe.
TEST(Quantization, CliNamesTheRecipe) {
    const std::string base = "estimate --model presets/models/llama3-8b.json --json";
    auto scaling = [&](const std::string& flags) {
        const sctest::CliResult r = sctest::RunCli(base + " " + flags);
        EXPECT_EQ(r.status, 0) << r.out;
        const auto j = nlohmann::json::parse(r.out, nullptr, false);
        return j.is_discarded()
                   ? std::string("?")
                   : j["precision"]["compute"].get<std::string>() + " " + j["precision"]["scaling"].get<std::string>();
    };
    EXPECT_EQ(scaling("--precision mxfp8"), "fp8 mx");
    EXPECT_EQ(scaling("--precision nvfp4"), "fp4 nvfp4");
    EXPECT_EQ(scaling("--precision fp4"), "fp4 nvfp4");
    EXPECT_EQ(scaling("--precision fp8"), "fp8 delayed");
    EXPECT_EQ(scaling("--precision fp8 --set precision.scaling=current"), "fp8 current");
    const sctest::CliResult text = sctest::RunCli("estimate --model presets/models/llama3-8b.json --precision mxfp8");
    EXPECT_NE(text.out.find("  GEMM scaling                fp8, MXFP8 (E8M0 per 32)\n"), std::string::npos) << text.out;
}

// A link names the recipe after the precision; a recipe it does not know is refused naming the key.
TEST(Quantization, LinkCarriesTheRecipe) {
    const std::string text = "v1;model=llama3-8b;precision=fp8;scaling=current;parallel=tp=8,dp=4;end";
    const sc::ConfigLink l = sc::DecodeConfigLink(text);
    ASSERT_TRUE(l.scaling.has_value());
    EXPECT_EQ(*l.scaling, sc::Scaling::current);
    EXPECT_EQ(sc::EncodeConfigLink(l).rfind("v1;model=llama3-8b;precision=fp8;scaling=current;", 0), 0u);
    EXPECT_EQ(sc::DecodeConfigLink(sc::EncodeConfigLink(l)), l);
    try {
        sc::DecodeConfigLink("v1;model=llama3-8b;scaling=mxfp9;parallel=tp=8,dp=4;end");
        ADD_FAILURE() << "no error";
    } catch (const sc::Error& e) {
        EXPECT_STREQ(e.what(), "scaling: \"mxfp9\" is not one of auto, delayed, current, block, mx, nvfp4");
    }
}

}  // namespace
