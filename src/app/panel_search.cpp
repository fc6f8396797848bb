// The "Best layout" tab of the Training window: runs the layout search (every valid tp/pp/dp/cp/ep, microbatch, schedule,
// recomputation, ZeRO and SP for a GPU count and global batch) on the current model and cluster and
// lists the fastest layouts that fit; "use" applies one to the Parallelism panel.
#include <chrono>
#include <cstdio>

#include "app/app.h"
#include "app/app_state.h"
#include "app/panels.h"
#include "config/error.h"
#include "imgui.h"
#include "report/format.h"

namespace sc::app {

static void RunSearch(AppState& s) {
    auto& q = s.search;
    q.error.clear();
    q.has_result = false;
    try {
        SearchRequest req;
        req.gpus = q.gpus > 0 ? q.gpus : s.parallel.world();
        req.batch = s.parallel.global_batch();
        req.top_k = 10;
        auto t0 = std::chrono::steady_clock::now();
        q.result = SearchLayouts(s.model, s.systems[s.system_index].system, s.calibration.get(), s.options, req);
        q.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        q.has_result = true;
    } catch (const Error& e) {
        q.error = e.what();
    }
}

void DrawSearchTab(AppState& s) {
    auto& q = s.search;
    bool ready = s.has_model && s.error.empty() && s.system_index >= 0;
    if (!ready) {
        ImGui::TextDisabled("needs a valid model and a cluster");
        return;
    }
    if (q.gpus <= 0) q.gpus = s.parallel.world();
    ImGui::SetNextItemWidth(100);
    IntField("GPUs", &q.gpus, "GPU count to split over");
    ImGui::SameLine();
    ImGui::Text("batch %d", s.parallel.global_batch());
    ImGui::SameLine();
    if (q.pending > 0) {
        ImGui::TextUnformatted("searching...");
        if (--q.pending == 0) RunSearch(s);
    } else if (ImGui::Button("Find the best layouts")) {
        q.pending = 2;  // draw "searching..." first: the search blocks this frame
    }
    if (!q.error.empty()) ErrorText(q.error);
    if (!q.has_result) return;
    const SearchStats& st = q.result.stats;
    ImGui::Text("%llu layouts valid, %llu fit in memory; searched in %.0f ms", static_cast<unsigned long long>(st.valid),
                static_cast<unsigned long long>(st.fitting), q.seconds * 1e3);
    if (q.result.top.empty()) {
        ImGui::TextWrapped("No layout fits: more GPUs, more memory per GPU, or a smaller batch.");
        return;
    }
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit |
                                  ImGuiTableFlags_ScrollY;
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
            if (ImGui::SmallButton("use")) SetParallel(s, spec);
            ImGui::TableSetColumnIndex(1);
            ImGui::Text("%zu", i + 1);
            ImGui::TableSetColumnIndex(2);
            ImGui::Text("%.3f s", r.estimate.step_seconds);
            if (ImGui::IsItemHovered()) {
                const StepBreakdown& b = r.estimate.step;
                ImGui::SetTooltip("compute %.3f s, recompute %.3f, TP %.3f, CP %.3f, EP %.3f, PP %.3f, bubble %.3f, "
                                  "DP %.3f, optimizer %.3f",
                                  b.compute, b.recompute, b.tp_comm, b.cp_comm, b.ep_comm, b.pp_comm, b.bubble, b.dp_comm,
                                  b.optimizer);
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
