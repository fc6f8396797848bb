// The one error type of the core. Every bad input throws sc::Error with a message that names the
// field, the value and what would be valid ("tp=3 does not divide 32 attention heads").
// Boundaries (CLI main, Embind API, the ImGui app) catch it; nothing inside the core does.
#pragma once
#include <stdexcept>
#include <string>

namespace sc {

struct Error : std::runtime_error {
    std::string field;  // dotted path of the offending input field, empty when not about one field
    Error(std::string field_, const std::string& message)
        : std::runtime_error(Capped(field_.empty() ? message : field_ + ": " + message)), field(std::move(field_)) {}

    // The last guard against echoing a huge input whole (callers clip values to 80 characters already).
    static constexpr size_t kMaxMessage = 2000;
    static std::string Capped(const std::string& m) {
        if (m.size() <= kMaxMessage) return m;
        return m.substr(0, kMaxMessage) + "... (" + std::to_string(m.size()) + " characters)";
    }
};

}  // namespace sc
