// The Parallelism panel: the split (degrees, schedule, recomputation, ZeRO), the compact summary of
// the per-rank traces as a table (one row per class of identical ranks), and "Download traces".
#include <cstdio>
#include <string>

#include "app/app.h"
#include "app/app_state.h"
#include "app/panels.h"
#include "config/error.h"
#include "imgui.h"
#include "parallel/pipeline_layout.h"
#include "report/format.h"

namespace sc::app {

// Megatron's pipeline layout string (the `layout=` key): shown in canonical form, applied on Enter; empty means
// the even (or uneven=1) split. A string that does not parse is not applied: its error shows where the split's do.
static bool LayoutField(AppState& s) {
    ParallelConfig& p = s.parallel;
    char buf[1024];
    std::snprintf(buf, sizeof buf, "%s", p.layout.empty() ? "" : PipelineLayoutString(p.layout, p.layout_mtp).c_str());
    ImGui::SetNextItemWidth(320);
    const bool entered = ImGui::InputText("layout", buf, sizeof buf, ImGuiInputTextFlags_EnterReturnsTrue);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "Megatron's pipeline layout (--pipeline-model-parallel-layout): the layers of each virtual stage in "
            "model order.\nE embedding, t transformer layer, m MTP module (with L), L loss, | ends a stage, (...)*n "
            "and x*n repeat.\nDeepSeek-V3 on PP4 x VP4: Et*4|(t*4|)*14tmL. Empty: layers split evenly. Enter "
            "applies.");
    if (!entered) return false;
    try {
        PipelineLayout l;
        if (buf[0] != '\0') l = ParsePipelineLayout(buf);
        if (l.layers == p.layout && l.mtp == p.layout_mtp) return false;
        p.layout = l.layers, p.layout_mtp = l.mtp;
        return true;
    } catch (const Error& e) {
        s.parallel_error = e.what();
        return false;
    }
}

// Megatron's recompute_modules under selective recomputation: one box per module, the attention core alone
// when none is ticked (its default).
static bool RecomputeModuleBoxes(ParallelConfig& p) {
    static constexpr const char* kHelp[kRecomputeModuleCount] = {
        "the attention core (Megatron's default; what selective means alone)",
        "input_layernorm and pre_mlp_layernorm: their outputs are not kept",
        "MLA's q/kv up-projections and rotary: Q, K, V are not kept",
        "the experts' activation: its output is not kept",
        "the dense MLP after its norm: only its input is kept",
        "the MoE layer after its norm, its all-to-alls included: only its input is kept",
        "the shared experts: only their input is kept"};
    bool changed = false;
    ImGui::TextUnformatted("modules:");
    for (int i = 0; i < kRecomputeModuleCount; ++i) {
        if (i != 4) ImGui::SameLine();  // two rows, so the panel's width holds them
        const uint8_t bit = static_cast<uint8_t>(1u << i);
        bool on = p.selective_modules() & bit;
        if (ImGui::Checkbox(kRecomputeModuleNames[i], &on)) {
            const uint8_t mask = on ? p.selective_modules() | bit : p.selective_modules() & ~bit;
            p.recompute_modules = mask == kRecomputeCoreAttn ? 0 : mask;  // core_attn alone is the default
            changed = true;
        }
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("Megatron's recompute_modules: %s", kHelp[i]);
    }
    return changed;
}

