// Training step time, memory and MFU of a job on a system (what "Scaling Intelligence" / Calculon do).
// Per block (embedding, layer, head) the graph's ops are timed once; stages add up their blocks; the
// schedule turns per-microbatch work into a step with its bubble; data-parallel and ZeRO traffic and the
// optimizer close it. Every second lands in exactly one breakdown entry, and the entries sum to the step.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "parallel/job.h"
#include "parallel/memory.h"
#include "training/comm_model.h"
#include "training/comm_sms.h"
#include "training/compute_model.h"
#include "training/host_link.h"
#include "training/kernel_floor.h"
#include "training/pipeline_replay.h"
#include "training/rate_sources.h"
#include "training/training_options.h"

namespace sc {

struct StepBreakdown {
    double compute = 0;    // forward + backward ops, all microbatches (bottleneck stage)
    double recompute = 0;  // forward ops re-run for activation recomputation
    // Parts of the kernels' time the roofline leaves out or that compute and recompute would hide, each named
    // so a report shows it (every kernel of compute and recompute, the bottleneck stage, all microbatches):
    // the measured fixed cost of every kernel beyond its roofline (launch and tail; training/kernel_floor.h);
    double kernel_fixed = 0;
    // fp8 quantization passes (Transformer Engine): the graph's casts and transposes of GEMM inputs and output
    // gradients, and the fp8 copies of the weights (training/fp8_overheads.h);
    double fp8_cast = 0;
    // MoE token routing: the router GEMM and top-k, permute / unpermute and the expert-order sorts around the
    // all-to-all, and the weighted combine (Megatron-Core moe_utils.permute / unpermute).
    double moe_routing = 0;
    double tp_comm = 0;  // exposed TP/SP collectives
    double cp_comm = 0;  // exposed context-parallel K/V exchange
    double ep_comm = 0;  // exposed MoE all-to-all
    double pp_comm = 0;  // exposed pipeline sends/recvs
    double bubble = 0;   // pipeline fill and drain
    double dp_comm = 0;  // exposed gradient reduction and ZeRO parameter gathers
    // what the compute waits for CPU activation offloading's copies (ParallelConfig::offload_layers;
    // parallel/offload_schedule.h), all microbatches
    double offload = 0;
    double optimizer = 0;  // optimizer step
    // Of compute + recompute (not a part of its own, so not in kBreakdownParts): GEMM time lost to the SMs that
    // overlapped TP communication kernels hold (Transformer Engine userbuffers; training/comm_sms.h).
    double comm_sms = 0;
    // Of compute (likewise not a part of its own): what the compute beside the overlapped data-parallel
    // collectives (gradient reduction, ZeRO parameter gathers) loses to the SMs their NCCL kernels hold
    // (Accelerator::collective_ctas; training/comm_sms.h). The estimate's alone: the trace's compute nodes do not
    // carry it, since ASTRA-sim decides what runs beside what.
    double dp_comm_sms = 0;
    // Not in the step: the MoE all-to-all that overlapped pairs hide (DualPipe's, a2a_overlap's), which ep_comm no
    // longer holds; ep_comm + ep_hidden is the all-to-all of a run without pairs.
    double ep_hidden = 0;
    double total() const;
};

// The breakdown's parts in one order for the text reports, the JSON, the CSV and the page: JSON key, label
// of the text reports, the page's short label, and the member.
struct BreakdownPart {
    const char* key;
    const char* label;
    const char* short_label;
    double StepBreakdown::*seconds;
};
inline constexpr BreakdownPart kBreakdownParts[] = {
    {"compute", "compute", "compute", &StepBreakdown::compute},
    {"recompute", "recompute", "recompute", &StepBreakdown::recompute},
    {"kernel_fixed", "kernel fixed cost", "kernels", &StepBreakdown::kernel_fixed},
    {"fp8_cast", "fp8/fp4 quantization", "quantize", &StepBreakdown::fp8_cast},
    {"moe_routing", "moe routing / permute", "MoE route", &StepBreakdown::moe_routing},
    {"tp_comm", "tp communication", "TP", &StepBreakdown::tp_comm},
    {"cp_comm", "cp communication", "CP", &StepBreakdown::cp_comm},
    {"ep_comm", "ep all-to-all", "EP", &StepBreakdown::ep_comm},
    {"pp_comm", "pipeline p2p", "PP p2p", &StepBreakdown::pp_comm},
    {"bubble", "pipeline bubble", "bubble", &StepBreakdown::bubble},
    {"dp_comm", "dp / zero communication", "DP/ZeRO", &StepBreakdown::dp_comm},
    {"offload", "activation offload", "offload", &StepBreakdown::offload},
    {"optimizer", "optimizer", "optimizer", &StepBreakdown::optimizer},
};
inline constexpr int kBreakdownPartCount = sizeof kBreakdownParts / sizeof kBreakdownParts[0];

inline double StepBreakdown::total() const {
    double t = 0;
    for (const BreakdownPart& p : kBreakdownParts) t += this->*p.seconds;
    return t;
}

struct TrainingEstimate {
    StepBreakdown step;
    double step_seconds = 0;
    int bottleneck_stage = 0;
    double tokens_per_step = 0;
    double tokens_per_second = 0;
    double model_flops_per_step = 0;     // 6N-style model FLOPs (no recompute, no TP replication)
    double hardware_flops_per_step = 0;  // everything executed, over all ranks
    double mfu = 0, hfu = 0;             // against the dense peak of the compute precision
    double peak_flops_per_gpu = 0;       // that peak
    // What papers compare: achieved FLOP/s per GPU under the 6N + causal-attention "model FLOPs" convention
    // and counting everything executed (recompute included), and MFU against the BF16 dense peak, which
    // differs from `mfu` when the compute precision is not bf16 (fp8 runs are usually quoted against bf16).
    double model_flops_per_gpu_per_s = 0, hardware_flops_per_gpu_per_s = 0;
    double bf16_peak_flops_per_gpu = 0, mfu_bf16 = 0;
    // The same time under Megatron-LM's own formula (non-causal attention; graph/flop_conventions.h), the TFLOP/s
    // the Megatron-LM README, NeMo and many papers print.
    double megatron_flops_per_gpu_per_s = 0;
    // Under Megatron-Bridge's count (causal attention; graph/flop_conventions.h), its performance tables' "Model
    // TFLOP / sec / GPU".
    double megatron_bridge_flops_per_gpu_per_s = 0;
    std::vector<StageMemory> memory;  // per pipeline stage
    double memory_peak = 0;           // bytes, worst stage
    double memory_capacity = 0;       // bytes per GPU
    bool fits = true;
    std::string memory_message;  // "does not fit: needs X GiB of Y GiB on stage s" when !fits
    OffloadLink host_link;       // when the layout offloads activations (ParallelConfig::offload_layers), else zeros
    double energy_joules_per_step = 0;  // power drawn (the limit, else the board power) x GPUs x step time
    double days_to_train = 0, gpu_hours_to_train = 0, energy_mwh_to_train = 0;  // when tokens_to_train > 0
    // What the compute rates rest on (training/rate_sources.h): filled by the engine for the reports, once per
    // request; empty in EstimateTraining's own result (the layout search's hot path formats no text).
    RateSources rates;
    // The schedule laid out in time (TimePipeline): filled by the engine for the reports and the page when pp > 1.
    std::optional<PipelineTimeline> pipeline;
};

// What EstimateTraining keeps between calls on the same, unchanged System, CalibrationTable and TrainingOptions
// objects (the layout search; each part keys on their addresses, not their contents): the comm model of the last
// arrangement of ranks, the compute model of the last attention length, and the part's kernel floor, which the
// layout never changes. The estimate is the same with or without it.
class EstimateCache {
public:
    CommModelCache comm;
    ComputeModelCache compute;
    const KernelFloor& Floor(const CalibrationTable* cal, const Accelerator& acc);

private:
    const CalibrationTable* floor_cal_ = nullptr;
    const Accelerator* floor_acc_ = nullptr;
    std::optional<KernelFloor> floor_;
};

// `kernels`: how the TP overlap runs (opt.overlap_tp), for the SMs its kernels hold (training/comm_sms.h).
// `cache`: see EstimateCache.
TrainingEstimate EstimateTraining(const Job& job, const System& sys, const CalibrationTable* cal,
                                  const TrainingOptions& opt, const TpOverlapKernels& kernels = {},
                                  EstimateCache* cache = nullptr);

// The pipeline schedule of `job` laid out in time, rank by rank (training/pipeline_replay.h): each chunk runs in the
// time the estimate charges it (its compute and the communication it exposes; a DualPipe or DualPipeV pair without
// the all-to-all it hides), min(M, 4 pp) microbatches, the same replay that gives the bubble of ZB-V, DualPipe,
// DualPipeV and interleaved_zb (their bottleneck rank idles exactly e.step.bubble in it); for 1F1B, GPipe, interleaved and ZB-H1 the
// estimate's bubble is the papers' closed form, which this replay gives for equal stages. Transfers between ranks,
// data-parallel traffic and the optimizer are not in it.
PipelineTimeline TimePipeline(const Job& job, const System& sys, const CalibrationTable* cal,
                              const TrainingOptions& opt);

}  // namespace sc
