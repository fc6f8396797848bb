// The pipeline schedule laid out in time (TimePipeline, training/estimate.h), under the estimate: a row per stage,
// each step a box coloured by its pass with its microbatch inside when it fits, the bottleneck stage marked; hover
// for a step. The boxes are the CLI's `estimate --timeline-json` events.
#include <algorithm>
#include <cstdio>

#include "app/palette.h"
#include "app/panels.h"
#include "imgui.h"
#include "report/format.h"
#include "report/pipeline_timeline_json.h"

namespace sc::app {

static ImU32 PassColour(char pass) {
    switch (pass) {
        case 'F': return kBlue;
        case 'I': return kVermillion;
        case 'W': return kYellow;
        default: return kOrange;  // a whole backward
    }
}

// The step of `rank` under time `t`, or null (spans are in time order on a rank).
static const PipelineSpan* SpanAt(const std::vector<PipelineSpan>& rank, double t) {
    auto it =
        std::upper_bound(rank.begin(), rank.end(), t, [](double v, const PipelineSpan& s) { return v < s.start; });
    if (it == rank.begin()) return nullptr;
    --it;
    return t < it->end ? &*it : nullptr;
}

static void Legend(bool split, bool pairs) {
    const struct {
        char pass;
        const char* label;
    } kinds[] = {{'F', "forward"}, {'B', "backward"}, {'I', "input half"}, {'W', "weight half"}};
    int shown = 0;
    for (const auto& k : kinds) {
        if (!split && (k.pass == 'I' || k.pass == 'W')) continue;
        if (shown++) ImGui::SameLine(0, 14);
        ImGui::ColorButton(k.label, ImGui::ColorConvertU32ToFloat4(PassColour(k.pass)),
                           ImGuiColorEditFlags_NoTooltip | ImGuiColorEditFlags_NoDragDrop, ImVec2(10, 10));
        ImGui::SameLine(0, 4);
        ImGui::TextUnformatted(k.label);
    }
    if (pairs) {
        ImGui::SameLine(0, 14);
        ImGui::TextUnformatted("white edge: an overlapped forward-backward pair");
    }
}

void DrawPipelineTimeline(const PipelineTimeline& t, bool* save) {
    if (t.ranks.empty() || t.end <= 0 || !ImGui::TreeNode("pipeline schedule")) return;
    ImGui::TextDisabled("%d of the step's %d microbatches: fill, steady state and drain; the steady state repeats",
                        t.microbatches, t.step_microbatches);
    int chunks = 1;
    bool split = false, pairs = false;
    for (const auto& rank : t.ranks)
        for (const PipelineSpan& sp : rank)
            chunks = std::max(chunks, sp.chunk + 1), split |= sp.pass == 'I', pairs |= sp.paired;
    const int n = static_cast<int>(t.ranks.size());
    const float text_h = ImGui::GetTextLineHeight();
    // A row per stage: text-high up to 16 stages, thinner beyond so that 64 stages stay on a screen.
    const float row = n <= 16 ? text_h + 4 : std::max(3.0f, 16 * (text_h + 4) / n);
    const float label_w = ImGui::CalcTextSize("stage 00*").x + 6;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float w = std::max(50.0f, ImGui::GetContentRegionAvail().x - label_w);
    ImGui::InvisibleButton("##pipeline", ImVec2(label_w + w, row * n));
    const bool hovered = ImGui::IsItemHovered();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float x0 = p.x + label_w;
    const auto px = [&](double s) { return x0 + static_cast<float>(s / t.end) * w; };
    char label[48];
    for (int r = 0; r < n; ++r) {
        const float y = p.y + r * row;
        if (row >= text_h) {
            std::snprintf(label, sizeof label, "stage %d%s", r, r == t.bottleneck_stage ? "*" : "");
            dl->AddText(ImVec2(p.x, y + (row - text_h) / 2), ImGui::GetColorU32(ImGuiCol_Text), label);
        }
        dl->AddRectFilled(ImVec2(x0, y), ImVec2(x0 + w, y + row - 1), IM_COL32(50, 50, 60, 255));
        float drawn_to = -1;  // boxes under a pixel already drawn are skipped: a row costs at most w boxes
        for (const PipelineSpan& sp : t.ranks[r]) {
            const float a = px(sp.start), b = std::max(px(sp.end), a + 1);
            if (b <= drawn_to) continue;
            dl->AddRectFilled(ImVec2(a, y), ImVec2(b, y + row - 1), PassColour(sp.pass));
            if (sp.paired && b - a >= 3) dl->AddRect(ImVec2(a, y), ImVec2(b, y + row - 1), kWhite);
            drawn_to = b;
            const std::string name = PipelineSpanName(sp, chunks).substr(1);
            if (row >= text_h && b - a > ImGui::CalcTextSize(name.c_str()).x + 2)
                dl->AddText(ImVec2(a + 1, y + (row - text_h) / 2), IM_COL32(0, 0, 0, 255), name.c_str());
        }
    }
    if (hovered) {
        const ImVec2 m = ImGui::GetIO().MousePos;
        const int r = static_cast<int>((m.y - p.y) / row);
        const double at = (m.x - x0) / w * t.end;
        if (r >= 0 && r < n && at >= 0)
            if (const PipelineSpan* sp = SpanAt(t.ranks[r], at))
                ImGui::SetTooltip("stage %d: %s, %s of microbatch %d%s\n%s to %s (%s)%s", r,
                                  PipelineSpanName(*sp, chunks).c_str(), PipelinePassName(sp->pass), sp->microbatch,
                                  chunks > 1 ? (", chunk " + std::to_string(sp->chunk)).c_str() : "",
                                  FormatSeconds(sp->start, kPanelTime).c_str(),
                                  FormatSeconds(sp->end, kPanelTime).c_str(),
                                  FormatSeconds(sp->end - sp->start, kPanelTime).c_str(),
                                  sp->paired ? "\nhalf of an overlapped forward-backward pair: an MoE all-to-all of "
                                               "either hides behind the other's compute"
                                             : "");
    }
    ImGui::TextDisabled("0 to %s; * the bottleneck stage, idle %s of it", FormatSeconds(t.end, kPanelTime).c_str(),
                        FormatSeconds(t.Idle(t.bottleneck_stage), kPanelTime).c_str());
    Legend(split, pairs);
    if (ImGui::Button("Perfetto JSON##pipeline")) *save = true;
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "saves these steps as Chrome trace JSON, a lane per stage, for ui.perfetto.dev (the CLI: "
            "stagecraft estimate --timeline-json FILE)");
    ImGui::TreePop();
}

}  // namespace sc::app
