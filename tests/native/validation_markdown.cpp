// The generated part of docs/validation.md: predicted vs measured, where the predicted time goes, memory,
// the assumptions per record and the CLI command that reproduces each row.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "report/format.h"
#include "validation_rows.h"

namespace validation {

namespace {

using sc::FormatNumber;

// "TP8 PP35x3 DP8 mb1 gbs2240 sel-rc SP ZeRO1"
std::string Layout(const sc::ParallelConfig& p) {
    std::string s = "TP" + std::to_string(p.tp) + " PP" + std::to_string(p.pp);
    if (p.schedule == sc::Schedule::interleaved) s += 'x' + std::to_string(p.vstages);
    s += " DP" + std::to_string(p.dp);
    if (p.cp > 1) s += " CP" + std::to_string(p.cp);
    s += " mb" + std::to_string(p.microbatch) + " gbs" + std::to_string(p.global_batch());
    s += p.recompute == sc::Recompute::full        ? " full-rc"
         : p.recompute == sc::Recompute::selective ? " sel-rc"
         : p.recompute == sc::Recompute::op        ? " op-rc"
                                                   : "";
    if (p.recompute_layers) s += "(" + std::to_string(p.recompute_layers) + " a chunk)";
    if (p.sp) s += " SP";
    if (p.zero) s += " ZeRO" + std::to_string(p.zero);
    return s;
}

std::string Value(double v) {
    if (v < 1) return FormatNumber("%.3f", v);
    if (v < 100) return FormatNumber("%.2f", v);
    return FormatNumber("%.0f", v);
}

// The stagecraft command line that reproduces a row (run from the repository root).
}  // namespace

std::string CliCommand(const Row& r) {
    const sc::ModelConfig& m = r.model;
    std::string c;
    auto set = [&](const std::string& k, const std::string& v) { c += " --set " + k + "=" + v; };
    if (!r.preset.empty()) {
        // A model preset with what the row changes in it (validation_more.cpp ModelOf, validation_bridge.cpp).
        c = "./build/stagecraft estimate --model presets/models/" + r.preset;
        set("seq", std::to_string(m.seq));
        set("vocab", std::to_string(m.vocab));
        set("mtp_layers", std::to_string(m.mtp_layers));
        if (m.is_moe()) set("moe.expert_ffn", std::to_string(m.moe.expert_ffn));
        if (m.moe.routing == sc::MoeRouting::contiguous) set("moe.routing", "contiguous");
    } else {
        const bool llama = m.mlp == sc::MlpKind::swiglu;
        const char* base = m.is_mla()   ? "deepseek-v3.json"
                           : m.is_moe() ? "mixtral-8x7b.json"
                           : llama      ? "llama3-70b.json"
                                        : "gpt3-175b.json";
        c = std::string("./build/stagecraft estimate --model presets/models/") + base;
        if (m.is_moe()) {
            set("moe.experts", std::to_string(m.moe.experts));
            set("moe.top_k", std::to_string(m.moe.top_k));
            set("moe.expert_ffn", std::to_string(m.moe.expert_ffn));
            set("moe.shared_experts", std::to_string(m.moe.shared_experts));
            set("moe.dense_layers", std::to_string(m.moe.dense_layers));
            if (m.moe.routing == sc::MoeRouting::contiguous) set("moe.routing", "contiguous");
        }
        if (m.has_window()) {
            set("sliding_window.size", std::to_string(m.window.size));
            set("sliding_window.full_every", std::to_string(m.window.full_every));
        }
        if (!m.is_mla()) set("head_dim", std::to_string(m.head_dim));
        set("mlp", m.mlp == sc::MlpKind::swiglu ? "swiglu" : "gelu");
        set("norm", m.norm == sc::NormKind::rmsnorm ? "rmsnorm" : "layernorm");
        set("position", m.position == sc::PositionKind::rotary ? "rotary" : "learned");
        set("tied_embeddings", m.tied_embeddings ? "true" : "false");
        set("bias", m.bias ? "true" : "false");
        set("layers", std::to_string(m.layers));
        set("hidden", std::to_string(m.hidden));
        set("heads", std::to_string(m.heads));
        set("kv_heads", std::to_string(m.kv_heads));
        set("ffn", std::to_string(m.ffn));
        set("vocab", std::to_string(m.vocab));
        set("seq", std::to_string(m.seq));
        if (m.is_mla()) set("mtp_layers", std::to_string(m.mtp_layers));  // the base preset has one
    }
    set("precision.compute", sc::NameOf(m.precision.compute));
    set("precision.grad", sc::NameOf(m.precision.grad));
    if (m.precision.optimizer != sc::PrecisionConfig{}.optimizer)
        set("precision.optimizer", sc::NameOf(m.precision.optimizer));
    if (m.precision.scaling != sc::Scaling::automatic) set("precision.scaling", sc::NameOf(m.precision.scaling));
    if (m.precision.bf16_first_layers)
        set("precision.bf16_first_layers", std::to_string(m.precision.bf16_first_layers));
    if (m.precision.bf16_last_layers) set("precision.bf16_last_layers", std::to_string(m.precision.bf16_last_layers));
    if (m.precision.bf16_modules) set("precision.bf16_modules", sc::Bf16ModulesString(m.precision.bf16_modules));
    // A layout's | ( ) * are the shell's: quoted, so the line runs as copied.
    const std::string spec = sc::ParallelSpecString(r.par);
    const bool quote = spec.find_first_of("|()*") != std::string::npos;
    c += " --system " + r.system + " --parallel " + (quote ? "'" + spec + "'" : spec);
    if (r.par.world() > 0 && r.set != "first") c += " --gpus " + std::to_string(r.par.world());
    // An accelerator variant of the system's part (Meta's Grand Teton H100): its memory and power limit as edits,
    // in the order Evaluate applies them (after the cluster is grown).
    if (r.hbm_tbps > 0) {
        c += " --system-set accelerator.hbm_tbps=" + FormatNumber("%.15g", r.hbm_tbps);
        c += " --system-set accelerator.memory_gb=" + FormatNumber("%.15g", r.hbm_gb);
    }
    if (r.power_limit_w > 0) c += " --system-set accelerator.power_limit_w=" + FormatNumber("%.15g", r.power_limit_w);
    const sc::TrainingOptions d;
    std::string o;
    auto flag = [&](const char* k, bool v, bool def) {
        if (v != def) o += std::string(o.empty() ? "" : ",") + k + "=" + (v ? "on" : "off");
    };
    flag("overlap_dp", r.opt.overlap_dp, d.overlap_dp);
    flag("overlap_pp", r.opt.overlap_pp, d.overlap_pp);
    flag("overlap_tp", r.opt.overlap_tp, d.overlap_tp);
    flag("in_network_reduction", r.opt.in_network_reduction, d.in_network_reduction);
    flag("flash_attention", r.opt.kernels.flash_attention, d.kernels.flash_attention);
    flag("dropout", r.opt.kernels.dropout, d.kernels.dropout);
    flag("pp_scatter_gather", r.opt.kernels.pp_scatter_gather, d.kernels.pp_scatter_gather);
    flag("grad_accumulation_fusion", r.opt.kernels.grad_accumulation_fusion, d.kernels.grad_accumulation_fusion);
    flag("fused_elementwise", r.opt.kernels.fused_elementwise, d.kernels.fused_elementwise);
    flag("deepep_dispatch", r.opt.kernels.deepep_dispatch, d.kernels.deepep_dispatch);
    if (r.opt.attention_kernel != d.attention_kernel)
        o += std::string(o.empty() ? "" : ",") + "attention_kernel=" + sc::NameOf(r.opt.attention_kernel);
    if (r.opt.memory_efficiency > 0)
        o += std::string(o.empty() ? "" : ",") + "memory_efficiency=" + FormatNumber("%.15g", r.opt.memory_efficiency);
    if (!o.empty()) c += " --options " + o;
    return c;
}

namespace {

// The errors of the rows outside their tolerance that name `cause`, so the text of a cause never carries a
// number an earlier model gave: "Rows: 4, -23.2% to -17.4% (median -20.5%)."
std::string Spread(const std::string& cause) {
    std::vector<double> e;
    for (const Row& r : AllRows())
        if (r.comparable && r.evaluation_error.empty() && r.cause == cause && std::fabs(r.error) > r.tolerance)
            e.push_back(r.error);
    if (e.empty()) return "";
    std::sort(e.begin(), e.end());
    const size_t k = e.size();
    const double median = k % 2 ? e[k / 2] : (e[k / 2 - 1] + e[k / 2]) / 2;
    if (k == 1) return "Row: " + FormatNumber("%+.1f%%", 100 * e.front()) + ".";
    return "Rows: " + std::to_string(k) + ", " + FormatNumber("%+.1f%%", 100 * e.front()) + " to " +
           FormatNumber("%+.1f%%", 100 * e.back()) + " (median " + FormatNumber("%+.1f%%", 100 * median) + ").";
}

}  // namespace

std::string Markdown() {
    // Each distinct cause of a row outside the target gets a letter, listed once below the tables.
    std::vector<std::string> reasons;
    auto letter = [&](const std::string& why) {
        size_t i = std::find(reasons.begin(), reasons.end(), why) - reasons.begin();
        if (i == reasons.size()) reasons.push_back(why);
        return std::string(1, static_cast<char>('a' + i));
    };
    std::string o;
    o += "<!-- generated by tests/native/test_training_validation.cpp (./build/stagecraft_tests "
         "--gtest_filter='TrainingValidation.*' writes it to build/validation.md); do not edit below -->\n";
    o += "## Iteration time: predicted vs measured\n\n";
    o += "Error = predicted / measured iteration time - 1 (positive: the model is slower than the run). Throughputs "
         "are converted to seconds with the source's own FLOP formula; the predicted column is the model's time "
         "converted back to the published unit.\n\n";
    o +=
        "| record | system | layout | measured | published value | predicted | time measured (s) | time predicted (s) | error | tolerance |\n";
    o += "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const Row& r : AllRows()) {
        if (!r.comparable || !r.evaluation_error.empty()) {
            const std::string why = !r.comparable ? "not comparable: " + r.not_comparable_reason
                                                  : "cannot be expressed: " + r.evaluation_error;
            o += "| " + r.key + " | " + r.system + " | | " + why + " | | | | | | |\n";
            continue;
        }
        std::string tol = FormatNumber("%.0f%%", 100 * r.tolerance);
        if (!r.cause.empty() && std::fabs(r.error) > r.tolerance) tol += ", outside (" + letter(r.cause) + ")";
        o += "| " + r.key + " | " + r.system + " | " + Layout(r.par) + " | " + r.measured_what + " | " +
             Value(r.measured_value) + " | " + Value(r.to_unit(r.predicted_seconds)) + " | " +
             Value(r.measured_seconds) + " | " + Value(r.predicted_seconds) + " | " +
             FormatNumber("%+.1f%%", 100 * r.error) + " | " + tol + " |\n";
    }
    auto summary = [&](const char* set, const std::string& label) {
        double sum = 0, worst = 0;
        int n = 0, within = 0, out = 0;
        std::vector<double> errors;
        for (const Row& r : AllRows()) {
            if (r.set != set) continue;
            if (!r.comparable || !r.evaluation_error.empty()) {
                ++out;
                continue;
            }
            sum += std::fabs(r.error), worst = std::max(worst, std::fabs(r.error)), ++n;
            within += std::fabs(r.error) <= kDefaultTolerance;
            errors.push_back(std::fabs(r.error));
        }
        std::sort(errors.begin(), errors.end());
        const size_t k = errors.size();
        const double median = k == 0 ? 0 : k % 2 ? errors[k / 2] : (errors[k / 2 - 1] + errors[k / 2]) / 2;
        std::string line = label + ": " + std::to_string(n) + " comparisons; mean |error| " +
                           FormatNumber("%.1f%%", 100 * sum / std::max(n, 1)) + ", median " +
                           FormatNumber("%.1f%%", 100 * median) + ", worst " + FormatNumber("%.1f%%", 100 * worst) +
                           ", " + std::to_string(within) + " of " + std::to_string(n) + " within 10%";
        if (out) line += "; " + std::to_string(out) + " records not expressible (reason in the row)";
        return line + ".\n";
    };
    o += '\n' + summary("bridge", "data/training_measured_bridge.json");
    o += summary("more", "data/training_measured_more.json");
    o += summary("first", "data/training_measured.json");
    o += "\nCauses of the rows outside the 10% target (the tolerance of every row stays 10%), each with the errors of "
         "the rows it is given for, as this run measures them:\n\n";
    for (size_t i = 0; i < reasons.size(); ++i)
        o += std::string("- (") + static_cast<char>('a' + i) + ") " + reasons[i] + ". " + Spread(reasons[i]) + "\n";

