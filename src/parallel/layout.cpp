#include "parallel/layout.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace sc {

const char* NameOf(GroupKind k) {
    switch (k) {
        case GroupKind::tp: return "tp";
        case GroupKind::cp: return "cp";
        case GroupKind::ep: return "ep";
        case GroupKind::dp: return "dp";
        case GroupKind::edp: return "edp";
        case GroupKind::embed: return "embed";
        case GroupKind::count: break;
    }
    return "?";
}

Layout::Layout(const ParallelConfig& p) : world_(p.world()), pp_(p.pp), ep_(p.ep), experts_split_by_tp_(p.etp > 1) {
    size_[kTp] = p.tp;
    size_[kCp] = p.cp;
    size_[kDp] = p.dp;
    size_[kPp] = p.pp;
    // Strides follow `order` (fastest first).
    long long stride = 1;
    size_t pos = 0;
    const std::string& o = p.order;
    while (pos <= o.size()) {
        size_t c = o.find('-', pos);
        std::string_view d = std::string_view(o).substr(pos, c == std::string::npos ? std::string::npos : c - pos);
        int sub = d == "tp" ? kTp : d == "cp" ? kCp : d == "dp" ? kDp : d == "pp" ? kPp : -1;
        if (sub >= 0) stride_[sub] = stride, stride *= size_[sub];
        if (c == std::string::npos) break;
        pos = c + 1;
    }
    // The sub-dimensions the expert index counts over, smallest stride first.
    expert_ranks_ = 1;
    for (int d : {kTp, kCp, kDp}) {
        if (d == kTp && experts_split_by_tp_) continue;
        fold_dims_[nfold_++] = d;
        expert_ranks_ *= size_[d];
    }
    for (int i = 1; i < nfold_; ++i)
        for (int j = i; j > 0 && stride_[fold_dims_[j]] < stride_[fold_dims_[j - 1]]; --j)
            std::swap(fold_dims_[j], fold_dims_[j - 1]);
    uint32_t next = 1;
    for (int k = 0; k < static_cast<int>(GroupKind::count); ++k) {
        GroupKind kind = static_cast<GroupKind>(k);
        first_id_[k] = next;
        if (GroupSize(kind) > 1) next += static_cast<uint32_t>(GroupCount(kind));
    }
}

int Layout::ExpertIndex(const Coord& c) const {
    int idx = 0;
    for (int i = nfold_ - 1; i >= 0; --i) idx = idx * size_[fold_dims_[i]] + c[fold_dims_[i]];
    return idx;
}

long long Layout::ExpertOffset(int index) const {
    long long off = 0;
    for (int i = 0; i < nfold_; ++i) {
        const int d = fold_dims_[i];
        off += (index % size_[d]) * stride_[d];
        index /= size_[d];
    }
    return off;
}

ExpertCoord Layout::ExpertCoordOf(int rank) const {
    const int e = ExpertIndex(CoordOf(rank));
    return ExpertCoord{e % ep_, e / ep_};
}

// Expert group `index`: the position inside the stage's expert layout that the group does not vary (the
// edp position of an ep group, the ep position of an edp group) fastest, then the TP position when experts
// are split over TP, then the stage. Group 0 holds rank 0.
long long Layout::ExpertMember(GroupKind k, int index, int j) const {
    const int edp = expert_ranks_ / ep_;
    const int fixed_size = k == GroupKind::ep ? edp : ep_;
    const int fixed = index % fixed_size;
    index /= fixed_size;
    long long base = 0;
    if (experts_split_by_tp_) base += (index % size_[kTp]) * stride_[kTp], index /= size_[kTp];
    base += index * stride_[kPp];
    const int e = k == GroupKind::ep ? fixed * ep_ + j : fixed + j * ep_;
    return base + ExpertOffset(e);
}

