// One libFuzzer target per parser (tests/fuzz/README.md). Every input must either parse or be rejected
// with sc::Error: any other exception, a crash, a sanitizer report, a hang or a memory blow-up is a bug.
#pragma once
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "config/error.h"

namespace scfuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

inline std::string ReadSource(const std::string& relative) {
    std::ifstream f(std::string(SC_SOURCE_DIR) + "/" + relative, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Runs `parse`; sc::Error is the one allowed way to say no (its message must not be empty).
template <typename F>
int Expect(F&& parse) {
    try {
        parse();
    } catch (const sc::Error& e) {
        if (std::string_view(e.what()).empty()) __builtin_trap();
    }
    return 0;
}

}  // namespace scfuzz
