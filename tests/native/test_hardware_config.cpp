// Hardware, system and calibration presets: every preset parses, every number equals its source in
// data/ (accelerators.json, calibration.json), malformed inputs give errors naming the field, and the
// measured-curve interpolation is exact at the measured points and monotone between them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "config/calibration.h"
#include "config/error.h"
#include "config/hardware_config.h"
#include "test_util.h"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kRoot = SC_SOURCE_DIR;
const std::string kShared = kRoot + "/data/";  // the project's copy of the reference data

std::vector<fs::path> Presets(const std::string& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(kRoot + "/presets/" + dir))
        if (e.path().extension() == ".json" && e.path().filename() != "index.json") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

std::string HardwareText(const std::string& id) {
    return sctest::ReadFile(kRoot + "/presets/hardware/" + id + ".json");
}
std::string SystemText(const std::string& id) { return sctest::ReadFile(kRoot + "/presets/systems/" + id + ".json"); }

using sctest::ErrorOf;
using sctest::FieldOf;

const json* At(const json& j, const std::string& dotted) {
    const json* o = &j;
    size_t start = 0;
    while (start <= dotted.size()) {
        size_t dot = dotted.find('.', start);
        std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!o->is_object() || !o->contains(key)) return nullptr;
        o = &(*o)[key];
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return o;
}

// Every object inside `j` that has key `key`, with its JSON path.
void Collect(const json& j, const std::string& path, const char* key,
             std::vector<std::pair<std::string, const json*>>* out) {
    if (j.is_object()) {
        if (j.contains(key)) out->push_back({path, &j});
        for (auto it = j.begin(); it != j.end(); ++it)
            Collect(*it, path.empty() ? it.key() : path + "." + it.key(), key, out);
    } else if (j.is_array()) {
        for (size_t i = 0; i < j.size(); ++i) Collect(j[i], path + "[" + std::to_string(i) + "]", key, out);
    }
}

const json& AcceleratorsJson() {
    static const json j = json::parse(sctest::ReadFile(kShared + "accelerators.json"));
    return j;
}
const json& CalibrationJson() {
    static const json j = json::parse(sctest::ReadFile(kShared + "calibration.json"));
    return j;
}
const json& AcceleratorRecord(const std::string& name) {
    for (const json& r : AcceleratorsJson())
        if (r["name"] == name) return r;
    ADD_FAILURE() << "no accelerators.json record named " << name;
    static const json none;
    return none;
}

// ---------------------------------------------------------------------------------------------- hardware

TEST(Hardware, RequiredPresetsExist) {
    for (const char* id : {"a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200", "b300", "gb200", "mi300x"})
        EXPECT_TRUE(fs::exists(kRoot + "/presets/hardware/" + id + ".json")) << id;
}

TEST(Hardware, EveryPresetParsesAndIsNamedByItsId) {
    auto files = Presets("hardware");
    ASSERT_GE(files.size(), 7u);
    for (const fs::path& p : files) {
        SCOPED_TRACE(p.string());
        sc::Accelerator a = sc::ParseAccelerator(sctest::ReadFile(p.string()));
        EXPECT_EQ(a.id, p.stem().string());
        EXPECT_GT(a.MemoryBytes(), 0);
        EXPECT_GT(a.scale_up_domain, 0);
        // Every parsed field keeps its provenance, each with at least one source.
        for (const auto& [field, prov] : a.provenance) {
            EXPECT_FALSE(prov.sources.empty()) << field;
            EXPECT_FALSE(prov.status.empty()) << field;
        }
    }
}

// presets/<dir>/index.json lists the presets for the web page; it must list exactly the files present.
TEST(Hardware, IndexesListEveryPreset) {
    for (const char* dir : {"hardware", "systems", "models", "inference"}) {
        json index = json::parse(sctest::ReadFile(kRoot + "/presets/" + dir + "/index.json"));
        std::set<std::string> listed(index.begin(), index.end()), present;
        for (const fs::path& p : Presets(dir)) present.insert(p.filename().string());
        EXPECT_EQ(listed, present) << dir;
    }
}

// Every accelerator preset can be planned on a cluster: some system preset names it (issue 11: "presets for every
// accelerator in presets/hardware/").
TEST(Hardware, EveryAcceleratorHasASystem) {
    std::set<std::string> used;
    for (const fs::path& p : Presets("systems")) used.insert(json::parse(sctest::ReadFile(p.string()))["accelerator"]);
    for (const fs::path& p : Presets("hardware")) {
        const std::string id = json::parse(sctest::ReadFile(p.string()))["id"];
        EXPECT_TRUE(used.count(id)) << "no system preset uses " << id;
    }
}

