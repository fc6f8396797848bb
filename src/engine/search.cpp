#include "engine/search.h"

#include "config/error.h"
#include "config/job_segments.h"

namespace sc::engine {

SearchSnapshot SnapshotSearch(const Request& r) {
    if (!r.system) throw Error("system", "the layout search needs a cluster; none was given");
    SearchSnapshot s;
    s.model = r.model;
    // A torus pod (TPU) gives the searched GPU count a slice of its own shape, NVL72 racks segments of whole trays,
    // as the estimate does.
    std::optional<System> slice = JobPartFor(*r.system, r.search.gpus);
    s.system = slice ? std::move(*slice) : *r.system;
    if (r.calibration) s.calibration = std::make_shared<const CalibrationTable>(*r.calibration);
    s.options = r.options;
    s.request.gpus = r.search.gpus;
    s.request.batch = r.search.batch;
    s.request.top_k = r.search.top_k;
    s.request.space = r.search.space;
    return s;
}

SearchResult RunSearchShard(const SearchSnapshot& s, int shard, int count) {
    SearchRequest req = s.request;
    req.shard_index = shard;
    req.shard_count = count;
    return SearchLayouts(s.model, s.system, s.calibration.get(), s.options, req);
}

SearchResult MergeSearch(const SearchSnapshot& s, std::vector<SearchResult> shards) {
    return MergeSearchResults(std::move(shards), s.request.top_k);
}

}  // namespace sc::engine
