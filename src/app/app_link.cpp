// The page's state as a link and back (the format and its rules: src/link/config_link.h). A link names presets
// and the edits made since, so this side maps between AppState and ConfigLink and checks what only the page
// knows: which presets exist and how many network levels the chosen system has.
#include <optional>
#include <string>

#include "app/app.h"
#include "app/app_state.h"
#include "app/serve_link.h"
#include "config/error.h"
#include "link/config_link.h"
#include "parallel/parallel_config.h"

namespace sc::app {

namespace {

// serve.decode_system's value for a decode pool beside the prefill pool, on the page's cluster (no preset has this id).
constexpr const char* kSharedCluster = "shared";

// The Sweeps view's first axis as it opens (SweepState's defaults).
constexpr const char* kDefaultSweepAxis = "flops=0.5,1,2,4";

// The Sweeps view's axes for the link: each one that parses and differs from the view's default. A half-typed
// value is left out rather than written into a link that could not be opened.
void SweepAxesOf(const AppState& s, ConfigLink& l) {
    std::vector<std::string> args;
    try {
        args = SweepAxisArgs(s);
    } catch (const Error&) {
        return;  // the same axis twice: not a sweep yet
    }
    for (size_t i = 0; i < args.size(); ++i) {
        SweepAxes probe;
        try {
            ParseSweepAxis(args[i], probe);
        } catch (const Error&) {
            continue;
        }
        if (args[i].find(';') != std::string::npos) continue;
        if (i == 0 && args[i] != kDefaultSweepAxis) l.sweep_axis1 = args[i];
        if (i == 1) l.sweep_axis2 = args[i];
    }
}

std::string IdOf(const std::string& file) {
    return file.size() > 5 && file.ends_with(".json") ? file.substr(0, file.size() - 5) : file;
}

template <typename List>
int IndexOf(const List& list, const std::string& id) {
    for (size_t i = 0; i < list.size(); ++i)
        if (IdOf(list[i].file) == id) return static_cast<int>(i);
    return -1;
}

template <typename List>
std::string Ids(const List& list) {
    std::string out;
    for (const auto& p : list) out += (out.empty() ? "" : ", ") + IdOf(p.file);
    return out.empty() ? "none" : out;
}

template <typename T>
std::optional<T> IfEdited(const T& now, const T& preset) {
    return now == preset ? std::nullopt : std::optional<T>(now);
}

// Everything a link asks of this page, checked before anything changes (a refused link changes nothing but
// the reset to defaults).
struct Resolved {
    int preset = -1, system = -1;
    int serving = -1;  // the serving preset (-1: the page has none)
    ParallelConfig parallel;
};

Resolved Resolve(const AppState& s, const ConfigLink& l) {
    Resolved r;
    r.preset = IndexOf(s.presets, l.model);
    if (r.preset < 0)
        throw Error("model", "no model preset \"" + l.model + "\" on this page; it has " + Ids(s.presets));
    if (!s.presets[r.preset].config.is_moe())
        for (const auto& [key, set] : {std::pair{"experts", l.experts.has_value()},
                                       {"top_k", l.top_k.has_value()},
                                       {"expert_ffn", l.expert_ffn.has_value()},
                                       {"moe_every", l.moe_every.has_value()},
                                       {"moe_latent", l.moe_latent.has_value()},
                                       {"load_imbalance", l.load_imbalance.has_value()},
                                       {"routing", l.contiguous_routing.has_value()}})
            if (set) throw Error(key, "\"" + l.model + "\" is not a mixture-of-experts model, so it has no " + key);
    if (l.scaling) {
        const Precision compute = l.precision ? *l.precision : s.presets[r.preset].config.precision.compute;
        if (const std::string e = ScalingMismatch(compute, *l.scaling); !e.empty()) throw Error("scaling", e);
    }
    if (l.bf16_first || l.bf16_last || l.bf16_modules) {  // the preset with the edits they are checked against
        ModelConfig m = s.presets[r.preset].config;
        if (l.layers) m.layers = *l.layers;
        if (l.experts) m.moe.experts = *l.experts;
        if (l.moe_latent) m.moe.latent = *l.moe_latent;
        if (l.mtp_layers) m.mtp_layers = *l.mtp_layers;
        if (l.hybrid) m.hybrid = *l.hybrid;
        if (l.precision) SetComputePrecision(m, *l.precision);
        if (l.scaling) m.precision.scaling = *l.scaling;
        if (l.bf16_first) m.precision.bf16_first_layers = *l.bf16_first;
        if (l.bf16_last) m.precision.bf16_last_layers = *l.bf16_last;
        if (l.bf16_modules) m.precision.bf16_modules = *l.bf16_modules;
        ValidateBf16Precision(m);
    }
    if (!l.system.empty()) {
        r.system = IndexOf(s.systems, l.system);
        if (r.system < 0)
            throw Error("system", "no system preset \"" + l.system + "\" on this page; it has " + Ids(s.systems));
        const size_t n = s.systems[r.system].preset_levels.size();
        for (const LinkLevelEdit& e : l.levels) {
            if (static_cast<size_t>(e.level) >= n)
                throw Error("net." + std::to_string(e.level), "\"" + l.system + "\" has " + std::to_string(n) +
                                                                  " network levels, net.0 to net." +
                                                                  std::to_string(n - 1));
            const NetworkLevel& level = s.systems[r.system].preset_levels[e.level];
            if (e.wraparound && level.kind != LevelKind::torus)
                throw Error("net." + std::to_string(e.level) + ".wrap",
                            "only torus levels close into a ring; " + level.name + " is " + NameOf(level.kind));
            if (e.in_network_reduction && *e.in_network_reduction && level.kind == LevelKind::torus)
                throw Error("net." + std::to_string(e.level) + ".inr",
                            level.name + " is a torus level: it has no switch to reduce in");
        }
        if (l.power_limit_w)
            ValidatePowerLimit(s.systems[r.system].system.accelerator, *l.power_limit_w, "power_limit");
    }
    const auto& serving = s.inference.presets;
    r.serving = serving.empty() ? -1 : 0;
    if (!l.serve.empty()) {
        r.serving = IndexOf(serving, l.serve);
        if (r.serving < 0)
            throw Error("serve", "no serving preset \"" + l.serve + "\" on this page; it has " + Ids(serving));
    }
    if (const auto& id = l.serve_edits.decode_system; id && *id != kSharedCluster && IndexOf(s.systems, *id) < 0)
        throw Error("serve.decode_system", "no system preset \"" + *id + "\" on this page; it has " + Ids(s.systems) +
                                               " (or " + kSharedCluster + ": the page's cluster)");
    r.parallel = ParseParallelSpec(l.parallel);
    return r;
}

}  // namespace

std::string LinkState(const AppState& s) {
    if (!s.has_model || s.preset_index < 0)
        throw Error("model", "the current model is not one of the page's presets, and a link names a preset");
    const Preset& preset = s.presets[s.preset_index];
    const ModelConfig& m = s.model;
    const ModelConfig& b = preset.config;
    ConfigLink l;
    l.model = IdOf(preset.file);
    l.layers = IfEdited(m.layers, b.layers);
    l.hidden = IfEdited(m.hidden, b.hidden);
    l.heads = IfEdited(m.heads, b.heads);
    l.kv_heads = IfEdited(m.kv_heads, b.kv_heads);
    l.ffn = IfEdited(m.ffn, b.ffn);
    l.vocab = IfEdited(m.vocab, b.vocab);
    l.seq = IfEdited(m.seq, b.seq);
    l.experts = IfEdited(m.moe.experts, b.moe.experts);
    l.top_k = IfEdited(m.moe.top_k, b.moe.top_k);
    l.expert_ffn = IfEdited(m.moe.expert_ffn, b.moe.expert_ffn);
    l.moe_every = IfEdited(m.moe.every, b.moe.every);
    l.moe_latent = IfEdited(m.moe.latent, b.moe.latent);
    l.load_imbalance = IfEdited(m.moe.load_imbalance, b.moe.load_imbalance);
    l.window = IfEdited(m.window.size, b.window.size);
    l.full_every = IfEdited(m.window.full_every, b.window.full_every);
    l.mtp_layers = IfEdited(m.mtp_layers, b.mtp_layers);
    if (m.hybrid != b.hybrid) l.hybrid = m.hybrid;
    if (m.moe.routing != b.moe.routing) l.contiguous_routing = m.moe.routing == MoeRouting::contiguous;
    if (m.window.chunked != b.window.chunked) l.chunked_window = m.window.chunked;
    // Gradient and activation precisions change only with the compute precision (SetComputePrecision), so
    // naming the compute precision whenever any of the three differs reproduces all three.
    if (m.precision.compute != b.precision.compute || m.precision.grad != b.precision.grad ||
        m.precision.activation != b.precision.activation)
        l.precision = m.precision.compute;
    if (m.precision.scaling != b.precision.scaling) l.scaling = m.precision.scaling;
    l.bf16_first = IfEdited(m.precision.bf16_first_layers, b.precision.bf16_first_layers);
    l.bf16_last = IfEdited(m.precision.bf16_last_layers, b.precision.bf16_last_layers);
    l.bf16_modules = IfEdited(m.precision.bf16_modules, b.precision.bf16_modules);
    if (s.system_index >= 0) {
        const SystemPreset& sp = s.systems[s.system_index];
        l.system = IdOf(sp.file);
        for (size_t i = 0; i < sp.system.levels.size() && i < sp.preset_levels.size(); ++i) {
            const NetworkLevel& now = sp.system.levels[i];
            const NetworkLevel& was = sp.preset_levels[i];
            LinkLevelEdit e{static_cast<int>(i),
                            IfEdited(now.bandwidth_gbps, was.bandwidth_gbps),
                            IfEdited(now.latency_us, was.latency_us),
                            IfEdited(now.efficiency, was.efficiency),
                            IfEdited(now.in_network_reduction, was.in_network_reduction),
                            IfEdited(now.wraparound, was.wraparound)};
            if (e.bandwidth_gbps || e.latency_us || e.efficiency || e.in_network_reduction || e.wraparound)
                l.levels.push_back(e);
        }
        l.power_limit_w = sp.system.accelerator.power_limit_w;  // presets set none: any is an edit
    }
    l.parallel = ParallelSpecString(s.parallel);
    l.overlap_dp = s.options.overlap_dp;
    l.overlap_pp = s.options.overlap_pp;
    l.overlap_tp = s.options.overlap_tp;
    l.in_network_reduction = s.options.in_network_reduction;
    l.tokens = s.options.tokens_to_train;
    l.host_link_gbps = s.options.host_link_gbps;
    l.flash_attention = s.options.kernels.flash_attention;
    l.dropout = s.options.kernels.dropout;
    l.grad_accumulation_fusion = s.options.kernels.grad_accumulation_fusion;
    l.fused_elementwise = s.options.kernels.fused_elementwise;
    l.deepep_dispatch = s.options.kernels.deepep_dispatch;
    l.fp8_dispatch = s.options.kernels.fp8_dispatch;
    l.framework_gemm = s.options.framework_gemm;
    l.attention_kernel = s.options.attention_kernel;
    l.pp_scatter_gather = s.options.kernels.pp_scatter_gather;
    l.search_gpus = s.search.gpus;
    l.search_uneven = s.search.uneven;
    // The Serving tab: named when it is not the first serving preset unedited.
    const InferenceState& q = s.inference;
    if (q.base_index >= 0 && q.has_config) {
        const ServingDescription& base = q.presets[q.base_index].description;
        l.serve_edits = ServeEditsOf(base.config, q.config);
        if (q.decode_system != base.decode_system_id)
            l.serve_edits.decode_system = q.decode_system.empty() ? kSharedCluster : q.decode_system;
        if (q.base_index != 0 || l.serve_edits != LinkServeEdits{}) l.serve = IdOf(q.presets[q.base_index].file);
    }
    l.view = s.view == View::search ? "search" : s.view == View::serving ? "serving" : "estimate";
    l.sweeps = s.sweeps_open;
    SweepAxesOf(s, l);
    l.sweep_fixed = s.sweep.fixed_layout;
    return EncodeConfigLink(l);
}

std::string ApplyLink(AppState& s, const std::string& text, LinkApply how) {
    ConfigLink l;
    Resolved r;
    try {
        l = DecodeConfigLink(text);
        r = Resolve(s, l);
    } catch (const Error& e) {
        const std::string what = e.what();
        RejectLink(s, what.starts_with("link: ") ? what : "link: " + what);
        return s.link_error;
    }
    // One Recompute, of the whole state, at the end (each of these used to recompute a state about to change).
    ResetInputsToDefaults(s);
    s.preset_index = r.preset;
    SetModel(s, s.presets[r.preset].config);
    ModelConfig& m = s.model;
    for (auto [field, value] : {std::pair{&m.layers, l.layers},
                                {&m.hidden, l.hidden},
                                {&m.heads, l.heads},
                                {&m.kv_heads, l.kv_heads},
                                {&m.ffn, l.ffn},
                                {&m.vocab, l.vocab},
                                {&m.seq, l.seq},
                                {&m.moe.experts, l.experts},
                                {&m.moe.top_k, l.top_k},
                                {&m.moe.expert_ffn, l.expert_ffn},
                                {&m.moe.every, l.moe_every},
                                {&m.moe.latent, l.moe_latent},
                                {&m.window.size, l.window},
                                {&m.window.full_every, l.full_every},
                                {&m.mtp_layers, l.mtp_layers}})
        if (value) *field = *value;
    if (l.hybrid) m.hybrid = *l.hybrid;
    if (l.load_imbalance) m.moe.load_imbalance = *l.load_imbalance;
    if (l.contiguous_routing) m.moe.routing = *l.contiguous_routing ? MoeRouting::contiguous : MoeRouting::uniform;
    if (l.chunked_window) m.window.chunked = *l.chunked_window;
    if (l.precision) SetComputePrecision(m, *l.precision);
    if (l.scaling) m.precision.scaling = *l.scaling;                  // checked against the precision in Resolve
    if (l.bf16_first) m.precision.bf16_first_layers = *l.bf16_first;  // checked with the model (ValidateModelConfig)
    if (l.bf16_last) m.precision.bf16_last_layers = *l.bf16_last;
    if (l.bf16_modules) m.precision.bf16_modules = *l.bf16_modules;
    s.system_index = r.system;
    if (r.system >= 0)
        for (const LinkLevelEdit& e : l.levels) {
            NetworkLevel& level = s.systems[r.system].system.levels[e.level];
            if (e.bandwidth_gbps) level.bandwidth_gbps = *e.bandwidth_gbps;
            if (e.latency_us) level.latency_us = *e.latency_us;
            if (e.efficiency) level.efficiency = *e.efficiency;
            if (e.in_network_reduction) level.in_network_reduction = *e.in_network_reduction;
            if (e.wraparound) level.wraparound = *e.wraparound;
        }
    if (r.system >= 0) s.systems[r.system].system.accelerator.power_limit_w = l.power_limit_w;
    s.parallel = r.parallel;
    s.options.overlap_dp = l.overlap_dp;
    s.options.overlap_pp = l.overlap_pp;
    s.options.overlap_tp = l.overlap_tp;
    s.options.in_network_reduction = l.in_network_reduction;
    s.options.tokens_to_train = l.tokens;
    s.options.host_link_gbps = l.host_link_gbps;
    s.options.kernels = {l.flash_attention,   l.dropout,           l.grad_accumulation_fusion,
                         l.pp_scatter_gather, l.fused_elementwise, l.deepep_dispatch,
                         l.fp8_dispatch};
    s.options.attention_kernel = l.attention_kernel;
    s.options.framework_gemm = l.framework_gemm;
    s.search.gpus = l.search_gpus;
    s.search.uneven = l.search_uneven;
    if (r.serving >= 0) {
        SetServingDescription(s, r.serving);
        ApplyServeEdits(l.serve_edits, s.inference.config);
        if (const auto& id = l.serve_edits.decode_system) s.inference.decode_system = *id == kSharedCluster ? "" : *id;
        if (l.serve_edits != LinkServeEdits{}) s.inference.preset_index = -1;  // "edited", as the tab shows it
    }
    s.view = l.view == "search" ? View::search : l.view == "serving" ? View::serving : View::estimate;
    s.sweeps_open = l.sweeps;
    SetSweepAxes(s, l.sweep_axis1.empty() ? kDefaultSweepAxis : l.sweep_axis1, l.sweep_axis2);
    s.sweep.fixed_layout = l.sweep_fixed;
    s.apply_views = true;
    if (how == LinkApply::evaluate) {
        Recompute(s);
    } else {
        try {
            if (s.derive_head_dim) DeriveHeadDim(s.model);  // as Recompute does before it takes the request
        } catch (const Error&) {
            // The request's model is refused where it is used, as it is on the page.
        }
    }
    return "";
}

void RejectLink(AppState& s, const std::string& message) {
    ResetToDefaults(s);
    s.link_error = message;  // after the reset: its Recompute clears the message
}

bool TakeCopyLinkRequest(AppState& s) {
    const bool r = s.copy_link_requested;
    s.copy_link_requested = false;
    return r;
}

void SetLinkNote(AppState& s, const std::string& note) { s.link_note = note; }

}  // namespace sc::app
