// Serving (issue 14) through the engine: one request -> one result, for every driver (`stagecraft serve`, the
// page's Inference view, web workers, MPI ranks), and a rate sweep sharded over an immutable snapshot the same
// way as the layout search (search.h): RunServeSweepShard of every shard, merged by MergeServeSweep, equals one
// unsharded sweep whatever the shard count, because every point is a whole simulation of its own seed.
//
// How a driver uses it:
//   engine::ServeRequest req;                  // from a preset (ParseServingDescription) and edits
//   req.config = description.config;           // with config.model set from the model preset
//   req.system = &system; req.calibration = &cal;
//   engine::ServeResult r = engine::RunServe(req);                     // one simulation
//   std::string text = ServeReportText(req, r);                         // src/report/serve_report.h
//
//   req.sweep_rates = {1, 2, 4, 8};            // a throughput-latency curve
//   auto snap = engine::SnapshotServeSweep(req);                        // checks everything once, copies it
//   shard k of n: engine::RunServeSweepShard(snap, k, n)                // any thread / worker / rank
//   auto points = engine::MergeServeSweep(std::move(shards));           // in rate order
//   std::string json = ServeSweepReportJson(snap, points);
//
// Nothing here does I/O; a bad request throws sc::Error naming the field.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "inference/engine.h"
#include "inference/serving_config.h"

namespace sc::engine {

struct ServeRequest {
    ServingConfig config;  // the description, config.model included
    // Borrowed; must outlive RunServe / SnapshotServeSweep (a snapshot copies them).
    const System* system = nullptr;
    const CalibrationTable* calibration = nullptr;  // null: no measured curves
    // The decode pool's own cluster (a description's decode_pool.system; heterogeneous pools, Splitwise-HA): null
    // places the decode pool on `system` beside the prefill pool. Set only with config.decode_pool.
    const System* decode_system = nullptr;
    // A rate sweep: the arrival rates (requests/s) of its points, each > 0. Needs rate-driven arrivals
    // (poisson, gamma, fixed_rate); every point is the config's workload at that rate and the same seed.
    std::vector<double> sweep_rates;
};

// One simulation: the KV capacity of each pool, the transfer model, the results (inference/engine.h).
using ServeResult = ServingRun;

// The cluster a description's pools run on: `sys`, or, when the pools need more GPUs than it has, `sys` extended
// to hold them as `--gpus` extends a training cluster (ExtendSystem: whole pods joined by a core tier, or the
// outermost level widened; its name says so). A system preset describes a topology family, not a size limit;
// replicas never talk to each other, so only the link between disaggregated pools depends on where they sit.
System ServingCluster(const System& sys, const ServingConfig& c);
// The decode pool's own cluster, `decode` extended the same way to hold the decode pool alone.
System DecodeCluster(const System& decode, const ServingConfig& c);

// Throws sc::Error("system") without a cluster, or naming the field of anything else that is invalid.
// Runs on ServingCluster(*request.system, request.config) (and DecodeCluster of request.decode_system).
ServeResult RunServe(const ServeRequest& request);

struct ServeSweepSnapshot;

// One simulation a slice at a time (the page's Serving tab, so that a long run never stops the interface): owns
// copies of the cluster it runs on (ServingCluster) and of the calibration, so its caller may change its own
// meanwhile. Checks as RunServe does when made; Finish gives RunServe's result, bit for bit.
class ServeRun {
public:
    explicit ServeRun(const ServeRequest& request);
    // Point `index` of a rate sweep, on the snapshot's cluster and calibration (shared, not copied): what
    // RunServeSweepShard computes for it, bit for bit.
    ServeRun(const ServeSweepSnapshot& sweep, size_t index);
    bool Step(long long events);  // true when the run is over (ServingSimulation::Step)
    double Progress() const;      // completed / requests, 0..1
    ServeResult Finish();         // once Step returned true
private:
    std::shared_ptr<const CalibrationTable> calibration_;
    std::unique_ptr<ServingSimulation> sim_;
};

struct ServeSweepSnapshot {
    ServingConfig config;
    System system;
    std::optional<System> decode_system;                  // the decode pool's own cluster (ServeRequest::decode_system)
    std::shared_ptr<const CalibrationTable> calibration;  // null: none; shared, never changed, by every shard
    std::vector<double> rates;                            // ascending, as requested
};

struct ServeSweepPoint {
    size_t index = 0;  // position in the snapshot's rates
    double rate = 0;   // offered requests/s
    ServeResult run;
};

// Copies what the sweep needs and checks it (the rates, the arrival kind, the config) before any shard runs.
ServeSweepSnapshot SnapshotServeSweep(const ServeRequest& request);
// The points whose index i has i % count == shard. Throws sc::Error for a shard outside [0, count).
std::vector<ServeSweepPoint> RunServeSweepShard(const ServeSweepSnapshot& snap, int shard, int count);
// Every shard's points in one list in index order.
std::vector<ServeSweepPoint> MergeServeSweep(std::vector<std::vector<ServeSweepPoint>> shards);

}  // namespace sc::engine
