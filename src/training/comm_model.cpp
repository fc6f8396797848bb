#include "training/comm_model.h"

#include <algorithm>

#include "config/error.h"

namespace sc {

CommModel::CommModel(const System& sys, const Layout& layout, bool inr) : sys_(sys), inr_(inr) {
    if (sys.levels.empty()) throw Error("system.levels", "a system needs at least one network level");
    if (layout.world() > sys.TotalAccelerators())
        throw Error("gpus", std::to_string(layout.world()) + " ranks do not fit on " + sys.name + " (" +
                                std::to_string(sys.TotalAccelerators()) + " accelerators)");
    std::vector<int> members;
    for (int k = 0; k < static_cast<int>(GroupKind::count); ++k) {
        GroupKind kind = static_cast<GroupKind>(k);
        size_[k] = layout.GroupSize(kind);
        if (size_[k] <= 1) continue;
        layout.Members(kind, 0, members);
        for (const NetworkLevel& lvl : sys.levels) {
            int same = 0;
            for (int r : members) same += (r / lvl.size == members[0] / lvl.size);
            per_level_[k].push_back(same);
        }
    }
    // Pipeline neighbours: rank 0 and the rank one stage on.
    if (layout.world() > 1) {
        int peer = layout.PipelinePeer(0, 1);
        p2p_level_ = 0;
        while (p2p_level_ + 1 < static_cast<int>(sys.levels.size()) && peer / sys.levels[p2p_level_].size != 0) ++p2p_level_;
    }
}

double CommModel::Seconds(CollectiveType type, GroupKind group, double bytes) const {
    const int n = size_[static_cast<int>(group)];
    if (n <= 1 || bytes <= 0) return 0;
    const std::vector<int>& m = per_level_[static_cast<int>(group)];
    double t = 0, share = bytes;
    int inner = 1;  // members in one domain of the previous level
    for (size_t l = 0; l < m.size(); ++l) {
        const NetworkLevel& lvl = sys_.levels[l];
        const double bw = lvl.EffectiveGBps() * 1e9, lat = lvl.latency_us * 1e-6;
        if (type == CollectiveType::all_to_all) {
            // Traffic to peers reached first at this level.
            t += (m[l] - inner) / static_cast<double>(n) * bytes / bw + (m[l] > inner ? lat : 0);
            inner = m[l];
            continue;
        }
        const int k = m[l] / inner;  // ranks this level joins, each holding `share`
        inner = m[l];
        if (k <= 1) continue;
        double factor = (k - 1.0) / k, steps = k - 1.0;
        if (type == CollectiveType::all_reduce) {
            bool inr = inr_ && lvl.in_network_reduction;
            factor = inr ? 1.0 : 2 * factor;
            steps = inr ? 2 : 2 * steps;
        }
        t += factor * share / bw + steps * lat;
        share /= k;  // the next level works on this level's shard
    }
    return t;
}

double CommModel::P2PSeconds(double bytes) const {
    const NetworkLevel& lvl = sys_.levels[p2p_level_];
    return bytes / (lvl.EffectiveGBps() * 1e9) + lvl.latency_us * 1e-6;
}

}  // namespace sc
