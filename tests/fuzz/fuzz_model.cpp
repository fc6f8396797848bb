// Model presets: parse, validate, and derive the statistics the page shows at once.
#include "config/model_config.h"
#include "fuzz_target.h"
#include "graph/model_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return scfuzz::Expect([&] {
        sc::ModelConfig m = sc::ParseModelConfig(scfuzz::AsText(data, size));
        sc::ValidateModelConfig(m);
        sc::ComputeModelStats(m);
    });
}
