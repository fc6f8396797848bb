#include "inference/serving_parse.h"

#include <algorithm>
#include <cstdlib>

#include "config/error.h"
#include "config/json_fields.h"

namespace sc {

namespace {

Precision PrecisionField(JsonFields& f, const char* key, Precision fallback) {
    const std::string name = f.Choice(key, {"fp32", "bf16", "fp16", "fp8", "fp4"}, NameOf(fallback));
    Precision p = fallback;
    ParsePrecision(name, &p);
    return p;
}

// {"<integer>": weight, ...}: an empirical distribution's values (or priority classes) and their weights.
std::vector<std::pair<int, double>> WeightMap(const nlohmann::json& obj, const std::string& path, int lo, int hi) {
    std::vector<std::pair<int, double>> out;
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        const std::string field = path + "." + it.key();
        char* end = nullptr;
        const long v = std::strtol(it.key().c_str(), &end, 10);
        if (it.key().empty() || *end || v < lo || v > hi)
            throw Error(field, "a key must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        if (!it.value().is_number() || !(it.value().get<double>() > 0))
            throw Error(field, "the weight must be a number > 0, got " + Shown(it.value()));
        out.push_back({static_cast<int>(v), it.value().get<double>()});
    }
    if (out.empty()) throw Error(path, "needs at least one entry");
    std::sort(out.begin(), out.end());
    return out;
}

// engine.cuda_graph_batch_sizes: whole numbers, smallest first (CheckCudaGraphSizes); [] for none.
std::vector<int> CudaGraphSizes(const nlohmann::json& a) {
    std::vector<int> sizes;
    for (size_t i = 0; i < a.size(); ++i) {
        const nlohmann::json& v = a[i];
        if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > kMaxCudaGraphBatchSize)
            throw Error(
                "engine.cuda_graph_batch_sizes[" + std::to_string(i) + "]",
                "must be a whole batch size from 1 to " + std::to_string(kMaxCudaGraphBatchSize) + ", got " + Shown(v));
        sizes.push_back(v.get<int>());
    }
    CheckCudaGraphSizes(sizes);
    return sizes;
}

PoolConfig Pool(JsonFields& f) {
    PoolConfig p;
    p.tp = f.PositiveInt("tp", 1, 1 << 24);
    p.pp = f.PositiveInt("pp", 1, 1 << 24);
    p.ep = f.PositiveInt("ep", 1, 1 << 24);
    p.replicas = f.PositiveInt("replicas", 1, 1 << 24);
    p.attention_dp = f.Bool("attention_dp", false);
    p.redundant_experts = f.NonNegativeInt("redundant_experts", 0, 1 << 20);
    p.deepep_dispatch = f.Bool("deepep_dispatch", false);
    p.allgather_dispatch = f.Bool("allgather_dispatch", false);
    p.two_batch_overlap = f.Bool("two_batch_overlap", false);
    p.all_reduce = *EngineAllReduceNamed(f.Choice("all_reduce", {"nccl", "tensorrt-llm", "vllm", "sglang"}, "nccl"));
    return p;
}

LengthDist Lengths(const nlohmann::json* obj, const std::string& path) {
    if (!obj) throw Error(path, "missing required field");
    JsonFields f(*obj, path);
    LengthDist d;
    const std::string kind = f.Choice("distribution", {"fixed", "uniform", "normal", "empirical"}, "fixed");
    if (kind == "fixed") {
        d.kind = LengthDist::Kind::fixed;
        d.min = d.max = f.PositiveInt("tokens");
    } else if (kind == "empirical") {
        d.kind = LengthDist::Kind::empirical;
        const nlohmann::json* w = f.Object("weights");
        if (!w) throw Error(path + ".weights", "missing required field (token count -> weight)");
        for (const auto& [v, wt] : WeightMap(*w, path + ".weights", 1, kMaxModelDim))
            d.values.push_back(v), d.weights.push_back(wt);
        d.min = d.values.front(), d.max = d.values.back();
    } else if (kind == "normal") {
        d.kind = LengthDist::Kind::normal;
        d.mean = f.NonNegativeNumber("mean", 0, kMaxModelDim);
        d.stddev = f.NonNegativeNumber("stddev", 0, kMaxModelDim);
        d.min = f.PositiveInt("min");
        d.max = f.PositiveInt("max");
    } else {
        d.kind = LengthDist::Kind::uniform;
        d.min = f.PositiveInt("min");
        d.max = f.PositiveInt("max");
        if (d.max < d.min)
            throw Error(path + ".max",
                        "must be at least min (" + std::to_string(d.min) + "), got " + std::to_string(d.max));
    }
    f.RejectUnknown();
    return d;
}

}  // namespace