// Values copied from accelerators.json ("from": path) must equal it, and every datasheet number of the
// record must be used by the preset.
TEST(Hardware, ValuesEqualAcceleratorsJson) {
    const char* covered[] = {
        "peak_tflops_dense.fp32", "peak_tflops_dense.tf32",     "peak_tflops_dense.bf16",
        "peak_tflops_dense.fp16", "peak_tflops_dense.fp8",      "peak_tflops_dense.fp4",
        "hbm_capacity_gb",        "hbm_bandwidth_tbps",         "scale_up.bandwidth_gbps_unidirectional",
        "scale_up.domain_size",   "scale_out_nic_gbps_per_gpu", "board_power_w"};
    for (const fs::path& p : Presets("hardware")) {
        SCOPED_TRACE(p.string());
        json preset = json::parse(sctest::ReadFile(p.string()));
        const json& rec = AcceleratorRecord(preset["accelerators_json_name"]);
        ASSERT_FALSE(rec.is_null());
        EXPECT_EQ(preset["name"], rec["name"]);
        std::vector<std::pair<std::string, const json*>> froms;
        Collect(preset, "", "from", &froms);
        std::set<std::string> used;
        for (const auto& [path, q] : froms) {
            std::string from = (*q)["from"];
            const json* src = At(rec, from);
            ASSERT_NE(src, nullptr) << path << " cites missing accelerators.json field " << from;
            EXPECT_EQ((*q)["value"], (*src)["value"]) << path << " vs accelerators.json " << from;
            EXPECT_EQ((*q)["status"], (*src)["status"]) << path;
            used.insert(from);
        }
        for (const char* f : covered)
            if (At(rec, f)) {
                EXPECT_TRUE(used.count(f)) << "accelerators.json " << f << " is not used by the preset";
            }

        // And the parsed struct carries the same numbers.
        sc::Accelerator a = sc::ParseAccelerator(sctest::ReadFile(p.string()));
        EXPECT_EQ(a.hbm_bandwidth_tbps, rec["hbm_bandwidth_tbps"]["value"].get<double>());
        EXPECT_EQ(a.hbm_capacity_gb_marketing, rec["hbm_capacity_gb"]["value"].get<double>());
        EXPECT_EQ(a.scale_up_gbps_per_direction,
                  rec["scale_up"]["bandwidth_gbps_unidirectional"]["value"].get<double>());
        EXPECT_EQ(a.scale_up_domain, rec["scale_up"]["domain_size"]["value"].get<int>());
        const json& nic = rec["scale_out_nic_gbps_per_gpu"]["value"];  // null: not published (parsed as 0)
        EXPECT_EQ(a.nic_gbit_per_gpu, nic.is_null() ? 0.0 : nic.get<double>());
        const json& bf16 = rec["peak_tflops_dense"]["bf16"]["value"];
        if (bf16.is_null()) EXPECT_FALSE(a.matrix.bf16.has_value());
        else EXPECT_EQ(*a.matrix.bf16, bf16.get<double>());
        const json& fp4 = rec["peak_tflops_dense"]["fp4"]["value"];
        EXPECT_EQ(a.matrix.fp4.has_value(), !fp4.is_null());
    }
}

TEST(Hardware, PeakFlops) {
    sc::Accelerator a100 = sc::ParseAccelerator(HardwareText("a100-80gb"));
    sc::Accelerator h100 = sc::ParseAccelerator(HardwareText("h100-sxm"));
    sc::Accelerator mi300x = sc::ParseAccelerator(HardwareText("mi300x"));
    EXPECT_DOUBLE_EQ(sc::PeakFlops(h100, sc::Precision::bf16), 989.5e12);
    EXPECT_DOUBLE_EQ(sc::PeakFlops(h100, sc::Precision::fp8), 1979e12);
    EXPECT_DOUBLE_EQ(sc::PeakFlops(a100, sc::Precision::fp16), 312e12);
    EXPECT_DOUBLE_EQ(sc::PeakTflops(a100, sc::Precision::fp32), 19.5);     // no FP32 matrix path: vector rate
    EXPECT_DOUBLE_EQ(sc::PeakTflops(mi300x, sc::Precision::fp32), 163.4);  // CDNA3 matrix FP32
    std::string e = ErrorOf([&] { sc::PeakFlops(a100, sc::Precision::fp4); });
    EXPECT_NE(e.find("fp4 is not supported by NVIDIA A100-SXM4-80GB"), std::string::npos) << e;
    EXPECT_EQ(FieldOf([&] { sc::PeakFlops(a100, sc::Precision::fp8); }), "precision");
    EXPECT_NO_THROW(sc::PeakFlops(sc::ParseAccelerator(HardwareText("b200")), sc::Precision::fp4));
}

TEST(Hardware, CapacityUsedIsTheUsableGiB) {
    sc::Accelerator h100 = sc::ParseAccelerator(HardwareText("h100-sxm"));
    EXPECT_FALSE(h100.capacity_uses_marketing);
    EXPECT_DOUBLE_EQ(h100.MemoryBytes(), h100.hbm_capacity_gib_usable * 1073741824.0);
    json j = json::parse(HardwareText("h100-sxm"));
    j["capacity_used"] = "hbm_capacity_GB_marketing";
    EXPECT_DOUBLE_EQ(sc::ParseAccelerator(j.dump()).MemoryBytes(), 80e9);
}

// Mutates the H100 preset with `edit` and returns the parse error.
std::pair<std::string, std::string> BadAccelerator(const std::function<void(json&)>& edit) {
    json j = json::parse(HardwareText("h100-sxm"));
    edit(j);
    std::string text = j.dump();
    return {FieldOf([&] { sc::ParseAccelerator(text); }), ErrorOf([&] { sc::ParseAccelerator(text); })};
}

