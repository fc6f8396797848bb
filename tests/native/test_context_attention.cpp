// Prefill attention at the serving engine's measured context-attention op (AttentionKernel::tensorrt_llm): the curves
// are aiconfigurator's TensorRT-LLM 1.3.0rc20 records in data/calibration.json, the serving model reads them where a
// part has them (FP8 context FMHA where trtllm-bench's build turns it on), MLA and parts without them keep the library
// curves, training cannot pick them, and a decode's attention no longer depends on the prompt length the prefill's
// efficiency was read at.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "config/calibration.h"
#include "inference/iteration_cost.h"
#include "serve_test_util.h"
#include "training/compute_model.h"

namespace {

using namespace sc;
using nlohmann::json;
using servetest::Calibration;
using servetest::Model;
using servetest::System;

std::vector<const AttentionCurve*> EngineCurves() {
    std::vector<const AttentionCurve*> out;
    for (const AttentionCurve& c : Calibration().attention)
        if (c.kernel == AttentionKernel::tensorrt_llm) out.push_back(&c);
    return out;
}

// Eight parts (B200, GB200, B300, GB300, H100 with H800, H200, L40S, the RTX PRO 6000 Server), bf16 and fp8, head
// dimensions 64, 128 and 256: forward, causal, isl 128-16,384 at 16,384 tokens a batch. Every record's efficiency
// is its causal FLOPs over its time at the part's bf16 peak, and every curve point a record.
TEST(ServeContextAttention, TheCurvesAreTheRecords) {
    const std::vector<const AttentionCurve*> curves = EngineCurves();
    ASSERT_EQ(curves.size(), 8u * 2 * 3);
    std::map<std::string, const json*> records;  // series / seqlen -> record
    for (const json& r : servetest::CalibrationRecords("attention"))
        if (r.at("implementation") == "TensorRT-LLM context attention op")
            records[r.at("series").get<std::string>() + "/" + std::to_string(r.at("shape").at("seqlen").get<int>())] =
                &r;
    ASSERT_EQ(records.size(), 8u * 2 * 3 * 8);
    for (const AttentionCurve* c : curves) {
        SCOPED_TRACE(c->id);
        EXPECT_TRUE(c->forward);
        EXPECT_TRUE(c->causal);
        EXPECT_TRUE(c->dtype == Precision::bf16 || c->dtype == Precision::fp8);
        ASSERT_EQ(c->efficiency.x.size(), 8u);
        for (size_t i = 0; i < 8; ++i) {
            const int isl = static_cast<int>(c->efficiency.x[i]);
            EXPECT_EQ(isl, 128 << i);
            ASSERT_TRUE(records.count(c->series + "/" + std::to_string(isl)));
            const json& r = *records.at(c->series + "/" + std::to_string(isl));
            const json& s = r.at("shape");
            EXPECT_EQ(s.at("batch").get<int>() * isl, 16384);
            EXPECT_EQ(s.at("head_dim").get<int>(), c->head_dim);
            const double flops =
                4.0 * s.at("batch").get<double>() * s.at("nheads").get<double>() * isl * isl / 2 * c->head_dim;
            const double tflops = flops / (r.at("measured").at("time_ms").get<double>() * 1e-3) / 1e12;
            const double peak = r.at("derived").at("peak_tflops_dense_spec");
            EXPECT_NEAR(r.at("derived").at("efficiency").get<double>(), tflops / peak, 0.0005);
            EXPECT_EQ(r.at("derived").at("efficiency").get<double>(), c->efficiency.y[i]);
            EXPECT_EQ(peak, PeakFlops(servetest::Part(c->accelerators[0]), Precision::bf16) / 1e12);
        }
    }
    EXPECT_EQ(FindAttentionCurve(Calibration(), "h800", AttentionKernel::tensorrt_llm, true, true, 128),
              FindAttentionCurve(Calibration(), "h100-sxm", AttentionKernel::tensorrt_llm, true, true, 128));
}

// A lookup prefers the curve at the precision asked for (16-bit reads either 16-bit curve), then falls back to the
// kernel's others: cuDNN has no fp8 curve on B200, so fp8 reads its bf16 one.
TEST(ServeContextAttention, ALookupPrefersItsPrecision) {
    const CalibrationTable& cal = Calibration();
    auto find = [&](AttentionKernel k, int hd, Precision p) {
        return FindAttentionCurve(cal, "b200", k, true, true, hd, p);
    };
    EXPECT_EQ(find(AttentionKernel::tensorrt_llm, 128, Precision::fp8)->id,
              "aiconf-b200-trtllm1.3-context-attention-fp8-hd128-fwd-causal");
    EXPECT_EQ(find(AttentionKernel::tensorrt_llm, 128, Precision::bf16)->id,
              "aiconf-b200-trtllm1.3-context-attention-bf16-hd128-fwd-causal");
    EXPECT_EQ(find(AttentionKernel::tensorrt_llm, 64, Precision::fp16)->id,
              "aiconf-b200-trtllm1.3-context-attention-bf16-hd64-fwd-causal");
    EXPECT_EQ(find(AttentionKernel::cudnn, 128, Precision::fp8)->id, "cudnnfe-b200-bf16-fwd-causal");
    EXPECT_EQ(FindAttentionCurve(cal, "a100-80gb", AttentionKernel::tensorrt_llm, true, true, 128), nullptr);
}

// The calibration file names the engine's kernel "tensorrt-llm" and may state a curve's precision; a training
// option cannot ask for the engine's kernel, and a precision attention is not measured at is refused by field.
TEST(ServeContextAttention, OnlyTheServingModelReadsTheEnginesKernel) {
    AttentionKernel k = AttentionKernel::cudnn;
    EXPECT_FALSE(ParseAttentionKernel("tensorrt-llm", &k));
    EXPECT_EQ(k, AttentionKernel::cudnn);
    EXPECT_STREQ(NameOf(AttentionKernel::tensorrt_llm), "tensorrt-llm");
    json j = json::parse(sctest::ReadFile(servetest::kRoot + "/presets/calibration/measured.json"));
    size_t i = 0;
    while (j["attention"][i]["kernel"] != "tensorrt-llm") ++i;
    const std::string at = "attention[" + std::to_string(i) + "]";
    auto error = [&] { return sctest::ErrorOf([&] { ParseCalibration(j.dump()); }); };
    j["attention"][i]["dtype"] = "fp4";
    std::string e = error();
    EXPECT_NE(e.find(at + ".dtype"), std::string::npos) << e;
    EXPECT_NE(e.find("\"fp8\""), std::string::npos) << e;
    j["attention"][i]["dtype"] = "bf16";
    j["attention"][i]["kernel"] = "trtllm";
    e = error();
    EXPECT_NE(e.find(at + ".kernel"), std::string::npos) << e;
    EXPECT_NE(e.find("\"tensorrt-llm\""), std::string::npos) << e;
    j["attention"][i]["kernel"] = "tensorrt-llm";
    j["attention"][i].erase("dtype");
    EXPECT_EQ(ParseCalibration(j.dump()).attention[i].dtype, Precision::bf16);  // no dtype: 16-bit
}

const AttentionCurve* ServingCurve(const std::string& model, const ServingPrecision& p, const std::string& system,
                                   double prefill = 8192) {
    const IterationCost cost(Model(model), p, 1, System(system), &Calibration(), prefill, 1);
    const AttentionCurve* c = cost.compute_model().attention_curve(true);
    if (c) {
        EXPECT_EQ(cost.compute_model().AttentionEfficiency(true), Interpolate(c->efficiency, prefill)) << c->id;
    }
    return c;
}

// The serving model's prefill attention reads the engine's op where the part has it, at the prompt length: in FP8
// (FP8 context FMHA) under an FP8 cache with FP8 or FP4 GEMMs, as trtllm-bench's build turns it on; in bf16 for
// gpt-oss's MXFP4 experts and for a 16-bit cache. MLA's context attention keeps the library curve, and a part
// without the op (A100) its library curve.
TEST(ServeContextAttention, TheServingModelReadsTheEnginesOp) {
    ServingPrecision fp4;
    fp4.weights = fp4.compute = Precision::fp4;
    fp4.kv_cache = Precision::fp8;
    EXPECT_EQ(ServingCurve("llama3-70b", fp4, "dgx-b200-superpod")->id,
              "aiconf-b200-trtllm1.3-context-attention-fp8-hd128-fwd-causal");
    ServingPrecision mx;
    mx.int4 = kMxfp4;
    mx.compute = mx.kv_cache = Precision::fp8;
    EXPECT_EQ(ServingCurve("gpt-oss-20b", mx, "dgx-b200-superpod")->id,
              "aiconf-b200-trtllm1.3-context-attention-bf16-hd64-fwd-causal");
    ServingPrecision bf16;  // 16-bit weights, GEMMs and cache
    EXPECT_EQ(ServingCurve("llama3-8b", bf16, "dgx-h100-superpod", 2048)->id,
              "aiconf-h100-trtllm1.3-context-attention-bf16-hd128-fwd-causal");
    ServingPrecision fp8 = fp4;
    fp8.weights = fp8.compute = Precision::fp8;
    fp8.kv_cache = Precision::bf16;  // a 16-bit cache: the FMHA stays 16-bit
    EXPECT_EQ(ServingCurve("llama3-8b", fp8, "dgx-h100-superpod")->dtype, Precision::bf16);
    EXPECT_EQ(ServingCurve("deepseek-v3", fp4, "dgx-b200-superpod")->kernel, AttentionKernel::cudnn);
    const AttentionCurve* a100 = ServingCurve("llama3-8b", bf16, "dgx-a100-superpod");
    EXPECT_TRUE(a100 == nullptr || a100->kernel != AttentionKernel::tensorrt_llm);
}

// The op's curve measured B200's context attention at head dimension 64 at about half cuDNN's head-128 rate at 8K
// (0.29 against 0.62 of the bf16 peak): gpt-oss's prefill of 8,192 tokens takes that much longer.
TEST(ServeContextAttention, GptOssPrefillOnB200PaysTheHead64Op) {
    ServingPrecision mx;
    mx.int4 = kMxfp4;
    mx.compute = mx.kv_cache = Precision::fp8;
    const ModelConfig m = Model("gpt-oss-20b");
    CalibrationTable library = Calibration();
    std::erase_if(library.attention, [](const AttentionCurve& c) { return c.kernel == AttentionKernel::tensorrt_llm; });
    BatchShape b;
    b.AddPrefillChunk(0, 8192, m.window.size);
    b.logits = 1;
    const sc::System& sys = System("dgx-b200-superpod");
    const double engine = IterationCost(m, mx, 1, sys, &Calibration(), 8192, 8192).Breakdown(b).attention;
    const double lib = IterationCost(m, mx, 1, sys, &library, 8192, 8192).Breakdown(b).attention;
    EXPECT_GT(engine / lib, 1.6);
}

// A decode's attention is timed at the curve read at twice its context (the causal prompt whose queries read as many
// keys on average), so it does not change with the prompt length the prefill's efficiency was once read at: a
// 128-token prompt had put the op's 6% efficiency on 4,096-token decodes, compute-bound.
TEST(ServeContextAttention, ADecodeReadsTheCurveAtItsContext) {
    ServingPrecision fp8;
    fp8.weights = fp8.compute = fp8.kv_cache = Precision::fp8;
    const ModelConfig m = Model("llama3-70b");
    const sc::System& sys = System("dgx-h200-superpod");
    BatchShape b;
    for (int i = 0; i < 64; ++i) b.AddDecode(4096, 0);
    b.logits = 64;
    const IterationCost short_prompt(m, fp8, 1, sys, &Calibration(), 128, 1);
    const IterationCost long_prompt(m, fp8, 1, sys, &Calibration(), 8192, 1);
    EXPECT_DOUBLE_EQ(short_prompt.Breakdown(b).attention, long_prompt.Breakdown(b).attention);
    EXPECT_LT(short_prompt.compute_model().AttentionEfficiency(true), 0.1);
    const AttentionCurve* c = short_prompt.compute_model().attention_curve(true);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(short_prompt.compute_model().ForwardAttentionEfficiencyAt(8194), Interpolate(c->efficiency, 8194));
}

// A prefill's attention is read at the causal length whose queries read as many keys as the batch's do on average
// (2 x pairs / tokens), not at one typical prompt: the same batch costs the same whatever prompt length the cost
// was built for, and a 2,048-token chunk after 16,384 cached tokens (each query reading ~17,400 keys) runs at the
// curve's long-sequence efficiency, well above a first chunk's.
TEST(ServeContextAttention, APrefillReadsTheCurveAtItsKeys) {
    ServingPrecision fp8;
    fp8.weights = fp8.compute = fp8.kv_cache = Precision::fp8;
    const ModelConfig m = Model("llama3-70b");
    const sc::System& sys = System("dgx-h200-superpod");
    const IterationCost short_prompt(m, fp8, 1, sys, &Calibration(), 128, 1);
    const IterationCost long_prompt(m, fp8, 1, sys, &Calibration(), 16384, 1);
    BatchShape first, late;
    first.AddPrefillChunk(0, 2048, 0);
    late.AddPrefillChunk(16384, 2048, 0);
    first.logits = late.logits = 1;
    EXPECT_DOUBLE_EQ(short_prompt.Breakdown(late).attention, long_prompt.Breakdown(late).attention);
    const double per_pair_first = short_prompt.Breakdown(first).attention / first.prefill_pairs;
    const double per_pair_late = short_prompt.Breakdown(late).attention / late.prefill_pairs;
    const AttentionCurve* c = short_prompt.compute_model().attention_curve(true);
    ASSERT_NE(c, nullptr);
    const double gain = Interpolate(c->efficiency, 2 * late.prefill_pairs / late.prefill_tokens) /
                        Interpolate(c->efficiency, 2 * first.prefill_pairs / first.prefill_tokens);
    EXPECT_GT(gain, 1.4);
    EXPECT_NEAR(per_pair_first / per_pair_late, gain, 0.05 * gain);  // compute-bound, the floor aside
}

}  // namespace
