// What the rates of an estimate rest on (training/rate_sources.h): named measured series where the part has
// them, the fallback and its value where it has not, and the same words in the CLI's text and JSON reports.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/model_config.h"
#include "engine/estimate.h"
#include "engine/search.h"
#include "engine/serve.h"
#include "parallel/job.h"
#include "preset_files.h"
#include "report/engine_report.h"
#include "report/serve_report.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "training/estimate.h"
#include "training/rate_sources.h"

namespace {

const std::string kRoot = SC_SOURCE_DIR;
const sc::CalibrationTable& Cal() { return sctest::MeasuredCalibration(); }

sc::Job Llama8b() {
    const sc::ModelConfig m = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/llama3-8b.json"));
    return sc::MakeJob(m, sc::ParseParallelSpec("tp=1,pp=1,dp=8,microbatch=1,batch=8"));
}

sc::RateSources Rates(const std::string& system, const sc::TrainingOptions& opt = {}) {
    return sc::DescribeRates(Llama8b(), sctest::LoadSystemPreset(system), &Cal(), opt);
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(RateSources, H100IsMeasuredThroughout) {
    const sc::RateSources r = Rates("dgx-h100-superpod");
    EXPECT_TRUE(Has(r.gemm, "measured curve xla-sm90-bf16")) << r.gemm;
    EXPECT_TRUE(Has(r.attention, "forward measured (fa3-fig-fwd")) << r.attention;
    EXPECT_TRUE(Has(r.attention, "backward measured (fa3-fig-bwd")) << r.attention;
    EXPECT_TRUE(Has(r.hbm, "STREAM copy measured")) << r.hbm;
    EXPECT_TRUE(r.all_measured);
}

// An edited part reads its preset's curve scaled by edited / preset peak, and says so (the TFLOPS range shown is
// the curve as measured).
TEST(RateSources, AnEditedPeakSaysItsScale) {
    sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    EXPECT_FALSE(Has(sc::DescribeRates(Llama8b(), sys, &Cal(), {}).gemm, "edited")) << "unedited";
    sys.accelerator.matrix.bf16 = 2 * *sys.accelerator.matrix.bf16;
    const std::string gemm = sc::DescribeRates(Llama8b(), sys, &Cal(), {}).gemm;
    EXPECT_TRUE(Has(gemm, "measured curve xla-sm90-bf16")) << gemm;
    EXPECT_TRUE(Has(gemm, "; x2 for the edited peak")) << gemm;
}

// GB300 names the curve it borrows and where it was measured, its own cuDNN attention runs, and its HBM rate: a
// streaming kernel timed on it (no STREAM run of it exists).
TEST(RateSources, Gb300SaysWhereEachRateWasMeasured) {
    const sc::RateSources r = Rates("gb300-nvl72");
    EXPECT_TRUE(Has(r.gemm, "xla-sm100-bf16 on NVIDIA Blackwell sm_100")) << r.gemm;
    EXPECT_TRUE(Has(r.attention, "forward measured (cudnnfe-gb300-llama31-bf16, cudnn)")) << r.attention;
    EXPECT_TRUE(Has(r.attention, "backward measured (cudnnfe-gb300-llama31-bf16, cudnn)")) << r.attention;
    EXPECT_TRUE(Has(r.hbm, "TensorRT-LLM's fp8 quantize measured")) << r.hbm;
    EXPECT_TRUE(r.all_measured);
    EXPECT_TRUE(Has(Rates("tpu-v5p-pod").hbm, "no measurement for tpu-v5p")) << Rates("tpu-v5p-pod").hbm;
}

TEST(RateSources, FallbackGemmsSayTheirValueAndTheMeasuredCeiling) {
    EXPECT_TRUE(Has(Rates("tpu-v5p-pod").gemm, "no GEMM curve for tpu-v5p: 0.70 of peak for every GEMM (fallback)"));
    const std::string mi300x = Rates("mi300x-cluster").gemm;
    EXPECT_TRUE(Has(mi300x, "its best measured shape (MAMF), 0.51 of peak")) << mi300x;
    EXPECT_TRUE(Has(mi300x, "the 0.70 fallback would exceed it")) << mi300x;
    sc::TrainingOptions hand;
    hand.matmul_efficiency = 0.8;
    EXPECT_EQ(Rates("dgx-h100-superpod", hand).gemm, "0.80 of the bf16 peak, set by hand");
    EXPECT_FALSE(Rates("dgx-h100-superpod", hand).all_measured);
}

// The engine fills them once per request and both reports print them; the estimate's own result (the layout
// search's hot path) carries none.
TEST(RateSources, ReportsCarryThemAndTheSearchPathDoesNot) {
    const sc::System sys = sctest::LoadSystemPreset("gb300-nvl72");
    EXPECT_TRUE(sc::EstimateTraining(Llama8b(), sys, &Cal(), {}).rates.gemm.empty());
    sc::engine::Request req;
    req.model = Llama8b().model;
    req.parallel = Llama8b().par;
    req.system = &sys;
    req.calibration = &Cal();
    const sc::engine::EstimateResult res = sc::engine::RunEstimate(req);
    const sc::RateSources want = sc::DescribeRates(*res.job, sys, &Cal(), req.options);
    EXPECT_EQ(res.training->rates.gemm, want.gemm);
    const std::string text = sc::EstimateReportText(req, res);
    EXPECT_TRUE(Has(text, "rates from                    measurements (presets/calibration/measured.json)")) << text;
    EXPECT_TRUE(Has(text, "  GEMMs                       " + want.gemm)) << text;
    const nlohmann::json j = nlohmann::json::parse(sc::EstimateReportJson(req, res));
    EXPECT_EQ(j["training"]["rate_sources"]["attention"], want.attention);
    EXPECT_EQ(j["training"]["rate_sources"]["all_measured"], true);
    EXPECT_TRUE(j["training"]["rate_sources"]["decode_attention"].is_null());  // training decodes nothing
}

// The layout search's report names the rates of its best layout once (text and JSON), those of DescribeRates.
TEST(RateSources, SearchReportNamesTheBestLayoutsRates) {
    sc::engine::Request req;
    req.model = Llama8b().model;
    const sc::System sys = sctest::LoadSystemPreset("mi300x-cluster");
    req.system = &sys;
    req.calibration = &Cal();
    req.search.gpus = 8;
    req.search.batch = 8;
    req.search.top_k = 3;
    const sc::engine::SearchSnapshot snap = sc::engine::SnapshotSearch(req);
    const sc::SearchResult r = sc::engine::MergeSearch(snap, {sc::engine::RunSearchShard(snap, 0, 1)});
    ASSERT_FALSE(r.top.empty());
    const sc::RateSources want = sc::DescribeRates(sc::MakeJob(req.model, r.top[0].par), sys, &Cal(), req.options);
    const std::string text = sc::SearchReportText(snap, r);
    EXPECT_TRUE(Has(text, "rates from: measurements and fallbacks")) << text;
    EXPECT_TRUE(Has(text, "  GEMMs              " + want.gemm)) << text;
    EXPECT_TRUE(Has(want.gemm, "best measured shape (MAMF)")) << want.gemm;
    const nlohmann::json j = nlohmann::json::parse(sc::SearchReportJson(snap, r));
    EXPECT_EQ(j["rate_sources"]["gemm"], want.gemm);
}

// The kernel floor is a rate too: H100's comes from XLA's 256^3 GEMM (the whole 5.20 us, training's rule); A100's
// GEMM calibration has none, and its floor is the one Vidur's weight reads give; MI300X has neither, so nothing is
// measured about its fixed cost.
TEST(RateSources, KernelFloorIsNamedOrSaidMissing) {
    EXPECT_EQ(Rates("dgx-h100-superpod").floor,
              "5.20 us per kernel: the xla-sm90-bf16 GEMM of 33.6 MFLOP, measured at "
              "5.20 us");
    const sc::RateSources a100 = Rates("dgx-a100-superpod");
    EXPECT_EQ(a100.floor,
              "4.57 us per kernel: the median of vidur-a100-linear's 99 weight-read GEMMs beyond their bytes at "
              "STREAM-copy bandwidth");
    const sc::KernelFloor none = sc::TrainingKernelFloor(
        &Cal(), sc::ParseAccelerator(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/hardware/mi300x.json")));
    EXPECT_EQ(none.alpha_s, 0);
}

// Serving describes the iteration cost it simulates with: forward attention only, at the engine's measured context
// attention op where the part has one (TensorRT-LLM's on H100, 16-bit for a 16-bit cache), serving's own floor (the
// operands at HBM bandwidth taken off: 5.07 us on H100), in the text and JSON of `stagecraft serve`.
TEST(RateSources, ServingSaysWhatItsIterationsRestOn) {
    sc::engine::ServeRequest req;
    req.config = servetest::Base("llama3-8b", 1, 512, 64, 20);
    req.system = &servetest::System("dgx-h100-superpod");
    req.calibration = &Cal();
    const sc::engine::ServeResult run = sc::engine::RunServe(req);
    EXPECT_TRUE(run.rates.all_measured);
    EXPECT_TRUE(Has(run.rates.attention,
                    "tensorrt-llm at this sequence length: forward measured "
                    "(aiconf-h100-trtllm1.3-context-attention-bf16-hd128, tensorrt-llm)"))
        << run.rates.attention;
    EXPECT_FALSE(Has(run.rates.attention, "backward")) << run.rates.attention;
    EXPECT_TRUE(Has(run.rates.floor, "5.07 us per kernel")) << run.rates.floor;
    const std::string text = sc::ServeReportText(req, run);
    EXPECT_TRUE(
        Has(text, "rates from     measurements (presets/calibration/measured.json)\n  GEMMs        " + run.rates.gemm))
        << text;
    const nlohmann::json j = nlohmann::json::parse(sc::ServeReportJson(req, run));
    EXPECT_EQ(j["rate_sources"]["kernel_floor"], run.rates.floor);
    // Its decode-attention calls' fixed cost, measured on H100 (config/calibration.h DecodeAttentionFloor).
    EXPECT_EQ(run.rates.decode_attention,
              "15.39 us a call beyond its bytes: the median of 10 measured series' fixed times "
              "(paged-decode-attention-h100)");
    EXPECT_TRUE(Has(text, "\n  decode attn  " + run.rates.decode_attention + "\n")) << text;
    EXPECT_EQ(j["rate_sources"]["decode_attention"], run.rates.decode_attention);
}

}  // namespace