TEST(Hardware, MalformedInputsNameTheField) {
    auto [f1, e1] = BadAccelerator([](json& j) { j["hbm_bandwith_TBps"] = j["hbm_bandwidth_TBps"]; });
    EXPECT_EQ(e1, "hbm_bandwith_TBps: unknown field (did you mean \"hbm_bandwidth_TBps\"?)");

    auto [f2, e2] = BadAccelerator([](json& j) { j["hbm_bandwidth_TBps"]["value"] = -3.35; });
    EXPECT_EQ(e2, "hbm_bandwidth_TBps: must be positive, got -3.35 TB/s");

    auto [f3, e3] = BadAccelerator([](json& j) { j["scale_up"]["bandwidth_GBps_per_direction"]["value"] = 0; });
    EXPECT_EQ(e3, "scale_up.bandwidth_GBps_per_direction: must be positive, got 0 GB/s");

    auto [f4, e4] = BadAccelerator([](json& j) { j["scale_out_nic_Gbps_per_gpu"]["unit"] = "GB/s"; });
    EXPECT_EQ(f4, "scale_out_nic_Gbps_per_gpu.unit");

    auto [f5, e5] = BadAccelerator([](json& j) { j["matrix_tflops"]["bf16"]["value"] = nullptr; });
    EXPECT_EQ(f5, "matrix_tflops.bf16.status");  // null needs NOT_SUPPORTED_OR_NOT_PUBLISHED

    auto [f6, e6] = BadAccelerator([](json& j) { j["matrix_tflops"]["fp8"].erase("sources"); });
    EXPECT_EQ(e6, "matrix_tflops.fp8.sources: missing required field");

    auto [f7, e7] = BadAccelerator([](json& j) { j["scale_up"]["domain_size"]["value"] = 7.5; });
    EXPECT_EQ(e7, "scale_up.domain_size: must be a positive integer, got 7.5");

    // Positive but too slow for a step's time to stay in double's range (ValidateAcceleratorRates).
    auto [fs, es] = BadAccelerator([](json& j) { j["vector_tflops"]["fp32"]["value"] = 1e-300; });
    EXPECT_EQ(es, "vector_tflops.fp32: must be at least 0.001 TFLOPS (1 GFLOP/s), got 1e-300");
    auto [fh, eh] = BadAccelerator([](json& j) { j["hbm_bandwidth_TBps"]["value"] = 1e-4; });
    EXPECT_EQ(fh, "hbm_bandwidth_TBps") << eh;

    auto [f8, e8] = BadAccelerator([](json& j) { j["matrix_tflops"]["fp16"]["status"] = "VERIFED"; });
    EXPECT_EQ(f8, "matrix_tflops.fp16.status");

    auto [f9, e9] = BadAccelerator([](json& j) { j["matrix_tflops"].erase("fp4"); });
    EXPECT_EQ(e9, "matrix_tflops.fp4: missing required field");

    auto [f10, e10] = BadAccelerator([](json& j) { j["capacity_used"] = "marketing"; });
    EXPECT_EQ(f10, "capacity_used");

    auto [f11, e11] = BadAccelerator([](json& j) { j["scale_up"]["bandwidth_GBps_per_direction"]["value"] = "450"; });
    EXPECT_EQ(e11, "scale_up.bandwidth_GBps_per_direction.value: expected a number, got \"450\"");

    EXPECT_NE(ErrorOf([] { sc::ParseAccelerator("{\"id\": "); }).find("not valid JSON"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------- systems

sc::System LoadSystem(const std::string& id) {
    json s = json::parse(SystemText(id));
    return sc::ParseSystem(SystemText(id), HardwareText(s["accelerator"]));
}

TEST(HardwareSystems, RequiredPresetsExist) {
    for (const char* id :
         {"dgx-a100-superpod", "dgx-h100-superpod", "gb200-nvl72", "mi300x-cluster", "h100-fullflat", "gb200-fullflat",
          "dgx-h200-superpod", "gb300-nvl72", "h800-cluster", "mi355x-cluster", "dgx-b300-superpod"})
        EXPECT_TRUE(fs::exists(kRoot + "/presets/systems/" + id + ".json")) << id;
}

TEST(HardwareSystems, EveryPresetParses) {
    auto files = Presets("systems");
    ASSERT_GE(files.size(), 6u);
    for (const fs::path& p : files) {
        SCOPED_TRACE(p.string());
        json j = json::parse(sctest::ReadFile(p.string()));
        sc::System s = sc::ParseSystem(sctest::ReadFile(p.string()), HardwareText(j["accelerator"]));
        EXPECT_EQ(s.id, p.stem().string());
        ASSERT_FALSE(s.levels.empty());
        for (size_t i = 0; i < s.levels.size(); ++i) {
            const sc::NetworkLevel& l = s.levels[i];
            EXPECT_GT(l.EffectiveGBps(), 0);
            for (const char* k :
                 {"size", "bandwidth_GBps_per_direction", "latency_us", "efficiency", "in_network_reduction"})
                EXPECT_FALSE(l.provenance.at(k).sources.empty()) << "levels[" << i << "]." << k;
            // A scale-up level is the accelerator's own fabric.
            if (l.kind == sc::LevelKind::scale_up) {
                EXPECT_EQ(l.size, s.accelerator.scale_up_domain);
                EXPECT_EQ(l.bandwidth_gbps, s.accelerator.scale_up_gbps_per_direction);
            }
            // A switched scale-out level runs at the NIC rate.
            if (l.kind == sc::LevelKind::two_tier) {
                EXPECT_DOUBLE_EQ(l.bandwidth_gbps, s.accelerator.NicGBps());
            }
        }
    }
}

TEST(HardwareSystems, MegatronClusterShape) {
    sc::System s = LoadSystem("dgx-a100-superpod");
    ASSERT_EQ(s.levels.size(), 2u);
    EXPECT_EQ(s.levels[0].size, 8);
    EXPECT_EQ(s.levels[0].bandwidth_gbps, 300);
    EXPECT_FALSE(s.levels[0].in_network_reduction);  // no NVLink SHARP on A100
    EXPECT_EQ(s.levels[1].bandwidth_gbps, 25);       // 200 Gb/s HDR per GPU
    EXPECT_GE(s.TotalAccelerators(), 3072);          // largest Megatron run in training_measured.json
    EXPECT_EQ(s.LevelForSpan(8), 0);
    EXPECT_EQ(s.LevelForSpan(9), 1);
    EXPECT_EQ(FieldOf([&] { s.LevelForSpan(s.TotalAccelerators() + 1); }), "span");
    EXPECT_EQ(LoadSystem("gb200-nvl72").LevelForSpan(72), 0);
    EXPECT_EQ(LoadSystem("h100-fullflat").levels.size(), 1u);
}

// Efficiencies that cite a calibration.json record ("calibration": {series, key, value, nominal, factor?,
// n_ranks?, message_bytes?}) must find that record and equal value * factor / nominal.
TEST(HardwareSystems, EfficienciesTraceToCalibrationJson) {
    int checked = 0;
    for (const fs::path& p : Presets("systems")) {
        json sys = json::parse(sctest::ReadFile(p.string()));
        std::vector<std::pair<std::string, const json*>> cites;
        Collect(sys, "", "calibration", &cites);
        for (const auto& [path, q] : cites) {
            SCOPED_TRACE(p.stem().string() + " " + path);
            const json& c = (*q)["calibration"];
            bool found = false;
            for (const json& r : CalibrationJson()["collectives"]) {
                if (r["series"] != c["series"]) continue;
                if (c.contains("n_ranks") && r["n_ranks"] != c["n_ranks"]) continue;
                if (c.contains("message_bytes") && r["message_bytes"] != c["message_bytes"]) continue;
                if (r["measured"].contains(c["key"]) && r["measured"][c["key"].get<std::string>()] == c["value"])
                    found = true;
            }
            EXPECT_TRUE(found) << "no record " << c.dump();
            double factor = c.value("factor", 1.0);
            double expect = c["value"].get<double>() * factor / c["nominal"].get<double>();
            EXPECT_NEAR((*q)["value"].get<double>(), expect, 5e-4);
            ++checked;
        }
    }
    EXPECT_GE(checked, 6);
}

std::pair<std::string, std::string> BadSystem(const std::string& id, const std::function<void(json&)>& edit) {
    json j = json::parse(SystemText(id));
    std::string acc = HardwareText(j["accelerator"]);
    edit(j);
    std::string text = j.dump();
    return {FieldOf([&] { sc::ParseSystem(text, acc); }), ErrorOf([&] { sc::ParseSystem(text, acc); })};
}

TEST(HardwareSystems, MalformedInputsNameTheField) {
    auto [f1, e1] = BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][0]["efficiency"]["value"] = 1.2; });
    EXPECT_EQ(e1, "levels[0].efficiency: must be in [0.01, 1] (measured busbw / nominal bandwidth), got 1.2");

    auto [f2, e2] = BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][1]["efficiency"]["value"] = 0; });
    EXPECT_EQ(f2, "levels[1].efficiency");

    auto [f3, e3] =
        BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][1]["bandwidth_GBps_per_direction"]["value"] = -50; });
    EXPECT_EQ(e3, "levels[1].bandwidth_GBps_per_direction: must be positive, got -50 GB/s");

    auto [f4, e4] = BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][1]["size"]["value"] = 8; });
    EXPECT_EQ(f4, "levels[1].size");
    EXPECT_NE(e4.find("must be larger than levels[0].size = 8"), std::string::npos) << e4;

    auto [f5, e5] = BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][1]["size"]["value"] = 1020; });
    EXPECT_EQ(e5, "levels[1].size: 1020 is not a multiple of levels[0].size = 8");

    auto [f6, e6] = BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][1]["kind"] = "two_teir"; });
    EXPECT_EQ(f6, "levels[1].kind");
    EXPECT_NE(e6.find("did you mean \"two_tier\""), std::string::npos) << e6;

    auto [f7, e7] =
        BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][0]["latency_ns"] = j["levels"][0]["latency_us"]; });
    EXPECT_EQ(e7, "levels[0].latency_ns: unknown field (did you mean \"latency_us\"?)");

    auto [f8, e8] = BadSystem("dgx-h100-superpod",
                              [](json& j) { j["levels"][0]["oversubscription"] = j["levels"][1]["oversubscription"]; });
    EXPECT_EQ(f8, "levels[0].oversubscription");

    auto [f9, e9] = BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][1].erase("oversubscription"); });
    EXPECT_EQ(e9, "levels[1].oversubscription: missing required field");

    auto [f10, e10] =
        BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][1]["bandwidth_GBps_per_direction"]["value"] = 60; });
    EXPECT_EQ(f10, "levels[1].bandwidth_GBps_per_direction");  // more than the 400 Gb/s NIC
    EXPECT_NE(e10.find("exceeds the NIC"), std::string::npos) << e10;

    auto [f11, e11] = BadSystem("dgx-h100-superpod", [](json& j) {
        j["levels"][0]["size"]["value"] = 16;
        j["levels"][1]["size"]["value"] = 1024;
    });
    EXPECT_EQ(f11, "levels[0].size");  // more than the 8-GPU NVLink domain

    auto [f12, e12] = BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][1]["latency_us"]["value"] = -1; });
    EXPECT_EQ(f12, "levels[1].latency_us");

    auto [f13, e13] = BadSystem("dgx-h100-superpod", [](json& j) { j["levels"] = json::array(); });
    EXPECT_EQ(f13, "levels");

    auto [f14, e14] =
        BadSystem("dgx-h100-superpod", [](json& j) { j["levels"][1]["in_network_reduction"]["value"] = "yes"; });
    EXPECT_EQ(f14, "levels[1].in_network_reduction.value");

    // The accelerator preset must be the one the system names.
    std::string e = ErrorOf([] { sc::ParseSystem(SystemText("dgx-h100-superpod"), HardwareText("a100-80gb")); });
    EXPECT_EQ(e, "accelerator: system names \"h100-sxm\" but the accelerator preset given is \"a100-80gb\"");
}

