// The Model panel: preset, shape fields, precision, and what they imply (parameters, FLOPs per
// token, training-state bytes). Every edit recomputes at once; invalid input shows the error
// instead of numbers, never a NaN.
#include <cstdio>

#include "app/app.h"
#include "app/app_state.h"
#include "app/panels.h"
#include "imgui.h"
#include "report/format.h"
#include "report/model_report.h"

namespace sc::app {

static bool PrecisionCombo(const char* label, Precision* p) {
    static const Precision all[] = {Precision::fp32, Precision::bf16, Precision::fp16, Precision::fp8, Precision::fp4};
    bool changed = false;
    if (ImGui::BeginCombo(label, NameOf(*p))) {
        for (Precision q : all)
            if (ImGui::Selectable(NameOf(q), q == *p)) *p = q, changed = true;
        ImGui::EndCombo();
    }
    return changed;
}

// Transformer Engine's fp8 recipes (config/precision.h); fp4 has one (NVFP4), so no choice is offered there.
static bool Fp8ScalingCombo(Scaling& scaling) {
    static const Scaling all[] = {Scaling::automatic, Scaling::delayed, Scaling::current, Scaling::block, Scaling::mx};
    bool changed = false;
    if (ImGui::BeginCombo("fp8 scaling", NameOf(scaling))) {
        for (Scaling q : all)
            if (ImGui::Selectable(NameOf(q), q == scaling)) scaling = q, changed = true;
        ImGui::EndCombo();
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "how fp8 GEMM operands are scaled (Transformer Engine's recipes): delayed or current per-tensor, "
            "block (1x128 and 128x128, DeepSeek-V3's), mx (MXFP8, Blackwell); auto is delayed. It sets what "
            "quantizing costs: current scaling reads a tensor once more for its amax, block and mx quantize "
            "after the norm instead of inside it");
    return changed;
}

// The modules whose GEMMs stay in BF16 in an fp8 or fp4 model (PrecisionConfig::bf16_modules): a box for each
// module the model has.
static bool Bf16ModuleBoxes(ModelConfig& m) {
    bool changed = false;
    ImGui::TextUnformatted("BF16 modules:");
    const ImGuiStyle& style = ImGui::GetStyle();
    for (int i = 0; i < kBf16ModuleCount; ++i) {
        if (!(m.modules() & (1u << i))) continue;
        // On this line when the box and its label fit in what is left of it, else on the next.
        const float box =
            ImGui::GetFrameHeight() + style.ItemInnerSpacing.x + ImGui::CalcTextSize(kBf16ModuleNames[i]).x;
        ImGui::SameLine();
        if (ImGui::GetContentRegionAvail().x < box) ImGui::NewLine();
        const uint8_t bit = static_cast<uint8_t>(1u << i);
        bool on = m.precision.bf16_modules & bit;
        if (ImGui::Checkbox(kBf16ModuleNames[i], &on)) {
            m.precision.bf16_modules = on ? m.precision.bf16_modules | bit : m.precision.bf16_modules & ~bit;
            changed = true;
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "its GEMMs run in BF16 in every layer, as Megatron-Core's quant_recipe matchers keep "
                "them (Nemotron 3 Super's NVFP4 recipe: attention, latent, mtp)");
    }
    return changed;
}

// Text size for the whole page (besides the browser's zoom, which the page follows through devicePixelRatio).
static void DrawUiScale(AppState& s) {
    static const float kScales[] = {1.0f, 1.25f, 1.5f, 1.75f, 2.0f};
    char current[16];
    std::snprintf(current, sizeof current, "%.0f%%", 100 * s.ui_scale);
    ImGui::SetNextItemWidth(ImGui::CalcTextSize("000%").x + ImGui::GetFrameHeight() + 8);
    if (ImGui::BeginCombo("UI scale", current)) {
        for (float k : kScales) {
            char label[16];
            std::snprintf(label, sizeof label, "%.0f%%", 100 * k);
            if (ImGui::Selectable(label, k == s.ui_scale)) s.ui_scale = k;
        }
        ImGui::EndCombo();
    }
}

// A hybrid model's layer pattern (ModelConfig::hybrid), applied on Enter: its length must stay the layers', which
// the model's check says when it does not.
static bool HybridPatternField(ModelConfig& m) {
    char buf[4096];
    std::snprintf(buf, sizeof buf, "%s", m.hybrid.c_str());
    ImGui::SetNextItemWidth(320);
    const bool entered = ImGui::InputText("pattern", buf, sizeof buf, ImGuiInputTextFlags_EnterReturnsTrue);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "the hybrid model's layers, one symbol each (Megatron's hybrid_layer_pattern): M Mamba-2 mixer, * "
            "attention, - MLP, E MoE.\nNemotron-H 8B: M-M-M-M*-M-... (52). Its length is the layers. Enter applies.");
    if (!entered || buf[0] == '\0' || m.hybrid == buf) return false;
    m.hybrid = buf;
    return true;
}

