// Time of a collective on a multi-level network. A group's members are spread over the levels by the
// rank order (rank r runs on accelerator r): the hierarchy is read off the members themselves, k_l of
// them sharing each level-l domain, and the collective runs hierarchically (NCCL-style): reduce-scatter
// inside the inner domain, the outer level on the 1/k share, all-gather back. Groups of one kind need not
// sit alike (a folded expert group of 64 consecutive ranks on 72-GPU racks): for expert groups k_l is read off
// the group and member with the fewest peers in their domain, since every group runs at once and the step waits
// for it; dense kinds read group 0's first and last member.
// Ring volumes per rank (Thakur et al. 2005; nccl-tests' bus bandwidth): all-reduce 2(k-1)/k of the
// buffer, all-gather and reduce-scatter (k-1)/k, all-to-all (k-1)/k. In-network reduction (SHARP,
// NVLink SHARP) sends an all-reduce buffer once: factor 1.
//
// Each level's bandwidth: where presets/calibration/measured.json has a bus-bandwidth curve measured on
// this accelerator's scale-up fabric (nccl-tests busbw vs message size), the first level (the scale-up
// domain, or a FullFlat fabric of the same links) interpolates
// it at the message size, so small and medium messages (TP activations: 10-200 MB) get the bandwidth
// they really reach, not the plateau; every other level is alpha-beta: latency per ring step plus bytes
// over the level's effective per-direction bandwidth (efficiency = measured plateau / nominal).
//
// Torus levels (TPU ICI; config/hardware_config.h) have no switch, so what a group gets depends on where its
// members sit along each dimension: a group holding a whole wrapped dimension runs a bidirectional ring over
// both links (the level's bandwidth); a shorter run of neighbours, or a dimension without wraparound, is a line
// (one link's worth, half); members every s-th chip share each link with the s - 1 groups interleaved with them
// (1/s). A group spanning several dimensions runs them at once, not one after another: the buffer is split in
// as many parts, each part takes the dimensions in a rotated order, so every dimension's links stay busy (the
// multi-dimensional ring all-reduce of TPU pods; Kumar et al. 2021, "Exploring the limits of concurrency in ML
// training on Google TPUs", MLSys, Sec. 3.2). All-to-all crosses k/4 links on average along a dimension of k.
//
// DeepEP's expert all-to-all (KernelChoices::deepep_dispatch; the constructor's `deepep_moe`): the graph's buffer
// already holds one copy per destination rank (graph/moe_spread.h). Beyond the scale-up domain DeepEP sends one
// copy per destination domain over RDMA, to the GPU of the same index, which forwards it to the destination ranks
// of its domain over the scale-up links ("num_tokens_per_rdma_rank", deep_ep/buffer.py get_dispatch_layout):
// the scale-out levels carry remote domains / distinct ranks of the buffer (the expected counts of a token's
// experts, by the model's routing), the first level every copy whose destination is not the GPU holding it,
// (k_0 - 1) / k_0 of the buffer. Its kernels forward while RDMA chunks still arrive, so the slower path sets
// the time. Without whole domains of the expert group (a group that does not fill its domains evenly), or on a
// torus, the plain all-to-all stands.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "parallel/layout.h"
#include "trace/chakra_et.h"

namespace sc {

class CommModel {
public:
    // `expert_groups`: place the expert groups (ep, edp) too. A model without experts has no collective on them, and
    // placing a dense model's tp*cp*dp-rank edp groups was most of a layout search's time; Seconds refuses a
    // collective on a group that was not placed.
    // `deepep_moe`: the model whose expert all-to-all DeepEP sends (nullptr: Megatron-Core's all-to-all).
    CommModel(const System& sys, const Layout& layout, bool in_network_reduction, const CalibrationTable* cal = nullptr,
              bool expert_groups = true, const MoeConfig* deepep_moe = nullptr);
    double Seconds(CollectiveType type, GroupKind group, double bytes) const;
    double P2PSeconds(double bytes) const;  // one pipeline send between neighbouring stages
    // Members of one group of `group` inside one domain of each level (innermost first).
    const std::vector<int>& MembersPerLevel(GroupKind group) const { return per_level_[static_cast<int>(group)]; }
    int GroupSize(GroupKind g) const { return size_[static_cast<int>(g)]; }
    // The measured scale-up curve for `type` (nullptr: alpha-beta) a group of `ranks` reads: one measured on that
    // many GPUs where there is one, else the one measured on the GPU count nearest the domain's (read at the buffer
    // that gives the same chunk per step). For all-reduce with in-network reduction the NVLS or NCCL-default one.
    // `ranks` 0: the domain's own. For tests, reports and the serving engine's TP all-reduce.
    const CollectiveCurve* ScaleUpCurve(CollectiveType type, int ranks = 0) const;

