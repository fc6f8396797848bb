#include "link/serve_keys.h"

#include <cstdio>
#include <cstdlib>
#include <variant>

#include "config/error.h"
#include "config/numbers.h"

namespace sc {

namespace {

using Edits = LinkServeEdits;

// One field: its key, where it lives, and what it accepts (the ranges of a serving preset, serving_parse.cpp).
struct IntField {
    std::optional<int> Edits::*member;
    long long lo, hi;
};
struct NumberField {
    std::optional<double> Edits::*member;
    double hi;
};
struct BoolField {
    std::optional<bool> Edits::*member;
};
struct ChoiceField {
    std::optional<std::string> Edits::*member;
    std::vector<std::string> choices;
};
struct PrecisionField {
    std::optional<Precision> Edits::*member;
};
// A preset id (CheckLinkId): which ids the page has is the page's check.
struct IdField {
    std::optional<std::string> Edits::*member;
};
// Batch sizes, ascending, joined by ',' ("none": an empty list).
struct SizesField {
    std::optional<std::vector<int>> Edits::*member;
};
struct Key {
    const char* name;
    std::variant<IntField, NumberField, BoolField, ChoiceField, PrecisionField, IdField, SizesField> field;
};

const std::vector<Key>& Keys() {
    static const std::vector<Key> keys = {
        {"serve.tp", IntField{&Edits::tp, 1, 1 << 24}},
        {"serve.replicas", IntField{&Edits::replicas, 1, 1 << 24}},
        {"serve.decode", BoolField{&Edits::decode}},
        {"serve.decode_tp", IntField{&Edits::decode_tp, 1, 1 << 24}},
        {"serve.decode_replicas", IntField{&Edits::decode_replicas, 1, 1 << 24}},
        {"serve.max_seqs", IntField{&Edits::max_seqs, 1, 1 << 24}},
        {"serve.max_tokens", IntField{&Edits::max_tokens, 1, 1 << 24}},
        {"serve.chunked", BoolField{&Edits::chunked}},
        {"serve.window_eviction", BoolField{&Edits::window_eviction}},
        {"serve.cuda_graphs", SizesField{&Edits::cuda_graphs}},
        {"serve.preemption", ChoiceField{&Edits::preemption, {"recompute", "swap"}}},
        {"serve.weights", PrecisionField{&Edits::weights}},
        {"serve.kv", PrecisionField{&Edits::kv}},
        {"serve.int4_group", IntField{&Edits::int4_group, 0, 65536}},  // 0: weights as serve.weights says
        {"serve.mxfp4", BoolField{&Edits::mxfp4}},
        {"serve.fp8_block", BoolField{&Edits::fp8_block}},
        {"serve.arrivals", ChoiceField{&Edits::arrivals, {"poisson", "gamma", "fixed_rate", "closed_loop", "offline"}}},
        {"serve.rate", NumberField{&Edits::rate, 1e9}},
        {"serve.cv", NumberField{&Edits::cv, 1e9}},
        {"serve.clients", IntField{&Edits::clients, 1, 1 << 24}},
        {"serve.requests", IntField{&Edits::requests, 1, 2147483647}},
        {"serve.ttft_s", NumberField{&Edits::ttft_s, 1e6}},
        {"serve.tpot_s", NumberField{&Edits::tpot_s, 1e6}},
        {"serve.pp", IntField{&Edits::pp, 1, 1 << 24}},
        {"serve.ep", IntField{&Edits::ep, 1, 1 << 24}},
        {"serve.decode_pp", IntField{&Edits::decode_pp, 1, 1 << 24}},
        {"serve.decode_ep", IntField{&Edits::decode_ep, 1, 1 << 24}},
        {"serve.attention_dp", BoolField{&Edits::attention_dp}},
        {"serve.decode_attention_dp", BoolField{&Edits::decode_attention_dp}},
        {"serve.redundant_experts", IntField{&Edits::redundant_experts, 0, 1 << 20}},
        {"serve.decode_redundant_experts", IntField{&Edits::decode_redundant_experts, 0, 1 << 20}},
        {"serve.deepep", BoolField{&Edits::deepep}},
        {"serve.decode_deepep", BoolField{&Edits::decode_deepep}},
        {"serve.allgather", BoolField{&Edits::allgather}},
        {"serve.decode_allgather", BoolField{&Edits::decode_allgather}},
        {"serve.two_batch_overlap", BoolField{&Edits::two_batch_overlap}},
        {"serve.decode_two_batch_overlap", BoolField{&Edits::decode_two_batch_overlap}},
        {"serve.all_reduce", ChoiceField{&Edits::all_reduce, {"nccl", "tensorrt-llm", "vllm", "sglang"}}},
        {"serve.decode_all_reduce", ChoiceField{&Edits::decode_all_reduce, {"nccl", "tensorrt-llm", "vllm", "sglang"}}},
        {"serve.timelines", IntField{&Edits::timelines, 0, 1 << 24}},  // checked when simulated (kMaxTimelines)
        {"serve.prefixes", IntField{&Edits::prefixes, 0, 1 << 24}},    // checked when simulated (kMaxSharedPrefixes)
        {"serve.prefix_tokens", IntField{&Edits::prefix_tokens, 1, kMaxModelDim}},
        {"serve.prefix_caching", BoolField{&Edits::prefix_caching}},
        {"serve.turns", IntField{&Edits::turns, 1, 1 << 24}},                // checked when simulated (kMaxTurns)
        {"serve.samples", IntField{&Edits::samples, 1, 1 << 24}},            // checked when simulated (kMaxSamples)
        {"serve.draft_tokens", IntField{&Edits::draft_tokens, 0, 1 << 24}},  // checked when simulated (kMaxDraftTokens)
        {"serve.acceptance", NumberField{&Edits::acceptance, 1}},
        {"serve.passages", IntField{&Edits::passages, 0, 1 << 24}},
        {"serve.passage_tokens", IntField{&Edits::passage_tokens, 1, 1 << 24}},
        {"serve.retrieval_s", NumberField{&Edits::retrieval_s, 1e6}},
        {"serve.retrieval_servers", IntField{&Edits::retrieval_servers, 1, 1 << 24}},
        {"serve.decode_system", IdField{&Edits::decode_system}},  // "shared": the page's cluster
        {"serve.host_cache_gib", NumberField{&Edits::host_cache_gib, 1e9}},
        {"serve.remote_cache_gib", NumberField{&Edits::remote_cache_gib, 1e9}},
        {"serve.swap_gbps", NumberField{&Edits::swap_gbps, 1e9}},
        {"serve.frontend_ms", NumberField{&Edits::frontend_ms, 1e9}},
    };
    return keys;
}

std::string Quote(std::string_view v) { return "\"" + Clip(v) + "\""; }

std::string Joined(const std::vector<std::string>& v, const char* sep = ", ") {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
}

// "1,2,4" -> {1, 2, 4}; "none" -> {}; whole numbers, ascending (their bound is checked when simulated:
// kMaxCudaGraphBatchSize, inference/serving_config.h).
std::vector<int> ParseSizes(const std::string& key, std::string_view v) {
    std::vector<int> sizes;
    if (v == "none") return sizes;
    size_t start = 0;
    for (;;) {
        const size_t comma = v.find(',', start);
        const std::string_view part = v.substr(start, comma == std::string_view::npos ? v.npos : comma - start);
        sizes.push_back(static_cast<int>(ParseIntegerIn(key, part, 1, 1 << 24)));
        if (sizes.size() > 1 && sizes.back() <= sizes[sizes.size() - 2])
            throw Error(key, "sizes go up, smallest first: got " + std::to_string(sizes.back()) + " after " +
                                 std::to_string(sizes[sizes.size() - 2]));
        if (comma == std::string_view::npos) return sizes;
        start = comma + 1;
    }
}

std::string SizesText(const std::vector<int>& sizes) {
    if (sizes.empty()) return "none";
    std::string s = std::to_string(sizes.front());
    for (size_t i = 1; i < sizes.size(); ++i) s.append(",").append(std::to_string(sizes[i]));
    return s;
}

}  // namespace

std::string LinkNumber(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::vector<std::string> ServeKeys() {
    std::vector<std::string> k;
    for (const Key& key : Keys()) k.push_back(key.name);
    return k;
}

void SetServeKey(Edits& e, const std::string& key, std::string_view v) {
    for (const Key& k : Keys()) {
        if (key != k.name) continue;
        if (const auto* f = std::get_if<IntField>(&k.field)) {
            e.*f->member = static_cast<int>(ParseIntegerIn(key, v, f->lo, f->hi));
        } else if (const auto* f = std::get_if<NumberField>(&k.field)) {
            e.*f->member = ParseNumberIn(key, v, 0, f->hi);
        } else if (const auto* f = std::get_if<BoolField>(&k.field)) {
            if (v != "0" && v != "1") throw Error(key, "expected 0 or 1, got " + Quote(v));
            e.*f->member = v == "1";
        } else if (const auto* f = std::get_if<ChoiceField>(&k.field)) {
            for (const std::string& c : f->choices)
                if (v == c) {
                    e.*f->member = c;
                    return;
                }
            throw Error(key, Quote(v) + " is not one of " + Joined(f->choices));
        } else if (const auto* f = std::get_if<PrecisionField>(&k.field)) {
            if (v != "bf16" && v != "fp8" && v != "fp4") throw Error(key, Quote(v) + " is not one of bf16, fp8, fp4");
            e.*f->member = v == "fp8" ? Precision::fp8 : v == "fp4" ? Precision::fp4 : Precision::bf16;
        } else if (const auto* f = std::get_if<IdField>(&k.field)) {
            e.*f->member = CheckLinkId(key, v);
        } else if (const auto* f = std::get_if<SizesField>(&k.field)) {
            e.*f->member = ParseSizes(key, v);
        }
        return;
    }
    throw Error(Clip(key), "unknown serving field; valid: " + Joined(ServeKeys(), " "));
}

void PutServeKeys(const Edits& e, const std::function<void(std::string_view, const std::string&)>& put) {
    for (const Key& k : Keys()) {
        if (const auto* f = std::get_if<IntField>(&k.field)) {
            if (const auto& v = e.*f->member) put(k.name, std::to_string(*v));
        } else if (const auto* f = std::get_if<NumberField>(&k.field)) {
            if (const auto& v = e.*f->member) put(k.name, LinkNumber(*v));
        } else if (const auto* f = std::get_if<BoolField>(&k.field)) {
            if (const auto& v = e.*f->member) put(k.name, *v ? "1" : "0");
        } else if (const auto* f = std::get_if<ChoiceField>(&k.field)) {
            if (const auto& v = e.*f->member) put(k.name, *v);
        } else if (const auto* f = std::get_if<PrecisionField>(&k.field)) {
            if (const auto& v = e.*f->member) put(k.name, NameOf(*v));
        } else if (const auto* f = std::get_if<IdField>(&k.field)) {
            if (const auto& v = e.*f->member) put(k.name, *v);
        } else if (const auto* f = std::get_if<SizesField>(&k.field)) {
            if (const auto& v = e.*f->member) put(k.name, SizesText(*v));
        }
    }
}

}  // namespace sc