// ---------------------------------------------------------------------------------------------- calibration

const sc::CalibrationTable& Table() {
    static const sc::CalibrationTable t =
        sc::ParseCalibration(sctest::ReadFile(kRoot + "/presets/calibration/measured.json"));
    return t;
}

TEST(HardwareCalibration, InterpolationIsLogLinearAndClamped) {
    sc::MeasuredCurve c{{1e3, 1e5, 1e7}, {1.0, 11.0, 5.0}, {}};  // log_x empty: Interpolate computes it
    EXPECT_DOUBLE_EQ(sc::Interpolate(c, 1e4), 6.0);              // halfway in log size
    EXPECT_DOUBLE_EQ(sc::Interpolate(c, 1e6), 8.0);
    EXPECT_DOUBLE_EQ(sc::Interpolate(c, 10), 1.0);    // below: first value
    EXPECT_DOUBLE_EQ(sc::Interpolate(c, 1e12), 5.0);  // above: the plateau
    EXPECT_EQ(FieldOf([&] { sc::Interpolate(c, 0); }), "size");
    sc::MeasuredCurve one{{4096}, {7.0}, {}};
    EXPECT_DOUBLE_EQ(sc::Interpolate(one, 1), 7.0);
    EXPECT_DOUBLE_EQ(sc::Interpolate(one, 1e9), 7.0);
}

