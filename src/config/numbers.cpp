#include "config/numbers.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "config/error.h"

namespace sc {

std::string Clip(std::string_view text, size_t max) {
    if (text.size() <= max) return std::string(text);
    return std::string(text.substr(0, max)) + "... (" + std::to_string(text.size()) + " characters)";
}

static std::string Quoted(std::string_view shown) {
    std::string q(1, '"');  // (appending, not operator+: g++ 12 warns falsely on "\"" + std::string)
    q += Clip(shown);
    q += '"';
    return q;
}

std::string ShownNumber(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

static std::string Num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    return buf;
}

static std::string LowMessage(long long lo) {
    if (lo == 1) return "must be a positive integer";
    if (lo == 0) return "must be zero or a positive integer";
    return "must be at least " + std::to_string(lo);
}

long long IntegerIn(const std::string& field, double value, std::string_view shown, long long lo, long long hi) {
    if (!std::isfinite(value) || value != std::floor(value))
        throw Error(field, "expected an integer, got " + Clip(shown));
    if (value < static_cast<double>(lo)) throw Error(field, LowMessage(lo) + ", got " + Clip(shown));
    if (value > static_cast<double>(hi))
        throw Error(field, "must be at most " + std::to_string(hi) + ", got " + Clip(shown));
    return static_cast<long long>(value);
}

// `shown` is already clipped (and quoted when it came from text).
static double CheckNumber(const std::string& field, double value, const std::string& shown, double lo, double hi,
                          bool lo_open) {
    if (!std::isfinite(value)) throw Error(field, "must be a finite number, got " + shown);
    if (lo_open ? !(value > lo) : !(value >= lo))
        throw Error(field,
                    std::string(lo_open ? "must be greater than " : "must be at least ") + Num(lo) + ", got " + shown);
    if (value > hi) throw Error(field, "must be at most " + Num(hi) + ", got " + shown);
    return value;
}

double NumberIn(const std::string& field, double value, std::string_view shown, double lo, double hi, bool lo_open) {
    return CheckNumber(field, value, Clip(shown), lo, hi, lo_open);
}

long long ParseIntegerIn(const std::string& field, std::string_view text, long long lo, long long hi) {
    size_t i = text.size() > 0 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    bool digits = i < text.size();
    for (size_t k = i; k < text.size(); ++k) digits = digits && text[k] >= '0' && text[k] <= '9';
    if (!digits) throw Error(field, "expected an integer, got " + Quoted(text));
    // Digits beyond 18 are past every range here; strtod keeps their sign and magnitude for the message.
    double v = std::strtod(std::string(text).c_str(), nullptr);
    if (v < static_cast<double>(lo)) throw Error(field, LowMessage(lo) + ", got " + Quoted(text));
    if (v > static_cast<double>(hi))
        throw Error(field, "must be at most " + std::to_string(hi) + ", got " + Quoted(text));
    return std::strtoll(std::string(text).c_str(), nullptr, 10);
}

double ParseNumberIn(const std::string& field, std::string_view text, double lo, double hi, bool lo_open) {
    std::string s(text);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || s.find_first_of("xXpP") != std::string::npos)
        throw Error(field, "expected a number, got " + Quoted(text));
    return CheckNumber(field, v, Quoted(text), lo, hi, lo_open);
}

void RequireShard(long long index, long long count) {
    if (count < 1 || index < 0 || index >= count)
        throw Error("shard",
                    "shard " + std::to_string(index) + " of " + std::to_string(count) + " is not one of 0 .. count-1");
}

void RequirePositiveCount(const char* key, long long value, std::string_view note) {
    if (value <= 0)
        throw Error(key,
                    std::string(key) + "=" + std::to_string(value) + " must be a positive integer" + std::string(note));
}

}  // namespace sc
