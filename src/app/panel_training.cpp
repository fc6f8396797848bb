// The Training panel: the cluster (accelerator, network levels), the options, and the estimate:
// step time as a stacked bar of its breakdown, MFU, tokens/s, memory per GPU against capacity.
#include <cstdio>

#include "app/app.h"
#include "app/app_state.h"
#include "app/palette.h"
#include "app/panels.h"
#include "config/error.h"
#include "imgui.h"
#include "report/format.h"
#include "report/layout_warnings.h"
#include "report/training_report.h"
#include "training/power_cap.h"
#include "training/published_runs.h"

namespace sc::app {

struct Segment {
    const char* label;
    double value;
    ImU32 color;
};

// A horizontal bar split into segments proportional to their values, with a legend under it. `mark` > 0 draws a
// labelled vertical line at that value (the memory bar's capacity, when the stages need more than it).
static void StackedBar(const char* id, const Segment* seg, int n, double full, const char* (*fmt)(double, char*),
                       double mark = 0, const char* mark_label = nullptr) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImVec2 p = ImGui::GetCursorScreenPos();
    float w = ImGui::GetContentRegionAvail().x, h = ImGui::GetFrameHeight();
    ImGui::InvisibleButton(id, ImVec2(w, h));
    dl->AddRectFilled(p, ImVec2(p.x + w, p.y + h), IM_COL32(50, 50, 60, 255));
    float x = p.x;
    int hovered = -1;
    for (int i = 0; i < n; ++i) {
        if (seg[i].value <= 0 || full <= 0) continue;
        float sw = static_cast<float>(seg[i].value / full) * w;
        if (x + sw > p.x + w) sw = p.x + w - x;
        dl->AddRectFilled(ImVec2(x, p.y), ImVec2(x + sw, p.y + h), seg[i].color);
        if (ImGui::IsItemHovered() && ImGui::GetIO().MousePos.x >= x && ImGui::GetIO().MousePos.x < x + sw) hovered = i;
        x += sw;
    }
    char buf[64];
    if (mark > 0 && full > 0) {
        const float mx = p.x + static_cast<float>(mark / full) * w;
        dl->AddLine(ImVec2(mx, p.y - 3), ImVec2(mx, p.y + h + 3), IM_COL32(255, 255, 255, 255), 3.0f);
        dl->AddLine(ImVec2(mx, p.y - 3), ImVec2(mx, p.y + h + 3), IM_COL32(0, 0, 0, 255), 1.0f);
        if (mark_label) dl->AddText(ImVec2(mx + 4, p.y + 1), IM_COL32(255, 255, 255, 255), mark_label);
    }
    if (hovered >= 0)
        ImGui::SetTooltip("%s: %s (%.1f%%)", seg[hovered].label, fmt(seg[hovered].value, buf),
                          100 * seg[hovered].value / full);
    for (int i = 0, shown = 0; i < n; ++i) {
        if (seg[i].value <= 0) continue;
        if (shown++ % 3) ImGui::SameLine(0, 14);
        ImGui::ColorButton(seg[i].label, ImGui::ColorConvertU32ToFloat4(seg[i].color),
                           ImGuiColorEditFlags_NoTooltip | ImGuiColorEditFlags_NoDragDrop, ImVec2(10, 10));
        ImGui::SameLine(0, 4);
        ImGui::Text("%s %s", seg[i].label, fmt(seg[i].value, buf));
    }
}

static const char* Secs(double s, char* buf) {
    std::snprintf(buf, 64, "%s", FormatSeconds(s, kPanelTime).c_str());
    return buf;
}

static const char* Bytes(double b, char* buf) {
    std::snprintf(buf, 64, "%s", FormatBytes(b).c_str());
    return buf;
}

// The fields a user edits in the network table (what a link carries as level edits, app_link.cpp).
static bool SameLevel(const NetworkLevel& a, const NetworkLevel& b) {
    return a.bandwidth_gbps == b.bandwidth_gbps && a.latency_us == b.latency_us && a.efficiency == b.efficiency &&
           a.in_network_reduction == b.in_network_reduction && a.wraparound == b.wraparound;
}

