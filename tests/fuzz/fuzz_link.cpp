// Page links (src/link/config_link.h): whatever a URL hash decompresses to. Every input is either refused with
// sc::Error or read into a configuration that encodes and reads back as the same one (the round trip is what a
// shared link relies on: the page that opens it must see what the page that made it saw).
#include "fuzz_target.h"
#include "link/config_link.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return scfuzz::Expect([&] {
        const sc::ConfigLink link = sc::DecodeConfigLink(scfuzz::AsText(data, size));
        const std::string text = sc::EncodeConfigLink(link);  // an sc::Error here is a bug: decoded means encodable
        if (!(sc::DecodeConfigLink(text) == link)) __builtin_trap();
        if (sc::EncodeConfigLink(sc::DecodeConfigLink(text)) != text) __builtin_trap();  // the encoding is canonical
    });
}
