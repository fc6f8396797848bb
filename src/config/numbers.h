// One rule for every number that enters, from a file, a flag or a spec: finite, integral where it must be,
// within a stated range. Errors name the field and show the value as it was typed (clipped to 80
// characters), never a converted or overflowed one. The limits that apply across the tool live here too.
#pragma once
#include <string>
#include <string_view>

namespace sc {

// Stated limits (README "Limits"): ranks in a job, microbatches per step, model dimensions and input files.
inline constexpr long long kMaxRanks = 1LL << 24;                        // 16,777,216
inline constexpr long long kMaxMicrobatches = 1LL << 16;                 // 65,536 per step and data-parallel replica
inline constexpr long long kMaxBatch = 2147483647;                       // sequences per step (batch=), int range
inline constexpr long long kMaxModelDim = 1LL << 24;                     // layers, hidden, heads, ffn, vocab, seq, ...
inline constexpr double kMaxFlopsPerMicrobatch = 2305843009213693952.0;  // 2^61: every trace count fits int64
inline constexpr double kMaxParams = 72057594037927936.0;                // 2^56 weights: the optimizer node's bytes fit
inline constexpr long long kMaxInputFileBytes = 16LL << 20;              // 16 MiB
inline constexpr double kMaxTrainingTokens = 1e18;                       // --tokens
inline constexpr double kMaxCapacityFactor = 100;                        // moe.capacity_factor
inline constexpr double kMinSweepFactor = 1e-6, kMaxSweepFactor = 1e6;   // sweep --axis flops=... factors
inline constexpr double kMaxBucketMb = 1048576;                          // bucket_mb: 1 MiB to 1 TiB
inline constexpr double kMaxHostLinkGbps = 1e6;                          // host_link_gbps: up to 1 PB/s

// `text` clipped to `max` characters, with "..." when cut (for values echoed in error messages).
std::string Clip(std::string_view text, size_t max = 80);

// A number for a message, to six significant digits as printf's %g writes it ("0.5", "1e+06"), not as
// std::to_string's six fixed decimals ("0.500000").
std::string ShownNumber(double v);

// An integer in [lo, hi]: `value` must be integral; `shown` is how the input spelled it.
long long IntegerIn(const std::string& field, double value, std::string_view shown, long long lo, long long hi);
// A finite number in [lo, hi] (or (lo, hi] when lo_open).
double NumberIn(const std::string& field, double value, std::string_view shown, double lo, double hi,
                bool lo_open = false);

// A count given as key=value (a --parallel spec, a search or sweep request) that must be at least 1: throws
// Error(key, "key=<value> must be a positive integer<note>").
void RequirePositiveCount(const char* key, long long value, std::string_view note = {});
// A shard of a sharded run (search, sweep, rate sweep, summary): throws sc::Error("shard") unless
// 0 <= index < count.
void RequireShard(long long index, long long count);

// The same rules for text: an optional sign and decimal digits only ("1e3", "8x", "" are not integers).
long long ParseIntegerIn(const std::string& field, std::string_view text, long long lo, long long hi);
// A decimal number as strtod reads it, the whole text, finite and in range.
double ParseNumberIn(const std::string& field, std::string_view text, double lo, double hi, bool lo_open = false);

}  // namespace sc
