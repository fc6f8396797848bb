// Compute under a power limit (issue 11, "clocks under power limits"): a GPU capped below the board power its
// datasheet peaks are rated at (Accelerator::power_limit_w) runs its SMs at a lower clock, and every compute-bound
// kernel (GEMMs, attention, vector work) runs slower by the clock's ratio. HBM bandwidth keeps the memory clock,
// which the cap does not set, and a memory-bound kernel draws less than the cap anyway.
//
// The clock follows first-order dynamic voltage and frequency scaling: dynamic power is P = a C V^2 f, and in the
// DVFS range the supply voltage is lowered with the clock (V ~ f), so P ~ f^3 and a kernel that drew the board power
// at the rated clock runs at (limit / board)^(1/3) of it under the limit. Dense GEMMs are that kernel: on tensor-core
// GPUs they are what reaches the board power first (stas00/ml-engineering, "Power consumption" and "Clock speed":
// the clock "depends on ... power limit"). Static power (leakage, HBM, NVLink), which a lower clock does not shrink,
// makes the real drop larger: so this is the smallest slowdown a cap can cost. NVIDIA's own parts of one die at two
// rated powers bracket the exponent: B200 at 1,000 W and GB200 at 1,200 W rate 2,250 and 2,500 dense BF16 TFLOPS
// (data/accelerators.json: ln(2500/2250) / ln(1.2) = 0.58), B300 at 1,000 W and GB300 at 1,400 W the same two
// (0.31); at the 500 W of 700 W that Meta's Grand Teton H100s run, 1/3 gives 0.894 of the rated compute and the
// bracket 0.82-0.90 (docs/validation.md, "Clocks under a power limit").
#pragma once
#include <optional>
#include <string>

#include "config/hardware_config.h"

namespace sc {

// The exponent of the clock in the power a compute-bound kernel draws: P ~ f^3 (first-order DVFS, above).
inline constexpr double kPowerClockExponent = 3.0;

// Fraction of its rated clock `acc` runs compute-bound kernels at: 1 without a power limit (or one at the board
// power), else (power_limit_w / board_power_w)^(1/3).
double PowerCapClockScale(const Accelerator& acc);

// The power a GPU draws at most: its limit when one is set, else the board power; nullopt when neither is known.
std::optional<double> PowerDrawW(const Accelerator& acc);

// In words for the reports: "" without a limit, else the limit, the board power and the clock it leaves.
std::string PowerCapText(const Accelerator& acc);

}  // namespace sc
