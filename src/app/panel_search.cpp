// The "Best layout" tab of the Training window: runs the layout search (every valid tp/pp/dp/cp/ep, microbatch,
// schedule, recomputation, ZeRO and SP for a GPU count and global batch) on the current model and cluster and lists the
// fastest layouts that fit; "use" applies one to the Parallelism panel. The search runs in the page's web workers,
// or a slice per frame without them (search_driver.cpp, over a snapshot of the inputs taken at the start), with a
// progress bar and a cancel button.
#include <cstdio>

#include "app/app.h"
#include "app/app_state.h"
#include "app/panels.h"
#include "app/pool_jobs.h"
#include "imgui.h"
#include "report/format.h"

namespace sc::app {

void DrawSearchTab(AppState& s) {
    auto& q = s.search;
    bool ready = s.has_model && s.error.empty() && s.system_index >= 0;
    if (!ready) {
        CancelSearch(s);
        ImGui::TextDisabled("needs a valid model and a cluster");
        return;
    }
    if (q.gpus <= 0) q.gpus = s.parallel.world();
    ImGui::SetNextItemWidth(100);
    IntField("GPUs", &q.gpus, "GPU count to split over");
    ImGui::SameLine();
    ImGui::Text("batch %d", s.parallel.global_batch());
    ImGui::SameLine();
    ImGui::Checkbox("uneven stages", &q.uneven);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "also pipelines whose stages the layers do not divide, split as uneven=1 (one layer fewer on "
            "the first and last): a model of 61 layers has no pipeline otherwise");
    ImGui::SameLine();
    if (q.next_shard >= 0) {  // runs in the worker pool, or a slice per frame (StepJobs)
        char label[48];
        const double eta = SearchEta(s);
        if (eta >= 0)
            std::snprintf(label, sizeof label, "searching %d%%, ETA %.0f s", 100 * q.next_shard / kSearchShards, eta);
        else std::snprintf(label, sizeof label, "searching %d%%", 100 * q.next_shard / kSearchShards);
        ImGui::ProgressBar(static_cast<float>(q.next_shard) / kSearchShards, ImVec2(220, 0), label);
        ImGui::SameLine();
        if (ImGui::Button("Cancel")) CancelSearch(s);
    } else if (ImGui::Button("Find the best layouts")) {
        StartSearch(s);
    }
    if (!q.error.empty()) ErrorText(q.error);
    if (!q.has_result) return;
    const SearchStats& st = q.result.stats;
    ImGui::Text("%llu layouts valid, %llu fit in memory; searched in %.0f ms",
                static_cast<unsigned long long>(st.valid), static_cast<unsigned long long>(st.fitting),
                q.seconds * 1e3);
    if (q.result.top.empty()) {
        ImGui::TextWrapped("No layout fits: more GPUs, more memory per GPU, or a smaller batch.");
        return;
    }
    const ImGuiTableFlags flags =
        ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY;
    if (ImGui::BeginTable("best", 6, flags)) {
        ImGui::TableSetupScrollFreeze(0, 1);
        for (const char* h : {"", "#", "step", "MFU", "memory", "layout"}) ImGui::TableSetupColumn(h);
        ImGui::TableHeadersRow();
        for (size_t i = 0; i < q.result.top.size(); ++i) {
            const RankedLayout& r = q.result.top[i];
            std::string spec = ParallelSpecString(r.par);
            ImGui::PushID(static_cast<int>(i));
            ImGui::TableNextRow();
            ImGui::TableSetColumnIndex(0);
            if (spec == ParallelSpecString(s.parallel)) {
                // The layout the Parallelism panel holds now (applied with "use", or set by hand).
                ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(0, 114, 178, 110));
                ImGui::TextUnformatted("in use");
            } else if (ImGui::SmallButton("use")) {
                SetParallel(s, spec);
            }
            ImGui::TableSetColumnIndex(1);
            ImGui::Text("%zu", i + 1);
            ImGui::TableSetColumnIndex(2);
            ImGui::TextUnformatted(FormatSeconds(r.estimate.step_seconds, kTableTime).c_str());
            if (ImGui::IsItemHovered()) {
                std::string tip;
                for (const BreakdownPart& p : kBreakdownParts) {
                    tip += std::string(tip.empty() ? "" : ", ") + p.short_label + " " +
                           FormatSeconds(r.estimate.step.*p.seconds, kTableTime);
                }
                ImGui::SetTooltip("%s", tip.c_str());
            }
            ImGui::TableSetColumnIndex(3);
            ImGui::Text("%.1f%%", 100 * r.estimate.mfu);
            ImGui::TableSetColumnIndex(4);
            ImGui::TextUnformatted(FormatBytes(r.estimate.memory_peak).c_str());
            ImGui::TableSetColumnIndex(5);
            ImGui::TextUnformatted(spec.c_str());
            ImGui::PopID();
        }
        ImGui::EndTable();
    }
}

}  // namespace sc::app
