// stagecraft sweep: the co-design study of "Scaling Intelligence" (arXiv 2506.15006). Every point of the
// cartesian product of the --axis lists, the best layout of every --model there. Under stagecraft-mpi the
// ranks take points round-robin and rank 0 writes the merged rows: the same bytes as one process.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/job_args.h"
#include "cli/process_group.h"
#include "cli/search_args.h"
#include "cli/shards.h"
#include "cli/system_args.h"
#include "config/error.h"
#include "engine/sweep.h"
#include "report/search_report.h"

namespace sc::cli {

namespace {

// A shard's rows for the root: "<evaluations>\n" then per row "<point> <model> <bytes>\n<text>".
std::string Pack(const std::vector<SweepRow>& rows, const std::vector<std::string>& texts, unsigned long long evals) {
    std::string o = std::to_string(evals) + "\n";
    for (size_t i = 0; i < rows.size(); ++i)
        o += std::to_string(rows[i].point_index) + " " + std::to_string(rows[i].model_index) + " " +
             std::to_string(texts[i].size()) + "\n" + texts[i];
    return o;
}

struct Packed {
    engine::SweepKey key;
    std::string text;
};

void Unpack(const std::string& s, std::vector<Packed>& rows, unsigned long long& evals) {
    size_t pos = s.find('\n');
    evals += std::strtoull(s.substr(0, pos).c_str(), nullptr, 10);
    ++pos;
    while (pos < s.size()) {
        size_t nl = s.find('\n', pos);
        unsigned long long point = 0, bytes = 0;
        int model = 0;
        std::sscanf(s.substr(pos, nl - pos).c_str(), "%llu %d %llu", &point, &model, &bytes);
        rows.push_back({{static_cast<size_t>(point), model}, s.substr(nl + 1, bytes)});
        pos = nl + 1 + bytes;
    }
}

}  // namespace

int Sweep(int argc, char** argv) {
    std::vector<std::string> flags = ModelFlags();
    for (const std::string& f : SystemFlags()) flags.push_back(f);
    for (const std::string& f : SearchSpaceFlags()) flags.push_back(f);
    flags.push_back("axis");
    flags.push_back("csv");
    flags.push_back("layout");
    std::vector<std::string> bools = {"json", "help"};
    for (const std::string& f : SystemBoolFlags()) bools.push_back(f);
    Args a = ParseArgs(argc, argv, flags, bools);
    const ProcessGroup pg = Processes();
    if (a.Has("help") || !a.Has("model")) {
        if (pg.root())
            std::fprintf(
                a.Has("help") ? stdout : stderr,
                "usage: stagecraft sweep --model M [--model M2 ...] --system S --gpus N --batch B\n"
                "                        [--axis NAME=V1,V2,...]... [--csv FILE | --json]\n"
                "       stagecraft sweep --model M ... --system S --layout SPEC [--axis ...]...\n"
                "  the best layout of each model at every point of the cartesian product of the axes\n"
                "  (co-design study of arXiv 2506.15006); rows as CSV (stdout or FILE) or JSON\n"
                "  --layout SPEC   no search: this layout (as --parallel writes it, e.g.\n"
                "                  tp=8,dp=8,batch=64) at every point; its GPUs and batch are the sweep's\n"
                "  axes (each optional; default the system as it is):\n"
                "    flops=1,2,4          factor on the accelerator's peak FLOPS\n"
                "    hbm_bw=1,2           factor on HBM bandwidth\n"
                "    hbm_capacity=1,2     factor on HBM capacity\n"
                "    domain=8,72          scale-up domain size in GPUs\n"
                "    net_bw=1,4           factor on scale-out (NIC) bandwidth\n"
                "    topology=two_tier,fullflat\n"
                "    overlap=on,off       DP/PP/TP communication overlapped with compute (without the axis:\n"
                "                         --options' own, DP and PP by default; the row says which: dp+pp)\n"
                "    inr=on,off           in-network collectives (SHARP, NVLink SHARP; without the axis:\n"
                "                         --options' own)\n"
                "    gpus=256,512,1024    GPU counts, the global batch kept (with --layout: its dp\n"
                "                         stretched to each count; a count it cannot run on has no row)\n"
                "    power=500,600,700    a GPU power limit in W (0: the system's): compute at\n"
                "                         (limit / board)^(1/3) of its clock; energy_joules at the limit\n"
                "  --system must start with a scale_up level (e.g. dgx-h100-superpod), or be a torus (tpu-v4-pod,\n"
                "           tpu-v5p-pod: no domain or topology axis; net_bw scales its data-center network)\n%s"
                "  evaluations/s (valid layouts timed per second) go to stderr\n",
                SearchSpaceUsage());
        return a.Has("help") ? 0 : 2;
    }
    if (a.Has("csv") && a.Has("json")) throw Error("--json", "give either --csv FILE or --json, not both");
    engine::Request request;
    for (const std::string& path : a.All("model")) {
        Args one = a;
        one.flags["model"] = {path};
        ModelConfig m = LoadModel(one);
        request.sweep.models.push_back({m.name, m});
    }
    const size_t models = request.sweep.models.size();
    LoadedSystem ls = LoadSystem(a);
    BuildCluster(ls, a, 0);
    request.system = &ls.system;
    request.calibration = ls.calibration.get();
    request.options = LoadTrainingOptions(a);
    if (a.Has("layout")) {
        for (const std::string& f : SearchSpaceFlags())
            if (f != "threads" && a.Has(f))
                throw Error("--" + f, "restricts a search; --layout fixes the layout: give one or the other");
        request.parallel = ParseParallelSpec(a.Get("layout"));
        request.sweep.fixed_layout = true;
    } else {
        const SearchRequest sr = LoadSearchRequest(a);
        request.search = {sr.gpus, sr.batch, sr.top_k, sr.space};
    }
    for (const std::string& ax : a.All("axis")) ParseSweepAxis(ax, request.sweep.axes);
    const size_t points = SweepPoints(request.sweep.axes).size();
    // Every row is kept until the merge: a stated limit instead of a run that never ends or eats the memory.
    constexpr size_t kMaxRows = 100000;
    if (points * models > kMaxRows)
        throw Error("--axis", std::to_string(points) + " points x " + std::to_string(models) + " model(s) = " +
                                  std::to_string(points * models) + " rows; at most " + std::to_string(kMaxRows) +
                                  " per run: narrow the axes or split the sweep into several runs");
    if (pg.root() && points * models >= 1000 && !request.sweep.fixed_layout)
        std::fprintf(stderr, "sweep: %zu points x %zu model(s), each a full layout search; this takes a while\n",
                     points, models);
    // Fails early, on every rank, on an unusable system.
    const engine::SweepSnapshot snap = engine::SnapshotSweep(request);
    const SweepFormat fmt = a.Has("json") ? SweepFormat::json : SweepFormat::csv;

    const auto t0 = std::chrono::steady_clock::now();
    // Points round-robin over every thread of every process: shard rank * threads + t of size * threads.
    const int threads = LoadThreads(a);
    const std::vector<SweepRow> rows = engine::MergeSweep(RunShardsOnThreads<std::vector<SweepRow>>(
        threads, [&](int t, int) { return engine::RunSweepShard(snap, pg.rank * threads + t, pg.size * threads); }));
    std::vector<std::string> texts;
    unsigned long long evals = 0;
    for (const SweepRow& r : rows) texts.push_back(SweepRowText(r, snap.request, fmt)), evals += r.stats.valid;
    std::vector<std::string> shards = GatherAtRoot(Pack(rows, texts, evals));
    if (!pg.root()) return 0;

    std::vector<Packed> merged;
    unsigned long long total_evals = 0;
    for (const std::string& s : shards) Unpack(s, merged, total_evals);
    std::stable_sort(merged.begin(), merged.end(), [](const Packed& x, const Packed& y) { return x.key < y.key; });
    std::vector<std::string> ordered;
    for (Packed& p : merged) ordered.push_back(std::move(p.text));
    const std::string out = AssembleSweep(ordered, fmt);
    if (a.Has("csv")) {
        const std::string path = a.Get("csv");
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (!f) throw Error(path, "cannot create file");
        const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
        if (std::fclose(f) != 0 || !ok) throw Error(path, "write failed (disk full?)");
    } else {
        std::fwrite(out.data(), 1, out.size(), stdout);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fflush(stdout);
    std::fprintf(stderr,
                 "sweep: %zu points x %zu models on %d process%s x %d thread%s: %llu layouts evaluated in %.3f s "
                 "(%.0f evaluations/s)\n",
                 points, models, pg.size, pg.size == 1 ? "" : "es", threads, threads == 1 ? "" : "s", total_evals, secs,
                 secs > 0 ? total_evals / secs : 0.0);
    return 0;
}

}  // namespace sc::cli
