// Knobs of the training-time model. Every default is either measured (calibration curves) or cited.
#pragma once

namespace sc {

struct TrainingOptions {
    // Overlap of communication with computation.
    bool overlap_dp = true;   // bucketed gradient reduction during the backward (PyTorch DDP, Megatron)
    bool overlap_pp = true;   // pipeline sends/recvs hidden in the 1F1B steady state (Megatron)
    bool overlap_tp = false;  // TP/SP collectives overlapped with GEMMs (Megatron --tp-comm-overlap)
    double overlap_tp_fraction = 0.7;  // share hidden when overlap_tp (ASSUMED; userbuffers hide most of it)
    bool in_network_reduction = true;  // use SHARP / NVLink SHARP where a network level offers it
    // Efficiencies as fractions of peak. 0 means: take the measured calibration curve for the accelerator
    // (GEMM TFLOPS vs size, FlashAttention-2 TFLOPS, STREAM copy bandwidth), else the fallback below.
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
    double tokens_to_train = 0;  // for time-to-train; 0: not reported
};

}  // namespace sc
