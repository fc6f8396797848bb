// Loading a system preset from the command line: --system FILE or an id under presets/systems/.
// The accelerator comes from ../hardware/<id>.json beside it, the calibration tables from
// ../calibration/measured.json when present.
#pragma once
#include <memory>

#include "cli/args.h"
#include "config/calibration.h"
#include "config/hardware_config.h"
#include "training/sweep.h"
#include "training/training_options.h"

namespace sc::cli {

struct LoadedSystem {
    System system;
    std::unique_ptr<CalibrationTable> calibration;  // null when absent or --no-calibration
};

std::vector<std::string> SystemFlags();      // system, overlap, efficiency, tokens
std::vector<std::string> SystemBoolFlags();  // no-calibration
// --system, or `fallback` (a preset id) when the flag is absent and a fallback is given.
LoadedSystem LoadSystem(const Args& a, const char* fallback = nullptr);
// A system preset by id or file (presets/systems/), without calibration (LoadSystem's table holds every part's
// curves); errors name `flag` and the file.
System LoadSystemPreset(const char* flag, const std::string& id_or_file);
TrainingOptions LoadTrainingOptions(const Args& a);
// The cluster a command runs on: the preset built to hold `gpus` (ExtendSystem; 0 keeps its size), then every
// --system-set edit (so the core tier a large --gpus adds can be edited too, by its name or index).
void BuildCluster(LoadedSystem& ls, const Args& a, int gpus);

}  // namespace sc::cli
