// Communication kernels that take SMs from the GEMMs they overlap. An overlapped collective is not free: its
// kernel runs as CTAs on some of the GPU's SMs, and the GEMM beside it gets the rest. Transformer Engine's
// userbuffers TP overlap (what Megatron-LM --tp-comm-overlap and NeMo run) makes this explicit: each overlapped
// GEMM has a communication kernel on `num_sm` SMs and, with `set_sm_margin`, is itself launched on
// sm_count - num_sm SMs (TransformerEngine transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp,
// CommOverlapCore: `_math_sms = (set_sm_margin) ? sm_count - num_comm_sm : sm_count`).
#pragma once
#include <string_view>

#include "config/hardware_config.h"
#include "graph/graph.h"
#include "parallel/job.h"
#include "training/training_options.h"

namespace sc {

enum class TpOverlapKind { userbuffers, other };

// One Transformer Engine userbuffers overlap (a TransformerLayerTPOverlapCfg entry): SMs its communication kernel
// runs on, and whether the overlapped GEMM is launched on the other SMs only (set_sm_margin). num_sm = 0: none
// (a copy-engine ring exchange without margin).
struct UserbufferOverlap {
    int num_sm = 16;
    bool sm_margin = true;
};
// The six GEMMs whose userbuffers overlap can hold SMs (TE's names). Defaults: TransformerEngine's own
// (transformer_engine/pytorch/module/base.py, initialize_ub, get_default_config, TE 2.x): "pipeline" (proj_fprop,
// fc2_fprop) and "bulk" (qkv/fc1 dgrad and wgrad) run num_sm = 16 with set_sm_margin = true. The other four,
// "ring_exchange" (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad), move chunks with the copy engines (use_ce = true,
// no margin) and hold none. A recipe's tuned configuration (NeMo's tp_overlap_configs/userbuffers.py) replaces
// these.
struct UserbufferConfig {
    UserbufferOverlap proj_fprop, fc2_fprop, qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad;
};

// How a run overlaps its TP communication (TrainingOptions::overlap_tp), for the SMs the kernels take.
// userbuffers: Transformer Engine's comm+GEMM overlap, what Megatron-LM --tp-comm-overlap and NeMo run. other: an
// implementation whose SM use is not modelled (torchtitan's async TP on PyTorch symmetric memory): no term.
// Kept beside TrainingOptions rather than in it while the page does not key it (src/app/app.cpp hashes every
// TrainingOptions field into its recompute key): the engine's requests run the defaults.
struct TpOverlapKernels {
    TpOverlapKind kind = TpOverlapKind::userbuffers;
    UserbufferConfig userbuffers;
};

// The userbuffers overlap of a layer GEMM, by the graph's op name (TE's LayerNormLinear qkv = "attn.qkv", Linear
// proj = "attn.out", LayerNormMLP fc1 = "mlp.fc1" or "mlp.gate_up", fc2 = "mlp.fc2"; ".dgrad"/".wgrad" in the
// backward). nullptr: the GEMM's overlap is a copy-engine ring exchange (qkv_fprop, fc1_fprop, proj_dgrad,
// fc2_dgrad) or it has none (MLA projections, MoE experts, the LM head).
const UserbufferOverlap* UserbufferOverlapOf(const Op& op, const UserbufferConfig& cfg);
// The same by the op's kind, pass and graph name (a trace node's name without its "L<i>." and "recompute."
// prefixes).
const UserbufferOverlap* UserbufferOverlapOf(OpKind kind, Pass pass, std::string_view name,
                                             const UserbufferConfig& cfg);

// Seconds a GEMM that takes `gemm` seconds on all `sms` SMs loses to a communication kernel on o.num_sm of them
// running beside it for `comm` seconds. With the SM margin the GEMM runs on sms - num_sm SMs throughout:
// gemm * num_sm / (sms - num_sm) longer (a compute-bound GEMM's rate scales with its SMs). Without it the two
// share the GPU only while the kernel runs: the GEMM does comm * (sms - num_sm) / sms of its work in that time,
// i.e. loses comm * num_sm / sms, never more than the margin's loss. 0 when sms is unknown (0).
double CommSmSeconds(double gemm, double comm, const UserbufferOverlap& o, int sms);

// Seconds the compute beside an overlapped data-parallel collective (a gradient reduction, a ZeRO gather) loses
// to the CTAs of its NCCL kernel: for the `hidden` seconds the collective runs beside `compute` seconds of
// kernels, those get sms - ctas of the SMs (CommSmSeconds without the margin: hidden * ctas / sms). 0 when the
// accelerator preset gives no CTA count (Accelerator::collective_ctas) or no SM count.
double CollectiveSmSeconds(double compute, double hidden, const Accelerator& acc);

// The userbuffers configuration a job's GEMMs lose SMs to, or nullptr when they lose none: TP overlap on, run on
// Transformer Engine's userbuffers, TP > 1 under sequence parallelism (Megatron-Core requires SP for
// --tp-comm-overlap), and an accelerator preset that gives its SM count. One decision for the estimate and the
// trace's node durations.
const UserbufferConfig* UserbuffersOf(const Job& job, const TrainingOptions& opt, const TpOverlapKernels& kernels,
                                      int sm_count);

class CommModel;
// The longest TP collective of a block's forward: what a GEMM without the SM margin shares its SMs with (a layer's
// TP collectives are all of one size, T x h, but for expert TP's gathers).
double LargestTpCollectiveSeconds(const Job& job, const Block& block, const CommModel& net);

}  // namespace sc
