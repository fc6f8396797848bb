// (d) Trace summary of GPT-3 175B on 32,768 GPUs: tp=8, pp=16, dp=256, 1F1B, 32 microbatches (batch 8192),
// sequence parallel, selective recompute, ZeRO-1. Through engine::RunSummary (the job made, then summarized),
// as `stagecraft summary` and the page run it. Best of 3. Target: < 1 s.
// Then the summary at the microbatch limit: Llama 3 8B on one rank with 65,536 microbatches (55 million nodes),
// which streams its nodes, so the peak RSS stays near the process's own (no target; the page's heap is 4 GB).
#include <algorithm>

#include "bench_util.h"
#include "engine/estimate.h"

int main() {
    sc::engine::Request req;
    req.model = bench::Model("gpt3-175b");
    req.parallel = sc::ParseParallelSpec("tp=8,pp=16,dp=256,batch=8192,sp=1,schedule=1f1b,recompute=selective,zero=1");
    double best = 1e300;
    sc::TraceSummary s;
    for (int i = 0; i < 3; ++i) {
        const double t0 = bench::Now();
        s = sc::engine::RunSummary(req).summary;
        best = std::min(best, bench::Now() - t0);
    }
    uint64_t nodes = 0;
    for (const sc::RankClass& c : s.classes) nodes += c.total_nodes * static_cast<uint64_t>(c.ranks);
    bench::Result("summary_s", best, "s",
                  std::to_string(s.world) + " ranks, " + std::to_string(s.classes.size()) + " classes, " +
                      std::to_string(nodes) + " nodes over all ranks");

    req.model = bench::Model("llama3-8b");
    req.parallel = sc::ParseParallelSpec("pp=1,batch=65536");
    const double t0 = bench::Now();
    s = sc::engine::RunSummary(req).summary;
    bench::Result(
        "summary_limit_s", bench::Now() - t0, "s",
        "Llama 3 8B, 65,536 microbatches on one rank, " + std::to_string(s.classes[0].total_nodes) + " nodes");
    bench::Result("summary_peak_rss", bench::PeakRssBytes(), "B");
    return 0;
}
