// Where each rank sits in the (tp, cp, dp, pp) grid and which communicator groups it belongs to.
// Everything is O(1) per rank: group ids come from mixed-radix arithmetic on the coordinates, so
// mapping 32K ranks to their groups is linear (STAGE's quadratic scan takes ~1.5 h there).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "parallel/parallel_config.h"

namespace sc {

// Communicator kinds. The data-parallel group of dense weights spans dp x cp (context-parallel ranks
// hold the same weights); experts reduce over the expert-data-parallel group (dp/ep) x cp, times tp when
// every TP rank holds the same whole experts (etp = 1): ExpertDataParallelSize.
enum class GroupKind : uint8_t { tp, cp, ep, dp, edp, embed, count };
const char* NameOf(GroupKind k);

// Sub-dimensions of a rank's coordinate: dp splits into e (position inside its EP group) and x.
enum SubDim : uint8_t { kTp, kCp, kE, kX, kPp, kSubDims };
using Coord = std::array<int, kSubDims>;

class Layout {
public:
    explicit Layout(const ParallelConfig& p);  // p must have passed ValidateParallel

    int world() const { return world_; }
    Coord CoordOf(int rank) const;
    int RankOf(const Coord& c) const;
    int Stage(int rank) const { return CoordOf(rank)[kPp]; }

    int GroupSize(GroupKind k) const;   // members of one group of kind k (1: the kind is unused)
    int GroupCount(GroupKind k) const;  // how many groups of kind k exist
    // Communicator id written as pg_name: unique over all kinds, > 0, or 0 when rank is in no group of
    // that kind (size 1, or not on the first/last stage for `embed`).
    uint32_t GroupId(GroupKind k, int rank) const;
    // Members of group `index` (0 .. GroupCount-1) of kind k, ascending.
    void Members(GroupKind k, int index, std::vector<int>& out) const;
    // How many members of group `index` of kind k have a rank in [lo, hi), without listing them: O(sub-dims).
    // With lo = (first member / s) * s and hi = lo + s, the members sharing the first member's domain of s
    // accelerators (what a network model needs per level, for groups of any size).
    int MembersInRange(GroupKind k, int index, long long lo, long long hi) const;
    uint32_t FirstId(GroupKind k) const { return first_id_[static_cast<int>(k)]; }

    // The rank `delta` pipeline stages away (same tp/cp/dp coordinates), wrapping around.
    int PipelinePeer(int rank, int delta) const;

private:
    bool Varies(GroupKind k, int sub) const;
    int IndexOf(GroupKind k, const Coord& c) const;
    std::array<int, kSubDims> size_{};
    std::array<long long, kSubDims> stride_{};  // rank = sum over sub-dims of coord * stride
    std::array<uint32_t, static_cast<int>(GroupKind::count)> first_id_{};
    int world_ = 1;
    int pp_ = 1;
    bool experts_split_by_tp_ = false;  // etp > 1
};

}  // namespace sc
