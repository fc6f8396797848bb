// Knobs of the training-time model. Every default is either measured (calibration curves) or cited.
// The defaults describe a current Megatron-Core / NeMo run (fused attention, overlapped gradient reduction
// and pipeline sends); the published runs of docs/validation.md set the options their papers describe.
#pragma once
#include "config/calibration.h"
#include "graph/graph.h"

namespace sc {

struct TrainingOptions {
    // Overlap of communication with computation.
    bool overlap_dp = true;   // bucketed gradient reduction during the backward (PyTorch DDP, Megatron-Core
                              // --overlap-grad-reduce). Off: Megatron-LM 2021's "local" DDP, which
                              // all-reduced the gradients after the last backward (Narayanan et al. 2021 runs)
    bool overlap_pp = true;   // pipeline sends/recvs hidden in the 1F1B steady state (Megatron-Core
                              // --overlap-p2p-comm). Off: every send/recv pair waits on the critical path
                              // (Megatron-LM 2021-22, DeepSpeed's pipeline engine)
    bool overlap_tp = false;  // TP/SP collectives overlapped with GEMMs (Megatron --tp-comm-overlap,
                              // Transformer Engine userbuffers)
    // Share of the TP traffic hidden when overlap_tp. 0 (default): derived from the decomposition: the
    // collective is split into tp chunks pipelined with the GEMM it feeds, so one chunk (1/tp of it) stays
    // exposed, and whatever exceeds the block's GEMM time (Wang et al. 2023, "Overlap Communication with
    // Dependent Computation via Decomposition", ASPLOS; Megatron-Core ub ring-exchange). A value in (0, 1]
    // overrides it.
    double overlap_tp_fraction = 0;
    bool in_network_reduction = true;  // use SHARP / NVLink SHARP where a network level offers it
    // 16-bit GEMMs at what a framework's profile of the part measured relative to its GEMM curve
    // (presets/calibration/measured.json "framework_gemm", by the GEMM's smallest side: Vidur's profile of PyTorch
    // linear layers on a DGX H100, read for H200 and H800 too, and on an A100 server). Off: the single-GPU
    // microbenchmark curve alone.
    bool framework_gemm = true;
    // Efficiencies as fractions of peak. 0 means: take the measured calibration curve for the accelerator
    // (GEMM TFLOPS vs size, STREAM copy bandwidth, collective bus bandwidth vs size), else the fallback below.
    double matmul_efficiency = 0;
    double attention_efficiency = 0;
    double memory_efficiency = 0;
    // Fallbacks where no measurement exists for the accelerator:
    // GEMM 0.70: MAMF of H100 bf16 ~ 0.75 of peak and A100 ~ 0.85 (ml-engineering, shared calibration.json)
    //   less shape losses; FlashAttention-2 0.50: 50-73% of A100 peak (Dao 2023) at its low end;
    // HBM 0.80: STREAM copy on A100/H100 reaches 0.8-0.9 of nominal (shared calibration.json memory_bandwidth).
    double fallback_matmul_efficiency = 0.70;
    double fallback_attention_efficiency = 0.50;
    double fallback_memory_efficiency = 0.80;

    // Kernels and framework behaviour of the run being modelled.
    // The kernel choices that change the graph's ops or the trace's nodes (graph/graph.h KernelChoices: fused
    // attention, dropout, gradient-accumulation fusion, pipeline scatter/gather). A Job is built with them (MakeJob) and the estimate refuses a job built with
    // others, so the trace and the estimate time the same ops.
    KernelChoices kernels;
    // Which fused-attention kernel runs (flash_attention = true): its efficiency per pass comes from the measured
    // curve of that kernel on the accelerator (presets/calibration/measured.json "attention", by sequence length
    // and head dimension), else attention_efficiency / the fallback. cudnn: Transformer Engine's default in
    // Megatron-Core and NeMo; flash2: PyTorch SDPA's flash backend (torchtitan, llm-foundry); flash3: Dao's
    // FlashAttention-3. Where cuDNN's backward has no curve, FlashAttention-3's stands in (both are Hopper
    // warp-specialised kernels; on H100 the FA3 paper's backward panels put cuDNN 3-9% below FA3 over 512-16k).
    AttentionKernel attention_kernel = AttentionKernel::cudnn;
    // The precision fused attention's matmuls run at: the curve measured at it where the kernel has one (a serving
    // engine's FP8 context FMHA, AttentionCurve::dtype), else the kernel's 16-bit curve. Training's kernels run 16-bit.
    Precision attention_dtype = Precision::bf16;
    // Grouped expert GEMMs held to a serving engine's measured MoE op (presets/calibration/measured.json
    // "grouped_gemm": TensorRT-LLM's op, tokens routed by a power law) at the expert width the caller states
    // (GemmDims::group_width). The serving model sets it; training does not: Megatron's grouped GEMMs are other
    // kernels, and the published training runs route their tokens balanced.
    bool engine_moe_op = false;
    // The experts are stored in MXFP4 (ServingPrecision::int4 = kMxfp4): held to the curves measured so ("weights":
    // "mxfp4"), not to those of experts stored as they compute.
    bool engine_moe_mxfp4 = false;
    // GEMMs at a serving engine's own measured GEMM where the part has one at the compute precision (GemmCurve::engine:
    // TensorRT-LLM's NVFP4 Linear on Blackwell and its FP8 Linear, per tensor or block-scaled, on Hopper and Blackwell,
    // its input quantize included). The serving model sets it; training does not (Transformer Engine's fp8 and fp4
    // GEMMs are other kernels).
    bool engine_gemms = false;
    // The engine's fp8 is block-scaled (ServingPrecision::fp8_scaling): its GEMMs and MoE op read the curves measured
    // so ("scaling": "block": TensorRT-LLM's fp8_block_scaling_gemm on Hopper, DeepGEMM on Blackwell). A part with
    // no block-scaled MoE curve keeps its per-tensor ones, and one with no block-scaled GEMM the GEMM library's fp8
    // curve (rate_sources says which was read).
    bool engine_fp8_block = false;

    // The host link's rate in GB/s each way, for CPU activation offloading (ParallelConfig::offload_layers). 0: the
    // part's measured rates (presets/calibration/measured.json "host_link": nvbandwidth on H100, H800, H200 and
    // GB200, TransferBench on MI300X); a part without them needs it stated.
    double host_link_gbps = 0;
    double tokens_to_train = 0;  // for time-to-train; 0: not reported
};

}  // namespace sc
