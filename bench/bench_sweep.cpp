// (c) Sweep throughput: GPT-3 175B (dense) and Mixtral 8x7B (MoE) on 512 GPUs of DGX H100, global batch
// 1024, axes flops=1,2 x topology=two_tier,fullflat x inr=on,off: 8 points x 2 models, each a full layout
// search. Evaluations = valid layouts assessed. Through the engine (a snapshot, then its one shard): one thread.
// Then what the page's Sweeps view runs per point with "only the current layout": Llama 3 8B at tp=8,dp=8,batch=64
// on DGX A100, flops x hbm_bw 100 x 100 (10^4 points, one estimate each), points per second.
#include "bench_util.h"
#include "engine/sweep.h"
#include "parallel/parallel_config.h"

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

    const sc::System a100 = bench::System("dgx-a100-superpod", "a100-80gb");
    sc::engine::Request fixed;
    fixed.model = bench::Model("llama3-8b");
    fixed.system = &a100;
    fixed.calibration = &bench::Calibration();
    fixed.parallel = sc::ParseParallelSpec("tp=8,dp=8,batch=64");
    fixed.search.gpus = 64, fixed.search.batch = 64;
    fixed.sweep.fixed_layout = true;
    fixed.sweep.axes.flops.clear();
    for (int i = 0; i < 100; ++i) fixed.sweep.axes.flops.push_back(0.5 + 3.5 * i / 99);
    fixed.sweep.axes.hbm_bw = fixed.sweep.axes.flops;
    const double t1 = bench::Now();
    rows = sc::engine::RunSweepShard(sc::engine::SnapshotSweep(fixed), 0, 1);
    const double tf = bench::Now() - t1;
    bench::Result("sweep_fixed_points_per_s", static_cast<double>(rows.size()) / tf, "1/s",
                  std::to_string(rows.size()) + " fixed-layout points in " + std::to_string(tf) + " s");
    return 0;
}
