// A slice of a torus pod: the chips a job of N accelerators gets on a system whose innermost levels are torus
// dimensions (TPU ICI). Cloud TPU schedules slices of whole 4x4x4 cubes, each dimension a multiple of 4, wired
// into a torus of that shape through the optical circuit switches (Google Cloud TPU docs, "TPU v4": "The
// connections can be configured as a 3D torus on slices where ... each dimension is a multiple of 4";
// Jouppi et al. 2023, "TPU v4: An Optically Reconfigurable Supercomputer", ISCA, Sec. 2). The job then sees
// the slice's own dimensions, not the first N chips of the pod's.
#pragma once
#include "config/hardware_config.h"

namespace sc {

// Side of the cube a torus slice is built from, in chips per dimension.
constexpr int kTorusCubeSide = 4;

// `pod` with its leading torus levels reshaped to the most cubic slice of `gpus` chips, and no level beyond (the
// job fits in it). A slice of whole cubes (a multiple of 64 chips) has dimensions that are multiples of
// kTorusCubeSide and keeps the pod's wraparound; a smaller one is a mesh of any shape within a cube (Cloud TPU's
// v4-8 is 2x2x1 chips). Dimensions of one chip are dropped. nullopt when the pod has no torus levels, already has
// `gpus` chips in them, or no such slice exists (more than a cube but not whole cubes, or larger than the torus):
// the job then runs on the first `gpus` chips of the pod's shape.
std::optional<System> SliceTorus(const System& pod, int gpus);

// The part of a torus pod a job of `gpus` chips runs on, as the estimate, the search and serving replicas time
// it (the trace timeline and sweeps take the same slice through ExtendSystem): its slice (SliceTorus), or, when
// no slice holds that many but the torus does, the pod named as running on "its first N chips". nullopt when
// `pod` has no leading torus level or the job fills its torus or more (the levels beyond it, if any, join tori).
std::optional<System> TorusPartFor(const System& pod, int gpus);

}  // namespace sc
