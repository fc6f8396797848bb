// stagecraft trace: every rank's Chakra ET file plus the communicator groups, streamed rank by rank.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/file_sink.h"
#include "cli/job_args.h"
#include "cli/system_args.h"
#include "config/error.h"
#include "config/numbers.h"
#include "trace/rank_traces.h"
#include "training/timeline.h"

namespace sc::cli {

#define kDefaultTraceSystem "dgx-h100-superpod"

int Trace(int argc, char** argv) {
    std::vector<std::string> flags = ModelFlags();
    for (const char* f : {"parallel", "out", "prefix", "format", "rank"}) flags.push_back(f);
    for (const std::string& f : SystemFlags()) flags.push_back(f);
    std::vector<std::string> bools = {"help", "quiet"};
    for (const std::string& f : SystemBoolFlags()) bools.push_back(f);
    Args a = ParseArgs(argc, argv, flags, bools);
    if (a.Has("help") || !a.Has("out")) {
        std::fputs(
            "usage: stagecraft trace --model FILE --parallel SPEC --out DIR [--format et|json] [--prefix trace] [--rank R]\n"
            "                        [--system SYSTEM [--options ...]]\n"
            "  et:   DIR/<prefix>.<rank>.et for every rank (Chakra ET, as ASTRA-sim reads it) and DIR/<prefix>.json,\n"
            "        the communicator groups for --comm-group-configuration; compute nodes carry num_ops, tensor_size\n"
            "        and duration_micros timed on --system (default " kDefaultTraceSystem ")\n"
            "  json: DIR/<prefix>.<R>.trace.json, rank R's timeline as Chrome trace events (Perfetto), every stage\n"
            "        replayed on --system (a presets/systems file or id) so receives wait for their senders\n",
            a.Has("help") ? stdout : stderr);
        return a.Has("help") ? 0 : 2;
    }
    std::string format = a.Get("format", "et");
    if (format != "et" && format != "json") throw Error("--format", "\"" + format + "\" is not one of et, json");
    Job job = LoadJob(a);
    std::string dir = a.Get("out"), prefix = a.Get("prefix", "trace");
    if (dir.empty()) throw Error("--out", "missing or empty; give the folder to write into, e.g. --out traces/");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error("--out", Clip(dir) + ": cannot create directory: " + ec.message());

    if (format == "json") {
        RankTraceWriter writer(job);
        return TraceJson(job, writer, a, dir, prefix);
    }
    // Compute nodes' duration_micros (ASTRA-sim's replay mode) from the same models as the estimate.
    LoadedSystem ls = LoadSystem(a, kDefaultTraceSystem);
    TrainingOptions opt = LoadTrainingOptions(a);
    RankTraceWriter writer(job, [&](const StageProgram& prog) {
        return NodeSeconds(job, prog, ls.system, ls.calibration.get(), opt);
    });

    const int world = writer.world();
    const bool progress = !a.Has("quiet") && isatty(2);
    auto start = std::chrono::steady_clock::now(), last = start;
    unsigned long long total = 0, nodes = 0;
    for (int r = 0; r < world; ++r) {
        FileSink f(dir + "/" + prefix + "." + std::to_string(r) + ".et");
        nodes += writer.WriteRank(r, f);
        f.Close();
        total += f.bytes();
        auto now = std::chrono::steady_clock::now();
        if (progress && (now - last > std::chrono::milliseconds(250) || r == world - 1)) {
            double s = std::chrono::duration<double>(now - start).count();
            std::fprintf(stderr, "\rrank %d/%d  %.1f MB  %.0f MB/s   ", r + 1, world, total / 1e6, total / 1e6 / (s > 0 ? s : 1));
            last = now;
        }
    }
    if (progress) std::fputc('\n', stderr);
    FileSink g(dir + "/" + prefix + ".json");
    writer.WriteCommGroups(g);
    g.Close();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("wrote %d ranks, %llu nodes, %.1f MB (%.0f bytes/rank) to %s in %.2f s; groups in %s/%s.json\n", world,
                nodes, total / 1e6, static_cast<double>(total) / world, dir.c_str(), s, dir.c_str(), prefix.c_str());
    return 0;
}

}  // namespace sc::cli
