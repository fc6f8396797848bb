// The Sweeps view: the co-design sweep of `stagecraft sweep` on the page's model and cluster, over one or two
// axes, drawn as a line chart (one axis) or a heatmap (two) of MFU or step time with ImGui's draw lists (ImPlot
// is not packaged by Debian). Hovering a point shows its best layout; "Export CSV" hands the CLI's CSV to the
// page's JS for download. The sweep runs in the page's worker pool, or a few points per frame without one
// (sweep_driver.cpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "app/app.h"
#include "app/app_state.h"
#include "app/panels.h"
#include "app/pool_jobs.h"
#include "imgui.h"
#include "report/format.h"

namespace sc::app {

namespace {

size_t AxisSize(const SweepAxes& a, int axis) {
    switch (axis) {
        case 0: return a.flops.size();
        case 1: return a.hbm_bw.size();
        case 2: return a.hbm_capacity.size();
        case 3: return a.domain.size();
        case 4: return a.net_bw.size();
        case 5: return a.topology.size();
        case 6: return a.overlap.size();
        default: return a.inr.size();
    }
}

// The position of `point` along `axis` (SweepPoints: flops outermost, inr innermost).
size_t Digit(const SweepAxes& a, size_t point, int axis) {
    size_t inner = 1;
    for (int k = axis + 1; k < static_cast<int>(std::size(kSweepAxes)); ++k) inner *= AxisSize(a, k);
    return (point / inner) % AxisSize(a, axis);
}

// The values of a "name=v1,v2" axis argument, as the user wrote them.
std::vector<std::string> Labels(const std::string& arg) {
    const std::string values = arg.substr(arg.find('=') + 1);
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= values.size()) {
        size_t comma = values.find(',', start);
        if (comma == std::string::npos) comma = values.size();
        out.push_back(values.substr(start, comma - start));
        start = comma + 1;
    }
    return out;
}

double Value(const AppState& s, const SweepCell& c) { return s.sweep.show_step ? c.step_seconds : c.mfu; }
std::string ValueText(const AppState& s, const SweepCell& c) {
    if (!c.found) return "no fit";
    if (s.sweep.show_step) return FormatSeconds(c.step_seconds, kTableTime);
    char b[16];
    std::snprintf(b, sizeof b, "%.1f%%", 100 * c.mfu);
    return b;
}

// Colour-blind-safe ramp (viridis endpoints and middle) for t in [0, 1].
ImU32 Ramp(double t) {
    const float stops[3][3] = {{0.267f, 0.005f, 0.329f}, {0.128f, 0.567f, 0.551f}, {0.993f, 0.906f, 0.144f}};
    t = std::clamp(t, 0.0, 1.0) * 2;
    const int i = t >= 1 ? 1 : 0;
    const float f = static_cast<float>(t - i);
    return ImGui::ColorConvertFloat4ToU32(ImVec4(stops[i][0] + f * (stops[i + 1][0] - stops[i][0]),
                                                 stops[i][1] + f * (stops[i + 1][1] - stops[i][1]),
                                                 stops[i][2] + f * (stops[i + 1][2] - stops[i][2]), 1));
}

void Tooltip(const AppState& s, const SweepCell& c, const std::string& where) {
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(where.c_str());
    if (c.found) {
        ImGui::Text("step %s, MFU %.1f%%", FormatSeconds(c.step_seconds, kTableTime).c_str(), 100 * c.mfu);
        ImGui::Text("best layout: %s", c.best.c_str());
    } else {
        ImGui::TextUnformatted("no layout fits");
    }
    ImGui::Text("%llu layouts evaluated", static_cast<unsigned long long>(c.valid));
    (void)s;
    ImGui::EndTooltip();
}

void DrawChart(AppState& s) {
    const auto& w = s.sweep;
    if (w.cells.empty()) return;
    const int ax1 = w.ran[0], ax2 = w.ran[1];
    if (ax1 < 0 || w.args.empty()) return;
    const std::vector<std::string> l1 = Labels(w.args[0]);
    const std::vector<std::string> l2 = ax2 >= 0 && w.args.size() > 1 ? Labels(w.args[1]) : std::vector<std::string>{""};
    double hi = 0;
    for (const SweepCell& c : w.cells)
        if (c.found) hi = std::max(hi, Value(s, c));
    if (hi <= 0) hi = 1;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const ImVec2 size(std::max(avail.x, 200.0f), std::max(avail.y, 120.0f));
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("chart", size);
    const bool hovered = ImGui::IsItemHovered();
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float left = 60, bottom = 22, top = ax2 >= 0 ? 14.0f : 6.0f, right = 10;
    const ImVec2 a(p0.x + left, p0.y + top), b(p0.x + size.x - right, p0.y + size.y - bottom);
    dl->AddRect(a, b, ImGui::GetColorU32(ImGuiCol_Border));
    const size_t n1 = l1.size(), n2 = l2.size();
    const float cw = (b.x - a.x) / n1, ch = (b.y - a.y) / n2;
    for (size_t i = 0; i < n1; ++i)
        dl->AddText(ImVec2(a.x + (i + 0.5f) * cw - ImGui::CalcTextSize(l1[i].c_str()).x / 2, b.y + 3),
                    ImGui::GetColorU32(ImGuiCol_Text), l1[i].c_str());
    dl->AddText(ImVec2(p0.x, b.y + 3), ImGui::GetColorU32(ImGuiCol_TextDisabled), kSweepAxes[ax1]);
    const SweepCell* hover = nullptr;
    std::string where;
    if (ax2 < 0) {  // line chart: value over axis 1
        SweepCell top;
        top.found = true, top.step_seconds = hi, top.mfu = hi;
        dl->AddText(ImVec2(p0.x, a.y), ImGui::GetColorU32(ImGuiCol_Text), ValueText(s, top).c_str());
        dl->AddText(ImVec2(p0.x, b.y - ImGui::GetTextLineHeight()), ImGui::GetColorU32(ImGuiCol_Text), "0");
        ImVec2 prev;
        bool has_prev = false;
        for (const SweepCell& c : w.cells) {
            const size_t i = Digit(w.axes, c.key.point, ax1);
            const ImVec2 pt(a.x + (i + 0.5f) * cw, b.y - static_cast<float>(Value(s, c) / hi) * (b.y - a.y));
            if (!c.found) {
                dl->AddText(ImVec2(pt.x - 12, b.y - 18), ImGui::GetColorU32(ImGuiCol_TextDisabled), "n/f");
                has_prev = false;
            } else {
                if (has_prev) dl->AddLine(prev, pt, Ramp(0.5), 2);
                dl->AddCircleFilled(pt, 4, Ramp(0.5));
                prev = pt, has_prev = true;
            }
            if (hovered && mouse.x >= a.x + i * cw && mouse.x < a.x + (i + 1) * cw) {
                hover = &c;
                where = std::string(kSweepAxes[ax1]) + " = " + (i < n1 ? l1[i] : "?");
            }
        }
    } else {  // heatmap: axis 1 across, axis 2 down
        dl->AddText(ImVec2(p0.x, p0.y - 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), kSweepAxes[ax2]);
        for (size_t j = 0; j < n2; ++j)
            dl->AddText(ImVec2(p0.x, a.y + (j + 0.5f) * ch - ImGui::GetTextLineHeight() / 2),
                        ImGui::GetColorU32(ImGuiCol_Text), l2[j].c_str());
        for (const SweepCell& c : w.cells) {
            const size_t i = Digit(w.axes, c.key.point, ax1), j = Digit(w.axes, c.key.point, ax2);
            const ImVec2 c0(a.x + i * cw, a.y + j * ch), c1(a.x + (i + 1) * cw, a.y + (j + 1) * ch);
            const double t = Value(s, c) / hi;
            dl->AddRectFilled(c0, c1, c.found ? Ramp(s.sweep.show_step ? 1 - t : t) : ImGui::GetColorU32(ImGuiCol_FrameBg));
            const std::string text = ValueText(s, c);
            const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
            if (ts.x < cw - 4 && ts.y < ch) {
                const bool light = c.found && (s.sweep.show_step ? 1 - t : t) > 0.6;
                dl->AddText(ImVec2((c0.x + c1.x - ts.x) / 2, (c0.y + c1.y - ts.y) / 2),
                            light ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255), text.c_str());
            }
            if (hovered && mouse.x >= c0.x && mouse.x < c1.x && mouse.y >= c0.y && mouse.y < c1.y) {
                hover = &c;
                where = std::string(kSweepAxes[ax1]) + " = " + (i < n1 ? l1[i] : "?") + ", " + kSweepAxes[ax2] +
                        " = " + (j < n2 ? l2[j] : "?");
            }
        }
    }
    if (hover) Tooltip(s, *hover, where);
}

