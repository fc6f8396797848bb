// The core's Embind API, which the wasm tests under Node call (the page uses WebApp, app_bindings.cpp). Every
// function goes through scweb::Guard (guard.h): results are {ok: true, ...} or {ok: false, error}, arguments are
// checked.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <malloc.h>

#include "config/error.h"
#include "config/overrides.h"
#include "engine/estimate.h"
#include "guard.h"
#include "report/engine_report.h"

using emscripten::val;

namespace {

// undefined / null: none; otherwise an Array of "key=value" strings.
std::vector<std::string> Overrides(const val& array) {
    std::vector<std::string> out;
    if (array.isUndefined() || array.isNull()) return out;
    if (!val::global("Array").call<bool>("isArray", array))
        throw sc::Error("overrides",
                        "expected an array of \"key=value\" strings, got a " + array.typeOf().as<std::string>());
    const unsigned n = array["length"].as<unsigned>();
    if (n > 10000) throw sc::Error("overrides", std::to_string(n) + " entries; at most 10000");
    for (unsigned i = 0; i < n; ++i) out.push_back(scweb::StringArg(array[i], "overrides[]"));
    return out;
}

// estimateModel(presetJson, ["layers=48", ...], "text"|"json") -> {ok, text} | {ok:false, error}
val EstimateModel(val preset_json, val overrides, val format) {
    return scweb::Guard([&] {
        const std::string text = scweb::StringArg(preset_json, "model");
        const std::string fmt = format.isUndefined() ? "text" : scweb::StringArg(format, "format");
        if (fmt != "text" && fmt != "json") throw sc::Error("format", "\"" + fmt + "\" is not one of text, json");
        std::vector<std::string> sets = Overrides(overrides);
        sc::engine::Request request;  // no cluster: the model's size and FLOPs, as `stagecraft estimate --model`
        request.model = sc::ParseModelConfig(sets.empty() ? text : sc::ApplyOverrides(text, sets, "model"));
        const sc::engine::EstimateResult e = sc::engine::RunEstimate(request);
        val r = val::object();
        r.set("ok", true);
        r.set("text", fmt == "json" ? sc::EstimateReportJson(request, e) : sc::EstimateReportText(request, e));
        return r;
    });
}

// Bytes of the heap in use (for the tests: bad calls must not leak). Through the guard like every call; its
// result is a number, so a failure (none is known: mallinfo is C) reads -1, never a thrown exception.
double HeapInUse() {
    double bytes = 0;
    const std::string error = scweb::ErrorOf([&] { bytes = static_cast<double>(mallinfo().uordblks); });
    return error.empty() ? bytes : -1;
}

}  // namespace

EMSCRIPTEN_BINDINGS(stagecraft_core) {
    emscripten::function("estimateModel", &EstimateModel);
    emscripten::function("heapInUse", &HeapInUse);
}
