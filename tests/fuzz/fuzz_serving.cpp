// Serving descriptions (presets/inference/*.json, src/inference/serving_parse.h). A description that parses and
// names one of the model presets below is then simulated on a fixed DGX H100 system with the measured curves (a
// decode_pool.system, whatever its id, puts the decode pool on a fixed DGX A100 system: heterogeneous pools):
// the run must finish with every request completed and every figure of its result finite and not negative, or
// be refused with sc::Error naming the field. Never a crash, a NaN, a hang or a runaway allocation.
//
// The harness bounds the work of one input, not the product: at most 16 requests and 64K tokens a request
// (libFuzzer's 10 s timeout is for hangs; a valid description of a million requests is a long run, not a bug).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "fuzz_target.h"
#include "inference/engine.h"
#include "inference/serving_parse.h"

namespace {

const sc::ModelConfig* Model(const std::string& id) {
    static const std::map<std::string, sc::ModelConfig> models = [] {
        std::map<std::string, sc::ModelConfig> m;
        for (const char* name : {"llama3-8b", "llama3-70b", "mixtral-8x7b", "deepseek-v3"})
            m[name] = sc::ParseModelConfig(scfuzz::ReadSource(std::string("presets/models/") + name + ".json"));
        return m;
    }();
    const auto it = models.find(id);
    return it == models.end() ? nullptr : &it->second;
}

void Check(bool ok) {
    if (!ok) __builtin_trap();
}

void CheckFigure(double v) { Check(std::isfinite(v) && v >= 0); }

void CheckLatency(const sc::LatencySummary& s) {
    for (double v : {s.mean, s.p50, s.p90, s.p99, s.min, s.max}) CheckFigure(v);
    Check(s.min <= s.max);
}

void Simulate(sc::ServingConfig c, bool decode_on_a100) {
    static const sc::System h100 = sc::ParseSystem(scfuzz::ReadSource("presets/systems/dgx-h100-superpod.json"),
                                                   scfuzz::ReadSource("presets/hardware/h100-sxm.json"));
    static const sc::System a100 = sc::ParseSystem(scfuzz::ReadSource("presets/systems/dgx-a100-superpod.json"),
                                                   scfuzz::ReadSource("presets/hardware/a100-80gb.json"));
    static const sc::CalibrationTable cal =
        sc::ParseCalibration(scfuzz::ReadSource("presets/calibration/measured.json"));
    sc::Workload& w = c.workload;
    if (w.input.max + w.prefixes.tokens > 65536 || w.output.max > 65536 || w.prefixes.count > 4096) return;
    if (static_cast<long long>(w.turns) * (w.input.max + w.output.max) > 65536) return;
    w.requests = std::min<long long>(w.requests, std::max(1, 16 / w.turns));
    c.timelines = std::min(c.timelines, 4);
    const sc::ServingResult r = sc::SimulateServing(c, h100, &cal, decode_on_a100 ? &a100 : nullptr).result;
    Check(r.completed == w.requests * w.turns);
    for (const sc::LatencySummary* s : {&r.ttft, &r.tpot, &r.e2e}) CheckLatency(*s);
    for (double v : {r.duration,
                     r.requests_per_s,
                     r.input_tokens_per_s,
                     r.output_tokens_per_s,
                     r.output_tokens_per_s_per_gpu,
                     r.slo_attainment,
                     r.goodput_requests_per_s,
                     r.kv_occupancy_mean,
                     r.kv_occupancy_peak,
                     r.swapped_bytes,
                     r.mean_batch_tokens,
                     r.mean_running,
                     r.mean_in_system,
                     r.mean_waiting,
                     r.sum_e2e,
                     r.kv_transfer_mean,
                     r.busy.total(),
                     r.prefix_tokens_reused,
                     r.host_tier_loaded_bytes,
                     r.host_tier_stored_bytes,
                     r.remote_tier_loaded_bytes,
                     r.remote_tier_stored_bytes})
        CheckFigure(v);
    Check(r.slo_attainment <= 1 && r.kv_occupancy_peak <= 1 + 1e-9);
    Check(r.prefix_gpu_hits + r.prefix_host_hits + r.prefix_remote_hits <= r.prefix_requests &&
          r.prefix_gpu_hits >= 0 && r.prefix_remote_hits >= 0);
    for (const sc::SeriesPoint& p : r.series)
        for (double v : {p.start, p.end, p.kv_occupancy, p.running, p.waiting}) CheckFigure(v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return scfuzz::Expect([&] {
        sc::ServingDescription d = sc::ParseServingDescription(scfuzz::AsText(data, size));
        const sc::ModelConfig* model = Model(d.model_id);
        if (model == nullptr) return;  // the CLI reads presets/models/<id>.json and refuses a missing file
        d.config.model = *model;
        Simulate(d.config, !d.decode_system_id.empty());
    });
}
