// "key=value" edits of a parsed cluster: what `--system-set` (and a link) changes on a system preset, the way
// `--set` changes a model. Every edit goes through the one number rule (config/numbers.h) and the edited
// system is re-checked as a preset would be; an edited field's provenance says it was set by the user.
//
// Keys (level = its index from 0 = innermost, or its name):
//   <level>.size                 accelerators reachable within the level
//   <level>.bandwidth            GB/s per accelerator per direction (nominal)
//   <level>.latency              microseconds per ring step
//   <level>.efficiency           (0, 1]: measured busbw / nominal
//   <level>.in_network_reduction on | off
//   <level>.oversubscription     >= 1, fat-tree levels only (two_tier, rail_optimized, three_tier)
//   <level>.wraparound           on | off, torus levels only: a ring (torus) or a line (mesh)
//   accelerator.hbm_tbps         HBM bandwidth, TB/s
//   accelerator.memory_gb        memory capacity, GB (1e9 bytes)
//   accelerator.bf16_tflops | fp16_tflops | fp8_tflops | fp4_tflops   dense matrix peaks
//   accelerator.power_w          board power, W (what the datasheet peaks are rated at)
//   accelerator.power_limit_w    a power limit below it, W: the SMs' clock drops (training/power_cap.h)
//   accelerator.collective_ctas  CTAs an overlapped NCCL collective holds, 0 to SMs - 1 (0: none, as
//                                copy-engine collectives)
#pragma once
#include <string>
#include <vector>

#include "config/hardware_config.h"

namespace sc {

// Applies `edits` in order, all or none. Throws sc::Error naming the edit's key and value and what is valid,
// leaving `sys` unchanged.
void ApplySystemEdits(System& sys, const std::vector<std::string>& edits);

}  // namespace sc
