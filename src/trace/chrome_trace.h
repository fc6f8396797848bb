// One rank's timeline as Chrome trace-event JSON ({"traceEvents":[...]}), which Perfetto and
// chrome://tracing open. Every event is a complete event ("ph":"X") with pid = rank and one thread
// lane (tid) per category, so compute, each parallelism's comm and p2p traffic read as separate rows.
// This is for looking at a schedule, not for ASTRA-sim: the simulator input is chakra_et.h.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "trace/byte_sink.h"

namespace sc {

struct ChromeArg {
    std::string key;
    std::variant<int64_t, double, std::string> value;  // non-finite doubles are written as null
};

struct ChromeEvent {
    std::string name;
    std::string category;  // "compute", "comm:tp", "send", ...: the "cat" field and the lane
    double start_us = 0;
    double dur_us = 0;
    std::vector<ChromeArg> args;  // shown in the event's detail pane, e.g. flops, bytes, peer
};

// Streams events to the sink as they come, one Write per event; Finish closes the JSON. Lanes get tids
// 1, 2, ... in order of first appearance, each announced with thread_name / thread_sort_index metadata
// events so the rows keep that order and carry the category as their name. Times are written in
// microseconds rounded to the nanosecond. Throws sc::Error for a negative rank, a non-finite or
// negative time, or a Write after Finish.
class ChromeTraceWriter {
public:
    ChromeTraceWriter(ByteSink& sink, int rank);  // writes the header and the process-name events ("rank N")
    // The same under another process name (the pipeline timeline: "pipeline", one lane per stage).
    ChromeTraceWriter(ByteSink& sink, int rank, std::string_view process_name);
    void Write(const ChromeEvent& event);
    void Finish();

private:
    int Lane(std::string_view category);  // tid of the category's lane, announcing new lanes
    void BeginEvent();                    // starts event_ with the ",\n" separator
    void Emit();                          // hands event_ to the sink, without the separator if first

    ByteSink& sink_;
    int rank_;
    bool any_event_ = false;
    bool finished_ = false;
    std::vector<std::string> lanes_;  // lanes_[tid - 1] is that lane's category
    std::string event_;               // the event being formatted; keeps its capacity
};

// Convenience for a complete list: header, every event, footer.
void WriteChromeTrace(ByteSink& sink, int rank, const std::vector<ChromeEvent>& events);

}  // namespace sc