ServingDescription ParseServingDescription(std::string_view text) {
    const nlohmann::json j = ParseJsonText(text, "serving description");
    if (!j.is_object()) throw Error("", "a serving description is a JSON object");
    JsonFields top(j, "");
    ServingDescription d;
    d.name = top.String("name", "");
    top.String("source", "");
    d.model_id = top.String("model");
    d.system_id = top.String("system");
    ServingConfig& c = d.config;
    c.timelines = static_cast<int>(top.NonNegativeInt("timelines", c.timelines, kMaxTimelines));
    if (const nlohmann::json* p = top.Object("precision")) {
        JsonFields f(*p, "precision");
        ServingPrecision& pr = c.precision;
        const std::string weights =
            f.Choice("weights", {"fp32", "bf16", "fp16", "fp8", "fp4", "int4", "mxfp4"}, "bf16");
        pr.activations = PrecisionField(f, "activations", Precision::bf16);
        if (weights == "int4" || weights == "mxfp4") {
            // W4A16 unless compute says fp8 (W4A8): the GEMM's math runs at the activations' precision.
            pr.compute = PrecisionField(f, "compute", pr.activations);
            pr.weights = pr.compute;
            if (weights == "mxfp4") {
                for (const char* key : {"group_size", "zero_points"})
                    if (f.Has(key))
                        throw Error(std::string("precision.") + key,
                                    "mxfp4 fixes its blocks (32 weights, one E8M0 scale, no zeros); drop the field "
                                    "or set precision.weights to \"int4\"");
                pr.int4 = kMxfp4;
            } else {
                pr.int4 = Int4Weights{f.PositiveInt("group_size", 128, 65536), f.Bool("zero_points", true)};
            }
        } else {
            for (const char* key : {"group_size", "zero_points"})
                if (f.Has(key))
                    throw Error(std::string("precision.") + key,
                                "only int4 weights are stored in groups; weights are " + weights +
                                    " (set precision.weights to \"int4\" or drop the field)");
            ParsePrecision(weights, &pr.weights);
            pr.compute = PrecisionField(f, "compute", pr.weights);
        }
        pr.fp8_scaling =
            f.Choice("fp8_scaling", {"tensor", "block"}, "tensor") == "block" ? Fp8Scaling::block : Fp8Scaling::tensor;
        pr.kv_cache = PrecisionField(f, "kv_cache", Precision::bf16);
        pr.embeddings = PrecisionField(f, "embeddings", Precision::bf16);
        f.RejectUnknown();
    }
    if (const nlohmann::json* p = top.Object("pool")) {
        JsonFields f(*p, "pool");
        c.pool = Pool(f);
        f.RejectUnknown();
    }
    if (const nlohmann::json* p = top.Object("decode_pool")) {
        JsonFields f(*p, "decode_pool");
        c.decode_pool = Pool(f);
        d.decode_system_id = f.String("system", "");
        if (f.Has("system") && d.decode_system_id.empty())
            throw Error("decode_pool.system",
                        "a system preset id (e.g. \"dgx-a100-superpod\"); omit the field to "
                        "place the decode pool on the description's system");
        f.RejectUnknown();
    }
    if (const nlohmann::json* p = top.Object("slo")) {
        JsonFields f(*p, "slo");
        c.slo.ttft = f.NonNegativeNumber("ttft_ms", 0, 1e9) / 1e3;
        c.slo.tpot = f.NonNegativeNumber("tpot_ms", 0, 1e9) / 1e3;
        f.RejectUnknown();
    }
    if (const nlohmann::json* p = top.Object("engine")) {
        JsonFields f(*p, "engine");
        EngineConfig& e = c.engine;
        e.max_seqs = f.PositiveInt("max_seqs", e.max_seqs, 1 << 24);
        e.max_tokens = f.PositiveInt("max_tokens", e.max_tokens, 1 << 24);
        e.block_size = f.PositiveInt("block_size", e.block_size, 1 << 16);
        e.chunked_prefill = f.Bool("chunked_prefill", e.chunked_prefill);
        e.static_batching = f.Bool("static_batching", e.static_batching);
        e.window_eviction = f.Bool("window_eviction", e.window_eviction);
        if (f.Has("cuda_graph_batch_sizes"))
            e.cuda_graph_batch_sizes = CudaGraphSizes(f.Array("cuda_graph_batch_sizes"));
        e.admission = f.Choice("admission", {"on_demand", "reserve_full"}, "on_demand") == std::string("reserve_full")
                          ? KvAdmission::reserve_full
                          : KvAdmission::on_demand;
        e.memory_policy =
            f.Choice("kv_memory", {"total_fraction", "free_fraction"}, "total_fraction") == std::string("free_fraction")
                ? KvMemoryPolicy::free_fraction
                : KvMemoryPolicy::total_fraction;
        e.kv_memory_fraction = f.NonNegativeNumber("kv_memory_fraction", e.kv_memory_fraction, 1);
        e.kv_blocks_override = f.NonNegativeInt("kv_blocks", 0, 2147483647);
        if (f.Has("runtime_memory_gib")) e.runtime_memory_gib = f.NonNegativeNumber("runtime_memory_gib", 0, 1e6);
        e.frontend_s = f.NonNegativeNumber("frontend_ms", 0, 1e9) * 1e-3;
        e.scheduling = f.Choice("scheduling", {"fcfs", "priority"}, "fcfs") == std::string("priority")
                           ? SchedulingPolicy::priority
                           : SchedulingPolicy::fcfs;
        e.preemption = f.Choice("preemption", {"recompute", "swap"}, "recompute") == std::string("swap")
                           ? Preemption::swap
                           : Preemption::recompute;
        e.swap_gbps = f.NonNegativeNumber("swap_gbps", 0, 1e6);
        e.prefix_caching = f.Bool("prefix_caching", e.prefix_caching);
        e.host_cache_gib = f.NonNegativeNumber("host_cache_gib", 0, 1e9);
        e.remote_cache_gib = f.NonNegativeNumber("remote_cache_gib", 0, 1e9);
        if (const nlohmann::json* sp = f.Object("speculation")) {  // a draft head's tokens and their acceptance
            JsonFields g(*sp, "engine.speculation");
            e.speculation.tokens = g.PositiveIntAtMost("tokens", kMaxDraftTokens);
            e.speculation.acceptance = g.Number("acceptance");
            g.RejectUnknown();
        }
        f.RejectUnknown();
    }
    const nlohmann::json* wl = top.Object("workload");
    if (!wl) throw Error("workload", "missing required field");
    {
        JsonFields f(*wl, "workload");
        Workload& w = c.workload;
        const std::string a =
            f.Choice("arrival", {"poisson", "gamma", "fixed_rate", "closed_loop", "offline", "trace"}, "offline");
        w.arrival = a == "poisson"       ? ArrivalKind::poisson
                    : a == "gamma"       ? ArrivalKind::gamma
                    : a == "trace"       ? ArrivalKind::trace
                    : a == "fixed_rate"  ? ArrivalKind::fixed_rate
                    : a == "closed_loop" ? ArrivalKind::closed_loop
                                         : ArrivalKind::offline;
        w.rate = f.NonNegativeNumber("rate", 0, 1e9);
        w.cv = f.NonNegativeNumber("cv", 1, 1e9);
        if (const nlohmann::json* pr = f.Object("priorities")) {  // {"<class>": weight}: class 0 runs first
            const auto classes = WeightMap(*pr, "workload.priorities", 0, 1000);
            w.priority_weights.assign(static_cast<size_t>(classes.back().first) + 1, 0.0);
            for (const auto& [k, wt] : classes) w.priority_weights[static_cast<size_t>(k)] = wt;
        }
        w.concurrency = f.PositiveInt("concurrency", 1, 1 << 24);
        // Required: read as PositiveInt("requests", 2147483647) it was the fallback overload, so a description
        // without "requests" simulated 2^31 - 1 of them (a hang), not an error.
        w.requests = f.PositiveIntAtMost("requests", 1 << 24);
        w.seed = static_cast<uint64_t>(f.NonNegativeInt("seed", 1, 2147483647));
        w.input = Lengths(f.Object("input"), "workload.input");
        w.output = Lengths(f.Object("output"), "workload.output");
        w.turns = f.PositiveInt("turns", 1, kMaxTurns);
        w.think = f.NonNegativeNumber("think_s", 0, 1e6);
        w.samples = f.PositiveInt("samples", 1, kMaxSamples);
        if (const nlohmann::json* r = f.Object("retrieval")) {  // passages from a retrieval service, before the input
            JsonFields g(*r, "workload.retrieval");
            w.retrieval.documents = g.PositiveIntAtMost("documents", kMaxModelDim);
            w.retrieval.tokens = g.PositiveInt("tokens");
            w.retrieval.seconds = g.Number("seconds");  // required: the description states its source
            w.retrieval.servers = g.PositiveInt("servers", 1, 1 << 24);
            g.RejectUnknown();
        }
        if (const nlohmann::json* pr = f.Object("prefixes")) {  // each prompt: a shared prefix, then its input
            JsonFields g(*pr, "workload.prefixes");
            w.prefixes.count = g.PositiveInt("count", 1, kMaxSharedPrefixes);
            w.prefixes.tokens = g.PositiveInt("tokens");
            w.prefixes.zipf = g.NonNegativeNumber("zipf", 0, 100);
            g.RejectUnknown();
        }
        f.RejectUnknown();
    }
    top.RejectUnknown();
    return d;
}

}  // namespace sc
