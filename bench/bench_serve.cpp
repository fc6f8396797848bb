// (f) Serving: 1,000,000 requests of a disaggregated two-pool deployment (presets/inference/
// llama3-70b-h100-disaggregated.json scaled to 4 prefill and 4 decode replicas of TP8 on DGX H100, Poisson
// at 16 req/s, uniform 100..2000 prompt and 10..500 output tokens), one simulation, single-threaded.
// Target: < 10 s native, wasm within 2x. Prints wall and CPU seconds, events/s (per wall second) and peak RSS: memory is bounded because a request's
// state is freed when it completes and latencies go into fixed-size histograms (inference/latency_histogram.h).
// Usage: bench_serve [requests]   (default 1000000; also runs (f2) to (f5) below)
#include <sys/resource.h>

#include <cstdlib>
#include <string>

#include "bench_util.h"
#include "inference/engine.h"
#include "inference/serving_parse.h"

// CPU seconds this process has used (user + system): on a machine shared with other jobs the wall clock counts
// their time too, so both are printed. Under wasm, getrusage is emulated: 0.
static double CpuSeconds() {
#ifdef __EMSCRIPTEN__
    return 0;
#else
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
#endif
}

// A serving preset with its model, and the cluster it names (with H100s unless `accelerator` names its part).
struct Preset {
    sc::ServingConfig config;
    sc::System system;
};
static Preset LoadPreset(const std::string& file, const std::string& accelerator = "h100-sxm") {
    const sc::ServingDescription d = sc::ParseServingDescription(bench::Read("presets/inference/" + file));
    Preset p{d.config, bench::System(d.system_id, accelerator)};
    p.config.model = bench::Model(d.model_id);
    return p;
}

// One simulation and its wall seconds.
struct Timed {
    sc::ServingRun run;
    double secs = 0;
};
static Timed Run(const sc::ServingConfig& c, const sc::System& sys) {
    const double t0 = bench::Now();
    Timed t{sc::SimulateServing(c, sys, &bench::Calibration()), 0};
    t.secs = bench::Now() - t0;
    return t;
}

// (f2) A fleet: 10,000 replicas of presets/inference/llama3-8b-h100-poisson.json (one H100 each), 100,000
// Poisson arrivals at 2,000 req/s. Each replica is idle most of the time, so nearly every iteration serves one
// sequence: some 25 million iterations. An event costs O(log replicas) (inference/engine.cpp Run), where a scan of
// every replica per event made this some 34 minutes (10,000 replicas and 5,000 requests took 102 s, 80 us an event).
static bool Fleet() {
    Preset p = LoadPreset("llama3-8b-h100-poisson.json");
    sc::ServingConfig& c = p.config;
    c.pool.replicas = 10000;
    c.workload.rate = 2000;
    c.workload.requests = 100000;
    c.timelines = 0;
    const Timed t = Run(c, p.system);
    const double secs = t.secs;
    const sc::ServingResult& r = t.run.result;
    const double events = static_cast<double>(c.workload.requests + r.iterations);
    const std::string note = std::to_string(r.completed) + " requests on 10000 replicas, " +
                             std::to_string(r.iterations) + " iterations; simulated " + std::to_string(r.duration) +
                             " s";
    bench::Result("serve_fleet_s", secs, "s", note);
    bench::Result("serve_fleet_events_per_s", events / secs, "/s", note);
    return r.completed == c.workload.requests;
}

// (f3) Prefix caching under churn: presets/inference/llama3-8b-h100-shared-prefix.json on 4 replicas with 10,000
// prefixes drawn by Zipf 1.0, 200,000 Poisson arrivals at 80 req/s: each GPU caches about 200 of the prefixes and its
// 5 GiB host tier 20, so evictions and copies back run all along. Memory stays bounded: a replica's cache holds at
// most what its GPU blocks and host tier hold.
static Preset Churn() {
    Preset p = LoadPreset("llama3-8b-h100-shared-prefix.json");
    sc::ServingConfig& c = p.config;
    c.pool.replicas = 4;
    c.workload.arrival = sc::ArrivalKind::poisson;
    c.workload.rate = 80;
    c.workload.requests = 200000;
    c.workload.prefixes = {10000, 2048, 1.0};
    c.timelines = 0;
    return p;
}

