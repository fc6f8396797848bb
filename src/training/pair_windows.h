// What a forward and a backward of two microbatches run side by side hide of their MoE all-to-alls, one layer at a
// time (DualPipe's F&B pairs, Megatron-Core's combined 1F1B: ParallelConfig::a2a_overlap). Filled by the estimate's
// TimeBlock from the graph's ops; header-only so tests check the windows in closed form.
#pragma once
#include <algorithm>

namespace sc {

// One MoE layer's forward and backward cut at their all-to-alls, for a pair of them run side by side. Forward:
// attention to permute (a), dispatch, experts (e), combine, then what follows the combine; backward the mirror:
// what precedes the combine's gradient, combine, experts (e), dispatch, then attention (a). A recomputed forward runs
// before the backward's first piece (trace/stage_program.cpp, PairLayers) and hides nothing.
// Megatron-Core's combined 1F1B runs one layer's forward beside another layer's backward in three windows
// (megatron/core/models/common/model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run: "comm_stream:
// combine_bwd | dispatch_fwd->dispatch_bwd | combine_fwd; comp_stream: pre_dispatch_fwd | mlp_bwd->mlp_bwd_dw->
// mlp_fwd | pre_dispatch_bwd"), DeepSeek-V3's DualPipe the same four pieces (report Figure 4): each all-to-all
// hides behind the one compute piece beside it, the dispatch's forward behind the experts' input gradient and its
// backward behind the experts' weight gradient and forward: the weight gradient runs after the dispatch's gradient
// has started (delay_wgrad_compute, which Megatron-Bridge sets with the overlap, scripts/performance/utils/
// overrides.py; DeepSeek's Figure 4 splits its backward chunks into input and weight pieces too). What follows the
// forward's combine and precedes the backward's hides nothing.
struct PairWindows {
    double fwd_compute[3] = {}, bwd_compute[3] = {};  // before, between and after the two all-to-alls
    double bwd_wgrad[3] = {};                         // of bwd_compute: the weight-gradient GEMMs
    double fwd_a2a[2] = {}, bwd_a2a[2] = {};          // dispatch, combine; combine's gradient, dispatch's
    int fwd_seen = 0, bwd_seen = 0;
    double Hidden() const {
        if (fwd_seen != 2 || bwd_seen != 2) return 0;  // not an MoE layer cut as above
        const double attn_f = fwd_compute[0], experts_f = fwd_compute[1];
        const double experts_dgrad = bwd_compute[1] - bwd_wgrad[1], experts_wgrad = bwd_wgrad[1];
        const double attn_b = bwd_compute[2];
        return std::min(bwd_a2a[0], attn_f) + std::min(fwd_a2a[0], experts_dgrad) +
               std::min(bwd_a2a[1], experts_wgrad + experts_f) + std::min(fwd_a2a[1], attn_b);
    }
};

}  // namespace sc
