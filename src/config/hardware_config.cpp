#include "config/hardware_config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "config/error.h"
#include "config/json_fields.h"
#include "config/numbers.h"

namespace sc {

namespace {

using nlohmann::json;

const char* const kStatuses[] = {"VERIFIED",   "DERIVED", "SECONDARY_UNVERIFIED",
                                 "UNVERIFIED", "ASSUMED", "NOT_SUPPORTED_OR_NOT_PUBLISHED"};
const char* const kNullStatus = "NOT_SUPPORTED_OR_NOT_PUBLISHED";

enum class ValueType { number, boolean };

// One sourced value: {"value", "unit", "status", "sources", "note"?, "from"?, "calibration"?}.
struct Quantity {
    std::optional<double> number;
    bool boolean = false;
};

Quantity ReadQuantity(const json& j, const std::string& path, const char* unit, bool nullable, ValueType type,
                      std::map<std::string, Provenance>* provenance, const std::string& prov_key) {
    JsonFields r(j, path);
    Quantity q;
    Provenance p;
    const json* v = r.Get("value", true);
    std::string unit_got = r.NonEmptyString("unit");
    if (unit_got != unit)
        throw Error(r.Field("unit"), "expected \"" + std::string(unit) + "\", got \"" + unit_got + "\"");
    p.status = r.NonEmptyString("status");
    if (std::find_if(std::begin(kStatuses), std::end(kStatuses), [&](const char* s) { return p.status == s; }) ==
        std::end(kStatuses)) {
        std::string list;
        for (const char* s : kStatuses) list += (list.empty() ? "" : ", ") + std::string(s);
        throw Error(r.Field("status"), "\"" + p.status + "\" is not one of " + list);
    }
    p.sources = r.NonEmptyStrings("sources");
    p.note = r.String("note", "");
    p.from = r.String("from", "");
    if (const json* c = r.Get("calibration", false); c && !c->is_object())
        throw Error(r.Field("calibration"), "expected a JSON object, got " + Shown(*c));
    r.RejectUnknown();

    if (v->is_null()) {
        if (!nullable) throw Error(r.Field("value"), "must not be null");
        if (p.status != kNullStatus)
            throw Error(r.Field("status"),
                        "a null value needs status " + std::string(kNullStatus) + ", got " + p.status);
    } else {
        if (p.status == kNullStatus)
            throw Error(r.Field("status"), std::string(kNullStatus) + " needs a null value, got " + Shown(*v));
        if (type == ValueType::boolean) {
            if (!v->is_boolean()) throw Error(r.Field("value"), "expected true or false, got " + Shown(*v));
            q.boolean = v->get<bool>();
        } else {
            if (!v->is_number()) throw Error(r.Field("value"), "expected a number, got " + Shown(*v));
            double d = v->get<double>();
            if (!std::isfinite(d)) throw Error(r.Field("value"), "must be finite, got " + Shown(*v));
            q.number = d;
        }
    }
    if (provenance) (*provenance)[prov_key] = std::move(p);
    return q;
}

// A required, strictly positive number.
double Positive(const Quantity& q, const std::string& field, const char* unit) {
    double v = *q.number;
    if (!(v > 0)) throw Error(field, "must be positive, got " + ShownNumber(v) + " " + unit);
    return v;
}

std::optional<double> PositiveOrNull(const Quantity& q, const std::string& field, const char* unit) {
    if (!q.number) return std::nullopt;
    return Positive(q, field, unit);
}

int PositiveInteger(const Quantity& q, const std::string& field) {
    double v = *q.number;
    if (v != std::floor(v) || v < 1) throw Error(field, "must be a positive integer, got " + ShownNumber(v));
    return static_cast<int>(IntegerIn(field, v, ShownNumber(v), 1, kMaxRanks));
}

}  // namespace

void ValidateSystemHierarchy(const System& sys) {
    for (size_t i = 0; i < sys.levels.size(); ++i) {
        const NetworkLevel& lv = sys.levels[i];
        const std::string f = "levels[" + std::to_string(i) + "]";
        if (lv.size < 1)
            throw Error(f + ".size", "must be a positive number of accelerators, got " + std::to_string(lv.size));
        if (lv.kind == LevelKind::scale_up && i != 0)
            throw Error(f + ".kind", "a scale_up level must be the first (innermost) level");
        if ((lv.kind == LevelKind::scale_up || lv.kind == LevelKind::torus) &&
            lv.size > sys.accelerator.scale_up_domain)
            throw Error(f + ".size", std::to_string(lv.size) + " exceeds the scale-up domain of " +
                                         sys.accelerator.name + " (" + std::to_string(sys.accelerator.scale_up_domain) +
                                         ")");
        if (lv.kind == LevelKind::torus && i > 0 && sys.levels[i - 1].kind != LevelKind::torus)
            throw Error(f + ".kind",
                        "torus levels are the chips' own links: they must come first (innermost), "
                        "before any switched level; levels[" +
                            std::to_string(i - 1) + "] is " + NameOf(sys.levels[i - 1].kind));
        if (i == 0) continue;
        const int prev = sys.levels[i - 1].size;
        if (lv.size <= prev)
            throw Error(f + ".size", std::to_string(lv.size) + " must be larger than levels[" + std::to_string(i - 1) +
                                         "].size = " + std::to_string(prev) +
                                         " (levels go from innermost to outermost)");
        if (lv.size % prev != 0)
            throw Error(f + ".size", std::to_string(lv.size) + " is not a multiple of levels[" + std::to_string(i - 1) +
                                         "].size = " + std::to_string(prev));
    }
}

const char* NameOf(LevelKind k) {
    switch (k) {
        case LevelKind::scale_up: return "scale_up";
        case LevelKind::two_tier: return "two_tier";
        case LevelKind::fullflat: return "fullflat";
        case LevelKind::rail_optimized: return "rail_optimized";
        case LevelKind::three_tier: return "three_tier";
        case LevelKind::torus: return "torus";
    }
    return "?";
}

double Accelerator::MemoryBytes() const {
    return capacity_uses_marketing ? hbm_capacity_gb_marketing * 1e9 : hbm_capacity_gib_usable * 1073741824.0;
}

Accelerator ParseAccelerator(std::string_view json_text) {
    json root = ParseJsonText(json_text, "accelerator preset");
    JsonFields r(root, "");
    Accelerator a;
    a.id = r.NonEmptyString("id");
    a.name = r.NonEmptyString("name");
    a.vendor = r.NonEmptyString("vendor");
    a.form_factor = r.String("form_factor", "");
    r.String("accelerators_json_name", "");  // cross-reference for the test against data/accelerators.json

    auto quantity = [&](const json& j, const std::string& path, const char* unit, bool nullable) {
        return ReadQuantity(j, path, unit, nullable, ValueType::number, &a.provenance, path);
    };

    {
        JsonFields m(r.RequiredObject("matrix_tflops"), "matrix_tflops");
        struct Slot {
            const char* key;
            std::optional<double>* out;
        };
        Slot slots[] = {{"fp32", &a.matrix.fp32}, {"tf32", &a.matrix.tf32}, {"bf16", &a.matrix.bf16},
                        {"fp16", &a.matrix.fp16}, {"fp8", &a.matrix.fp8},   {"fp4", &a.matrix.fp4}};
        bool any = false;
        for (const Slot& s : slots) {
            std::string f = m.Field(s.key);
            *s.out = PositiveOrNull(quantity(*m.Get(s.key, true), f, "TFLOPS", true), f, "TFLOPS");
            any = any || s.out->has_value();
        }
        m.RejectUnknown();
        if (!any) throw Error("matrix_tflops", "no precision has a value; at least one must");
    }
    {
        JsonFields v(r.RequiredObject("vector_tflops"), "vector_tflops");
        std::string f32 = v.Field("fp32"), b16 = v.Field("bf16");
        a.vector.fp32 = PositiveOrNull(quantity(*v.Get("fp32", true), f32, "TFLOPS", true), f32, "TFLOPS");
        a.vector.bf16 = PositiveOrNull(quantity(*v.Get("bf16", true), b16, "TFLOPS", true), b16, "TFLOPS");
        v.RejectUnknown();
    }
    a.hbm_capacity_gb_marketing =
        Positive(quantity(*r.Get("hbm_capacity_GB_marketing", true), "hbm_capacity_GB_marketing", "GB", false),
                 "hbm_capacity_GB_marketing", "GB");
    a.hbm_capacity_gib_usable =
        Positive(quantity(*r.Get("hbm_capacity_GiB_usable", true), "hbm_capacity_GiB_usable", "GiB", false),
                 "hbm_capacity_GiB_usable", "GiB");
    {
        std::string used = r.NonEmptyString("capacity_used");
        if (used == "hbm_capacity_GB_marketing") a.capacity_uses_marketing = true;
        else if (used != "hbm_capacity_GiB_usable")
            throw Error("capacity_used",
                        "\"" + used + "\" is not one of \"hbm_capacity_GiB_usable\", \"hbm_capacity_GB_marketing\"");
    }
    a.hbm_bandwidth_tbps = Positive(quantity(*r.Get("hbm_bandwidth_TBps", true), "hbm_bandwidth_TBps", "TB/s", false),
                                    "hbm_bandwidth_TBps", "TB/s");
    {
        JsonFields s(r.RequiredObject("scale_up"), "scale_up");
        a.scale_up_technology = s.NonEmptyString("technology");
        std::string bw = s.Field("bandwidth_GBps_per_direction"), dom = s.Field("domain_size");
        a.scale_up_gbps_per_direction =
            Positive(quantity(*s.Get("bandwidth_GBps_per_direction", true), bw, "GB/s", false), bw, "GB/s");
        a.scale_up_domain = PositiveInteger(quantity(*s.Get("domain_size", true), dom, "accelerators", false), dom);
        s.RejectUnknown();
    }
    // Null when not published (TPU v4's data-center network): only a fat-tree level needs it, and rejects it then.
    a.nic_gbit_per_gpu =
        PositiveOrNull(quantity(*r.Get("scale_out_nic_Gbps_per_gpu", true), "scale_out_nic_Gbps_per_gpu", "Gb/s", true),
                       "scale_out_nic_Gbps_per_gpu", "Gb/s")
            .value_or(0);
    a.board_power_w =
        PositiveOrNull(quantity(*r.Get("board_power_W", true), "board_power_W", "W", true), "board_power_W", "W");
    if (r.Has("sm_count"))
        a.sm_count = PositiveInteger(quantity(*r.Get("sm_count", true), "sm_count", "SMs", false), "sm_count");
    if (r.Has("collective_ctas")) {
        a.collective_ctas = PositiveInteger(quantity(*r.Get("collective_ctas", true), "collective_ctas", "CTAs", false),
                                            "collective_ctas");
        if (a.sm_count == 0)
            throw Error("collective_ctas", "needs sm_count: the CTAs of a collective are a share of the SMs");
        if (a.collective_ctas >= a.sm_count)
            throw Error("collective_ctas", std::to_string(a.collective_ctas) + " CTAs leave none of the " +
                                               std::to_string(a.sm_count) + " SMs for compute; valid: 1 to " +
                                               std::to_string(a.sm_count - 1));
    }
    r.RejectUnknown();
    ValidateAcceleratorRates(a);
    a.preset_matrix = a.matrix;
    a.preset_hbm_bandwidth_tbps = a.hbm_bandwidth_tbps;
    return a;
}

System ParseSystem(std::string_view system_json, std::string_view accelerator_json) {
    return ParseSystem(system_json, ParseAccelerator(accelerator_json));
}

System ParseSystem(std::string_view system_json, const Accelerator& accelerator) {
    json root = ParseJsonText(system_json, "system preset");
    JsonFields r(root, "");
    System s;
    s.id = r.NonEmptyString("id");
    s.name = r.NonEmptyString("name");
    s.description = r.String("description", "");
    s.sources = r.NonEmptyStrings("sources");
    std::string acc_id = r.NonEmptyString("accelerator");
    if (acc_id != accelerator.id)
        throw Error("accelerator",
                    "system names \"" + acc_id + "\" but the accelerator preset given is \"" + accelerator.id + "\"");
    s.accelerator = accelerator;

    const json* levels = r.Get("levels", true);
    if (!levels->is_array() || levels->empty())
        throw Error("levels", "expected a non-empty array of network levels, got " + Shown(*levels));
    r.RejectUnknown();

    for (size_t i = 0; i < levels->size(); ++i) {
        std::string path = "levels[" + std::to_string(i) + "]";
        JsonFields l((*levels)[i], path);
        NetworkLevel lv;
        lv.name = l.NonEmptyString("name");
        for (const NetworkLevel& prev : s.levels)
            if (prev.name == lv.name) throw Error(l.Field("name"), "\"" + lv.name + "\" is used by two levels");
        std::string kind = l.NonEmptyString("kind");
        if (kind == "scale_up") lv.kind = LevelKind::scale_up;
        else if (kind == "two_tier") lv.kind = LevelKind::two_tier;
        else if (kind == "fullflat") lv.kind = LevelKind::fullflat;
        else if (kind == "rail_optimized") lv.kind = LevelKind::rail_optimized;
        else if (kind == "three_tier") lv.kind = LevelKind::three_tier;
        else if (kind == "torus") lv.kind = LevelKind::torus;
        else {
            std::string hint;
            for (const char* k : {"scale_up", "two_tier", "fullflat", "rail_optimized", "three_tier", "torus"})
                if (EditDistance(kind, k) <= 2) hint = std::string(" (did you mean \"") + k + "\"?)";
            throw Error(l.Field("kind"), "\"" + kind +
                                             "\" is not one of \"scale_up\", \"two_tier\", \"fullflat\", "
                                             "\"rail_optimized\", \"three_tier\", \"torus\"" +
                                             hint);
        }
        auto quantity = [&](const char* key, const char* unit, ValueType type = ValueType::number) {
            return ReadQuantity(*l.Get(key, true), l.Field(key), unit, false, type, &lv.provenance, key);
        };
        std::string f_size = l.Field("size"), f_bw = l.Field("bandwidth_GBps_per_direction"),
                    f_lat = l.Field("latency_us"), f_eff = l.Field("efficiency"), f_os = l.Field("oversubscription");
        lv.size = PositiveInteger(quantity("size", "accelerators"), f_size);
        lv.bandwidth_gbps = Positive(quantity("bandwidth_GBps_per_direction", "GB/s"), f_bw, "GB/s");
        if (lv.bandwidth_gbps < kMinLevelGbps)
            throw Error(f_bw, "must be at least " + ShownNumber(kMinLevelGbps) + " GB/s, got " +
                                  ShownNumber(lv.bandwidth_gbps));
        lv.latency_us = *quantity("latency_us", "us").number;
        if (!(lv.latency_us >= 0))
            throw Error(f_lat, "must be zero or positive, got " + ShownNumber(lv.latency_us) + " us");
        lv.efficiency = *quantity("efficiency", "fraction").number;
        if (!(lv.efficiency >= kMinLevelEfficiency && lv.efficiency <= 1))
            throw Error(f_eff, "must be in [" + ShownNumber(kMinLevelEfficiency) +
                                   ", 1] (measured busbw / nominal bandwidth), got " + ShownNumber(lv.efficiency));
        lv.in_network_reduction = quantity("in_network_reduction", "bool", ValueType::boolean).boolean;
        bool tiered = IsFatTree(lv.kind);
        if (tiered) {
            lv.oversubscription = *quantity("oversubscription", "ratio").number;
            if (!(lv.oversubscription >= 1))
                throw Error(f_os, "must be >= 1 (1 = non-blocking), got " + ShownNumber(lv.oversubscription));
        } else if (l.Has("oversubscription")) {
            throw Error(
                f_os,
                std::string(
                    "only fat-tree levels (two_tier, rail_optimized, three_tier) have an oversubscription; this level is ") +
                    NameOf(lv.kind));
        }
        if (l.Has("node_size")) {
            if (lv.kind != LevelKind::scale_up)
                throw Error(l.Field("node_size"),
                            std::string("only a scale_up level spans nodes; this level is ") + NameOf(lv.kind));
            lv.node_size = PositiveInteger(quantity("node_size", "accelerators"), l.Field("node_size"));
            if (lv.size % lv.node_size != 0)
                throw Error(l.Field("node_size"), std::to_string(lv.node_size) + " does not divide the level's " +
                                                      std::to_string(lv.size) + " accelerators");
        }
        if (lv.kind == LevelKind::torus) {
            lv.wraparound = quantity("wraparound", "bool", ValueType::boolean).boolean;
            if (lv.in_network_reduction)
                throw Error(l.Field("in_network_reduction"),
                            "a torus level has no switch to reduce in; set it to false");
        } else if (l.Has("wraparound")) {
            throw Error(l.Field("wraparound"),
                        std::string("only torus levels close into a ring; this level is ") + NameOf(lv.kind));
        }
        l.RejectUnknown();

        // Consistency with the hierarchy and with the accelerator.
        if (!s.levels.empty()) {
            const NetworkLevel& prev = s.levels.back();
            std::string prev_path = "levels[" + std::to_string(i - 1) + "].size";
            if (lv.size <= prev.size)
                throw Error(f_size, std::to_string(lv.size) + " must be larger than " + prev_path + " = " +
                                        std::to_string(prev.size) + " (levels go from innermost to outermost)");
            if (lv.size % prev.size != 0)
                throw Error(f_size, std::to_string(lv.size) + " is not a multiple of " + prev_path + " = " +
                                        std::to_string(prev.size));
        }
        if (lv.kind == LevelKind::scale_up) {
            if (i != 0) throw Error(l.Field("kind"), "a scale_up level must be the first (innermost) level");
            if (lv.size > accelerator.scale_up_domain)
                throw Error(f_size, std::to_string(lv.size) + " exceeds the scale-up domain of " + accelerator.name +
                                        " (" + std::to_string(accelerator.scale_up_domain) + ")");
            if (lv.bandwidth_gbps > accelerator.scale_up_gbps_per_direction)
                throw Error(f_bw, ShownNumber(lv.bandwidth_gbps) + " GB/s exceeds the scale-up bandwidth of " +
                                      accelerator.name + " (" + ShownNumber(accelerator.scale_up_gbps_per_direction) +
                                      " GB/s per direction)");
        }
        if (lv.kind == LevelKind::torus) {
            if (i > 0 && s.levels.back().kind != LevelKind::torus)
                throw Error(l.Field("kind"),
                            "torus levels are the chips' own links: they must come first "
                            "(innermost), before any switched level");
            if (lv.size > accelerator.scale_up_domain)
                throw Error(f_size, std::to_string(lv.size) + " exceeds the chip-to-chip domain of " +
                                        accelerator.name + " (" + std::to_string(accelerator.scale_up_domain) + ")");
            double links = lv.bandwidth_gbps;
            for (const NetworkLevel& prev : s.levels) links += prev.bandwidth_gbps;
            if (links > accelerator.scale_up_gbps_per_direction * (1 + 1e-9))
                throw Error(f_bw, "the torus levels' bandwidths add up to " + ShownNumber(links) +
                                      " GB/s, more than the " + ShownNumber(accelerator.scale_up_gbps_per_direction) +
                                      " GB/s per direction of " + accelerator.name + "'s chip-to-chip links");
        }
        if (tiered && accelerator.nic_gbit_per_gpu <= 0)
            throw Error(l.Field("kind"), accelerator.name +
                                             " has no published scale-out NIC (scale_out_nic_Gbps_per_gpu "
                                             "is null): a " +
                                             std::string(NameOf(lv.kind)) +
                                             " level of NICs needs one; give the accelerator preset its NIC rate");
        if (tiered && lv.bandwidth_gbps > accelerator.NicGBps() * (1 + 1e-9))
            throw Error(f_bw, ShownNumber(lv.bandwidth_gbps) + " GB/s exceeds the NIC of " + accelerator.name + " (" +
                                  ShownNumber(accelerator.nic_gbit_per_gpu) +
                                  " Gb/s = " + ShownNumber(accelerator.NicGBps()) + " GB/s per direction)");
        lv.preset_effective_gbps = lv.EffectiveGBps();
        s.levels.push_back(std::move(lv));
    }
    return s;
}

int System::LevelForSpan(int span) const {
    if (span < 1) throw Error("span", "must be at least 1 accelerator, got " + std::to_string(span));
    for (size_t i = 0; i < levels.size(); ++i)
        if (levels[i].size >= span) return static_cast<int>(i);
    throw Error("span", std::to_string(span) + " accelerators exceed system " + id + " (" +
                            std::to_string(TotalAccelerators()) + ")");
}

double PeakTflops(const Accelerator& acc, Precision p) {
    std::optional<double> v;
    switch (p) {
        case Precision::fp32: v = acc.matrix.fp32 ? acc.matrix.fp32 : acc.vector.fp32; break;
        case Precision::bf16: v = acc.matrix.bf16; break;
        case Precision::fp16: v = acc.matrix.fp16; break;
        case Precision::fp8: v = acc.matrix.fp8; break;
        case Precision::fp4: v = acc.matrix.fp4; break;
    }
    if (!v)
        throw Error("precision", std::string(NameOf(p)) + " is not supported by " + acc.name + " (no published dense " +
                                     NameOf(p) + " rate in preset " + acc.id + ")");
    return *v;
}

double PeakFlops(const Accelerator& acc, Precision p) { return PeakTflops(acc, p) * 1e12; }

namespace {
double Ratio(double edited, double preset) { return preset > 0 && edited > 0 ? edited / preset : 1.0; }
}  // namespace

double CalibrationScale(const Accelerator& acc, Precision p) {
    const MatrixTflops& m = acc.matrix;
    const MatrixTflops& m0 = acc.preset_matrix;
    switch (p) {
        case Precision::fp32: return Ratio(m.fp32.value_or(0), m0.fp32.value_or(0));
        case Precision::bf16: return Ratio(m.bf16.value_or(0), m0.bf16.value_or(0));
        case Precision::fp16: return Ratio(m.fp16.value_or(0), m0.fp16.value_or(0));
        case Precision::fp8: return Ratio(m.fp8.value_or(0), m0.fp8.value_or(0));
        case Precision::fp4: return Ratio(m.fp4.value_or(0), m0.fp4.value_or(0));
    }
    return 1.0;
}

double HbmCalibrationScale(const Accelerator& acc) {
    return Ratio(acc.hbm_bandwidth_tbps, acc.preset_hbm_bandwidth_tbps);
}

double CalibrationScale(const NetworkLevel& level) { return Ratio(level.EffectiveGBps(), level.preset_effective_gbps); }

void ValidateAcceleratorRates(const Accelerator& a) {
    struct Peak {
        const char* field;
        const std::optional<double>& tflops;
    };
    const Peak peaks[] = {{"matrix_tflops.fp32", a.matrix.fp32}, {"matrix_tflops.tf32", a.matrix.tf32},
                          {"matrix_tflops.bf16", a.matrix.bf16}, {"matrix_tflops.fp16", a.matrix.fp16},
                          {"matrix_tflops.fp8", a.matrix.fp8},   {"matrix_tflops.fp4", a.matrix.fp4},
                          {"vector_tflops.fp32", a.vector.fp32}, {"vector_tflops.bf16", a.vector.bf16}};
    for (const Peak& p : peaks)
        if (p.tflops && !(*p.tflops >= kMinTflops))
            throw Error(p.field, "must be at least " + ShownNumber(kMinTflops) + " TFLOPS (1 GFLOP/s), got " +
                                     ShownNumber(*p.tflops));
    if (!(a.hbm_bandwidth_tbps >= kMinHbmTbps))
        throw Error("hbm_bandwidth_TBps", "must be at least " + ShownNumber(kMinHbmTbps) + " TB/s (1 GB/s), got " +
                                              ShownNumber(a.hbm_bandwidth_tbps));
    if (a.power_limit_w) ValidatePowerLimit(a, *a.power_limit_w, "accelerator.power_limit_w");
}

void ValidatePowerLimit(const Accelerator& a, double watts, const std::string& field) {
    if (!a.board_power_w)
        throw Error(field, a.id + " gives no board power for a limit of " + ShownNumber(watts) +
                               " W to be below; set accelerator.power_w first");
    const double board = *a.board_power_w, low = kMinPowerLimitFraction * board;
    if (!(watts >= low && watts <= board))
        throw Error(field, ShownNumber(watts) + " W is outside " + a.id + "'s range; valid: " + ShownNumber(low) +
                               " to " + ShownNumber(board) + " W (2/7 of its board power to all of it)");
}

void ValidateSystemLevels(const System& sys) {
    ValidateAcceleratorRates(sys.accelerator);
    for (size_t i = 0; i < sys.levels.size(); ++i) {
        const NetworkLevel& l = sys.levels[i];
        const std::string f = "levels[" + std::to_string(i) + "] (" + l.name + ")";
        if (!(l.bandwidth_gbps >= kMinLevelGbps))
            throw Error(f + ".bandwidth", "must be at least " + ShownNumber(kMinLevelGbps) + " GB/s, got " +
                                              ShownNumber(l.bandwidth_gbps));
        if (!(l.latency_us >= 0))
            throw Error(f + ".latency", "must be zero or positive us, got " + std::to_string(l.latency_us));
        if (!(l.efficiency >= kMinLevelEfficiency && l.efficiency <= 1))
            throw Error(f + ".efficiency",
                        "must be in [" + ShownNumber(kMinLevelEfficiency) + ", 1], got " + ShownNumber(l.efficiency));
        if (l.kind == LevelKind::torus && l.in_network_reduction)
            throw Error(f + ".in_network_reduction", "a torus level has no switch to reduce in; turn it off");
    }
    // The torus levels share the chip's links: together no more than its chip-to-chip bandwidth.
    double torus = 0;
    for (size_t i = 0; i < sys.levels.size() && sys.levels[i].kind == LevelKind::torus; ++i) {
        torus += sys.levels[i].bandwidth_gbps;
        if (torus > sys.accelerator.scale_up_gbps_per_direction * (1 + 1e-9))
            throw Error("levels[" + std::to_string(i) + "] (" + sys.levels[i].name + ").bandwidth",
                        "the torus levels' bandwidths add up to " + ShownNumber(torus) + " GB/s, more than the " +
                            ShownNumber(sys.accelerator.scale_up_gbps_per_direction) + " GB/s per direction of " +
                            sys.accelerator.name + "'s chip-to-chip links");
    }
}

}  // namespace sc
