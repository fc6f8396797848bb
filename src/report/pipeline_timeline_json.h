// The pipeline timeline (training/pipeline_replay.h, TimePipeline) as Chrome trace-event JSON, which Perfetto and
// chrome://tracing open: one process, "pipeline", and one lane per stage, each step a complete event named by its
// pass and microbatch ("F3", "B3", "I3" and "W3": forward, whole backward, input half, weight half), the chunk
// after a dot when a rank holds several ("F3.1"). What `stagecraft estimate --timeline-json FILE` writes and the page
// downloads.
#pragma once
#include <string>

#include "trace/byte_sink.h"
#include "training/pipeline_replay.h"

namespace sc {

// "F3", "B3.1", ...: the name of a step of a schedule whose ranks hold `chunks` chunks.
std::string PipelineSpanName(const PipelineSpan& span, int chunks);
// The pass in words: "forward", "backward", "backward (input half)", "backward (weight half)".
const char* PipelinePassName(char pass);
void WritePipelineTimeline(ByteSink& sink, const PipelineTimeline& timeline);

}  // namespace sc
