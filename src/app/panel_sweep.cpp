// The Sweeps view: the co-design sweep of `stagecraft sweep` on the page's model and cluster, over one or two
// axes, drawn as a line chart (one axis) or a heatmap (two) of MFU or step time with ImGui's draw lists (ImPlot
// is not packaged by Debian). Hovering a point shows its best layout; "Export CSV" hands the CLI's CSV to the
// page's JS for download. The sweep runs in the page's worker pool, or a few points per frame without one
// (sweep_driver.cpp).
#include <algorithm>
#include <chrono>
#include <cmath>
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
        case 7: return a.inr.size();
        case 8: return a.gpus.size();
        default: return a.power.size();
    }
}

// The position of `point` along `axis` (SweepPoints: flops outermost, power innermost).
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

double Value(const AppState& s, const SweepCell& c) { return SweepMetricValue(s.sweep.metric, c); }
// A value of the chart's metric as text (the axis's top and the cells).
std::string MetricText(int metric, double v) {
    if (metric == kMetricStep) return FormatSeconds(v, kTableTime);
    return FormatNumber(metric == kMetricMfu ? "%.1f%%" : "%.3g", metric == kMetricMfu ? 100 * v : v);
}
std::string ValueText(const AppState& s, const SweepCell& c) {
    return c.found ? MetricText(s.sweep.metric, Value(s, c)) : "no fit";
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

void Tooltip(const SweepCell& c, const std::string& where) {
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(where.c_str());
    if (c.found) {
        ImGui::Text("step %s, MFU %.1f%%", FormatSeconds(c.step_seconds, kTableTime).c_str(), 100 * c.mfu);
        if (c.energy_joules > 0)
            ImGui::Text("energy %s a step, %.3g tokens/J", FormatEnergy(c.energy_joules).c_str(),
                        SweepMetricValue(kMetricTokensPerJoule, c));
        if (c.point.power_w > 0) ImGui::Text("power limit %.0f W", c.point.power_w);
        ImGui::Text("best layout: %s", ParallelSpecString(c.best).c_str());
    } else {
        ImGui::TextUnformatted("no layout fits");
    }
    ImGui::Text("%llu layouts evaluated", static_cast<unsigned long long>(c.stats.valid));
    ImGui::EndTooltip();
}

// Every `LabelStride`-th of `n` labels, so that labels `width` apart never overlap (a 400-value axis shows some).
size_t LabelStride(const std::vector<std::string>& labels, float spacing) {
    float widest = 0;
    for (const std::string& l : labels) widest = std::max(widest, ImGui::CalcTextSize(l.c_str()).x);
    return spacing <= 0 ? labels.size() : std::max<size_t>(1, static_cast<size_t>(std::ceil((widest + 6) / spacing)));
}

// More values than pixels: the values fall into `bins` bins of whole pixels, and the chart draws one cell per
// bin, the first of it (what a pixel can show); the tooltip still names the exact cell under the mouse.
// The first value of bin b is ceil(b * n / bins).
size_t Bins(size_t n, float pixels) { return std::clamp<size_t>(static_cast<size_t>(pixels), 1, n); }
bool FirstOfBin(size_t i, size_t n, size_t bins) {
    const size_t b = i * bins / n;
    return i == (b * n + bins - 1) / bins;
}

// The chart's frame: plot rectangle [a, b], one column per value of axis 1 and one row per value of axis 2.
struct Chart {
    const AppState* s;
    int ax1, ax2;
    std::vector<std::string> l1, l2;  // the values as the user wrote them
    double lo, hi;                    // the smallest and largest value charted (the heatmap's colour range)
    ImVec2 p0, a, b;
    float cw, ch;
    bool hovered;
    ImVec2 mouse;
    ImDrawList* dl;
    const SweepCell* hover = nullptr;
    std::string where;
};

void DrawLine(Chart& k) {
    const auto& w = k.s->sweep;
    k.dl->AddText(ImVec2(k.p0.x, k.a.y), ImGui::GetColorU32(ImGuiCol_Text), MetricText(w.metric, k.hi).c_str());
    k.dl->AddText(ImVec2(k.p0.x, k.b.y - ImGui::GetTextLineHeight()), ImGui::GetColorU32(ImGuiCol_Text), "0");
    ImVec2 prev;
    bool has_prev = false;
    const size_t n = k.l1.size(), bins = Bins(n, k.b.x - k.a.x);
    for (const SweepCell& c : w.cells) {
        const size_t i = Digit(w.axes, c.key.point, k.ax1);
        const ImVec2 pt(k.a.x + (i + 0.5f) * k.cw, k.b.y - static_cast<float>(Value(*k.s, c) / k.hi) * (k.b.y - k.a.y));
        const bool drawn = FirstOfBin(i, n, bins);  // one point per pixel column
        if (drawn && !c.found) {
            if (k.cw >= 24)
                k.dl->AddText(ImVec2(pt.x - 12, k.b.y - 18), ImGui::GetColorU32(ImGuiCol_TextDisabled), "n/f");
            has_prev = false;
        } else if (drawn) {
            if (has_prev) k.dl->AddLine(prev, pt, Ramp(0.5), 2);
            if (k.cw >= 8) k.dl->AddCircleFilled(pt, 4, Ramp(0.5));
            prev = pt, has_prev = true;
        }
        if (k.hovered && k.mouse.x >= k.a.x + i * k.cw && k.mouse.x < k.a.x + (i + 1) * k.cw) {
            k.hover = &c;
            k.where = std::string(kSweepAxes[k.ax1]) + " = " + (i < k.l1.size() ? k.l1[i] : "?");
        }
    }
}

void DrawHeatmap(Chart& k) {
    const auto& w = k.s->sweep;
    k.dl->AddText(ImVec2(k.p0.x, k.p0.y - 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), kSweepAxes[k.ax2]);
    const float line = ImGui::GetTextLineHeight();
    const size_t stride2 = std::max<size_t>(1, static_cast<size_t>(std::ceil(line / std::max(k.ch, 1e-3f))));
    for (size_t j = 0; j < k.l2.size(); j += stride2)
        k.dl->AddText(ImVec2(k.p0.x, k.a.y + (j + 0.5f) * k.ch - line / 2), ImGui::GetColorU32(ImGuiCol_Text),
                      k.l2[j].c_str());
    const size_t n1 = k.l1.size(), n2 = k.l2.size();
    const size_t bins1 = Bins(n1, k.b.x - k.a.x), bins2 = Bins(n2, k.b.y - k.a.y);
    const float bw = (k.b.x - k.a.x) / bins1, bh = (k.b.y - k.a.y) / bins2;
    const bool room_for_text = k.cw >= 24 && k.ch >= line;
    for (const SweepCell& c : w.cells) {
        const size_t i = Digit(w.axes, c.key.point, k.ax1), j = Digit(w.axes, c.key.point, k.ax2);
        const ImVec2 c0(k.a.x + i * k.cw, k.a.y + j * k.ch), c1(k.a.x + (i + 1) * k.cw, k.a.y + (j + 1) * k.ch);
        if (FirstOfBin(i, n1, bins1) && FirstOfBin(j, n2, bins2)) {
            // Colours span the range seen, so small differences show; the printed values say how large they are.
            const double t = k.hi > k.lo ? (Value(*k.s, c) - k.lo) / (k.hi - k.lo) : 1;
            const double shade = w.metric == kMetricStep ? 1 - t : t;  // bright is good: high MFU, short step
            const size_t x = i * bins1 / n1, y = j * bins2 / n2;
            const ImVec2 r0(k.a.x + x * bw, k.a.y + y * bh), r1(k.a.x + (x + 1) * bw, k.a.y + (y + 1) * bh);
            k.dl->AddRectFilled(r0, r1, c.found ? Ramp(shade) : ImGui::GetColorU32(ImGuiCol_FrameBg));
            const std::string text = room_for_text ? ValueText(*k.s, c) : std::string();
            const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
            if (room_for_text && ts.x < k.cw - 4 && ts.y < k.ch)
                k.dl->AddText(ImVec2((c0.x + c1.x - ts.x) / 2, (c0.y + c1.y - ts.y) / 2),
                              c.found && shade > 0.6 ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255),
                              text.c_str());
        }
        if (k.hovered && k.mouse.x >= c0.x && k.mouse.x < c1.x && k.mouse.y >= c0.y && k.mouse.y < c1.y) {
            k.hover = &c;
            k.where = std::string(kSweepAxes[k.ax1]) + " = " + (i < k.l1.size() ? k.l1[i] : "?") + ", " +
                      kSweepAxes[k.ax2] + " = " + (j < k.l2.size() ? k.l2[j] : "?");
        }
    }
}

