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

Layout::Layout(const ParallelConfig& p) : world_(p.world()), pp_(p.pp), experts_split_by_tp_(p.etp > 1) {
    size_[kTp] = p.tp;
    size_[kCp] = p.cp;
    size_[kE] = p.ep;
    size_[kX] = p.dp / p.ep;
    size_[kPp] = p.pp;
    // Strides follow `order` (fastest first); inside dp, the EP position varies fastest (Megatron-Core
    // builds expert groups from consecutive data-parallel ranks).
    long long stride = 1;
    size_t pos = 0;
    const std::string& o = p.order;
    while (pos <= o.size()) {
        size_t c = o.find('-', pos);
        std::string_view d = std::string_view(o).substr(pos, c == std::string::npos ? std::string::npos : c - pos);
        if (d == "tp") stride_[kTp] = stride, stride *= size_[kTp];
        else if (d == "cp") stride_[kCp] = stride, stride *= size_[kCp];
        else if (d == "pp") stride_[kPp] = stride, stride *= size_[kPp];
        else if (d == "dp") {
            stride_[kE] = stride, stride *= size_[kE];
            stride_[kX] = stride, stride *= size_[kX];
        }
        if (c == std::string::npos) break;
        pos = c + 1;
    }
    uint32_t next = 1;
    for (int k = 0; k < static_cast<int>(GroupKind::count); ++k) {
        GroupKind kind = static_cast<GroupKind>(k);
        first_id_[k] = next;
        if (GroupSize(kind) > 1) next += static_cast<uint32_t>(GroupCount(kind));
    }
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
        case GroupKind::ep: return sub == kE;
        case GroupKind::dp: return sub == kCp || sub == kE || sub == kX;
        // Experts whole on every TP rank (etp = 1): the ranks of a TP group hold the same experts and route
        // different tokens, so they reduce expert gradients together (Megatron-Core's expert-data-parallel
        // group spans tp x dp/ep x cp). Split over TP (etp = tp): each TP rank holds its own slice.
        case GroupKind::edp: return sub == kCp || sub == kX || (sub == kTp && !experts_split_by_tp_);
        case GroupKind::embed: return sub == kPp;  // only stages 0 and pp-1
        case GroupKind::count: break;
    }
    return false;
}

int Layout::GroupSize(GroupKind k) const {
    if (k == GroupKind::embed) return pp_ > 1 ? 2 : 1;
    int n = 1;
    for (int d = 0; d < kSubDims; ++d)
        if (Varies(k, d)) n *= size_[d];
    return n;
}

int Layout::GroupCount(GroupKind k) const {
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
    return first_id_[static_cast<int>(k)] + static_cast<uint32_t>(IndexOf(k, c));
}

void Layout::Members(GroupKind k, int index, std::vector<int>& out) const {
    out.clear();
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

int Layout::PipelinePeer(int rank, int delta) const {
    Coord c = CoordOf(rank);
    c[kPp] = ((c[kPp] + delta) % pp_ + pp_) % pp_;
    return RankOf(c);
}

}  // namespace sc
