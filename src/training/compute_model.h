// Time of one op on one accelerator: a roofline whose compute roof is the measured efficiency for the
// op's kind and size (GEMM curve by FLOP count, FlashAttention throughput, vector units for the rest)
// and whose memory roof is the achieved HBM bandwidth.
#pragma once
#include "config/calibration.h"
#include "config/hardware_config.h"
#include "graph/graph.h"
#include "training/training_options.h"

namespace sc {

class ComputeModel {
public:
    ComputeModel(const Accelerator& acc, Precision compute, const CalibrationTable* cal, const TrainingOptions& opt);
    double Seconds(OpKind kind, double flops, double bytes) const;
    double MatmulEfficiency(double flops) const;  // fraction of this precision's peak
    double peak_flops() const { return peak_; }
    double memory_bytes_per_s() const { return hbm_; }

private:
    double peak_ = 0;         // dense matrix FLOP/s at the compute precision
    double vector_ = 0;       // vector FLOP/s
    double hbm_ = 0;          // achieved bytes/s
    double attn_eff_ = 0;
    double fixed_matmul_eff_ = 0;
    const GemmCurve* gemm_ = nullptr;
    double gemm_peak_ = 0;    // peak of the curve's own precision, to turn TFLOPS into an efficiency
};

}  // namespace sc
