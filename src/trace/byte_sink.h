// Where trace writers put their bytes. The core never opens files: the CLI wraps a file, the wasm build a
// JS stream, tests a string. Writers call Write once per finished record (an ET node, a JSON event), so
// a sink that talks to the OS should buffer; the two sinks here are the in-memory ones the core needs.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace sc {

struct ByteSink {
    virtual ~ByteSink() = default;
    // `bytes` is only valid during the call: writers reuse the buffer behind it.
    virtual void Write(std::string_view bytes) = 0;
};

// Collects everything in memory (tests, small traces, the wasm download path).
struct StringSink final : ByteSink {
    std::string bytes;
    void Write(std::string_view b) override { bytes.append(b); }
};

// Measures output size without storing it: "how big would the trace be" and the write benchmark.
struct CountingSink final : ByteSink {
    uint64_t count = 0;
    void Write(std::string_view b) override { count += b.size(); }
};

}  // namespace sc
