// A line chart drawn with ImGui's draw lists (ImPlot is not packaged by Debian): a few series over one x axis,
// the axes' ranges written at their ends, and on hover a cursor with every series' value at the nearest x.
#pragma once
#include <vector>

#include "imgui.h"

namespace sc::app {

struct ChartSeries {
    const char* name;
    ImU32 colour;
    std::vector<double> y;  // one per x; NaN or negative values are skipped
};

// `format_x` / `format_y` are printf formats of one double ("%.1f req/s").
void LineChart(const char* id, const std::vector<double>& x, const std::vector<ChartSeries>& series,
               const char* format_x, const char* format_y, float height);

}  // namespace sc::app
