// The serving simulator against data/inference_measured_trtllm_pytorch.json: TensorRT-LLM's perf overview for its
// PyTorch backend (NVIDIA/TensorRT-LLM@03e27c7 docs/source/developer-guide/perf-overview.md): DeepSeek-R1, GPT-OSS
// 120B and 20B, Llama 3.3 70B, Llama 4 Maverick, Qwen3 235B and 30B on B200, GB200, H200 and H100, in NVFP4, MXFP4
// and FP8, at TP1-2 and with attention data parallelism (DEP2-8). Records the project had not been compared with: a
// newer engine, Blackwell, FP4, MoE models served with expert parallelism. Each is predicted with what its source
// states or its tool derives, nothing fitted per record; the others say why not. The run writes the table of
// docs/serving.md's "Third validation set" to <build>/serving_validation_trtllm_pytorch.md;
// ServeValidationTrtllmPytorch.DocsAreCurrent fails when the docs do not contain it verbatim. Regenerate with
//   ./build/stagecraft_tests --gtest_filter='ServeValidationTrtllmPytorch.*'
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
    static const json j = json::parse(sctest::ReadFile(kRoot + "/data/inference_measured_trtllm_pytorch.json"));
    return j;
}

// The record's model -> model preset. DeepSeek-R1-0528 has DeepSeek-V3's shapes (its MTP module is not run:
// the page's options configure no speculative decoding); Llama 3.3 70B has Llama 3's.
std::string ModelId(const std::string& name) {
    static const std::map<std::string, std::string> ids = {
        {"DeepSeek-R1-0528", "deepseek-v3"},     {"GPT-OSS-120B", "gpt-oss-120b"},
        {"GPT-OSS-20B", "gpt-oss-20b"},          {"Llama-3.3-70B", "llama3-70b"},
        {"Llama-4-Maverick", "llama4-maverick"}, {"Qwen3-235B-A22B", "qwen3-235b-a22b"},
        {"Qwen3-30B-A3B", "qwen3-30b-a3b"}};
    auto it = ids.find(name);
    return it == ids.end() ? "" : it->second;
}

// The page's GPU variants -> system presets. The RTX 6000 Pro Blackwell Server Edition: eight cards in one PCIe
// server, as NVIDIA's AIConfigurator collected them (the page does not name the server).
std::string SystemId(const std::string& hw) {
    if (hw.rfind("RTX 6000 Pro Blackwell Server", 0) == 0) return "rtx-pro-6000-pcie-server";
    if (hw.rfind("B200", 0) == 0) return "dgx-b200-superpod";
    if (hw.rfind("GB200", 0) == 0) return "gb200-nvl72";
    if (hw.rfind("H200", 0) == 0) return "dgx-h200-superpod";
    if (hw.rfind("H100", 0) == 0) return "dgx-h100-superpod";
    return "";
}

bool Blackwell(const std::string& hw) { return hw.rfind("B200", 0) == 0 || hw.rfind("GB200", 0) == 0; }

// What each checkpoint stores and runs (the page's model lists and options):
// - FP4: NVIDIA ModelOpt's NVFP4 checkpoints, every decoder linear in NVFP4, the LM head 16-bit (ModelOpt excludes
//   it). The KV cache in FP8: set in DeepSeek-R1's options; for the others "auto" takes the checkpoint's
//   kv_cache_quant_algo, which is not read here, and FP8 is ASSUMED (trtllm-bench's own _KV_CACHE_MAP maps NVFP4 to
//   an FP8 cache, tensorrt_llm/bench/benchmark/utils/general.py).
// - FP8: ModelOpt's FP8 checkpoints, weights and GEMMs in FP8 with one scale a tensor; DeepSeek-R1's is DeepSeek's
//   own block-scaled FP8 (fp8_scaling block: its config.json's weight_block_size [128, 128]). The KV cache in FP8
//   (DeepSeek-R1's options; ASSUMED for the others, as above).
// - GPT-OSS: the released MXFP4 experts, the rest 16-bit (the page lists no other checkpoint). On Blackwell the
//   options set an FP8 cache and the CUTLASS MoE backend, whose GEMMs are taken as W4A8 (MXFP8 activations,
//   ASSUMED); on Hopper ("Hopper: use auto", "use TRITON") a 16-bit cache and W4A16 GEMMs. The column's "(FP8)" on
//   Hopper is not explained by the page.
ServingPrecision PrecisionOf(const json& r) {
    ServingPrecision s;
    const std::string p = r["precision"];
    if (r["model"].get<std::string>().rfind("GPT-OSS", 0) == 0) {
        s.int4 = kMxfp4;
        const bool bw = Blackwell(r["hardware"]);
        s.compute = bw ? Precision::fp8 : Precision::bf16;
        s.kv_cache = bw ? Precision::fp8 : Precision::bf16;
        return s;
    }
    s.weights = s.compute = p == "fp4" ? Precision::fp4 : Precision::fp8;
    s.kv_cache = Precision::fp8;
    if (p == "fp8" && r["model"].get<std::string>().rfind("DeepSeek", 0) == 0) s.fp8_scaling = Fp8Scaling::block;
    return s;
}

