// Shared by the bench programs (native and wasm under Node): preset loading, a wall clock, peak RSS and the
// result lines scripts/bench collects ("RESULT <key> <value> <unit> <note>").
#pragma once
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"

namespace bench {

inline std::string Root() { return SC_SOURCE_DIR; }

inline std::string Read(const std::string& rel) {
    std::ifstream f(Root() + "/" + rel, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "bench: cannot open %s/%s\n", Root().c_str(), rel.c_str());
        std::exit(1);
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

inline sc::ModelConfig Model(const std::string& id) {
    return sc::ParseModelConfig(Read("presets/models/" + id + ".json"));
}

inline sc::System System(const std::string& id, const std::string& acc) {
    return sc::ParseSystem(Read("presets/systems/" + id + ".json"), Read("presets/hardware/" + acc + ".json"));
}

inline const sc::CalibrationTable& Calibration() {
    static const sc::CalibrationTable t = sc::ParseCalibration(Read("presets/calibration/measured.json"));
    return t;
}

inline double Now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Peak resident set of this process in bytes (Linux: ru_maxrss is KiB). Under wasm, 0: the runner reports
// Node's RSS instead.
inline double PeakRssBytes() {
#ifdef __EMSCRIPTEN__
    return 0;
#else
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) * 1024.0;
#endif
}

inline void Result(const char* key, double value, const char* unit, const std::string& note = "") {
    std::printf("RESULT %s %.6g %s %s\n", key, value, unit, note.c_str());
    std::fflush(stdout);
}

}  // namespace bench
