#include "config/system_edits.h"

#include <algorithm>

#include "config/error.h"
#include "config/numbers.h"

namespace sc {

namespace {

const char* const kLevelFields = "size bandwidth latency efficiency in_network_reduction oversubscription wraparound";
const char* const kAcceleratorFields =
    "hbm_tbps memory_gb bf16_tflops fp16_tflops fp8_tflops fp4_tflops power_w power_limit_w collective_ctas";

bool OnOff(const std::string& key, const std::string& v) {
    if (v == "on" || v == "true" || v == "1") return true;
    if (v == "off" || v == "false" || v == "0") return false;
    throw Error(key, "expected on or off, got \"" + Clip(v) + "\"");
}

Provenance Edited(const std::string& edit) { return {"EDITED", {"--system-set " + Clip(edit)}, "", ""}; }

// Index of the level a key names: its position or its name.
size_t LevelIndex(const System& sys, const std::string& key, const std::string& name) {
    for (size_t i = 0; i < sys.levels.size(); ++i)
        if (sys.levels[i].name == name) return i;
    return static_cast<size_t>(ParseIntegerIn(key, name, 0, static_cast<long long>(sys.levels.size()) - 1));
}

void EditLevel(System& sys, const std::string& key, const std::string& level, const std::string& field,
               const std::string& value, const std::string& edit) {
    bool named = false;
    for (const NetworkLevel& l : sys.levels) named |= l.name == level;
    bool numeric = !level.empty() && level.find_first_not_of("0123456789") == std::string::npos;
    if (!named && !numeric) {
        std::string valid;
        for (size_t i = 0; i < sys.levels.size(); ++i)
            valid += (i ? ", " : "") + std::to_string(i) + " (" + sys.levels[i].name + ")";
        throw Error(
            key, "\"" + Clip(level) + "\" is not a level of " + sys.id + "; levels: " + valid + ", or \"accelerator\"");
    }
    if (!named && std::stoull(level.substr(0, 9)) >= sys.levels.size())
        throw Error(key, "level " + Clip(level) + " does not exist; " + sys.id + " has levels 0 to " +
                             std::to_string(sys.levels.size() - 1));
    NetworkLevel& lv = sys.levels[LevelIndex(sys, key, level)];
    if (field == "size") lv.size = static_cast<int>(ParseIntegerIn(key, value, 1, kMaxRanks));
    else if (field == "bandwidth") lv.bandwidth_gbps = ParseNumberIn(key, value, kMinLevelGbps, 1e6);
    else if (field == "latency") lv.latency_us = ParseNumberIn(key, value, 0, 1e6);
    else if (field == "efficiency") lv.efficiency = ParseNumberIn(key, value, kMinLevelEfficiency, 1);
    else if (field == "in_network_reduction") {
        const bool on = OnOff(key, value);
        if (on && lv.kind == LevelKind::torus)
            throw Error(key, lv.name + " is a torus level: it has no switch to reduce in");
        lv.in_network_reduction = on;
    } else if (field == "wraparound") {
        if (lv.kind != LevelKind::torus)
            throw Error(key, std::string("only torus levels close into a ring; ") + lv.name + " is " + NameOf(lv.kind));
        lv.wraparound = OnOff(key, value);
    } else if (field == "oversubscription") {
        if (!IsFatTree(lv.kind))
            throw Error(
                key,
                std::string("only fat-tree levels (two_tier, rail_optimized, three_tier) have an oversubscription; ") +
                    lv.name + " is " + NameOf(lv.kind));
        lv.oversubscription = ParseNumberIn(key, value, 1, 1e6);
    } else {
        throw Error(key, "\"" + Clip(field) + "\" is not a level field; valid: " + kLevelFields);
    }
    lv.provenance[field] = Edited(edit);
}

void EditAccelerator(System& sys, const std::string& key, const std::string& field, const std::string& value,
                     const std::string& edit) {
    Accelerator& a = sys.accelerator;
    auto tflops = [&](std::optional<double>& slot) { slot = ParseNumberIn(key, value, kMinTflops, 1e9); };
    if (field == "hbm_tbps") a.hbm_bandwidth_tbps = ParseNumberIn(key, value, kMinHbmTbps, 1e6);
    else if (field == "memory_gb") {
        a.hbm_capacity_gb_marketing = ParseNumberIn(key, value, 0, 1e9, true);
        a.capacity_uses_marketing = true;
    } else if (field == "bf16_tflops") tflops(a.matrix.bf16);
    else if (field == "fp16_tflops") tflops(a.matrix.fp16);
    else if (field == "fp8_tflops") tflops(a.matrix.fp8);
    else if (field == "fp4_tflops") tflops(a.matrix.fp4);
    else if (field == "power_w") a.board_power_w = ParseNumberIn(key, value, 0, 1e6, true);
    else if (field == "power_limit_w") a.power_limit_w = ParseNumberIn(key, value, 0, 1e6, true);  // range: below
    else if (field == "collective_ctas") {
        // 0: collectives that hold no SM (copy-engine or NIC-driven); otherwise a share of the SMs.
        if (a.sm_count <= 0 && value != "0")
            throw Error(key, a.id + " gives no SM count, so a CTA count has nothing to be a share of; valid: 0");
        a.collective_ctas = static_cast<int>(ParseIntegerIn(key, value, 0, std::max(0, a.sm_count - 1)));
    } else throw Error(key, "\"" + Clip(field) + "\" is not an accelerator field; valid: " + kAcceleratorFields);
    a.provenance[field] = Edited(edit);
}

}  // namespace

void ApplySystemEdits(System& target, const std::vector<std::string>& edits) {
    System sys = target;  // edited whole or not at all: a rejected edit leaves `target` as it was
    for (const std::string& edit : edits) {
        const size_t eq = edit.find('=');
        if (eq == std::string::npos || eq == 0)
            throw Error("--system-set", "expected key=value (e.g. 1.oversubscription=2), got \"" + Clip(edit) + "\"");
        const std::string key = edit.substr(0, eq), value = edit.substr(eq + 1);
        const size_t dot = key.rfind('.');
        if (dot == std::string::npos || dot == 0 || dot + 1 == key.size())
            throw Error(key, "expected <level>.<field> or accelerator.<field>; level fields: " +
                                 std::string(kLevelFields) + "; accelerator fields: " + kAcceleratorFields);
        const std::string owner = key.substr(0, dot), field = key.substr(dot + 1);
        if (owner == "accelerator") EditAccelerator(sys, key, field, value, edit);
        else EditLevel(sys, key, owner, field, value, edit);
    }
    if (!edits.empty()) {
        ValidateSystemHierarchy(sys);
        ValidateSystemLevels(sys);
    }
    target = std::move(sys);
}

}  // namespace sc
