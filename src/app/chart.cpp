#include "app/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sc::app {

namespace {

bool Usable(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

void LineChart(const char* id, const std::vector<double>& x, const std::vector<ChartSeries>& series,
               const char* format_x, const char* format_y, float height) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float w = ImGui::GetContentRegionAvail().x, line = ImGui::GetTextLineHeight();
    ImGui::InvisibleButton(id, ImVec2(std::max(w, 50.0f), height));
    const bool hovered = ImGui::IsItemHovered();
    // The plot area leaves a line below for the x range and the legend above is drawn by the caller.
    const ImVec2 a(p.x + 2, p.y + 2), b(p.x + w - 2, p.y + height - line - 4);
    dl->AddRectFilled(a, b, IM_COL32(35, 35, 45, 255));
    if (x.size() < 1) return;
    double x0 = *std::min_element(x.begin(), x.end()), x1 = *std::max_element(x.begin(), x.end());
    double y1 = 0;
    for (const ChartSeries& s : series)
        for (double v : s.y)
            if (Usable(v)) y1 = std::max(y1, v);
    if (x1 <= x0) x1 = x0 + 1;
    if (y1 <= 0) y1 = 1;
    y1 *= 1.05;
    auto px = [&](double v) { return a.x + static_cast<float>((v - x0) / (x1 - x0)) * (b.x - a.x); };
    auto py = [&](double v) { return b.y - static_cast<float>(v / y1) * (b.y - a.y); };
    for (const ChartSeries& s : series) {
        ImVec2 prev;
        bool have = false;
        for (size_t i = 0; i < x.size() && i < s.y.size(); ++i) {
            if (!Usable(s.y[i])) {
                have = false;
                continue;
            }
            const ImVec2 q(px(x[i]), py(s.y[i]));
            if (have) dl->AddLine(prev, q, s.colour, 2.0f);
            dl->AddCircleFilled(q, 2.5f, s.colour);
            prev = q;
            have = true;
        }
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, format_y, y1 / 1.05);
    dl->AddText(ImVec2(a.x + 4, a.y + 2), IM_COL32(200, 200, 200, 255), buf);
    std::snprintf(buf, sizeof buf, format_x, x0);
    dl->AddText(ImVec2(a.x, b.y + 2), IM_COL32(200, 200, 200, 255), buf);
    std::snprintf(buf, sizeof buf, format_x, x1);
    dl->AddText(ImVec2(b.x - ImGui::CalcTextSize(buf).x, b.y + 2), IM_COL32(200, 200, 200, 255), buf);
    if (!hovered) return;
    // The nearest x to the mouse, and every series' value there.
    const float mx = ImGui::GetIO().MousePos.x;
    size_t best = 0;
    for (size_t i = 1; i < x.size(); ++i)
        if (std::fabs(px(x[i]) - mx) < std::fabs(px(x[best]) - mx)) best = i;
    dl->AddLine(ImVec2(px(x[best]), a.y), ImVec2(px(x[best]), b.y), IM_COL32(255, 255, 255, 120));
    ImGui::BeginTooltip();
    ImGui::Text(format_x, x[best]);
    for (const ChartSeries& s : series) {
        if (best >= s.y.size() || !Usable(s.y[best])) continue;
        ImGui::ColorButton(s.name, ImGui::ColorConvertU32ToFloat4(s.colour), ImGuiColorEditFlags_NoTooltip,
                           ImVec2(10, 10));
        ImGui::SameLine();
        std::snprintf(buf, sizeof buf, format_y, s.y[best]);
        ImGui::Text("%s %s", s.name, buf);
    }
    ImGui::EndTooltip();
}

}  // namespace sc::app
