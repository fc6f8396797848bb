// Request traces (`stagecraft serve --trace FILE`, src/inference/trace_parse.h): every text is refused with
// sc::Error naming the line and column, or read into requests with non-decreasing, finite arrival times and
// lengths of at least one token, which a small model then serves to the last request.
#include <cmath>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "fuzz_target.h"
#include "inference/engine.h"
#include "inference/trace_parse.h"

namespace {

void Check(bool ok) {
    if (!ok) __builtin_trap();
}

void Replay(const std::vector<sc::TraceRequest>& trace) {
    static const sc::System h100 = sc::ParseSystem(scfuzz::ReadSource("presets/systems/dgx-h100-superpod.json"),
                                                   scfuzz::ReadSource("presets/hardware/h100-sxm.json"));
    static const sc::ModelConfig model = sc::ParseModelConfig(scfuzz::ReadSource("presets/models/llama3-8b.json"));
    Check(!trace.empty());
    double last = 0;
    int longest = 0;
    for (const sc::TraceRequest& r : trace) {
        Check(std::isfinite(r.arrival) && r.arrival >= last && r.input >= 1 && r.output >= 1);
        last = r.arrival;
        longest = std::max(longest, r.input + r.output);
    }
    // The harness bounds one input's work (a long trace is a long run, not a bug); the parse above saw it all.
    if (trace.size() > 64 || longest > 65536) return;
    sc::ServingConfig c;
    c.model = model;
    c.workload.arrival = sc::ArrivalKind::trace;
    c.workload.trace = trace;
    c.workload.requests = static_cast<long long>(trace.size());
    c.engine.scheduling = sc::SchedulingPolicy::priority;
    const sc::ServingResult r = sc::SimulateServing(c, h100, nullptr).result;
    Check(r.completed == c.workload.requests);
    Check(std::isfinite(r.duration) && r.duration >= last && std::isfinite(r.e2e.max) && r.e2e.max >= 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return scfuzz::Expect([&] { Replay(sc::ParseTraceCsv(scfuzz::AsText(data, size))); });
}
