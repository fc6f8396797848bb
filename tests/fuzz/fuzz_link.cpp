// Page links (src/link/config_link.h): whatever a URL hash decompresses to. Every input is either refused with
// sc::Error or read into a configuration that encodes and reads back as the same one (the round trip is what a
// shared link relies on: the page that opens it must see what the page that made it saw).
#include "fuzz_target.h"
#include "link/config_link.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    sc::ConfigLink link;
    try {
        link = sc::DecodeConfigLink(scfuzz::AsText(data, size));
    } catch (const sc::Error& e) {
        if (std::string_view(e.what()).empty()) __builtin_trap();
        return 0;  // refused, with a message: the one allowed way to say no
    }
    // From here nothing may throw: what decodes must encode (any exception escapes to libFuzzer as a crash).
    std::string text;
    try {
        text = sc::EncodeConfigLink(link);
    } catch (const sc::Error&) {
        __builtin_trap();  // Encode refused what Decode accepted
    }
    if (!(sc::DecodeConfigLink(text) == link)) __builtin_trap();
    if (sc::EncodeConfigLink(sc::DecodeConfigLink(text)) != text) __builtin_trap();  // the encoding is canonical
    return 0;
}
