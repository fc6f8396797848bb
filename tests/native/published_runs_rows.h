// The published-runs tables (training/published_runs.h, inference/published_serving_runs.h) as source lines: the
// compiled table's, and the one its validation rows give, so a test can compare the two and print what to paste.
#pragma once
#include <algorithm>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "training/published_runs.h"

namespace sctest {

// The lines of a compiled table, as its source file spells them.
inline std::string PublishedRunsRows(std::span<const sc::PublishedRuns> table) {
    std::string o;
    char buf[200];
    for (const sc::PublishedRuns& p : table) {
        std::snprintf(buf, sizeof buf, "    {\"%s\", \"%s\", %d, %.2f, %.2f, %.2f, %.2f, %.2f},\n", p.accelerator,
                      p.precision, p.runs, p.min, p.p25, p.median, p.p75, p.max);
        o += buf;
    }
    return o;
}

// Measured / predicted ratios by (accelerator, precision): the lines their min, quartiles and max make.
using RatiosByPart = std::map<std::pair<std::string, std::string>, std::vector<double>>;
inline std::string PublishedRunsRows(RatiosByPart ratios) {
    std::string o;
    char buf[200];
    for (auto& [key, v] : ratios) {
        std::sort(v.begin(), v.end());
        std::snprintf(buf, sizeof buf, "    {\"%s\", \"%s\", %zu, %.2f, %.2f, %.2f, %.2f, %.2f},\n", key.first.c_str(),
                      key.second.c_str(), v.size(), v.front(), Quantile(v, 0.25), Quantile(v, 0.5), Quantile(v, 0.75),
                      v.back());
        o += buf;
    }
    return o;
}

}  // namespace sctest