static bool PrefixCaching() {
    Preset p = Churn();
    const sc::ServingConfig& c = p.config;
    const Timed t = Run(c, p.system);
    const double secs = t.secs;
    const sc::ServingResult& r = t.run.result;
    const double events = static_cast<double>(c.workload.requests + r.iterations);
    const std::string note = std::to_string(r.completed) + " requests, " + std::to_string(r.iterations) +
                             " iterations; " + std::to_string(r.prefix_gpu_hits) + " GPU and " +
                             std::to_string(r.prefix_host_hits) + " host hits of " + std::to_string(r.prefix_requests) +
                             " admissions; simulated " + std::to_string(r.duration) + " s";
    bench::Result("serve_prefix_cache_s", secs, "s", note);
    bench::Result("serve_prefix_cache_events_per_s", events / secs, "/s", note);
    return r.completed == c.workload.requests;
}

// (f4) The same churn through three tiers with one remote store for the four replicas (40 GiB a GPU, 160 GiB in
// all: about 640 of the 10,000 prefixes), 2 GiB of host tier each: every eviction writes through to both tiers,
// store hits from any replica, write-backs to the host. Memory stays bounded by what the tiers hold.
static bool PrefixTiers() {
    Preset p = Churn();
    sc::ServingConfig& c = p.config;
    c.engine.host_cache_gib = 2;
    c.engine.remote_cache_gib = 40;
    const Timed t = Run(c, p.system);
    const double secs = t.secs;
    const sc::ServingResult& r = t.run.result;
    const std::string note = std::to_string(r.completed) + " requests, " + std::to_string(r.iterations) +
                             " iterations; " + std::to_string(r.prefix_gpu_hits) + " GPU, " +
                             std::to_string(r.prefix_host_hits) + " host and " + std::to_string(r.prefix_remote_hits) +
                             " store hits of " + std::to_string(r.prefix_requests) + " admissions";
    bench::Result("serve_prefix_tiers_s", secs, "s", note);
    return r.completed == c.workload.requests;
}

// (f5) Large-EP serving: presets/inference/deepseek-v3-h800-prefill-ep32-decode-ep144.json, DeepSeek's deployment (4
// prefill units of 32 GPUs and a decode unit of 144, data-parallel attention, 32 redundant experts, DeepEP, two
// micro-batches), 200,000 requests at its 150 req/s: about 7,000 sequences in the decode unit's one scheduler, each
// iteration its busiest GPU's (the engine keeps each GPU's sequences) with the experts at the group's tokens, in two
// halves.
static bool LargeEp() {
    Preset p = LoadPreset("deepseek-v3-h800-prefill-ep32-decode-ep144.json", "h800");
    sc::ServingConfig& c = p.config;
    c.workload.requests = 200000;
    c.timelines = 0;
    const Timed t = Run(c, p.system);
    const double secs = t.secs;
    const sc::ServingResult& r = t.run.result;
    const std::string note = std::to_string(r.completed) + " requests, " + std::to_string(r.iterations) +
                             " iterations, mean " + std::to_string(r.mean_running) +
                             " sequences a scheduler; simulated " + std::to_string(r.duration) + " s";
    bench::Result("serve_large_ep_s", secs, "s", note);
    return r.completed == c.workload.requests;
}

int main(int argc, char** argv) {
    const long long requests = argc > 1 ? std::atoll(argv[1]) : 1000000;
    Preset p = LoadPreset("llama3-70b-h100-disaggregated.json");
    sc::ServingConfig& c = p.config;
    c.pool.replicas = 4;
    c.decode_pool->replicas = 4;
    c.workload.rate = 16;
    c.workload.requests = requests;
    const double cpu0 = CpuSeconds();
    const Timed t = Run(c, p.system);
    const double secs = t.secs, cpu = CpuSeconds() - cpu0;
    const sc::ServingResult& r = t.run.result;
    // Events: every arrival, every iteration end (one per replica iteration) and every KV transfer's arrival.
    const double events = static_cast<double>(requests + r.iterations + r.kv_transfers);
    const std::string note = std::to_string(r.completed) + " requests, " + std::to_string(r.iterations) +
                             " iterations, " + std::to_string(r.kv_transfers) + " KV transfers, " +
                             std::to_string(static_cast<long long>(events)) + " events; simulated " +
                             std::to_string(r.duration) + " s, " + std::to_string(r.requests_per_s) + " req/s";
    bench::Result("serve_s", secs, "s", note);
    if (cpu > 0) bench::Result("serve_cpu_s", cpu, "s", "user + system CPU time of the simulation (getrusage)");
    bench::Result("serve_events_per_s", events / secs, "/s", note);
    bench::Result("serve_peak_rss", bench::PeakRssBytes(), "B", "getrusage ru_maxrss");
    return r.completed == requests && Fleet() && PrefixCaching() && PrefixTiers() && LargeEp() ? 0 : 1;
}
