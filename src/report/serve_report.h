// Serving results as text and JSON (`stagecraft serve`, the page's Inference view): composed once here so the
// CLI and the page print the same strings.
#pragma once
#include <string>
#include <vector>

#include "engine/serve.h"

namespace sc {

// One simulation: the deployment, the KV capacity, latency percentiles, throughput, SLO, the iteration
// breakdown. The JSON has the same numbers in SI units (seconds, bytes) and the time series.
std::string ServeReportText(const engine::ServeRequest& request, const engine::ServeResult& result);
std::string ServeReportJson(const engine::ServeRequest& request, const engine::ServeResult& result);

// What the prefix cache did (engine.prefix_caching): "93.8% of 1024 admissions hit (960 on the GPU, 0 from the host
// tier), 1966080 prompt tokens not computed", the remote store's hits when it has any, and each tier's bytes when
// it copied any.
std::string PrefixCacheText(const ServingResult& r);
// The report's "speculation" line: decode steps that verified drafts, the tokens each yielded against the expected
// (1 - a^(k+1)) / (1 - a), the share of drafts accepted.
std::string SpeculationText(const Speculation& s, const ServingResult& r);

// The result's per-request timelines (ServingResult::timelines) as Chrome trace-event JSON, which Perfetto and
// chrome://tracing open: one process per replica, one thread (row) per request, one complete event per span
// (queued, prefill chunk, decode, stalled, preempted, KV transfer), instant events at first and last token.
std::string ServeTimelineChromeJson(const engine::ServeRequest& request, const engine::ServeResult& result);

// A rate sweep: one row per offered rate (throughput, goodput, TTFT / TPOT / E2E p50 and p99).
std::string ServeSweepReportText(const engine::ServeSweepSnapshot& snap,
                                 const std::vector<engine::ServeSweepPoint>& points);
std::string ServeSweepReportJson(const engine::ServeSweepSnapshot& snap,
                                 const std::vector<engine::ServeSweepPoint>& points);

// A sweep of one or two description fields (`stagecraft serve --sweep KEY=V1,V2,...`, twice for a grid): the keys,
// and for each point its value of each key (the second key varying fastest).
struct FieldSweepPoints {
    std::vector<std::string> keys;
    std::vector<std::vector<std::string>> values;
};
// Point i is `requests[i]`, the description with the keys set to points.values[i], and its result. One row a point:
// its values, throughput, goodput and SLO, TTFT and TPOT at p50 and p99, KV occupancy, preemptions and, with prefix
// caching, the share of admissions that hit.
std::string ServeFieldSweepText(const FieldSweepPoints& points, const std::vector<engine::ServeRequest>& requests,
                                const std::vector<engine::ServeResult>& results);
// The same as JSON: {"sweep": {"keys"}, "points": [{"values", "deployment", "result"}]}, each point's deployment and
// result as `serve --json` gives them (without the series).
std::string ServeFieldSweepJson(const FieldSweepPoints& points, const std::vector<engine::ServeRequest>& requests,
                                const std::vector<engine::ServeResult>& results);

}  // namespace sc
