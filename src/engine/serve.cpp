#include "engine/serve.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "config/error.h"
#include "config/numbers.h"
#include "training/sweep.h"

namespace sc::engine {

namespace {

bool RateDriven(ArrivalKind k) {
    return k == ArrivalKind::poisson || k == ArrivalKind::gamma || k == ArrivalKind::fixed_rate;
}

ServingConfig AtRate(const ServingConfig& c, double rate) {
    ServingConfig at = c;
    at.workload.rate = rate;
    return at;
}

}  // namespace

namespace {

// In 64 bits from the fields, so that it needs no validated description (the simulation checks it once).
long long GpusOf(const PoolConfig& p) { return static_cast<long long>(p.tp) * p.pp * p.replicas; }

// `sys` as it is when it holds `gpus`, else extended to (ExtendSystem); errors name `field` and say whose GPUs
// (`who_needs`: "the pools need", "the decode pool needs").
System ClusterFor(const System& sys, long long gpus, const char* field, const std::string& who_needs) {
    if (gpus <= sys.TotalAccelerators()) return sys;
    if (gpus > kMaxRanks)
        throw Error(field, who_needs + " " + std::to_string(gpus) + " GPUs; at most " + std::to_string(kMaxRanks) +
                               " can be described");
    try {
        return ExtendSystem(sys, static_cast<int>(gpus));
    } catch (const Error& e) {  // a torus pod with nothing beyond it
        throw Error(field, who_needs + " " + std::to_string(gpus) + " GPUs: " + e.what());
    }
}

}  // namespace

System ServingCluster(const System& sys, const ServingConfig& c) {
    const long long gpus = GpusOf(c.pool) + (c.decode_pool ? GpusOf(*c.decode_pool) : 0);
    // A one-domain cluster cannot be grown, but independent replicas need no network between them: each on its own
    // copy of the domain, as many as they take. Not a disaggregated pair, whose KV cache crosses between the pools.
    const long long replica = static_cast<long long>(c.pool.tp) * c.pool.pp;
    if (gpus > sys.TotalAccelerators() && !c.decode_pool && sys.IsOneDomain() && replica <= sys.TotalAccelerators()) {
        const long long per_copy = sys.TotalAccelerators() / replica;
        System copies = sys;
        copies.name = std::to_string((c.pool.replicas + per_copy - 1) / per_copy) + " x " + sys.name +
                      " (replicas on separate copies, no network between them)";
        return copies;
    }
    return ClusterFor(sys, gpus, c.decode_pool ? "decode_pool.replicas" : "pool.replicas", "the pools need");
}

System DecodeCluster(const System& decode, const ServingConfig& c) {
    if (!c.decode_pool)
        throw Error("decode_pool.system",
                    "names the decode pool's cluster (" + decode.name + "), but the description has no decode_pool");
    return ClusterFor(decode, GpusOf(*c.decode_pool), "decode_pool.replicas", "the decode pool needs");
}

namespace {

void RequireSystem(const ServeRequest& r) {
    if (!r.system) throw Error("system", "serving needs a cluster (its accelerator and network); none was given");
}

// The clusters a request runs on: with a decode system, the prefill pool alone sizes the first.
System PrefillCluster(const ServeRequest& r) {
    if (!r.decode_system) return ServingCluster(*r.system, r.config);
    ServingConfig alone = r.config;
    alone.decode_pool.reset();
    return ServingCluster(*r.system, alone);
}

std::optional<System> DecodeClusterOf(const ServeRequest& r) {
    if (!r.decode_system) return std::nullopt;
    return DecodeCluster(*r.decode_system, r.config);
}

}  // namespace

ServeResult RunServe(const ServeRequest& r) {
    RequireSystem(r);
    const std::optional<System> decode = DecodeClusterOf(r);
    return SimulateServing(r.config, PrefillCluster(r), r.calibration, decode ? &*decode : nullptr);
}

ServeRun::ServeRun(const ServeRequest& r) {
    RequireSystem(r);
    if (r.calibration) calibration_ = std::make_shared<const CalibrationTable>(*r.calibration);
    const std::optional<System> decode = DecodeClusterOf(r);
    sim_ = std::make_unique<ServingSimulation>(r.config, PrefillCluster(r), calibration_.get(),
                                               decode ? &*decode : nullptr);
}

ServeRun::ServeRun(const ServeSweepSnapshot& s, size_t index) : calibration_(s.calibration) {
    if (index >= s.rates.size())
        throw Error("sweep", "no point " + std::to_string(index) + " in a sweep of " + std::to_string(s.rates.size()));
    sim_ = std::make_unique<ServingSimulation>(AtRate(s.config, s.rates[index]), s.system, calibration_.get(),
                                               s.decode_system ? &*s.decode_system : nullptr);
}

bool ServeRun::Step(long long events) { return sim_->Step(events); }

double ServeRun::Progress() const {
    return static_cast<double>(sim_->completed()) / static_cast<double>(sim_->requests());
}

ServeResult ServeRun::Finish() { return sim_->Finish(); }

ServeSweepSnapshot SnapshotServeSweep(const ServeRequest& r) {
    RequireSystem(r);
    if (r.sweep_rates.empty()) throw Error("sweep_rates", "a rate sweep needs at least one rate");
    if (!RateDriven(r.config.workload.arrival))
        throw Error("workload.arrival", std::string("a rate sweep varies the arrival rate: it needs poisson, gamma or "
                                                    "fixed_rate arrivals, got ") +
                                            NameOf(r.config.workload.arrival));
    for (size_t i = 0; i < r.sweep_rates.size(); ++i) {
        const double v = r.sweep_rates[i];
        if (!(std::isfinite(v) && v > 0 && v <= 1e9))
            throw Error("sweep_rates[" + std::to_string(i) + "]",
                        "must be in (0, 1e9] requests/s, got " + std::to_string(v));
        CheckArrivalSpan("sweep_rates[" + std::to_string(i) + "]", r.config.workload.requests, v);
    }
    ValidateServingConfig(AtRate(r.config, r.sweep_rates.front()));
    ServeSweepSnapshot s;
    s.config = r.config;
    s.system = PrefillCluster(r);
    s.decode_system = DecodeClusterOf(r);
    if (r.calibration) s.calibration = std::make_shared<const CalibrationTable>(*r.calibration);
    s.rates = r.sweep_rates;
    return s;
}

std::vector<ServeSweepPoint> RunServeSweepShard(const ServeSweepSnapshot& s, int shard, int count) {
    RequireShard(shard, count);
    std::vector<ServeSweepPoint> out;
    for (size_t i = static_cast<size_t>(shard); i < s.rates.size(); i += static_cast<size_t>(count)) {
        out.push_back({i, s.rates[i],
                       SimulateServing(AtRate(s.config, s.rates[i]), s.system, s.calibration.get(),
                                       s.decode_system ? &*s.decode_system : nullptr)});
        ServeSweepPoint& p = out.back();
        // A sweep reports each point's figures, not its series over time (up to 256 points, ~12 KB a point: 15,000
        // rates held 180 MB of them).
        std::vector<SeriesPoint>().swap(p.run.result.series);
    }
    return out;
}

std::vector<ServeSweepPoint> MergeServeSweep(std::vector<std::vector<ServeSweepPoint>> shards) {
    std::vector<ServeSweepPoint> all;
    for (auto& part : shards)
        for (auto& p : part) all.push_back(std::move(p));
    std::sort(all.begin(), all.end(),
              [](const ServeSweepPoint& a, const ServeSweepPoint& b) { return a.index < b.index; });
    return all;
}

}  // namespace sc::engine
