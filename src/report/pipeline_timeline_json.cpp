#include "report/pipeline_timeline_json.h"

#include <algorithm>
#include <cstdio>

#include "trace/chrome_trace.h"

namespace sc {

std::string PipelineSpanName(const PipelineSpan& span, int chunks) {
    char name[32];
    if (chunks > 1) std::snprintf(name, sizeof name, "%c%d.%d", span.pass, span.microbatch, span.chunk);
    else std::snprintf(name, sizeof name, "%c%d", span.pass, span.microbatch);
    return name;
}

const char* PipelinePassName(char pass) {
    switch (pass) {
        case 'F': return "forward";
        case 'I': return "backward (input half)";
        case 'W': return "backward (weight half)";
        default: return "backward";
    }
}

void WritePipelineTimeline(ByteSink& sink, const PipelineTimeline& timeline) {
    int chunks = 1;
    for (const auto& rank : timeline.ranks)
        for (const PipelineSpan& sp : rank) chunks = std::max(chunks, sp.chunk + 1);
    ChromeTraceWriter w(sink, 0, "pipeline");
    for (size_t s = 0; s < timeline.ranks.size(); ++s)
        for (const PipelineSpan& sp : timeline.ranks[s]) {
            ChromeEvent e;
            e.name = PipelineSpanName(sp, chunks);
            e.category = "stage " + std::to_string(s);
            e.start_us = sp.start * 1e6;
            e.dur_us = (sp.end - sp.start) * 1e6;
            e.args = {{"microbatch", static_cast<int64_t>(sp.microbatch)},
                      {"chunk", static_cast<int64_t>(sp.chunk)},
                      {"pass", std::string(PipelinePassName(sp.pass))}};
            if (sp.paired) e.args.push_back({"paired", std::string("half of an overlapped forward-backward pair")});
            w.Write(e);
        }
    w.Finish();
}

}  // namespace sc