TEST(HardwareCalibration, ParsesAndCoversTheCollectives) {
    const sc::CalibrationTable& t = Table();
    std::set<sc::CollectiveOp> ops;
    for (const auto& c : t.collectives) ops.insert(c.op);
    EXPECT_EQ(ops.size(), 4u);  // all-reduce, all-gather, reduce-scatter, all-to-all
    EXPECT_GE(t.gemm.size(), 6u);
    EXPECT_GE(t.memory_bandwidth.size(), 20u);
    // Every accelerator named by a table row has a preset.
    auto check = [](const std::vector<std::string>& ids) {
        for (const auto& id : ids) EXPECT_TRUE(fs::exists(kRoot + "/presets/hardware/" + id + ".json")) << id;
    };
    for (const auto& c : t.collectives) check(c.accelerators);
    for (const auto& g : t.gemm) check(g.accelerators);
    for (const auto& g : t.gemm_max_achievable) check(g.accelerators);
    for (const auto& m : t.memory_bandwidth) check(m.accelerators);
}

const char* ToCalibrationOp(sc::CollectiveOp op) {
    return op == sc::CollectiveOp::all_to_all ? "alltoall" : sc::NameOf(op);
}

// The bus bandwidth of a record: measured, or derived from its measured time where the source gives times
// (nccl-tests' busbw on n ranks: 2 (n - 1) / n x bytes / time for an all-reduce, (n - 1) / n x bytes / time for an
// all-gather or reduce-scatter of a whole buffer of `bytes`; the derivation is checked).
double RecordBusBandwidth(const json& r) {
    if (r["measured"].contains("busbw_GBps")) return r["measured"]["busbw_GBps"].get<double>();
    if (!r["measured"].contains("time_us")) return -1;
    const double steps = r["op"] == "all_reduce"                                                           ? 2
                         : r["op"] == "all_gather" || r["op"] == "reduce_scatter" || r["op"] == "alltoall" ? 1
                                                                                                           : 0;
    if (steps == 0) return -1;
    const double n = r["n_ranks"].get<double>(), bytes = r["message_bytes"].get<double>();
    const double busbw = r["derived"]["busbw_GBps"].get<double>();
    EXPECT_NEAR(busbw, steps * (n - 1) / n * bytes / (r["measured"]["time_us"].get<double>() * 1e-6) / 1e9,
                0.0005 + busbw * 1e-6)
        << r["series"] << " at " << bytes << " B";
    return busbw;
}

// Each point is a calibration.json record (same series, op, size and busbw); the curve returns it exactly.
TEST(HardwareCalibration, CollectivePointsAreMeasuredAndExact) {
    int points = 0;
    for (const sc::CollectiveCurve& c : Table().collectives) {
        SCOPED_TRACE(c.id);
        for (size_t i = 0; i < c.busbw.x.size(); ++i) {
            bool found = false;
            for (const json& r : CalibrationJson()["collectives"]) {
                if (r["series"] != c.series || r["op"] != ToCalibrationOp(c.op) || r["setup"] != c.setup) continue;
                if (!r["message_bytes"].is_number() || r["message_bytes"].get<double>() != c.busbw.x[i]) continue;
                if (RecordBusBandwidth(r) == c.busbw.y[i]) found = true;
            }
            EXPECT_TRUE(found) << "point " << c.busbw.x[i] << " B, " << c.busbw.y[i] << " GB/s";
            EXPECT_EQ(sc::BusBandwidthGBps(c, c.busbw.x[i]), c.busbw.y[i]);
            ++points;
        }
        // Clamped at the ends with the first value and the plateau.
        EXPECT_EQ(sc::BusBandwidthGBps(c, c.busbw.x.front() / 4), c.busbw.y.front());
        EXPECT_EQ(sc::BusBandwidthGBps(c, c.busbw.x.back() * 4), c.busbw.y.back());
    }
    EXPECT_GE(points, 240);
}

// Between two measured points the curve stays between them and moves one way; where the data rises over a
// range, so does the curve.
TEST(HardwareCalibration, MonotoneBetweenPoints) {
    auto check = [](const sc::MeasuredCurve& c, const std::string& id) {
        for (size_t i = 0; i + 1 < c.x.size(); ++i) {
            double lo = std::min(c.y[i], c.y[i + 1]), hi = std::max(c.y[i], c.y[i + 1]);
            bool rising = c.y[i + 1] >= c.y[i];
            double prev = c.y[i];
            for (int s = 1; s <= 16; ++s) {
                double x = std::exp(std::log(c.x[i]) + (std::log(c.x[i + 1]) - std::log(c.x[i])) * s / 17.0);
                double y = sc::Interpolate(c, x);
                EXPECT_GE(y, lo) << id << " at " << x;
                EXPECT_LE(y, hi) << id << " at " << x;
                if (rising) EXPECT_GE(y, prev) << id << " at " << x;
                else EXPECT_LE(y, prev) << id << " at " << x;
                prev = y;
            }
        }
    };
    for (const auto& c : Table().collectives) check(c.busbw, c.id);
    for (const auto& g : Table().gemm) check(g.tflops, g.id);
}

