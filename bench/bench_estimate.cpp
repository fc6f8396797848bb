// (a) One training estimate: GPT-3 175B, tp=8 pp=16 dp=32, interleaved-free 1F1B, on DGX H100 (1024 GPUs)
// with the measured calibration, best of 5 runs of a timed loop. Target: < 10 us native, < 50 us wasm.
// estimate_us times the training model alone on a prepared job (what a search pays per layout);
// engine_estimate_us the whole engine::RunEstimate a CLI run or a page edit makes (graph built, job made,
// inputs validated, model statistics), the request path that exists for it.
#include <algorithm>

#include "bench_util.h"
#include "engine/estimate.h"
#include "parallel/job.h"
#include "training/estimate.h"

int main() {
    const sc::ModelConfig m = bench::Model("gpt3-175b");
    const sc::System sys = bench::System("dgx-h100-superpod", "h100-sxm");
    const sc::Job job =
        sc::MakeJob(m, sc::ParseParallelSpec("tp=8,pp=16,dp=8,batch=1536,sp=1,recompute=selective,zero=1"));
    const sc::TrainingOptions opt;
    double sink = 0, best = 1e300;
    for (int rep = 0; rep < 5; ++rep) {
        const int n = 2000;
        const double t0 = bench::Now();
        for (int i = 0; i < n; ++i) sink += sc::EstimateTraining(job, sys, &bench::Calibration(), opt).step_seconds;
        best = std::min(best, (bench::Now() - t0) / n);
    }
    bench::Result("estimate_us", best * 1e6, "us",
                  "GPT-3 175B tp8 pp16 dp8 on dgx-h100-superpod [" + std::to_string(sink > 0) + "]");

    sc::engine::Request req;
    req.model = m;
    req.parallel = job.par;
    req.system = &sys;
    req.calibration = &bench::Calibration();
    best = 1e300;
    for (int rep = 0; rep < 5; ++rep) {
        const int n = 200;
        const double t0 = bench::Now();
        for (int i = 0; i < n; ++i) sink += sc::engine::RunEstimate(req).training->step_seconds;
        best = std::min(best, (bench::Now() - t0) / n);
    }
    bench::Result("engine_estimate_us", best * 1e6, "us",
                  "the same through engine::RunEstimate [" + std::to_string(sink > 0) + "]");
    return 0;
}
