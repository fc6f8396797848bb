// One function per panel, each in its own panel_*.cpp.
#pragma once

namespace sc::app {

struct AppState;

void DrawModelPanel(AppState& s);

}  // namespace sc::app