// A power limit below the board power (training/power_cap.h): "what if this cluster ran at 500 W a GPU?". Shown
// as the board power until edited; a value out of range is refused by the estimate, naming the field.
static bool DrawPowerLimit(Accelerator& acc) {
    if (!acc.board_power_w) return false;
    const double board = *acc.board_power_w;
    double watts = acc.power_limit_w.value_or(board);
    bool changed = false;
    if (acc.power_limit_w && ImGui::SmallButton("reset##power")) {
        acc.power_limit_w.reset();
        return true;
    }
    if (acc.power_limit_w) ImGui::SameLine();
    ImGui::TextUnformatted(acc.power_limit_w ? "power limit *" : "power limit");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(70);
    if (DoubleField("##power_limit", &watts, "%.0f",
                    "W per GPU: a limit below the board power lowers the SMs' clock, (limit / board)^(1/3) of it "
                    "(P ~ f^3); HBM bandwidth stays")) {
        if (watts == board) acc.power_limit_w.reset();
        else acc.power_limit_w = watts;
        changed = true;
    }
    ImGui::SameLine();
    const double clock = PowerCapClockScale(acc);
    if (clock < 1 && watts >= kMinPowerLimitFraction * board)
        ImGui::Text("W of %.0f W: compute at %.3f of its clock", board, clock);
    else ImGui::Text("W of %.0f W", board);
    return changed;
}

