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
        {"Llama-3.1-8B", "llama3-8b"},   {"Llama-3.1-70B", "llama3-70b"},     {"Llama-3.1-405B", "llama3-405b"},
        {"Mistral-7B", "mistral-7b"},    {"Mixtral-8x7B", "mixtral-8x7b"},    {"Mixtral-8x22B", "mixtral-8x22b"}};
    auto it = ids.find(name);
    return it == ids.end() ? "" : it->second;
}

// hardware field -> (system preset, accelerator preset); "" when there is no preset for it. As in the first set:
// a DGX H200 is the DGX H100 fabric with H200 GPUs.
std::pair<std::string, std::string> Hardware(const std::string& hw) {
    if (hw.rfind("H100", 0) == 0) return {"dgx-h100-superpod", ""};
    if (hw.rfind("H200", 0) == 0) return {"dgx-h100-superpod", "h200"};
    if (hw.rfind("A100", 0) == 0) return {"dgx-a100-superpod", ""};
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
// source's "Running the Benchmark"; the 0.14 docs say nothing of it). An MoE model's experts are split over the TP
// ranks: TensorRT-LLM's Mapping sets moe_tp_size = tp_size, moe_ep_size = 1 when neither is given, and
// trtllm-bench build passes only --tp_size (tensorrt_llm/mapping.py).
Row Throughput(int i, const json& r) {
    Row row;
    row.index = i;
    row.what = "output tok/s";
    row.setup = Setup(r);
    row.measured = r["measured"]["tokens_per_s"];
    if (const std::string why = Missing(r); !why.empty()) return NotPredicted(i, row.what, row.setup, row.measured, why);
    const auto [sys_id, acc_id] = Hardware(r["hardware"]);
    const sc::System& sys = servetest::System(sys_id, acc_id);
    const int isl = r["workload"]["input_len"], osl = r["workload"]["output_len"];
    ServingConfig c;
    c.model = servetest::Model(ModelId(r["model"]));
    c.precision = PrecisionOf(r["precision"]);
    c.pool.tp = r["count"];
    const auto [bs, tok] = TrtllmBenchSettings(c.model, c.precision, c.pool.tp, sys.accelerator, isl, osl);
    c.engine.max_seqs = bs;
    c.engine.max_tokens = tok;
    c.engine.block_size = 64;
    c.engine.memory_policy = KvMemoryPolicy::free_fraction;
    c.engine.kv_memory_fraction = 0.95;
    c.engine.admission = KvAdmission::reserve_full;
    c.engine.chunked_prefill = true;
    c.workload.arrival = ArrivalKind::offline;
    c.workload.requests = TrtllmRequests(isl, osl);
    c.workload.input.min = c.workload.input.max = isl;
    c.workload.output.min = c.workload.output.max = osl;
    try {
        ServingRun run = SimulateServing(c, sys, &Calibration());
        row.predicted = run.result.output_tokens_per_s;
        const double fit = std::floor(run.kv.blocks / std::ceil((isl + osl) / 64.0));
        if (std::fabs(row.error()) > kTarget)
            row.reason = ThroughputCause(row, run, static_cast<int>(std::min<double>(bs, fit)), c, sys, isl, osl);
    } catch (const Error& e) {
        row.expressible = false;
        row.reason = std::string("the memory model says it does not fit: ") + e.what();
    }
    return row;
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
    std::vector<bool> seen(Records().size(), false);
    for (const Row& r : AllRows()) {
        seen[r.index] = true;
        if (!r.expressible) {
            EXPECT_FALSE(r.reason.empty()) << r.index;
        } else {
            EXPECT_GT(r.predicted, 0) << r.index << " " << r.setup;
            if (std::fabs(r.error()) > kTarget) EXPECT_FALSE(r.reason.empty()) << r.index << " outside 10% without a cause";
        }
    }
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_TRUE(seen[i]) << "record " << i;
}

TEST(ServeValidationMore, WritesTheTable) {
    std::ofstream(sctest::BuildDir() + "/serving_validation_more.md") << Markdown();
}

}  // namespace
