// Strict reading of JSON objects for the hardware and calibration presets: every key looked up is known,
// Done() rejects the others with a "did you mean" hint; errors name the field by its dotted path.
// (JsonFields in json_fields.h plus arrays and required strings; both share RejectUnknownKeys.)
#pragma once
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.h"
#include "config/json_fields.h"

namespace sc::strict_json {

using nlohmann::json;

// Strict reader of one JSON object: every key looked up is "known"; Done() rejects the others.
class Reader {
public:
    Reader(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {
        if (!obj_.is_object()) throw Error(path_, "expected a JSON object, got " + std::string(obj_.type_name()));
    }
    std::string Field(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }
    const json* Get(const char* key, bool required) {
        known_.emplace_back(key);
        auto it = obj_.find(key);
        if (it == obj_.end()) {
            if (required) throw Error(Field(key), "missing required field");
            return nullptr;
        }
        return &*it;
    }
    bool Has(const char* key) const { return obj_.contains(key); }
    std::string Str(const char* key) {
        const json* j = Get(key, true);
        if (!j->is_string()) throw Error(Field(key), "expected a string, got " + Shown(*j));
        std::string s = j->get<std::string>();
        if (s.empty()) throw Error(Field(key), "must not be empty");
        return s;
    }
    std::string Str(const char* key, const std::string& fallback) {
        const json* j = Get(key, false);
        if (!j) return fallback;
        if (!j->is_string()) throw Error(Field(key), "expected a string, got " + Shown(*j));
        return j->get<std::string>();
    }
    const json& Obj(const char* key) {
        const json* j = Get(key, true);
        if (!j->is_object()) throw Error(Field(key), "expected a JSON object, got " + Shown(*j));
        return *j;
    }
    std::vector<std::string> Strings(const char* key) {
        const json* j = Get(key, true);
        if (!j->is_array() || j->empty()) throw Error(Field(key), "expected a non-empty array of strings");
        std::vector<std::string> out;
        for (size_t i = 0; i < j->size(); ++i) {
            const json& e = (*j)[i];
            if (!e.is_string() || e.get<std::string>().empty())
                throw Error(Field(key) + "[" + std::to_string(i) + "]", "expected a non-empty string, got " + Shown(e));
            out.push_back(e.get<std::string>());
        }
        return out;
    }
    double Number(const char* key) {
        const json* j = Get(key, true);
        if (!j->is_number()) throw Error(Field(key), "expected a number, got " + Shown(*j));
        double d = j->get<double>();
        if (!std::isfinite(d)) throw Error(Field(key), "must be finite, got " + Shown(*j));
        return d;
    }
    bool Bool(const char* key) {
        const json* j = Get(key, true);
        if (!j->is_boolean()) throw Error(Field(key), "expected true or false, got " + Shown(*j));
        return j->get<bool>();
    }
    int Int(const char* key) { return JsonInt(*Get(key, true), Field(key), -2147483647, 2147483647); }
    const json& Array(const char* key) {
        const json* j = Get(key, true);
        if (!j->is_array()) throw Error(Field(key), "expected an array, got " + std::string(j->type_name()));
        return *j;
    }
    void Done() const { RejectUnknownKeys(obj_, known_, path_); }

private:
    const json& obj_;
    std::string path_;
    std::vector<std::string> known_;
};

}  // namespace sc::strict_json

