#include "training/compute_model.h"

#include <algorithm>
#include <cmath>

namespace sc {

ComputeModel::ComputeModel(const Accelerator& acc, Precision compute, const CalibrationTable* cal,
                           const TrainingOptions& opt) {
    peak_ = PeakFlops(acc, compute);
    // Vector units: bf16/fp32 non-tensor rate; where a datasheet gives none, 1/16 of the matrix peak
    // (ASSUMED: H100's FP32 vector 67 TF vs 989 TF bf16 matrix is ~1/15).
    vector_ = acc.vector.fp32 ? *acc.vector.fp32 * 1e12 : peak_ / 16;
    double mem_eff = opt.memory_efficiency;
    if (mem_eff <= 0 && cal) {
        double measured = AchievedHbmTBps(*cal, acc.id, "Copy");
        if (measured > 0) mem_eff = std::min(1.0, measured / acc.hbm_bandwidth_tbps);
    }
    if (mem_eff <= 0) mem_eff = opt.fallback_memory_efficiency;
    hbm_ = acc.hbm_bandwidth_tbps * 1e12 * mem_eff;

    fixed_matmul_eff_ = opt.matmul_efficiency;
    if (fixed_matmul_eff_ <= 0 && cal) {
        gemm_ = FindGemmCurve(*cal, acc.id, compute);
        if (!gemm_) gemm_ = FindGemmCurve(*cal, acc.id, Precision::bf16);  // fp8/fp4: same efficiency as bf16
        if (gemm_) gemm_peak_ = PeakFlops(acc, gemm_->dtype);
    }
    if (fixed_matmul_eff_ <= 0 && !gemm_) fixed_matmul_eff_ = opt.fallback_matmul_efficiency;
    attn_eff_ = opt.attention_efficiency > 0 ? opt.attention_efficiency : opt.fallback_attention_efficiency;
}

double ComputeModel::MatmulEfficiency(double flops) const {
    if (!gemm_) return fixed_matmul_eff_;
    return std::clamp(Interpolate(gemm_->tflops, std::max(flops, 1.0)) * 1e12 / gemm_peak_, 0.01, 1.0);
}

double ComputeModel::Seconds(OpKind kind, double flops, double bytes) const {
    double mem = bytes / hbm_;
    switch (kind) {
        case OpKind::matmul: return std::max(flops / (peak_ * MatmulEfficiency(flops)), mem);
        case OpKind::attention: return std::max(flops / (peak_ * attn_eff_), mem);
        case OpKind::elementwise:
        case OpKind::gather: return std::max(flops / vector_, mem);
        case OpKind::collective: return 0;
    }
    return 0;
}

}  // namespace sc
