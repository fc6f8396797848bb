// Where each rank sits in the (tp, cp, dp, pp) grid and which communicator groups it belongs to.
// Everything is O(1) per rank: group ids come from mixed-radix arithmetic on the coordinates, so
// mapping 32K ranks to their groups is linear (STAGE's quadratic scan takes ~1.5 h there).
#pragma once
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "parallel/parallel_config.h"

namespace sc {

// Communicator kinds. The data-parallel group of dense weights spans dp x cp (context-parallel ranks
// hold the same weights). Expert layers fold the ranks of a stage their own way (Megatron-Core's "MoE
// parallel folding", Liu et al. 2025, arXiv:2504.14960): the expert-parallel group (ep) and the
// expert-data-parallel group (edp, ExpertDataParallelSize) split the stage's tp x cp x dp ranks, or its
// cp x dp ranks per TP position when experts are split over TP (etp = tp). See ExpertIndex below.
enum class GroupKind : uint8_t { tp, cp, ep, dp, edp, embed, count };
const char* NameOf(GroupKind k);

// Sub-dimensions of a rank's coordinate (the dense layout).
enum SubDim : uint8_t { kTp, kCp, kDp, kPp, kSubDims };
using Coord = std::array<int, kSubDims>;

// Where a rank sits in the expert layout of its stage.
struct ExpertCoord {
    int ep = 0;   // position in its expert-parallel group: which E/ep experts it holds
    int edp = 0;  // position in its expert-data-parallel group
};

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
    // The lowest and the highest rank of group `index` of kind k, without listing the members.
    std::pair<long long, long long> MemberBounds(GroupKind k, int index) const;

    // The rank `delta` pipeline stages away (same tp/cp/dp coordinates), wrapping around.
    int PipelinePeer(int rank, int delta) const;

    ExpertCoord ExpertCoordOf(int rank) const;

private:
    static bool IsExpert(GroupKind k) { return k == GroupKind::ep || k == GroupKind::edp; }
    bool Varies(GroupKind k, int sub) const;
    int IndexOf(GroupKind k, const Coord& c) const;
    // The expert layout. A rank's expert index is the mixed-radix number of its coordinates over the
    // sub-dimensions experts fold (cp and dp, and tp unless etp = tp), in rank order: the stage's ranks
    // (or those of one TP position) counted in ascending rank order. ep consecutive indices form an
    // expert-parallel group, the indices equal modulo ep an expert-data-parallel group. For a rank order
    // with tp fastest and pp slowest this is Megatron-Core's expert RankGenerator (megatron/core/
    // parallel_state.py: tp = expert_tensor_parallel_size, ep, dp = world / (etp * ep * pp), cp = 1, same
    // order), which asserts that its pipeline groups equal the dense ones: expert groups stay in a stage.
    int ExpertIndex(const Coord& c) const;
    long long ExpertOffset(int index) const;  // rank offset of an expert index (coordinates outside it zero)
    // Rank of member j of expert group `index` of kind k (an ep or edp group), ascending in j.
    long long ExpertMember(GroupKind k, int index, int j) const;
    std::array<int, kSubDims> size_{};
    std::array<long long, kSubDims> stride_{};  // rank = sum over sub-dims of coord * stride
    std::array<uint32_t, static_cast<int>(GroupKind::count)> first_id_{};
    int world_ = 1;
    int pp_ = 1;
    int ep_ = 1;
    int expert_ranks_ = 1;               // expert indices per stage (per TP position when etp = tp)
    bool experts_split_by_tp_ = false;   // etp > 1
    int fold_dims_[3] = {}, nfold_ = 0;  // the sub-dimensions of the expert index, smallest stride first
};

}  // namespace sc
