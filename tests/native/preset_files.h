// The repository's presets as the tests load them: a system preset with its accelerator, and the measured
// calibration tables (one definition for every test file that needs them).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "config/overrides.h"
#include "test_util.h"

namespace sctest {

// presets/systems/<id>.json with the presets/hardware file its "accelerator" names.
inline sc::System LoadSystemPreset(const std::string& id) {
    const std::string root = SC_SOURCE_DIR;
    const std::string text = ReadFile(root + "/presets/systems/" + id + ".json");
    const std::string acc = nlohmann::json::parse(text).at("accelerator").get<std::string>();
    return sc::ParseSystem(text, ReadFile(root + "/presets/hardware/" + acc + ".json"));
}

// presets/models/<file>.
inline sc::ModelConfig LoadModelPreset(const std::string& file) {
    return sc::ParseModelConfig(ReadFile(std::string(SC_SOURCE_DIR) + "/presets/models/" + file));
}

// The message parsing the model preset `id` (presets/models/<id>.json) with `sets` applied (--set key=value) throws;
// "" when it parses.
inline std::string ModelPresetError(const std::string& id, const std::vector<std::string>& sets) {
    const std::string text = ReadFile(std::string(SC_SOURCE_DIR) + "/presets/models/" + id + ".json");
    return ErrorOf([&] { sc::ParseModelConfig(sc::ApplyOverrides(text, sets, id)); });
}

// presets/calibration/measured.json, parsed once.
inline const sc::CalibrationTable& MeasuredCalibration() {
    static const sc::CalibrationTable t =
        sc::ParseCalibration(ReadFile(std::string(SC_SOURCE_DIR) + "/presets/calibration/measured.json"));
    return t;
}

}  // namespace sctest