    o += "\n## Where the predicted time goes\n\n";
    o += "The comm SMs column is part of compute and recompute: GEMM time lost to the SMs that overlapped TP "
         "communication kernels hold (src/training/comm_sms.h).\n\n";
    o += "Kernel fixed, fp8 casts and MoE routing are parts of their own (src/training/estimate.h): the measured "
         "fixed cost of every kernel beyond its roofline (src/training/kernel_floor.h), Transformer Engine's fp8 "
         "quantization passes (src/training/fp8_overheads.h), the MoE router, permute and unpermute.\n\n";
    o += "| record | compute | recompute | comm SMs | kernel fixed | fp8 casts | MoE routing | TP comm | CP comm | "
         "EP all-to-all | PP p2p | bubble | DP comm | optimizer | MFU | fits |\n";
    o +=
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- "
        "|\n";
    for (const Row& r : AllRows()) {
        if (!r.comparable || !r.evaluation_error.empty()) continue;
        const sc::StepBreakdown& b = r.est.step;
        auto pct = [&](double x) { return FormatNumber("%.1f%%", 100 * x / r.est.step_seconds); };
        o += "| " + r.key + " | " + pct(b.compute) + " | " + pct(b.recompute) + " | " + pct(b.comm_sms) + " | " +
             pct(b.kernel_fixed) + " | " + pct(b.fp8_cast) + " | " + pct(b.moe_routing) + " | " + pct(b.tp_comm) +
             " | " + pct(b.cp_comm) + " | " + pct(b.ep_comm) + " | " + pct(b.pp_comm) + " | " + pct(b.bubble) + " | " +
             pct(b.dp_comm) + " | " + pct(b.optimizer) + " | " + FormatNumber("%.1f%%", 100 * r.est.mfu) + " | " +
             (r.est.fits ? "yes" : "no: " + r.est.memory_message) + " |\n";
    }

