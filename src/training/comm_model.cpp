#include "training/comm_model.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "config/error.h"
#include "graph/moe_spread.h"

namespace sc {

namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The scale-up curve of `op` measured on `acc` that fits: `in_network` asks for one that includes NVLink
// SHARP (NCCL's "nvls", or its default on a fabric that has it), otherwise for a plain ring/tree one. On a
// fabric without in-network reduction every measured curve is ring/tree. `exact`: only one measured on `ranks`
// GPUs, at more than one size. Otherwise the one measured on the GPU count nearest `ranks` (a measurement on 2 GPUs does not stand for
// a node of 8 when one of 8 or 4 was measured). Then, for the in-network pick, a curve of NCCL's default
// algorithm comes first: it is what a job that sets no NCCL_ALGO runs, the tuner's own choice of ring/tree LL
// for small buffers and NVLS for large ones, where a curve forced to NVLS keeps NVLS's fixed cost at every size
// (8 H100s at 64 KiB: 42 us forced, 19 us by default; aiconfigurator's NCCL 2.29.2 table against Azure's NVLS
// run, data/calibration.json). Then most points wins.
// `part`: the scale-up curves measured on the accelerator (PartScaleUpCurves), in the table's order.
const CollectiveCurve* PickCurve(const std::vector<const CollectiveCurve*>& part, CollectiveOp op, bool fabric_has_inr,
                                 bool in_network, int ranks, bool exact) {
    const CollectiveCurve* best = nullptr;
    for (const CollectiveCurve* p : part) {
        const CollectiveCurve& c = *p;
        if (c.op != op) continue;
        // A GPU count's own curve needs more than one measured size: one point cannot say how the time grows from
        // NCCL's per-call cost (ml-engineering's 2-rank MI300X all-reduce is one 4 GiB run).
        if (exact && (c.n_ranks != ranks || c.busbw.x.size() < 2)) continue;
        bool nvls = fabric_has_inr && (StartsWith(c.algorithm, "nvls") || StartsWith(c.algorithm, "default"));
        // NCCL runs no in-network reduction for an all-gather or a reduce-scatter on these parts' measured sizes, so
        // a curve of its default algorithm is a plain one there.
        bool ring = !fabric_has_inr || StartsWith(c.algorithm, "ring") ||
                    (op != CollectiveOp::all_reduce && StartsWith(c.algorithm, "default"));
        if (in_network ? !nvls : !ring) continue;
        if (!best) {
            best = &c;
            continue;
        }
        const int d = std::abs(c.n_ranks - ranks), best_d = std::abs(best->n_ranks - ranks);
        if (d != best_d) {
            if (d < best_d) best = &c;
            continue;
        }
        const bool tuned = in_network && StartsWith(c.algorithm, "default");
        const bool best_tuned = in_network && StartsWith(best->algorithm, "default");
        if (tuned != best_tuned) {
            if (tuned) best = &c;
            continue;
        }
        if (c.busbw.x.size() > best->busbw.x.size()) best = &c;
    }
    return best;
}

// The scale-up curves of `cal` measured on `acc`, read once a model: every pick below runs over these few.
std::vector<const CollectiveCurve*> PartScaleUpCurves(const CalibrationTable* cal, const std::string& acc) {
    std::vector<const CollectiveCurve*> part;
    if (cal)
        for (const CollectiveCurve& c : cal->collectives)
            if (c.scope == "scale_up" &&
                std::find(c.accelerators.begin(), c.accelerators.end(), acc) != c.accelerators.end())
                part.push_back(&c);
    return part;
}

// Expert groups scanned for the worst placement: beyond this many, the first ones stand for the rest (64-rank
// groups on 72-GPU racks repeat every 9 groups). Dense groups (tp, cp, dp, embed) read group 0 only, a
// simplification where their groups cross a domain boundary unevenly (Llama 3.1 405B on GB200: 4-8 points):
// the layout search builds a CommModel per candidate, and scanning every kind made a 64-GPU search 2.5x slower.
constexpr int kExpertGroupsScanned = 16;

// Members of one group of `kind` sharing a domain of each level, counted (not listed: a dp group at 32K ranks
// has thousands of members and this runs once per estimate) for the group and member that see the fewest
// peers close by: every group runs at once and the step waits for the slowest. A group need not line up with
// the domains (64 consecutive ranks of a folded expert group on 72-GPU NVLink racks: one rank in eight of
// those groups shares its rack with only 8 of its peers; a data-parallel group whose last members sit in a
// partly used pod), so for each group scanned the domains of its lowest and its highest member are counted,
// and the fewest members in the innermost level wins (then the next level).
std::vector<int> WorstPlacedGroup(const System& sys, const Layout& layout, GroupKind kind) {
    std::vector<int> worst, here(sys.levels.size());
    const bool expert = kind == GroupKind::ep || kind == GroupKind::edp;
    const int groups = expert ? std::min(layout.GroupCount(kind), kExpertGroupsScanned) : 1;
    for (int g = 0; g < groups; ++g) {
        const auto [lo, hi] = layout.MemberBounds(kind, g);
        for (long long member : {lo, hi}) {
            for (size_t l = 0; l < sys.levels.size(); ++l) {
                const long long size = sys.levels[l].size, start = member / size * size;
                here[l] = layout.MembersInRange(kind, g, start, start + size);
            }
            if (worst.empty() || here < worst) worst = here;
        }
    }
    return worst;
}

// Fraction of torus level l's bandwidth that group 0 of `kind` gets (comm_model.h): where its members sit along
// the dimension, read with MembersInRange (O(sub-dims) a call, O(log dim) calls). Groups of one kind are alike
// in the dense rank order; an expert group is read as its first one.
double TorusShare(const System& sys, const Layout& layout, GroupKind kind, size_t l) {
    const long long slice = l ? sys.levels[l - 1].size : 1, size = sys.levels[l].size;
    const int dim = static_cast<int>(size / slice);
    const long long first = layout.MemberBounds(kind, 0).first;
    const long long domain = first / size * size, start = first / slice * slice;
    const int here = layout.MembersInRange(kind, 0, domain, domain + size);
    const int per_slice = layout.MembersInRange(kind, 0, start, start + slice);
    if (per_slice <= 0 || here <= per_slice) return 1;
    const int k = here / per_slice;  // slices of the dimension the group touches
    // Smallest run of slices from the first member's that holds all of them.
    int lo = k, hi = static_cast<int>((domain + size - start) / slice);
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (layout.MembersInRange(kind, 0, start, start + mid * slice) >= here) hi = mid;
        else lo = mid + 1;
    }
    const double stride = k > 1 ? (lo - 1.0) / (k - 1) : 1;
    const bool ring = sys.levels[l].wraparound && std::abs(k * stride - dim) < 0.5;
    return (ring ? 1.0 : 0.5) / std::max(1.0, stride);
}

}  // namespace

