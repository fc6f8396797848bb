// Per-request timelines of a serving run as JSON: the report's "timelines" array and a Chrome trace
// (Perfetto). Composed here once so the CLI and the page write the same bytes.
#include <nlohmann/json.hpp>

#include "report/serve_report.h"
#include "report/serve_timeline_json.h"

namespace sc {

namespace {

using Json = nlohmann::ordered_json;

// The name of a scheduler index (the pool's first, then the decode pool's): its pool, its replica and, in a
// pipelined replica (pp schedulers, one batch in flight each), which of them.
std::string ReplicaName(const ServingConfig& c, int index) {
    const int first = c.pool.replicas * c.pool.pp;
    const bool decode = index >= first;
    const PoolConfig& p = decode ? *c.decode_pool : c.pool;
    const int local = decode ? index - first : index;
    std::string name = !c.decode_pool ? "replica " : decode ? "decode replica " : "prefill replica ";
    name += std::to_string(local / p.pp);
    if (p.pp > 1) name += ", pipeline batch " + std::to_string(local % p.pp);
    return name;
}

Json Meta(const char* what, int pid, long long tid, const std::string& name) {
    Json e = {{"name", what}, {"ph", "M"}, {"pid", pid}};
    if (tid >= 0) e["tid"] = tid;
    e["args"] = {{"name", name}};
    return e;
}

}  // namespace

Json TimelinesJson(const std::vector<RequestTimeline>& timelines) {
    Json all = Json::array();
    for (const RequestTimeline& t : timelines) {
        Json spans = Json::array();
        for (const TimelineSpan& s : t.spans) {
            Json j = {{"kind", NameOf(s.kind)},
                      {"start_s", s.start},
                      {"end_s", s.end},
                      {"replica", s.replica},
                      {"tokens", s.tokens}};
            if (s.swap_in > 0) j["swap_in_s"] = s.swap_in;
            spans.push_back(std::move(j));
        }
        all.push_back({{"id", t.id},
                       {"arrival_s", t.arrival},
                       {"input", t.input},
                       {"output", t.output},
                       {"priority", t.priority},
                       {"first_token_s", t.first_token},
                       {"completion_s", t.completion},
                       {"ttft_s", t.ttft()},
                       {"e2e_s", t.e2e()},
                       {"preemptions", t.preemptions},
                       {"spans", std::move(spans)}});
    }
    return all;
}

std::string ServeTimelineChromeJson(const engine::ServeRequest& q, const engine::ServeResult& run) {
    const ServingConfig& c = q.config;
    const int schedulers =
        c.pool.replicas * c.pool.pp + (c.decode_pool ? c.decode_pool->replicas * c.decode_pool->pp : 0);
    const int replicas = schedulers + (c.workload.retrieval.on() ? 1 : 0);  // the retrieval service after them
    Json events = Json::array();
    std::vector<std::vector<long long>> named(static_cast<size_t>(replicas));  // request rows announced per replica
    for (int p = 0; p < replicas; ++p) {
        events.push_back(Meta("process_name", p, -1, p < schedulers ? ReplicaName(c, p) : "retrieval service"));
        events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", p}, {"args", {{"sort_index", p}}}});
    }
    auto us = [](double s) { return s * 1e6; };
    for (const RequestTimeline& t : run.result.timelines) {
        const std::string row = "request " + std::to_string(t.id);
        for (const TimelineSpan& s : t.spans) {
            std::vector<long long>& rows = named[static_cast<size_t>(s.replica)];
            if (rows.empty() || rows.back() != t.id) {
                rows.push_back(t.id);
                events.push_back(Meta("thread_name", s.replica, t.id, row));
            }
            Json args = {{"request", t.id}, {"input", t.input}, {"output", t.output}};
            if (s.tokens > 0) args["tokens"] = s.tokens;
            if (s.swap_in > 0) args["swap_in_us"] = us(s.swap_in);
            events.push_back({{"name", NameOf(s.kind)},
                              {"cat", NameOf(s.kind)},
                              {"ph", "X"},
                              {"pid", s.replica},
                              {"tid", t.id},
                              {"ts", us(s.start)},
                              {"dur", us(s.end - s.start)},
                              {"args", std::move(args)}});
        }
        if (t.spans.empty()) continue;
        // First and last token as instants on the rows where they happened.
        for (const TimelineSpan& s : t.spans) {
            if (s.end != t.first_token || (s.kind != SpanKind::prefill && s.kind != SpanKind::decode)) continue;
            events.push_back({{"name", "first token"},
                              {"ph", "i"},
                              {"s", "t"},
                              {"pid", s.replica},
                              {"tid", t.id},
                              {"ts", us(t.first_token)}});
            break;
        }
        events.push_back({{"name", "last token"},
                          {"ph", "i"},
                          {"s", "t"},
                          {"pid", t.spans.back().replica},
                          {"tid", t.id},
                          {"ts", us(t.completion)}});
    }
    Json j = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
    return j.dump() + "\n";
}

}  // namespace sc
