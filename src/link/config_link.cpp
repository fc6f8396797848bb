#include "link/config_link.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "config/error.h"
#include "config/json_fields.h"
#include "config/numbers.h"
#include "link/serve_keys.h"
#include "parallel/parallel_config.h"
#include "training/sweep.h"

namespace sc {

namespace {

constexpr std::string_view kVersion = "v1";
constexpr std::string_view kEnd = "end";  // the last entry: a link cut short (inside a number, say) is refused
constexpr size_t kMaxIdLength = 128;      // preset ids are file names

struct IntKey {
    const char* key;
    std::optional<int> ConfigLink::*member;
    int min = 1;  // 0 where 0 means "none" (sliding_window.size, full_every)
};
// The model fields in the order they are written (the Model panel's order).
constexpr IntKey kModelKeys[] = {
    {"layers", &ConfigLink::layers},
    {"hidden", &ConfigLink::hidden},
    {"heads", &ConfigLink::heads},
    {"kv_heads", &ConfigLink::kv_heads},
    {"ffn", &ConfigLink::ffn},
    {"vocab", &ConfigLink::vocab},
    {"seq", &ConfigLink::seq},
    {"experts", &ConfigLink::experts},
    {"top_k", &ConfigLink::top_k},
    {"expert_ffn", &ConfigLink::expert_ffn},
    {"moe_every", &ConfigLink::moe_every},
    {"moe_latent", &ConfigLink::moe_latent, 0},
    {"window", &ConfigLink::window, 0},
    {"full_every", &ConfigLink::full_every, 0},
    {"mtp_layers", &ConfigLink::mtp_layers, 0},
};

// The layers an fp8/fp4 model keeps in BF16, written after the precision and its recipe they need.
constexpr IntKey kPrecisionKeys[] = {
    {"bf16_first", &ConfigLink::bf16_first, 0},
    {"bf16_last", &ConfigLink::bf16_last, 0},
};

struct BoolKey {
    const char* key;
    bool ConfigLink::*member;
};
constexpr BoolKey kOptionKeys[] = {
    {"overlap_dp", &ConfigLink::overlap_dp},
    {"overlap_pp", &ConfigLink::overlap_pp},
    {"overlap_tp", &ConfigLink::overlap_tp},
    {"inr", &ConfigLink::in_network_reduction},
};

// The framework's kernel switches, written only when they differ from TrainingOptions' defaults.
constexpr BoolKey kKernelKeys[] = {
    {"flash", &ConfigLink::flash_attention},        {"dropout", &ConfigLink::dropout},
    {"gaf", &ConfigLink::grad_accumulation_fusion}, {"scatter_gather", &ConfigLink::pp_scatter_gather},
    {"fused_ew", &ConfigLink::fused_elementwise},   {"deepep", &ConfigLink::deepep_dispatch},
    {"fp8_dispatch", &ConfigLink::fp8_dispatch},    {"fw_gemm", &ConfigLink::framework_gemm},
};

constexpr const char* kLevelFields[] = {"bandwidth", "latency", "efficiency", "inr", "wrap"};

// Every key a link may hold, for "did you mean" and the list in the message.
std::vector<std::string> KnownKeys() {
    std::vector<std::string> k = {"model"};
    for (const IntKey& m : kModelKeys) k.push_back(m.key);
    k.push_back("hybrid");
    k.push_back("load_imbalance");
    k.push_back("routing");
    k.push_back("window_kind");
    k.insert(k.end(), {"precision", "scaling"});
    for (const IntKey& m : kPrecisionKeys) k.push_back(m.key);
    k.push_back("bf16_modules");
    k.insert(k.end(), {"system", "power_limit", "parallel"});
    for (const BoolKey& o : kOptionKeys) k.push_back(o.key);
    for (const BoolKey& o : kKernelKeys) k.push_back(o.key);
    k.push_back("attn_kernel");
    k.insert(k.end(), {"tokens", "host_gbps", "search_gpus", "search_uneven", "serve"});
    for (const std::string& s : ServeKeys()) k.push_back(s);
    k.insert(k.end(), {"view", "sweeps", "sweep.axis1", "sweep.axis2", "sweep.fixed"});
    return k;
}

std::string Quoted(std::string_view s) {
    std::string q(1, '"');
    q += Clip(s);
    q += '"';
    return q;
}

[[noreturn]] void UnknownKey(const std::string& key) {
    std::string list, best;
    size_t best_d = 3;  // suggest only close matches
    for (const std::string& k : KnownKeys()) {
        list += (list.empty() ? "" : " ") + k;
        if (key.size() > k.size() + best_d) continue;
        if (size_t d = EditDistance(key, k); d < best_d) best_d = d, best = k;
    }
    list += " net.<level>.bandwidth|latency|efficiency|inr|wrap";
    throw Error(Clip(key), "unknown key in the link" +
                               (best.empty() ? std::string() : " (did you mean \"" + best + "\"?)") +
                               "; valid keys: " + list);
}

}  // namespace

std::string CheckLinkId(const std::string& field, std::string_view v) {
    if (v.empty()) throw Error(field, "must not be empty");
    if (v.size() > kMaxIdLength)
        throw Error(field, "is " + std::to_string(v.size()) + " characters, at most " + std::to_string(kMaxIdLength) +
                               " are allowed, got " + Quoted(v));
    for (char c : v)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            throw Error(field, "a preset id holds only letters, digits, '.', '_' and '-', got " + Quoted(v));
    return std::string(v);
}

namespace {

bool ParseBool(const std::string& field, std::string_view v) {
    if (v == "1") return true;
    if (v == "0") return false;
    throw Error(field, "expected 0 or 1, got " + Quoted(v));
}

int ParseInt(const std::string& field, std::string_view v, long long lo, long long hi) {
    return static_cast<int>(ParseIntegerIn(field, v, lo, hi));
}

LinkLevelEdit& LevelOf(ConfigLink& link, int level) {
    auto it = std::lower_bound(link.levels.begin(), link.levels.end(), level,
                               [](const LinkLevelEdit& e, int l) { return e.level < l; });
    if (it == link.levels.end() || it->level != level)
        it = link.levels.insert(it, LinkLevelEdit{level, {}, {}, {}, {}, {}});
    return *it;
}

// "net.<level>.<field>=value".
void SetLevelKey(ConfigLink& link, const std::string& key, std::string_view v) {
    const size_t dot = key.find('.', 4);
    if (dot == std::string::npos)
        throw Error(Clip(key),
                    "a level edit is net.<level>.<field> with field bandwidth, latency, efficiency, inr or wrap");
    LinkLevelEdit& e =
        LevelOf(link, ParseInt(Clip(key), std::string_view(key).substr(4, dot - 4), 0, kMaxLinkLevels - 1));
    const std::string f = key.substr(dot + 1);
    // "net.00.x" and "net.0.x" name the same field: the second would overwrite the first without a word.
    const bool given = (f == "bandwidth" && e.bandwidth_gbps) || (f == "latency" && e.latency_us) ||
                       (f == "efficiency" && e.efficiency) || (f == "inr" && e.in_network_reduction) ||
                       (f == "wrap" && e.wraparound);
    if (given) throw Error(Clip(key), "given twice in the link (as net." + std::to_string(e.level) + "." + f + ")");
    if (f == "bandwidth") e.bandwidth_gbps = ParseNumberIn(key, v, kMinLinkBandwidthGBps, kMaxLinkBandwidthGBps);
    else if (f == "latency") e.latency_us = ParseNumberIn(key, v, 0, kMaxLinkLatencyUs);
    else if (f == "efficiency") e.efficiency = ParseNumberIn(key, v, kMinLinkEfficiency, kMaxLinkEfficiency);
    else if (f == "inr") e.in_network_reduction = ParseBool(key, v);
    else if (f == "wrap") e.wraparound = ParseBool(key, v);
    else throw Error(Clip(key), "unknown level field " + Quoted(f) + "; valid: bandwidth latency efficiency inr wrap");
}

void SetKey(ConfigLink& link, const std::string& key, std::string_view v) {
    if (key == "model") {
        link.model = CheckLinkId(key, v);
        return;
    }
    if (key == "system") {
        link.system = CheckLinkId(key, v);
        return;
    }
    if (key == "parallel") {
        if (v.empty()) throw Error(key, "must not be empty (the split in the --parallel form, \"tp=8,dp=4\")");
        try {
            ParseParallelSpec(v);
        } catch (const Error& e) {
            throw Error(key, e.what());
        }
        link.parallel = std::string(v);
        return;
    }
    if (key == "precision") {
        Precision p;
        if (!ParsePrecision(v, &p)) throw Error(key, Quoted(v) + " is not one of fp32, bf16, fp16, fp8, fp4");
        link.precision = p;
        return;
    }
    if (key == "scaling") {
        Scaling q;
        if (!ParseScaling(v, &q))
            throw Error(key, Quoted(v) + " is not one of auto, delayed, current, block, mx, nvfp4");
        link.scaling = q;
        return;
    }
    if (key == "bf16_modules") {
        uint8_t mask = 0;
        std::string bad;
        if (!ParseBf16Modules(v, &mask, &bad))
            throw Error(key, Quoted(bad) +
                                 " is not one of attention, mlp, experts, shared_experts, latent, mamba, mtp "
                                 "(joined by '+', or none)");
        link.bf16_modules = mask;
        return;
    }
    if (key == "tokens") {
        link.tokens = ParseNumberIn(key, v, 0, kMaxTrainingTokens);
        return;
    }
    if (key == "host_gbps") {
        link.host_link_gbps = ParseNumberIn(key, v, 0, kMaxHostLinkGbps);
        return;
    }
    if (key == "hybrid") {  // the pattern's length against the layers is the model's check (ValidateModelConfig)
        const size_t bad = v.find_first_not_of("M*-E");
        if (v.empty() || bad != std::string_view::npos || v.size() > static_cast<size_t>(kMaxModelDim))
            throw Error(key, Quoted(v) +
                                 " is not a hybrid layer pattern: one of M (Mamba), * (attention), - (MLP), "
                                 "E (MoE) a layer");
        link.hybrid = std::string(v);
        return;
    }
    if (key == "load_imbalance") {  // its bound by experts / top_k is the model's check (ValidateModelConfig)
        link.load_imbalance = ParseNumberIn(key, v, 1, kMaxCapacityFactor);
        return;
    }
    if (key == "routing") {
        if (v != "uniform" && v != "contiguous") throw Error(key, Quoted(v) + " is not one of uniform, contiguous");
        link.contiguous_routing = v == "contiguous";
        return;
    }
    if (key == "window_kind") {
        if (v != "sliding" && v != "chunked") throw Error(key, Quoted(v) + " is not one of sliding, chunked");
        link.chunked_window = v == "chunked";
        return;
    }
    if (key == "power_limit") {  // W; the preset's board power bounds it (app_link.cpp)
        link.power_limit_w = ParseNumberIn(key, v, 0, 1e6, true);
        return;
    }
    if (key == "search_gpus") {
        link.search_gpus = ParseInt(key, v, 0, kMaxRanks);
        return;
    }
    if (key == "search_uneven") {
        link.search_uneven = ParseBool(key, v);
        return;
    }
    if (key == "serve") {
        link.serve = CheckLinkId(key, v);
        return;
    }
    if (key.rfind("serve.", 0) == 0) return SetServeKey(link.serve_edits, key, v);
    if (key == "view") {
        if (v != "estimate" && v != "search" && v != "serving")
            throw Error(key, Quoted(v) + " is not one of estimate, search, serving");
        link.view = std::string(v);
        return;
    }
    if (key == "sweeps") {
        link.sweeps = ParseBool(key, v);
        return;
    }
    if (key == "attn_kernel") {
        if (!ParseAttentionKernel(v, &link.attention_kernel))
            throw Error(key, Quoted(v) + " is not one of cudnn, flash3, flash2");
        return;
    }
    for (const BoolKey& o : kKernelKeys)
        if (key == o.key) {
            link.*o.member = ParseBool(key, v);
            return;
        }
    if (key == "sweep.axis1" || key == "sweep.axis2") {
        SweepAxes axes;
        try {
            ParseSweepAxis(std::string(v), axes);  // names the axis and the bad value
        } catch (const Error& e) {
            throw Error(key, e.what());
        }
        (key == "sweep.axis1" ? link.sweep_axis1 : link.sweep_axis2) = std::string(v);
        return;
    }
    if (key == "sweep.fixed") {
        link.sweep_fixed = ParseBool(key, v);
        return;
    }
    for (std::span<const IntKey> keys : {std::span<const IntKey>(kModelKeys), std::span<const IntKey>(kPrecisionKeys)})
        for (const IntKey& m : keys)
            if (key == m.key) {
                link.*m.member = ParseInt(key, v, m.min, kMaxModelDim);
                return;
            }
    for (const BoolKey& o : kOptionKeys)
        if (key == o.key) {
            link.*o.member = ParseBool(key, v);
            return;
        }
    if (key.rfind("net.", 0) == 0) return SetLevelKey(link, key, v);
    UnknownKey(key);
}

// What decoding cannot produce, so Encode refuses it instead of writing text that means something else.
void CheckEncodable(const ConfigLink& link) {
    for (const auto& [field, value] : {std::pair<const char*, const std::string*>{"model", &link.model},
                                       {"system", &link.system},
                                       {"parallel", &link.parallel},
                                       {"sweep.axis1", &link.sweep_axis1},
                                       {"sweep.axis2", &link.sweep_axis2}})
        if (value->find(';') != std::string::npos) throw Error(field, "must not contain ';', got " + Quoted(*value));
    for (size_t i = 0; i < link.levels.size(); ++i) {
        const LinkLevelEdit& e = link.levels[i];
        const std::string f = "net." + std::to_string(e.level);
        if (i > 0 && e.level <= link.levels[i - 1].level)
            throw Error(f, "level edits must be in ascending level order, each level once");
        if (!e.bandwidth_gbps && !e.latency_us && !e.efficiency && !e.in_network_reduction && !e.wraparound)
            throw Error(f, "a level edit must change at least one field");
    }
}

}  // namespace

std::string EncodeConfigLink(const ConfigLink& link) {
    CheckEncodable(link);
    std::string t(kVersion);
    auto put = [&t](std::string_view key, const std::string& value) {
        t += ';';
        t += key;
        t += '=';
        t += value;
    };
    put("model", link.model);
    for (const IntKey& m : kModelKeys)
        if (const auto& v = link.*m.member) put(m.key, std::to_string(*v));
    if (link.hybrid) put("hybrid", *link.hybrid);
    if (link.load_imbalance) put("load_imbalance", LinkNumber(*link.load_imbalance));
    if (link.contiguous_routing) put("routing", *link.contiguous_routing ? "contiguous" : "uniform");
    if (link.chunked_window) put("window_kind", *link.chunked_window ? "chunked" : "sliding");
    if (link.precision) put("precision", NameOf(*link.precision));
    if (link.scaling) put("scaling", NameOf(*link.scaling));
    for (const IntKey& m : kPrecisionKeys)
        if (const auto& v = link.*m.member) put(m.key, std::to_string(*v));
    if (link.bf16_modules) put("bf16_modules", *link.bf16_modules ? Bf16ModulesString(*link.bf16_modules) : "none");
    if (!link.system.empty()) put("system", link.system);
    for (const LinkLevelEdit& e : link.levels) {
        const std::string p = "net." + std::to_string(e.level) + ".";
        if (e.bandwidth_gbps) put(p + "bandwidth", LinkNumber(*e.bandwidth_gbps));
        if (e.latency_us) put(p + "latency", LinkNumber(*e.latency_us));
        if (e.efficiency) put(p + "efficiency", LinkNumber(*e.efficiency));
        if (e.in_network_reduction) put(p + "inr", *e.in_network_reduction ? "1" : "0");
        if (e.wraparound) put(p + "wrap", *e.wraparound ? "1" : "0");
    }
    if (link.power_limit_w) put("power_limit", LinkNumber(*link.power_limit_w));
    put("parallel", link.parallel);
    for (const BoolKey& o : kOptionKeys) put(o.key, link.*o.member ? "1" : "0");
    put("tokens", LinkNumber(link.tokens));
    if (link.host_link_gbps > 0) put("host_gbps", LinkNumber(link.host_link_gbps));  // only when stated
    const ConfigLink defaults;
    for (const BoolKey& o : kKernelKeys)
        if (link.*o.member != defaults.*o.member) put(o.key, link.*o.member ? "1" : "0");
    if (link.attention_kernel != defaults.attention_kernel) put("attn_kernel", NameOf(link.attention_kernel));
    put("search_gpus", std::to_string(link.search_gpus));
    if (link.search_uneven) put("search_uneven", "1");  // only when on: older links read as they did
    if (!link.serve.empty()) put("serve", link.serve);
    PutServeKeys(link.serve_edits, put);
    if (link.view != "estimate") put("view", link.view);
    if (link.sweeps) put("sweeps", "1");
    if (!link.sweep_axis1.empty()) put("sweep.axis1", link.sweep_axis1);
    if (!link.sweep_axis2.empty()) put("sweep.axis2", link.sweep_axis2);
    if (link.sweep_fixed) put("sweep.fixed", "1");
    t += ';';
    t += kEnd;
    // The decoder is the one statement of what is valid: a value it refuses is refused here, by the same message.
    if (DecodeConfigLink(t) != link)
        throw Error("link", "the configuration does not read back the same from its own encoding");
    return t;
}

ConfigLink DecodeConfigLink(std::string_view text) {
    if (text.size() > kMaxLinkBytes)
        throw Error("link", "is " + std::to_string(text.size()) + " bytes, at most " + std::to_string(kMaxLinkBytes) +
                                " are read");
    ConfigLink link;
    std::vector<std::string> seen;
    bool ended = false;
    size_t start = 0;
    for (int index = 0;; ++index) {
        const size_t semi = text.find(';', start);
        const std::string_view entry =
            text.substr(start, semi == std::string_view::npos ? std::string_view::npos : semi - start);
        if (index == 0) {
            if (entry != kVersion) {
                if (!entry.empty() && entry[0] == 'v' && entry.find('=') == std::string_view::npos)
                    throw Error("link", "unknown version " + Quoted(entry) + "; this page reads v1");
                throw Error("link", "must start with the version \"v1;\", got " + Quoted(text));
            }
        } else if (entry == kEnd) {
            if (semi != std::string_view::npos)
                throw Error("link", "\"end\" must be the last entry, got " + Quoted(text.substr(semi)) + " after it");
            ended = true;
        } else {
            if (entry.empty())
                throw Error("link", "empty entry " + std::to_string(index) + " (two ';' in a row, or one at the end)");
            const size_t eq = entry.find('=');
            if (eq == std::string_view::npos || eq == 0)
                throw Error("link", "entry " + std::to_string(index) + " is not key=value: " + Quoted(entry));
            const std::string key(entry.substr(0, eq));
            if (std::find(seen.begin(), seen.end(), key) != seen.end())
                throw Error(Clip(key), "given twice in the link");
            seen.push_back(key);
            SetKey(link, key, entry.substr(eq + 1));
        }
        if (semi == std::string_view::npos) break;
        start = semi + 1;
    }
    if (!ended) throw Error("link", "does not end with \";end\": it was cut short (copy the whole link)");
    if (link.model.empty()) throw Error("model", "missing from the link (the model preset id, \"model=llama3-8b\")");
    if (link.parallel.empty()) throw Error("parallel", "missing from the link (the split, \"parallel=tp=8,dp=4\")");
    if (link.serve.empty() && link.serve_edits != LinkServeEdits{})
        throw Error("serve", "serving edits (serve.<field>) need the serving preset they edit (\"serve=...\")");
    if (link.system.empty() && !link.levels.empty())
        throw Error("net." + std::to_string(link.levels[0].level),
                    "a network-level edit needs a system (\"system=...\")");
    if (link.system.empty() && link.power_limit_w)
        throw Error("power_limit", "a power limit needs a system (\"system=...\") whose GPU it limits");
    return link;
}

}  // namespace sc
