// The "Serving" tab of the cluster window: the page's model served on the page's cluster. On the left the
// description (serving preset, pools, engine, number formats, workload, SLO); on the right one simulation's
// latencies, throughput, KV cache and its occupancy, batch and queue over time, and a rate sweep's
// throughput-latency curve. The numbers are those `stagecraft serve` prints for the same request (report
// composed once in src/report/serve_report.cpp).
#include <cstdio>
#include <string>
#include <vector>

#include "app/app.h"
#include "app/app_state.h"
#include "app/chart.h"
#include "app/inference_driver.h"
#include "app/palette.h"
#include "app/panels.h"
#include "app/serve_link.h"
#include "imgui.h"
#include "inference/published_serving_runs.h"
#include "report/format.h"
#include "report/serve_report.h"

namespace sc::app {

namespace {

// The description's combos, each as wide as the longest choice of any ("fixed_rate").
template <typename Enum>
bool Combo(const char* label, Enum* v, std::initializer_list<Enum> all) {
    ImGui::SetNextItemWidth(ImGui::CalcTextSize("fixed_rate").x + ImGui::GetFrameHeight() + 12);
    return EnumCombo(label, v, all);
}

bool Milliseconds(const char* label, double* seconds, const char* help) {
    double ms = *seconds * 1e3;
    if (!DoubleField(label, &ms, "%.0f", help)) return false;
    *seconds = ms / 1e3;
    return true;
}

// A pool's large-EP fields and its all-reduce on one line (PoolConfig::attention_dp, redundant_experts,
// deepep_dispatch, two_batch_overlap, all_reduce); `id` keeps the decode pool's widgets apart ("##decode"). Returns true when changed.
bool LargeEpFields(PoolConfig& p, const std::string& id) {
    auto box = [](const std::string& label, bool* on, const char* help) {
        const bool changed = ImGui::Checkbox(label.c_str(), on);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", help);
        return changed;
    };
    bool changed = box("attention DP" + id, &p.attention_dp,
                       "each of the tp GPUs runs attention on its own sequences and caches only their KV; the routed "
                       "experts are split one group a GPU (ep = tp) and reached by an all-to-all (DeepSeek's "
                       "inference system, SGLang's DP attention); MoE models, pp 1");
    ImGui::SameLine();
    changed |= IntField(("redundant experts" + id).c_str(), &p.redundant_experts,
                        "copies of the most loaded routed experts the ep groups also hold (DeepSeek's 32, EPLB); "
                        "experts + copies must divide by ep");
    ImGui::SameLine();
    changed |= box("DeepEP" + id, &p.deepep_dispatch,
                   "with attention DP: a token goes once to each GPU holding one of its experts and once over the "
                   "network to each node (deepseek-ai/DeepEP); off: every token-expert pair is sent");
    ImGui::SameLine();
    changed |= box("all-gather dispatch" + id, &p.allgather_dispatch,
                   "with attention DP: every GPU's tokens are all-gathered (quantized) and the experts' outputs "
                   "reduce-scattered, TensorRT-LLM's fallback where GPUs have no NVLink (PCIe servers)");
    ImGui::SameLine();
    changed |= box("two-batch overlap" + id, &p.two_batch_overlap,
                   "with attention DP: each iteration runs as two micro-batches, one's expert all-to-all behind the "
                   "other's compute (DeepSeek's dual micro-batch overlap, SGLang's --enable-two-batch-overlap); the "
                   "weights are read twice");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::CalcTextSize("tensorrt-llm").x + ImGui::GetFrameHeight() + 12);
    if (ImGui::BeginCombo(("all-reduce" + id).c_str(), NameOf(p.all_reduce))) {
        for (EngineAllReduce a :
             {EngineAllReduce::nccl, EngineAllReduce::tensorrt_llm, EngineAllReduce::vllm, EngineAllReduce::sglang})
            if (ImGui::Selectable(NameOf(a), a == p.all_reduce) && a != p.all_reduce) p.all_reduce = a, changed = true;
        ImGui::EndCombo();
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "the TP all-reduce the engine runs: NCCL's, or the engine's own custom kernels for small "
            "buffers (TensorRT-LLM's AllReduceStrategy.AUTO; vLLM's and SGLang's in a CUDA graph), "
            "timed on its measured curve where the part has one for the group's GPUs");
    return changed;
}

// The decoder weights' format: bf16, fp8, fp4 (NVFP4, its GEMMs in fp4 too), int4 in AWQ/GPTQ's groups of 128 or
// MXFP4 (W4A16: the GEMMs run at the activations' precision). Returns true when changed.
bool WeightsCombo(ServingPrecision& p) {
    ImGui::SetNextItemWidth(ImGui::CalcTextSize("fixed_rate").x + ImGui::GetFrameHeight() + 12);
    const std::string now = WeightFormatName(p);
    bool changed = false;
    if (ImGui::BeginCombo("weights", now.c_str())) {
        const bool blocks = p.fp8_scaling == Fp8Scaling::block;
        for (Precision x : {Precision::bf16, Precision::fp8, Precision::fp4})
            if (ImGui::Selectable(NameOf(x), !p.int4 && p.weights == x && !blocks)) {
                p.int4.reset(), p.weights = x, p.fp8_scaling = Fp8Scaling::tensor, changed = true;
            }
        if (ImGui::Selectable("fp8 (128x128 blocks)", !p.int4 && blocks)) {
            p.int4.reset(), p.weights = Precision::fp8, p.fp8_scaling = Fp8Scaling::block, changed = true;
        }
        const bool mx = p.int4 && p.int4->mxfp4();
        if (ImGui::Selectable("int4 g128", p.int4.has_value() && !mx)) {
            p.fp8_scaling = Fp8Scaling::tensor;
            p.int4 = p.int4 && !mx ? *p.int4 : Int4Weights{};
            p.weights = p.activations, changed = true;
        }
        if (ImGui::Selectable("mxfp4", mx)) {
            p.fp8_scaling = Fp8Scaling::tensor;
            p.int4 = kMxfp4;
            p.weights = p.activations, changed = true;
        }
        ImGui::EndCombo();
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "fp8 (128x128 blocks): DeepSeek-V3's fine-grained fp8, a scale per 128x128 weights and 1x128 "
            "activations, its GEMMs the engine's block-scaled kernels; "
            "fp4: NVFP4, 4-bit values and an 8-bit scale per 16 (4.5 bits a weight), the GEMMs in fp4 "
            "(Blackwell); int4: 4-bit weights with an fp16 scale and a 4-bit zero per 128 (AWQ, GPTQ); mxfp4: "
            "4-bit values and an 8-bit scale per 32 (gpt-oss); int4 and mxfp4 GEMMs dequantize them and run at "
            "16 bits");
    return changed;
}

// Where the decode pool runs: beside the prefill pool on the page's cluster, or on a cluster of its own (a system
// preset: its accelerator, memory and network; the KV cache crosses both clusters' scale-out networks).
// The switch's tooltip: what padding does, and the sizes the description captures.
std::string CudaGraphTip(const std::vector<int>& sizes) {
    std::string t =
        "an iteration of decodes only replays the captured graph of the smallest batch size at or above its "
        "sequences, the other rows dummy requests (TensorRT-LLM's cuda_graph_config enable_padding; on: its perf "
        "overview's sizes)";
    if (sizes.empty()) return t + "; off: every iteration runs at its own size";
    t += "; sizes:";
    for (int x : sizes) t += " " + std::to_string(x);
    return t;
}

bool DecodeClusterCombo(AppState& s) {
    std::string& id = s.inference.decode_system;
    const char* shared = "the page's cluster";
    const SystemPreset* own = DecodeSystemPreset(s);
    const std::string current = own ? own->system.name : shared;
    bool changed = false;
    ImGui::SetNextItemWidth(-ImGui::CalcTextSize("decode on").x - ImGui::GetStyle().ItemInnerSpacing.x);
    if (ImGui::BeginCombo("decode on", current.c_str())) {
        if (ImGui::Selectable(shared, id.empty())) id.clear(), changed = true;
        for (const SystemPreset& p : s.systems) {
            const std::string pid = p.file.ends_with(".json") ? p.file.substr(0, p.file.size() - 5) : p.file;
            if (ImGui::Selectable(p.system.name.c_str(), pid == id)) id = pid, changed = true;
        }
        ImGui::EndCombo();
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "the decode pool's cluster: the page's (beside the prefill pool), or one of its own, e.g. A100s "
            "decoding what H100s prefill (Splitwise-HA); its KV caches cross both clusters' scale-out networks, at "
            "the slower one's bandwidth");
    return changed;
}

// Returns true when something was edited.
bool DrawDescription(AppState& s) {
    InferenceState& q = s.inference;
    ServingConfig& c = q.config;
    bool changed = false;
    const char* current = q.preset_index >= 0 ? q.presets[q.preset_index].description.name.c_str() : "edited";
    ImGui::SetNextItemWidth(-ImGui::CalcTextSize("workload").x - ImGui::GetStyle().ItemInnerSpacing.x);
    if (ImGui::BeginCombo("workload", current)) {
        for (size_t i = 0; i < q.presets.size(); ++i)
            if (ImGui::Selectable(q.presets[i].description.name.c_str(), static_cast<int>(i) == q.preset_index))
                SelectServingPreset(s, q.presets[i].file);
        ImGui::EndCombo();
    }
    ImGui::PushItemWidth(80);
    changed |= IntField("tp", &c.pool.tp, "tensor-parallel GPUs of one replica (within the scale-up domain)");
    ImGui::SameLine();
    changed |=
        IntField("replicas", &c.pool.replicas, "independent copies of the model; requests are dealt round-robin");
    changed |= IntField("pp", &c.pool.pp, "pipeline stages of one replica (layers split; pp batches in flight)");
    ImGui::SameLine();
    changed |= IntField("ep", &c.pool.ep, "expert-parallel groups of a stage's tp ranks (MoE models; divides tp)");
    changed |= LargeEpFields(c.pool, "");
    bool disaggregated = c.decode_pool.has_value();
    if (ImGui::Checkbox("disaggregated decode pool", &disaggregated)) {
        if (disaggregated) c.decode_pool = c.pool;
        else c.decode_pool.reset(), q.decode_system.clear();
        changed = true;
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "the pool above prefills only, this one decodes; each KV cache crosses the network between "
            "them when its prefill ends (Splitwise, DistServe)");
    if (c.decode_pool) {
        changed |= IntField("decode tp", &c.decode_pool->tp, "tensor-parallel GPUs of one decode replica");
        ImGui::SameLine();
        changed |= IntField("decode replicas", &c.decode_pool->replicas, "decode replicas");
        changed |= IntField("decode pp", &c.decode_pool->pp, "pipeline stages of one decode replica");
        ImGui::SameLine();
        changed |= IntField("decode ep", &c.decode_pool->ep, "expert-parallel groups of a decode stage");
        changed |= LargeEpFields(*c.decode_pool, "##decode");
        changed |= DecodeClusterCombo(s);
    }
    changed |= IntField("max seqs", &c.engine.max_seqs, "sequences in one iteration (vLLM max_num_seqs)");
    ImGui::SameLine();
    changed |= IntField("max tokens", &c.engine.max_tokens, "tokens in one iteration (vLLM max_num_batched_tokens)");
    ImGui::SameLine();
    Speculation& sp = c.engine.speculation;
    if (IntField("draft tokens", &sp.tokens,
                 "speculative decoding: tokens a draft head (one decoder layer of the model's shape, as DeepSeek-V3's "
                 "MTP module or EAGLE's) proposes a step for the model to verify; 0: none")) {
        // DeepSeek-V3's report (arXiv 2412.19437, sec. 5.4.3): its MTP module's second token is accepted 85-90% of
        // the time; the low end, for a head with no acceptance of its own yet.
        if (sp.tokens > 0 && sp.acceptance == 0) sp.acceptance = 0.85;
        changed = true;
    }
    if (sp.tokens > 0) {
        ImGui::SameLine();
        changed |= DoubleField("acceptance", &sp.acceptance, "%.2f",
                               "probability a draft is accepted when the ones before it were: a property of the "
                               "model, its draft head and the prompts (DeepSeek-V3's MTP: 0.85-0.9)");
    }
    changed |= ImGui::Checkbox("chunked prefill", &c.engine.chunked_prefill);
    if (c.model.has_window()) {  // only a model with windowed layers has blocks to free
        ImGui::SameLine();
        changed |= ImGui::Checkbox("free out-of-window KV", &c.engine.window_eviction);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "a windowed layer's blocks are freed once they leave its window (vLLM; TensorRT-LLM given the "
                "layers' windows); off: it holds its whole context, as TensorRT-LLM's PyTorch backend did for gpt-oss");
    }
    ImGui::SameLine();
    bool graphs = !c.engine.cuda_graph_batch_sizes.empty();
    if (ImGui::Checkbox("padded CUDA graphs", &graphs)) {
        c.engine.cuda_graph_batch_sizes = graphs ? kTrtllmBenchGraphSizes : std::vector<int>{};
        changed = true;
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", CudaGraphTip(c.engine.cuda_graph_batch_sizes).c_str());
    ImGui::SameLine();
    changed |= Combo("preemption", &c.engine.preemption, {Preemption::recompute, Preemption::swap});
    ImGui::SameLine();
    double frontend_ms = c.engine.frontend_s * 1e3;
    if (DoubleField("front end ms", &frontend_ms, "%.2f",
                    "each request's time outside the engine, added to its TTFT and latency (Triton's ensemble "
                    "around TensorRT-LLM tokenizing, detokenizing and streaming: 3.18 ms in one published "
                    "breakdown); 0: the engine's own latencies")) {
        c.engine.frontend_s = frontend_ms / 1e3;
        changed = true;
    }
    // Only a workload with shared prefixes, turns or samples has anything to reuse.
    if (c.workload.prefixes.count > 0 || c.workload.turns > 1 || c.workload.samples > 1) {
        ImGui::SameLine();
        bool reuse = c.engine.prefix_caching;
        if (ImGui::Checkbox("prefix caching", &reuse)) {
            // The tier of the preset the description started from (none when it had none).
            const EngineConfig tier =
                q.base_index >= 0 ? q.presets[q.base_index].description.config.engine : EngineConfig{};
            SetPrefixCaching(c, reuse, tier);
            changed = true;
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "keep each shared prompt prefix's KV blocks after it is computed, for later prompts to "
                "take instead of computing it (vLLM enable_prefix_caching, SGLang's radix cache); "
                "the preset's host tier or remote store, if any, comes with it");
    }
    if (c.engine.prefix_caching) {
        changed |= DoubleField("host tier GiB", &c.engine.host_cache_gib, "%.1f",
                               "host memory per GPU for prefixes evicted from the GPU (LMCache's CPU offload); "
                               "their copies cross the host link; 0: none");
        ImGui::SameLine();
        changed |= DoubleField("remote store GiB", &c.engine.remote_cache_gib, "%.1f",
                               "a remote KV store's share per GPU (Mooncake, LMCache's remote backend), across the "
                               "cluster's scale-out network; with a host tier too, evicted prefixes go to both and "
                               "the host's copy is read first; 0: none");
    }
    if (c.engine.preemption == Preemption::swap || c.engine.host_cache_gib > 0) {
        ImGui::SameLine();
        changed |= DoubleField("host link GB/s", &c.engine.swap_gbps, "%.0f",
                               "the host link a swap or a host tier's copy crosses, per direction per GPU; 0: the "
                               "part's measured link (nvbandwidth: H100 51/52 GB/s, GB200 201/193)");
    }
    changed |= WeightsCombo(c.precision);
    ImGui::SameLine();
    changed |= Combo("KV cache", &c.precision.kv_cache, {Precision::bf16, Precision::fp8, Precision::fp4});
    if (changed && c.precision.weights == Precision::fp8) c.precision.compute = Precision::fp8;
    if (changed && c.precision.weights != Precision::fp8) c.precision.compute = c.precision.weights;
    Workload& w = c.workload;
    changed |= Combo("arrivals", &w.arrival,
                     {ArrivalKind::poisson, ArrivalKind::gamma, ArrivalKind::fixed_rate, ArrivalKind::closed_loop,
                      ArrivalKind::offline});
    if (w.arrival == ArrivalKind::poisson || w.arrival == ArrivalKind::gamma || w.arrival == ArrivalKind::fixed_rate) {
        ImGui::SameLine();
        changed |= DoubleField("req/s", &w.rate, "%.2f", "mean arrival rate");
    }
    if (w.arrival == ArrivalKind::gamma) {
        ImGui::SameLine();
        changed |= DoubleField("cv", &w.cv, "%.2f", "coefficient of variation of the gaps (1: Poisson, > 1: bursty)");
    }
    if (w.arrival == ArrivalKind::closed_loop) {
        ImGui::SameLine();
        changed |= IntField("clients", &w.concurrency, "each sends its next request when the previous completes");
    }
    ImGui::SameLine();
    changed |= IntField("turns", &w.turns,
                        "requests a conversation: each next turn is sent when the one before completes, its prompt "
                        "that turn's prompt and output and new input tokens (with prefix caching it reuses them)");
    ImGui::SameLine();
    changed |= IntField("samples", &w.samples,
                        "completions of each prompt (vLLM's n: best-of-N, self-consistency); a request completes "
                        "with its last sample, and with prefix caching its samples share the prompt's blocks");
    int requests = static_cast<int>(w.requests);
    if (IntField("requests", &requests, "requests in the run; with turns > 1, conversations (each turn a request)"))
        w.requests = requests, changed = true;
    ImGui::SameLine();
    if (IntField("shared prefixes", &w.prefixes.count,
                 "each prompt begins with one of this many shared prefixes (a system prompt, a document), then its "
                 "own input tokens (SGLang's generated-shared-prefix workload); 0: none")) {
        // SGLang bench_serving's gsp_system_prompt_len default, for a workload that had no prefixes.
        if (w.prefixes.count > 0 && w.prefixes.tokens == 0) w.prefixes.tokens = 2048;
        changed = true;
    }
    if (w.prefixes.count > 0) {
        ImGui::SameLine();
        changed |= IntField("prefix tokens", &w.prefixes.tokens, "tokens of each shared prefix");
    }
    Retrieval& rag = w.retrieval;
    if (IntField("passages", &rag.documents,
                 "retrieval before the prompt (RAG): passages a query to the retrieval service puts in the prompt, "
                 "after its shared prefix and before its own input; 0: no retrieval")) {
        // First set: DPR's 100-word passages and its FAISS search on one server, 995 questions/s for the top 100
        // (Karpukhin et al. 2020, EMNLP, sec. 5.4), five of them as RAG retrieves (Lewis et al. 2020).
        if (rag.documents > 0 && rag.tokens == 0) rag.tokens = 128, rag.seconds = 1.0 / 995, rag.servers = 1;
        changed = true;
    }
    if (rag.on()) {
        ImGui::SameLine();
        changed |= IntField("passage tokens", &rag.tokens, "tokens of one retrieved passage");
        double ms = rag.seconds * 1e3;
        if (DoubleField("retrieval ms", &ms, "%.3f",
                        "one query's time on a retrieval server (state its source: the index's search time)"))
            rag.seconds = ms / 1e3, changed = true;
        ImGui::SameLine();
        changed |= IntField("servers", &rag.servers, "queries the retrieval service serves at once");
    }
    changed |= Milliseconds("TTFT SLO ms", &c.slo.ttft, "time-to-first-token target (0: none)");
    ImGui::SameLine();
    changed |= Milliseconds("TPOT SLO ms", &c.slo.tpot, "time-per-output-token target (0: none)");
    ImGui::PopItemWidth();
    if (changed) q.preset_index = -1;
    return changed;
}

void DrawLatencies(const ServingResult& r) {
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit;
    if (!ImGui::BeginTable("latency", 5, flags)) return;
    for (const char* h : {"latency", "mean", "p50", "p90", "p99"}) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    auto row = [](const char* name, const LatencySummary& l) {
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::TextUnformatted(name);
        const double v[] = {l.mean, l.p50, l.p90, l.p99};
        for (int i = 0; i < 4; ++i) {
            ImGui::TableSetColumnIndex(i + 1);
            ImGui::TextUnformatted(FormatSeconds(v[i], kTableTime).c_str());
        }
    };
    row("TTFT", r.ttft);
    row("TPOT", r.tpot);
    row("E2E", r.e2e);
    ImGui::EndTable();
}

void DrawTimeSeries(const ServingResult& r) {
    if (r.series.empty()) return;
    std::vector<double> t;
    ChartSeries kv{"KV occupancy %", kBlue, {}}, running{"running", kOrange, {}}, waiting{"waiting", kVermillion, {}};
    for (const SeriesPoint& p : r.series) {
        t.push_back((p.start + p.end) / 2);
        kv.y.push_back(100 * p.kv_occupancy);
        running.y.push_back(p.running);
        waiting.y.push_back(p.waiting);
    }
    ImGui::TextUnformatted("over time: KV occupancy (%)");
    LineChart("##kv", t, {kv}, "%.1f s", "%.0f %%", 90);
    ImGui::TextUnformatted("over time: sequences running and requests waiting");
    LineChart("##queue", t, {running, waiting}, "%.1f s", "%.1f", 90);
}

void DrawResult(const AppState& s) {
    const InferenceState& q = s.inference;
    const ServingResult& r = q.result.result;
    ImGui::Text("%lld requests in %s on %d GPUs", r.completed, FormatSeconds(r.duration, kPanelTime).c_str(), r.gpus);
    ImGui::Text("%.2f req/s   %.0f output tok/s (%.0f per GPU)   %.0f input tok/s", r.requests_per_s,
                r.output_tokens_per_s, r.output_tokens_per_s_per_gpu, r.input_tokens_per_s);
    // How far TensorRT-LLM's published offline runs on this part were from the model (inference/
    // published_serving_runs.h), in the rate's tooltip: the tab has no line to spare at 1280x900, and the text
    // results print it in full.
    const Precision compute = q.config.precision.compute;
    const System* sys = CurrentSystem(s);
    const PublishedRuns* runs = sys ? PublishedServingRunsFor(sys->accelerator.id, compute) : nullptr;
    if (runs && ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);  // the line is longer than a 1280-pixel window
        ImGui::Text("published runs %s [docs/serving.md]", PublishedServingRunsLine(*runs, compute).c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    ImGui::Text("SLO met by %.1f%% of requests, goodput %.2f req/s", 100 * r.slo_attainment, r.goodput_requests_per_s);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "a request meets the SLO when its TTFT and its TPOT are both within their targets; goodput "
            "is those requests per second (DistServe, Zhong et al. 2024)");
    DrawLatencies(r);
    ImGui::Text("KV cache %lld blocks per replica; occupancy mean %.0f%%, peak %.0f%%; %lld preemptions", r.kv_blocks,
                100 * r.kv_occupancy_mean, 100 * r.kv_occupancy_peak, r.preemptions);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "blocks requests hold; cached prefixes no request uses are free to evict and count as free, as "
            "vLLM's KV cache usage counts them");
    if (q.config.engine.prefix_caching)
        ImGui::TextWrapped("prefix cache %s; cached prefixes none uses hold %.0f%% of the blocks on average",
                           PrefixCacheText(r).c_str(), 100 * r.kv_cached_idle_mean);
    if (q.config.engine.speculation.tokens > 0)
        ImGui::TextWrapped("speculation %s", SpeculationText(q.config.engine.speculation, r).c_str());
    if (r.kv_transfers > 0)
        ImGui::Text("KV transfers %lld, mean %s", r.kv_transfers,
                    FormatSeconds(r.kv_transfer_mean, kPanelTime).c_str());
    DrawTimeSeries(r);
    const RateSources& rates = q.result.rates;
    if (!rates.gemm.empty()) {  // as on the Training panel: which rates are measured, in the tooltip
        ImGui::TextDisabled(rates.all_measured ? "rates: measured on this part (hover)"
                                               : "rates: some are fallbacks, not measured (hover)");
        if (ImGui::IsItemHovered()) {
            ImGui::BeginTooltip();
            ImGui::PushTextWrapPos(460);  // the rates are sentences; wrapped as the Training panel's tooltips
            ImGui::Text(
                "GEMMs: %s\n\nattention: %s\n\nHBM: %s\n\nkernel floor: %s%s%s\n\n"
                "(presets/calibration/measured.json)",
                rates.gemm.c_str(), rates.attention.c_str(), rates.hbm.c_str(), rates.floor.c_str(),
                rates.clock.empty() ? "" : "\n\nclock: ", rates.clock.c_str());
            ImGui::PopTextWrapPos();
            ImGui::EndTooltip();
        }
    }
}

