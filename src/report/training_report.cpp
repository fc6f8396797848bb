#include "report/training_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "report/format.h"
#include "report/layout_warnings.h"
#include "training/published_runs.h"

namespace sc {

std::string TrainingReportText(const Job& job, const System& sys, const TrainingEstimate& e) {
    std::string o;
    char buf[256];
    auto line = [&](const std::string& label, const std::string& value) {
        o += label;
        o.append(label.size() < 30 ? 30 - label.size() : 1, ' ');
        o += value + "\n";
    };
    o += "Training on " + sys.name + " (" + std::to_string(job.par.world()) + " x " + sys.accelerator.name + ")\n";
    o += "parallel " + ParallelSpecString(job.par) + "\n";
    line("step time", FormatSeconds(e.step_seconds));
    const StepBreakdown& b = e.step;
    auto part = [&](const char* label, double s) {
        if (s <= 0) return;
        std::snprintf(buf, sizeof buf, "%s (%.1f%%)", FormatSeconds(s).c_str(), 100 * s / e.step_seconds);
        line(std::string("  ") + label, buf);
    };
    for (const BreakdownPart& p : kBreakdownParts) {
        part(p.label, b.*p.seconds);
        // Not in the step: what overlapped pairs hid of the all-to-all (DualPipe, a2a_overlap).
        if (p.seconds == &StepBreakdown::ep_comm && b.ep_hidden > 0)
            line("    hidden beside pairs", FormatSeconds(b.ep_hidden) + " (not in the step)");
        if (p.seconds != &StepBreakdown::compute) continue;
        // Of compute, what communication kernels beside it take (training/comm_sms.h): not parts of their own.
        part("  of which TP/EP comm SMs", b.comm_sms);
        part("  of which DP comm SMs", b.dp_comm_sms);
    }
    if (const std::optional<PipelineTimeline>& t = e.pipeline) {
        // The schedule laid out in time (TimePipeline): what the bubble above comes from, rank by rank.
        std::snprintf(buf, sizeof buf, "%d of %d microbatches in %s; stage %d (the bottleneck) idles %s of it",
                      t->microbatches, t->step_microbatches, FormatSeconds(t->end).c_str(), t->bottleneck_stage,
                      FormatSeconds(t->Idle(t->bottleneck_stage)).c_str());
        line("pipeline schedule", buf);
    }
    // How far published runs on this accelerator were from the model (docs/validation.md), so the step time is
    // read with its measured spread.
    const Precision compute = job.model.precision.compute;
    if (const PublishedRuns* runs = PublishedRunsFor(sys.accelerator.id, compute)) {
        line("published runs", PublishedRunsLine(*runs, compute, sys.accelerator.id) + " [docs/validation.md]");
        line("  a step at those ratios", PublishedStepText(*runs, e.step_seconds));
    }
    // What the rates rest on: measured on this part, or a fallback (presets/calibration/measured.json).
    if (!e.rates.gemm.empty()) {
        line("rates from",
             e.rates.all_measured ? "measurements (presets/calibration/measured.json)" : "measurements and fallbacks:");
        line("  GEMMs", e.rates.gemm);
        line("  attention", e.rates.attention);
        line("  HBM", e.rates.hbm);
        line("  kernel fixed cost", e.rates.floor);
        if (!e.rates.clock.empty()) line("  clock", e.rates.clock);
        if (!e.rates.scan.empty()) line("  SSD scan", e.rates.scan);
    }
    const char* prec = NameOf(job.model.precision.compute);
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * e.mfu);
    line("MFU", buf + std::string(" of the ") + prec + " dense peak");
    if (job.model.precision.compute != Precision::bf16) {
        std::snprintf(buf, sizeof buf, "%.1f%% of the bf16 dense peak", 100 * e.mfu_bf16);
        line("MFU (bf16)", buf);
    }
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * e.hfu);
    line("HFU", buf);
    std::snprintf(buf, sizeof buf, "%.1f model (6N + causal attention), %.1f executed",
                  InTera(e.model_flops_per_gpu_per_s), InTera(e.hardware_flops_per_gpu_per_s));
    line("TFLOP/s per GPU", buf);
    std::snprintf(buf, sizeof buf,
                  job.model.is_hybrid() ? "%.1f (Megatron-Bridge's hybrid_flops: each layer symbol's count, causal)"
                                        : "%.1f (non-causal attention, its README's and NeMo's convention)",
                  InTera(e.megatron_flops_per_gpu_per_s));
    line("TFLOP/s per GPU, Megatron-LM", buf);
    std::snprintf(buf, sizeof buf, "%.1f (causal attention, its performance tables' Model TFLOP/s)",
                  InTera(e.megatron_bridge_flops_per_gpu_per_s));
    line("TFLOP/s/GPU, Megatron-Bridge", buf);
    std::snprintf(buf, sizeof buf, "%.0f (%.0f per GPU)", e.tokens_per_second, e.tokens_per_second / job.par.world());
    line("tokens/s", buf);
    line("memory per GPU", FormatBytes(e.memory_peak) + " of " + FormatBytes(e.memory_capacity) +
                               (e.fits ? "" : "  -- " + e.memory_message));
    for (size_t s = 0; s < e.memory.size() && e.memory.size() <= 8; ++s) {
        const StageMemory& m = e.memory[s];
        std::snprintf(buf, sizeof buf, "%s = w %s + g %s + opt %s + act %s", FormatBytes(m.total()).c_str(),
                      FormatBytes(m.weights).c_str(), FormatBytes(m.gradients).c_str(),
                      FormatBytes(m.optimizer).c_str(), FormatBytes(m.activations).c_str());
        line("  stage " + std::to_string(s), buf);
    }
    if (job.par.offload_layers > 0 && !e.memory.empty()) {
        const OffloadLink& l = e.host_link;
        std::snprintf(buf, sizeof buf, "%s of %d layers' activations in host memory, over %.0f GB/s out, %.0f in (%s)",
                      FormatBytes(e.memory[0].host_activations).c_str(), job.par.offload_layers, l.out_gbps, l.in_gbps,
                      l.source.c_str());
        line("  offloaded", buf);
    }
    if (e.energy_joules_per_step > 0) line("energy per step", EnergyPerStepText(e, job.par.world()));
    if (e.days_to_train > 0) {
        std::snprintf(buf, sizeof buf, "%.1f days, %.3g GPU-hours, %.3g MWh", e.days_to_train, e.gpu_hours_to_train,
                      e.energy_mwh_to_train);
        line("time to train", buf);
    }
    for (const std::string& w : LayoutWarnings(job.par, e)) line("warning", w);
    return o;
}