std::string Setup(const json& r) {
    const json& w = r["workload"];
    return r["model"].get<std::string>() + ", " +
           r["hardware"].get<std::string>().substr(0, r["hardware"].get<std::string>().find(' ')) + " " +
           r["parallel"].get<std::string>() + " " + r["precision"].get<std::string>() + ", " + w["input_len"].dump() +
           "/" + w["output_len"].dump();
}

// Why a record cannot be run: no preset for its model or its GPU ("" when it can).
std::string Missing(const json& r) {
    if (ModelId(r["model"]).empty()) return "no preset for " + r["model"].get<std::string>();
    if (SystemId(r["hardware"]).empty()) return "no preset for the " + r["hardware"].get<std::string>();
    return "";
}

// trtllm-bench's engine settings for the PyTorch backend (tensorrt_llm/bench/benchmark/utils/general.py get_settings
// -> bench/build/build.py get_benchmark_engine_settings -> bench/build/tuning.py calc_engine_setting and
// finetune_setting), reproduced: KV requests that fit `kv_fraction` of (device memory x GPUs - parameters x bytes a
// weight: NVFP4 0.5, FP8 1, 16-bit 2), at ISL + OSL tokens of 2 x attention layers x max(tp, KV heads) x head size x
// bytes a KV element each; max batch from that (capped at 4,096, rounded up), max tokens from batch x (1 + ISL/OSL)
// (capped at 32,768, at least 2,048, rounded up). The HF config's KV heads and head size are what the tool reads:
// for DeepSeek's MLA that is 128 heads of hidden / heads = 56, not the latent the cache holds. A quantization
// outside the tuned ones (GPT-OSS's MXFP4) gets BuildConfig's defaults, 2,048 and 8,192. Chunked prefill is off
// (get_settings' default, and no option here sets it), so max tokens is raised to the longest prompt plus the max
// batch. Parameters are what the tool counts: the checkpoint's safetensors elements (`ModelConfig.get_param_count`,
// bench/build/dataclasses.py: `sum(metadata.parameter_count.values())`). An FP8 checkpoint holds one element a weight;
// a ModelOpt NVFP4 checkpoint packs two weights a uint8 element and keeps one E4M3 scale element a block of 16, so its
// quantized weights count 0.5 + 1/16 elements each (NVFP4's stored bytes, StoredBytes) and its 16-bit embeddings and
// LM head one each.
std::pair<int, int> PytorchBenchSettings(const ModelConfig& m, const ServingPrecision& prec, int tp, int pp,
                                         const Accelerator& acc, int isl, int osl, double kv_fraction) {
    if (prec.int4) return {2048, std::max(8192, isl + 2048)};
    ServingPrecision ones;
    ones.weights = ones.embeddings = Precision::fp8;  // 1 byte each: bytes = parameters
    double elements = ServingWeightBytesPerRank(m, ones, 1);
    if (prec.weights == Precision::fp4) {
        ServingPrecision wide = ones;
        wide.embeddings = Precision::bf16;
        const double sixteen_bit = ServingWeightBytesPerRank(m, wide, 1) - elements;  // the embeddings' parameters
        elements = ServingWeightBytesPerRank(m, prec, 1) - sixteen_bit;               // their 2 bytes counted once
    }
    const double params_g = elements / (1024.0 * 1024 * 1024);
    const double bpe = prec.weights == Precision::fp4 ? 0.5 : BytesOf(prec.weights) < 2 ? 1 : 2;
    const double kv_bpe = BytesOf(prec.kv_cache) < 2 ? 1 : 2;
    const double kv_heads = m.is_mla() ? m.heads : m.kv_heads;
    const double head_size = m.is_mla() ? static_cast<double>(m.hidden) / m.heads : m.head_dim;
    const double per_token_g =
        2.0 * m.layers * std::max<double>(tp, kv_heads) * head_size * kv_bpe / (1024.0 * 1024 * 1024);
    const double available = acc.MemoryBytes() / (1024.0 * 1024 * 1024) * tp * pp - params_g * bpe;  // n_gpus = tp x pp
    const double requests = available * kv_fraction / per_token_g / (isl + osl);
    const double raw_bs = std::min(requests, 4096.0);
    const double raw_token = std::min(raw_bs * (1 + static_cast<double>(isl) / osl), 32768.0);
    const int bs = raw_bs < 256    ? std::max(64, 32 * static_cast<int>(std::ceil(raw_bs / 32)))
                   : raw_bs < 1024 ? 128 * static_cast<int>(std::ceil(raw_bs / 128))
                                   : 256 * static_cast<int>(std::ceil(raw_bs / 256));
    const int tok = raw_token < 4096   ? std::max(2048, 256 * static_cast<int>(std::ceil(raw_token / 256)))
                    : raw_token < 8192 ? 512 * static_cast<int>(std::ceil(raw_token / 512))
                                       : 1024 * static_cast<int>(std::ceil(raw_token / 1024));
    return {bs, std::max(tok, isl + bs)};
}

