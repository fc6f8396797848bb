#include "inference/serving_config.h"

#include <cmath>
#include <string>

#include "config/error.h"
#include "config/numbers.h"
#include "inference/workload_gen.h"

namespace sc {

const char* NameOf(ArrivalKind k) {
    switch (k) {
        case ArrivalKind::poisson: return "poisson";
        case ArrivalKind::gamma: return "gamma";
        case ArrivalKind::trace: return "trace";
        case ArrivalKind::fixed_rate: return "fixed_rate";
        case ArrivalKind::closed_loop: return "closed_loop";
        case ArrivalKind::offline: return "offline";
    }
    return "?";
}

const char* NameOf(SchedulingPolicy p) { return p == SchedulingPolicy::priority ? "priority" : "fcfs"; }
const char* NameOf(EngineAllReduce a) {
    switch (a) {
        case EngineAllReduce::nccl: return "nccl";
        case EngineAllReduce::tensorrt_llm: return "tensorrt-llm";
        case EngineAllReduce::vllm: return "vllm";
        case EngineAllReduce::sglang: return "sglang";
    }
    return "?";
}

std::optional<EngineAllReduce> EngineAllReduceNamed(std::string_view name) {
    for (EngineAllReduce a :
         {EngineAllReduce::nccl, EngineAllReduce::tensorrt_llm, EngineAllReduce::vllm, EngineAllReduce::sglang})
        if (name == NameOf(a)) return a;
    return std::nullopt;
}
const char* NameOf(Preemption p) { return p == Preemption::swap ? "swap" : "recompute"; }
const char* NameOf(LengthDist::Kind k) {
    switch (k) {
        case LengthDist::Kind::fixed: return "fixed";
        case LengthDist::Kind::uniform: return "uniform";
        case LengthDist::Kind::normal: return "normal";
        case LengthDist::Kind::empirical: return "empirical";
    }
    return "?";
}

double StoredBytes(Precision p) { return p == Precision::fp4 ? 0.5 + 1.0 / 16 : BytesOf(p); }

double ExpertWeightBytesPerElement(const ServingPrecision& p) {
    if (p.fp8_scaling == Fp8Scaling::block && !p.int4) return StoredBytes(p.weights) + 4.0 / (128 * 128);
    if (!p.int4) return StoredBytes(p.weights);
    const double g = p.int4->group_size;
    return 0.5 + p.int4->scale_bytes / g + (p.int4->zero_points ? 0.5 / g : 0.0);
}

double WeightBytesPerElement(const ServingPrecision& p) {
    return p.int4 && p.int4->mxfp4() ? StoredBytes(p.weights) : ExpertWeightBytesPerElement(p);
}

std::string WeightFormatName(const ServingPrecision& p) {
    if (p.fp8_scaling == Fp8Scaling::block && p.weights == Precision::fp8 && !p.int4) return "fp8 (128x128 blocks)";
    if (!p.int4) return NameOf(p.weights);
    if (p.int4->mxfp4()) return "mxfp4";
    return "int4 g" + std::to_string(p.int4->group_size) + (p.int4->zero_points ? "" : ", no zeros");
}

std::vector<int> CapturedGraphSizes(const EngineConfig& e) {
    const int cap = std::min(e.max_seqs, e.max_tokens / (1 + std::max(0, e.speculation.tokens)));
    std::vector<int> kept;
    for (int size : e.cuda_graph_batch_sizes) {
        if (size <= cap) {
            kept.push_back(size);
            continue;
        }
        if (cap >= 1 && (kept.empty() || kept.back() != cap)) kept.push_back(cap);
        break;
    }
    return kept;
}

void CheckCudaGraphSizes(const std::vector<int>& sizes) {
    for (size_t i = 0; i < sizes.size(); ++i) {
        const std::string field = "engine.cuda_graph_batch_sizes[" + std::to_string(i) + "]";
        if (sizes[i] < 1 || sizes[i] > kMaxCudaGraphBatchSize)
            throw Error(field, "must be a batch size from 1 to " + std::to_string(kMaxCudaGraphBatchSize) + ", got " +
                                   std::to_string(sizes[i]));
        if (i > 0 && sizes[i] <= sizes[i - 1])
            throw Error(field, "sizes go up: " + std::to_string(sizes[i]) + " after " + std::to_string(sizes[i - 1]) +
                                   " (list each captured graph once, smallest first)");
    }
}

namespace {
void AtLeast(const char* field, long long v, long long lo, const std::string& what) {
    if (v < lo)
        throw Error(field, "must be at least " + std::to_string(lo) + " (" + what + "), got " + std::to_string(v));
}
void CheckLengths(const std::string& field, const LengthDist& d) {
    if (d.min < 1) throw Error(field + ".min", "must be at least 1 token, got " + std::to_string(d.min));
    if (d.max < d.min)
        throw Error(field + ".max",
                    "must be at least min (" + std::to_string(d.min) + "), got " + std::to_string(d.max));
    if (d.max > kMaxModelDim)
        throw Error(field + ".max",
                    "must be at most " + std::to_string(kMaxModelDim) + " tokens, got " + std::to_string(d.max));
    if (d.kind == LengthDist::Kind::normal) {
        if (!(std::isfinite(d.mean) && d.mean >= d.min && d.mean <= d.max))
            throw Error(field + ".mean", "must lie in [min, max] = [" + std::to_string(d.min) + ", " +
                                             std::to_string(d.max) + "], got " + ShownNumber(d.mean));
        if (!(std::isfinite(d.stddev) && d.stddev >= 0))
            throw Error(field + ".stddev", "must be a finite number >= 0, got " + ShownNumber(d.stddev));
        if (NormalAcceptance(d) < 0.01)
            throw Error(field + ".stddev", "a normal of stddev " + ShownNumber(d.stddev) +
                                               " puts under 1% of its lengths in [" + std::to_string(d.min) + ", " +
                                               std::to_string(d.max) + "]; narrow it or widen the bounds");
    }
    if (d.kind == LengthDist::Kind::empirical) {
        if (d.values.empty() || d.values.size() != d.weights.size())
            throw Error(field + ".values",
                        "an empirical distribution needs one weight per value and at least one value (" +
                            std::to_string(d.values.size()) + " values, " + std::to_string(d.weights.size()) +
                            " weights)");
        for (size_t i = 0; i < d.values.size(); ++i) {
            if (d.values[i] < d.min || d.values[i] > d.max)
                throw Error(field + ".values[" + std::to_string(i) + "]",
                            "must lie in [min, max] = [" + std::to_string(d.min) + ", " + std::to_string(d.max) +
                                "], got " + std::to_string(d.values[i]));
            if (!(std::isfinite(d.weights[i]) && d.weights[i] > 0))
                throw Error(field + ".weights[" + std::to_string(i) + "]",
                            "must be a finite number > 0, got " + ShownNumber(d.weights[i]));
        }
    }
}
std::string Divisors(int n) {
    std::string s;
    for (int d = 1; d <= n; ++d)
        if (n % d == 0) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return s;
}
int Gcd(int a, int b) { return b == 0 ? a : Gcd(b, a % b); }
// "the 256 experts", or "the 256 experts and 32 redundant copies (288 slots)".
std::string SlotsText(const PoolConfig& p, const ModelConfig& m) {
    std::string s = std::to_string(m.moe.experts) + " experts";
    if (p.redundant_experts > 0)
        s += " and " + std::to_string(p.redundant_experts) + " redundant copies (" + std::to_string(p.ExpertSlots(m)) +
             " slots)";
    return "the " + s;
}

// Redundant copies of routed experts (PoolConfig::redundant_experts) are slots the ep groups share.
void CheckRedundantExperts(const std::string& field, const PoolConfig& p, const ModelConfig& m) {
    const std::string f = field + ".redundant_experts";
    if (p.redundant_experts < 0 || p.redundant_experts > (1 << 20))
        throw Error(f, "must be 0..1048576 copies of routed experts, got " + std::to_string(p.redundant_experts));
    if (p.redundant_experts > 0 && (!m.is_moe() || p.ep < 2))
        throw Error(f, "redundant_experts=" + std::to_string(p.redundant_experts) +
                           " adds copies of routed experts to the ep groups, but " +
                           (m.is_moe() ? "ep=" + std::to_string(p.ep) + " makes one group"
                                       : m.name + " has no mixture-of-experts layers") +
                           "; valid: 0, or with ep > 1 any count that with the experts divides by ep");
}

// Data-parallel attention as DeepSeek's inference system deploys it (deepseek-ai/open-infra-index, "Day 6: One More
// Thing, DeepSeek-V3/R1 Inference System Overview": "Routed Expert EP, MLA/Shared Expert DP"): an MoE model whose
// routed experts are split one group per GPU (ep = tp); with pp > 1 each stage such a group of its own layers.
void CheckAttentionDp(const std::string& field, const PoolConfig& p, const ModelConfig& m) {
    const std::string f = field + ".attention_dp";
    if (!m.is_moe() || m.is_hybrid())
        throw Error(f, std::string("data-parallel attention splits the routed experts over the group, but ") + m.name +
                           (m.is_hybrid() ? " is a hybrid model (not modelled with attention_dp)"
                                          : " has no mixture-of-experts layers (its data parallelism is replicas)") +
                           "; valid: false");
    if (p.pp < 1 || p.pp > m.layers)
        throw Error(field + ".pp", "pp=" + std::to_string(p.pp) + " pipeline stages for " + std::to_string(m.layers) +
                                       " layers; valid: 1.." + std::to_string(m.layers) +
                                       " (every stage holds at least one layer)");
    CheckRedundantExperts(field, p, m);
    const int slots = p.ExpertSlots(m);
    if (p.ep != p.tp || slots % p.ep != 0)
        throw Error(field + ".ep", "ep=" + std::to_string(p.ep) +
                                       " with attention_dp must equal tp=" + std::to_string(p.tp) +
                                       " (every GPU holds experts/ep whole routed experts) " + "and divide " +
                                       SlotsText(p, m) + "; valid: tp in " + Divisors(slots) + ", ep = tp");
    AtLeast((field + ".replicas").c_str(), p.replicas, 1, "copies of the model");
    const long long gpus = static_cast<long long>(p.tp) * p.pp * p.replicas;
    if (gpus > kMaxRanks)
        throw Error(field + ".replicas", std::to_string(p.replicas) + " replicas of tp=" + std::to_string(p.tp) +
                                             " x pp=" + std::to_string(p.pp) + " need " + std::to_string(gpus) +
                                             " GPUs; at most " + std::to_string(kMaxRanks) + " can be described");
}

void CheckPool(const std::string& field, const PoolConfig& p, const ModelConfig& m) {
    AtLeast((field + ".tp").c_str(), p.tp, 1, "GPUs per pipeline stage");
    if (p.deepep_dispatch && !p.attention_dp)
        throw Error(field + ".deepep_dispatch",
                    "DeepEP dispatches the tokens of data-parallel attention to the experts, "
                    "but attention_dp is false (under TP a rank picks its experts' rows "
                    "locally); valid: false, or attention_dp true");
    if (p.allgather_dispatch && !p.attention_dp)
        throw Error(field + ".allgather_dispatch",
                    "the all-gather dispatch gathers data-parallel attention's tokens for the experts, but "
                    "attention_dp is false (under TP every rank already holds them); valid: false, or attention_dp "
                    "true");
    if (p.allgather_dispatch && p.deepep_dispatch)
        throw Error(field + ".allgather_dispatch",
                    "the tokens reach the experts either by DeepEP's sends or by an all-gather, not both; valid: "
                    "false while deepep_dispatch is true");
    if (p.two_batch_overlap && !p.attention_dp)
        throw Error(field + ".two_batch_overlap",
                    "two micro-batches hide data-parallel attention's expert all-to-all, "
                    "but attention_dp is false (no all-to-all to hide); valid: false, or "
                    "attention_dp true");
    if (p.attention_dp) {  // attention whole on every GPU: no head split to check
        CheckAttentionDp(field, p, m);
        return;
    }
    if (m.heads % p.tp != 0)
        throw Error(field + ".tp",
                    "tp=" + std::to_string(p.tp) + " does not divide " + std::to_string(m.heads) + " attention heads");
    // Fewer KV heads than ranks: each rank holds a copy of one (KvReplicatedModel); otherwise they split evenly.
    if (!m.is_mla() && m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0)
        throw Error(field + ".tp", "tp=" + std::to_string(p.tp) + " neither divides the " + std::to_string(m.kv_heads) +
                                       " key/value heads nor is a multiple of them (then each rank holds a copy "
                                       "of one, as vLLM and TensorRT-LLM replicate them)");
    AtLeast((field + ".replicas").c_str(), p.replicas, 1, "copies of the model");
    if (p.pp < 1 || p.pp > m.layers)
        throw Error(field + ".pp", "pp=" + std::to_string(p.pp) + " pipeline stages for " + std::to_string(m.layers) +
                                       " layers; valid: 1.." + std::to_string(m.layers) +
                                       " (every stage holds at least one layer)");
    const long long gpus = static_cast<long long>(p.tp) * p.pp * p.replicas;  // PoolConfig::gpus() is an int
    if (gpus > kMaxRanks)
        throw Error(field + ".replicas", std::to_string(p.replicas) + " replicas of tp=" + std::to_string(p.tp) +
                                             " x pp=" + std::to_string(p.pp) + " need " + std::to_string(gpus) +
                                             " GPUs; at most " + std::to_string(kMaxRanks) + " can be described");
    CheckRedundantExperts(field, p, m);
    if (p.ep == 1) return;
    if (!m.is_moe())
        throw Error(field + ".ep", "ep=" + std::to_string(p.ep) + " splits experts, but " + m.name +
                                       " has no mixture-of-experts layers; valid: 1");
    const int slots = p.ExpertSlots(m), g = Gcd(p.tp, slots);
    if (p.ep < 1 || p.tp % p.ep != 0 || slots % p.ep != 0)
        throw Error(field + ".ep", "ep=" + std::to_string(p.ep) + " must divide tp=" + std::to_string(p.tp) +
                                       " (the experts are split over ep groups of a stage's tp ranks) and " +
                                       SlotsText(p, m) + "; valid: " + Divisors(g));
}
// The input dimension of every decoder GEMM on one rank of a pool's split (row-parallel layers see 1/tp of it).
std::vector<std::pair<const char*, long long>> GemmInputsPerRank(const ModelConfig& m, const PoolConfig& split) {
    PoolConfig p = split;
    if (p.attention_dp) p.tp = p.ep = 1;  // every GEMM whole on its GPU, each routed expert too
    std::vector<std::pair<const char*, long long>> in = {{"hidden", m.hidden}};
    if (m.is_mla()) {
        if (m.mla.q_lora_rank > 0) in.push_back({"q_lora_rank", m.mla.q_lora_rank});
        in.push_back({"kv_lora_rank", m.mla.kv_lora_rank});
        in.push_back({"heads/tp x v_head_dim", static_cast<long long>(m.heads / p.tp) * m.mla.v_head_dim});
    } else {
        in.push_back({"heads/tp x head_dim", static_cast<long long>(m.heads / p.tp) * m.head_dim});
    }
    if (m.dense_layers() > 0) in.push_back({"ffn/tp", m.ffn / p.tp});
    if (m.is_moe()) {
        in.push_back({"expert_ffn x ep/tp", static_cast<long long>(m.moe.expert_ffn) * p.ep / p.tp});
        if (m.moe.shared_experts > 0)
            in.push_back(
                {"shared experts' ffn/tp", static_cast<long long>(m.moe.shared_experts) * m.moe.expert_ffn / p.tp});
    }
    return in;
}
// int4 groups run along a GEMM's input dimension and may not straddle a TP shard: vLLM's AWQ and GPTQ linear
// methods refuse an input size per partition that the group size does not divide.
void CheckInt4(const ServingPrecision& prec, const ModelConfig& m, const std::string& pool_field, const PoolConfig& p) {
    if (!prec.int4) return;
    const int g = prec.int4->group_size;
    if (g < 1 || g > 65536)
        throw Error("precision.group_size", "must be 1..65536 weights per scale, got " + std::to_string(g));
    for (const auto& [name, dim] : GemmInputsPerRank(m, p))
        if (dim % g != 0)
            throw Error("precision.group_size",
                        "group_size=" + std::to_string(g) + " does not divide " + name + " = " + std::to_string(dim) +
                            " at " + pool_field + ".tp=" + std::to_string(p.tp) +
                            " (a group may not straddle a GEMM's input shard); valid: a divisor of every GEMM input "
                            "per rank, e.g. 32, 64, 128");
}
void CheckTrace(const std::vector<TraceRequest>& t) {
    if (t.empty()) throw Error("workload.trace", "a trace workload needs at least one request");
    double last = 0;
    for (size_t i = 0; i < t.size(); ++i) {
        const std::string f = "workload.trace[" + std::to_string(i) + "]";
        if (!(std::isfinite(t[i].arrival) && t[i].arrival >= last))
            throw Error(f + ".arrival", "must be finite and not before the previous request's (" + ShownNumber(last) +
                                            " s), got " + ShownNumber(t[i].arrival));
        last = t[i].arrival;
        if (t[i].input < 1 || t[i].input > kMaxModelDim)
            throw Error(f + ".input",
                        "must be 1.." + std::to_string(kMaxModelDim) + " tokens, got " + std::to_string(t[i].input));
        if (t[i].output < 1 || t[i].output > kMaxModelDim)
            throw Error(f + ".output",
                        "must be 1.." + std::to_string(kMaxModelDim) + " tokens, got " + std::to_string(t[i].output));
        if (t[i].priority < 0) throw Error(f + ".priority", "must be >= 0, got " + std::to_string(t[i].priority));
    }
}
// `v` in lo..hi, else an Error naming `field`: "must be lo..hi <what>, got v".
void Within(const char* field, long long v, long long lo, long long hi, const std::string& what) {
    if (v < lo || v > hi)
        throw Error(field, "must be " + std::to_string(lo) + ".." + std::to_string(hi) + " " + what + ", got " +
                               std::to_string(v));
}

// Shared prefixes (Workload::prefixes).
void CheckPrefixes(const Workload& w) {
    const SharedPrefixes& p = w.prefixes;
    Within("workload.prefixes.count", p.count, 0, kMaxSharedPrefixes, "distinct prefixes (0: none)");
    if (p.count == 0) return;
    if (p.tokens < 1 || p.tokens > kMaxModelDim - w.input.max)
        throw Error("workload.prefixes.tokens", "must be 1.." + std::to_string(kMaxModelDim - w.input.max) +
                                                    " (a prefix and the longest input together at most " +
                                                    std::to_string(kMaxModelDim) + " tokens), got " +
                                                    std::to_string(p.tokens));
    if (!(std::isfinite(p.zipf) && p.zipf >= 0 && p.zipf <= 100))
        throw Error(
            "workload.prefixes.zipf",
            "must be in [0, 100] (prefix k drawn with weight 1/k^zipf; 0: uniform), got " + ShownNumber(p.zipf));
    if (w.arrival == ArrivalKind::trace)
        throw Error("workload.prefixes",
                    "a replayed trace gives each request's whole prompt; shared prefixes "
                    "apply to generated workloads (drop workload.prefixes)");
}

// Conversations of several turns (Workload::turns, think).
void CheckConversations(const Workload& w) {
    Within("workload.turns", w.turns, 1, kMaxTurns, "turns a conversation");
    if (!(std::isfinite(w.think) && w.think >= 0 && w.think <= 1e6))
        throw Error("workload.think_s",
                    "must be in [0, 1e6] s between a turn's completion and the next, got " + ShownNumber(w.think));
    if (w.turns > 1 && w.arrival == ArrivalKind::trace)
        throw Error("workload.turns",
                    "a replayed trace gives every request; conversations of several turns "
                    "apply to generated workloads (set turns to 1)");
}

// The retrieval stage (Workload::retrieval).
void CheckRetrieval(const Workload& w) {
    const Retrieval& rag = w.retrieval;
    Within("workload.retrieval.documents", rag.documents, 0, kMaxModelDim, "passages a query (0: no retrieval)");
    if (!rag.on()) return;
    if (rag.tokens < 1 || rag.prompt_tokens() > kMaxModelDim)
        throw Error("workload.retrieval.tokens",
                    "must be at least 1 token a passage, and " + std::to_string(rag.documents) + " passages at most " +
                        std::to_string(kMaxModelDim) + " tokens together; got " + std::to_string(rag.tokens));
    if (!(std::isfinite(rag.seconds) && rag.seconds >= 0 && rag.seconds <= 1e6))
        throw Error("workload.retrieval.seconds",
                    "must be in [0, 1e6] s a query on one server, got " + ShownNumber(rag.seconds));
    Within("workload.retrieval.servers", rag.servers, 1, 1 << 24, "queries served at once");
    if (w.arrival == ArrivalKind::trace)
        throw Error("workload.retrieval",
                    "a replayed trace gives each request's whole prompt; retrieval applies to generated "
                    "workloads (drop workload.retrieval)");
}

// What turns and passages add up to (a shared prefix with the longest input is checked by CheckPrefixes).
void CheckLongestPrompt(const Workload& w) {
    const long long longest = LongestPrompt(w) + w.output.max;
    if ((w.turns == 1 && !w.retrieval.on()) || longest <= kMaxModelDim) return;
    const std::string what = w.turns > 1 ? std::to_string(w.turns) + " turns of up to " + std::to_string(w.input.max) +
                                               " + " + std::to_string(w.output.max) + " tokens" +
                                               (w.retrieval.on() ? " with their passages" : "")
                                         : std::string("the retrieved passages");
    throw Error(w.turns > 1 ? "workload.turns" : "workload.retrieval",
                what + " make a last prompt and output of up to " + std::to_string(longest) + " tokens; at most " +
                    std::to_string(kMaxModelDim));
}

// Several samples of a prompt (Workload::samples).
void CheckSamples(const Workload& w) {
    Within("workload.samples", w.samples, 1, kMaxSamples, "completions of each prompt");
    if (w.samples > 1 && w.turns > 1)
        throw Error("workload.samples",
                    std::to_string(w.samples) + " samples in a conversation of " + std::to_string(w.turns) +
                        " turns: a next turn continues one answer, so conversations are modelled with one sample "
                        "a turn (set samples to 1 or turns to 1)");
}

// Speculative decoding with a draft head (EngineConfig::speculation).
void CheckSpeculation(const ServingConfig& c) {
    const Speculation& sp = c.engine.speculation;
    Within("engine.speculation.tokens", sp.tokens, 0, kMaxDraftTokens, "draft tokens per step (0: none)");
    if (!(std::isfinite(sp.acceptance) && sp.acceptance >= 0 && sp.acceptance <= 1))
        throw Error("engine.speculation.acceptance",
                    "must be a probability in [0, 1] (a draft accepted when the ones before it were), got " +
                        ShownNumber(sp.acceptance));
    if (sp.tokens > 0 && (c.pool.attention_dp || (c.decode_pool && c.decode_pool->attention_dp)))
        throw Error("engine.speculation",
                    "a draft head beside data-parallel attention (attention_dp) is not "
                    "modelled; set speculation.tokens 0 or attention_dp false");
    if (sp.tokens > 0 && c.model.is_hybrid())
        throw Error("engine.speculation",
                    c.model.name +
                        " is a hybrid model: the draft head is modelled as one transformer decoder layer of the "
                        "model's shape, which a hybrid's layers are not (set speculation.tokens 0)");
}

// The caches that reuse prefixes (EngineConfig::prefix_caching, host_cache_gib, remote_cache_gib).
void CheckPrefixCaches(const ServingConfig& c) {
    const EngineConfig& e = c.engine;
    if (e.prefix_caching && (c.model.has_window() || c.model.has_mamba()))
        throw Error("engine.prefix_caching",
                    c.model.name + " has " + (c.model.has_mamba() ? "Mamba" : "sliding-window") +
                        " layers, whose cache is not a prefix of blocks a later prompt could take; prefix caching "
                        "is modelled for full-attention models only (set it false)");
    if (!(std::isfinite(e.host_cache_gib) && e.host_cache_gib >= 0))
        throw Error("engine.host_cache_gib", "must be >= 0 GiB per GPU, got " + ShownNumber(e.host_cache_gib));
    if (e.host_cache_gib > 0 && !e.prefix_caching)
        throw Error("engine.host_cache_gib",
                    "a host tier holds prefixes evicted from the GPU's prefix cache; set "
                    "engine.prefix_caching true, or host_cache_gib 0");
    if (!(std::isfinite(e.remote_cache_gib) && e.remote_cache_gib >= 0))
        throw Error("engine.remote_cache_gib", "must be >= 0 GiB per GPU, got " + ShownNumber(e.remote_cache_gib));
    if (e.remote_cache_gib > 0 && !e.prefix_caching)
        throw Error("engine.remote_cache_gib",
                    "a remote store holds prefixes evicted from the GPU's prefix cache; set engine.prefix_caching "
                    "true, or remote_cache_gib 0");
}
}  // namespace

std::vector<int> StageLayers(int layers, int pp) {
    if (pp < 1 || pp > layers)
        throw Error("pool.pp", "pp=" + std::to_string(pp) + " for " + std::to_string(layers) + " layers; valid: 1.." +
                                   std::to_string(layers));
    std::vector<int> v(static_cast<size_t>(pp), layers / pp);
    for (int i = 2; i < layers % pp + 2; ++i) v[static_cast<size_t>(pp - i)] += 1;
    return v;
}

long long LongestPrompt(const Workload& w) {
    const long long own = static_cast<long long>(w.input.max) + w.retrieval.prompt_tokens();  // a turn's new tokens
    return (w.prefixes.count > 0 ? w.prefixes.tokens : 0) + own +
           static_cast<long long>(w.turns - 1) * (own + w.output.max);
}

void CheckArrivalSpan(const std::string& field, long long requests, double rate) {
    const double span = static_cast<double>(requests) / rate;
    if (!(span <= kMaxClockSeconds))
        throw Error(field, ShownNumber(static_cast<double>(requests)) + " requests at " + ShownNumber(rate) +
                               " requests/s arrive over " + ShownNumber(span) + " s, past the " +
                               ShownNumber(kMaxClockSeconds) +
                               " s (31.7 years) within which the simulation's clock resolves a microsecond; at least " +
                               ShownNumber(static_cast<double>(requests) / kMaxClockSeconds) + " requests/s for " +
                               std::to_string(requests) + " requests");
}

void ValidateServingConfig(const ServingConfig& c) {
    ValidateModelConfig(c.model);
    CheckPool("pool", c.pool, c.model);
    if (c.decode_pool) CheckPool("decode_pool", *c.decode_pool, c.model);
    if (c.precision.fp8_scaling == Fp8Scaling::block &&
        (c.precision.weights != Precision::fp8 || c.precision.compute != Precision::fp8 || c.precision.int4))
        throw Error("precision.fp8_scaling", std::string("block scaling is of fp8 weights and GEMMs; weights are ") +
                                                 WeightFormatName(c.precision) + " and compute " +
                                                 NameOf(c.precision.compute) +
                                                 " (set precision.weights to \"fp8\", or fp8_scaling to \"tensor\")");
    if (c.precision.int4) {
        const Precision k = c.precision.compute;
        if (k != Precision::bf16 && k != Precision::fp16 && k != Precision::fp8)
            throw Error("precision.compute", std::string(c.precision.int4->mxfp4() ? "mxfp4" : "int4") +
                                                 " weights are dequantized into the GEMM's math; got " + NameOf(k) +
                                                 ", valid: bf16, fp16 (W4A16), fp8 (W4A8)");
        if (c.precision.int4->mxfp4() && !c.model.is_moe())
            throw Error("precision.weights",
                        "mxfp4 stores routed experts (gpt-oss's checkpoints, vLLM's Mxfp4Config) and " + c.model.name +
                            " has none; valid for it: int4 (4-bit groups with an fp16 scale), fp8, fp4, bf16");
        CheckInt4(c.precision, c.model, "pool", c.pool);
        if (c.decode_pool) CheckInt4(c.precision, c.model, "decode_pool", *c.decode_pool);
    }
    AtLeast("engine.max_seqs", c.engine.max_seqs, 1, "sequences per iteration");
    AtLeast("engine.max_tokens", c.engine.max_tokens, 1, "tokens per iteration");
    AtLeast("engine.block_size", c.engine.block_size, 1, "tokens per KV block");
    if (!(c.engine.kv_memory_fraction > 0 && c.engine.kv_memory_fraction <= 1))
        throw Error("engine.kv_memory_fraction", "must be in (0, 1], got " + ShownNumber(c.engine.kv_memory_fraction));
    if (c.engine.runtime_memory_gib &&
        !(std::isfinite(*c.engine.runtime_memory_gib) && *c.engine.runtime_memory_gib >= 0))
        throw Error("engine.runtime_memory_gib", "must be a finite number of GiB at least 0 when given, got " +
                                                     ShownNumber(*c.engine.runtime_memory_gib));
    if (!(std::isfinite(c.engine.frontend_s) && c.engine.frontend_s >= 0))
        throw Error("engine.frontend_ms", "must be a finite number of milliseconds at least 0, got " +
                                              ShownNumber(c.engine.frontend_s * 1e3));
    CheckCudaGraphSizes(c.engine.cuda_graph_batch_sizes);
    if (c.engine.kv_blocks_override < 0)
        throw Error("engine.kv_blocks",
                    "must be at least 1 when given, got " + std::to_string(c.engine.kv_blocks_override));
    // 0: the part's measured host link (HostLinkOf); the engine refuses a swap or a host tier without one.
    if (!(std::isfinite(c.engine.swap_gbps) && c.engine.swap_gbps >= 0))
        throw Error("engine.swap_gbps", "must be >= 0 GB/s per direction (0: the part's measured host link), got " +
                                            ShownNumber(c.engine.swap_gbps));
    if (!(std::isfinite(c.slo.ttft) && c.slo.ttft >= 0))
        throw Error("slo.ttft_ms", "must be >= 0, got " + ShownNumber(c.slo.ttft * 1e3));
    if (!(std::isfinite(c.slo.tpot) && c.slo.tpot >= 0))
        throw Error("slo.tpot_ms", "must be >= 0, got " + ShownNumber(c.slo.tpot * 1e3));
    if (c.timelines < 0 || c.timelines > kMaxTimelines)
        throw Error("timelines", "must be 0.." + std::to_string(kMaxTimelines) +
                                     " (requests whose timelines the result keeps), got " +
                                     std::to_string(c.timelines));
    const Workload& w = c.workload;
    AtLeast("workload.requests", w.requests, 1, "requests in the run");
    if (w.requests > (1LL << 40))
        throw Error("workload.requests", "must be at most 2^40, got " + std::to_string(w.requests));
    if (w.arrival == ArrivalKind::gamma && !(std::isfinite(w.cv) && w.cv >= 0.05 && w.cv <= 100))
        throw Error("workload.cv", "must be in [0.05, 100] (the gaps' coefficient of variation; 1 = Poisson), got " +
                                       ShownNumber(w.cv));
    double priority_total = 0;
    for (size_t i = 0; i < w.priority_weights.size(); ++i) {
        if (!(std::isfinite(w.priority_weights[i]) && w.priority_weights[i] >= 0))
            throw Error("workload.priorities." + std::to_string(i),
                        "must be a finite number >= 0, got " + ShownNumber(w.priority_weights[i]));
        priority_total += w.priority_weights[i];
    }
    if (!w.priority_weights.empty() && !(priority_total > 0))
        throw Error("workload.priorities", "the classes' weights must not all be 0");
    if (w.arrival == ArrivalKind::trace) {
        CheckTrace(w.trace);
        if (w.requests != static_cast<long long>(w.trace.size()))
            throw Error("workload.requests", "a trace workload runs its " + std::to_string(w.trace.size()) +
                                                 " requests, got " + std::to_string(w.requests));
    }
    if (w.arrival == ArrivalKind::poisson || w.arrival == ArrivalKind::fixed_rate || w.arrival == ArrivalKind::gamma) {
        if (!(w.rate > 0 && std::isfinite(w.rate) && w.rate <= 1e9))
            throw Error("workload.rate", std::string("must be in (0, 1e9] requests/s for ") + NameOf(w.arrival) +
                                             " arrivals, got " + ShownNumber(w.rate));
        CheckArrivalSpan("workload.rate", w.requests, w.rate);
    }
    if (w.arrival == ArrivalKind::closed_loop) AtLeast("workload.concurrency", w.concurrency, 1, "clients");
    CheckLengths("workload.input", w.input);
    CheckLengths("workload.output", w.output);
    // In this order, so that of several faults the same one is named first as before these were split.
    CheckPrefixes(w);
    CheckConversations(w);
    CheckRetrieval(w);
    CheckLongestPrompt(w);
    CheckSamples(w);
    CheckSpeculation(c);
    CheckPrefixCaches(c);
}

}  // namespace sc
