#include "config/overrides.h"

#include "config/error.h"
#include "config/json_fields.h"

namespace sc {

std::string ApplyOverrides(std::string_view json_text, const std::vector<std::string>& overrides,
                           const std::string& what) {
    nlohmann::json doc = ParseJsonText(json_text, what);
    for (const std::string& o : overrides) {
        size_t eq = o.find('=');
        if (eq == std::string::npos || eq == 0)
            throw Error("--set", "\"" + o + "\" is not of the form key=value");
        std::string key = o.substr(0, eq), value = o.substr(eq + 1);
        nlohmann::json v = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
        if (v.is_discarded()) v = value;
        nlohmann::json* node = &doc;
        size_t start = 0;
        for (;;) {
            size_t dot = key.find('.', start);
            std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            if (node->is_null()) *node = nlohmann::json::object();
            if (!node->is_object()) throw Error(key, "cannot set a field inside a non-object");
            node = &(*node)[part];
            if (dot == std::string::npos) break;
            start = dot + 1;
        }
        *node = v;
    }
    return doc.dump();
}

}  // namespace sc
