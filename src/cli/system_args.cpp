#include "cli/system_args.h"

#include <filesystem>

#include "config/error.h"

namespace sc::cli {

namespace fs = std::filesystem;

std::vector<std::string> SystemFlags() { return {"system", "options", "tokens"}; }
std::vector<std::string> SystemBoolFlags() { return {"no-calibration"}; }

LoadedSystem LoadSystem(const Args& a, const char* fallback) {
    if (!a.Has("system") && !fallback)
        throw Error("--system", "missing; give a system preset, e.g. --system presets/systems/dgx-h100-superpod.json");
    fs::path path = a.Has("system") ? a.Get("system") : std::string(fallback);
    if (!fs::exists(path) && path.extension() != ".json") path = fs::path("presets/systems") / (path.string() + ".json");
    std::string text = ReadFile(path.string());
    // The accelerator id is read by the system parser; find its file beside the systems folder.
    std::string acc_id;
    {
        size_t k = text.find("\"accelerator\"");
        size_t q1 = k == std::string::npos ? k : text.find('"', text.find(':', k) + 1);
        size_t q2 = q1 == std::string::npos ? q1 : text.find('"', q1 + 1);
        if (q2 == std::string::npos) throw Error(path.string(), "accelerator: missing required field");
        acc_id = text.substr(q1 + 1, q2 - q1 - 1);
    }
    fs::path acc_path = path.parent_path() / ".." / "hardware" / (acc_id + ".json");
    LoadedSystem ls;
    try {
        ls.system = ParseSystem(text, ReadFile(acc_path.string()));
    } catch (const Error& e) {
        throw Error("", path.string() + ": " + e.what());
    }
    fs::path cal = path.parent_path() / ".." / "calibration" / "measured.json";
    if (!a.Has("no-calibration") && fs::exists(cal))
        ls.calibration = std::make_unique<CalibrationTable>(ParseCalibration(ReadFile(cal.string())));
    return ls;
}

static bool Flag(const std::string& key, const std::string& v) {
    if (v == "1" || v == "true" || v == "on") return true;
    if (v == "0" || v == "false" || v == "off") return false;
    throw Error(key, "expected on or off, got \"" + v + "\"");
}

static double Fraction(const std::string& key, const std::string& v) {
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !(x > 0 && x <= 1)) throw Error(key, "expected a fraction in (0, 1], got \"" + v + "\"");
    return x;
}

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
        else if (k == "matmul_efficiency") o.matmul_efficiency = Fraction(k, v);
        else if (k == "attention_efficiency") o.attention_efficiency = Fraction(k, v);
        else if (k == "memory_efficiency") o.memory_efficiency = Fraction(k, v);
        else if (k == "overlap_tp_fraction") o.overlap_tp_fraction = Fraction(k, v);
        else if (k == "flash_attention") o.flash_attention = Flag(k, v);
        else if (k == "dropout") o.dropout = Flag(k, v);
        else if (k == "pp_scatter_gather") o.pp_scatter_gather = Flag(k, v);
        else if (k == "grad_accumulation_fusion") o.grad_accumulation_fusion = Flag(k, v);
        else
            throw Error(k, "unknown option; valid: overlap_dp overlap_pp overlap_tp overlap_tp_fraction "
                           "in_network_reduction matmul_efficiency attention_efficiency memory_efficiency "
                           "flash_attention dropout pp_scatter_gather grad_accumulation_fusion");
    }
    if (a.Has("tokens")) {
        char* end = nullptr;
        std::string v = a.Get("tokens");
        o.tokens_to_train = std::strtod(v.c_str(), &end);
        if (v.empty() || *end || !(o.tokens_to_train > 0)) throw Error("--tokens", "expected a positive number, got \"" + v + "\"");
    }
    return o;
}

}  // namespace sc::cli
