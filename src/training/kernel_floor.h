// The fixed time of one GPU kernel, measured, for the serving model (inference/iteration_cost) and the training
// estimate (training/estimate.cpp) alike: one hardware description for both. In t = alpha + bytes / HBM
// bandwidth (the Hockney alpha-beta line for a kernel bounded by memory), alpha is what a kernel costs when it
// moves and computes next to nothing.
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
// point takes the floor of a profile's weight-read GEMMs where one was profiled (CalibrationTable::
// weight_read_floor: A100, from Vidur's profile, whose weight reads follow alpha + bytes at STREAM-copy bandwidth);
// one with neither has no floor term (alpha = 0) and the roofline stands as before; the report says which.
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
    int profile_gemms = 0;    // > 0: alpha is the weight_read_floor median over that many profiled GEMMs instead
};

// A point is a floor measurement when roofline time <= kFloorRooflineShare x measured time.
constexpr double kFloorRooflineShare = 0.1;

// `hbm_bytes_per_s`: the achieved bandwidth the kernels' bytes are timed at (ComputeModel::memory_bytes_per_s).
KernelFloor MeasuredKernelFloor(const CalibrationTable* cal, const Accelerator& acc, double hbm_bytes_per_s);

// The floor the training estimate uses: the same points and rule at unbounded bandwidth, i.e. a GEMM counts as
// a floor measurement when its compute roof alone is under a tenth of its time, and alpha is its whole measured
// time. Two reasons, both from the sweep's invariant that more bandwidth is never slower: judged at the
// achieved bandwidth, whether a point counts depends on that bandwidth (at 4x an H100's FLOPS the 256^3 point
// counts at twice its HBM bandwidth and not at once: a floor appearing with more bandwidth), and alpha =
// time - bytes / bandwidth grows with the bandwidth. alpha is then an upper bound by the operands' bytes at HBM
// bandwidth: H100 5.20 us instead of serving's 5.07. It also keeps a point from counting whose time is shorter
// than the floor another point gives: GB200's fp8 1024^3 GEMM (4.39 us whole, 0.43 us at its fp8 peak) counts
// here, and bounds the floor below the 7.2 us of its fp4 1024^3 GEMM, which alone counts at the achieved
// bandwidth (0.49 us of fp8 operand bytes at 6.4 TB/s is 11% of 4.39 us).
KernelFloor TrainingKernelFloor(const CalibrationTable* cal, const Accelerator& acc);

// What the floor adds to one kernel whose roofline time is `roofline_s` and which moves `bytes`: the kernel takes
// max(roofline, alpha + bytes / bandwidth) (serving's IterationCost::Kernel), so this is that minus the roofline,
// never negative. A kernel that moves and computes nothing (an op absent at this precision) is no kernel: 0.
double KernelFloorExcess(const KernelFloor& f, double roofline_s, double flops, double bytes, double hbm_bytes_per_s);

}  // namespace sc
