// Everything the page shows, in one place (Tracy's rule: data here, views in panel_*.cpp).
#pragma once
#include <string>
#include <vector>

#include "config/model_config.h"
#include "graph/model_stats.h"

namespace sc::app {

struct Preset {
    std::string file;  // "llama3-8b.json"
    std::string json;
    std::string name;  // the preset's "name"
};

struct AppState {
    std::vector<Preset> presets;
    int preset_index = -1;

    ModelConfig model;        // as edited in the UI
    bool derive_head_dim = true;  // head_dim follows hidden/heads (false when the preset sets it otherwise)
    bool has_model = false;
    ModelStats stats;         // for `model`, valid when error is empty
    std::string error;        // the one clear message for the current input, "" when valid
    std::string report;       // ModelReportText(model, stats) or the error: the DOM mirror's text
};

// Recomputes stats/report from `model`; sets `error` instead when the model is invalid.
void Recompute(AppState& s);

}  // namespace sc::app
