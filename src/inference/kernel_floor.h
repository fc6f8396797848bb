// The fixed time of one GPU kernel, measured: in t = alpha + bytes / HBM bandwidth (the Hockney alpha-beta line
// for a kernel bounded by memory), alpha is what a kernel costs when it moves and computes next to nothing.
//
// Why: a decode step runs ~12 kernels per layer (GEMMs, attention, norms, adds, rotary, activation), each small.
// The STREAM-copy bandwidth the roofline reads is measured on arrays of gigabytes, where a kernel's start and
// drain vanish; on a weight shard of 20 MB they do not (Vidur's profile of Llama 2 70B on H100 moves the 21 MB
// QKV shard in 13 us, 7.2 us at STREAM bandwidth).
//
// Where alpha comes from: the accelerator's GEMM calibration (data/calibration.json), never a validation row.
// A measured GEMM counts as a floor measurement when its roofline time (FLOPs at the peak of its precision,
// bytes of its square operands at the achieved HBM bandwidth) is under a tenth of its measured time: then what
// it measured is almost all fixed cost. alpha = its measured time minus its bytes at HBM bandwidth (so the
// alpha-beta line reproduces that measurement), the smallest over such points. An accelerator without such a
// point has no floor term (alpha = 0) and the roofline stands as before; the report says which.
#pragma once
#include <string>

#include "config/calibration.h"
#include "config/hardware_config.h"

namespace sc {

struct KernelFloor {
    double alpha_s = 0;       // seconds one kernel costs beyond its bytes at HBM bandwidth; 0 = not measured
    double gemm_flops = 0;    // the GEMM it was measured on (2 m n k) ...
    double gemm_seconds = 0;  // ... and its measured time
    std::string series;       // its calibration series
};

// A point is a floor measurement when roofline time <= kFloorRooflineShare x measured time.
constexpr double kFloorRooflineShare = 0.1;

// `hbm_bytes_per_s`: the achieved bandwidth the kernels' bytes are timed at (ComputeModel::memory_bytes_per_s).
KernelFloor MeasuredKernelFloor(const CalibrationTable* cal, const Accelerator& acc, double hbm_bytes_per_s);

}  // namespace sc