void DrawChart(const AppState& s) {
    const auto& w = s.sweep;
    if (w.cells.empty() || w.ran[0] < 0 || w.args.empty()) return;
    Chart k{};
    k.s = &s;
    k.ax1 = w.ran[0];
    k.ax2 = w.args.size() > 1 ? w.ran[1] : -1;
    k.l1 = Labels(w.args[0]);
    k.l2 = k.ax2 >= 0 ? Labels(w.args[1]) : std::vector<std::string>{""};
    k.hi = 0;
    k.lo = -1;
    for (const SweepCell& c : w.cells)
        if (c.found) k.hi = std::max(k.hi, Value(s, c)), k.lo = k.lo < 0 ? Value(s, c) : std::min(k.lo, Value(s, c));
    if (k.hi <= 0) k.hi = 1;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const ImVec2 size(std::max(avail.x, 200.0f), std::max(avail.y, 120.0f));
    k.p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("chart", size);
    k.hovered = ImGui::IsItemHovered();
    k.mouse = ImGui::GetIO().MousePos;
    k.dl = ImGui::GetWindowDrawList();
    const float left = 60, bottom = 22, top = k.ax2 >= 0 ? 14.0f : 6.0f, right = 10;
    k.a = ImVec2(k.p0.x + left, k.p0.y + top);
    k.b = ImVec2(k.p0.x + size.x - right, k.p0.y + size.y - bottom);
    k.cw = (k.b.x - k.a.x) / k.l1.size();
    k.ch = (k.b.y - k.a.y) / k.l2.size();
    k.dl->AddRect(k.a, k.b, ImGui::GetColorU32(ImGuiCol_Border));
    for (size_t i = 0, stride = LabelStride(k.l1, k.cw); i < k.l1.size(); i += stride)
        k.dl->AddText(ImVec2(k.a.x + (i + 0.5f) * k.cw - ImGui::CalcTextSize(k.l1[i].c_str()).x / 2, k.b.y + 3),
                      ImGui::GetColorU32(ImGuiCol_Text), k.l1[i].c_str());
    k.dl->AddText(ImVec2(k.p0.x, k.b.y + 3), ImGui::GetColorU32(ImGuiCol_TextDisabled), kSweepAxes[k.ax1]);
    if (k.ax2 < 0) DrawLine(k);
    else DrawHeatmap(k);
    if (k.hover) Tooltip(*k.hover, k.where);
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
        ImGui::SetTooltip(
            "comma-separated: factors for flops, hbm_bw, hbm_capacity, net_bw; GPUs for domain;\n"
            "two_tier,fullflat for topology; on,off for overlap and inr; GPU counts for gpus\n"
            "(the global batch kept; a fixed layout's dp stretched to each count); W per GPU for power\n"
            "(a power limit: compute at (limit / board)^(1/3) of its clock; 0: the cluster's)");
}

}  // namespace