CommModel::CommModel(const System& sys, const Layout& layout, bool inr, const CalibrationTable* cal, bool expert_groups,
                     const MoeConfig* deepep_moe)
    : sys_(sys), inr_(inr) {
    if (sys.levels.empty()) throw Error("system.levels", "a system needs at least one network level");
    if (layout.world() > sys.TotalAccelerators())
        throw Error("gpus", std::to_string(layout.world()) + " ranks do not fit on " + sys.name + " (" +
                                std::to_string(sys.TotalAccelerators()) + " accelerators)");
    for (int k = 0; k < static_cast<int>(GroupKind::count); ++k) {
        GroupKind kind = static_cast<GroupKind>(k);
        size_[k] = layout.GroupSize(kind);
        if (size_[k] <= 1 || (!expert_groups && (kind == GroupKind::ep || kind == GroupKind::edp))) continue;
        per_level_[k] = WorstPlacedGroup(sys, layout, kind);
    }
    while (torus_levels_ < sys.levels.size() && sys.levels[torus_levels_].kind == LevelKind::torus) ++torus_levels_;
    for (int k = 0; k < static_cast<int>(GroupKind::count) && torus_levels_ > 0; ++k) {
        if (size_[k] <= 1 || per_level_[k].empty()) continue;
        for (size_t l = 0; l < torus_levels_; ++l)
            torus_share_[k].push_back(TorusShare(sys, layout, static_cast<GroupKind>(k), l));
        torus_[k] = MakeTorusPart(static_cast<GroupKind>(k));
    }
    // Pipeline neighbours: rank 0 and the rank one stage on.
    if (layout.world() > 1) {
        int peer = layout.PipelinePeer(0, 1);
        p2p_level_ = 0;
        while (p2p_level_ + 1 < static_cast<int>(sys.levels.size()) && peer / sys.levels[p2p_level_].size != 0)
            ++p2p_level_;
    }
    // The curves were measured on the accelerator's own NVLink/xGMI ports and switches: they apply to the
    // first level when it is that fabric, a node's scale-up domain or a FullFlat fabric of the same links.
    const NetworkLevel& up = sys.levels[0];
    if (up.kind == LevelKind::scale_up ||
        (up.kind == LevelKind::fullflat && up.bandwidth_gbps == sys.accelerator.scale_up_gbps_per_direction)) {
        const std::string& acc = sys.accelerator.id;
        const bool inr_fabric = up.in_network_reduction;
        const std::vector<const CollectiveCurve*> part = PartScaleUpCurves(cal, acc);
        auto pick = [&](int ranks, bool exact) {
            Curves c;
            c.ring_ar = PickCurve(part, CollectiveOp::all_reduce, inr_fabric, false, ranks, exact);
            c.nvls_ar = PickCurve(part, CollectiveOp::all_reduce, inr_fabric, true, ranks, exact);
            c.ag = PickCurve(part, CollectiveOp::all_gather, inr_fabric, false, ranks, exact);
            c.rs = PickCurve(part, CollectiveOp::reduce_scatter, inr_fabric, false, ranks, exact);
            c.a2a = PickCurve(part, CollectiveOp::all_to_all, inr_fabric, false, ranks, exact);
            return c;
        };
        curves_ = pick(up.size, false);
        // All-gather and reduce-scatter: their own curve where measured; otherwise the ring all-reduce curve at
        // the same buffer size. A ring all-reduce is 2(k-1) steps of buffer/k, an all-gather or reduce-scatter
        // k-1 steps of the same chunk, and nccl-tests' busbw divides out exactly that step count, so equal step
        // times give equal busbw. So the all-reduce measured on the domain's GPU count stands in for a gather measured
        // only on fewer (8 A100s read their 8-GPU all-reduce, not a 4-GPU gather by the chunk rule below).
        auto nearer = [&](const CollectiveCurve* own) {
            const CollectiveCurve* ar = curves_.ring_ar;
            if (!own || (ar && std::abs(ar->n_ranks - up.size) < std::abs(own->n_ranks - up.size))) return ar;
            return own;
        };
        curves_.ag = nearer(curves_.ag);
        curves_.rs = nearer(curves_.rs);
        // Groups smaller than the domain read curves measured on their own GPU count where there are some: the
        // chunk-size rule above (k ranks at the buffer a measurement on n sees) holds the per-step time but not
        // what does not scale with the steps, NCCL's per-call latency and the algorithm the tuner picks for that
        // count. 4 of 8 H100s all-reduce 64 MiB in 330 us, where 8 read at 128 MiB give 248 (aiconfigurator's
        // NCCL 2.29.2 tables, data/calibration.json).
        for (const CollectiveCurve* c : part) {
            if (c->n_ranks >= up.size || c->n_ranks < 2) continue;
            const int k = c->n_ranks;
            if (std::any_of(curves_by_ranks_.begin(), curves_by_ranks_.end(),
                            [k](const auto& e) { return e.first == k; }))
                continue;
            Curves own = pick(k, true), merged = curves_;
            for (auto m : {&Curves::ring_ar, &Curves::nvls_ar, &Curves::ag, &Curves::rs, &Curves::a2a})
                if (own.*m) merged.*m = own.*m;
            curves_by_ranks_.emplace_back(k, merged);
        }
    }
    const std::vector<int>& ep = per_level_[static_cast<int>(GroupKind::ep)];
    if (deepep_moe && deepep_moe->experts > 0 && !ep.empty() && torus_levels_ == 0) {
        const int n = size_[static_cast<int>(GroupKind::ep)], inner = ep[0];
        const int domains = inner > 0 && n % inner == 0 ? n / inner : 0;
        if (domains > 0 && deepep_moe->experts % domains == 0 && deepep_moe->experts % n == 0) {
            const double ranks = MoeDistinctGroups(*deepep_moe, n);
            const double remote = MoeDistinctGroups(*deepep_moe, domains) * (domains - 1.0) / domains;
            deepep_scale_out_share_ = ranks > 0 ? remote / ranks : 0;
        }
    }
}