// Why a row misses: where the predicted time went, at how many sequences, and what the cache held.
std::string Cause(const Row& row, const ServingRun& run, const ServingConfig& c) {
    const ServingResult& r = run.result;
    const IterationBreakdown& b = r.busy;
    const double t = b.total();
    char buf[700];
    std::snprintf(buf, sizeof buf,
                  "%s: %.0f sequences at once on average (max batch %d a GPU%s, KV cache %.1f GiB a GPU); %s of the "
                  "iterations replayed a padded CUDA graph, its padding %s of their rows; of the predicted time %s "
                  "GEMMs, %s attention, %s TP all-reduce, %s expert all-to-all; the measured rate is %.2fx the model's",
                  row.error() > 0 ? "over" : "under", r.mean_running, c.engine.max_seqs,
                  c.pool.attention_dp ? ", attention data parallel" : "", run.kv.kv_bytes / 1073741824.0,
                  Pct(static_cast<double>(r.graph_iterations) / std::max(1LL, r.iterations)).c_str(),
                  Pct(r.graph_dummy_rows / std::max(1.0, r.graph_dummy_rows + r.graph_real_rows)).c_str(),
                  Pct(b.linear / t).c_str(), Pct(b.attention / t).c_str(), Pct(b.tp_comm / t).c_str(),
                  Pct(b.ep_comm / t).c_str(), row.measured / row.predicted);
    return buf;
}

