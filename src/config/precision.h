// Number formats and their sizes in bytes. fp8/fp4 are the OCP/NVIDIA formats; bytes per element.
#pragma once
#include <algorithm>
#include <cstdint>
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

// How a GEMM's narrow operands are scaled: Transformer Engine's recipes (transformer_engine/common/recipe/
// __init__.py). `automatic` is the compute precision's usual one: delayed per-tensor scaling for fp8 (TE's
// DelayedScaling, the default of Megatron-LM's --fp8-format), NVFP4 for fp4 (TE's only fp4 training recipe).
//   delayed  per-tensor scale from an amax history (DelayedScaling)
//   current  per-tensor scale from this tensor's amax (Float8CurrentScaling; Megatron-Bridge's fp8_cs)
//   block    1x128 activation and 128x128 weight blocks (Float8BlockScaling; fp8_sc, DeepSeek-V3's scheme)
//   mx       MXFP8: one E8M0 scale per 32 elements (MXFP8BlockScaling; fp8_mx)
//   nvfp4    NVFP4: E4M3 scales per 16 elements and an fp32 one per tensor (NVFP4BlockScaling)
enum class Scaling { automatic, delayed, current, block, mx, nvfp4 };

inline const char* NameOf(Scaling s) {
    switch (s) {
        case Scaling::automatic: return "auto";
        case Scaling::delayed: return "delayed";
        case Scaling::current: return "current";
        case Scaling::block: return "block";
        case Scaling::mx: return "mx";
        case Scaling::nvfp4: return "nvfp4";
    }
    return "?";
}

inline bool ParseScaling(std::string_view name, Scaling* out) {
    for (Scaling s :
         {Scaling::automatic, Scaling::delayed, Scaling::current, Scaling::block, Scaling::mx, Scaling::nvfp4})
        if (name == NameOf(s)) {
            *out = s;
            return true;
        }
    return false;
}

// What a resolved recipe is, for reports: "per tensor (delayed)", "MXFP8 (E8M0 per 32)".
inline const char* ScalingDescription(Scaling s) {
    switch (s) {
        case Scaling::automatic: return "not at all (16-bit)";
        case Scaling::delayed: return "per tensor (delayed)";
        case Scaling::current: return "per tensor (current)";
        case Scaling::block: return "per block (1x128, 128x128)";
        case Scaling::mx: return "MXFP8 (E8M0 per 32)";
        case Scaling::nvfp4: return "NVFP4 (E4M3 per 16, Hadamard on wgrad)";
    }
    return "?";
}

// A recipe scales the format it was made for: TE's fp8 recipes fp8 GEMMs, NVFP4 fp4 ones; 16-bit GEMMs scale
// nothing. "" when `s` fits `compute`, else why not and what would be valid (the caller names the field).
inline std::string ScalingMismatch(Precision compute, Scaling s) {
    if (s == Scaling::automatic) return "";
    const Precision needs = s == Scaling::nvfp4 ? Precision::fp4 : Precision::fp8;
    if (compute == needs) return "";
    const char* valid = compute == Precision::fp8   ? "auto, delayed, current, block or mx"
                        : compute == Precision::fp4 ? "auto or nvfp4"
                                                    : "auto";
    std::string why = "\"";  // appended piece by piece: g++ 12 warns (-Wrestrict) on a chain of + here
    for (const char* part : {NameOf(s), "\" scales ", NameOf(needs), " GEMMs, but precision.compute is ",
                             NameOf(compute), "; valid with ", NameOf(compute), ": ", valid})
        why += part;
    return why;
}

// The recipe GEMMs in `compute` run under: `automatic` for 16-bit GEMMs (nothing is scaled), else the one asked
// for, or the precision's usual one.
inline Scaling ResolvedScaling(Precision compute, Scaling asked) {
    if (BytesOf(compute) >= 2) return Scaling::automatic;
    if (asked != Scaling::automatic) return asked;
    return compute == Precision::fp4 ? Scaling::nvfp4 : Scaling::delayed;
}

// Modules whose GEMMs run in BF16 inside an fp8 or fp4 layer (PrecisionConfig::bf16_modules): Megatron-Core's
// quant_recipe matchers, which pick Transformer Engine's recipe by module name. Megatron-Bridge's Nemotron 3 Super NVFP4
// recipe (perf_recipes/nemotronh/te_quant.cfg) keeps attention's linear_qkv and linear_proj, the MoE latent projections
// and the MTP module in BF16. Bits of a mask, in the order of kBf16ModuleNames.
inline constexpr uint8_t kBf16Attention = 1;      // the attention projections: QKV (or MLA's) and the output
inline constexpr uint8_t kBf16Mlp = 2;            // a dense MLP's fc1 and fc2
inline constexpr uint8_t kBf16Experts = 4;        // the routed experts' grouped GEMMs
inline constexpr uint8_t kBf16SharedExperts = 8;  // the shared experts
inline constexpr uint8_t kBf16Latent = 16;        // a latent MoE's fc1_latent_proj and fc2_latent_proj
inline constexpr uint8_t kBf16Mamba = 32;         // a Mamba mixer's in_proj and out_proj
inline constexpr uint8_t kBf16Mtp = 64;           // every GEMM of the multi-token prediction modules
inline constexpr int kBf16ModuleCount = 7;
inline constexpr const char* kBf16ModuleNames[kBf16ModuleCount] = {"attention", "mlp",   "experts", "shared_experts",
                                                                   "latent",    "mamba", "mtp"};

// "attention+latent+mtp" (empty: none).
inline std::string Bf16ModulesString(uint8_t mask) {
    std::string s;
    for (int i = 0; i < kBf16ModuleCount; ++i)
        if (mask & (1u << i)) {
            if (!s.empty()) s += '+';  // piece by piece: g++ 12 warns (-Wrestrict) on a chain of + here
            s += kBf16ModuleNames[i];
        }
    return s;
}

// Parses "attention+latent+mtp" ("" or "none": no module). Returns the first unknown name in *bad and false.
inline bool ParseBf16Modules(std::string_view text, uint8_t* mask, std::string* bad) {
    *mask = 0;
    if (text.empty() || text == "none") return true;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find('+', start), text.size());
        const std::string_view name = text.substr(start, end - start);
        int i = 0;
        while (i < kBf16ModuleCount && name != kBf16ModuleNames[i]) ++i;
        if (i == kBf16ModuleCount) {
            *bad = std::string(name);
            return false;
        }
        *mask |= static_cast<uint8_t>(1u << i);
        start = end + 1;
    }
    return true;
}

}  // namespace sc
