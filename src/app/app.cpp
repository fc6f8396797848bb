// TEMPORARY stub so the renderer can be built; replaced by the real panels.
#include "app/app.h"
#include "imgui.h"

namespace sc::app {
struct AppState { int layers = 96; std::string text = "stub"; };
AppState* CreateAppState() { return new AppState(); }
void DestroyAppState(AppState* s) { delete s; }
std::string LoadModelJson(AppState& s, const std::string& t) { s.text = t.substr(0, 40); return ""; }
void DrawUI(AppState& s) {
    ImGui::Begin("Model");
    ImGui::InputInt("layers", &s.layers);
    ImGui::Text("params: %d", s.layers * 1000);
    ImGui::End();
}
std::string MirrorText(const AppState& s) { return "layers: " + std::to_string(s.layers) + "\nparams: " + std::to_string(s.layers * 1000) + "\n"; }
}  // namespace sc::app
