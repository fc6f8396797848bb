#include "report/serve_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "inference/published_serving_runs.h"
#include "report/format.h"
#include "report/serve_timeline_json.h"
#include "report/training_report.h"
#include "training/power_cap.h"

namespace sc {

namespace {

using Json = nlohmann::ordered_json;

std::string Fmt(const char* f, double v) { return FormatNumber(f, v); }

std::string PoolText(const PoolConfig& p) {
    std::string split = "TP" + std::to_string(p.tp);
    if (p.pp > 1) split += " x PP" + std::to_string(p.pp);
    if (p.ep > 1) split += ", EP" + std::to_string(p.ep);
    if (p.attention_dp)
        split = "attention DP" + std::to_string(p.tp) + (p.pp > 1 ? " x PP" + std::to_string(p.pp) : "") + ", EP" +
                std::to_string(p.ep);
    if (p.redundant_experts > 0) split += " (+" + std::to_string(p.redundant_experts) + " redundant experts)";
    if (p.deepep_dispatch) split += ", DeepEP";
    if (p.allgather_dispatch) split += ", all-gather dispatch";
    if (p.two_batch_overlap) split += ", two-batch overlap";
    if (p.all_reduce != EngineAllReduce::nccl) split += std::string(", ") + NameOf(p.all_reduce) + " all-reduce";
    return std::to_string(p.replicas) + (p.replicas == 1 ? " replica" : " replicas") + " x " + split + " (" +
           std::to_string(p.gpus()) + (p.gpus() == 1 ? " GPU)" : " GPUs)");
}

Json PoolJson(const PoolConfig& p) {
    return {{"tp", p.tp},
            {"pp", p.pp},
            {"ep", p.ep},
            {"replicas", p.replicas},
            {"attention_dp", p.attention_dp},
            {"redundant_experts", p.redundant_experts},
            {"deepep_dispatch", p.deepep_dispatch},
            {"allgather_dispatch", p.allgather_dispatch},
            {"two_batch_overlap", p.two_batch_overlap},
            {"all_reduce", NameOf(p.all_reduce)}};
}

std::string LengthText(const LengthDist& d) {
    switch (d.kind) {
        case LengthDist::Kind::fixed: return std::to_string(d.min);
        case LengthDist::Kind::uniform: return "uniform " + std::to_string(d.min) + ".." + std::to_string(d.max);
        case LengthDist::Kind::normal:
            return "normal " + Fmt("%g", d.mean) + " +- " + Fmt("%g", d.stddev) + " in " + std::to_string(d.min) +
                   ".." + std::to_string(d.max);
        case LengthDist::Kind::empirical: return "empirical, " + std::to_string(d.values.size()) + " values";
    }
    return "?";
}

std::string ArrivalText(const Workload& w) {
    switch (w.arrival) {
        case ArrivalKind::poisson: return "Poisson at " + Fmt("%g", w.rate) + " req/s";
        case ArrivalKind::gamma: return "gamma at " + Fmt("%g", w.rate) + " req/s, CV " + Fmt("%g", w.cv);
        case ArrivalKind::fixed_rate:
            return "every " + FormatSeconds(1 / w.rate) + " (" + Fmt("%g", w.rate) + " req/s)";
        case ArrivalKind::closed_loop: return std::to_string(w.concurrency) + " closed-loop clients";
        case ArrivalKind::offline: return "all queued at time 0";
        case ArrivalKind::trace: return "replayed trace";
    }
    return "?";
}

// "51 GB/s in, 52 GB/s out (measured: nvbandwidth)" or "64 GB/s" as the description states it.
std::string HostLinkText(const HostLink& h) {
    if (!h.measured) return Fmt("%g", h.in_gbps) + " GB/s";
    return Fmt("%g", h.in_gbps) + " GB/s in, " + Fmt("%g", h.out_gbps) + " GB/s out (measured host link)";
}

// "812 of 3104 iterations replayed a captured decode graph; padding rows were 21.4% of the decode rows those
// iterations computed".
std::string CudaGraphText(const ServingResult& r) {
    const double rows = r.graph_dummy_rows + r.graph_real_rows;
    return std::to_string(r.graph_iterations) + " of " + std::to_string(r.iterations) +
           " iterations replayed a captured decode graph" +
           (rows > 0 ? "; padding rows were " + Fmt("%.1f%%", 100 * r.graph_dummy_rows / rows) +
                           " of the decode rows those iterations computed"
                     : "");
}

std::string EngineText(const EngineConfig& e, const ServingRun& run) {
    std::string s = "max " + std::to_string(e.max_seqs) + " sequences, " + std::to_string(e.max_tokens) +
                    " tokens per iteration, " + std::to_string(e.block_size) + "-token KV blocks";
    s += e.static_batching ? ", static batching" : e.chunked_prefill ? ", chunked prefill" : ", whole prompts";
    if (!e.window_eviction) s += ", windowed layers keep their whole context";
    s += e.admission == KvAdmission::reserve_full ? ", KV reserved at admission" : ", KV on demand";
    s += std::string(", ") + NameOf(e.scheduling) + ", " + NameOf(e.preemption) + " preemption";
    if (e.preemption == Preemption::swap) s += " over the host link at " + HostLinkText(run.host_link);
    if (e.prefix_caching) s += ", prefix caching";
    if (e.host_cache_gib > 0)
        s += " with a host tier of " + Fmt("%g", e.host_cache_gib) + " GiB per GPU at " + HostLinkText(run.host_link);
    if (e.remote_cache_gib > 0)
        s += std::string(e.host_cache_gib > 0 ? " and" : " with") + " a remote store of " +
             Fmt("%g", e.remote_cache_gib) + " GiB per GPU over the scale-out network";
    if (e.speculation.tokens > 0)
        s += ", speculative decoding (" + std::to_string(e.speculation.tokens) +
             (e.speculation.tokens == 1 ? " draft token" : " draft tokens") + " a step, acceptance " +
             Fmt("%g", e.speculation.acceptance) + ")";
    if (const std::vector<int> graphs = CapturedGraphSizes(e); !graphs.empty())
        s += ", decode CUDA graphs padded to " + std::to_string(graphs.size()) +
             (graphs.size() == 1 ? " captured size" : " captured sizes") + " up to " + std::to_string(graphs.back());
    if (e.frontend_s > 0) s += ", a front end of " + FormatSeconds(e.frontend_s) + " a request outside the engine";
    return s;
}

// ", each after one of 64 shared prefixes of 2048 tokens (Zipf 1.1)", or nothing.
std::string PrefixesText(const SharedPrefixes& p) {
    if (p.count == 0) return "";
    return ", each after " +
           (p.count == 1 ? std::string("one shared prefix")
                         : "one of " + std::to_string(p.count) + " shared prefixes") +
           " of " + std::to_string(p.tokens) + " tokens" + (p.zipf > 0 ? " (Zipf " + Fmt("%g", p.zipf) + ")" : "");
}

// ", a turn sent 2.000 s after the one before completed", or nothing.
std::string TurnsText(const Workload& w) {
    if (w.turns <= 1) return "";
    return ", a turn sent " + (w.think > 0 ? FormatSeconds(w.think) + " after" : std::string("when")) +
           " the one before completed";
}

// ", 5 retrieved passages of 128 tokens each before the input (a query 1.005 ms on 1 server)", or nothing.
std::string RetrievalText(const Retrieval& r) {
    if (!r.on()) return "";
    return ", " + std::to_string(r.documents) + " retrieved passages of " + std::to_string(r.tokens) +
           " tokens each before the input (a query " + FormatSeconds(r.seconds) + " on " + std::to_string(r.servers) +
           (r.servers == 1 ? " server)" : " servers)");
}

// ", 4 samples of each prompt (a request completes with its last)", or nothing.
std::string SamplesText(const Workload& w) {
    if (w.samples <= 1) return "";
    return ", " + std::to_string(w.samples) + " samples of each prompt (a request completes with its last)";
}

std::string KvText(const KvCapacity& k) {
    const std::string states = k.state_bytes > 0 ? ", Mamba states " + FormatBytes(k.state_bytes) : "";
    return "weights " + FormatBytes(k.weight_bytes) + ", workspace " + FormatBytes(k.workspace_bytes) + states +
           ", runtime " + FormatBytes(k.runtime_bytes) + ", KV " + FormatBytes(k.kv_bytes) + " = " +
           std::to_string(k.blocks) + " blocks (" + std::to_string(k.tokens()) + " tokens) per GPU of " +
           FormatBytes(k.memory_bytes);
}

std::string LatencyRow(const char* label, const LatencySummary& l) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-6s %12s %12s %12s %12s %12s\n", label, FormatSeconds(l.mean).c_str(),
                  FormatSeconds(l.p50).c_str(), FormatSeconds(l.p90).c_str(), FormatSeconds(l.p99).c_str(),
                  FormatSeconds(l.max).c_str());
    return buf;
}

