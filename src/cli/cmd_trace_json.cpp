// stagecraft trace --format json: one rank's timeline as Chrome trace events, timed on --system.
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/file_sink.h"
#include "cli/system_args.h"
#include "config/error.h"
#include "config/numbers.h"
#include "parallel/layout.h"
#include "training/sweep.h"
#include "training/timeline.h"

namespace sc::cli {

int TraceJson(const Job& job, RankTraceWriter& writer, const Args& a, const std::string& dir, const std::string& prefix) {
    if (!a.Has("system")) throw Error("--system", "--format json needs --system to time the ops (e.g. --system dgx-h100-superpod)");
    const std::string r = a.Get("rank", "0");
    const int rank = static_cast<int>(ParseIntegerIn("--rank", r, 0, kMaxRanks));
    if (rank >= writer.world())
        throw Error("--rank", "rank " + r + " is outside 0.." + std::to_string(writer.world() - 1));
    LoadedSystem ls = LoadSystem(a);
    BuildCluster(ls, a, job.par.world());  // as `trace --format et` does
    TrainingOptions opt = LoadTrainingOptions(a);
    Layout layout(job.par);
    // Every stage's program, replayed together: rank `rank`'s receives wait for their senders.
    std::vector<const StageProgram*> programs;
    for (int s = 0; s < job.par.pp; ++s) programs.push_back(&writer.Program(s));
    const int stage = layout.Stage(rank);
    const StageProgram& prog = *programs[stage];
    std::vector<TimedNode> tl = std::move(ReplayJob(job, programs, ls.system, ls.calibration.get(), opt)[stage]);
    std::string path = dir + "/" + prefix + "." + std::to_string(rank) + ".trace.json";
    FileSink f(path);
    WriteChromeTrace(f, rank, ChromeEventsOf(prog, tl));
    f.Close();
    double end = 0;
    for (const TimedNode& t : tl) end = std::max(end, t.start_us + t.dur_us);
    std::printf("wrote rank %d's timeline (%zu events, %.1f ms, %.1f%% idle) to %s\n", rank, tl.size(), end / 1000,
                100 * IdleFraction(prog, tl), path.c_str());
    return 0;
}

}  // namespace sc::cli