void DrawModelPanel(AppState& s) {
    // First layout: Model and Parallelism side by side on top, Training along the bottom.
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(10, 10), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize(ImVec2(430, d.y * 0.62f - 15), ImGuiCond_FirstUseEver);
    ImGui::Begin("Model");
    if (!s.has_model) {
        ImGui::TextUnformatted(s.error.empty() ? "Loading presets..." : s.error.c_str());
        ImGui::End();
        return;
    }
    ModelConfig& m = s.model;
    bool changed = false;
    ImGui::PushItemWidth(160);
    // Shape fields first: "layers" is the first editable field (the browser tests rely on it).
    changed |= IntField("layers", &m.layers, "transformer layers");
    changed |= IntField("hidden", &m.hidden, "model width (d_model)");
    changed |= IntField("heads", &m.heads, "attention heads; head_dim = hidden / heads unless the preset sets it");
    changed |= IntField("kv_heads", &m.kv_heads, "key/value heads (grouped-query attention); = heads for MHA");
    changed |= IntField("ffn", &m.ffn, "MLP intermediate size");
    changed |= IntField("vocab", &m.vocab, "vocabulary size");
    changed |= IntField("seq", &m.seq, "training sequence length");
    changed |= IntField("window", &m.window.size,
                        "sliding-window attention: keys a query of a windowed layer sees, itself included (0: every "
                        "layer full causal attention; GPT-OSS 128, Mistral 7B v0.1 4096)");
    if (m.window.size > 0) {
        changed |= IntField("full_every", &m.window.full_every,
                            "every n-th layer keeps full attention (GPT-OSS 2, Gemma 3 6, Llama 4 4); 0: every layer "
                            "windowed");
        changed |= ImGui::Checkbox("chunked window", &m.window.chunked);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "a windowed layer sees the keys from the start of its chunk of `window` tokens, not the last "
                "`window` (Llama 4's chunked local attention, attention_chunk_size 8192)");
    }
    changed |= IntField("mtp_layers", &m.mtp_layers,
                        "multi-token prediction modules after the last layer, each one more layer of its kind and "
                        "one more LM head, on the last pipeline stage (DeepSeek-V3 1; 0: none)");
    if (m.is_hybrid()) changed |= HybridPatternField(m);
    if (m.is_moe()) {
        changed |= IntField("experts", &m.moe.experts, "routed experts per MoE layer");
        changed |= IntField("top_k", &m.moe.top_k, "routed experts per token");
        changed |= IntField("expert_ffn", &m.moe.expert_ffn, "intermediate size of one expert");
        if (!m.is_hybrid())  // a hybrid model places its MoE layers by the pattern's E symbols
            changed |= IntField("moe_every", &m.moe.every,
                                "every n-th layer past the leading dense ones is MoE, the others dense of ffn (1: all; "
                                "Llama 4 Maverick 2)");
        changed |= IntField("moe_latent", &m.moe.latent,
                            "a latent MoE's routed width: tokens projected h -> latent before the dispatch, the "
                            "experts and all-to-alls on it, back to h after (Nemotron 3 Super 1024; 0: none)");
        changed |= DoubleField("load_imbalance", &m.moe.load_imbalance, "%.2f",
                               "tokens routed to the hottest expert over the mean per expert (1: balanced; at most "
                               "experts / top_k). Dropless routing: the expert-parallel rank holding it sets the pace");
        int routing = m.moe.routing == MoeRouting::contiguous ? 1 : 0;
        if (ImGui::Combo("routing", &routing, "uniform\0contiguous\0")) {
            m.moe.routing = routing ? MoeRouting::contiguous : MoeRouting::uniform;
            changed = true;
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "which experts a token picks, as the DeepEP dispatch's traffic sees it: uniform (k distinct experts "
                "at random: a trained router) or contiguous (token i takes experts ik..ik+k-1: NeMo AutoModel's "
                "fake balanced gate)");
    }
    Precision compute = m.precision.compute;
    if (PrecisionCombo("precision", &compute)) {
        SetComputePrecision(m, compute);
        changed = true;
    }
    if (compute == Precision::fp8) changed |= Fp8ScalingCombo(m.precision.scaling);
    ImGui::PopItemWidth();
    if (!s.presets.empty()) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(-ImGui::CalcTextSize("model").x - ImGui::GetStyle().ItemInnerSpacing.x);
        const char* current = s.preset_index >= 0 ? s.presets[s.preset_index].name.c_str() : "custom";
        if (ImGui::BeginCombo("model", current)) {
            for (size_t i = 0; i < s.presets.size(); ++i)
                if (ImGui::Selectable(s.presets[i].name.c_str(), static_cast<int>(i) == s.preset_index)) {
                    s.preset_index = static_cast<int>(i);
                    SelectPreset(s, s.presets[i].file);
                }
            ImGui::EndCombo();
        }
    }
    if (BytesOf(compute) < 2) {  // under the precision and the model picker beside it
        ImGui::PushItemWidth(160);
        changed |= IntField("bf16_first", &m.precision.bf16_first_layers,
                            "the first layers kept in BF16 (Megatron's num_layers_at_start_in_bf16; their GEMMs run "
                            "outside fp8/fp4 and quantize nothing); not with delayed scaling, which Megatron refuses");
        changed |= IntField("bf16_last", &m.precision.bf16_last_layers,
                            "the last layers kept in BF16 (num_layers_at_end_in_bf16: Megatron-Bridge's fp8 "
                            "current-scaling recipe keeps 1 and 1, Nemotron 3 Super's NVFP4 recipe its last 14)");
        changed |= Bf16ModuleBoxes(m);
        ImGui::PopItemWidth();
    }
    // The whole configuration as a URL: the page's JS copies it (it knows the address).
    if (ImGui::Button("Copy link")) s.copy_link_requested = true;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("copy a link that opens this page with every setting as it is now");
    if (!s.link_note.empty()) {
        ImGui::SameLine();
        ImGui::TextDisabled("%s", s.link_note.c_str());
    }
    ImGui::SameLine();
    DrawUiScale(s);
    if (changed) {
        Recompute(s);
    }
    if (!s.link_error.empty()) ErrorText(s.link_error);

    ImGui::Separator();
    if (!s.error.empty()) {
        ErrorText(s.error);
        ImGui::End();
        return;
    }
    const ModelStats& st = s.stats;
    if (ImGui::BeginTable("model_stats", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
        ImGui::TableSetupColumn("quantity", ImGuiTableColumnFlags_WidthStretch);
        ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthFixed, 170);
        TableRow("parameters", FormatCount(st.params));
        if (m.is_moe()) TableRow("  active per token", FormatCount(st.active_params));
        TableRow("  embedding tables", FormatCount(st.embedding_params));
        TableRow("FLOPs/token: matmul", FormatFlops(st.matmul_flops_per_token));
        TableRow("  attention (causal)", FormatFlops(st.attention_flops_per_token));
        if (const std::string w = WindowLine(m); !w.empty()) TableRow("    sliding window", w);
        TableRow("  model FLOPs", FormatFlops(st.model_flops_per_token()));
        TableRow("  6N rule", FormatFlops(st.six_n_flops_per_token()));
        TableRow("weights", FormatBytes(st.weight_bytes));
        TableRow("gradients", FormatBytes(st.gradient_bytes));
        TableRow("optimizer (Adam)", FormatBytes(st.optimizer_bytes));
        TableRow("training state", FormatBytes(st.state_bytes()));
        ImGui::EndTable();
    }
    ImGui::TextDisabled("%s", m.source.empty() ? "" : "source of the shape (hover)");
    if (!m.source.empty() && ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(420);
        ImGui::TextUnformatted(m.source.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    ImGui::End();
}

}  // namespace sc::app