double CommModel::DeepEpAllToAllSeconds(double bytes) const {
    const std::vector<int>& m = per_level_[static_cast<int>(GroupKind::ep)];
    const int n = size_[static_cast<int>(GroupKind::ep)];
    double scale_up = 0, scale_out = 0;
    if (m[0] > 1) {
        const NetworkLevel& lvl = sys_.levels[0];
        scale_up = (m[0] - 1.0) / m[0] * bytes / (lvl.EffectiveGBps() * 1e9) + lvl.latency_us * 1e-6;
    }
    // Levels past the scale-up domain carry the remote domains' copies, each level the share of them whose peers
    // it reaches first (m[l] - m[l-1] of the n - m[0] members outside the domain).
    for (size_t l = 1; l < m.size(); ++l) {
        if (m[l] <= m[l - 1]) continue;
        const NetworkLevel& lvl = sys_.levels[l];
        const double share = static_cast<double>(m[l] - m[l - 1]) / (n - m[0]);
        scale_out += bytes * deepep_scale_out_share_ * share / (lvl.EffectiveGBps() * 1e9) + lvl.latency_us * 1e-6;
    }
    return std::max(scale_up, scale_out);
}

const CommModel& CommModelCache::For(const System& sys, const ParallelConfig& p, bool inr, const CalibrationTable* cal,
                                     bool expert_groups, const MoeConfig* deepep_moe) {
    Key k{&sys, cal, p.tp, p.cp, p.dp, p.pp, p.ep, p.etp, p.order, inr, expert_groups};
    if (deepep_moe)
        k.deepep = true, k.experts = deepep_moe->experts, k.top_k = deepep_moe->top_k, k.routing = deepep_moe->routing;
    if (!model_ || !(k == key_)) {
        model_.reset();  // a failed build leaves no model behind
        model_.emplace(sys, Layout(p), inr, cal, expert_groups, deepep_moe);
        key_ = std::move(k);
    }
    return *model_;
}