void DrawSweepPanel(AppState& s) {
    auto& w = s.sweep;
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(d.x * 0.45f, d.y * 0.62f + 5), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize(ImVec2(d.x * 0.55f - 10, d.y * 0.38f - 15), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowCollapsed(true, ImGuiCond_FirstUseEver);
    if (s.apply_views) ImGui::SetNextWindowCollapsed(!s.sweeps_open, ImGuiCond_Always);  // a link opened it
    ImGui::SetNextWindowBgAlpha(1.0f);  // it opens over the Training window: its text must not show through
    const bool drawn = ImGui::Begin("Sweeps");
    s.sweeps_open = !ImGui::IsWindowCollapsed();
    if (!drawn) {
        ImGui::End();
        return;
    }
    AxisPicker(s, 0);
    AxisPicker(s, 1);
    const engine::Request r = CurrentRequest(s);
    const bool running = w.snapshot != nullptr;
    ImGui::BeginDisabled(running);
    ImGui::Checkbox("only the current layout", &w.fixed_layout);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(
            "on: the Parallelism panel's layout at every point (one estimate each: how this deployment\n"
            "responds to the hardware); off: the best layout at each point (a layout search each)");
    ImGui::SameLine();
    if (w.fixed_layout)
        ImGui::Text("%s, %s (the Parallelism panel's)", s.model.name.c_str(), ParallelSpecString(s.parallel).c_str());
    else
        ImGui::Text("%s on %d GPUs, batch %d (the Best layout tab's)", s.model.name.c_str(), r.search.gpus,
                    r.search.batch);
    if (running) {
        const float f = w.shards ? static_cast<float>(w.done) / w.shards : 0;
        const double now =
            std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count() - w.started;
        char label[64];
        if (w.done > 0)
            std::snprintf(label, sizeof label, "%d%%, ETA %.0f s", static_cast<int>(100 * f),
                          now / w.done * (w.shards - w.done));
        else std::snprintf(label, sizeof label, "%d%%", static_cast<int>(100 * f));
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
        ImGui::SetNextItemWidth(100);
        ImGui::Combo("chart", &w.metric, kSweepMetrics, static_cast<int>(std::size(kSweepMetrics)));
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "tokens/J: a step's tokens over its energy, every GPU at its power limit (else its "
                "board power) for the whole step");
        ImGui::SameLine();
        ImGui::Text("%zu points in %.1f s", w.cells.size(), w.seconds);
    }
    if (w.has_result || running) DrawChart(s);
    ImGui::End();
}

}  // namespace sc::app