void DrawSweep(AppState& s) {
    auto& w = s.inference.sweep;
    ImGui::PushItemWidth(70);
    DoubleField("from req/s", &w.from, "%.2f", "lowest offered rate (0: a quarter of the workload's)");
    ImGui::SameLine();
    DoubleField("to", &w.to, "%.2f", "highest offered rate (0: twice the workload's)");
    ImGui::SameLine();
    IntField("points", &w.points, "rates between from and to, evenly spaced");
    ImGui::PopItemWidth();
    ImGui::SameLine();
    if (ServeSweepRunning(s)) {  // in the pool, or in frame slices (StepJobs, every frame)
        ImGui::ProgressBar(static_cast<float>(ServeSweepProgress(s)), ImVec2(120, 0));
        ImGui::SameLine();
        if (ImGui::Button("Cancel")) CancelServeSweep(s);
    } else if (ImGui::Button("Rate sweep")) {
        StartServeSweep(s);
    }
    if (!w.error.empty()) ErrorText(w.error);
    if (w.points_done.empty()) return;
    std::vector<double> thr;
    ChartSeries ttft{"TTFT p99 ms", kVermillion, {}}, tpot{"TPOT p99 ms", kBlue, {}}, e2e{"E2E p50 s", kGreen, {}};
    for (const engine::ServeSweepPoint& p : w.points_done) {
        thr.push_back(p.run.result.output_tokens_per_s);
        ttft.y.push_back(1e3 * p.run.result.ttft.p99);
        tpot.y.push_back(1e3 * p.run.result.tpot.p99);
        e2e.y.push_back(p.run.result.e2e.p50);
    }
    ImGui::TextUnformatted("throughput-latency: TTFT and TPOT p99 (ms), E2E p50 (s) against output tokens/s");
    LineChart("##sweep", thr, {ttft, tpot, e2e}, "%.0f tok/s", "%.1f", 130);
    if (ImGui::TreeNode("sweep table")) {
        ImGui::TextUnformatted(w.report.c_str());
        ImGui::TreePop();
    }
}

}  // namespace

