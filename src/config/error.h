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
        : std::runtime_error(field_.empty() ? message : field_ + ": " + message), field(std::move(field_)) {}
};

}  // namespace sc
