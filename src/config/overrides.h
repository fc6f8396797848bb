// "key=value" overrides applied to a JSON document before it is parsed, so an edited field goes
// through the same strict validation as the file (`--set layers=48`, `--set moe.top_k=4`).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sc {

// Each override is "dotted.key=value"; value is read as JSON when it parses (numbers, true/false),
// else as a string. Throws sc::Error naming the override when it is malformed.
std::string ApplyOverrides(std::string_view json_text, const std::vector<std::string>& overrides,
                           const std::string& what);

}  // namespace sc
