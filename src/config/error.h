// The one error type of the core. Every bad input throws sc::Error with a message that names the
// field, the value and what would be valid ("tp=3 does not divide 32 attention heads").
// Boundaries (CLI main, Embind API, the ImGui app) catch it; nothing inside the core does.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace sc {

// What a message may carry of user input: control bytes shown as \xNN (a NUL would end the C string and
// hide the message), and at most `limit` bytes (a 1 MB unknown key is not echoed whole).
inline std::string Printable(std::string_view s, size_t limit) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < s.size() && out.size() < limit; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    if (out.size() >= limit && s.size() > limit) out += "... (" + std::to_string(s.size()) + " bytes)";
    return out;
}

struct Error : std::runtime_error {
    std::string field;  // dotted path of the offending input field, empty when not about one field
    Error(std::string field_, const std::string& message)
        : std::runtime_error(Compose(field_, message)), field(Printable(field_, 200)) {}

private:
    static std::string Compose(const std::string& field, const std::string& message) {
        std::string m = Printable(message, 2000);
        return field.empty() ? m : Printable(field, 200) + ": " + m;
    }
};

}  // namespace sc
