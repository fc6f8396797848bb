// Strict reading of one JSON object: every key must be known, every value of the right type and range.
// Errors name the field by its dotted path and suggest the nearest known key for a misspelling.
#pragma once
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace sc {

// Parses `text` as JSON; throws sc::Error("", "not valid JSON: ... at byte N") otherwise.
nlohmann::json ParseJsonText(std::string_view text, const std::string& what);

// Levenshtein distance, for "did you mean" on misspelled keys.
size_t EditDistance(std::string_view a, std::string_view b);
// Throws for the first key of `object` not in `known`, suggesting the nearest known key.
void RejectUnknownKeys(const nlohmann::json& object, const std::vector<std::string>& known, const std::string& path);

class JsonFields {
public:
    // `path` prefixes field names in errors ("moe" gives "moe.experts").
    JsonFields(const nlohmann::json& object, std::string path);

    bool Has(const char* key) const;
    // Required fields throw when missing; optional ones return `fallback`.
    int PositiveInt(const char* key);
    int PositiveInt(const char* key, int fallback);
    int NonNegativeInt(const char* key, int fallback);
    double NonNegativeNumber(const char* key, double fallback);
    bool Bool(const char* key, bool fallback);
    std::string String(const char* key);
    std::string String(const char* key, const std::string& fallback);
    // A string that must be one of `choices`.
    std::string Choice(const char* key, std::initializer_list<const char*> choices, const char* fallback);
    const nlohmann::json* Object(const char* key);  // nullptr when absent; throws when not an object

    // Throws for every key present but never asked for (misspelled or unknown).
    void RejectUnknown() const;

    std::string FieldName(const char* key) const;

private:
    const nlohmann::json* Find(const char* key, bool required);
    const nlohmann::json& obj_;
    std::string path_;
    std::vector<std::string> known_;
};

}  // namespace sc
