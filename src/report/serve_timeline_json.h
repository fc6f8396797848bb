// The "timelines" array of the serving JSON report (serve_timeline_report.cpp), for serve_report.cpp.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "inference/request_timeline.h"

namespace sc {
nlohmann::ordered_json TimelinesJson(const std::vector<RequestTimeline>& timelines);
}  // namespace sc