static void DrawSplitFields(AppState& s) {
    ParallelConfig& p = s.parallel;
    bool changed = false;
    ImGui::PushItemWidth(90);
    changed |= IntField("tp", &p.tp, "tensor parallel: heads, MLP and vocabulary split (Megatron)");
    ImGui::SameLine();
    changed |= IntField("pp", &p.pp, "pipeline stages");
    ImGui::SameLine();
    changed |= IntField("dp", &p.dp, "data-parallel replicas");
    changed |= IntField("cp", &p.cp, "context parallel: the sequence split for attention (ring)");
    ImGui::SameLine();
    changed |= IntField("ep", &p.ep, "expert parallel, folded over the stage's tp x cp x dp ranks (Megatron-Core)");
    ImGui::SameLine();
    changed |= ImGui::Checkbox("sp", &p.sp);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("sequence parallelism beside TP (Korthikanti et al. 2022)");
    if (p.ep > 1) {
        ImGui::SameLine();
        changed |= ImGui::Checkbox("a2a overlap", &p.a2a_overlap);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "Megatron-Core's --overlap-moe-expert-parallel-comm: each steady 1F1B forward runs beside another\n"
                "microbatch's backward, each one's expert all-to-all hidden behind the other's compute (one more\n"
                "warm-up forward's activations held); pp > 1 needs the interleaved schedule");
    } else {
        p.a2a_overlap = false;
    }
    changed |= IntField("microbatch", &p.microbatch, "sequences per microbatch");
    ImGui::SameLine();
    int batch = p.global_batch();
    if (IntField("batch", &batch, "global batch in sequences")) p.batch = batch, changed = true;
    // As wide as the longest schedule's name, which a 90-pixel field cuts.
    ImGui::SetNextItemWidth(ImGui::CalcTextSize("interleaved_zb").x + ImGui::GetFrameHeight() + 12);
    changed |= EnumCombo("schedule", &p.schedule,
                         {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved, Schedule::zbh1,
                          Schedule::dualpipe, Schedule::zbv, Schedule::dualpipev, Schedule::interleaved_zb});
    if (p.interleaved()) {
        ImGui::SameLine();
        changed |= IntField("vstages", &p.vstages, "model chunks per pipeline rank");
    } else {
        p.vstages = 1;
    }
    changed |=
        EnumCombo("recompute", &p.recompute, {Recompute::none, Recompute::selective, Recompute::full, Recompute::op});
    ImGui::SameLine();
    changed |= ImGui::SliderInt("zero", &p.zero, 0, 3);
    if (p.recompute == Recompute::full)
        changed |= IntField("layers a chunk", &p.recompute_layers,
                            "Megatron's block method (--recompute-num-layers): only the first N layers of each model "
                            "chunk recompute, the others keep their activations; 0: every layer");
    else p.recompute_layers = 0;
    // CPU activation offloading, where Megatron-Core runs it (pp = 1, 1F1B, no recomputation).
    if (p.offload_runs()) {
        changed |= IntField("offload layers", &p.offload_layers,
                            "Megatron-Core's --cpu-offloading-num-layers: the first N layers' saved activations go to "
                            "host memory during the forward and come back during the backward (Transformer Engine's "
                            "schedule); the compute waits where the host link is slower than the layers; 0: none");
        if (p.offload_layers > 0) {
            ImGui::SameLine();
            changed |= DoubleField("host link GB/s", &s.options.host_link_gbps, "%.0f",
                                   "the host link's rate each way; 0: the part's measured rate (nvbandwidth; measured "
                                   "on H100, H800, H200, GB200 and MI300X)");
        }
    } else {
        p.offload_layers = 0;
    }
    ImGui::PopItemWidth();
    if (p.recompute == Recompute::selective) changed |= RecomputeModuleBoxes(p);
    else p.recompute_modules = 0;
    changed |= LayoutField(s);
    if (changed) Recompute(s);
    ImGui::Text("%d GPUs, %d microbatches per step", p.world(),
                p.global_batch() / (p.microbatch * p.dp > 0 ? p.microbatch * p.dp : 1));
}

static void DrawSummaryTable(const AppState& s) {
    if (SummaryRunning(s)) {  // counted after the edit (summary_driver.h)
        char label[80];
        std::snprintf(label, sizeof label, "counting the traces' nodes%s: %.0f%%",
                      s.pool.summary_id != 0 ? " in the workers" : "", 100 * SummaryProgress(s));
        ImGui::ProgressBar(static_cast<float>(SummaryProgress(s)), ImVec2(360, 0), label);
        return;
    }
    if (!s.evaluation.summary) return;
    const TraceSummary& sum = *s.evaluation.summary;
    ImGui::Text("%d ranks in %d classes; %s computed, %s communicated per step", sum.world,
                static_cast<int>(sum.classes.size()), FormatFlops(sum.total_flops).c_str(),
                FormatBytes(sum.total_comm_bytes).c_str());
    // Columns stretch over the panel's width, each at least as wide as its widest figure ("999.999 TFLOP"), so a
    // number is never cut while the table has room.
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY |
                                  ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_Resizable;
    if (!ImGui::BeginTable("trace_summary", 7, flags, ImVec2(0, ImGui::GetContentRegionAvail().y - 70))) return;
    ImGui::TableSetupScrollFreeze(0, 1);
    const float small = ImGui::CalcTextSize("ranks ").x, figure = ImGui::CalcTextSize("999.999 TFLOP ").x;
    for (const char* h : {"stage", "ranks"}) ImGui::TableSetupColumn(h, ImGuiTableColumnFlags_WidthStretch, small);
    for (const char* h : {"nodes", "FLOPs", "collectives", "pipeline", "memory"})
        ImGui::TableSetupColumn(h, ImGuiTableColumnFlags_WidthStretch, figure);
    ImGui::TableHeadersRow();
    for (const RankClass& c : sum.classes) {
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::Text("%d", c.stage);
        ImGui::TableSetColumnIndex(1);
        ImGui::Text("%d", c.ranks);
        if (ImGui::IsItemHovered()) {
            std::string ex;
            for (int r : c.example_ranks) ex += (ex.empty() ? "" : ", ") + std::to_string(r);
            ImGui::SetTooltip("e.g. ranks %s", ex.c_str());
        }
        ImGui::TableSetColumnIndex(2);
        ImGui::Text("%llu", static_cast<unsigned long long>(c.total_nodes));
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%llu compute, %llu collective, %llu send, %llu recv, %llu host copies",
                              static_cast<unsigned long long>(c.nodes[4]), static_cast<unsigned long long>(c.nodes[7]),
                              static_cast<unsigned long long>(c.nodes[5]), static_cast<unsigned long long>(c.nodes[6]),
                              static_cast<unsigned long long>(c.host_copies));
        ImGui::TableSetColumnIndex(3);
        ImGui::TextUnformatted(FormatFlops(c.flops).c_str());
        ImGui::TableSetColumnIndex(4);
        double coll = 0;
        for (const CollectiveTotal& t : c.collectives) coll += t.bytes;
        ImGui::TextUnformatted(FormatBytes(coll).c_str());
        if (ImGui::IsItemHovered() && !c.collectives.empty()) {
            ImGui::BeginTooltip();
            for (const CollectiveTotal& t : c.collectives)
                ImGui::Text("%-14s %-5s (%d ranks): %llu x, %s", NameOf(t.type), NameOf(t.group), t.group_size,
                            static_cast<unsigned long long>(t.count), FormatBytes(t.bytes).c_str());
            ImGui::EndTooltip();
        }
        ImGui::TableSetColumnIndex(5);
        ImGui::TextUnformatted(FormatBytes(c.send_bytes + c.recv_bytes).c_str());
        ImGui::TableSetColumnIndex(6);
        ImGui::TextUnformatted(FormatBytes(c.memory.total()).c_str());
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("weights %s, gradients %s, optimizer %s, activations %s (%d in flight)",
                              FormatBytes(c.memory.weights).c_str(), FormatBytes(c.memory.gradients).c_str(),
                              FormatBytes(c.memory.optimizer).c_str(), FormatBytes(c.memory.activations).c_str(),
                              c.memory.peak_inflight);
    }
    ImGui::EndTable();
}