const CommModel::Curves& CommModel::CurvesFor(int k) const {
    for (const auto& [ranks, curves] : curves_by_ranks_)
        if (ranks == k) return curves;
    return curves_;
}

const CollectiveCurve* CommModel::ScaleUpCurve(CollectiveType type, int ranks) const {
    const Curves& c = CurvesFor(ranks);
    switch (type) {
        case CollectiveType::all_reduce:
            return inr_ && sys_.levels[0].in_network_reduction && c.nvls_ar ? c.nvls_ar : c.ring_ar;
        case CollectiveType::all_gather: return c.ag;
        case CollectiveType::reduce_scatter: return c.rs;
        case CollectiveType::all_to_all: return c.a2a;
        default: return nullptr;
    }
}

double CommModel::LevelSeconds(CollectiveType type, size_t l, int k, double bytes) const {
    const NetworkLevel& lvl = sys_.levels[l];
    const bool ar = type == CollectiveType::all_reduce;
    const double factor = (ar ? 2.0 : 1.0) * (k - 1.0) / k;
    // Alpha-beta: the bandwidth term of a ring, and the latency of whichever algorithm has fewer steps, a
    // ring (k-1 steps per phase) or the logarithmic ones (recursive doubling / halving, ceil(log2 k) steps
    // per phase, same bandwidth term: Thakur et al. 2005; NCCL's trees and PAT). The collective library
    // picks the cheaper.
    const double bw = lvl.EffectiveGBps() * 1e9, lat = lvl.latency_us * 1e-6;
    const double phases = ar ? 2 : 1;
    double t = factor * bytes / bw + phases * std::min(k - 1.0, std::ceil(std::log2(k))) * lat;
    if (l == 0) {
        // Measured: nccl-tests busbw = bytes * factor / time at the measured rank count n; k ranks on the same
        // switch move chunks of bytes/k per step, which a measurement on n ranks sees at bytes * n / k.
        // An edited level (bandwidth, efficiency) scales what the preset's fabric measured.
        auto measured = [&](const CollectiveCurve* c) {
            return factor * bytes / (BusBandwidthGBps(*c, bytes * c->n_ranks / k) * CalibrationScale(lvl) * 1e9);
        };
        const Curves& c = CurvesFor(k);
        const CollectiveCurve* plain = ar                                       ? c.ring_ar
                                       : type == CollectiveType::all_gather     ? c.ag
                                       : type == CollectiveType::reduce_scatter ? c.rs
                                                                                : nullptr;
        if (plain) t = measured(plain);
        if (ar && lvl.in_network_reduction && c.nvls_ar) {
            // NCCL's default algorithm measured on these k GPUs is the tuner's own pick between ring/tree and NVLS:
            // the time with NVLS on, and a floor for ring/tree alone with it off (the tuner had them to pick).
            // Otherwise the tuner takes NVLS only where it is faster than ring/tree.
            const bool tuned_here = c.nvls_ar->n_ranks == k && StartsWith(c.nvls_ar->algorithm, "default");
            if (tuned_here) return inr_ ? measured(c.nvls_ar) : std::max(t, measured(c.nvls_ar));
            if (inr_) return std::min(t, measured(c.nvls_ar));
        }
    }
    if (ar && inr_ && lvl.in_network_reduction) t = std::min(t, bytes / bw + 2 * lat);  // the buffer sent once
    return t;
}

