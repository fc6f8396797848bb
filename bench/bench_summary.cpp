// (d) Trace summary of GPT-3 175B on 32,768 GPUs: tp=8, pp=16, dp=256, 1F1B, 32 microbatches (batch 8192),
// sequence parallel, selective recompute, ZeRO-1. Through engine::RunSummary (the job made, then summarized),
// as `stagecraft summary` and the page run it. Best of 3. Target: < 1 s.
// Then the summary at the microbatch limit: Llama 3 8B on one rank with 65,536 microbatches (55 million nodes),
// which streams its nodes, so the peak RSS stays near the process's own (no target; the page's heap is 4 GB).
// Last, the longest summary the page can be asked for, GPT-3 175B at pp=96 and 65,536 microbatches (about 10^9
// nodes), counted as the page counts it (app/app.cpp StepSummary): in slices of 2^16 nodes between looks at the
// clock. The whole time and the longest slice, which bounds how far a frame can overrun its 30 ms budget.
#include <algorithm>

#include "parallel/job.h"
#include "trace/summary.h"

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

    const sc::Job page = sc::MakeJob(bench::Model("gpt3-175b"), sc::ParseParallelSpec("tp=8,pp=96,batch=65536"));
    sc::JobSummarizer slices(page);
    double longest = 0;
    int count = 0;
    const double t1 = bench::Now();
    for (bool done = false; !done; ++count) {
        const double t = bench::Now();
        done = slices.Advance(uint64_t{1} << 16);
        longest = std::max(longest, bench::Now() - t);
    }
    const double whole = bench::Now() - t1;
    uint64_t page_nodes = 0;
    for (const sc::RankClass& c : slices.Take().classes) page_nodes += c.total_nodes;
    bench::Result("summary_page_s", whole, "s",
                  "GPT-3 175B, pp=96, 65,536 microbatches: " + std::to_string(page_nodes) + " nodes in " +
                      std::to_string(count) + " slices");
    bench::Result("summary_slice_ms", longest * 1e3, "ms", "the longest slice of 2^16 nodes");
    return 0;
}