// The download's ETA from the ranks written so far (-1 before the first).
static double DownloadEta(const DownloadState& d) {
    if (d.done <= 0 || d.total <= d.done) return -1;
    return (Now() - d.started) / d.done * (d.total - d.done);
}

static void DrawTimelineButton(AppState& s) {
    DownloadState& d = s.download;
    const int world = s.evaluation.job ? s.parallel.world() : 1;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    ImGui::InputInt("##timeline-rank", &d.timeline_rank, 0);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("the rank whose timeline \"Perfetto JSON\" saves (0..%d)", world - 1);
    const bool rank_ok = d.timeline_rank >= 0 && d.timeline_rank < world;
    ImGui::SameLine();
    ImGui::BeginDisabled(!s.evaluation.job || !CurrentSystem(s) || !rank_ok);
    if (ImGui::Button("Perfetto JSON")) d.timeline_requested = true;
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(CurrentSystem(s) ? "this rank's timeline, every stage replayed together on the cluster, as "
                                             "Chrome trace events: open it in ui.perfetto.dev (the bytes of "
                                             "`stagecraft trace --format json --rank R`)"
                                           : "choose a cluster to time the ops first");
    if (!rank_ok) ErrorText("rank " + std::to_string(d.timeline_rank) + " is outside 0.." + std::to_string(world - 1));
}

static void DrawDownload(AppState& s) {
    DownloadState& d = s.download;
    if (d.running) {
        char label[128];
        const double eta = DownloadEta(d);
        if (eta >= 0)
            std::snprintf(label, sizeof label, "rank %d / %d, %s, ETA %.0f s", d.done, d.total,
                          FormatBytes(d.bytes).c_str(), eta);
        else std::snprintf(label, sizeof label, "rank %d / %d, %s", d.done, d.total, FormatBytes(d.bytes).c_str());
        ImGui::ProgressBar(d.total > 0 ? static_cast<float>(d.done) / d.total : 0.f, ImVec2(-90, 0), label);
        ImGui::SameLine();
        if (ImGui::Button("Cancel")) d.cancel = true;
        return;
    }
    ImGui::BeginDisabled(!s.evaluation.job || !d.supported);
    if (ImGui::Button("Download traces")) d.requested = true;
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(d.supported
                              ? "every rank's Chakra ET file and the communicator groups: into a folder you pick "
                                "where the browser can (File System Access), otherwise streamed as one .zip"
                              : "this page cannot save files");
    DrawTimelineButton(s);
    if (!d.message.empty()) ImGui::TextWrapped("%s", d.message.c_str());
}

void DrawParallelPanel(AppState& s) {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(450, 10), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize(ImVec2(d.x - 460, d.y * 0.62f - 15), ImGuiCond_FirstUseEver);
    ImGui::Begin("Parallelism and traces");
    if (!s.has_model || !s.error.empty()) {
        ImGui::TextDisabled("fix the model first");
        ImGui::End();
        return;
    }
    DrawSplitFields(s);
    ImGui::Separator();
    if (!s.parallel_error.empty()) {
        ErrorText(s.parallel_error);
    } else if (!s.summary_error.empty()) {
        ErrorText(s.summary_error);
    } else {
        DrawSummaryTable(s);
        DrawDownload(s);
    }
    ImGui::End();
}

}  // namespace sc::app
