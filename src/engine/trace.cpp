#include "engine/trace.h"

#include <algorithm>

#include "config/error.h"
#include "parallel/layout.h"
#include "trace/chrome_trace.h"
#include "training/sweep.h"

namespace sc::engine {

TraceSnapshot SnapshotTrace(const Request& r) {
    return SnapshotTrace(r, MakeJob(r.model, r.parallel, r.options.kernels));
}

TraceSnapshot SnapshotTrace(const Request& r, Job job) {
    if (!(job.graph.kernels == r.options.kernels)) throw Error("options", kKernelChoicesDiffer);
    TraceSnapshot snap{std::move(job), std::nullopt, std::nullopt, r.options};
    // Grown to the job's ranks when it has fewer (its outermost level), as `estimate --gpus` does; unchanged
    // when it already holds them (the CLI has built its cluster for the job already).
    if (r.system) snap.system = ExtendSystem(*r.system, snap.job.par.world());
    if (r.calibration) snap.calibration = *r.calibration;
    return snap;
}

std::unique_ptr<RankTraceWriter> MakeTraceWriter(const TraceSnapshot& snap) {
    if (!snap.system) return std::make_unique<RankTraceWriter>(snap.job);
    return std::make_unique<RankTraceWriter>(snap.job, [&snap](const StageProgram& prog) {
        return NodeSeconds(snap.job, prog, *snap.system, snap.calibration ? &*snap.calibration : nullptr, snap.options);
    });
}

RankTimeline RunRankTimeline(const TraceSnapshot& snap, RankTraceWriter& writer, int rank) {
    if (!snap.system) throw Error("system", "a timeline needs a cluster to time the ops; none was given");
    if (rank < 0 || rank >= writer.world())
        throw Error("rank", "rank " + std::to_string(rank) + " is outside 0.." + std::to_string(writer.world() - 1));
    const Job& job = snap.job;
    std::vector<const StageProgram*> programs;
    for (int s = 0; s < job.par.pp; ++s) programs.push_back(&writer.Program(s));
    const int stage = Layout(job.par).Stage(rank);
    RankTimeline out;
    out.rank = rank;
    out.program = programs[stage];
    out.nodes = std::move(
        ReplayJob(job, programs, *snap.system, snap.calibration ? &*snap.calibration : nullptr, snap.options)[stage]);
    for (const TimedNode& t : out.nodes) out.end_us = std::max(out.end_us, t.start_us + t.dur_us);
    out.idle_fraction = IdleFraction(*out.program, out.nodes);
    return out;
}

RankTimeline WriteRankTimelineJson(const TraceSnapshot& snap, RankTraceWriter& writer, int rank, ByteSink& out) {
    RankTimeline tl = RunRankTimeline(snap, writer, rank);
    WriteChromeTrace(out, rank, ChromeEventsOf(*tl.program, tl.nodes));
    return tl;
}

}  // namespace sc::engine
