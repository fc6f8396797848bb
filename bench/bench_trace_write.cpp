// (e) Per-rank Chakra ET write throughput into the writer's reused buffer (RankFile: what the page hands to
// JavaScript; encoding and copies, no I/O) for GPT-3 175B on
// 32,768 GPUs (tp=8, pp=16, dp=256, 1F1B, 32 microbatches). Writes every rank when the projected time is
// under `budget` seconds, else an evenly spaced sample of ranks covering every pipeline stage, and
// extrapolates the total from the per-stage sizes (ranks of one stage differ only in group ids and peers).
// usage: bench_trace_write [budget_s=120] [max_ranks=0: all]
#include <algorithm>
#include <cstdlib>
#include <memory>

#include "bench_util.h"
#include "engine/trace.h"
#include "trace/byte_sink.h"

int main(int argc, char** argv) {
    const double budget = argc > 1 ? std::atof(argv[1]) : 120;
    const int max_ranks = argc > 2 ? std::atoi(argv[2]) : 0;
    // The engine's trace snapshot and writer, as `stagecraft trace` and the page's download make them (no
    // cluster: durations 0, the writer's encoding alone).
    sc::engine::Request req;
    req.model = bench::Model("gpt3-175b");
    req.parallel = sc::ParseParallelSpec("tp=8,pp=16,dp=256,batch=8192,sp=1,schedule=1f1b,recompute=selective,zero=1");
    const sc::engine::TraceSnapshot snap = sc::engine::SnapshotTrace(req);
    const sc::Job& job = snap.job;
    const std::unique_ptr<sc::RankTraceWriter> writer = sc::engine::MakeTraceWriter(snap);
    sc::RankTraceWriter& w = *writer;
    const int world = w.world(), pp = job.par.pp;
    // Warm-up: one rank per stage builds the stage programs (counted separately).
    const double tb = bench::Now();
    std::vector<double> stage_bytes(pp, 0);
    {
        sc::Layout layout(job.par);
        std::vector<bool> seen(pp, false);
        for (int r = 0; r < world; ++r) {
            int s = layout.Stage(r);
            if (seen[s]) continue;
            seen[s] = true;
            sc::CountingSink c;
            w.WriteRank(r, c);
            stage_bytes[s] = static_cast<double>(c.count);
        }
    }
    const double build = bench::Now() - tb;
    // Time a probe of ranks, then decide: all ranks or a sample.
    sc::CountingSink probe;
    const int probe_n = std::min(world, 64);
    double t0 = bench::Now();
    for (int r = 0; r < probe_n; ++r) w.WriteRank(r * (world / probe_n), probe);
    const double per_rank = (bench::Now() - t0) / probe_n;
    int step = 1;
    if (max_ranks > 0) step = std::max(1, world / max_ranks);
    while (per_rank * world / step > budget) step *= 2;
    // Timed: each rank's file built in the writer's reused buffer, as the page's TraceStream asks for it
    // before handing the view to JavaScript (no I/O).
    uint64_t bytes = 0;
    int written = 0;
    t0 = bench::Now();
    for (int r = 0; r < world; r += step) bytes += w.RankFile(r).size(), ++written;
    const double t = bench::Now() - t0;
    const double mbps = static_cast<double>(bytes) / 1e6 / t;
    double total = 0;
    for (int s = 0; s < pp; ++s) total += stage_bytes[s] * (world / pp);
    const double exact = step == 1 ? static_cast<double>(bytes) : total;
    char note[256];
    std::snprintf(note, sizeof note, "%s: %d of %d ranks written in %.2f s (stage programs built in %.2f s)",
                  step == 1 ? "all ranks" : "sample (every rank % step), total extrapolated from per-stage sizes",
                  written, world, t, build);
    bench::Result("trace_write_mbps", mbps, "MB/s", note);
    bench::Result("trace_bytes_per_rank", static_cast<double>(bytes) / written, "B", "mean over the ranks written");
    bench::Result("trace_total_bytes", exact, "B", step == 1 ? "measured" : "extrapolated");
    if (bench::PeakRssBytes() > 0) bench::Result("trace_peak_rss", bench::PeakRssBytes(), "B", "getrusage ru_maxrss");
    return 0;
}
