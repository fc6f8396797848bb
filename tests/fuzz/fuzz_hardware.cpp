// Accelerator presets.
#include "config/hardware_config.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return scfuzz::Expect([&] { sc::ParseAccelerator(scfuzz::AsText(data, size)); });
}
