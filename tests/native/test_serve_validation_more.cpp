// The serving simulator against data/inference_measured_more.json: TensorRT-LLM 0.17's trtllm-bench throughput
// table (Llama 3.1 8B, 70B and 405B, Mistral 7B, Mixtral 8x7B and 8x22B on H200, H100 and A100) and the online
// serving table of its docs (TensorRT-LLM 0.14 through Triton). Records the project had not been compared with:
// a newer engine version, H200, two MoE models. Each is predicted with what its source states or its tool derives,
// nothing fitted per record; the others say why not. The run writes the table of docs/serving.md's "Second
// validation set" to <build>/serving_validation_more.md; ServeValidationMore.DocsAreCurrent fails when the docs do
// not contain it verbatim. Regenerate with
//   ./build/stagecraft_tests --gtest_filter='ServeValidationMore.*'
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "inference/engine.h"
#include "serve_test_util.h"
#include "serve_validation.h"

namespace {

using nlohmann::json;
using namespace sc;
using namespace servevalidation;
using servetest::kRoot;

const json& Records() {
    static const json j = json::parse(sctest::ReadFile(kRoot + "/data/inference_measured_more.json"));
    return j;
}

// The record's model name -> model preset ("" when none). Llama 3.1 has Llama 3's shapes (same presets).
std::string ModelId(const std::string& name) {
    static const std::map<std::string, std::string> ids = {
        {"Llama-3.1-8B", "llama3-8b"}, {"Llama-3.1-70B", "llama3-70b"},  {"Llama-3.1-405B", "llama3-405b"},
        {"Mistral-7B", "mistral-7b"},  {"Mixtral-8x7B", "mixtral-8x7b"}, {"Mixtral-8x22B", "mixtral-8x22b"}};
    auto it = ids.find(name);
    return it == ids.end() ? "" : it->second;
}

// hardware field -> (system preset, accelerator preset); "" when there is no preset for it. As in the first set:
// a DGX H200 is the DGX H100 fabric with H200 GPUs. "GH200 480GB" is the GH200 with 96 GB of HBM3 beside 480 GB of
// LPDDR5X (only TP1 rows: its system's NVLink is not used). The L40S's server is not named: eight cards on PCIe Gen4.
std::pair<std::string, std::string> Hardware(const std::string& hw) {
    if (hw.rfind("H100", 0) == 0) return {"dgx-h100-superpod", ""};
    if (hw.rfind("H200", 0) == 0) return {"dgx-h100-superpod", "h200"};
    if (hw.rfind("A100", 0) == 0) return {"dgx-a100-superpod", ""};
    if (hw.rfind("GH200", 0) == 0) return {"dgx-gh200", ""};
    if (hw.rfind("L40S", 0) == 0) return {"l40s-pcie-server", ""};
    return {"", ""};
}

// FP8 engines quantize the weights, the GEMMs and the KV cache ("If you specify FP8 quantization, the KV cache will
// automatically be set to FP8 as well!", the source's "Engine Building"); the others run 16-bit throughout.
ServingPrecision PrecisionOf(const std::string& p) {
    ServingPrecision s;
    if (p == "fp8") {
        s.weights = s.compute = s.kv_cache = Precision::fp8;
    } else {
        const Precision w = p == "bf16" ? Precision::bf16 : Precision::fp16;
        s.weights = s.compute = s.kv_cache = s.activations = s.embeddings = w;
    }
    return s;
}

std::string Setup(const json& r) {
    const json& w = r["workload"];
    std::string s = r["model"].get<std::string>() + ", " + r["hardware"].get<std::string>() + " " +
                    r["parallel"].get<std::string>() + " " + r["precision"].get<std::string>() + ", " +
                    w["input_len"].dump() + "/" + w["output_len"].dump();
    if (w.contains("qps")) s += ", " + (w["qps"].is_string() ? w["qps"].get<std::string>() : w["qps"].dump()) + " QPS";
    return s;
}

// Why a record cannot be run: no preset for its model or its GPU ("" when it can).
std::string Missing(const json& r) {
    if (ModelId(r["model"]).empty()) return "no preset for " + r["model"].get<std::string>();
    if (Hardware(r["hardware"]).first.empty()) return "no preset for " + r["hardware"].get<std::string>();
    return "";
}

// TensorRT-LLM 0.17 trtllm-bench throughput: offline, every request queued at once, in-flight batching, output
// tokens/s of the whole system. The engine is built as trtllm-bench builds it (TrtllmBenchSettings); the runtime
// as the first set's TensorRT-LLM 0.14 rows run it (64-token KV blocks, GUARANTEED_NO_EVICT, chunked context) but
// with 95% of the free memory for the cache: "In majority of cases, we also use a higher KV cache percentage by
// setting --kv_cache_free_gpu_mem_fraction 0.95 ... We fall back to 0.90 if we hit an out of memory issue" (the
// source's "Running the Benchmark"; the 0.14 docs say nothing of it). Chunked context is on, as the first set
// reads trtllm-bench's executor settings of that era; the table has 5000/500 and 20000/2000 cells although the
// tuning gives token budgets below those prompts (2,048-4,608 tokens for Llama 3.1 8B), which an engine without
// chunked context cannot schedule. An MoE model's experts are split over the TP ranks: TensorRT-LLM's Mapping
// sets moe_tp_size = tp_size, moe_ep_size = 1 when neither is given, and trtllm-bench build passes only --tp_size
// (tensorrt_llm/mapping.py).
Row Throughput(int i, const json& r) {
    Row row;
    row.index = i;
    row.what = "output tok/s";
    row.setup = Setup(r);
    row.measured = r["measured"]["tokens_per_s"];
    if (const std::string why = Missing(r); !why.empty())
        return NotPredicted(i, row.what, row.setup, row.measured, why);
    const auto [sys_id, acc_id] = Hardware(r["hardware"]);
    const sc::System& sys = servetest::System(sys_id, acc_id);
    const int isl = r["workload"]["input_len"], osl = r["workload"]["output_len"];
    ServingConfig c;
    c.model = servetest::Model(ModelId(r["model"]));
    // TensorRT-LLM attends over the whole context unless its runtime is given a window: its Mistral 7B v0.1 tests
    // run "sliding window attention" by passing --max_attention_window_size to the runner
    // (tests/integration/defs/examples/test_mistral.py), and the source's trtllm-bench commands pass none. So
    // Mistral 7B v0.1's 4,096-token window is not applied here.
    c.model.window = {};
    c.precision = PrecisionOf(r["precision"]);
    c.pool.tp = r["count"];
    PredictTrtllmThroughput(row, c, sys, isl, osl, 0.95);
    return row;
}

// Triton's front end around a TensorRT-LLM engine, per request (EngineConfig::frontend_s): the one published
// breakdown found, perf_analyzer's first-response latency of a streaming ensemble (Qwen2 7B, TensorRT-LLM backend
// 0.11, max_tokens 1; chrjxj/triton_trtllm_tools@13ff117 inference_perf/README.md) gives the client's latency less
// the tensorrt_llm model's as 3.139, 3.176 and 3.418 ms at concurrency 6, 7 and 8 (preprocessing 1.5-1.6 ms,
// postprocessing 0.72-0.83 ms a call, gRPC and the client ~0.9 ms): their median. A measurement of another model on
// an unstated GPU, taken as the front end's size here (ASSUMED).
constexpr double kTritonFrontendSeconds = 3.176e-3;

// Why an online row misses, from the model's own parts of the quantity and what the record's other columns imply.
std::string OnlineCause(const Row& row, const json& r, const ServingRun& run, const ServingConfig& c,
                        const sc::System& sys) {
    const int isl = c.workload.input.min, osl = c.workload.output.min;
    IterationCost cost(c.model, c.precision, c.pool.tp, sys, &Calibration(), isl, c.engine.max_tokens);
    const double prefill_ms = cost.PrefillSeconds(isl) * 1e3;
    const json& m = r["measured"];
    const ServingResult& x = run.result;
    char buf[700];
    if (row.what == "mean TTFT ms") {
        std::snprintf(
            buf, sizeof buf,
            "%s by %.1f ms: the model's lone %d-token prefill is %.1f ms, Triton's front end %.2f ms (one published "
            "perf_analyzer breakdown of another model, ASSUMED here) and its mean TTFT adds %.1f ms of waiting",
            row.error() < 0 ? "under" : "over", std::fabs(row.measured - row.predicted), isl, prefill_ms,
            kTritonFrontendSeconds * 1e3, row.predicted - prefill_ms - kTritonFrontendSeconds * 1e3);
    } else if (row.what == "mean ITL ms") {
        std::snprintf(buf, sizeof buf,
                      "%s: the model's mean step holds %.1f sequences and %.0f tokens (chunked context off, so a step "
                      "that admits prompts carries their whole prefills); the measured ITL is %.2fx the model's",
                      row.error() < 0 ? "under" : "over", x.mean_running, x.mean_batch_tokens,
                      row.measured / row.predicted);
    } else {
        // Little's law on the measured columns: requests in flight = req/s x mean latency (TTFT + (out - 1) ITL).
        const double e2e = (m["ttft_ms_mean"].get<double>() + (osl - 1) * m["itl_ms_mean"].get<double>()) * 1e-3;
        std::snprintf(buf, sizeof buf,
                      "%s: the measured req/s and mean latencies put %.0f requests in flight (Little's law), the "
                      "model %.0f of the 500 (max batch %d); how many requests the client kept outstanding at \"INF\" "
                      "is not stated",
                      row.error() < 0 ? "under" : "over", m["requests_per_s"].get<double>() * e2e, x.mean_running,
                      c.engine.max_seqs);
    }
    return buf;
}

// The online serving table (TensorRT-LLM 0.14 behind Triton, BF16, 500 requests a row): requests arrive at the
// row's QPS, or all at once for "INF". Neither the table nor its section states the engine build, the runtime
// options or the arrival process; the engine is trtllm-build's defaults (max_batch_size 2048, max_num_tokens 8192:
// BuildConfig, tensorrt_llm/builder.py) and the runtime the executor's (64-token blocks, 90% of the free memory,
// GUARANTEED_NO_EVICT, chunked context off: KvCacheConfig, SchedulerConfig, ExecutorConfig defaults), arrivals
// Poisson at the QPS (the process is not stated). Compared: mean TTFT and mean ITL (the model's per-request TPOT,
// (e2e - ttft) / (output - 1), averaged), and for "INF" the output rate; at a finite QPS the output rate is the
// arrival rate whenever the server keeps up, which no model could miss, so it is not a comparison.
std::vector<Row> Online(int i, const json& r) {
    const json& m = r["measured"];
    const bool inf = r["workload"]["qps"].is_string();
    std::vector<Row> rows = {Make(i, "mean TTFT ms", Setup(r), m["ttft_ms_mean"], 0),
                             Make(i, "mean ITL ms", Setup(r), m["itl_ms_mean"], 0)};
    if (inf) rows.push_back(Make(i, "output tok/s", Setup(r), m["output_tokens_per_s"], 0));
    if (const std::string why = Missing(r); !why.empty()) {
        for (Row& x : rows) x = NotPredicted(i, x.what, x.setup, x.measured, why);
        return rows;
    }
    const auto [sys_id, acc_id] = Hardware(r["hardware"]);
    const sc::System& sys = servetest::System(sys_id, acc_id);
    ServingConfig c;
    c.model = servetest::Model(ModelId(r["model"]));
    c.precision = PrecisionOf(r["precision"]);
    c.pool.tp = r["count"];
    c.engine.max_seqs = 2048;
    c.engine.max_tokens = 8192;
    c.engine.block_size = 64;
    c.engine.memory_policy = KvMemoryPolicy::free_fraction;
    c.engine.kv_memory_fraction = 0.9;
    c.engine.admission = KvAdmission::reserve_full;
    c.engine.chunked_prefill = false;
    c.engine.frontend_s = kTritonFrontendSeconds;
    c.pool.all_reduce = EngineAllReduce::tensorrt_llm;  // the engine's own all-reduce (PredictTrtllmThroughput)
    c.workload.requests = r["workload"]["requests"];
    c.workload.arrival = inf ? ArrivalKind::offline : ArrivalKind::poisson;
    if (!inf) c.workload.rate = r["workload"]["qps"];
    c.workload.input.min = c.workload.input.max = r["workload"]["input_len"];
    c.workload.output.min = c.workload.output.max = r["workload"]["output_len"];
    const ServingRun run = SimulateServing(c, sys, &Calibration());
    rows[0].predicted = run.result.ttft.mean * 1e3;
    rows[1].predicted = run.result.tpot.mean * 1e3;
    if (inf) rows[2].predicted = run.result.output_tokens_per_s;
    for (Row& x : rows)
        if (std::fabs(x.error()) > kTarget) x.reason = OnlineCause(x, r, run, c, sys);
    return rows;
}

std::vector<Row>& AllRows() {
    static std::vector<Row> rows = [] {
        std::vector<Row> out;
        const json& recs = Records();
        for (int i = 0; i < static_cast<int>(recs.size()); ++i) {
            const json& r = recs[i];
            const std::string fw = r["framework"];
            if (fw.rfind("TensorRT-LLM 0.17", 0) == 0) {
                out.push_back(Throughput(i, r));
            } else if (fw.find("online serving") != std::string::npos) {
                for (Row& x : Online(i, r)) out.push_back(x);
            } else {
                out.push_back(NotPredicted(i, "?", Setup(r), 1, "no mapping for this record"));
            }
        }
        return out;
    }();
    return rows;
}

std::string Markdown() {
    return TableMarkdown(AllRows(), "tests/native/test_serve_validation_more.cpp (ServeValidationMore.WritesTheTable)");
}

TEST(ServeValidationMore, EveryRecordIsMappedOrSaysWhyNot) {
    ExpectEveryRecordMappedOrSaysWhyNot(AllRows(), Records().size());
}

TEST(ServeValidationMore, WritesTheTable) {
    std::ofstream(sctest::BuildDir() + "/serving_validation_more.md") << Markdown();
}

TEST(ServeValidationMore, DocsAreCurrent) {
    ExpectDocsHoldTheTable(Markdown(), "ServeValidationMore.*", "serving_validation_more.md");
}

TEST(ServeValidationMore, ReadmeShowsTheSummary) {  // the rows are in docs/serving.md
    ExpectReadmeHoldsTheSummary(Markdown(), "serving_validation_more.md");
}

// A ratchet, not a target: comparisons made and within 10% when the table was last regenerated. A change that
// loses one fails here; one that gains raises the number. Lowered once on purpose, 386 -> 382, when TensorRT-LLM's
// rows took the engine's own all-reduce (docs/serving.md, "TensorRT-LLM's own all-reduce"): the online ITL rows of
// one or two sequences a step came in, those of tens (already under) went out, as did a few TTFT rows. 389 -> 392 when
// prefill attention read TensorRT-LLM's measured context-attention op at each batch's keys a query (docs/serving.md,
// "TensorRT-LLM's context attention").
TEST(ServeValidationMore, WithinTenPercentDoesNotRegress) {
    const Counts c = CountsOf(AllRows());
    EXPECT_EQ(c.compared, 529);
    EXPECT_GE(c.within, 392);
}

}  // namespace

namespace servevalidation {
const std::vector<Row>& SecondSetRows() { return AllRows(); }
}  // namespace servevalidation