TEST(HardwareCalibration, GemmAndHbmValuesAreMeasured) {
    for (const sc::GemmCurve& g : Table().gemm) {
        SCOPED_TRACE(g.id);
        for (size_t i = 0; i < g.tflops.x.size(); ++i) {
            bool found = false;
            for (const json& r : CalibrationJson()["gemm"]) {
                if (r["series"] != g.series) continue;
                const json& s = r["shape"];
                double flops =
                    2.0 * s["batch"].get<double>() * s["m"].get<double>() * s["n"].get<double>() * s["k"].get<double>();
                if (flops == g.tflops.x[i] && r["measured"]["tflops"].get<double>() == g.tflops.y[i]) found = true;
            }
            EXPECT_TRUE(found) << g.tflops.x[i];
            EXPECT_EQ(sc::Interpolate(g.tflops, g.tflops.x[i]), g.tflops.y[i]);
        }
    }
    for (const sc::HbmMeasurement& m : Table().memory_bandwidth) {
        bool found = false;
        for (const json& r : CalibrationJson()["memory_bandwidth"])
            if (r["series"] == m.series && r["op"] == m.op &&
                (r["measured"].value("TBps", -1.0) == m.tbps ||
                 (m.op == "Quantize" && r["derived"].value("TBps", -1.0) == m.tbps)))  // a timed kernel's median
                found = true;
        EXPECT_TRUE(found) << m.series << " " << m.op;
    }
    for (const sc::GemmMaxAchievable& m : Table().gemm_max_achievable) {
        bool found = false;
        for (const json& r : CalibrationJson()["gemm"])
            if (r["series"] == m.series && r["hardware"] == m.hardware &&
                r["measured"]["tflops"].get<double>() == m.tflops)
                found = true;
        EXPECT_TRUE(found) << m.series << " " << m.hardware;
    }
}

// Every attention point is a calibration.json record (same series, implementation, seqlen, efficiency).
TEST(HardwareCalibration, AttentionPointsAreMeasured) {
    int points = 0;
    for (const sc::AttentionCurve& c : Table().attention) {
        SCOPED_TRACE(c.id);
        for (size_t i = 0; i < c.efficiency.x.size(); ++i) {
            bool found = false;
            for (const json& r : CalibrationJson()["attention"]) {
                if (r["series"] != c.series || !r["shape"]["seqlen"].is_number()) continue;
                if (r["shape"]["seqlen"].get<double>() != c.efficiency.x[i]) continue;
                if (r["derived"]["efficiency"].get<double>() == c.efficiency.y[i] &&
                    c.setup.rfind(r["implementation"].get<std::string>() + ",", 0) == 0)
                    found = true;
            }
            EXPECT_TRUE(found) << c.efficiency.x[i];
            ++points;
        }
    }
    EXPECT_GE(points, 90);
}

TEST(HardwareCalibration, AttentionLookups) {
    const sc::CalibrationTable& t = Table();
    // Causal forward exists for FA2/FA3 at head dim 128; cuDNN has only non-causal curves; no causal backward.
    const sc::AttentionCurve* f3 = sc::FindAttentionCurve(t, "h100-sxm", sc::AttentionKernel::flash3, true, true, 128);
    ASSERT_NE(f3, nullptr);
    EXPECT_TRUE(f3->causal);
    EXPECT_EQ(f3->head_dim, 128);
    EXPECT_DOUBLE_EQ(sc::Interpolate(f3->efficiency, 8192), 0.609);
    const sc::AttentionCurve* cu = sc::FindAttentionCurve(t, "h100-sxm", sc::AttentionKernel::cudnn, true, true, 128);
    ASSERT_NE(cu, nullptr);
    EXPECT_FALSE(cu->causal);
    const sc::AttentionCurve* cub = sc::FindAttentionCurve(t, "h100-sxm", sc::AttentionKernel::cudnn, false, true, 128);
    ASSERT_NE(cub, nullptr);  // the FA3 paper's backward panel, cuDNN bars (data/calibration.json)
    EXPECT_FALSE(cub->causal);
    EXPECT_DOUBLE_EQ(sc::Interpolate(cub->efficiency, 8192), 0.524);
    const sc::AttentionCurve* cub64 =
        sc::FindAttentionCurve(t, "h100-sxm", sc::AttentionKernel::cudnn, false, true, 64);
    ASSERT_NE(cub64, nullptr);
    EXPECT_EQ(cub64->head_dim, 64);
    EXPECT_DOUBLE_EQ(sc::Interpolate(cub64->efficiency, 512), 0.269);
    // Nearest head dimension: 192 (MLA's q/k) takes the 256 or 128 curve, never 64.
    const sc::AttentionCurve* b = sc::FindAttentionCurve(t, "h100-sxm", sc::AttentionKernel::flash2, false, true, 100);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->head_dim, 128);
    EXPECT_EQ(sc::FindAttentionCurve(t, "a100-80gb", sc::AttentionKernel::flash2, true, true, 128), nullptr);
}

