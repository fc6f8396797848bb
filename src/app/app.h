// The ImGui application: its state and its panels, drawn between ImGui::NewFrame() and ImGui::Render().
// The platform/renderer glue (imgui_bridge.*, src/wasm/app_bindings.cpp) owns the ImGui context,
// input and draw data; this side only decides what is on screen.
#pragma once
#include <string>

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

// Draws every panel. Call once per frame between ImGui::NewFrame() and ImGui::Render().
void DrawUI(AppState& state);

// Plain text of the current results, for the aria-live DOM mirror and the no-WebGPU fallback.
// Identical to what `stagecraft estimate` prints for the same model and options.
std::string MirrorText(const AppState& state);

}  // namespace sc::app
