// Strict reading of one JSON object: every key must be known, every value of the right type and range.
// Errors name the field by its dotted path and suggest the nearest known key for a misspelling.
#pragma once
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/numbers.h"

namespace sc {

inline constexpr int kMaxJsonDepth = 64;  // nested arrays and objects in any input file

// Parses `text` as JSON; throws sc::Error("", "not valid JSON: ... at byte N") otherwise, and for a number
// beyond double's range (naming where it was) or nesting deeper than kMaxJsonDepth.
nlohmann::json ParseJsonText(std::string_view text, const std::string& what);

// A value as JSON text for an error message, clipped to 80 characters (never the whole of a huge value).
std::string Shown(const nlohmann::json& value);
// An integer JSON value in [lo, hi]; errors name `name`.
int JsonInt(const nlohmann::json& value, const std::string& name, long long lo, long long hi);

// Levenshtein distance, for "did you mean" on misspelled keys.
size_t EditDistance(std::string_view a, std::string_view b);
// Throws for the first key of `object` not in `known`, suggesting the nearest known key.
void RejectUnknownKeys(const nlohmann::json& object, const std::vector<std::string>& known, const std::string& path);

// The one strict reader of a JSON object (model, hardware, system, calibration, serving and link files): every
// key looked up becomes known, RejectUnknown() rejects the others with a "did you mean" hint, and errors name
// the field by its dotted path. Numbers are checked by numbers.h (IntegerIn, NumberIn), the one range rule.
class JsonFields {
public:
    // `path` prefixes field names in errors ("moe" gives "moe.experts").
    JsonFields(const nlohmann::json& object, std::string path);

    bool Has(const char* key) const;
    // The value of `key`, marking it known; nullptr when absent and not required. A missing required key is
    // reported as the misspelling when an unread key is close to it.
    const nlohmann::json* Get(const char* key, bool required);

    // Required fields throw when missing; optional ones return `fallback`.
    // Integers are at most `max` (kMaxModelDim unless stated), numbers finite and at most `max`.
    int PositiveInt(const char* key);  // required, at most kMaxModelDim
    // Required, at most `max`. Its own name: as an overload of PositiveInt, a call with an int max picked the
    // fallback overload below and made a missing field silently that value.
    int PositiveIntAtMost(const char* key, long long max);
    int PositiveInt(const char* key, int fallback, long long max = kMaxModelDim);
    int NonNegativeInt(const char* key, int fallback, long long max = kMaxModelDim);
    int Int(const char* key);  // any int
    double NonNegativeNumber(const char* key, double fallback, double max);
    double Number(const char* key);  // required, any finite number
    bool Bool(const char* key);
    bool Bool(const char* key, bool fallback);
    std::string String(const char* key);
    std::string String(const char* key, const std::string& fallback);
    std::string NonEmptyString(const char* key);
    std::vector<std::string> NonEmptyStrings(const char* key);  // a non-empty array of non-empty strings
    // A string that must be one of `choices`.
    std::string Choice(const char* key, std::initializer_list<const char*> choices, const char* fallback);
    const nlohmann::json* Object(const char* key);  // nullptr when absent; throws when not an object
    const nlohmann::json& RequiredObject(const char* key);
    const nlohmann::json& Array(const char* key);  // required

    // Throws for every key present but never asked for (misspelled or unknown).
    void RejectUnknown() const;

    std::string Field(std::string_view key) const;  // "path.key"

private:
    const nlohmann::json& obj_;
    std::string path_;
    std::vector<std::string> known_;
};

}  // namespace sc