std::string EnergyPerStepText(const TrainingEstimate& e, int gpus) {
    if (!(e.energy_joules_per_step > 0) || !(e.step_seconds > 0) || gpus <= 0) return "";
    // Every GPU at its limit (or board power) for the whole step: an upper bound.
    const double watts = e.energy_joules_per_step / e.step_seconds / gpus;
    return FormatEnergy(e.energy_joules_per_step) + " (" + FormatNumber("%.0f", watts) + " W a GPU, " +
           FormatNumber("%.3g", e.tokens_per_step / e.energy_joules_per_step) + " tokens/J)";
}

std::string PublishedStepText(const PublishedRuns& p, double step_seconds) {
    if (!(step_seconds > 0)) return "";
    const auto at = [&](double ratio) { return FormatSeconds(ratio * step_seconds); };
    if (p.runs == 1) return at(p.median);
    if (p.runs < 4) return at(p.min) + " to " + at(p.max);
    return at(p.p25) + " to " + at(p.p75) + " (median " + at(p.median) + ")";
}

nlohmann::ordered_json PublishedRunsSpreadJson(const PublishedRuns& p, double scale) {
    return {{"min", p.min * scale},
            {"p25", p.p25 * scale},
            {"median", p.median * scale},
            {"p75", p.p75 * scale},
            {"max", p.max * scale}};
}

nlohmann::ordered_json BreakdownJson(const StepBreakdown& b) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const BreakdownPart& p : kBreakdownParts) j[p.key] = b.*p.seconds;
    return j;
}

nlohmann::ordered_json RateSourcesJson(const RateSources& r) {
    return {
        {"gemm", r.gemm},
        {"attention", r.attention},
        {"hbm", r.hbm},
        {"kernel_floor", r.floor},
        {"clock", r.clock.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.clock)},
        {"decode_attention",
         r.decode_attention.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.decode_attention)},
        {"scan", r.scan.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.scan)},
        {"all_reduce", r.all_reduce.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.all_reduce)},
        {"all_measured", r.all_measured}};
}

