// Number formats and their sizes in bytes. fp8/fp4 are the OCP/NVIDIA formats; bytes per element.
#pragma once
#include <string>
#include <string_view>

namespace sc {

enum class Precision { fp32, bf16, fp16, fp8, fp4 };

inline double BytesOf(Precision p) {
    switch (p) {
        case Precision::fp32: return 4;
        case Precision::bf16: return 2;
        case Precision::fp16: return 2;
        case Precision::fp8: return 1;
        case Precision::fp4: return 0.5;
    }
    return 0;
}

inline const char* NameOf(Precision p) {
    switch (p) {
        case Precision::fp32: return "fp32";
        case Precision::bf16: return "bf16";
        case Precision::fp16: return "fp16";
        case Precision::fp8: return "fp8";
        case Precision::fp4: return "fp4";
    }
    return "?";
}

// Returns false when `name` is not a known precision.
inline bool ParsePrecision(std::string_view name, Precision* out) {
    for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16, Precision::fp8, Precision::fp4})
        if (name == NameOf(p)) {
            *out = p;
            return true;
        }
    return false;
}

}  // namespace sc