// trtllm-bench throughput on the PyTorch backend: offline, the page's requests all queued at once, output tokens/s
// per GPU. The runtime: 32-token KV blocks (KvCacheConfig.tokens_per_block's default), GUARANTEED_NO_EVICT
// (SchedulerConfig's default), chunked prefill off, TensorRT-LLM's own all-reduce, 95% of the free memory for the
// cache ("In many cases, we also use a higher KV cache percentage by setting --kv_cache_free_gpu_mem_fraction 0.95
// ... We fall back to 0.90 or lower if out-of-memory errors are encountered": which rows fell back is not stated).
// DEPn: n GPUs with attention data parallel and the experts split over them (enable_attention_dp, --ep n).
Row Throughput(int i, const json& r) {
    Row row;
    row.index = i;
    row.what = "output tok/s/GPU";
    row.setup = Setup(r);
    row.measured = r["measured"]["tokens_per_s_per_gpu"];
    if (const std::string why = Missing(r); !why.empty())
        return NotPredicted(i, row.what, row.setup, row.measured, why);
    const sc::System& sys = servetest::System(SystemId(r["hardware"]));
    const int isl = r["workload"]["input_len"], osl = r["workload"]["output_len"], gpus = r["count"];
    const std::string parallel = r["parallel"];
    // "TPn" or "DEPn", then ",PPm" on the RTX tables: m pipeline stages of n GPUs each (count = n x m).
    const size_t comma = parallel.find(",PP");
    const int pp = comma == std::string::npos ? 1 : std::stoi(parallel.substr(comma + 3));
    const int stage = gpus / pp;
    ServingConfig c;
    c.model = servetest::Model(ModelId(r["model"]));
    c.precision = PrecisionOf(r);
    c.pool.tp = stage;
    c.pool.pp = pp;
    if (parallel.rfind("DEP", 0) == 0) c.pool.ep = stage, c.pool.attention_dp = true;
    // Cards joined only by PCIe: TensorRT-LLM's CommunicationFactory finds neither its NVLink all-to-alls nor DeepEP
    // and falls back to AllGatherReduceScatter (tensorrt_llm/_torch/modules/fused_moe/communication).
    c.pool.allgather_dispatch = c.pool.attention_dp && sys.levels.front().name.rfind("pcie", 0) == 0;
    constexpr double kKvFraction = 0.95;
    const auto [bs, tok] =
        PytorchBenchSettings(c.model, c.precision, stage, pp, sys.accelerator, isl, osl, kKvFraction);
    c.engine.max_seqs = bs;
    c.engine.max_tokens = tok;
    c.engine.block_size = 32;
    c.engine.memory_policy = KvMemoryPolicy::free_fraction;
    c.engine.kv_memory_fraction = kKvFraction;
    c.engine.admission = KvAdmission::reserve_full;
    c.engine.chunked_prefill = false;
    // The PyTorch backend's KV cache manager got no per-layer windows from a model's layer_types before
    // NVIDIA/TensorRT-LLM#18767 (2026-09): "every layer placed in one full-context pool ... the bounded layers hold
    // blocks they can never read". The page's options give no max_attention_window, so gpt-oss's windowed layers
    // hold their whole context here.
    c.engine.window_eviction = false;
    // Every model's llm_options.yml: cuda_graph_config enable_padding true, batch_sizes as listed.
    c.engine.cuda_graph_batch_sizes = kTrtllmBenchGraphSizes;
    c.pool.all_reduce = EngineAllReduce::tensorrt_llm;
    c.workload.arrival = ArrivalKind::offline;
    c.workload.requests = r["workload"]["requests"];
    c.workload.input.min = c.workload.input.max = isl;
    c.workload.output.min = c.workload.output.max = osl;
    try {
        const ServingRun run = SimulateServing(c, sys, &Calibration());
        row.predicted = run.result.output_tokens_per_s / gpus;
        row.accelerator = sys.accelerator.id;
        row.precision_class = PublishedPrecisionOf(c.precision.compute);
        if (std::fabs(row.error()) > kTarget) row.reason = Cause(row, run, c);
    } catch (const Error& e) {
        row.expressible = false;
        row.reason = std::string("the description is refused: ") + e.what();
    }
    return row;
}

std::vector<Row>& AllRows() {
    static std::vector<Row> rows = [] {
        std::vector<Row> out;
        const json& recs = Records();
        for (int i = 0; i < static_cast<int>(recs.size()); ++i) out.push_back(Throughput(i, recs[i]));
        return out;
    }();
    return rows;
}

std::string Markdown() {
    return TableMarkdown(
        AllRows(),
        "tests/native/test_serve_validation_trtllm_pytorch.cpp (ServeValidationTrtllmPytorch.WritesTheTable)");
}

TEST(ServeValidationTrtllmPytorch, EveryRecordIsMappedOrSaysWhyNot) {
    ExpectEveryRecordMappedOrSaysWhyNot(AllRows(), Records().size());
}

TEST(ServeValidationTrtllmPytorch, WritesTheTable) {
    std::ofstream(sctest::BuildDir() + "/serving_validation_trtllm_pytorch.md") << Markdown();
}

TEST(ServeValidationTrtllmPytorch, DocsAreCurrent) {
    ExpectDocsHoldTheTable(Markdown(), "ServeValidationTrtllmPytorch.*", "serving_validation_trtllm_pytorch.md");
}

TEST(ServeValidationTrtllmPytorch, ReadmeShowsTheSummary) {
    ExpectReadmeHoldsTheSummary(Markdown(), "serving_validation_trtllm_pytorch.md");
}