Coord Layout::CoordOf(int rank) const {
    Coord c{};
    for (int d = 0; d < kSubDims; ++d) c[d] = static_cast<int>((rank / stride_[d]) % size_[d]);
    return c;
}

int Layout::RankOf(const Coord& c) const {
    long long r = 0;
    for (int d = 0; d < kSubDims; ++d) r += c[d] * stride_[d];
    return static_cast<int>(r);
}

bool Layout::Varies(GroupKind k, int sub) const {
    switch (k) {
        case GroupKind::tp: return sub == kTp;
        case GroupKind::cp: return sub == kCp;
        case GroupKind::dp: return sub == kCp || sub == kDp;
        case GroupKind::embed: return sub == kPp;  // only stages 0 and pp-1
        case GroupKind::ep:
        case GroupKind::edp: break;  // the expert layout: ExpertIndex
        case GroupKind::count: break;
    }
    return false;
}

int Layout::GroupSize(GroupKind k) const {
    if (k == GroupKind::embed) return pp_ > 1 ? 2 : 1;
    if (k == GroupKind::ep) return ep_;
    if (k == GroupKind::edp) return expert_ranks_ / ep_;
    int n = 1;
    for (int d = 0; d < kSubDims; ++d)
        if (Varies(k, d)) n *= size_[d];
    return n;
}

int Layout::GroupCount(GroupKind k) const {
    if (IsExpert(k)) return world_ / GroupSize(k);
    int n = 1;
    for (int d = 0; d < kSubDims; ++d)
        if (!Varies(k, d)) n *= size_[d];
    return n;
}

// Mixed-radix index over the sub-dimensions that do not vary within the group.
int Layout::IndexOf(GroupKind k, const Coord& c) const {
    int idx = 0;
    for (int d = kSubDims - 1; d >= 0; --d)
        if (!Varies(k, d)) idx = idx * size_[d] + c[d];
    return idx;
}

uint32_t Layout::GroupId(GroupKind k, int rank) const {
    if (GroupSize(k) <= 1) return 0;
    Coord c = CoordOf(rank);
    if (k == GroupKind::embed && c[kPp] != 0 && c[kPp] != pp_ - 1) return 0;
    if (IsExpert(k)) {
        const int e = ExpertIndex(c), edp = expert_ranks_ / ep_;
        int idx = c[kPp];
        if (experts_split_by_tp_) idx = idx * size_[kTp] + c[kTp];
        idx = k == GroupKind::ep ? idx * edp + e / ep_ : idx * ep_ + e % ep_;
        return first_id_[static_cast<int>(k)] + static_cast<uint32_t>(idx);
    }
    return first_id_[static_cast<int>(k)] + static_cast<uint32_t>(IndexOf(k, c));
}

void Layout::Members(GroupKind k, int index, std::vector<int>& out) const {
    out.clear();
    if (IsExpert(k)) {
        const int n = GroupSize(k);
        out.reserve(n);
        for (int j = 0; j < n; ++j) out.push_back(static_cast<int>(ExpertMember(k, index, j)));
        return;
    }
    Coord base{};
    for (int d = 0; d < kSubDims; ++d)
        if (!Varies(k, d)) base[d] = index % size_[d], index /= size_[d];
    if (k == GroupKind::embed) {
        base[kPp] = 0;
        out.push_back(RankOf(base));
        base[kPp] = pp_ - 1;
        out.push_back(RankOf(base));
        std::sort(out.begin(), out.end());
        return;
    }
    // Odometer over the varying sub-dimensions, smallest stride fastest. Strides are mixed-radix (each one
    // exceeds the largest offset the smaller-stride dimensions reach), so this lists the members ascending.
    int dims[kSubDims], nd = 0;
    for (int d = 0; d < kSubDims; ++d)
        if (Varies(k, d) && size_[d] > 1) dims[nd++] = d;
    for (int i = 1; i < nd; ++i)  // insertion sort by stride (at most five)
        for (int j = i; j > 0 && stride_[dims[j]] < stride_[dims[j - 1]]; --j) std::swap(dims[j], dims[j - 1]);
    int n = 1;
    for (int i = 0; i < nd; ++i) n *= size_[dims[i]];
    out.reserve(n);
    int c[kSubDims] = {};
    long long r = RankOf(base);
    for (int m = 0; m < n; ++m) {
        out.push_back(static_cast<int>(r));
        for (int i = 0; i < nd; ++i) {
            const int d = dims[i];
            if (++c[d] < size_[d]) {
                r += stride_[d];
                break;
            }
            c[d] = 0;
            r -= stride_[d] * (size_[d] - 1);
        }
    }
}