std::string TrainingReportJson(const Job& job, const System& sys, const TrainingEstimate& e) {
    nlohmann::ordered_json j;
    j["system"] = sys.id;
    j["system_name"] = sys.name;  // names the torus slice a TPU job ran on (config/torus_slice.h)
    j["parallel"] = ParallelSpecString(job.par);
    j["gpus"] = job.par.world();
    j["step_seconds"] = e.step_seconds;
    j["breakdown"] = BreakdownJson(e.step);
    // Of breakdown.compute (not parts of their own): the SMs that overlapped communication kernels hold.
    j["compute_lost_to_comm_sms"] = {{"tp_ep", e.step.comm_sms}, {"dp", e.step.dp_comm_sms}};
    // Not in the step: the all-to-all overlapped pairs hid (breakdown.ep_comm is what they left exposed).
    j["ep_hidden_by_pairs"] = e.step.ep_hidden;
    j["mfu"] = e.mfu;
    j["hfu"] = e.hfu;
    j["mfu_bf16"] = e.mfu_bf16;
    j["peak_flops_per_gpu"] = e.peak_flops_per_gpu;
    j["bf16_peak_flops_per_gpu"] = e.bf16_peak_flops_per_gpu;
    j["model_tflops_per_gpu"] = InTera(e.model_flops_per_gpu_per_s);
    j["hardware_tflops_per_gpu"] = InTera(e.hardware_flops_per_gpu_per_s);
    j["megatron_tflops_per_gpu"] = InTera(e.megatron_flops_per_gpu_per_s);
    j["megatron_bridge_tflops_per_gpu"] = InTera(e.megatron_bridge_flops_per_gpu_per_s);
    j["tokens_per_second"] = e.tokens_per_second;
    j["model_flops_per_step"] = e.model_flops_per_step;
    j["memory"] = {{"peak_bytes", e.memory_peak},
                   {"capacity_bytes", e.memory_capacity},
                   {"fits", e.fits},
                   {"message", e.memory_message}};
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const StageMemory& m : e.memory)
        stages.push_back({{"weights", m.weights},
                          {"gradients", m.gradients},
                          {"optimizer", m.optimizer},
                          {"activations", m.activations},
                          {"total", m.total()},
                          {"host_activations", m.host_activations}});
    j["memory"]["stages"] = stages;
    if (job.par.offload_layers > 0)
        j["host_link"] = {{"out_gbps", e.host_link.out_gbps},
                          {"in_gbps", e.host_link.in_gbps},
                          {"measured", e.host_link.measured},
                          {"source", e.host_link.source}};
    if (const std::optional<PipelineTimeline>& t = e.pipeline) {
        nlohmann::ordered_json idle = nlohmann::ordered_json::array();
        for (int s = 0; s < static_cast<int>(t->ranks.size()); ++s) idle.push_back(t->Idle(s));
        j["pipeline_schedule"] = {{"microbatches", t->microbatches},
                                  {"step_microbatches", t->step_microbatches},
                                  {"seconds", t->end},
                                  {"bottleneck_stage", t->bottleneck_stage},
                                  {"idle_seconds", idle}};
    }
    j["energy_joules_per_step"] = e.energy_joules_per_step;
    if (e.days_to_train > 0)
        j["to_train"] = {
            {"days", e.days_to_train}, {"gpu_hours", e.gpu_hours_to_train}, {"energy_mwh", e.energy_mwh_to_train}};
    if (const PublishedRuns* runs = PublishedRunsFor(sys.accelerator.id, job.model.precision.compute))
        j["published_runs"] = {
            {"accelerator", runs->accelerator},
            {"stands_in_because", runs->accelerator == sys.accelerator.id
                                      ? nlohmann::ordered_json(nullptr)
                                      : nlohmann::ordered_json(PublishedRunsStandIn(sys.accelerator.id))},
            {"precision", runs->precision},
            {"runs", runs->runs},
            {"measured_over_predicted", PublishedRunsSpreadJson(*runs)},
            {"step_seconds_at_those_ratios", PublishedRunsSpreadJson(*runs, e.step_seconds)},
            {"source", "docs/validation.md"}};
    else j["published_runs"] = nullptr;
    if (!e.rates.gemm.empty()) j["rate_sources"] = RateSourcesJson(e.rates);
    else j["rate_sources"] = nullptr;
    j["warnings"] = LayoutWarnings(job.par, e);
    return j.dump(2) + "\n";
}

}  // namespace sc
