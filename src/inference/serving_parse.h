// Reads a serving description (presets/inference/*.json; format in docs/serving.md) strictly: unknown or
// misspelled keys, wrong types and out-of-range values throw sc::Error naming the field. The model and the
// system are preset ids the caller resolves (the core reads no files).
#pragma once
#include <string>
#include <string_view>

#include "inference/serving_config.h"

namespace sc {

struct ServingDescription {
    std::string name;
    std::string model_id;   // presets/models/<id>.json
    std::string system_id;  // presets/systems/<id>.json
    // decode_pool.system: the decode pool's own cluster (presets/systems/<id>.json); "" places it beside the
    // prefill pool on system_id's cluster.
    std::string decode_system_id;
    ServingConfig config;  // config.model is left empty: set it from the model preset
};

ServingDescription ParseServingDescription(std::string_view json_text);

}  // namespace sc