// The Blackwell parts read cuDNN's own SDPA runs (NVIDIA/cudnn-frontend's training benchmark, bf16): B200 causal only,
// GB200 and GB300 with and without the mask; B300 reads GB300's (the same Blackwell Ultra GPU). Efficiency is against
// each part's dense bf16 peak: B200 32K causal forward 1,514.8 of 2,250 TFLOPS, GB300 1,953 of 2,500 against GB200's
// 1,622 (Blackwell Ultra's attention, not its GEMMs, is what differs).
TEST(HardwareCalibration, BlackwellPartsReadCudnnsOwnAttentionRuns) {
    const sc::CalibrationTable& t = Table();
    auto curve = [&](const char* acc, bool forward, bool causal) {
        return sc::FindAttentionCurve(t, acc, sc::AttentionKernel::cudnn, forward, causal, 128);
    };
    const sc::AttentionCurve* b200 = curve("b200", true, true);
    ASSERT_NE(b200, nullptr);
    EXPECT_EQ(b200->series, "cudnnfe-b200-bf16");
    EXPECT_TRUE(b200->causal);
    EXPECT_DOUBLE_EQ(sc::Interpolate(b200->efficiency, 32768), 0.673);
    EXPECT_TRUE(curve("b200", true, false)->causal);  // no unmasked run on B200: the causal curve stands in
    for (const char* acc : {"gb200", "gb300"})
        for (bool fwd : {true, false})
            for (bool causal : {true, false}) {
                const sc::AttentionCurve* c = curve(acc, fwd, causal);
                ASSERT_NE(c, nullptr) << acc;
                EXPECT_EQ(c->causal, causal) << acc;
                EXPECT_EQ(c->series, std::string("cudnnfe-") + acc + "-llama31-bf16");
            }
    EXPECT_DOUBLE_EQ(sc::Interpolate(curve("gb200", true, true)->efficiency, 32768), 0.649);
    EXPECT_DOUBLE_EQ(sc::Interpolate(curve("gb300", true, true)->efficiency, 32768), 0.781);
    EXPECT_EQ(curve("b300", true, true), curve("gb300", true, true));
    EXPECT_EQ(curve("b300", false, true), curve("gb300", false, true));
}

TEST(HardwareCalibration, AttentionCurveErrorsNameTheField) {
    std::string text = sctest::ReadFile(kRoot + "/presets/calibration/measured.json");
    auto broken = [&](const std::string& from, const std::string& to) {
        std::string t = text;
        size_t at = t.find(from, t.find("\"attention\""));
        EXPECT_NE(at, std::string::npos) << from;
        t.replace(at, from.size(), to);
        return sctest::ErrorOf([&] { sc::ParseCalibration(t); });
    };
    EXPECT_NE(broken("\"kernel\": \"flash2\"", "\"kernel\": \"flash9\"").find("attention[0].kernel"),
              std::string::npos);
    EXPECT_NE(broken("\"direction\": \"forward\"", "\"direction\": \"sideways\"").find("attention[0].direction"),
              std::string::npos);
    EXPECT_NE(broken("[512, 0.285]", "[512, 1.5]").find("attention[0].points[0]"), std::string::npos);
    EXPECT_NE(broken("\"causal\": false", "\"causal\": 0").find("attention[0].causal"), std::string::npos);
    // A required size left out is an error naming it, not a default (once read through an overload that took the
    // maximum for a fallback).
    EXPECT_NE(broken("\"head_dim\": 64,", "").find("attention[0].head_dim"), std::string::npos);
    std::string no_m = text;
    const size_t point = no_m.find("{\"m\": ", no_m.find("\"gemm\""));
    ASSERT_NE(point, std::string::npos);
    no_m.erase(point + 1, no_m.find(',', point) + 2 - (point + 1));  // {"m": 1024, "n": ... -> {"n": ...
    const std::string e = sctest::ErrorOf([&] { sc::ParseCalibration(no_m); });
    EXPECT_NE(e.find("gemm[0].points[0]"), std::string::npos) << e;
    EXPECT_NE(e.find("\"m\""), std::string::npos) << e;  // "k: unknown field (did you mean "m"?)": one letter off
}

TEST(HardwareCalibration, Lookups) {
    const sc::CalibrationTable& t = Table();
    const sc::CollectiveCurve* h100 =
        sc::FindCollectiveCurve(t, "h100-sxm", sc::CollectiveOp::all_reduce, "scale_up", 8);
    ASSERT_NE(h100, nullptr);
    EXPECT_EQ(h100->series, "azure-ndv5-h100-allreduce-nvls");
    EXPECT_DOUBLE_EQ(sc::BusBandwidthGBps(*h100, 8589934592.0), 478.87);
    EXPECT_EQ(sc::FindCollectiveCurve(t, "tpu-v5p", sc::CollectiveOp::all_reduce, "scale_up", 8), nullptr);
    const sc::CollectiveCurve* ag = sc::FindCollectiveCurve(t, "h200", sc::CollectiveOp::all_gather, "scale_up", 8);
    ASSERT_NE(ag, nullptr);
    EXPECT_EQ(ag->series, "aiconf-nccl2.29.2-h200-allgather-8gpu-default");  // 21 points over the 16 GiB run's one
    EXPECT_EQ(sc::BusBandwidthGBps(*ag, ag->busbw.x[10]), ag->busbw.y[10]);
    const sc::GemmCurve* bf16 = sc::FindGemmCurve(t, "h100-sxm", sc::Precision::bf16);
    ASSERT_NE(bf16, nullptr);
    EXPECT_DOUBLE_EQ(sc::GemmTflops(*bf16, 4096, 4096, 4096), 783.33);
    EXPECT_EQ(sc::FindGemmCurve(t, "a100-80gb", sc::Precision::fp8), nullptr);
    EXPECT_DOUBLE_EQ(sc::AchievedHbmTBps(t, "h100-sxm", "Copy"), 2.9);
    EXPECT_EQ(sc::AchievedHbmTBps(t, "b200", "Copy"), 0);
    EXPECT_DOUBLE_EQ(sc::HostLinkGBps(t, "h100-sxm", sc::HostLinkOp::host_to_device), 51);
    EXPECT_DOUBLE_EQ(sc::HostLinkGBps(t, "h800", sc::HostLinkOp::device_to_host), 52);
    EXPECT_DOUBLE_EQ(sc::HostLinkGBps(t, "gb200", sc::HostLinkOp::host_to_device), 201);
    EXPECT_EQ(sc::HostLinkGBps(t, "a100-80gb", sc::HostLinkOp::host_to_device), 0);  // left out: see the rule
}

