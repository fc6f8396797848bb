#include "engine/sweep.h"

#include <algorithm>

#include "config/error.h"

namespace sc::engine {

SweepSnapshot SnapshotSweep(const Request& r) {
    if (!r.system) throw Error("system", "the sweep needs a cluster; none was given");
    ValidateSweepAxes(r.sweep.axes);
    SweepSnapshot s;
    s.models = r.sweep.models;
    if (s.models.empty()) s.models.push_back({r.model.name, r.model});
    s.base = *r.system;
    if (r.calibration) s.calibration = std::make_shared<const CalibrationTable>(*r.calibration);
    s.options = r.options;
    s.axes = r.sweep.axes;
    s.request.gpus = r.search.gpus;
    s.request.batch = r.search.batch;
    s.request.space = r.search.space;
    if (r.sweep.fixed_layout) {
        s.request.layout = r.parallel;
        s.request.gpus = r.parallel.world();
        s.request.batch = r.parallel.global_batch();
    }
    // Throws for a base system that cannot be swept, or an axis it has nothing for (a torus has no scale-up
    // domain to resize): before any worker starts, not at the first point that meets it.
    MakeSweepSystem(s.base, SweepPoint{}, s.request.gpus);
    for (int domain : s.axes.domain) MakeSweepSystem(s.base, SweepPoint{.domain = domain}, s.request.gpus);
    for (Topology t : s.axes.topology) MakeSweepSystem(s.base, SweepPoint{.topology = t}, s.request.gpus);
    for (double w : s.axes.power) MakeSweepSystem(s.base, SweepPoint{.power_w = w}, s.request.gpus);
    s.context = std::make_shared<const SweepContext>(
        MakeSweepContext(s.models, s.base, s.calibration.get(), s.options, s.axes, s.request));
    return s;
}

std::vector<SweepRow> RunSweepShard(const SweepSnapshot& s, int shard, int count) {
    return RunSweepPoints(*s.context, shard, count);
}

SweepKey KeyOf(const SweepRow& row) { return {row.point_index, row.model_index}; }

std::vector<SweepRow> MergeSweep(std::vector<std::vector<SweepRow>> shards) {
    // Sorts the keys, not the rows: a row (its estimate, layout and names) is some hundreds of bytes, and
    // round-robin shards arrive interleaved, so sorting the rows themselves moved each one log n times. Equal keys
    // keep their shard order, as a stable sort of the rows would.
    struct Ref {
        SweepKey key;
        size_t shard, index;
    };
    std::vector<Ref> refs;
    for (size_t s = 0; s < shards.size(); ++s)
        for (size_t i = 0; i < shards[s].size(); ++i) refs.push_back({KeyOf(shards[s][i]), s, i});
    std::stable_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.key < b.key; });
    std::vector<SweepRow> rows;
    rows.reserve(refs.size());
    for (const Ref& r : refs) rows.push_back(std::move(shards[r.shard][r.index]));
    return rows;
}

}  // namespace sc::engine
