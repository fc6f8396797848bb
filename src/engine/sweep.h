// The co-design sweep over an immutable snapshot of a request, in shards of points (round-robin) that any
// driver runs its own way (the CLI's threads, the MPI ranks' threads) and merges the same way: the rows of
// every shard ordered by SweepKey are exactly the rows of one unsharded run, whatever the shard count.
#pragma once
#include <compare>
#include <cstddef>
#include <memory>
#include <vector>

#include "engine/request.h"
#include "training/sweep.h"

namespace sc::engine {

struct SweepSnapshot {
    std::vector<SweepModel> models;
    System base;
    std::shared_ptr<const CalibrationTable> calibration;  // null: none
    TrainingOptions options;
    SweepAxes axes;
    SweepRequest request;
    // Made once from the fields above (MakeSweepContext): every shard of this snapshot runs over it, so a
    // fixed layout's graphs are built once per sweep, not once per shard. Shared, never changed.
    std::shared_ptr<const SweepContext> context;
};

// Copies what the sweep needs out of `request`. Throws sc::Error naming the field when the request has no
// cluster, when an axis list is invalid, or when the base system cannot be swept (its first level must be a
// scale_up level): checked here, before any shard runs, so every driver (every MPI rank) fails at once.
SweepSnapshot SnapshotSweep(const Request& request);

// The points whose index i has i % count == shard, every model at each, rows in SweepKey order.
std::vector<SweepRow> RunSweepShard(const SweepSnapshot& snap, int shard, int count);

// The order of rows in the output: by point, then by model. Drivers that move rows as text (MPI) sort by it too.
struct SweepKey {
    size_t point = 0;
    int model = 0;
    auto operator<=>(const SweepKey&) const = default;
};
SweepKey KeyOf(const SweepRow& row);

// Every shard's rows in one list in SweepKey order: the rows of the unsharded sweep.
std::vector<SweepRow> MergeSweep(std::vector<std::vector<SweepRow>> shards);

}  // namespace sc::engine
