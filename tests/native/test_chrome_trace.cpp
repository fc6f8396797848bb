// Chrome trace-event JSON for one rank: parses as JSON, complete events on per-category lanes, escaping.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/error.h"
#include "trace/byte_sink.h"
#include "trace/chrome_trace.h"

namespace sc {
namespace {

using nlohmann::json;

std::vector<json> Complete(const json& doc) {
    std::vector<json> out;
    for (const auto& e : doc.at("traceEvents"))
        if (e.at("ph") == "X") out.push_back(e);
    return out;
}

TEST(ChromeTrace, WritesCompleteEventsOnCategoryLanes) {
    std::vector<ChromeEvent> events = {
        {"L0.fwd.qkv", "compute", 0, 12.5, {{"flops", 1.5e12}, {"bytes", int64_t{4096}}}},
        {"allgather", "comm:tp", 12.5, 3.25, {{"bytes", int64_t{1} << 40}, {"group", std::string("tp0")}}},
        {"L0.fwd.mlp", "compute", 15.75, 0.001, {}},
        {"send to 3", "send", 16, 2, {{"peer", int64_t{3}}}},
    };
    StringSink sink;
    WriteChromeTrace(sink, 7, events);
    const json doc = json::parse(sink.bytes);

    const auto xs = Complete(doc);
    ASSERT_EQ(xs.size(), events.size());
    std::map<std::string, int> tid_of;
    for (size_t i = 0; i < xs.size(); ++i) {
        const json& e = xs[i];
        EXPECT_EQ(e.at("name"), events[i].name);
        EXPECT_EQ(e.at("cat"), events[i].category);
        EXPECT_EQ(e.at("pid"), 7);
        EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), events[i].start_us);
        EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), events[i].dur_us);
        const int tid = e.at("tid");
        const auto [it, inserted] = tid_of.emplace(events[i].category, tid);
        EXPECT_EQ(it->second, tid) << "one lane per category";
    }
    EXPECT_EQ(tid_of.size(), 3u);
    EXPECT_NE(tid_of["compute"], tid_of["comm:tp"]);
    EXPECT_EQ(xs[0].at("args").at("flops").get<double>(), 1.5e12);
    EXPECT_EQ(xs[0].at("args").at("bytes"), 4096);
    EXPECT_EQ(xs[1].at("args").at("bytes").get<int64_t>(), int64_t{1} << 40);
    EXPECT_EQ(xs[1].at("args").at("group"), "tp0");
    EXPECT_FALSE(xs[2].contains("args"));

    // Lanes and the process carry names, so Perfetto labels the rows.
    std::map<int, std::string> lane_names;
    std::string process_name;
    for (const auto& e : doc.at("traceEvents")) {
        if (e.at("ph") != "M") continue;
        EXPECT_EQ(e.at("pid"), 7);
        if (e.at("name") == "thread_name") lane_names[e.at("tid")] = e.at("args").at("name");
        if (e.at("name") == "process_name") process_name = e.at("args").at("name");
    }
    EXPECT_EQ(process_name, "rank 7");
    for (const auto& [cat, tid] : tid_of) EXPECT_EQ(lane_names[tid], cat);
}

TEST(ChromeTrace, EscapesStrings) {
    const std::string nasty = std::string("q\"uote \\back\nnew\ttab\r\b\f ctl\x01\x1f end µ ") + "\xe2\x82\xac";
    StringSink sink;
    ChromeTraceWriter w(sink, 0);
    w.Write({nasty, "cat \"x\"", 1, 1, {{"k\"ey", nasty}}});
    w.Finish();
    const auto xs = Complete(json::parse(sink.bytes));
    ASSERT_EQ(xs.size(), 1u);
    EXPECT_EQ(xs[0].at("name"), nasty);
    EXPECT_EQ(xs[0].at("cat"), "cat \"x\"");
    EXPECT_EQ(xs[0].at("args").at("k\"ey"), nasty);
    EXPECT_NE(sink.bytes.find("ctl\\u0001\\u001f"), std::string::npos);
}

TEST(ChromeTrace, InvalidUtf8BecomesReplacementCharacter) {
    StringSink sink;
    // A lone continuation byte, a truncated sequence, an overlong '/', and a surrogate half.
    WriteChromeTrace(sink, 0,
                     {{"a\x80"
                       "b\xe2\x82"
                       "c\xc0\xaf"
                       "d\xed\xa0\x80",
                       "compute",
                       0,
                       1,
                       {}}});
    const auto xs = Complete(json::parse(sink.bytes));  // nlohmann rejects invalid UTF-8
    ASSERT_EQ(xs.size(), 1u);
    const std::string r = "\xef\xbf\xbd";
    EXPECT_EQ(xs[0].at("name"), "a" + r + "b" + r + r + "c" + r + r + "d" + r + r + r);
}

TEST(ChromeTrace, TimesAreMicrosecondsRoundedToNanoseconds) {
    StringSink sink;
    WriteChromeTrace(sink, 1, {{"e", "compute", 1234567.0004, 0.0006, {}}, {"f", "compute", 2.5, 1e-4, {}}});
    EXPECT_NE(sink.bytes.find("\"ts\":1234567,\"dur\":0.001"), std::string::npos) << sink.bytes;
    EXPECT_NE(sink.bytes.find("\"ts\":2.5,\"dur\":0,"), std::string::npos) << sink.bytes;
}

TEST(ChromeTrace, NonFiniteArgsAreNullAndBadTimesThrow) {
    StringSink sink;
    ChromeTraceWriter w(sink, 0);
    w.Write({"e",
             "compute",
             0,
             1,
             {{"nan", std::nan("")}, {"inf", std::numeric_limits<double>::infinity()}, {"tiny", 1.25e-7}}});
    EXPECT_THROW(w.Write({"e", "compute", std::nan(""), 1, {}}), Error);
    EXPECT_THROW(w.Write({"e", "compute", 0, -1, {}}), Error);
    EXPECT_THROW(w.Write({"e", "compute", 0, std::numeric_limits<double>::infinity(), {}}), Error);
    w.Finish();
    EXPECT_THROW(w.Write({"e", "compute", 0, 1, {}}), Error);
    EXPECT_THROW(w.Finish(), Error);
    const auto xs = Complete(json::parse(sink.bytes));  // nothing half-written by the throwing calls
    ASSERT_EQ(xs.size(), 1u);
    EXPECT_TRUE(xs[0].at("args").at("nan").is_null());
    EXPECT_TRUE(xs[0].at("args").at("inf").is_null());
    EXPECT_DOUBLE_EQ(xs[0].at("args").at("tiny").get<double>(), 1.25e-7);
    EXPECT_THROW(ChromeTraceWriter(sink, -1), Error);
}

TEST(ChromeTrace, EmptyTraceIsValidJson) {
    StringSink sink;
    WriteChromeTrace(sink, 3, {});
    const json doc = json::parse(sink.bytes);
    EXPECT_TRUE(Complete(doc).empty());
    EXPECT_EQ(doc.at("traceEvents").size(), 2u);  // process_name, process_sort_index
}

}  // namespace
}  // namespace sc
