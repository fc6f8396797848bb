#include "config/json_fields.h"

#include <algorithm>
#include <cmath>

#include "config/error.h"
#include "config/numbers.h"

namespace sc {

std::string Shown(const nlohmann::json& value) {
    return Clip(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// "moe.experts", "layers[]": the open containers' current keys, for naming where a number overflowed.
static std::string PathOf(const std::vector<std::string>& open) {
    std::string out;
    for (const std::string& k : open) {
        if (k == "[]") out += k;
        else if (!k.empty()) out += (out.empty() ? "" : ".") + Clip(k, 40);
    }
    return Clip(out);
}

nlohmann::json ParseJsonText(std::string_view text, const std::string& what) {
    using Event = nlohmann::json::parse_event_t;
    std::vector<std::string> open;  // one entry per open container: its current key, or "[]" for an array
    auto track = [&](int depth, Event ev, nlohmann::json& parsed) {
        if (ev == Event::object_start || ev == Event::array_start) {
            if (depth >= kMaxJsonDepth)
                throw Error(PathOf(open), what + " nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
            open.push_back(ev == Event::array_start ? "[]" : "");
        } else if (ev == Event::object_end || ev == Event::array_end) {
            if (!open.empty()) open.pop_back();
        } else if (ev == Event::key && !open.empty()) {
            open.back() = parsed.get<std::string>();
        }
        return true;
    };
    try {
        return nlohmann::json::parse(text.begin(), text.end(), track);
    } catch (const nlohmann::json::parse_error& e) {
        // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ..."; keep the useful tail.
        std::string msg = e.what();
        size_t p = msg.find("parse error");
        throw Error("", what + " is not valid JSON: " + Clip(p == std::string::npos ? msg : msg.substr(p), 200));
    } catch (const nlohmann::json::exception& e) {
        // A number beyond double's range ("1e999") is nlohmann's out_of_range.406; name where it was.
        std::string msg = e.what();
        size_t p = msg.find("] ");
        throw Error(PathOf(open), what + ": " + Clip(p == std::string::npos ? msg : msg.substr(p + 2), 200) +
                                      " (numbers must be finite doubles)");
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
    if (!obj_.is_object()) throw Error(path_, "expected a JSON object, got " + std::string(obj_.type_name()));
}

std::string JsonFields::Field(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool JsonFields::Has(const char* key) const { return obj_.contains(key); }

const nlohmann::json* JsonFields::Get(const char* key, bool required) {
    known_.emplace_back(key);
    auto it = obj_.find(key);
    if (it == obj_.end()) {
        if (!required) return nullptr;
        // A misspelling of a required key is reported as the misspelling, which is the actual mistake.
        for (auto k = obj_.begin(); k != obj_.end(); ++k)
            if (EditDistance(k.key(), key) <= 2 && std::find(known_.begin(), known_.end(), k.key()) == known_.end())
                throw Error(Field(k.key()), std::string("unknown field (did you mean \"") + key + "\"?)");
        throw Error(Field(key), "missing required field");
    }
    return &*it;
}

int JsonInt(const nlohmann::json& v, const std::string& name, long long lo, long long hi) {
    if (!v.is_number()) throw Error(name, "expected an integer, got " + Shown(v));
    return static_cast<int>(IntegerIn(name, v.get<double>(), Shown(v), lo, hi));
}

int JsonFields::PositiveInt(const char* key) { return PositiveIntAtMost(key, kMaxModelDim); }

int JsonFields::PositiveIntAtMost(const char* key, long long max) {
    return JsonInt(*Get(key, true), Field(key), 1, max);
}

int JsonFields::PositiveInt(const char* key, int fallback, long long max) {
    const nlohmann::json* j = Get(key, false);
    return j ? JsonInt(*j, Field(key), 1, max) : fallback;
}

int JsonFields::NonNegativeInt(const char* key, int fallback, long long max) {
    const nlohmann::json* j = Get(key, false);
    return j ? JsonInt(*j, Field(key), 0, max) : fallback;
}

double JsonFields::NonNegativeNumber(const char* key, double fallback, double max) {
    const nlohmann::json* j = Get(key, false);
    if (!j) return fallback;
    if (!j->is_number()) throw Error(Field(key), "expected a number, got " + Shown(*j));
    return NumberIn(Field(key), j->get<double>(), Shown(*j), 0, max);
}

bool JsonFields::Bool(const char* key, bool fallback) {
    const nlohmann::json* j = Get(key, false);
    if (!j) return fallback;
    if (!j->is_boolean()) throw Error(Field(key), "expected true or false, got " + Shown(*j));
    return j->get<bool>();
}

std::string JsonFields::String(const char* key) {
    const nlohmann::json* j = Get(key, true);
    if (!j->is_string()) throw Error(Field(key), "expected a string, got " + Shown(*j));
    return j->get<std::string>();
}

std::string JsonFields::String(const char* key, const std::string& fallback) {
    const nlohmann::json* j = Get(key, false);
    if (!j) return fallback;
    if (!j->is_string()) throw Error(Field(key), "expected a string, got " + Shown(*j));
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
    throw Error(Field(key), "\"" + v + "\" is not one of " + list);
}

int JsonFields::Int(const char* key) { return JsonInt(*Get(key, true), Field(key), -2147483647, 2147483647); }

double JsonFields::Number(const char* key) {
    const nlohmann::json* j = Get(key, true);
    if (!j->is_number()) throw Error(Field(key), "expected a number, got " + Shown(*j));
    double d = j->get<double>();
    if (!std::isfinite(d)) throw Error(Field(key), "must be finite, got " + Shown(*j));
    return d;
}

bool JsonFields::Bool(const char* key) {
    const nlohmann::json* j = Get(key, true);
    if (!j->is_boolean()) throw Error(Field(key), "expected true or false, got " + Shown(*j));
    return j->get<bool>();
}

std::string JsonFields::NonEmptyString(const char* key) {
    std::string s = String(key);
    if (s.empty()) throw Error(Field(key), "must not be empty");
    return s;
}

std::vector<std::string> JsonFields::NonEmptyStrings(const char* key) {
    const nlohmann::json* j = Get(key, true);
    if (!j->is_array() || j->empty()) throw Error(Field(key), "expected a non-empty array of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < j->size(); ++i) {
        const nlohmann::json& e = (*j)[i];
        if (!e.is_string() || e.get<std::string>().empty())
            throw Error(Field(key) + "[" + std::to_string(i) + "]", "expected a non-empty string, got " + Shown(e));
        out.push_back(e.get<std::string>());
    }
    return out;
}

const nlohmann::json& JsonFields::RequiredObject(const char* key) {
    const nlohmann::json* j = Get(key, true);
    if (!j->is_object()) throw Error(Field(key), "expected a JSON object, got " + Shown(*j));
    return *j;
}

const nlohmann::json& JsonFields::Array(const char* key) {
    const nlohmann::json* j = Get(key, true);
    if (!j->is_array()) throw Error(Field(key), "expected an array, got " + std::string(j->type_name()));
    return *j;
}

const nlohmann::json* JsonFields::Object(const char* key) {
    const nlohmann::json* j = Get(key, false);
    if (j && !j->is_object()) throw Error(Field(key), "expected a JSON object, got " + Shown(*j));
    return j;
}

void RejectUnknownKeys(const nlohmann::json& object, const std::vector<std::string>& known, const std::string& path) {
    for (auto it = object.begin(); it != object.end(); ++it) {
        const std::string& k = it.key();
        if (std::find(known.begin(), known.end(), k) != known.end()) continue;
        std::string best;
        size_t best_d = 3;  // suggest only close matches
        for (const std::string& c : known) {
            if (k.size() > c.size() + best_d) continue;  // too far to suggest (and a 1 MB key costs nothing)
            size_t d = EditDistance(k, c);
            if (d < best_d) best_d = d, best = c;
        }
        std::string msg = "unknown field";
        if (!best.empty()) msg += " (did you mean \"" + best + "\"?)";
        throw Error(path.empty() ? Clip(k) : path + "." + Clip(k), msg);
    }
}

void JsonFields::RejectUnknown() const { RejectUnknownKeys(obj_, known_, path_); }

}  // namespace sc
