#include "config/overrides.h"

#include <algorithm>

#include "config/error.h"
#include "config/json_fields.h"

namespace sc {

static constexpr long kMaxSetKeyParts = 8;  // "moe.experts" has 2

std::string ApplyOverrides(std::string_view json_text, const std::vector<std::string>& overrides,
                           const std::string& what) {
    nlohmann::json doc = ParseJsonText(json_text, what);
    for (const std::string& o : overrides) {
        size_t eq = o.find('=');
        if (eq == std::string::npos || eq == 0)
            throw Error("--set", "\"" + Clip(o) + "\" is not of the form key=value");
        std::string key = o.substr(0, eq), value = o.substr(eq + 1);
        // JSON when it reads as JSON (depth-limited like every input), else the text as a string.
        nlohmann::json v =
            nlohmann::json::accept(value) ? ParseJsonText(value, "--set " + Clip(key)) : nlohmann::json(value);
        if (std::count(key.begin(), key.end(), '.') >= kMaxSetKeyParts)
            throw Error("--set",
                        "\"" + Clip(key) + "\" has more than " + std::to_string(kMaxSetKeyParts) + " dotted parts");
        nlohmann::json* node = &doc;
        size_t start = 0;
        for (;;) {
            size_t dot = key.find('.', start);
            std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            if (node->is_null()) *node = nlohmann::json::object();
            if (!node->is_object()) throw Error(Clip(key), "cannot set a field inside a non-object");
            node = &(*node)[part];
            if (dot == std::string::npos) break;
            start = dot + 1;
        }
        *node = v;
    }
    return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sc