void AxisPicker(AppState& s, int i) {
    auto& w = s.sweep;
    const char* current = w.axis[i] >= 0 ? kSweepAxes[w.axis[i]] : "none";
    ImGui::SetNextItemWidth(120);
    const std::string label = i == 0 ? "axis 1" : "axis 2";
    if (ImGui::BeginCombo(label.c_str(), current)) {
        if (i == 1 && ImGui::Selectable("none", w.axis[1] < 0)) w.axis[1] = -1;
        for (int k = 0; k < static_cast<int>(std::size(kSweepAxes)); ++k)
            if (ImGui::Selectable(kSweepAxes[k], w.axis[i] == k)) w.axis[i] = k;
        ImGui::EndCombo();
    }
    if (w.axis[i] < 0) return;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(200);
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s", w.values[i].c_str());
    const std::string vlabel = "values##" + std::to_string(i);
    if (ImGui::InputText(vlabel.c_str(), buf, sizeof buf)) w.values[i] = buf;
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("comma-separated: factors for flops, hbm_bw, hbm_capacity, net_bw; GPUs for domain;\n"
                          "two_tier,fullflat for topology; on,off for overlap and inr");
}

}  // namespace

void DrawSweepPanel(AppState& s) {
    auto& w = s.sweep;
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(d.x * 0.45f, d.y * 0.62f + 5), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize(ImVec2(d.x * 0.55f - 10, d.y * 0.38f - 15), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowCollapsed(true, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowBgAlpha(1.0f);  // it opens over the Training window: its text must not show through
    if (!ImGui::Begin("Sweeps")) {
        ImGui::End();
        return;
    }
    AxisPicker(s, 0);
    AxisPicker(s, 1);
    const engine::Request r = CurrentRequest(s);
    ImGui::Text("%s on %d GPUs, batch %d (the Best layout tab's)", s.model.name.c_str(), r.search.gpus, r.search.batch);
    const bool running = w.snapshot != nullptr;
    if (running) {
        const float f = w.shards ? static_cast<float>(w.done) / w.shards : 0;
        const double now =
            std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count() - w.started;
        char label[64];
        if (w.done > 0)
            std::snprintf(label, sizeof label, "%d%%, ETA %.0f s", static_cast<int>(100 * f), now / w.done * (w.shards - w.done));
        else
            std::snprintf(label, sizeof label, "%d%%", static_cast<int>(100 * f));
        ImGui::ProgressBar(f, ImVec2(200, 0), label);
        ImGui::SameLine();
        if (ImGui::Button("Cancel##sweep")) CancelSweep(s);
        ImGui::SameLine();
        ImGui::TextDisabled(s.pool.sweep_id ? "in %d web workers" : "on the page's thread", s.pool.workers);
    } else if (ImGui::Button("Run sweep")) {
        StartSweep(s);
    }
    if (!w.error.empty()) ErrorText(w.error);
    if (w.has_result) {
        ImGui::SameLine();
        if (ImGui::Button("Export CSV")) w.csv_requested = true;
        ImGui::SameLine();
        ImGui::Checkbox("step time", &w.show_step);
        ImGui::SameLine();
        ImGui::Text("%zu points in %.1f s", w.cells.size(), w.seconds);
    }
    if (w.has_result || running) DrawChart(s);
    ImGui::End();
}

}  // namespace sc::app