static void DrawCluster(AppState& s) {
    if (s.systems.empty()) {
        ImGui::TextDisabled("loading cluster presets...");
        return;
    }
    const char* current = s.system_index >= 0 ? s.systems[s.system_index].system.name.c_str() : "none";
    ImGui::TextUnformatted("cluster");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    if (ImGui::BeginCombo("##system", current)) {
        for (size_t i = 0; i < s.systems.size(); ++i)
            if (ImGui::Selectable(s.systems[i].system.name.c_str(), static_cast<int>(i) == s.system_index))
                SelectSystem(s, s.systems[i].file);
        ImGui::EndCombo();
    }
    if (s.system_index < 0) return;
    const System& sys = s.systems[s.system_index].system;
    const Accelerator& acc = sys.accelerator;
    double peak = 0;
    try {
        peak = PeakTflops(acc, s.model.precision.compute);
    } catch (const Error&) {
        peak = 0;  // the precision is unsupported: Recompute has put the error in training_error
    }
    ImGui::Text("%s: %.0f TFLOPS %s, %.0f GiB HBM at %.2f TB/s", acc.name.c_str(), peak,
                NameOf(s.model.precision.compute), InGiB(acc.MemoryBytes()), acc.hbm_bandwidth_tbps);
    // The network levels, editable: co-design questions ("what if the scale-out had twice the bandwidth?").
    bool changed = false;
    SystemPreset& preset = s.systems[s.system_index];
    System& edit = preset.system;
    changed |= DrawPowerLimit(edit.accelerator);
    if (ImGui::BeginTable("levels", 7,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit)) {
        for (const char* h : {"network level", "kind", "GPUs", "GB/s/dir", "latency us", "eff.", "in-net"})
            ImGui::TableSetupColumn(h);
        ImGui::TableHeadersRow();
        static const char* kinds[] = {"scale-up", "two-tier", "FullFlat", "rail-opt.", "three-tier", "torus"};
        static_assert(sizeof kinds / sizeof kinds[0] == static_cast<int>(LevelKind::torus) + 1);
        for (size_t i = 0; i < edit.levels.size(); ++i) {
            NetworkLevel& l = edit.levels[i];
            const bool has_preset = i < preset.preset_levels.size();
            const bool modified = has_preset && !SameLevel(l, preset.preset_levels[i]);
            ImGui::PushID(static_cast<int>(i));
            ImGui::TableNextRow();
            ImGui::TableSetColumnIndex(0);
            // The reset comes first in the row: the table is wider than a narrow panel, and its first column
            // is always on screen.
            if (modified && ImGui::SmallButton("reset")) {
                l = preset.preset_levels[i];
                changed = true;
            }
            if (modified && ImGui::IsItemHovered()) ImGui::SetTooltip("back to the preset's values for this level");
            if (modified) ImGui::SameLine();
            ImGui::Text("%s%s", l.name.c_str(), modified ? " *" : "");
            if (modified && ImGui::IsItemHovered()) ImGui::SetTooltip("edited: differs from the preset");
            ImGui::TableSetColumnIndex(1);
            ImGui::TextUnformatted(l.kind == LevelKind::torus && !l.wraparound ? "mesh"
                                                                               : kinds[static_cast<int>(l.kind)]);
            ImGui::TableSetColumnIndex(2);
            ImGui::Text("%d", l.size);
            ImGui::TableSetColumnIndex(3);
            ImGui::SetNextItemWidth(70);
            changed |= DoubleField("##bw", &l.bandwidth_gbps, "%.0f",
                                   "bandwidth per GPU and direction");  // checked in Recompute
            ImGui::TableSetColumnIndex(4);
            ImGui::SetNextItemWidth(60);
            changed |= DoubleField("##lat", &l.latency_us, "%.2f", "per-hop latency");
            ImGui::TableSetColumnIndex(5);
            ImGui::SetNextItemWidth(50);
            static const double kMinEff = 0.05, kMaxEff = 1.0;
            changed |= ImGui::SliderScalar("##eff", ImGuiDataType_Double, &l.efficiency, &kMinEff, &kMaxEff, "%.2f",
                                           ImGuiSliderFlags_AlwaysClamp);
            ImGui::TableSetColumnIndex(6);
            // A torus has no switch to reduce in; its column says instead whether the dimension closes into a ring.
            if (l.kind != LevelKind::torus) {
                changed |= ImGui::Checkbox("##inr", &l.in_network_reduction);
            } else {
                changed |= ImGui::Checkbox("wrap##wrap", &l.wraparound);
                if (ImGui::IsItemHovered())
                    ImGui::SetTooltip("wraparound: the dimension is a ring (torus); off, a line (mesh)");
            }
            ImGui::PopID();
        }
        ImGui::EndTable();
    }
    changed |= ImGui::Checkbox("overlap DP", &s.options.overlap_dp);
    ImGui::SameLine();
    changed |= ImGui::Checkbox("overlap PP", &s.options.overlap_pp);
    ImGui::SameLine();
    changed |= ImGui::Checkbox("overlap TP", &s.options.overlap_tp);
    ImGui::SameLine();
    changed |= ImGui::Checkbox("in-network reduction", &s.options.in_network_reduction);
    // The framework's kernels: what older runs ran (Megatron-LM 2021-22: unfused attention with dropout, unfused
    // gradient accumulation) and which fused-attention kernel (torchtitan and llm-foundry: PyTorch SDPA's
    // FlashAttention-2). The first three change the graph's ops, so the traces downloaded here carry them.
    if (ImGui::TreeNode("framework kernels")) {
        changed |= ImGui::Checkbox("fused attention", &s.options.kernels.flash_attention);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("off: Megatron-LM's unfused core attention, the s x s scores through HBM");
        ImGui::SameLine();
        changed |= ImGui::Checkbox("dropout", &s.options.kernels.dropout);
        ImGui::SameLine();
        changed |= ImGui::Checkbox("fused grad accumulation", &s.options.kernels.grad_accumulation_fusion);
        ImGui::SameLine();
        changed |= ImGui::Checkbox("PP scatter/gather", &s.options.kernels.pp_scatter_gather);
        changed |= ImGui::Checkbox("fused elementwise", &s.options.kernels.fused_elementwise);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "off: PyTorch eager (torchtitan without torch.compile): RMSNorm, rotary and SwiGLU as "
                "separate kernels through fp32 copies");
        ImGui::SameLine();
        changed |= ImGui::Checkbox("DeepEP dispatch", &s.options.kernels.deepep_dispatch);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "on: an MoE token goes once to each expert-parallel rank holding one of its experts, and across "
                "nodes once per node, forwarded over NVLink (DeepEP); off: every (token, expert) pair is sent "
                "(Megatron-Core's all-to-all dispatcher)");
        ImGui::SameLine();
        changed |= ImGui::Checkbox("FP8 dispatch", &s.options.kernels.fp8_dispatch);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "on: MoE tokens go to their experts in FP8 with one fp32 scale per 128 values (the dispatch, and the "
                "combine's gradient), as DeepSeek-V3 trained; the combine and the dispatch's gradient stay BF16");
        static const AttentionKernel kKernels[] = {AttentionKernel::cudnn, AttentionKernel::flash3,
                                                   AttentionKernel::flash2};
        int k = 0;
        for (int i = 0; i < 3; ++i)
            if (kKernels[i] == s.options.attention_kernel) k = i;
        ImGui::SetNextItemWidth(120);
        if (ImGui::Combo("attention kernel", &k, "cudnn\0flash3\0flash2\0")) {
            s.options.attention_kernel = kKernels[k];
            changed = true;
        }
        changed |= ImGui::Checkbox("framework GEMM profile", &s.options.framework_gemm);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "on: GEMMs take how much longer a framework's 16-bit GEMMs took than the part's GEMM curve, by the "
                "GEMM's narrowest side and whether it is k (Vidur's PyTorch profile on a DGX H100, read for H200 and "
                "H800 too, and on an A100 server; other parts have none), at every precision; off: the single-GPU "
                "microbenchmark curve alone");
        ImGui::TreePop();
    }
    double tokens_b = s.options.tokens_to_train / 1e9;
    ImGui::SetNextItemWidth(120);
    if (DoubleField("tokens to train (B)", &tokens_b, "%.0f", "for days, GPU-hours and energy to train")) {
        s.options.tokens_to_train = tokens_b > 0 ? tokens_b * 1e9 : 0;
        changed = true;
    }
    if (changed) Recompute(s);
}

