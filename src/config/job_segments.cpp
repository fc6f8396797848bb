#include "config/job_segments.h"

#include "config/torus_slice.h"

namespace sc {

std::optional<System> SegmentedPartFor(const System& sys, int gpus) {
    if (sys.levels.empty() || gpus <= 0) return std::nullopt;
    const NetworkLevel& dom = sys.levels.front();
    if (dom.kind != LevelKind::scale_up || dom.node_size <= 0 || sys.levels.size() < 2) return std::nullopt;
    if (dom.size % dom.node_size != 0) return std::nullopt;  // a size edited off whole nodes: placed as it is
    if (gpus <= dom.size || gpus % dom.size == 0 || gpus % dom.node_size != 0) return std::nullopt;
    const int nodes = gpus / dom.node_size, per_domain = dom.size / dom.node_size;
    int segment = per_domain;
    while (nodes % segment != 0) --segment;  // ends at 1 at worst
    System s = sys;
    s.levels.front().size = segment * dom.node_size;
    s.levels.front().provenance["size"] = {
        "DERIVED",
        {"config/job_segments.h (Slurm --segment as NVIDIA's Megatron-Bridge recipes set it)"},
        std::to_string(segment) + " of each domain's " + std::to_string(per_domain) + " nodes, for a job of " +
            std::to_string(nodes) + " nodes",
        ""};
    int below = s.levels.front().size;
    for (size_t i = 1; i < s.levels.size(); ++i) {
        NetworkLevel& l = s.levels[i];
        l.size = (l.size + below - 1) / below * below;
        below = l.size;
    }
    s.name += " (" + std::to_string(gpus / s.levels.front().size) + " segments of " +
              std::to_string(s.levels.front().size) + ": " + std::to_string(segment) + " of each " + dom.name + "'s " +
              std::to_string(per_domain) + " nodes)";
    return s;
}

std::optional<System> JobPartFor(const System& sys, int gpus) {
    if (std::optional<System> t = TorusPartFor(sys, gpus)) return t;
    return SegmentedPartFor(sys, gpus);
}

}  // namespace sc
