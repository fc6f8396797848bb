// Calibration tables (measured curves).
#include "config/calibration.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return scfuzz::Expect([&] { sc::ParseCalibration(scfuzz::AsText(data, size)); });
}
