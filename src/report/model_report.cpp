#include "report/model_report.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "report/format.h"

namespace sc {

static std::string PrecisionLine(const PrecisionConfig& p) {
    std::string s = std::string(NameOf(p.compute)) + " weights, " + NameOf(p.grad) + " gradients, ";
    if (p.master != p.compute) s += std::string(NameOf(p.master)) + " master copy, ";
    return s + NameOf(p.optimizer) + " Adam moments";
}

std::string WindowLine(const ModelConfig& m) {
    const int windowed = m.graph_windowed_layers(0, m.layers);
    if (windowed == 0) return "";
    return std::to_string(windowed) + " of " + std::to_string(m.layers) + " layers see " +
           (m.window.chunked ? "their chunk of " : "the last ") + FormatInt(m.window.size) + " keys";
}

// "first 1, last 1 (layers 0 and 79 of 80)": the layers an fp8/fp4 model keeps in BF16, numbered from 0.
static std::string Bf16LayersLine(const ModelConfig& m) {
    const int first = m.precision.bf16_first_layers, last = m.precision.bf16_last_layers;
    auto range = [](int a, int b) { return a == b ? std::to_string(a) : std::to_string(a) + "-" + std::to_string(b); };
    std::string layers;
    if (first > 0) layers = range(0, std::min(first, m.layers) - 1);
    const int from = std::max(first, m.layers - last);
    if (from < m.layers) layers += (layers.empty() ? "" : " and ") + range(from, m.layers - 1);
    return "first " + std::to_string(first) + ", last " + std::to_string(last) + " (layers " + layers + " of " +
           std::to_string(m.layers) + ")";
}

std::string ModelReportText(const ModelConfig& m, const ModelStats& st) {
    std::string o;
    auto line = [&](const std::string& label, const std::string& value) {
        o += label;
        o.append(label.size() < 30 ? 30 - label.size() : 1, ' ');
        o += value + "\n";
    };
    o += "Model: " + m.name + "\n";
    line("parameters", FormatCount(st.params) + " (" + FormatInt(st.params) + ")");
    if (m.is_moe())
        line("  active per token", FormatCount(st.active_params) + " (" + FormatInt(st.active_params) + ")");
    line("  embedding tables", FormatCount(st.embedding_params));
    o += "Training FLOPs per token (seq " + std::to_string(st.seq) + ", forward + backward)\n";
    line("  matmul", FormatFlops(st.matmul_flops_per_token));
    line("  attention (causal)", FormatFlops(st.attention_flops_per_token));
    if (const std::string w = WindowLine(m); !w.empty()) line("    sliding window", w);
    line("  model FLOPs", FormatFlops(st.model_flops_per_token()));
    line("  6N rule, for reference", FormatFlops(st.six_n_flops_per_token()));
    o += "Training state (" + PrecisionLine(m.precision) + ")\n";
    if (const Scaling q = ResolvedScaling(m.precision.compute, m.precision.scaling); q != Scaling::automatic)
        line("  GEMM scaling", std::string(NameOf(m.precision.compute)) + ", " + ScalingDescription(q));
    if (m.has_bf16_layers()) line("  layers in BF16", Bf16LayersLine(m));
    if (m.precision.bf16_modules && BytesOf(m.precision.compute) < 2)
        line("  modules in BF16", Bf16ModulesString(m.precision.bf16_modules));
    line("  weights", FormatBytes(st.weight_bytes));
    line("  gradients", FormatBytes(st.gradient_bytes));
    line("  optimizer", FormatBytes(st.optimizer_bytes));
    line("  total", FormatBytes(st.state_bytes()));
    return o;
}

std::string ModelReportJson(const ModelConfig& m, const ModelStats& st) {
    nlohmann::ordered_json j;
    j["model"] = m.name;
    j["params"] = st.params;
    j["active_params"] = st.active_params;
    j["embedding_params"] = st.embedding_params;
    j["seq"] = st.seq;
    if (m.has_window())  // windowed_layers: those whose attention the window shortens at this seq
        j["sliding_window"] = {{"size", m.window.size},
                               {"full_every", m.window.full_every},
                               {"chunked", m.window.chunked},
                               {"windowed_layers", m.graph_windowed_layers(0, m.layers)}};
    j["flops_per_token"] = {{"matmul", st.matmul_flops_per_token}, {"attention", st.attention_flops_per_token},
                            {"model", st.model_flops_per_token()}, {"vector", st.vector_flops_per_token},
                            {"six_n", st.six_n_flops_per_token()}, {"forward", st.forward_flops_per_token}};
    j["precision"] = {{"compute", NameOf(m.precision.compute)},
                      {"grad", NameOf(m.precision.grad)},
                      {"master", NameOf(m.precision.master)},
                      {"optimizer", NameOf(m.precision.optimizer)},
                      {"scaling", NameOf(ResolvedScaling(m.precision.compute, m.precision.scaling))}};
    j["bytes"] = {{"weights", st.weight_bytes},
                  {"gradients", st.gradient_bytes},
                  {"optimizer", st.optimizer_bytes},
                  {"total", st.state_bytes()}};
    return j.dump(2) + "\n";
}

}  // namespace sc