// Okabe & Ito's palette (app/palette.h); neighbouring parts of the bars never share a hue family.
// Darker shades for the parts carved out of the kernels' time (kernel fixed cost, fp8 casts, MoE routing).
constexpr ImU32 kDarkGrey = IM_COL32(90, 90, 90, 255), kDarkPurple = IM_COL32(120, 60, 100, 255),
                kDarkGreen = IM_COL32(0, 90, 65, 255), kDarkOrange = IM_COL32(140, 95, 0, 255);

// Hover text: where a figure comes from.
static void Formula(const char* text) {
    if (!ImGui::IsItemHovered()) return;
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(460);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
}

static void DrawEstimate(AppState& s) {
    const TrainingEstimate& e = s.estimate;
    const StepBreakdown& b = e.step;
    char buf[64];
    ImGui::Text("step %s", Secs(e.step_seconds, buf));
    Formula(
        "step time = the bottleneck pipeline stage's compute and recompute over all microbatches, plus the "
        "exposed (not overlapped) TP/CP/EP/PP/DP communication, the pipeline bubble and the optimizer step; "
        "each part is summed per op from the model graph (README: Conventions)");
    ImGui::SameLine(0, 16);
    ImGui::Text("MFU %.1f%%", 100 * e.mfu);
    Formula(
        "MFU = model FLOPs per step (6 x parameters + causal attention, per token, x tokens) / (step time x GPUs "
        "x the compute precision's dense peak per GPU)");
    ImGui::SameLine(0, 16);
    ImGui::Text("HFU %.1f%%", 100 * e.hfu);
    Formula("HFU = FLOPs executed per step (including recomputation) / (step time x GPUs x dense peak)");
    ImGui::SameLine(0, 16);
    ImGui::Text("%.0f tokens/s", e.tokens_per_second);
    Formula("tokens/s = global batch x sequence length / step time");
    // Colours in kBreakdownParts order.
    static const ImU32 kColours[] = {kBlue,   kSky,   kDarkGrey, kDarkPurple, kDarkGreen,  kOrange, kYellow,
                                     kPurple, kGreen, kGrey,     kVermillion, kDarkOrange, kWhite};
    static_assert(sizeof kColours / sizeof kColours[0] == kBreakdownPartCount);
    Segment steps[kBreakdownPartCount];
    for (int i = 0; i < kBreakdownPartCount; ++i)
        steps[i] = {kBreakdownParts[i].short_label, b.*kBreakdownParts[i].seconds, kColours[i]};
    StackedBar("##step", steps, kBreakdownPartCount, e.step_seconds, Secs);
    if (b.ep_hidden > 0) {
        char hidden[64];
        ImGui::TextDisabled("EP all-to-all hidden beside pairs: %s (not in the step; hover)",
                            Secs(b.ep_hidden, hidden));
        Formula(
            "A forward and a backward of two microbatches run side by side (DualPipe, or Megatron-Core's "
            "a2a_overlap): each MoE layer's all-to-all hides behind the one compute piece of its window, the "
            "combine's gradient beside the attention's forward, the dispatch beside the experts' input gradient, "
            "its gradient beside their weight gradient and forward, the combine beside the attention's backward. "
            "training/pair_windows.h");
    }
    if (const double sms = b.comm_sms + b.dp_comm_sms; sms > 0) {
        // Not parts of their own: what the SMs of overlapped communication kernels cost the compute above.
        char tp[64], dp[64];
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::PushTextWrapPos(0);  // wrapped: the panel can be narrower than the line
        ImGui::Text("in compute, comm kernels' SMs: TP/EP %s, DP %s (hover)", Secs(b.comm_sms, tp),
                    Secs(b.dp_comm_sms, dp));
        ImGui::PopTextWrapPos();
        ImGui::PopStyleColor();
        Formula(
            "An overlapped collective runs as CTAs on some SMs; the compute beside it gets the rest. TP/EP: "
            "Transformer Engine's userbuffers GEMMs (num_sm of sm_count, with or without the SM margin), "
            "DualPipe's all-to-all (20 SMs) and a2a_overlap's (DeepEP's 20, or NCCL's CTAs). DP: the gradient "
            "reduction, ZeRO gathers and FSDP traffic hidden behind compute lose hidden x collective_ctas / sm_count (one NCCL CTA per channel; 24 on H100 as "
            "profiled; parts without a measured count: none). docs/validation.md");
    }
    const System* sys = CurrentSystem(s);
    const Precision compute = s.evaluation.job ? s.evaluation.job->model.precision.compute : Precision::bf16;
    if (const PublishedRuns* runs = sys ? PublishedRunsFor(sys->accelerator.id, compute) : nullptr) {
        // Wrapped: the panel is narrower than the line at the default width.
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::PushTextWrapPos(0);
        ImGui::Text("published runs %s", PublishedRunsLine(*runs, compute, sys->accelerator.id).c_str());
        if (const std::string at = PublishedStepText(*runs, e.step_seconds); !at.empty())
            ImGui::Text("  a step at those ratios: %s", at.c_str());
        ImGui::PopTextWrapPos();
        ImGui::PopStyleColor();
        Formula(
            "measured / predicted step time of the published runs on this accelerator, in this precision's class "
            "(16-bit, fp8 or fp4), that the model was compared with (docs/validation.md: Megatron-LM, NeMo, DGX "
            "Cloud, Megatron-Bridge, torchtitan, llm-foundry, ...). The estimate above is the model's own; no factor "
            "is fitted to these runs.");
    }
    if (s.evaluation.slice && sys && s.evaluation.slice->name.rfind(sys->name, 0) == 0) {
        // The part of the cluster the job ran on, when not its first GPUs (a torus slice, NVL72 segments): the
        // network table above shows the preset's levels. The CLI names it in its "Training on" line.
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::PushTextWrapPos(0);
        ImGui::Text("placed on%s (hover)", s.evaluation.slice->name.substr(sys->name.size()).c_str());
        ImGui::PopTextWrapPos();
        ImGui::PopStyleColor();
        Formula(
            "A job smaller than a torus pod runs on a slice of whole cubes (config/torus_slice.h); a job on NVL72 "
            "racks that is not a multiple of the rack runs in equal segments of whole trays a rack, as NVIDIA's "
            "launchers ask Slurm for (config/job_segments.h). The estimate above is timed on that part.");
    }
    if (!e.rates.gemm.empty()) {
        // One line; which rates are measured and which are fallbacks is in its tooltip (the CLI prints all three).
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextUnformatted(e.rates.all_measured ? "rates: measured on this part (hover)"
                                                    : "rates: some are fallbacks, not measured (hover)");
        ImGui::PopStyleColor();
        const std::string detail =
            "GEMMs: " + e.rates.gemm + "\n\nattention: " + e.rates.attention + "\n\nHBM: " + e.rates.hbm +
            "\n\nkernel fixed cost: " + e.rates.floor + (e.rates.clock.empty() ? "" : "\n\nclock: " + e.rates.clock) +
            (e.rates.scan.empty() ? "" : "\n\nSSD scan: " + e.rates.scan) + "\n\n(presets/calibration/measured.json)";
        Formula(detail.c_str());
    }
    for (const std::string& w : LayoutWarnings(s.parallel, e)) WarningText("warning: " + w);
    ImGui::Spacing();
    const StageMemory& m = e.memory[0];
    int worst = 0;
    for (size_t i = 0; i < e.memory.size(); ++i)
        if (e.memory[i].total() > e.memory[worst].total()) worst = static_cast<int>(i);
    const StageMemory& w = e.memory.empty() ? m : e.memory[worst];
    ImGui::Text("memory per GPU (stage %d): %s of %s", worst, FormatBytes(w.total()).c_str(),
                FormatBytes(e.memory_capacity).c_str());
    Formula(
        "weights, gradients and optimizer state of the stage's layers after TP/PP/EP and ZeRO sharding, plus "
        "the activations kept for the backward of the microbatches in flight (README: Conventions)");
    const Segment mem[] = {{"weights", w.weights, kBlue},
                           {"gradients", w.gradients, kOrange},
                           {"optimizer", w.optimizer, kGreen},
                           {"activations", w.activations, kPurple}};
    const bool over = w.total() > e.memory_capacity;
    StackedBar("##memory", mem, 4, std::max(e.memory_capacity, w.total()), Bytes, over ? e.memory_capacity : 0,
               "capacity");
    if (!e.fits) ErrorText(e.memory_message);
    if (s.parallel.offload_layers > 0) {  // CPU activation offloading: what is in host memory, over which link
        ImGui::Text("in host memory: %s of %d layers' activations, over %.0f GB/s out, %.0f in",
                    FormatBytes(w.host_activations).c_str(), s.parallel.offload_layers, e.host_link.out_gbps,
                    e.host_link.in_gbps);
        Formula(("the first N layers' saved activations leave after their forward and come back before their "
                 "backward (Transformer Engine's schedule, parallel/offload_schedule.h); the host link: " +
                 e.host_link.source)
                    .c_str());
    }
    if (const std::string energy = EnergyPerStepText(e, s.parallel.world()); !energy.empty()) {
        ImGui::Text("energy per step: %s", energy.c_str());
        Formula("every GPU at its power limit (else its board power) for the whole step: an upper bound");
    }
    if (e.days_to_train > 0)
        ImGui::Text("to train: %.1f days, %.3g GPU-hours, %.3g MWh", e.days_to_train, e.gpu_hours_to_train,
                    e.energy_mwh_to_train);
    if (e.pipeline) DrawPipelineTimeline(*e.pipeline, &s.download.pipeline_requested);
}

