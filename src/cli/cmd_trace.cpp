// stagecraft trace: every rank's Chakra ET file plus the communicator groups, streamed rank by rank.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/file_sink.h"
#include "cli/job_args.h"
#include "cli/system_args.h"
#include "config/error.h"
#include "config/numbers.h"
#include "engine/trace.h"
#include "trace/rank_traces.h"

namespace sc::cli {

constexpr const char* kDefaultTraceSystem = "dgx-h100-superpod";

namespace {

namespace fs = std::filesystem;

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void OnInterrupt(int) { g_interrupted = 1; }

// Files of the set `prefix` in `dir` (<prefix>.<n>.et, <prefix>.json and leftover .part files).
std::vector<fs::path> SetFiles(const std::string& dir, const std::string& prefix) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (!e.is_regular_file()) continue;
        std::string n = e.path().filename().string();
        if (n.size() > 5 && n.compare(n.size() - 5, 5, ".part") == 0) n.resize(n.size() - 5);
        const bool et = n.size() > prefix.size() + 4 && n.compare(0, prefix.size() + 1, prefix + ".") == 0 &&
                        n.compare(n.size() - 3, 3, ".et") == 0 &&
                        n.find_first_not_of("0123456789", prefix.size() + 1) == n.size() - 3;
        if (et || n == prefix + ".json") out.push_back(e.path());
    }
    return out;
}

// The files one run writes: removed again unless the whole set was written (trace.json, written last, marks it).
struct WrittenSet {
    std::vector<std::string> files;
    bool complete = false;
    ~WrittenSet() {
        if (complete) return;
        for (const std::string& f : files) std::remove(f.c_str());
    }
};

}  // namespace

int Trace(int argc, char** argv) {
    std::vector<std::string> flags = ModelFlags();
    for (const char* f : {"parallel", "out", "prefix", "format", "rank"}) flags.push_back(f);
    for (const std::string& f : SystemFlags()) flags.push_back(f);
    std::vector<std::string> bools = {"help", "quiet", "force"};
    for (const std::string& f : SystemBoolFlags()) bools.push_back(f);
    Args a = ParseArgs(argc, argv, flags, bools);
    if (a.Has("help") || !a.Has("out")) {
        std::fputs(
            "usage: stagecraft trace --model FILE --parallel SPEC --out DIR [--format et|json] [--prefix trace] [--rank R]\n"
            "                        [--system SYSTEM] [--options ...]\n"
            "  --options: as for estimate; the kernel choices (flash_attention, dropout, grad_accumulation_fusion,\n"
            "        pp_scatter_gather, fused_elementwise, deepep_dispatch, fp8_dispatch) change the traces' nodes, the\n"
            "        rest how compute nodes are timed\n"
            "  et:   DIR/<prefix>.<rank>.et for every rank (Chakra ET, as ASTRA-sim reads it) and DIR/<prefix>.json,\n"
            "        the communicator groups for --comm-group-configuration; compute nodes carry num_ops, tensor_size\n"
            "        and duration_micros timed on --system (default dgx-h100-superpod, its outermost network\n"
            "        level grown to the job's ranks when it has fewer)\n"
            "  json: DIR/<prefix>.<R>.trace.json, rank R's timeline as Chrome trace events (Perfetto), every stage\n"
            "        replayed on --system (a presets/systems file or id) so receives wait for their senders\n"
            "  Every file is written as <name>.part and renamed when complete; <prefix>.json is written last and\n"
            "  marks a complete set. An error or Ctrl-C removes what the run wrote. A folder already holding a\n"
            "  <prefix> set is refused unless --force, which removes that set first.\n",
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

    if (format == "json") return TraceJson(job, a, dir, prefix);
    // Compute nodes' duration_micros (ASTRA-sim's replay mode) from the same models as the estimate, on the
    // system grown to the job's ranks when it is smaller (its outermost level; `estimate --gpus` does the same).
    LoadedSystem ls = LoadSystem(a, kDefaultTraceSystem);
    BuildCluster(ls, a, job.par.world());
    engine::Request request;
    request.system = &ls.system;
    request.calibration = ls.calibration.get();
    request.options = LoadTrainingOptions(a);
    const engine::TraceSnapshot snap = engine::SnapshotTrace(request, std::move(job));
    const std::unique_ptr<RankTraceWriter> writer_owner = engine::MakeTraceWriter(snap);
    RankTraceWriter& writer = *writer_owner;

    const std::vector<fs::path> existing = SetFiles(dir, prefix);
    if (!existing.empty()) {
        if (!a.Has("force"))
            throw Error("--out", dir + " already holds " + std::to_string(existing.size()) +
                                     " file(s) of a trace set named \"" + prefix + "\" (e.g. " +
                                     existing.front().filename().string() +
                                     "); pass --force to replace them, or choose another folder or --prefix");
        for (const fs::path& f : existing) fs::remove(f, ec);
    }
    WrittenSet written;
    g_interrupted = 0;
    auto previous = std::signal(SIGINT, OnInterrupt);
    struct Restore {
        void (*handler)(int);
        ~Restore() { std::signal(SIGINT, handler); }
    } restore{previous};

    const int world = writer.world();
    const bool progress = !a.Has("quiet") && isatty(2);
    auto start = std::chrono::steady_clock::now(), last = start;
    unsigned long long total = 0, nodes = 0;
    for (int r = 0; r < world; ++r) {
        if (g_interrupted)
            throw Error("trace", "interrupted after " + std::to_string(r) + " of " + std::to_string(world) +
                                     " ranks; the files this run wrote were removed");
        const std::string path = dir + "/" + prefix + "." + std::to_string(r) + ".et";
        FileSink f(path);
        nodes += writer.WriteRank(r, f);
        f.Close();
        written.files.push_back(path);
        total += f.bytes();
        auto now = std::chrono::steady_clock::now();
        if (progress && (now - last > std::chrono::milliseconds(250) || r == world - 1)) {
            double s = std::chrono::duration<double>(now - start).count();
            std::fprintf(stderr, "\rrank %d/%d  %.1f MB  %.0f MB/s   ", r + 1, world, total / 1e6,
                         total / 1e6 / (s > 0 ? s : 1));
            last = now;
        }
    }
    if (progress) std::fputc('\n', stderr);
    if (g_interrupted) throw Error("trace", "interrupted; the files this run wrote were removed");
    FileSink g(dir + "/" + prefix + ".json");
    writer.WriteCommGroups(g);
    g.Close();
    written.complete = true;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("wrote %d ranks, %llu nodes, %.1f MB (%.0f bytes/rank) to %s in %.2f s; groups in %s/%s.json\n", world,
                nodes, total / 1e6, static_cast<double>(total) / world, dir.c_str(), s, dir.c_str(), prefix.c_str());
    return 0;
}

}  // namespace sc::cli
