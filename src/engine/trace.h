// The trace path of one request: every rank's Chakra ET file (compute nodes timed on the request's cluster when
// it has one) and the communicator groups, or one rank's timeline replayed as Chrome trace events. What
// `stagecraft trace` writes and what the page's "Download traces" streams (TraceStream, src/wasm).
//
// A snapshot owns the job and copies of the cluster, calibration and options: a download outlives the frame that
// started it and the page keeps editing meanwhile, so the writer reads only the snapshot (as search.h's does).
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "engine/request.h"
#include "parallel/job.h"
#include "trace/byte_sink.h"
#include "trace/rank_traces.h"
#include "training/timeline.h"

namespace sc::engine {

struct TraceSnapshot {
    Job job;
    std::optional<System> system;  // the request's cluster grown to the job's ranks; none: durations are 0
    std::optional<CalibrationTable> calibration;
    TrainingOptions options;
};

// Throws sc::Error naming the field for an invalid model or split.
TraceSnapshot SnapshotTrace(const Request& request);
// The same with the split's job made already (the CLI makes it first, so a bad split is the error it reports first).
TraceSnapshot SnapshotTrace(const Request& request, Job job);

// The writer of the snapshot's ranks: COMP nodes carry duration_micros from the estimate's compute and network
// models when the snapshot has a cluster (ASTRA-sim's replay mode). `snap` must outlive it.
std::unique_ptr<RankTraceWriter> MakeTraceWriter(const TraceSnapshot& snap);

struct RankTimeline {
    int rank = 0;
    const StageProgram* program = nullptr;  // the rank's stage program (owned by the writer)
    std::vector<TimedNode> nodes;           // index-aligned with program's nodes
    double end_us = 0;                      // when its last node ends
    double idle_fraction = 0;               // IdleFraction
};
// Rank `rank`'s timeline, every stage replayed together on the snapshot's cluster so its receives wait for their
// senders. Throws sc::Error("system") when the snapshot has no cluster, ("rank") outside [0, world).
RankTimeline RunRankTimeline(const TraceSnapshot& snap, RankTraceWriter& writer, int rank);
// The same timeline written to `out` as Chrome trace-event JSON (Perfetto, chrome://tracing): the bytes of
// `stagecraft trace --format json --rank R` and of the page's "Perfetto JSON" button.
RankTimeline WriteRankTimelineJson(const TraceSnapshot& snap, RankTraceWriter& writer, int rank, ByteSink& out);

}  // namespace sc::engine
