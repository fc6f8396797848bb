// Presets the serving tests read: models, systems (optionally with another accelerator) and the calibration.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "inference/iteration_cost.h"
#include "inference/serving_config.h"
#include "preset_files.h"
#include "test_util.h"

namespace servetest {

inline const std::string kRoot = SC_SOURCE_DIR;

// Llama 3 70B's linear weights of one decoder layer (arXiv:2407.21783 Table 3): QKV 8192 x (64 + 2 x 8) x 128,
// output 64 x 128 x 8192, SwiGLU up (2 x 28672) and down (28672) against 8192.
inline constexpr double kLlama70bLayerLinear = 8192.0 * 80 * 128 + 64.0 * 128 * 8192 + 3.0 * 8192 * 28672;

inline const sc::CalibrationTable& Calibration() { return sctest::MeasuredCalibration(); }

// The same calibration without a serving engine's own GEMM curves (GemmCurve::engine): GEMMs at the library's curves,
// for closed forms of the byte model and for kernels the engine's measured Linear is not (W4A8's mixed-input GEMM).
inline const sc::CalibrationTable& LibraryCalibration() {
    static const sc::CalibrationTable library = [] {
        sc::CalibrationTable t = Calibration();
        std::erase_if(t.gemm, [](const sc::GemmCurve& g) { return !g.engine.empty(); });
        return t;
    }();
    return library;
}

// The TFLOPS data/calibration.json records for `series`'s GEMM of m x n x k (batch 1); 0 when it has none.
inline double MeasuredGemmTflops(const std::string& series, double m, double n, double k) {
    static const nlohmann::json data = nlohmann::json::parse(sctest::ReadFile(kRoot + "/data/calibration.json"));
    for (const nlohmann::json& r : data.at("gemm")) {
        const nlohmann::json& s = r.at("shape");
        if (r.at("series") == series && s.at("m") == m && s.at("n") == n && s.at("k") == k && s.value("batch", 1) == 1)
            return r.at("measured").at("tflops");
    }
    return 0;
}

// The accelerator preset `id` (read once).
inline const sc::Accelerator& Part(const std::string& id) {
    static std::map<std::string, sc::Accelerator> cache;
    auto it = cache.find(id);
    if (it != cache.end()) return it->second;
    return cache[id] = sc::ParseAccelerator(sctest::ReadFile(kRoot + "/presets/hardware/" + id + ".json"));
}

// The records of data/calibration.json's array `key` (the file read once).
inline const nlohmann::json& CalibrationRecords(const std::string& key) {
    static const nlohmann::json data = nlohmann::json::parse(sctest::ReadFile(kRoot + "/data/calibration.json"));
    return data.at(key);
}

// A derived curve is its series' records, point for point: `points` maps each record's x to its y.
inline void ExpectCurveIsRecords(const sc::MeasuredCurve& c, const std::map<double, double>& points) {
    ASSERT_EQ(c.x.size(), points.size());
    size_t i = 0;
    for (const auto& [x, y] : points) {
        EXPECT_EQ(c.x[i], x);
        EXPECT_EQ(c.y[i], y);
        ++i;
    }
}

// The error ParseCalibration gives for presets/calibration/measured.json with the first `from` after the array
// `section` replaced by `to` ("" and a failed EXPECT when `from` is not there).
inline std::string CalibrationErrorWith(const std::string& section, const std::string& from, const std::string& to) {
    std::string t = sctest::ReadFile(kRoot + "/presets/calibration/measured.json");
    const size_t at = t.find(from, t.find("\"" + section + "\""));
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) return "";
    t.replace(at, from.size(), to);
    return sctest::ErrorOf([&] { sc::ParseCalibration(t); });
}

inline sc::ModelConfig Model(const std::string& id) {
    return sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/" + id + ".json"));
}

