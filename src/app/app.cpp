// App lifecycle and the glue between state and panels.
#include "app/app.h"

#include "app/app_state.h"
#include "app/panels.h"
#include "config/error.h"
#include "report/model_report.h"

namespace sc::app {

AppState* CreateAppState() { return new AppState(); }
void DestroyAppState(AppState* state) { delete state; }

void Recompute(AppState& s) {
    try {
        if (s.derive_head_dim) DeriveHeadDim(s.model);
        ValidateModelConfig(s.model);
        s.stats = ComputeModelStats(s.model);
        s.error.clear();
        s.report = ModelReportText(s.model, s.stats);
    } catch (const Error& e) {
        s.error = e.what();
        s.report = "Model: " + s.model.name + "\nerror: " + s.error + "\n";
    }
}

std::string LoadModelJson(AppState& s, const std::string& json_text) {
    try {
        ModelConfig m = ParseModelConfig(json_text);
        s.model = m;
        s.derive_head_dim = m.head_dim * m.heads == m.hidden;
        s.has_model = true;
        Recompute(s);
        return "";
    } catch (const Error& e) {
        s.error = e.what();
        s.report = "error: " + s.error + "\n";
        return s.error;
    }
}

std::string AddPreset(AppState& s, const std::string& file, const std::string& json_text) {
    Preset p{file, json_text, file};
    try {
        p.name = ParseModelConfig(json_text).name;
    } catch (const Error& e) {
        return file + ": " + e.what();
    }
    s.presets.push_back(std::move(p));
    if (!s.has_model) {
        s.preset_index = static_cast<int>(s.presets.size()) - 1;
        LoadModelJson(s, json_text);
    }
    return "";
}

bool SelectPreset(AppState& s, const std::string& file) {
    for (size_t i = 0; i < s.presets.size(); ++i)
        if (s.presets[i].file == file || s.presets[i].file == file + ".json") {
            s.preset_index = static_cast<int>(i);
            LoadModelJson(s, s.presets[i].json);
            return true;
        }
    return false;
}

void DrawUI(AppState& s) { DrawModelPanel(s); }

std::string MirrorText(const AppState& s) { return s.report; }

}  // namespace sc::app