static void DrawEstimateTab(AppState& s) {
    // Cluster on the left, the estimate on the right.
    if (!ImGui::BeginTable("training_layout", 2, ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV)) return;
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    DrawCluster(s);
    ImGui::TableSetColumnIndex(1);
    if (!s.training_error.empty()) ErrorText(s.training_error);
    else if (s.has_estimate) DrawEstimate(s);
    else
        ImGui::TextDisabled("%s", !s.error.empty() || !s.parallel_error.empty() ? "fix the model or the split first"
                                                                                : "pick a cluster");
    ImGui::EndTable();
}

void DrawTrainingPanel(AppState& s) {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(10, d.y * 0.62f + 5), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize(ImVec2(d.x - 20, d.y * 0.38f - 15), ImGuiCond_FirstUseEver);
    ImGui::Begin("Training on a cluster");
    // A link opens its tab (ImGui selects it on the next frame); otherwise the tab drawn is the view a link names.
    auto tab = [&s](const char* label, View view, void (*draw)(AppState&)) {
        const ImGuiTabItemFlags flags = s.apply_views && s.view == view ? ImGuiTabItemFlags_SetSelected : 0;
        if (!ImGui::BeginTabItem(label, nullptr, flags)) return;
        if (!s.apply_views) s.view = view;
        draw(s);
        ImGui::EndTabItem();
    };
    if (ImGui::BeginTabBar("training_tabs")) {
        tab("Estimate", View::estimate, DrawEstimateTab);
        tab("Best layout", View::search, DrawSearchTab);
        tab("Serving", View::serving, DrawInferenceTab);
        ImGui::EndTabBar();
    }
    ImGui::End();
}

}  // namespace sc::app