// The system preset `id`, its accelerator replaced by `accelerator` when given (same scale-up fabric).
inline const sc::System& System(const std::string& id, const std::string& accelerator = "") {
    static std::map<std::string, sc::System> cache;
    const std::string key = id + "/" + accelerator;
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    sc::System s = sctest::LoadSystemPreset(id);
    if (!accelerator.empty())
        s.accelerator = sc::ParseAccelerator(sctest::ReadFile(kRoot + "/presets/hardware/" + accelerator + ".json"));
    return cache[key] = s;
}

// The iteration cost of `c`'s model, precision and TP on a DGX H100 node with the measured calibration, the
// context-attention kernel looked up at 1,024 tokens.
inline sc::IterationCost H100Cost(const sc::ServingConfig& c) {
    return sc::IterationCost(c.model, c.precision, c.pool.tp, System("dgx-h100-superpod"), &Calibration(), 1024,
                             c.engine.max_tokens);
}

// One pool of `tp` GPUs serving `requests` requests of fixed input and output lengths (the rest as
// ServingConfig's defaults).
// One decode step of Llama 3 70B in bf16 on `tp` H100s of dgx-h100-superpod (8 sequences, 1,024 cached tokens each)
// under two calibration tables: the step's breakdown under each (the NCCL-curve tests compare them).
inline std::pair<sc::IterationBreakdown, sc::IterationBreakdown> DecodeStepUnder(int tp, const sc::CalibrationTable& a,
                                                                                 const sc::CalibrationTable& b) {
    const sc::ModelConfig m = Model("llama3-70b");
    const sc::System& sys = System("dgx-h100-superpod");
    sc::ServingPrecision bf16;
    const sc::IterationCost x(m, bf16, tp, sys, &a, 1024, 1), y(m, bf16, tp, sys, &b, 1024, 1);
    sc::BatchShape step;
    step.decodes = step.sequences = step.logits = 8;
    step.decode_keys = 8 * 1024.0;
    return {x.Breakdown(step), y.Breakdown(step)};
}

inline sc::ServingConfig Base(const std::string& model, int tp, int input, int output, long long requests) {
    sc::ServingConfig c;
    c.model = Model(model);
    c.pool.tp = tp;
    c.workload.requests = requests;
    c.workload.input.min = c.workload.input.max = input;
    c.workload.output.min = c.workload.output.max = output;
    return c;
}

// The same with uniform input and output lengths ({min, max} tokens) and the arrival process `arrival`.
inline sc::ServingConfig Uniform(const std::string& model, int tp, long long requests, std::pair<int, int> input,
                                 std::pair<int, int> output, sc::ArrivalKind arrival) {
    sc::ServingConfig c = Base(model, tp, 0, 0, requests);
    c.workload.input = sc::LengthDist::Uniform(input.first, input.second);
    c.workload.output = sc::LengthDist::Uniform(output.first, output.second);
    c.workload.arrival = arrival;
    return c;
}

// One client sending `requests` prompts one after another, each a shared prefix of `prefix` tokens (one of
// `count`) then `own` tokens of its own, and one output token, with prefix caching: every request is one prefill
// iteration (the prefix-cache and prefix-tier tests' workload).
inline sc::ServingConfig OnePrefixClient(long long requests, int count, int prefix, int own) {
    sc::ServingConfig c = Base("llama3-8b", 1, own, 1, requests);
    c.workload.arrival = sc::ArrivalKind::closed_loop;
    c.workload.concurrency = 1;
    c.workload.prefixes = {count, prefix, 0};
    c.engine.prefix_caching = true;
    return c;
}

// One prefill of `computed` tokens after `cached` ones already in the cache, and its one logit row, by `cost`.
inline double PrefillSeconds(const sc::IterationCost& cost, double cached, double computed) {
    sc::BatchShape b;
    b.AddPrefillChunk(cached, computed, 0);
    b.logits = 1;
    return cost.Breakdown(b).total();
}

}  // namespace servetest
