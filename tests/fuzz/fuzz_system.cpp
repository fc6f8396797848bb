// System presets, against a fixed accelerator (its own parser has fuzz_hardware).
#include "config/hardware_config.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const sc::Accelerator h100 = sc::ParseAccelerator(scfuzz::ReadSource("presets/hardware/h100-sxm.json"));
    return scfuzz::Expect([&] { sc::ParseSystem(scfuzz::AsText(data, size), h100); });
}
