// The layout search over an immutable snapshot of a request, in shards that any driver runs its own way (the
// CLI's threads, the page's web workers or frame slices, MPI ranks) and merges the same way: MergeSearch of every
// shard's result equals one unsharded SearchLayouts, whatever the shard count.
//
// Why a snapshot: a search of many shards outlives the frame (or the thread start) that began it, and the page
// keeps editing its model, cluster and calibration meanwhile. The snapshot owns copies of all of them, so every
// shard of one search sees the same inputs and an edit mid-search cannot mix two models' shards.
#pragma once
#include <memory>
#include <vector>

#include "engine/request.h"
#include "training/search.h"

namespace sc::engine {

struct SearchSnapshot {
    ModelConfig model;
    System system;
    std::shared_ptr<const CalibrationTable> calibration;  // null: none; shared, never changed, by every shard
    TrainingOptions options;
    SearchRequest request;  // gpus, batch, top_k, space; its shard fields are set per call by RunSearchShard
};

// Copies what the search needs out of `request` (request.search says what to search). Throws sc::Error("system")
// when the request has no cluster; gpus, batch, top_k and the space are checked by every shard (SearchLayouts).
SearchSnapshot SnapshotSearch(const Request& request);

// The candidates whose enumeration index i has i % count == shard. Throws sc::Error naming the field for a bad
// request or shard (shard outside [0, count)).
SearchResult RunSearchShard(const SearchSnapshot& snap, int shard, int count);

// The whole search from all `count` shards' results (any order): stats added, the top lists merged by (step time,
// enumeration index) and cut to the snapshot's top_k.
SearchResult MergeSearch(const SearchSnapshot& snap, std::vector<SearchResult> shards);

}  // namespace sc::engine
