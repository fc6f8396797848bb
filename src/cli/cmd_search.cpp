// stagecraft search: every valid layout of a model on N GPUs at a global batch, ranked by step time among
// those that fit in memory.
#include <chrono>
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/job_args.h"
#include "cli/search_args.h"
#include "cli/shards.h"
#include "cli/system_args.h"
#include "config/error.h"
#include "engine/search.h"
#include "report/engine_report.h"
#include "training/sweep.h"

namespace sc::cli {

int Search(int argc, char** argv) {
    std::vector<std::string> flags = ModelFlags();
    for (const std::string& f : SystemFlags()) flags.push_back(f);
    for (const std::string& f : SearchSpaceFlags()) flags.push_back(f);
    flags.push_back("top");
    std::vector<std::string> bools = {"json", "help", "extend"};
    for (const std::string& f : SystemBoolFlags()) bools.push_back(f);
    Args a = ParseArgs(argc, argv, flags, bools);
    if (a.Has("help") || !a.Has("model")) {
        std::fprintf(a.Has("help") ? stdout : stderr,
                     "usage: stagecraft search --model FILE --system SYSTEM --gpus N --batch B [--top 10] [--json]\n"
                     "  every valid (tp, pp, dp, cp, ep, microbatch, schedule, vstages, recompute, zero, sp) of the\n"
                     "  model on N GPUs, timed with the training model and ranked by step time among those that fit\n"
                     "  --model, --set, --precision   the model (as for estimate)\n"
                     "  --system       a cluster preset; --options, --no-calibration as for estimate\n"
                     "  --extend       grow the system's outermost network level to N GPUs when it has fewer\n"
                     "  --top K        layouts to list (default 10)\n"
                     "  --json         print JSON instead of text\n%s",
                     SearchSpaceUsage());
        return a.Has("help") ? 0 : 2;
    }
    ModelConfig m = LoadModel(a);
    LoadedSystem ls = LoadSystem(a);
    SearchRequest req = LoadSearchRequest(a);
    if (a.Has("top")) {
        std::string v = a.Get("top");
        char* end = nullptr;
        long k = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || k < 1 || k > 100000)
            throw Error("--top", "expected a count from 1 to 100000, got \"" + v + "\"");
        req.top_k = static_cast<int>(k);
    }
    if (req.gpus > ls.system.TotalAccelerators()) {
        if (!a.Has("extend")) {
            // The hint says what --extend would build (ExtendSystem names it), or why it cannot (a torus pod
            // with no network beyond it): it said "pods joined by a core tier" for every system, torus included.
            const std::string exceed = std::to_string(req.gpus) + " GPUs exceed the " +
                                       std::to_string(ls.system.TotalAccelerators()) + " accelerators of " +
                                       ls.system.id;
            std::string grown;
            try {
                grown = ExtendSystem(ls.system, req.gpus).name.substr(ls.system.name.size());
            } catch (const Error& e) {
                throw Error("--gpus", exceed + "; it cannot be extended: " + e.what());
            }
            throw Error("--gpus",
                        exceed + "; pass --extend to build it at that size" + grown + ", or pick a larger system");
        }
        BuildCluster(ls, a, req.gpus);
    } else {
        BuildCluster(ls, a, 0);
    }
    const auto t0 = std::chrono::steady_clock::now();
    engine::Request request;
    request.model = std::move(m);
    request.system = &ls.system;
    request.calibration = ls.calibration.get();
    request.options = LoadTrainingOptions(a);
    request.search = {req.gpus, req.batch, req.top_k, req.space};
    const engine::SearchSnapshot snap = engine::SnapshotSearch(request);
    const int threads = LoadThreads(a);
    std::vector<SearchResult> parts = RunShardsOnThreads<SearchResult>(
        threads, [&](int shard, int count) { return engine::RunSearchShard(snap, shard, count); });
    SearchResult r = engine::MergeSearch(snap, std::move(parts));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string out = a.Has("json") ? SearchReportJson(snap, r) : SearchReportText(snap, r);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    std::fprintf(stderr, "search: %llu layouts evaluated in %.3f s on %d thread%s (%.0f evaluations/s)\n",
                 static_cast<unsigned long long>(r.stats.valid), secs, threads, threads == 1 ? "" : "s",
                 secs > 0 ? r.stats.valid / secs : 0.0);
    return 0;
}

}  // namespace sc::cli
