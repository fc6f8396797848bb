// One function per panel, each in its own panel_*.cpp, plus the small widgets they share.
#pragma once
#include <initializer_list>
#include <string>

#include "imgui.h"

namespace sc {
struct PipelineTimeline;
}

namespace sc::app {

struct AppState;

void DrawModelPanel(AppState& s);     // panel_model.cpp: model shape and what it implies
void DrawParallelPanel(AppState& s);  // panel_parallel.cpp: the split, trace summary, trace download
void DrawTrainingPanel(AppState& s);  // panel_training.cpp: cluster, step time, memory, MFU
void DrawSearchTab(AppState& s);      // panel_search.cpp: the best layouts for a GPU count and batch
void DrawInferenceTab(AppState& s);   // panel_inference.cpp: serving the model on the cluster
void DrawSweepPanel(AppState& s);     // panel_sweep.cpp: co-design sweep over one or two axes, chart, CSV
// panel_pipeline.cpp: the pipeline schedule laid out in time, under the Training panel's estimate.
// `save`: set when its "Perfetto JSON" button is pressed.
void DrawPipelineTimeline(const PipelineTimeline& t, bool* save);

// widgets.cpp
// Numeric fields apply an edit on Enter, on leaving the field or after a short pause in typing (widgets.cpp),
// and return true on the frame they apply it.
bool IntField(const char* label, int* v, const char* help);
bool DoubleField(const char* label, double* v, const char* format, const char* help);
void TableRow(const char* label, const std::string& value);
void ErrorText(const std::string& message);

// A combo over the values of an enum that has NameOf; true when the user picked another value.
template <typename Enum>
bool EnumCombo(const char* label, Enum* v, std::initializer_list<Enum> all) {
    bool changed = false;
    if (ImGui::BeginCombo(label, NameOf(*v))) {
        for (Enum e : all)
            if (ImGui::Selectable(NameOf(e), e == *v)) *v = e, changed = true;
        ImGui::EndCombo();
    }
    return changed;
}
void WarningText(const std::string& message);
// Monotonic seconds, for progress ETAs (search, sweep, trace download).
double Now();

}  // namespace sc::app
