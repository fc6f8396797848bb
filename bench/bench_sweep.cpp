// (c) Sweep throughput: GPT-3 175B (dense) and Mixtral 8x7B (MoE) on 512 GPUs of DGX H100, global batch
// 1024, axes flops=1,2 x topology=two_tier,fullflat x inr=on,off: 8 points x 2 models, each a full layout
// search. Evaluations = valid layouts assessed. Through the engine (a snapshot, then its one shard): one thread.
#include "bench_util.h"
#include "engine/sweep.h"

int main() {
    std::vector<sc::SweepModel> models = {{"gpt3-175b", bench::Model("gpt3-175b")},
                                          {"mixtral-8x7b", bench::Model("mixtral-8x7b")}};
    const sc::System sys = bench::System("dgx-h100-superpod", "h100-sxm");
    sc::SweepAxes axes;
    axes.flops = {1, 2};
    axes.topology = {sc::Topology::two_tier, sc::Topology::fullflat};
    axes.inr = {1, 0};
    sc::engine::Request req;
    req.system = &sys;
    req.calibration = &bench::Calibration();
    req.sweep.models = models;
    req.sweep.axes = axes;
    req.search.gpus = 512, req.search.batch = 1024;
    const double t0 = bench::Now();
    std::vector<sc::SweepRow> rows = sc::engine::RunSweepShard(sc::engine::SnapshotSweep(req), 0, 1);
    const double t = bench::Now() - t0;
    double evals = 0;
    for (const sc::SweepRow& r : rows) evals += static_cast<double>(r.stats.valid);
    bench::Result("sweep_evals_per_s", evals / t, "1/s",
                  std::to_string(rows.size()) + " rows, " + std::to_string(static_cast<long long>(evals)) +
                      " evaluations in " + std::to_string(t) + " s");
    return 0;
}
