// What the compute model's rates rest on for one job on one part, in words for the reports: each rate is a
// measured series (named; its records are in presets/calibration/measured.json) or a fallback (its value). A
// planner reads it to know which parts of a step time were measured on that part and which are assumed: GB300's
// GEMMs run GB200's curves, a TPU's run the 0.70 fallback, MI300X's are bounded by its best measured shape.
#pragma once
#include <string>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "parallel/job.h"
#include "training/compute_model.h"
#include "training/kernel_floor.h"
#include "training/training_options.h"

namespace sc {

struct RateSources {
    std::string gemm;       // the GEMM efficiency: a measured curve, the fallback, or a value set by hand
    std::string attention;  // the fused-attention efficiency per pass
    std::string hbm;        // the achieved HBM bandwidth
    std::string floor;      // the fixed cost per kernel (training/kernel_floor.h), or that none was measured
    std::string clock;      // the power limit and the clock it leaves (training/power_cap.h); "" without one
    // Serving only: the fixed cost of a decode-attention call (DecodeAttentionFloor), or that none was measured;
    // "" for training, which decodes nothing.
    std::string decode_attention;
    // A hybrid model's SSD scan: the measured curve it reads and its efficiency, or that none applies; "" for a model
    // without one (and for serving, whose prefill batches read the curves call by call).
    std::string scan;
    // Serving only: what the TP all-reduce is timed on (IterationCost::AllReduceText); "" for training and TP 1.
    std::string all_reduce;
    // Every one of the four (and a hybrid model's scan) from a measurement of this part (or of the part its
    // extraction rule names); false where any is a fallback, missing or set by hand.
    bool all_measured = false;
};

// The rates EstimateTraining times `job` with on `sys` (the same ComputeModel and kernel floor it builds).
RateSources DescribeRates(const Job& job, const System& sys, const CalibrationTable* cal, const TrainingOptions& opt);
// The same for a compute model and kernel floor already built (serving's IterationCost, which runs forward passes
// only: `backward` false leaves the backward attention kernel out).
RateSources DescribeRates(const ComputeModel& cm, const KernelFloor& floor, const Accelerator& acc, Precision compute,
                          const TrainingOptions& opt, bool backward = true);
// The decode-attention line of a serving pool's rates.
std::string DecodeAttentionText(const DecodeAttentionFloor* f, const Accelerator& acc);
// What an MLA model's decode attention is read from where the engine's op was measured ("" without one): appended
// to DecodeAttentionText's line.
std::string MlaDecodeText(const MlaDecodeCurve* c);

}  // namespace sc