std::string BadCalibration(const std::function<void(json&)>& edit) {
    json j = json::parse(sctest::ReadFile(kRoot + "/presets/calibration/measured.json"));
    edit(j);
    std::string text = j.dump();
    return ErrorOf([&] { sc::ParseCalibration(text); });
}

TEST(HardwareCalibration, MalformedInputsNameTheField) {
    EXPECT_EQ(
        BadCalibration([](json& j) { std::swap(j["collectives"][0]["points"][0], j["collectives"][0]["points"][1]); }),
        "collectives[0].points[1]: sizes must be strictly increasing: 1024 follows 2048");
    EXPECT_EQ(BadCalibration([](json& j) { j["collectives"][0]["points"][3][1] = -1; }),
              "collectives[0].points[3]: value must be zero or positive, got -1");
    EXPECT_EQ(BadCalibration([](json& j) { j["collectives"][0]["points"][0][0] = 0; }),
              "collectives[0].points[0]: size must be positive, got 0");
    EXPECT_EQ(BadCalibration([](json& j) { j["collectives"][2]["scoep"] = "scale_up"; }),
              "collectives[2].scoep: unknown field (did you mean \"scope\"?)");
    EXPECT_EQ(BadCalibration([](json& j) { j["collectives"][0]["op"] = "allreduce"; }).rfind("collectives[0].op:", 0),
              0u);
    EXPECT_EQ(BadCalibration([](json& j) { j["gemm"][0]["points"][0]["tflops"] = 0; }),
              "gemm[0].points[0].tflops: must be positive, got 0");
    EXPECT_EQ(BadCalibration([](json& j) { j["gemm"][0]["dtype"] = "int8"; }).rfind("gemm[0].dtype:", 0), 0u);
    EXPECT_EQ(BadCalibration([](json& j) {
                  j["collectives"][1]["id"] = j["collectives"][0]["id"];
              }).rfind("collectives[1].id:", 0),
              0u);
}

// Every host link row is a calibration.json record (series, hardware, direction, GB/s), both directions of each
// part, on a part with a preset.
TEST(HardwareCalibration, HostLinksAreMeasured) {
    const std::vector<sc::HostLinkMeasurement>& rows = Table().host_link;
    EXPECT_EQ(rows.size(), 10u);
    for (const sc::HostLinkMeasurement& m : rows) {
        const std::string op = m.op == sc::HostLinkOp::host_to_device ? "host_to_device" : "device_to_host";
        bool found = false;
        for (const json& r : CalibrationJson()["memory_bandwidth"])
            if (r["series"] == m.series && r["hardware"] == m.hardware && r.value("op", "") == op &&
                r["measured"].value("GBps", -1.0) == m.gbps)
                found = true;
        EXPECT_TRUE(found) << m.hardware << " " << op;
        for (const std::string& id : m.accelerators) {
            EXPECT_TRUE(fs::exists(kRoot + "/presets/hardware/" + id + ".json")) << id;
            EXPECT_GT(sc::HostLinkGBps(Table(), id, sc::HostLinkOp::host_to_device), 0) << id;
            EXPECT_GT(sc::HostLinkGBps(Table(), id, sc::HostLinkOp::device_to_host), 0) << id;
        }
    }
    EXPECT_NE(BadCalibration([](json& j) { j["host_link"][0]["op"] = "both"; }).find("host_link[0].op"),
              std::string::npos);
    EXPECT_EQ(BadCalibration([](json& j) { j["host_link"][1]["GBps"] = 0; }),
              "host_link[1].GBps: must be positive, got 0");
}

}  // namespace

TEST(HardwareConfig, EditedLevelsAreRechecked) {
    std::ifstream s(std::string(SC_SOURCE_DIR) + "/presets/systems/dgx-h100-superpod.json");
    std::ifstream a(std::string(SC_SOURCE_DIR) + "/presets/hardware/h100-sxm.json");
    std::stringstream ss, as;
    ss << s.rdbuf();
    as << a.rdbuf();
    sc::System sys = sc::ParseSystem(ss.str(), as.str());
    EXPECT_NO_THROW(sc::ValidateSystemLevels(sys));
    sys.levels[1].bandwidth_gbps = 0;
    try {
        sc::ValidateSystemLevels(sys);
        FAIL() << "a zero bandwidth must be refused";
    } catch (const sc::Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "levels[1] (" + sys.levels[1].name + ").bandwidth: must be at least 0.001 GB/s, got 0");
    }
    // Rates so small that a step's time leaves double's range are refused wherever they come from (an edit in
    // the page, a preset): at 1e-320 TFLOPS the estimate printed a NaN MFU.
    const sc::System ok = sys;
    sys = ok, sys.levels[1].bandwidth_gbps = 100, sys.levels[0].efficiency = 1e-300;
    EXPECT_EQ(sctest::FieldOf([&] { sc::ValidateSystemLevels(sys); }),
              "levels[0] (" + sys.levels[0].name + ").efficiency");
    sys = ok, sys.levels[1].bandwidth_gbps = 100, sys.accelerator.matrix.bf16 = 1e-300;
    EXPECT_EQ(sctest::ErrorOf([&] { sc::ValidateSystemLevels(sys); }),
              "matrix_tflops.bf16: must be at least 0.001 TFLOPS (1 GFLOP/s), got 1e-300");
    sys = ok, sys.levels[1].bandwidth_gbps = 100, sys.accelerator.hbm_bandwidth_tbps = 1e-300;
    EXPECT_EQ(sctest::FieldOf([&] { sc::ValidateSystemLevels(sys); }), "hbm_bandwidth_TBps");
}
