#include "config/json_fields.h"

#include <algorithm>
#include <cmath>

#include "config/error.h"

namespace sc {

nlohmann::json ParseJsonText(std::string_view text, const std::string& what) {
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ..."; keep the useful tail.
        std::string msg = e.what();
        size_t p = msg.find("parse error");
        throw Error("", what + " is not valid JSON: " + (p == std::string::npos ? msg : msg.substr(p)));
    }
}

// Levenshtein distance, for "did you mean" on misspelled keys.
size_t EditDistance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

JsonFields::JsonFields(const nlohmann::json& object, std::string path) : obj_(object), path_(std::move(path)) {
    if (!obj_.is_object())
        throw Error(path_, "expected a JSON object, got " + std::string(obj_.type_name()));
}

std::string JsonFields::FieldName(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

bool JsonFields::Has(const char* key) const { return obj_.contains(key); }

const nlohmann::json* JsonFields::Find(const char* key, bool required) {
    known_.emplace_back(key);
    auto it = obj_.find(key);
    if (it == obj_.end()) {
        if (!required) return nullptr;
        // A misspelling of a required key is reported as the misspelling, which is the actual mistake.
        for (auto k = obj_.begin(); k != obj_.end(); ++k)
            if (EditDistance(k.key(), key) <= 2 && std::find(known_.begin(), known_.end(), k.key()) == known_.end())
                throw Error(FieldName(k.key().c_str()), std::string("unknown field (did you mean \"") + key + "\"?)");
        throw Error(FieldName(key), "missing required field");
    }
    return &*it;
}

static int ToInt(const nlohmann::json& v, const std::string& name) {
    if (!v.is_number()) throw Error(name, "expected an integer, got " + v.dump());
    double d = v.get<double>();
    if (d != std::floor(d) || std::fabs(d) > 2e9) throw Error(name, "expected an integer, got " + v.dump());
    return static_cast<int>(d);
}

int JsonFields::PositiveInt(const char* key) {
    int v = ToInt(*Find(key, true), FieldName(key));
    if (v <= 0) throw Error(FieldName(key), "must be a positive integer, got " + std::to_string(v));
    return v;
}

int JsonFields::PositiveInt(const char* key, int fallback) {
    const nlohmann::json* j = Find(key, false);
    if (!j) return fallback;
    int v = ToInt(*j, FieldName(key));
    if (v <= 0) throw Error(FieldName(key), "must be a positive integer, got " + std::to_string(v));
    return v;
}

int JsonFields::NonNegativeInt(const char* key, int fallback) {
    const nlohmann::json* j = Find(key, false);
    if (!j) return fallback;
    int v = ToInt(*j, FieldName(key));
    if (v < 0) throw Error(FieldName(key), "must be zero or a positive integer, got " + std::to_string(v));
    return v;
}

double JsonFields::NonNegativeNumber(const char* key, double fallback) {
    const nlohmann::json* j = Find(key, false);
    if (!j) return fallback;
    if (!j->is_number()) throw Error(FieldName(key), "expected a number, got " + j->dump());
    double v = j->get<double>();
    if (!(v >= 0) || !std::isfinite(v)) throw Error(FieldName(key), "must be zero or positive, got " + j->dump());
    return v;
}

bool JsonFields::Bool(const char* key, bool fallback) {
    const nlohmann::json* j = Find(key, false);
    if (!j) return fallback;
    if (!j->is_boolean()) throw Error(FieldName(key), "expected true or false, got " + j->dump());
    return j->get<bool>();
}

std::string JsonFields::String(const char* key) {
    const nlohmann::json* j = Find(key, true);
    if (!j->is_string()) throw Error(FieldName(key), "expected a string, got " + j->dump());
    return j->get<std::string>();
}

std::string JsonFields::String(const char* key, const std::string& fallback) {
    const nlohmann::json* j = Find(key, false);
    if (!j) return fallback;
    if (!j->is_string()) throw Error(FieldName(key), "expected a string, got " + j->dump());
    return j->get<std::string>();
}

std::string JsonFields::Choice(const char* key, std::initializer_list<const char*> choices, const char* fallback) {
    std::string v = String(key, fallback);
    std::string list;
    for (const char* c : choices) {
        if (v == c) return v;
        list += list.empty() ? "" : ", ";
        list += std::string("\"") + c + "\"";
    }
    throw Error(FieldName(key), "\"" + v + "\" is not one of " + list);
}

const nlohmann::json* JsonFields::Object(const char* key) {
    const nlohmann::json* j = Find(key, false);
    if (j && !j->is_object()) throw Error(FieldName(key), "expected a JSON object, got " + j->dump());
    return j;
}

void RejectUnknownKeys(const nlohmann::json& object, const std::vector<std::string>& known, const std::string& path) {
    for (auto it = object.begin(); it != object.end(); ++it) {
        const std::string& k = it.key();
        if (std::find(known.begin(), known.end(), k) != known.end()) continue;
        std::string best;
        size_t best_d = 3;  // suggest only close matches
        for (const std::string& c : known) {
            size_t d = EditDistance(k, c);
            if (d < best_d) best_d = d, best = c;
        }
        std::string msg = "unknown field";
        if (!best.empty()) msg += " (did you mean \"" + best + "\"?)";
        throw Error(path.empty() ? k : path + "." + k, msg);
    }
}

void JsonFields::RejectUnknown() const { RejectUnknownKeys(obj_, known_, path_); }

}  // namespace sc