int Layout::MembersInRange(GroupKind k, int index, long long lo, long long hi) const {
    if (hi <= lo) return 0;
    if (IsExpert(k)) {
        // Members ascend with j: count those below a bound by bisection.
        const int n = GroupSize(k);
        auto below = [&](long long bound) {
            int a = 0, b = n;  // first j with member >= bound lies in [a, b]
            while (a < b) {
                const int mid = a + (b - a) / 2;
                if (ExpertMember(k, index, mid) < bound) a = mid + 1;
                else b = mid;
            }
            return a;
        };
        return below(hi) - below(lo);
    }
    if (k == GroupKind::embed) {
        std::vector<int> m;
        Members(k, index, m);
        return static_cast<int>(std::count_if(m.begin(), m.end(), [&](int r) { return r >= lo && r < hi; }));
    }
    Coord base{};
    for (int d = 0; d < kSubDims; ++d)
        if (!Varies(k, d)) base[d] = index % size_[d], index /= size_[d];
    const long long first = RankOf(base);
    // Members are first + sum of c_d * stride_d over the varying sub-dimensions; strides are mixed-radix, so
    // counting the offsets below a bound goes digit by digit from the largest stride.
    int dims[kSubDims], nd = 0;
    for (int d = 0; d < kSubDims; ++d)
        if (Varies(k, d) && size_[d] > 1) dims[nd++] = d;
    for (int i = 1; i < nd; ++i)  // largest stride first
        for (int j = i; j > 0 && stride_[dims[j]] > stride_[dims[j - 1]]; --j) std::swap(dims[j], dims[j - 1]);
    auto below = [&](long long bound) {  // members with rank < bound
        long long t = bound - first, count = 0, lower = 1;
        if (t <= 0) return 0LL;
        for (int i = 0; i < nd; ++i) lower *= size_[dims[i]];
        for (int i = 0; i < nd; ++i) {
            const int d = dims[i];
            lower /= size_[d];
            const long long q = t / stride_[d];
            if (q >= size_[d]) return count + size_[d] * lower;
            count += q * lower;
            t -= q * stride_[d];
        }
        return count + (t > 0 ? 1 : 0);
    };
    return static_cast<int>(below(hi) - below(lo));
}

std::pair<long long, long long> Layout::MemberBounds(GroupKind k, int index) const {
    if (IsExpert(k)) return {ExpertMember(k, index, 0), ExpertMember(k, index, GroupSize(k) - 1)};
    if (k == GroupKind::embed) {
        std::vector<int> m;
        Members(k, index, m);
        return {m.front(), m.back()};
    }
    Coord base{};
    for (int d = 0; d < kSubDims; ++d)
        if (!Varies(k, d)) base[d] = index % size_[d], index /= size_[d];
    const long long first = RankOf(base);
    long long last = first;
    for (int d = 0; d < kSubDims; ++d)
        if (Varies(k, d)) last += (size_[d] - 1) * stride_[d];
    return {first, last};
}

int Layout::PipelinePeer(int rank, int delta) const {
    Coord c = CoordOf(rank);
    c[kPp] = ((c[kPp] + delta) % pp_ + pp_) % pp_;
    return RankOf(c);
}

}  // namespace sc
