#include "config/model_config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "config/error.h"
#include "config/json_fields.h"
#include "config/numbers.h"

namespace sc {

static Precision ReadPrecision(JsonFields& f, const char* key, Precision fallback) {
    std::string v = f.Choice(key, {"fp32", "bf16", "fp16", "fp8", "fp4"}, NameOf(fallback));
    Precision p = fallback;
    ParsePrecision(v, &p);
    return p;
}

ModelConfig ParseModelConfig(std::string_view json_text) {
    nlohmann::json doc = ParseJsonText(json_text, "model preset");
    JsonFields f(doc, "");
    ModelConfig m;
    m.name = f.String("name");
    m.source = f.String("source", "");
    m.layers = f.PositiveInt("layers");
    m.hidden = f.PositiveInt("hidden");
    m.heads = f.PositiveInt("heads");
    m.kv_heads = f.PositiveInt("kv_heads", m.heads);
    m.head_dim = f.PositiveInt("head_dim", 0 /* derived below */);
    m.ffn = f.PositiveInt("ffn");
    m.vocab = f.PositiveInt("vocab");
    m.seq = f.PositiveInt("seq");
    const std::string mlp = f.Choice("mlp", {"gelu", "swiglu", "relu2"}, "gelu");
    m.mlp = mlp == "gelu" ? MlpKind::gelu : mlp == "swiglu" ? MlpKind::swiglu : MlpKind::relu2;
    m.norm = f.Choice("norm", {"layernorm", "rmsnorm"}, "layernorm") == "layernorm" ? NormKind::layernorm
                                                                                    : NormKind::rmsnorm;
    const std::string position = f.Choice("position", {"learned", "rotary", "none"}, "learned");
    m.position = position == "learned"  ? PositionKind::learned
                 : position == "rotary" ? PositionKind::rotary
                                        : PositionKind::none;
    m.tied_embeddings = f.Bool("tied_embeddings", true);
    m.bias = f.Bool("bias", false);
    m.mtp_layers = f.NonNegativeInt("mtp_layers", 0);
    m.mtp_pattern = f.String("mtp_pattern", "");
    m.mtp_repeated = f.Bool("mtp_repeated_layer", false);
    m.hybrid = f.String("hybrid_pattern", "");
    if (const nlohmann::json* j = f.Object("mamba")) {
        JsonFields g(*j, "mamba");
        m.mamba.heads = g.PositiveInt("heads");
        m.mamba.head_dim = g.PositiveInt("head_dim", m.mamba.head_dim);
        m.mamba.state = g.PositiveInt("state", m.mamba.state);
        m.mamba.groups = g.PositiveInt("groups", m.mamba.groups);
        m.mamba.conv_kernel = g.PositiveInt("conv_kernel", m.mamba.conv_kernel);
        g.RejectUnknown();
    }
    if (const nlohmann::json* j = f.Object("moe")) {
        JsonFields g(*j, "moe");
        m.moe.experts = g.PositiveInt("experts");
        m.moe.top_k = g.PositiveInt("top_k");
        m.moe.shared_experts = g.NonNegativeInt("shared_experts", 0);
        m.moe.expert_ffn = g.PositiveInt("expert_ffn", m.ffn);
        m.moe.dense_layers = g.NonNegativeInt("dense_layers", 0);
        m.moe.every = g.PositiveInt("every", 1);
        m.moe.capacity_factor = g.NonNegativeNumber("capacity_factor", 0, kMaxCapacityFactor);
        m.moe.load_imbalance = g.NonNegativeNumber("load_imbalance", 1, kMaxCapacityFactor);
        m.moe.router_groups = g.NonNegativeInt("router_groups", 0);
        m.moe.router_group_topk = g.NonNegativeInt("router_group_topk", 0);
        m.moe.latent = g.NonNegativeInt("latent", 0);
        m.moe.routing = g.Choice("routing", {"uniform", "contiguous"}, "uniform") == "uniform" ? MoeRouting::uniform
                                                                                               : MoeRouting::contiguous;
        g.RejectUnknown();
    }
    if (const nlohmann::json* j = f.Object("mla")) {
        JsonFields g(*j, "mla");
        m.mla.q_lora_rank = g.NonNegativeInt("q_lora_rank", 0);
        m.mla.kv_lora_rank = g.PositiveInt("kv_lora_rank");
        m.mla.qk_nope_head_dim = g.PositiveInt("qk_nope_head_dim");
        m.mla.qk_rope_head_dim = g.PositiveInt("qk_rope_head_dim");
        m.mla.v_head_dim = g.PositiveInt("v_head_dim");
        g.RejectUnknown();
    }
    if (const nlohmann::json* j = f.Object("sliding_window")) {
        JsonFields g(*j, "sliding_window");
        m.window.size = g.PositiveInt("size");
        m.window.full_every = g.NonNegativeInt("full_every", 0);
        m.window.chunked = g.Bool("chunked", false);
        g.RejectUnknown();
    }
    if (const nlohmann::json* j = f.Object("precision")) {
        JsonFields g(*j, "precision");
        m.precision.compute = ReadPrecision(g, "compute", m.precision.compute);
        // Gradients default to the compute precision, but never below bf16 (fp8 training keeps bf16
        // gradients: DeepSeek-V3 report sec. 3.3).
        Precision grad_default = BytesOf(m.precision.compute) < 2 ? Precision::bf16 : m.precision.compute;
        m.precision.grad = ReadPrecision(g, "grad", grad_default);
        m.precision.activation = ReadPrecision(g, "activation", grad_default);
        m.precision.master = ReadPrecision(g, "master", m.precision.master);
        m.precision.optimizer = ReadPrecision(g, "optimizer", m.precision.optimizer);
        const std::string scaling =
            g.Choice("scaling", {"auto", "delayed", "current", "block", "mx", "nvfp4"}, NameOf(Scaling::automatic));
        ParseScaling(scaling, &m.precision.scaling);
        m.precision.bf16_first_layers = g.NonNegativeInt("bf16_first_layers", 0);
        m.precision.bf16_last_layers = g.NonNegativeInt("bf16_last_layers", 0);
        if (const std::string modules = g.String("bf16_modules", ""); !modules.empty()) {
            std::string bad;
            if (!ParseBf16Modules(modules, &m.precision.bf16_modules, &bad))
                throw Error("precision.bf16_modules", "\"" + bad +
                                                          "\" is not one of attention, mlp, experts, "
                                                          "shared_experts, latent, mamba, mtp (joined by '+')");
        }
        g.RejectUnknown();
    }
    f.RejectUnknown();
    if (m.head_dim == 0) DeriveHeadDim(m);
    ValidateModelConfig(m);
    return m;
}

void DeriveHeadDim(ModelConfig& m) {
    IntegerIn("heads", m.heads, std::to_string(m.heads), 1, kMaxModelDim);
    if (m.hidden % m.heads != 0)
        throw Error("heads", std::to_string(m.heads) + " attention heads do not divide hidden size " +
                                 std::to_string(m.hidden) + " (give head_dim explicitly, or pick heads dividing " +
                                 std::to_string(m.hidden) + ")");
    m.head_dim = m.hidden / m.heads;
}

static void RequirePositive(const char* field, long long v) {
    IntegerIn(field, static_cast<double>(v), std::to_string(v), 1, kMaxModelDim);
}

// PrecisionConfig::bf16_modules: modules the model has, in a model whose GEMMs run narrower than 16 bits.
// bf16_first_layers / bf16_last_layers: at most every layer, only where GEMMs run narrower than 16 bits, and not under
// delayed scaling, which Megatron-Core refuses ("Delayed scaling does not support first / last layer in BF16",
// fp8_utils.py get_fp8_context: its amax reduction spans one fp8_autocast region).
void ValidateBf16Precision(const ModelConfig& m) {
    const PrecisionConfig& p = m.precision;
    if (p.bf16_modules) {
        const std::string given = Bf16ModulesString(p.bf16_modules);
        if (BytesOf(p.compute) >= 2)
            throw Error("precision.bf16_modules", "\"" + given + "\" kept in BF16, but precision.compute is " +
                                                      NameOf(p.compute) +
                                                      ": every GEMM already runs in 16 bits (valid: none, or fp8/fp4)");
        for (int i = 0; i < kBf16ModuleCount; ++i)
            if ((p.bf16_modules & (1u << i)) && !(m.modules() & (1u << i)))
                throw Error("precision.bf16_modules", "\"" + std::string(kBf16ModuleNames[i]) + "\": " + m.name +
                                                          " has no such module (it has " +
                                                          Bf16ModulesString(m.modules()) + ")");
    }
    for (const auto& [field, n] : {std::pair{"precision.bf16_first_layers", p.bf16_first_layers},
                                   std::pair{"precision.bf16_last_layers", p.bf16_last_layers}}) {
        IntegerIn(field, n, std::to_string(n), 0, m.layers);
        if (n == 0) continue;
        if (BytesOf(p.compute) >= 2)
            throw Error(field, std::to_string(n) + " layers kept in BF16, but precision.compute is " +
                                   NameOf(p.compute) + ": every GEMM already runs in 16 bits (valid: 0, or fp8/fp4)");
        if (ResolvedScaling(p.compute, p.scaling) == Scaling::delayed)
            throw Error(field, std::to_string(n) +
                                   " layers kept in BF16 under delayed scaling, which Megatron-Core refuses (valid: "
                                   "0, or precision.scaling current, block or mx)");
    }
}

// A hybrid pattern: one known symbol a layer, the Mamba and MoE settings its symbols need, and none of the
// transformer-only layouts (leading dense layers, every n-th MoE, windows, MTP modules) it would contradict.
static void ValidateHybrid(const ModelConfig& m) {
    if (!m.is_hybrid()) {
        if (m.mamba.heads > 0)
            throw Error("mamba",
                        "describes Mamba layers, but hybrid_pattern is empty: give hybrid_pattern (M for a "
                        "Mamba layer) or leave mamba out");
        return;
    }
    const std::string& p = m.hybrid;
    const size_t bad = p.find_first_not_of("M*-E");
    if (bad != std::string::npos)
        throw Error("hybrid_pattern", std::string("symbol '") + p[bad] + "' at layer " + std::to_string(bad) +
                                          " is not one of M (Mamba), * (attention), - (MLP), E (MoE)");
    if (static_cast<long long>(p.size()) != m.layers)
        throw Error("hybrid_pattern", "has " + std::to_string(p.size()) +
                                          " symbols for layers=" + std::to_string(m.layers) + " (one symbol a layer)");
    const bool mamba = p.find('M') != std::string::npos, moe = p.find('E') != std::string::npos;
    if (mamba && m.mamba.heads <= 0)
        throw Error("mamba.heads",
                    "the pattern's M layers need a Mamba mixer: give mamba.heads (and head_dim, "
                    "state, groups, conv_kernel, or their defaults 64, 128, 8, 4)");
    if (mamba) {
        RequirePositive("mamba.head_dim", m.mamba.head_dim);
        RequirePositive("mamba.state", m.mamba.state);
        RequirePositive("mamba.groups", m.mamba.groups);
        IntegerIn("mamba.conv_kernel", m.mamba.conv_kernel, std::to_string(m.mamba.conv_kernel), 1, 64);
        if (m.mamba.heads % m.mamba.groups != 0)
            throw Error("mamba.groups", std::to_string(m.mamba.groups) + " groups do not divide " +
                                            std::to_string(m.mamba.heads) + " Mamba heads");
    }
    if (moe != m.is_moe())
        throw Error(moe ? "moe" : "hybrid_pattern",
                    moe ? "the pattern's E layers need the MoE settings (moe.experts, top_k, expert_ffn)"
                        : "moe describes experts, but the pattern has no E layer for them");
    if (m.is_moe() && (m.moe.dense_layers != 0 || m.moe.every != 1))
        throw Error(
            m.moe.dense_layers != 0 ? "moe.dense_layers" : "moe.every",
            "a hybrid model places its MoE layers by the pattern's E symbols; leave dense_layers 0 and every 1");
    if (m.has_window())
        throw Error("sliding_window", "windowed attention in a hybrid model is not modelled; leave sliding_window out");
    if (m.mtp_layers > 0) {
        if (m.mtp_pattern.empty())
            throw Error("mtp_pattern",
                        "a hybrid model's MTP module is a pattern of its own layer symbols (Nemotron "
                        "3 Super: \"*E\"); give mtp_pattern or set mtp_layers 0");
        const size_t at = m.mtp_pattern.find_first_not_of("M*-E");
        if (at != std::string::npos)
            throw Error("mtp_pattern", std::string("symbol '") + m.mtp_pattern[at] + "' at " + std::to_string(at) +
                                           " is not one of M (Mamba), * (attention), - (MLP), E (MoE)");
        if (m.mtp_pattern.find('M') != std::string::npos && m.mamba.heads <= 0)
            throw Error("mtp_pattern", "has an M layer, but the model has no Mamba mixer (mamba.heads)");
        if (m.mtp_pattern.find('E') != std::string::npos && !m.is_moe())
            throw Error("mtp_pattern", "has an E layer, but the model has no MoE settings (moe)");
        IntegerIn("mtp_pattern", static_cast<double>(m.mtp_pattern.size()), m.mtp_pattern, 1, m.layers);
    }
}

void ValidateModelConfig(const ModelConfig& m) {
    if (m.name.empty()) throw Error("name", "must not be empty");
    RequirePositive("layers", m.layers);
    RequirePositive("hidden", m.hidden);
    RequirePositive("heads", m.heads);
    RequirePositive("kv_heads", m.kv_heads);
    RequirePositive("head_dim", m.head_dim);
    RequirePositive("ffn", m.ffn);
    RequirePositive("vocab", m.vocab);
    RequirePositive("seq", m.seq);
    // DeepSeek-V3 trains one module, Nemotron-H two; more modules than layers would be a second model.
    IntegerIn("mtp_layers", m.mtp_layers, std::to_string(m.mtp_layers), 0, m.layers);
    if (!m.is_mla() && m.heads % m.kv_heads != 0)
        throw Error("kv_heads", std::to_string(m.kv_heads) + " key/value heads do not divide " +
                                    std::to_string(m.heads) + " attention heads");
    ValidateHybrid(m);
    if (const std::string e = ScalingMismatch(m.precision.compute, m.precision.scaling); !e.empty())
        throw Error("precision.scaling", e);
    ValidateBf16Precision(m);
    if (!m.is_hybrid() && !m.mtp_pattern.empty())
        throw Error("mtp_pattern",
                    "is a hybrid model's MTP layers; a transformer's MTP module repeats its last "
                    "layer: leave mtp_pattern out");
    if (m.moe.latent != 0) {
        if (!m.is_moe()) throw Error("moe.latent", "needs routed experts (moe.experts)");
        IntegerIn("moe.latent", m.moe.latent, std::to_string(m.moe.latent), 1, kMaxModelDim);
    }
    if (m.is_moe()) {
        RequirePositive("moe.top_k", m.moe.top_k);
        RequirePositive("moe.expert_ffn", m.moe.expert_ffn);
        if (m.moe.top_k > m.moe.experts)
            throw Error("moe.top_k", "top_k=" + std::to_string(m.moe.top_k) + " exceeds " +
                                         std::to_string(m.moe.experts) + " experts");
        const double most = static_cast<double>(m.moe.experts) / m.moe.top_k;  // every token picks one expert
        if (m.moe.load_imbalance < 1 || m.moe.load_imbalance > most)
            throw Error("moe.load_imbalance", "must be from 1 (balanced) to experts / top_k = " + Shown(most) +
                                                  " (every token routed to the hottest expert), got " +
                                                  Shown(m.moe.load_imbalance));
        if (m.moe.load_imbalance != 1 && m.moe.capacity_factor > 0)
            throw Error("moe.load_imbalance",
                        "applies to dropless routing; with capacity_factor " + Shown(m.moe.capacity_factor) +
                            " every expert computes its padded capacity whatever its load (set one of the two)");
        const MoeConfig& e = m.moe;
        if ((e.router_groups > 0) != (e.router_group_topk > 0))
            throw Error(e.router_groups > 0 ? "moe.router_group_topk" : "moe.router_groups",
                        "group-limited routing needs both router_groups and router_group_topk (or neither), got " +
                            std::to_string(e.router_groups) + " and " + std::to_string(e.router_group_topk));
        if (e.router_groups > 0) {
            if (e.experts % e.router_groups != 0)
                throw Error("moe.router_groups", std::to_string(e.router_groups) + " groups do not divide " +
                                                     std::to_string(e.experts) + " experts");
            if (e.router_group_topk > e.router_groups)
                throw Error("moe.router_group_topk",
                            "must be at most router_groups = " + std::to_string(e.router_groups) + ", got " +
                                std::to_string(e.router_group_topk));
            if (static_cast<long long>(e.router_group_topk) * (e.experts / e.router_groups) < e.top_k)
                throw Error("moe.router_group_topk", std::to_string(e.router_group_topk) + " groups of " +
                                                         std::to_string(e.experts / e.router_groups) +
                                                         " experts hold fewer than top_k = " + std::to_string(e.top_k));
        }
        if (m.moe.dense_layers >= m.layers)
            throw Error("moe.dense_layers", std::to_string(m.moe.dense_layers) +
                                                " dense layers leave no MoE layer of " + std::to_string(m.layers));
        IntegerIn("moe.every", m.moe.every, std::to_string(m.moe.every), 1, m.layers);
        if (m.moe_layers() == 0)
            throw Error("moe.every", "every " + std::to_string(m.moe.every) + "-th layer after the " +
                                         std::to_string(m.moe.dense_layers) + " dense ones leaves no MoE layer of " +
                                         std::to_string(m.layers) + ": lower every or dense_layers");
    }
    // size 0 turns the window off whatever full_every says (the page's "window" field set to 0).
    if (m.window.size != 0) {
        IntegerIn("sliding_window.size", m.window.size, std::to_string(m.window.size), 1, kMaxModelDim);
        if (m.window.full_every == 1)
            throw Error("sliding_window.full_every",
                        "1 keeps every layer full, so nothing is windowed: use 0 (every layer windowed), n >= 2 "
                        "(every n-th layer full), or leave sliding_window out");
        IntegerIn("sliding_window.full_every", m.window.full_every, std::to_string(m.window.full_every), 0,
                  kMaxModelDim);
    }
    if (m.is_mla()) {
        RequirePositive("mla.qk_nope_head_dim", m.mla.qk_nope_head_dim);
        RequirePositive("mla.qk_rope_head_dim", m.mla.qk_rope_head_dim);
        RequirePositive("mla.v_head_dim", m.mla.v_head_dim);
    }
}

int ModelConfig::moe_layers_in(int first, int count) const {
    if (!is_moe() || count <= 0 || moe.every < 1) return 0;
    if (is_hybrid()) return static_cast<int>(std::count(hybrid.begin() + first, hybrid.begin() + first + count, 'E'));
    // MoE layers are those i >= dense_layers with (i + 1) a multiple of every: multiples in lo + 1 .. hi.
    const int lo = std::max(first, moe.dense_layers), hi = first + count;
    return lo >= hi ? 0 : hi / moe.every - lo / moe.every;
}

ModelConfig::LayerKinds ModelConfig::layer_kinds(int first, int count, bool windows) const {
    LayerKinds k;
    if (count <= 0) return k;
    if (is_hybrid()) {
        for (int i = first; i < first + count; ++i) switch (hybrid[static_cast<size_t>(i)]) {
                case 'M': ++k.mamba; break;
                case '*': ++k.attention; break;
                case '-': ++k.mlp; break;
                default: ++k.moe_mlp; break;
            }
        return k;
    }
    if (!is_moe() || moe.every == 1) {  // the dense layers lead: two ranges
        const int dense = count - moe_layers_in(first, count);
        k.dense_window = windows ? windowed_layers(first, dense) : 0;
        k.moe_window = windows ? windowed_layers(first + dense, count - dense) : 0;
        k.dense = dense - k.dense_window;
        k.moe = count - dense - k.moe_window;
        return k;
    }
    for (int i = first; i < first + count; ++i) {  // interleaved: a stage's layers, at most the model's
        const bool w = windows && windowed_layer(i);
        if (moe_layer(i)) ++(w ? k.moe_window : k.moe);
        else ++(w ? k.dense_window : k.dense);
    }
    return k;
}

int ModelConfig::windowed_layers(int first, int count) const {
    if (!has_window() || is_hybrid() || count <= 0) return 0;
    if (window.full_every == 0) return count;
    // Full layers are those i with (i + 1) a multiple of full_every: multiples in first + 1 .. first + count.
    const int n = window.full_every;
    return count - ((first + count) / n - first / n);
}

double WindowedCausalPairs(double n, double window) {
    if (window <= 0 || n <= window) return n * (n + 1) / 2;
    return window * (window + 1) / 2 + (n - window) * window;
}

double LocalCausalPairs(double n, const SlidingWindow& w) {
    if (!w.chunked) return WindowedCausalPairs(n, w.size);
    const double C = w.size, q = std::floor(n / C), r = n - q * C;
    return q * C * (C + 1) / 2 + r * (r + 1) / 2;
}

double LocalKeys(double p, const SlidingWindow& w) {
    if (w.size <= 0) return p + 1;
    if (!w.chunked) return std::min(p + 1, static_cast<double>(w.size));
    return p - w.size * std::floor(p / w.size) + 1;
}

double MoeRankLoad(const MoeConfig& moe, int ep) {
    const double E = moe.experts, r = moe.load_imbalance, n = E / ep;
    if (E <= 1 || r == 1) return 1;
    return (r + (n - 1) * (E - r) / (E - 1)) / n;
}

std::string ModelConfigToJson(const ModelConfig& m) {
    nlohmann::ordered_json j;
    j["name"] = m.name;
    if (!m.source.empty()) j["source"] = m.source;
    j["layers"] = m.layers;
    j["hidden"] = m.hidden;
    j["heads"] = m.heads;
    j["kv_heads"] = m.kv_heads;
    j["head_dim"] = m.head_dim;
    j["ffn"] = m.ffn;
    j["vocab"] = m.vocab;
    j["seq"] = m.seq;
    j["mlp"] = m.mlp == MlpKind::gelu ? "gelu" : m.mlp == MlpKind::swiglu ? "swiglu" : "relu2";
    j["norm"] = m.norm == NormKind::layernorm ? "layernorm" : "rmsnorm";
    j["position"] = m.position == PositionKind::learned  ? "learned"
                    : m.position == PositionKind::rotary ? "rotary"
                                                         : "none";
    j["tied_embeddings"] = m.tied_embeddings;
    j["bias"] = m.bias;
    if (m.mtp_layers > 0) j["mtp_layers"] = m.mtp_layers;
    if (!m.mtp_pattern.empty()) j["mtp_pattern"] = m.mtp_pattern;
    if (m.mtp_repeated) j["mtp_repeated_layer"] = true;
    if (m.is_hybrid()) {
        j["hybrid_pattern"] = m.hybrid;
        if (m.mamba.heads > 0)
            j["mamba"] = {{"heads", m.mamba.heads},
                          {"head_dim", m.mamba.head_dim},
                          {"state", m.mamba.state},
                          {"groups", m.mamba.groups},
                          {"conv_kernel", m.mamba.conv_kernel}};
    }
    if (m.is_moe())
        j["moe"] = {{"experts", m.moe.experts},
                    {"top_k", m.moe.top_k},
                    {"shared_experts", m.moe.shared_experts},
                    {"expert_ffn", m.moe.expert_ffn},
                    {"dense_layers", m.moe.dense_layers},
                    {"every", m.moe.every},
                    {"capacity_factor", m.moe.capacity_factor},
                    {"load_imbalance", m.moe.load_imbalance}};
    if (m.is_moe() && m.moe.routing != MoeRouting::uniform) j["moe"]["routing"] = "contiguous";
    if (m.is_moe() && m.moe.latent > 0) j["moe"]["latent"] = m.moe.latent;
    if (m.is_moe() && m.moe.router_groups > 0) {
        j["moe"]["router_groups"] = m.moe.router_groups;
        j["moe"]["router_group_topk"] = m.moe.router_group_topk;
    }
    if (m.is_mla())
        j["mla"] = {{"q_lora_rank", m.mla.q_lora_rank},
                    {"kv_lora_rank", m.mla.kv_lora_rank},
                    {"qk_nope_head_dim", m.mla.qk_nope_head_dim},
                    {"qk_rope_head_dim", m.mla.qk_rope_head_dim},
                    {"v_head_dim", m.mla.v_head_dim}};
    if (m.has_window()) {
        j["sliding_window"] = {{"size", m.window.size}, {"full_every", m.window.full_every}};
        if (m.window.chunked) j["sliding_window"]["chunked"] = true;
    }
    j["precision"] = {{"compute", NameOf(m.precision.compute)},       {"grad", NameOf(m.precision.grad)},
                      {"master", NameOf(m.precision.master)},         {"optimizer", NameOf(m.precision.optimizer)},
                      {"activation", NameOf(m.precision.activation)}, {"scaling", NameOf(m.precision.scaling)}};
    if (m.precision.bf16_first_layers > 0) j["precision"]["bf16_first_layers"] = m.precision.bf16_first_layers;
    if (m.precision.bf16_last_layers > 0) j["precision"]["bf16_last_layers"] = m.precision.bf16_last_layers;
    if (m.precision.bf16_modules) j["precision"]["bf16_modules"] = Bf16ModulesString(m.precision.bf16_modules);
    return j.dump(2);
}

}  // namespace sc