CommModel::TorusPart CommModel::MakeTorusPart(GroupKind group) const {
    const std::vector<int>& m = per_level_[static_cast<int>(group)];
    const std::vector<double>& torus_share = torus_share_[static_cast<int>(group)];
    struct Dim {
        double k, bw, lat;
    };
    std::vector<Dim> dims;
    TorusPart part;
    for (size_t l = 0; l < torus_levels_ && l < m.size(); ++l) {
        const int k = m[l] / part.inner;
        part.inner = m[l];
        if (k > 1)
            dims.push_back({static_cast<double>(k), sys_.levels[l].EffectiveGBps() * 1e9 * torus_share[l],
                            sys_.levels[l].latency_us * 1e-6});
    }
    const size_t d = dims.size();
    // Part j of d takes the dimensions in the order j, j+1, ...: it enters dimension i holding its 1/d of the
    // buffer divided by the members of the dimensions it has already crossed. A reduce-scatter or all-gather
    // moves (k-1)/k of what enters a dimension; an all-reduce twice that.
    for (size_t i = 0; i < d; ++i) {
        double carried = 0;  // per byte of the buffer
        for (size_t j = 0; j < d; ++j) {
            double before = 1;
            for (size_t q = j; q % d != i; ++q) before *= dims[q % d].k;
            carried += 1.0 / d / before;
        }
        part.seconds_per_byte = std::max(part.seconds_per_byte, (dims[i].k - 1) / dims[i].k * carried / dims[i].bw);
        part.latency += std::min(dims[i].k - 1, std::ceil(std::log2(dims[i].k))) * dims[i].lat;
        part.members *= dims[i].k;
    }
    return part;
}

double CommModel::Seconds(CollectiveType type, GroupKind group, double bytes) const {
    const int n = size_[static_cast<int>(group)];
    if (n <= 1 || bytes <= 0) return 0;
    const std::vector<int>& m = per_level_[static_cast<int>(group)];
    if (m.empty())
        throw Error("internal", std::string("a collective on the ") + NameOf(group) +
                                    " group of a communication model built without expert groups");
    double t = 0, share = bytes;
    int inner = 1;  // members in one domain of the previous level
    size_t l = 0;
    if (type != CollectiveType::all_to_all && torus_levels_ > 0) {
        const TorusPart& torus = torus_[static_cast<int>(group)];
        const double steps = type == CollectiveType::all_reduce ? 2 : 1;
        t += steps * (bytes * torus.seconds_per_byte + torus.latency);
        share = bytes / torus.members;
        inner = torus.inner;
        l = std::min(torus_levels_, m.size());
    }
    if (type == CollectiveType::all_to_all && group == GroupKind::ep && deepep_scale_out_share_ >= 0)
        return DeepEpAllToAllSeconds(bytes);
    for (; l < m.size(); ++l) {
        const NetworkLevel& lvl = sys_.levels[l];
        if (type == CollectiveType::all_to_all) {
            // Traffic to peers reached first at this level; on a torus dimension of k members it crosses k/4
            // links on average (both directions of a ring, or a line's busiest middle link).
            double bw = lvl.EffectiveGBps() * 1e9, hops = 1, lat = lvl.latency_us * 1e-6;
            if (l == 0 && CurvesFor(m[0]).a2a) {
                const CollectiveCurve* a2a = CurvesFor(m[0]).a2a;
                // Measured (nccl-tests: busbw = (n-1)/n x buffer / time, each peer sent buffer/n), read at the buffer
                // a measurement on its n ranks would send with this group's chunk per peer; its time holds the latency.
                bw = BusBandwidthGBps(*a2a, bytes * a2a->n_ranks / n) * CalibrationScale(lvl) * 1e9;
                lat = 0;
            }
            if (l < torus_levels_) {
                bw *= torus_share_[static_cast<int>(group)][l];
                hops = std::max(1.0, m[l] / static_cast<double>(inner) / 4);
            }
            t += (m[l] - inner) / static_cast<double>(n) * bytes * hops / bw + (m[l] > inner ? lat : 0);
            inner = m[l];
            continue;
        }
        const int k = m[l] / inner;  // ranks this level joins, each holding `share`
        inner = m[l];
        if (k <= 1) continue;
        t += LevelSeconds(type, l, k, share);
        share /= k;  // the next level works on this level's shard
    }
    return t;
}

double CommModel::P2PSeconds(double bytes) const {
    const NetworkLevel& lvl = sys_.levels[p2p_level_];
    // A torus level's bandwidth is both links of the dimension; a send to a neighbour takes one.
    const double links = lvl.kind == LevelKind::torus ? 0.5 : 1.0;
    return bytes / (lvl.EffectiveGBps() * links * 1e9) + lvl.latency_us * 1e-6;
}

}  // namespace sc