    // With DeepEP: bytes sent beyond the scale-up domain per byte of the expert all-to-all's buffer (-1 without).
    double DeepEpScaleOutShare() const { return deepep_scale_out_share_; }

private:
    double DeepEpAllToAllSeconds(double bytes) const;
    // Seconds for k ranks of level l to run `type` on a buffer of `bytes` (the share entering the level).
    double LevelSeconds(CollectiveType type, size_t l, int k, double bytes) const;
    // The leading torus levels of a reduce-scatter or all-gather of a group, all dimensions at once: its time is
    // linear in the buffer, so it is worked out once per group kind (an all-reduce is twice it).
    struct TorusPart {
        double seconds_per_byte = 0, latency = 0;
        double members = 1;  // of the group within one torus domain: the buffer shrinks by it
        int inner = 1;       // the same as the next level counts them (MembersPerLevel at the last torus level)
    };
    TorusPart MakeTorusPart(GroupKind group) const;

    const System& sys_;
    bool inr_;
    std::array<std::vector<int>, static_cast<int>(GroupKind::count)> per_level_;
    std::array<int, static_cast<int>(GroupKind::count)> size_{};
    int p2p_level_ = 0;
    size_t torus_levels_ = 0;  // leading torus levels of the system
    // Per group kind and torus level: the fraction of the level's bandwidth the group's ring gets (1 a whole
    // wrapped dimension, 1/2 a line, divided by the groups interleaved with it).
    std::array<std::vector<double>, static_cast<int>(GroupKind::count)> torus_share_;
    std::array<TorusPart, static_cast<int>(GroupKind::count)> torus_{};
    // Measured scale-up curves: all-reduce (ring or NCCL default) and in-network all-reduce (NVLS or NCCL's
    // default), all-gather, reduce-scatter, all-to-all (nccl-tests), where there is one.
    struct Curves {
        const CollectiveCurve* ring_ar = nullptr;
        const CollectiveCurve* nvls_ar = nullptr;
        const CollectiveCurve* ag = nullptr;
        const CollectiveCurve* rs = nullptr;
        const CollectiveCurve* a2a = nullptr;
    };
    // The curves a group of k ranks of the scale-up level reads: those measured on exactly k GPUs, the rest the
    // domain's own (curves_).
    const Curves& CurvesFor(int k) const;
    Curves curves_;
    std::vector<std::pair<int, Curves>> curves_by_ranks_;  // per GPU count measured on this part, below the domain
    double deepep_scale_out_share_ = -1;
};

// The comm model of the last arrangement of ranks asked for, built again only when that arrangement changes: a
// layout search asks for hundreds of thousands of layouts, most of them differing from the one before only in
// microbatch, schedule, recomputation or ZeRO stage, none of which moves a rank (placing the groups was a sixth
// of its time). The same model a fresh CommModel would be: the key holds everything the constructor reads, the
// System by address (a caller that edits its System between calls must not share a cache across the edit).
class CommModelCache {
public:
    const CommModel& For(const System& sys, const ParallelConfig& p, bool in_network_reduction,
                         const CalibrationTable* cal, bool expert_groups, const MoeConfig* deepep_moe = nullptr);

private:
    struct Key {
        const System* sys = nullptr;
        const CalibrationTable* cal = nullptr;
        int tp = 0, cp = 0, dp = 0, pp = 0, ep = 0, etp = 0;
        std::string order;
        bool inr = false, expert_groups = false;
        bool deepep = false;
        int experts = 0, top_k = 0;
        MoeRouting routing = MoeRouting::uniform;
        bool operator==(const Key&) const = default;
    };
    Key key_;
    std::optional<CommModel> model_;
};

}  // namespace sc
