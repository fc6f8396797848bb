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
    MakeSweepSystem(s.base, SweepPoint{}, s.request.gpus);  // throws for a base system that cannot be swept
    s.context = std::make_shared<const SweepContext>(
        MakeSweepContext(s.models, s.base, s.calibration.get(), s.options, s.axes, s.request));
    return s;
}

std::vector<SweepRow> RunSweepShard(const SweepSnapshot& s, int shard, int count) {
    return RunSweepPoints(*s.context, shard, count);
}

SweepKey KeyOf(const SweepRow& row) { return {row.point_index, row.model_index}; }

std::vector<SweepRow> MergeSweep(std::vector<std::vector<SweepRow>> shards) {
    std::vector<SweepRow> rows;
    for (std::vector<SweepRow>& shard : shards)
        for (SweepRow& row : shard) rows.push_back(std::move(row));
    std::stable_sort(rows.begin(), rows.end(),
                     [](const SweepRow& a, const SweepRow& b) { return KeyOf(a) < KeyOf(b); });
    return rows;
}

}  // namespace sc::engine
