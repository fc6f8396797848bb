// The part of a cluster a job runs on, when that is not simply its first N accelerators: a slice of a torus pod
// (config/torus_slice.h), or segments of racks whose scale-up domain spans several nodes.
//
// NVL72 racks (GB200, GB300) hold 18 compute trays of 4 GPUs in one NVLink domain. A job that is not a multiple of
// 72 GPUs is not packed into whole racks: Slurm's block topology places it in equal segments of whole nodes, one
// per domain (sbatch --segment), and NVIDIA's training recipes ask for the largest segment of at most a rack's
// trays that divides the job's node count (NVIDIA-NeMo/Megatron-Bridge@067f987
// scripts/performance/utils/executors.py: "add --segment flag to sbatch if job uses GB200": segment = nodes when
// nodes <= 18, else the largest divisor of nodes not above 18). 256 GPUs are 64 trays in segments of 16: four
// racks of 64 GPUs each, so an expert or data-parallel group of 32 or 64 consecutive ranks never straddles a
// rack, as it would on the first 256 GPUs of 72-GPU racks.
#pragma once
#include <optional>

#include "config/hardware_config.h"

namespace sc {

// `sys` with its scale-up domain cut to the job's segment (segment nodes x node_size accelerators) and every
// level beyond grown to a multiple of it; nullopt when the scale-up level has no node_size, the job fits in one
// domain, fills whole domains, or its segment is the whole domain.
std::optional<System> SegmentedPartFor(const System& sys, int gpus);

// The part of `sys` a job of `gpus` accelerators runs on: TorusPartFor, else SegmentedPartFor; nullopt: the
// system as it is. What the estimate, the search, serving replicas, traces and sweeps all use.
std::optional<System> JobPartFor(const System& sys, int gpus);

}  // namespace sc