// A ratchet, not a target: comparisons made and within 10% when the table was last regenerated. A change that
// loses one fails here; one that gains raises the number. Lowered once on purpose, 50 -> 49, when MLA's absorbed
// decode became one batched GEMM (docs/serving.md, "MLA's absorbed decode as one batched GEMM"): its per-head
// timing, 6-26x TensorRT-LLM's measured bmm, had kept DeepSeek-R1's FP8 rows on H200 inside, which now come out
// 20-40% fast (TensorRT-LLM runs that checkpoint's block-scaled FP8 on Hopper, which the model did not describe).
// Lowered again, 49 -> 48, when it did (fp8_scaling block: the engine's measured block-scaled GEMM and MoE op): of
// those four rows three move toward their runs (+40% -> +20% twice, +21% -> +19%), and the decode-long one, inside at
// -6% only by the per-tensor ops' speed, leaves at -15% (docs/serving.md, "Block-scaled FP8").
// Lowered again, 48 -> 46, when per-tensor fp8 read the engine's own measured Linear and the engine's tables were read
// below 1% of peak as measured (docs/serving.md, "Per-tensor FP8 at the engine's own Linear"): Llama 4 Maverick FP8
// 8192/1024 on eight H200s went from -8.9% to -10.5% and Qwen3-235B FP4 1000/1000 on four B200s from -9.9% to
// -10.1%, while the first set gained five rows and the second seven. Back to 48 with the decode call's blocks on
// Blackwell (docs/serving.md, "A decode call's blocks on Blackwell"): four gpt-oss-20b rows in, two Qwen3 rows out.
// 123 -> 143 compared and 48 -> 56 within when the RTX PRO 6000 Server got a preset and its measured ops (docs/serving.md,
// "The RTX PRO 6000 Blackwell Server Edition"); its seven pipelined data-parallel rows stay unpredicted. 56 -> 59 when
// its collectives read their measured times and its DEP rows dispatch as TensorRT-LLM does without NVLink; 59 -> 60
// when its GDDR7 streamed at the engine's quantize kernel's rate and its decode calls paid the attention op's floor.
// 143 -> 150 compared and 60 -> 63 within when pipelined data-parallel attention (DEP2,PP2) was modelled; 63 -> 68 when
// gpt-oss's windowed layers held their whole context. Lowered on purpose, 68 -> 65, when gpt-oss-20b read its own
// measured MoE op instead of gpt-oss-120b's at moe_ep 4 (docs/serving.md, "An MoE op's tokens per row"): its six long
// Hopper rows come in, and its four short Hopper rows and three Blackwell ones go out, fast as GPT-OSS-120B's are at
// its own op. 65 -> 71 when prefill attention read TensorRT-LLM's measured context-attention op; 71 -> 76 when Llama
// 4's chunked local attention was modelled; 76 -> 84 when decode-only iterations replayed the page's padded CUDA
// graphs (docs/serving.md, "Padded CUDA graphs"); 84 -> 86 when the all-to-all dispatch carried the GEMMs' NVFP4.
// Lowered on purpose, 86 -> 79, when a token crossed the all-to-all once to each GPU holding one of its experts, as
// TensorRT-LLM's dispatch kernel sends it, not once an expert (docs/serving.md, "The expert all-to-all"): the
// all-to-all had been 2-3x the kernels NVIDIA measured on GB200. Five Qwen3-235B rows came in (three on GB200, two on
// H200); ten went out, fast as the other Hopper DEP rows are: GPT-OSS-120B on two B200s (+7.6-9.8% -> +10.5-17.8%,
// five rows) and on four H100s (+8.9% -> +10.6%), Qwen3-235B on eight H100s (+9.0-9.5% -> +15.9-16.3%) and on four
// H200s (+5.5% -> +11.9-14.4%). The mean error went 12.2% -> 12.0%. 79 -> 89 when one die's two parts read the
// faster of their MoE-op curves where their tables disagree (docs/serving.md, "One die, two tables"): B200's
// Qwen3-235B, Qwen3-30B-A3B and DeepSeek-R1 rows.
TEST(ServeValidationTrtllmPytorch, WithinTenPercentDoesNotRegress) {
    const Counts c = CountsOf(AllRows());
    EXPECT_EQ(c.compared, 150);
    EXPECT_GE(c.within, 89);
}

}  // namespace

namespace servevalidation {
const std::vector<Row>& ThirdSetRows() { return AllRows(); }
}  // namespace servevalidation
