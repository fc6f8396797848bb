#include "training/kernel_floor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "config/error.h"

namespace sc {

KernelFloor MeasuredKernelFloor(const CalibrationTable* cal, const Accelerator& acc, double hbm_bytes_per_s) {
    KernelFloor best;
    if (!cal || hbm_bytes_per_s <= 0) return best;
    for (const GemmCurve& g : cal->gemm) {
        if (std::find(g.accelerators.begin(), g.accelerators.end(), acc.id) == g.accelerators.end()) continue;
        // A serving engine's own op (its input quantize and GEMM, two kernels, timed as one) is not a GEMM kernel's
        // fixed cost; only the serving model reads it, by shape (GemmCurve::engine).
        if (!g.engine.empty()) continue;
        double peak = 0;
        try {
            peak = PeakFlops(acc, g.dtype);
        } catch (const Error&) {
            continue;  // a curve at a precision the preset has no peak for cannot be judged
        }
        for (size_t i = 0; i < g.tflops.x.size(); ++i) {
            const double flops = g.tflops.x[i], measured = flops / (g.tflops.y[i] * 1e12);
            if (!(g.tflops.y[i] > 0)) continue;
            const double side = std::cbrt(flops / 2);  // the curve is over square shapes: m = n = k
            const double bytes = 3 * side * side * BytesOf(g.dtype);
            const double roofline = std::max(peak > 0 ? flops / peak : 0.0, bytes / hbm_bytes_per_s);
            if (roofline > kFloorRooflineShare * measured) continue;
            const double alpha = measured - bytes / hbm_bytes_per_s;
            if (best.alpha_s == 0 || alpha < best.alpha_s) {
                best.alpha_s = alpha;
                best.gemm_flops = flops;
                best.gemm_seconds = measured;
                best.series = g.series;
            }
        }
    }
    if (best.alpha_s == 0) {
        // The profile's alpha is already what a kernel costs beyond its bytes at STREAM-copy bandwidth; it does not
        // depend on the bandwidth it is judged at (the training floor's unbounded one included).
        if (const WeightReadFloor* w = FindWeightReadFloor(*cal, acc.id)) {
            best.alpha_s = w->alpha_us * 1e-6;
            best.series = w->series;
            best.profile_gemms = w->gemms;
        }
    }
    return best;
}

KernelFloor TrainingKernelFloor(const CalibrationTable* cal, const Accelerator& acc) {
    return MeasuredKernelFloor(cal, acc, std::numeric_limits<double>::infinity());
}

double KernelFloorExcess(const KernelFloor& f, double roofline_s, double flops, double bytes, double hbm_bytes_per_s) {
    if (f.alpha_s <= 0 || (flops <= 0 && bytes <= 0) || hbm_bytes_per_s <= 0) return 0;
    return std::max(0.0, f.alpha_s + bytes / hbm_bytes_per_s - roofline_s);
}

}  // namespace sc
