// stagecraft trace --format json: one rank's timeline as Chrome trace events, timed on --system.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/file_sink.h"
#include "cli/system_args.h"
#include "config/error.h"
#include "config/numbers.h"
#include "engine/trace.h"

namespace sc::cli {

int TraceJson(const Job& job, const Args& a, const std::string& dir, const std::string& prefix) {
    if (!a.Has("system"))
        throw Error("--system", "--format json needs --system to time the ops (e.g. --system dgx-h100-superpod)");
    const std::string r = a.Get("rank", "0");
    const int rank = static_cast<int>(ParseIntegerIn("--rank", r, 0, kMaxRanks));
    if (rank >= job.par.world())
        throw Error("--rank", "rank " + r + " is outside 0.." + std::to_string(job.par.world() - 1));
    LoadedSystem ls = LoadSystem(a);
    BuildCluster(ls, a, job.par.world());  // as `trace --format et` does
    engine::Request request;
    request.system = &ls.system;
    request.calibration = ls.calibration.get();
    request.options = LoadTrainingOptions(a);
    const engine::TraceSnapshot snap = engine::SnapshotTrace(request, job);
    const std::unique_ptr<RankTraceWriter> writer = engine::MakeTraceWriter(snap);
    std::string path = dir + "/" + prefix + "." + std::to_string(rank) + ".trace.json";
    FileSink f(path);
    const engine::RankTimeline tl = engine::WriteRankTimelineJson(snap, *writer, rank, f);
    f.Close();
    std::printf("wrote rank %d's timeline (%zu events, %.1f ms, %.1f%% idle) to %s\n", rank, tl.nodes.size(),
                tl.end_us / 1000, 100 * tl.idle_fraction, path.c_str());
    return 0;
}

}  // namespace sc::cli
