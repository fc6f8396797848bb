#include "cli/system_args.h"

#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/preset_paths.h"
#include "config/error.h"
#include "config/json_fields.h"
#include "config/numbers.h"
#include "config/system_edits.h"

namespace sc::cli {

namespace fs = std::filesystem;

std::vector<std::string> SystemFlags() { return {"system", "system-set", "options", "tokens"}; }
std::vector<std::string> SystemBoolFlags() { return {"no-calibration"}; }

// The system file's "accelerator" id, read as JSON: a plain file name (letters, digits, '.', '_', '-'; no
// path), which names presets/hardware/<id>.json beside the systems folder.
static std::string AcceleratorId(const std::string& text) {
    nlohmann::json root = ParseJsonText(text, "system preset");
    auto it = root.is_object() ? root.find("accelerator") : root.end();
    if (!root.is_object() || it == root.end()) throw Error("accelerator", "missing required field");
    if (!it->is_string()) throw Error("accelerator", "expected an accelerator id (a string), got " + Shown(*it));
    const std::string id = it->get<std::string>();
    if (!IsPresetId(id))
        throw Error("accelerator", "\"" + Clip(id) + "\" is not an accelerator id (letters, digits, '.', '_', '-')");
    return id;
}

static fs::path SystemPath(const Args& a, const char* fallback) {
    if (!a.Has("system") && !fallback)
        throw Error("--system", "missing; give a system preset file or id, e.g. --system dgx-h100-superpod");
    return PresetPath("--system", "systems", "system", a.Has("system") ? a.Get("system") : std::string(fallback));
}

// The system file at `path` with the accelerator preset it names; `flag` names the option or field it came from.
static System ReadSystem(const fs::path& path, const char* flag) {
    const std::string file = Clip(path.string());
    std::string text = ReadFile(path.string(), flag);
    try {
        fs::path acc_path = path.parent_path() / ".." / "hardware" / (AcceleratorId(text) + ".json");
        return ParseSystem(text, ReadFile(acc_path.string(), "accelerator"));
    } catch (const Error& e) {
        throw Error("", file + ": " + e.what());
    }
}

System LoadSystemPreset(const char* flag, const std::string& id_or_file) {
    return ReadSystem(PresetPath(flag, "systems", "system", id_or_file), flag);
}

LoadedSystem LoadSystem(const Args& a, const char* fallback) {
    const fs::path path = SystemPath(a, fallback);
    LoadedSystem ls;
    ls.system = ReadSystem(path, "--system");
    fs::path cal = path.parent_path() / ".." / "calibration" / "measured.json";
    std::error_code ec;
    if (!a.Has("no-calibration") && fs::exists(cal, ec)) {
        const std::string cal_file = Clip(cal.lexically_normal().string());
        try {
            ls.calibration =
                std::make_unique<CalibrationTable>(ParseCalibration(ReadFile(cal.string(), "calibration")));
        } catch (const Error& e) {
            throw Error("", cal_file + ": " + e.what() + " (--no-calibration skips it)");
        }
    }
    return ls;
}

void BuildCluster(LoadedSystem& ls, const Args& a, int gpus) {
    if (gpus > 0) ls.system = ExtendSystem(ls.system, gpus);
    try {
        ApplySystemEdits(ls.system, a.All("system-set"));
    } catch (const Error& e) {
        throw Error("--system-set", std::string(e.what()) + " (on " + ls.system.id + ")");
    }
}

static bool Flag(const std::string& key, const std::string& v) {
    if (v == "1" || v == "true" || v == "on") return true;
    if (v == "0" || v == "false" || v == "off") return false;
    throw Error(key, "expected on or off, got \"" + v + "\"");
}

static double Fraction(const std::string& key, const std::string& v, double lo = 0) {
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    const bool in_range = lo > 0 ? x >= lo && x <= 1 : x > 0 && x <= 1;
    if (v.empty() || *end || !in_range)
        throw Error(key, "expected a fraction in " + (lo > 0 ? "[" + ShownNumber(lo) + ", 1]" : std::string("(0, 1]")) +
                             ", got \"" + v + "\"");
    return x;
}

// A hand-set efficiency: at least 1% of the peak, the floor the compute model holds a measured GEMM to
// (below it a step's time could leave double's range: memory_efficiency=1e-320 gave a NaN MFU).
constexpr double kMinEfficiency = 0.01;

TrainingOptions LoadTrainingOptions(const Args& a) {
    TrainingOptions o;
    std::string spec = a.Get("options", "");
    size_t pos = 0;
    while (pos < spec.size()) {
        size_t c = spec.find(',', pos);
        std::string item = spec.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
        pos = c == std::string::npos ? spec.size() : c + 1;
        size_t eq = item.find('=');
        if (eq == std::string::npos) throw Error(item, "expected key=value in --options");
        std::string k = item.substr(0, eq), v = item.substr(eq + 1);
        if (k == "overlap_dp") o.overlap_dp = Flag(k, v);
        else if (k == "overlap_pp") o.overlap_pp = Flag(k, v);
        else if (k == "overlap_tp") o.overlap_tp = Flag(k, v);
        else if (k == "in_network_reduction" || k == "inr") o.in_network_reduction = Flag(k, v);
        else if (k == "framework_gemm") o.framework_gemm = Flag(k, v);
        else if (k == "matmul_efficiency") o.matmul_efficiency = Fraction(k, v, kMinEfficiency);
        else if (k == "attention_efficiency") o.attention_efficiency = Fraction(k, v, kMinEfficiency);
        else if (k == "memory_efficiency") o.memory_efficiency = Fraction(k, v, kMinEfficiency);
        else if (k == "overlap_tp_fraction") o.overlap_tp_fraction = Fraction(k, v);
        else if (k == "host_link_gbps")
            o.host_link_gbps = ParseNumberIn(k, v, 0, kMaxHostLinkGbps);  // 0: the measured link
        else if (k == "flash_attention") o.kernels.flash_attention = Flag(k, v);
        else if (k == "dropout") o.kernels.dropout = Flag(k, v);
        else if (k == "pp_scatter_gather") o.kernels.pp_scatter_gather = Flag(k, v);
        else if (k == "grad_accumulation_fusion") o.kernels.grad_accumulation_fusion = Flag(k, v);
        else if (k == "fused_elementwise") o.kernels.fused_elementwise = Flag(k, v);
        else if (k == "deepep_dispatch") o.kernels.deepep_dispatch = Flag(k, v);
        else if (k == "fp8_dispatch") o.kernels.fp8_dispatch = Flag(k, v);
        else if (k == "attention_kernel") {
            if (!ParseAttentionKernel(v, &o.attention_kernel))
                throw Error(k, "\"" + Clip(v) + "\" is not one of cudnn, flash3, flash2");
        } else
            throw Error(k,
                        "unknown option; valid: overlap_dp overlap_pp overlap_tp overlap_tp_fraction "
                        "in_network_reduction framework_gemm matmul_efficiency attention_efficiency memory_efficiency "
                        "flash_attention attention_kernel dropout pp_scatter_gather grad_accumulation_fusion "
                        "fused_elementwise deepep_dispatch fp8_dispatch host_link_gbps");
    }
    if (a.Has("tokens")) o.tokens_to_train = ParseNumberIn("--tokens", a.Get("tokens"), 0, kMaxTrainingTokens, true);
    return o;
}

}  // namespace sc::cli