    o += "\n## Memory: predicted vs published\n\n";
    o += "| record | quantity | published | predicted | error | tolerance |\n";
    o += "| --- | --- | ---: | ---: | ---: | ---: |\n";
    for (const Row& r : AllRows())
        for (const MemoryCheck& m : r.memory)
            o += "| " + r.key + " | " + m.what + " | " + FormatNumber("%.2f", m.measured_gib) +
                 (m.what == "peak per GPU" ? " GB" : " GiB") + " | " + FormatNumber("%.2f", m.predicted_gib) + " | " +
                 FormatNumber("%+.1f%%", 100 * (m.predicted_gib / m.measured_gib - 1)) + " | " +
                 (m.lower_bound ? "-" : "") + FormatNumber("%.0f%%", 100 * m.tolerance) +
                 (m.lower_bound ? ", one-sided" : "") +
                 (std::fabs(m.predicted_gib / m.measured_gib - 1) > m.tolerance ? ", outside: " + m.cause : "") +
                 " |\n";

    o += "\n## One row from the command line\n\n";
    o +=
        "Every row is the library call the test makes; the same prediction from the CLI (`--json` gives `step_seconds`):\n\n";
    for (const Row& r : AllRows())
        if (r.comparable && r.evaluation_error.empty())
            o += "- " + r.key + ": `" + CliCommand(r) + "`" +
                 (r.accelerator.empty() ? "" : " (with the " + r.accelerator + " preset in the system)") + "\n";

    o += "\n## Assumptions per record\n\n";
    for (const Row& r : AllRows()) {
        if (r.assumptions.empty()) continue;
        o += "- **" + r.key + "** (" + r.source + "): ";
        for (size_t i = 0; i < r.assumptions.size(); ++i) o += (i ? "; " : "") + r.assumptions[i];
        o += ".\n";
    }
    for (const Row& r : AllRows())
        for (const MemoryCheck& m : r.memory)
            if (!m.note.empty()) o += "- **" + r.key + "** memory: " + m.note + ".\n";
    return o;
}

}  // namespace validation