Json LatencyJson(const LatencySummary& l) {
    return {{"mean", l.mean}, {"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}, {"min", l.min}, {"max", l.max}};
}

Json KvJson(const KvCapacity& k) {
    return {{"memory_bytes", k.memory_bytes},
            {"weight_bytes", k.weight_bytes},
            {"workspace_bytes", k.workspace_bytes},
            {"state_bytes", k.state_bytes},
            {"runtime_bytes", k.runtime_bytes},
            {"kv_bytes", k.kv_bytes},
            {"kv_bytes_per_token", k.kv_bytes_per_token},
            {"blocks", k.blocks},
            {"block_size", k.block_size}};
}

Json ResultJson(const ServingResult& r, bool series) {
    Json j = {{"completed", r.completed},
              {"gpus", r.gpus},
              {"duration_s", r.duration},
              {"ttft_s", LatencyJson(r.ttft)},
              {"tpot_s", LatencyJson(r.tpot)},
              {"e2e_s", LatencyJson(r.e2e)},
              {"requests_per_s", r.requests_per_s},
              {"input_tokens_per_s", r.input_tokens_per_s},
              {"output_tokens_per_s", r.output_tokens_per_s},
              {"requests_per_s_per_gpu", r.requests_per_s_per_gpu},
              {"output_tokens_per_s_per_gpu", r.output_tokens_per_s_per_gpu},
              {"slo_attainment", r.slo_attainment},
              {"goodput_requests_per_s", r.goodput_requests_per_s},
              {"kv_blocks", r.kv_blocks},
              {"decode_kv_blocks", r.decode_kv_blocks},
              {"kv_occupancy_mean", r.kv_occupancy_mean},
              {"kv_occupancy_peak", r.kv_occupancy_peak},
              {"kv_cached_idle_mean", r.kv_cached_idle_mean},
              {"preemptions", r.preemptions},
              {"swapped_bytes", r.swapped_bytes},
              {"iterations", r.iterations},
              {"graph_iterations", r.graph_iterations},
              {"graph_dummy_rows", r.graph_dummy_rows},
              {"graph_real_rows", r.graph_real_rows},
              {"mean_batch_tokens", r.mean_batch_tokens},
              {"mean_running", r.mean_running},
              {"mean_in_system", r.mean_in_system},
              {"mean_waiting", r.mean_waiting},
              {"prefix_requests", r.prefix_requests},
              {"prefix_gpu_hits", r.prefix_gpu_hits},
              {"prefix_host_hits", r.prefix_host_hits},
              {"prefix_turn_hits", r.prefix_turn_hits},
              {"prefix_sample_hits", r.prefix_sample_hits},
              {"prefix_tokens_reused", r.prefix_tokens_reused},
              {"host_tier_loaded_bytes", r.host_tier_loaded_bytes},
              {"host_tier_stored_bytes", r.host_tier_stored_bytes},
              {"prefix_remote_hits", r.prefix_remote_hits},
              {"remote_tier_loaded_bytes", r.remote_tier_loaded_bytes},
              {"remote_tier_stored_bytes", r.remote_tier_stored_bytes},
              {"kv_transfers", r.kv_transfers},
              {"kv_transfer_mean_s", r.kv_transfer_mean},
              {"busy_s",
               {{"linear", r.busy.linear},
                {"attention", r.busy.attention},
                {"elementwise", r.busy.elementwise},
                {"tp_comm", r.busy.tp_comm},
                {"ep_comm", r.busy.ep_comm},
                {"head", r.busy.head},
                {"pp_comm", r.busy.pp_comm},
                {"draft", r.busy.draft}}},
              {"spec_steps", r.spec_steps},
              {"spec_drafted", r.spec_drafted},
              {"spec_accepted", r.spec_accepted},
              {"retrievals", r.retrievals},
              {"retrieval_wait_mean_s", r.retrieval_wait_mean},
              {"retrieval_utilization", r.retrieval_utilization}};
    if (series) {
        Json pts = Json::array();
        for (const SeriesPoint& p : r.series)
            pts.push_back({{"start_s", p.start},
                           {"end_s", p.end},
                           {"kv_occupancy", p.kv_occupancy},
                           {"running", p.running},
                           {"waiting", p.waiting}});
        j["series"] = std::move(pts);
    }
    return j;
}

Json DeploymentJson(const ServingConfig& c, const System& sys) {
    const Workload& w = c.workload;
    Json j = {{"model", c.model.name},
              {"system", sys.name},
              {"accelerator", sys.accelerator.name},
              {"pool", PoolJson(c.pool)}};
    if (c.decode_pool) j["decode_pool"] = PoolJson(*c.decode_pool);
    j["precision"] = {{"weights", !c.precision.int4           ? NameOf(c.precision.weights)
                                  : c.precision.int4->mxfp4() ? "mxfp4"
                                                              : "int4"},
                      {"compute", NameOf(c.precision.compute)},
                      {"kv_cache", NameOf(c.precision.kv_cache)},
                      {"weight_bytes_per_element", WeightBytesPerElement(c.precision)},
                      {"expert_weight_bytes_per_element", ExpertWeightBytesPerElement(c.precision)}};
    if (c.precision.int4) {
        j["precision"]["group_size"] = c.precision.int4->group_size;
        j["precision"]["zero_points"] = c.precision.int4->zero_points;
    }
    j["workload"] = {{"arrival", NameOf(w.arrival)},
                     {"rate", w.rate},
                     {"requests", w.requests},
                     {"input", LengthText(w.input)},
                     {"output", LengthText(w.output)}};
    if (w.prefixes.count > 0)
        j["workload"]["prefixes"] = {
            {"count", w.prefixes.count}, {"tokens", w.prefixes.tokens}, {"zipf", w.prefixes.zipf}};
    if (w.turns > 1) j["workload"]["turns"] = w.turns, j["workload"]["think_s"] = w.think;
    if (w.samples > 1) j["workload"]["samples"] = w.samples;
    if (w.retrieval.on())
        j["workload"]["retrieval"] = {{"documents", w.retrieval.documents},
                                      {"tokens", w.retrieval.tokens},
                                      {"seconds", w.retrieval.seconds},
                                      {"servers", w.retrieval.servers}};
    j["engine"] = {{"prefix_caching", c.engine.prefix_caching},
                   {"host_cache_gib", c.engine.host_cache_gib},
                   {"remote_cache_gib", c.engine.remote_cache_gib}};
    j["slo"] = {{"ttft_s", c.slo.ttft}, {"tpot_s", c.slo.tpot}};
    return j;
}

// The run's energy: every GPU of every pool at its power limit (else its board power) from time 0 to the last
// completion, as the training estimate counts a step (an upper bound: idle replicas draw less). 0 when the part gives
// no power.
// A decode pool on a cluster of its own draws its own part's power.
double RunEnergyJoules(const engine::ServeRequest& q, const ServingResult& r) {
    if (!q.decode_system || !q.config.decode_pool)
        return PowerDrawW(q.system->accelerator).value_or(0) * r.gpus * r.duration;
    const std::optional<double> prefill = PowerDrawW(q.system->accelerator);
    const std::optional<double> decode = PowerDrawW(q.decode_system->accelerator);
    if (!prefill || !decode) return 0;
    return (*prefill * q.config.pool.gpus() + *decode * q.config.decode_pool->gpus()) * r.duration;
}

// What a pool's iteration cost rests on (training/rate_sources.h), indented under its heading.
std::string RatesText(const char* heading, const RateSources& r) {
    if (r.gemm.empty()) return "";
    std::string o = std::string(heading) + (r.all_measured ? "measurements (presets/calibration/measured.json)\n"
                                                           : "measurements and fallbacks:\n");
    o += "  GEMMs        " + r.gemm + "\n  attention    " + r.attention + "\n  HBM          " + r.hbm +
         "\n  kernel floor " + r.floor + "\n";
    if (!r.clock.empty()) o += "  clock        " + r.clock + "\n";
    if (!r.decode_attention.empty()) o += "  decode attn  " + r.decode_attention + "\n";
    if (!r.all_reduce.empty()) o += "  all-reduce   " + r.all_reduce + "\n";
    return o;
}

// The power each GPU is counted at in RunEnergyJoules (set when it is not 0).
std::string PowerText(const engine::ServeRequest& q) {
    const std::string prefill = Fmt("%.0f", *PowerDrawW(q.system->accelerator)) + " W";
    if (!q.decode_system || !q.config.decode_pool) return prefill + " a GPU";
    return prefill + " a prefill GPU, " + Fmt("%.0f", *PowerDrawW(q.decode_system->accelerator)) + " W a decode GPU";
}

std::string SloText(const SloTargets& s) {
    std::string t;
    if (s.ttft > 0) t += "TTFT <= " + FormatSeconds(s.ttft);
    if (s.tpot > 0) t += std::string(t.empty() ? "" : " and ") + "TPOT <= " + FormatSeconds(s.tpot);
    return t.empty() ? "none set (every request meets it)" : t;
}

}  // namespace

std::string ServeReportText(const engine::ServeRequest& q, const engine::ServeResult& run) {
    const ServingConfig& c = q.config;
    const ServingResult& r = run.result;
    std::string o = "Serving: " + c.model.name + " on " + q.system->accelerator.name + " (" + run.system_name + ")";
    if (!run.decode_system_name.empty())
        o += " prefilling, " + run.decode_accelerator + " (" + run.decode_system_name + ") decoding";
    o += "\n";
    o += "precision      " + WeightFormatName(c.precision) + " weights, " + NameOf(c.precision.compute) + " GEMMs, " +
         NameOf(c.precision.kv_cache) + " KV cache\n";
    if (c.decode_pool) {
        o += "prefill pool   " + PoolText(c.pool) + "\n";
        o += "decode pool    " + PoolText(*c.decode_pool) +
             (run.decode_system_name.empty() ? std::string() : " on " + run.decode_accelerator) + "\n";
    } else {
        o += "pool           " + PoolText(c.pool) + "\n";
    }
    o += "engine         " + EngineText(c.engine, run) + "\n";
    o += RatesText(run.decode_rates.gemm.empty() ? "rates from     " : "prefill rates  ", run.rates);
    o += RatesText("decode rates   ", run.decode_rates);
    o += "workload       " + std::to_string(c.workload.requests) +
         (c.workload.turns > 1 ? " conversations of " + std::to_string(c.workload.turns) + " turns, " : " requests, ") +
         ArrivalText(c.workload) + ", input " + LengthText(c.workload.input) + ", output " +
         LengthText(c.workload.output) + " tokens" + PrefixesText(c.workload.prefixes) + TurnsText(c.workload) +
         RetrievalText(c.workload.retrieval) + SamplesText(c.workload) + "\n";
    o += (c.decode_pool ? "KV (prefill)   " : "KV cache       ") + KvText(run.kv) + "\n";
    if (run.decode_kv) o += "KV (decode)    " + KvText(*run.decode_kv) + "\n";
    if (run.transfer)
        o += "KV transfer    " + FormatSeconds(run.transfer->latency) + " + " +
             Fmt("%.3f", run.transfer->seconds_per_token * 1e6) + " us per prompt token" +
             (run.transfer->window_share > 0
                  ? " (" + Fmt("%.0f", run.transfer->window_share * 100) +
                        "% of it, the windowed layers', only for the last " + Fmt("%.0f", run.transfer->window) + ")"
                  : std::string()) +
             "; " + std::to_string(r.kv_transfers) + " transfers, mean " + FormatSeconds(r.kv_transfer_mean) + "\n";
    o += "completed      " + std::to_string(r.completed) + " requests in " + FormatSeconds(r.duration) + "\n";
    o += "throughput     " + Fmt("%.3f", r.requests_per_s) + " req/s, " + Fmt("%.0f", r.input_tokens_per_s) +
         " input tok/s, " + Fmt("%.0f", r.output_tokens_per_s) + " output tok/s (" +
         Fmt("%.1f", r.output_tokens_per_s_per_gpu) + " per GPU, " + Fmt("%.4f", r.requests_per_s_per_gpu) +
         " req/s per GPU)\n";
    // How far TensorRT-LLM's published offline runs on this part were from the model (docs/serving.md), so the rate
    // is read with its measured spread.
    if (const PublishedRuns* runs = PublishedServingRunsFor(q.system->accelerator.id, c.precision.compute))
        o += "published runs " + PublishedServingRunsLine(*runs, c.precision.compute) + " [docs/serving.md]\n";
    o += "SLO            " + SloText(c.slo) + ": " + Fmt("%.1f%%", 100 * r.slo_attainment) + " of requests, goodput " +
         Fmt("%.3f", r.goodput_requests_per_s) + " req/s\n";
    if (const double joules = RunEnergyJoules(q, r); joules > 0)
        o += "energy         " + FormatEnergy(joules) + " for the run (" + PowerText(q) +
             " for its whole duration, an upper bound), " + Fmt("%.3g", r.output_tokens_per_s * r.duration / joules) +
             " output tokens/J\n";
    char buf[256];
    std::snprintf(buf, sizeof buf, "latency  %12s %12s %12s %12s %12s\n", "mean", "p50", "p90", "p99", "max");
    o += buf;
    o += LatencyRow("TTFT", r.ttft) + LatencyRow("TPOT", r.tpot) + LatencyRow("E2E", r.e2e);
    o += "KV occupancy   mean " + Fmt("%.1f%%", 100 * r.kv_occupancy_mean) + ", peak " +
         Fmt("%.1f%%", 100 * r.kv_occupancy_peak) +
         (c.engine.prefix_caching ? " held by requests (cached prefixes none uses, free to evict: mean " +
                                        Fmt("%.1f%%", 100 * r.kv_cached_idle_mean) + ")"
                                  : std::string()) +
         "; " + std::to_string(r.preemptions) + " preemptions";
    if (r.swapped_bytes > 0) o += " (" + FormatBytes(r.swapped_bytes) + " swapped per GPU)";
    o += "\n";
    if (c.engine.prefix_caching) o += "prefix cache   " + PrefixCacheText(r) + "\n";
    if (c.engine.speculation.tokens > 0) o += "speculation    " + SpeculationText(c.engine.speculation, r) + "\n";
    if (c.workload.retrieval.on())
        o += "retrieval      " + std::to_string(r.retrievals) + " queries, mean wait for a server " +
             FormatSeconds(r.retrieval_wait_mean) + ", servers busy " + Fmt("%.1f%%", 100 * r.retrieval_utilization) +
             " of the run\n";
    o += "batching       " + std::to_string(r.iterations) + " iterations, mean " + Fmt("%.1f", r.mean_batch_tokens) +
         " tokens and " + Fmt("%.1f", r.mean_running) + " sequences; mean " + Fmt("%.2f", r.mean_waiting) +
         " waiting, " + Fmt("%.2f", r.mean_in_system) + " in the system" +
         (c.workload.samples > 1 ? " (sequences: a request is its samples)" : "") + "\n";
    if (!c.engine.cuda_graph_batch_sizes.empty()) o += "cuda graphs    " + CudaGraphText(r) + "\n";
    if (!r.timelines.empty())
        o += "timelines      first " + std::to_string(r.timelines.size()) +
             (c.workload.samples > 1 ? " sequences (samples)" : " requests") +
             " by arrival, span by span (JSON result.timelines; --timeline-json FILE for Perfetto)\n";
    const double busy = r.busy.total();
    if (busy > 0) {
        o += "busy time      ";
        auto part = [&](const char* label, double v) {
            o += std::string(label) + " " + Fmt("%.1f%%", 100 * v / busy) + " ";
        };
        part("GEMMs", r.busy.linear);
        // A hybrid model's Mamba scans are its other sequence mixer, counted with attention (IterationBreakdown).
        part(q.config.model.is_hybrid() ? "attention + Mamba scan" : "attention", r.busy.attention);
        part("elementwise", r.busy.elementwise);
        if (r.busy.tp_comm > 0 || r.busy.ep_comm <= 0) part("TP comm", r.busy.tp_comm);
        if (r.busy.ep_comm > 0) part("expert all-to-all", r.busy.ep_comm);
        part("LM head", r.busy.head);
        if (r.busy.pp_comm > 0) part("PP sends", r.busy.pp_comm);
        if (r.busy.draft > 0) part("draft head", r.busy.draft);
        o.back() = '\n';
    }
    return o;
}

namespace {
// The deployment as it ran: the description's, on the cluster the pools ran on (engine::ServingCluster), with the
// host link it used and the decode pool's own cluster (ServeRequest::decode_system).
Json RunDeploymentJson(const engine::ServeRequest& q, const engine::ServeResult& run) {
    Json d = DeploymentJson(q.config, *q.system);
    d["system"] = run.system_name;
    d["host_link"] = {
        {"in_gbps", run.host_link.in_gbps}, {"out_gbps", run.host_link.out_gbps}, {"measured", run.host_link.measured}};
    if (!run.decode_system_name.empty()) {
        d["decode_system"] = run.decode_system_name;
        d["decode_accelerator"] = run.decode_accelerator;
    }
    return d;
}

// The energy bound (RunEnergyJoules: an upper bound; 0 when the part gives no power) into a result's JSON.
void AddEnergyJson(Json& result, const engine::ServeRequest& q, const ServingResult& r) {
    const double joules = RunEnergyJoules(q, r);
    result["energy_joules"] = joules;
    result["output_tokens_per_joule"] = joules > 0 ? r.output_tokens_per_s * r.duration / joules : 0.0;
}
}  // namespace

std::string ServeReportJson(const engine::ServeRequest& q, const engine::ServeResult& run) {
    Json j = {{"deployment", RunDeploymentJson(q, run)}, {"kv", KvJson(run.kv)}};
    if (!run.decode_system_name.empty()) j["decode_rate_sources"] = RateSourcesJson(run.decode_rates);
    if (run.decode_kv) j["decode_kv"] = KvJson(*run.decode_kv);
    if (run.transfer)
        j["kv_transfer"] = {{"latency_s", run.transfer->latency},
                            {"seconds_per_token", run.transfer->seconds_per_token},
                            {"window", run.transfer->window},
                            {"window_share", run.transfer->window_share}};
    j["rate_sources"] = RateSourcesJson(run.rates);
    if (const PublishedRuns* runs = PublishedServingRunsFor(q.system->accelerator.id, q.config.precision.compute))
        j["published_runs"] = {{"accelerator", runs->accelerator},
                               {"precision", runs->precision},
                               {"runs", runs->runs},
                               {"measured_over_predicted_output_rate", PublishedRunsSpreadJson(*runs)}};
    j["result"] = ResultJson(run.result, true);
    j["result"]["timelines"] = TimelinesJson(run.result.timelines);
    AddEnergyJson(j["result"], q, run.result);
    return j.dump(2) + "\n";
}

std::string ServeSweepReportText(const engine::ServeSweepSnapshot& s, const std::vector<engine::ServeSweepPoint>& pts) {
    const ServingConfig& c = s.config;
    std::string o =
        "Rate sweep: " + c.model.name + " on " + s.system.accelerator.name +
        (s.decode_system ? " prefilling, " + s.decode_system->accelerator.name + " decoding" : std::string()) + ", " +
        (c.decode_pool ? "prefill " + PoolText(c.pool) + " + decode " + PoolText(*c.decode_pool) : PoolText(c.pool)) +
        ", " + std::to_string(c.workload.requests) + " requests per point, SLO " + SloText(c.slo) + "\n";
    char buf[320];
    std::snprintf(buf, sizeof buf, "%10s %10s %12s %10s %7s %11s %11s %11s %11s %11s %11s\n", "offered", "req/s",
                  "out tok/s", "goodput", "SLO", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "E2E p99");
    o += buf;
    for (const engine::ServeSweepPoint& p : pts) {
        const ServingResult& r = p.run.result;
        std::snprintf(buf, sizeof buf, "%10.3f %10.3f %12.0f %10.3f %6.1f%% %11s %11s %11s %11s %11s %11s\n", p.rate,
                      r.requests_per_s, r.output_tokens_per_s, r.goodput_requests_per_s, 100 * r.slo_attainment,
                      FormatSeconds(r.ttft.p50, kTableTime).c_str(), FormatSeconds(r.ttft.p99, kTableTime).c_str(),
                      FormatSeconds(r.tpot.p50, kTableTime).c_str(), FormatSeconds(r.tpot.p99, kTableTime).c_str(),
                      FormatSeconds(r.e2e.p50, kTableTime).c_str(), FormatSeconds(r.e2e.p99, kTableTime).c_str());
        o += buf;
    }
    return o;
}

std::string ServeSweepReportJson(const engine::ServeSweepSnapshot& s, const std::vector<engine::ServeSweepPoint>& pts) {
    Json points = Json::array();
    for (const engine::ServeSweepPoint& p : pts)
        points.push_back({{"rate", p.rate}, {"result", ResultJson(p.run.result, false)}});
    Json j = {{"deployment", DeploymentJson(s.config, s.system)}, {"points", std::move(points)}};
    if (s.decode_system) {
        j["deployment"]["decode_system"] = s.decode_system->name;
        j["deployment"]["decode_accelerator"] = s.decode_system->accelerator.name;
    }
    return j.dump(2) + "\n";
}

std::string ServeFieldSweepText(const FieldSweepPoints& sweep, const std::vector<engine::ServeRequest>& requests,
                                const std::vector<engine::ServeResult>& results) {
    const ServingConfig& c = requests.front().config;
    const bool same = std::all_of(requests.begin(), requests.end(), [&](const engine::ServeRequest& q) {
        return q.config.workload.requests == c.workload.requests;
    });
    const bool one_system = std::all_of(requests.begin(), requests.end(), [&](const engine::ServeRequest& q) {
        return q.system->name == requests.front().system->name;
    });
    const bool one_model = std::all_of(requests.begin(), requests.end(), [&](const engine::ServeRequest& q) {
        return q.config.model.name == c.model.name;
    });
    std::string keys;
    for (const std::string& k : sweep.keys) keys += (keys.empty() ? "" : " x ") + k;
    std::string o =
        "Sweep of " + keys + ": " + (one_model ? c.model.name : "the model each point sets") + " on " +
        (one_system ? requests.front().system->accelerator.name : std::string("the cluster each point sets")) + ", " +
        (same ? std::to_string(c.workload.requests) + " requests per point" : "requests as each point sets") +
        ", SLO " + SloText(c.slo) + "\n";
    const bool prefixes = std::any_of(requests.begin(), requests.end(),
                                      [](const engine::ServeRequest& q) { return q.config.engine.prefix_caching; });
    std::vector<int> width;  // a column a key, as wide as its name and its widest value
    for (size_t k = 0; k < sweep.keys.size(); ++k) {
        size_t w = std::max<size_t>(6, sweep.keys[k].size());
        for (const std::vector<std::string>& v : sweep.values) w = std::max(w, v[k].size());
        width.push_back(static_cast<int>(w));
    }
    auto row_head = [&](const std::vector<std::string>& cells) {
        std::string h;
        for (size_t k = 0; k < cells.size(); ++k)
            h += std::string(static_cast<size_t>(width[k]) - std::min(cells[k].size(), static_cast<size_t>(width[k])),
                             ' ') +
                 cells[k] + " ";
        return h;
    };
    char buf[400];
    std::snprintf(buf, sizeof buf, "%10s %12s %10s %7s %11s %11s %11s %11s %7s %8s%s\n", "req/s", "out tok/s",
                  "goodput", "SLO", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "KV occ", "preempt",
                  prefixes ? "    hits" : "");
    o += row_head(sweep.keys) + buf;
    for (size_t i = 0; i < results.size(); ++i) {
        const ServingResult& r = results[i].result;
        const long long hits = r.prefix_gpu_hits + r.prefix_host_hits + r.prefix_remote_hits;
        const std::string hit =
            prefixes ? Fmt(" %6.1f%%", r.prefix_requests > 0 ? 100.0 * hits / r.prefix_requests : 0.0) : "";
        std::snprintf(buf, sizeof buf, "%10.3f %12.0f %10.3f %6.1f%% %11s %11s %11s %11s %6.1f%% %8lld%s\n",
                      r.requests_per_s, r.output_tokens_per_s, r.goodput_requests_per_s, 100 * r.slo_attainment,
                      FormatSeconds(r.ttft.p50, kTableTime).c_str(), FormatSeconds(r.ttft.p99, kTableTime).c_str(),
                      FormatSeconds(r.tpot.p50, kTableTime).c_str(), FormatSeconds(r.tpot.p99, kTableTime).c_str(),
                      100 * r.kv_occupancy_mean, r.preemptions, hit.c_str());
        o += row_head(sweep.values[i]) + buf;
    }
    return o;
}

std::string ServeFieldSweepJson(const FieldSweepPoints& sweep, const std::vector<engine::ServeRequest>& requests,
                                const std::vector<engine::ServeResult>& results) {
    Json points = Json::array();
    for (size_t i = 0; i < results.size(); ++i) {
        Json result = ResultJson(results[i].result, false);
        AddEnergyJson(result, requests[i], results[i].result);
        points.push_back({{"values", sweep.values[i]},
                          {"deployment", RunDeploymentJson(requests[i], results[i])},
                          {"result", result}});
    }
    return Json{{"sweep", {{"keys", sweep.keys}}}, {"points", std::move(points)}}.dump(2) + "\n";
}

std::string SpeculationText(const Speculation& s, const ServingResult& r) {
    const double a = s.acceptance, k = s.tokens;
    const double expected = a < 1 ? (1 - std::pow(a, k + 1)) / (1 - a) : k + 1;  // Leviathan et al. 2023, eq. 1
    const double measured = r.spec_steps > 0 ? 1 + static_cast<double>(r.spec_accepted) / r.spec_steps : 0;
    return std::to_string(r.spec_steps) + " decode steps verified drafts, " + Fmt("%.2f", measured) + " tokens each (" +
           Fmt("%.2f", expected) + " expected of " + std::to_string(s.tokens) + (s.tokens == 1 ? " draft" : " drafts") +
           " at acceptance " + Fmt("%g", a) + "; fewer drafts near a sequence's end), " +
           Fmt("%.1f%%", r.spec_drafted > 0 ? 100.0 * r.spec_accepted / r.spec_drafted : 0.0) +
           " of the drafts accepted";
}

std::string PrefixCacheText(const ServingResult& r) {
    const long long hits = r.prefix_gpu_hits + r.prefix_host_hits + r.prefix_remote_hits;
    std::string s =
        Fmt("%.1f%%", r.prefix_requests > 0 ? 100.0 * hits / r.prefix_requests : 0.0) + " of " +
        std::to_string(r.prefix_requests) + " admissions hit (" + std::to_string(r.prefix_gpu_hits) + " on the GPU, " +
        std::to_string(r.prefix_host_hits) + " from the host tier" +
        (r.prefix_remote_hits > 0 ? ", " + std::to_string(r.prefix_remote_hits) + " from the remote store" : "") +
        (r.prefix_turn_hits > 0 ? "; " + std::to_string(r.prefix_turn_hits) + " of them earlier turns" : "") +
        (r.prefix_sample_hits > 0 ? "; " + std::to_string(r.prefix_sample_hits) + " of them other samples' prompts"
                                  : "") +
        "), " + Fmt("%.0f", r.prefix_tokens_reused) + " prompt tokens not computed";
    auto tier = [&](const char* name, double in, double out) {
        if (in > 0 || out > 0)
            s += std::string("; ") + name + " " + FormatBytes(in) + " in, " + FormatBytes(out) + " out per GPU";
    };
    tier("host tier", r.host_tier_loaded_bytes, r.host_tier_stored_bytes);
    tier("remote store", r.remote_tier_loaded_bytes, r.remote_tier_stored_bytes);
    return s;
}

}  // namespace sc
