#include "training/fp8_overheads.h"

namespace sc {

double Fp8WeightCastsPerStep(int zero_stage, double rounds) { return zero_stage >= 3 ? rounds : 1.0; }

double Fp8WeightCastSeconds(double params, double casts, double hbm_bytes_per_s) {
    if (params <= 0 || casts <= 0 || hbm_bytes_per_s <= 0) return 0;
    return params * kFp8WeightCastBytesPerParam * casts / hbm_bytes_per_s;
}

}  // namespace sc
