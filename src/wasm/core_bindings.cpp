// The core's Embind API: what web workers and the wasm tests under Node call. Every function
// catches sc::Error and returns {ok:false, error} instead of throwing into JavaScript.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include "config/error.h"
#include "config/overrides.h"
#include "graph/model_stats.h"
#include "report/model_report.h"

using emscripten::val;

namespace {

val Result(bool ok, const std::string& key, const std::string& value) {
    val r = val::object();
    r.set("ok", ok);
    r.set(key, value);
    return r;
}

std::vector<std::string> Strings(const val& array) {
    std::vector<std::string> out;
    if (array.isUndefined() || array.isNull()) return out;
    unsigned n = array["length"].as<unsigned>();
    for (unsigned i = 0; i < n; ++i) out.push_back(array[i].as<std::string>());
    return out;
}

// estimateModel(presetJson, ["layers=48", ...], "text"|"json") -> {ok, text} | {ok:false, error}
val EstimateModel(std::string preset_json, val overrides, std::string format) {
    try {
        std::vector<std::string> sets = Strings(overrides);
        sc::ModelConfig m = sc::ParseModelConfig(sets.empty() ? preset_json : sc::ApplyOverrides(preset_json, sets, "model"));
        sc::ModelStats st = sc::ComputeModelStats(m);
        return Result(true, "text", format == "json" ? sc::ModelReportJson(m, st) : sc::ModelReportText(m, st));
    } catch (const sc::Error& e) {
        return Result(false, "error", e.what());
    }
}

}  // namespace

EMSCRIPTEN_BINDINGS(stagecraft_core) {
    emscripten::function("estimateModel", &EstimateModel);
}