void DrawInferenceTab(AppState& s) {
    InferenceState& q = s.inference;
    if (!q.has_config) {
        ImGui::TextDisabled("loading serving presets...");
        return;
    }
    if (!s.has_model || !s.error.empty() || s.system_index < 0) {
        ImGui::TextDisabled("needs a valid model and a cluster");
        return;
    }
    if (!ImGui::BeginTable("serving_layout", 2, ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV)) return;
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    // "Simulate" first: the fields below may scroll in a short window.
    const bool pressed = ImGui::Button("Simulate");
    ImGui::SameLine();
    std::string where = CurrentSystem(s)->accelerator.name;
    if (const SystemPreset* own = DecodeSystemPreset(s); own && q.config.decode_pool)  // both parts
        where += " (prefill), " + own->system.accelerator.name + " (decode)";
    ImGui::Text("serving %s on %s", s.model.name.c_str(), where.c_str());
    const bool edited = DrawDescription(s);
    // A simulation runs when the tab first shows, after an edit here (applied on Enter or a pause, so not at
    // every keystroke), when the page's model or cluster changed since the last one, and on "Simulate".
    const bool stale = q.ran_for != InputsKey(s);
    if (pressed || edited || stale) RunInference(s);
    if (!q.error.empty()) ErrorText(q.error);
    ImGui::Separator();
    DrawSweep(s);
    ImGui::TableSetColumnIndex(1);
    if (q.has_result) DrawResult(s);
    else if (q.error.empty() && q.running)
        ImGui::TextDisabled("simulating... %.0f%% of the requests completed", 100 * q.running->Progress());
    else if (q.error.empty()) ImGui::TextDisabled("simulating...");
    ImGui::EndTable();
}

}  // namespace sc::app
