// (b) Search over all layouts of GPT-3 175B on 4,096 GPUs (DGX H100 SuperPOD with its fat tree extended to
// 4,096 GPUs), global batch 1536, with the measured calibration. Through the engine as the CLI and the page run
// it (a snapshot of the request, then its one shard: one thread), best of `reps`. Then the same search on a TPU
// v4 pod (a 16x16x16 ICI torus; the torus comm model, no calibration for the TPU), reported per layout beside it.
// Target: < 1 s native.   usage: bench_search [reps=2]
#include <algorithm>
#include <cstdlib>

#include "bench_util.h"
#include "engine/search.h"
#include "training/sweep.h"

int main(int argc, char** argv) {
    const int reps = argc > 1 ? std::atoi(argv[1]) : 2;
    const sc::ModelConfig m = bench::Model("gpt3-175b");
    const sc::System sys = sc::ExtendSystem(bench::System("dgx-h100-superpod", "h100-sxm"), 4096);
    sc::engine::Request req;
    req.model = m;
    req.system = &sys;
    req.calibration = &bench::Calibration();
    req.search.gpus = 4096, req.search.batch = 1536, req.search.top_k = 10;
    double best = 1e300;
    sc::SearchResult r;
    for (int i = 0; i < reps; ++i) {
        const double t0 = bench::Now();
        const sc::engine::SearchSnapshot snap = sc::engine::SnapshotSearch(req);
        r = sc::engine::RunSearchShard(snap, 0, 1);
        best = std::min(best, bench::Now() - t0);
    }
    char note[256];
    std::snprintf(note, sizeof note, "%llu valid, %llu timed, %llu fit; best %s at %.3f s/step",
                  static_cast<unsigned long long>(r.stats.valid), static_cast<unsigned long long>(r.stats.estimated),
                  static_cast<unsigned long long>(r.stats.fitting),
                  r.top.empty() ? "-" : sc::ParallelSpecString(r.top[0].par).c_str(),
                  r.top.empty() ? 0.0 : r.top[0].estimate.step_seconds);
    bench::Result("search_s", best, "s", note);
    bench::Result("search_us_per_layout", best / static_cast<double>(r.stats.valid) * 1e6, "us", "");

    const sc::System tpu = bench::System("tpu-v4-pod", "tpu-v4");
    req.system = &tpu;
    best = 1e300;
    for (int i = 0; i < reps; ++i) {
        const double t0 = bench::Now();
        const sc::engine::SearchSnapshot snap = sc::engine::SnapshotSearch(req);
        r = sc::engine::RunSearchShard(snap, 0, 1);
        best = std::min(best, bench::Now() - t0);
    }
    std::snprintf(note, sizeof note, "tpu-v4-pod, %llu valid, %llu timed",
                  static_cast<unsigned long long>(r.stats.valid), static_cast<unsigned long long>(r.stats.estimated));
    bench::Result("search_torus_us_per_layout", best / static_cast<double>(r.stats.valid) * 1e6, "us", note);
    return 0;
}
