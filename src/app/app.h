// The ImGui application: its state and its panels, drawn between ImGui::NewFrame() and ImGui::Render().
// The platform/renderer glue (imgui_bridge.*, src/wasm/app_bindings.cpp) owns the ImGui context,
// input and draw data; this side only decides what is on screen.
#pragma once
#include <string>

namespace sc {
struct System;
struct CalibrationTable;
struct TrainingOptions;
}  // namespace sc

namespace sc::app {

struct AppState;

AppState* CreateAppState();
void DestroyAppState(AppState* state);

// Loads a model preset (JSON text) as the current model. Returns "" on success, else the error
// message (which the UI also shows).
std::string LoadModelJson(AppState& state, const std::string& json_text);

// Registers a preset (file name and JSON text) for the preset picker; the first one becomes the
// current model. Returns "" or the error message for a malformed preset.
std::string AddPreset(AppState& state, const std::string& file, const std::string& json_text);
// Makes the registered preset `file` ("llama3-8b" or "llama3-8b.json") current; false when unknown.
bool SelectPreset(AppState& state, const std::string& file);

// Registers a cluster (presets/systems/<file> and its accelerator's presets/hardware JSON); the first
// becomes current. Returns "" or the error.
std::string AddSystem(AppState& state, const std::string& file, const std::string& system_json,
                      const std::string& accelerator_json);
bool SelectSystem(AppState& state, const std::string& file);
// The measured calibration tables (presets/calibration/measured.json); "" or the error.
std::string SetCalibration(AppState& state, const std::string& json_text);
// Sets the parallel split from its CLI form ("tp=8,pp=16,..."); "" or the error.
std::string SetParallel(AppState& state, const std::string& spec);

// For the trace download: the current model as JSON and the split in CLI form.
std::string CurrentModelJson(const AppState& state);
std::string CurrentParallelSpec(const AppState& state);
// The cluster the estimate runs on, for timing downloaded traces (duration_micros); null when none is chosen.
const System* CurrentSystem(const AppState& state);
const CalibrationTable* CurrentCalibration(const AppState& state);  // null when none was set
const TrainingOptions& CurrentOptions(const AppState& state);
// Download handshake with the page's JS (see DownloadState in app_state.h).
bool TakeDownloadRequest(AppState& state);
void SetDownloadProgress(AppState& state, int done, int total, double bytes, bool running, const std::string& message);
bool DownloadCancelled(const AppState& state);
void SetDownloadSupported(AppState& state, bool supported);

// Draws every panel. Call once per frame between ImGui::NewFrame() and ImGui::Render().
void DrawUI(AppState& state);

// Plain text of the current results, for the aria-live DOM mirror and the no-WebGPU fallback.
// Identical to what `stagecraft estimate` (and, below it, `stagecraft summary`) print for the same inputs.
std::string MirrorText(const AppState& state);

}  // namespace sc::app
