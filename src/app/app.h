// The ImGui application: its state and its panels, drawn between ImGui::NewFrame() and ImGui::Render().
// The platform/renderer glue (imgui_bridge.*, src/wasm/app_bindings.cpp) owns the ImGui context,
// input and draw data; this side only decides what is on screen.
#pragma once
#include <string>

#include "config/precision.h"

namespace sc {
struct ModelConfig;
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

// Same, for a model from outside the registered presets: none is current afterwards (the picker says "custom",
// and a link, which names a preset, cannot be made).
std::string LoadCustomModel(AppState& state, const std::string& json_text);

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
// Rank `rank`'s timeline as Chrome trace JSON, from the state's model, split, cluster, calibration and options as
// the page's TraceStream takes them (the model through its JSON): the bytes of `stagecraft trace --format json
// --rank R`. A worker computes it for the page's "Perfetto JSON" (replaying every stage of a large split takes
// seconds). Throws sc::Error (no cluster, a rank outside the job, past the node limit).
std::string RankTimelineJson(const AppState& state, int rank);
// Download handshake with the page's JS (see DownloadState in app_state.h).
bool TakeDownloadRequest(AppState& state);
void SetDownloadProgress(AppState& state, int done, int total, double bytes, bool running, const std::string& message);
bool DownloadCancelled(const AppState& state);
// "Perfetto JSON" handshake: the rank whose timeline the button asked for, once; -1 when none was asked.
int TakeTimelineRequest(AppState& state);
// The pipeline schedule's "Perfetto JSON" handshake: the bytes `stagecraft estimate --timeline-json` writes for the
// current estimate, once after the button asked; "" when none was asked.
std::string TakePipelineTimelineJson(AppState& state);
void SetDownloadSupported(AppState& state, bool supported);

// The current configuration as link text (src/link/config_link.h); throws sc::Error naming the field when it
// cannot be one (a model loaded from outside the presets, a value a link refuses).
std::string LinkState(const AppState& state);
// Decodes `text`, checks it against the page's presets and applies every field, then recomputes once. Returns "" or
// the error; on an error the page is back at its defaults and shows the message until the next edit.
// LinkApply::inputs sets the inputs only, without the estimate and summary of Recompute: what a web worker needs
// for a search, sweep or rate sweep of the link (CurrentRequest, CurrentServeRequest read nothing else).
enum class LinkApply { evaluate, inputs };
std::string ApplyLink(AppState& state, const std::string& text, LinkApply how = LinkApply::evaluate);
// The page's defaults (first preset and system, the default split and options, levels as loaded) with `message`
// shown: for a link the page could not even decompress.
void RejectLink(AppState& state, const std::string& message);
// "Copy link" handshake: the button raises a request, the page's JS copies the URL and reports the outcome.
bool TakeCopyLinkRequest(AppState& state);
void SetLinkNote(AppState& state, const std::string& note);
// The page's defaults, as it opens without a hash (keeps the registered presets and systems), recomputed.
void ResetToDefaults(AppState& state);
// The same inputs without recomputing (the caller recomputes once it has set the rest).
void ResetInputsToDefaults(AppState& state);
// The model (its head_dim derived from hidden / heads while they agree), without recomputing.
void SetModel(AppState& state, const ModelConfig& model);
// Sets the compute precision as the Model panel does: gradients and activations follow it, never below bf16.
void SetComputePrecision(ModelConfig& m, Precision p);

// Draws every panel. Call once per frame between ImGui::NewFrame() and ImGui::Render().
void DrawUI(AppState& state);

// Plain text of the current results, for the aria-live DOM mirror and the no-WebGPU fallback.
// Identical to what `stagecraft estimate` (and, below it, `stagecraft summary`) print for the same inputs: both
// are composed by report/engine_report.h from the engine's results (tests/native/test_app.cpp checks the bytes).
std::string MirrorText(const AppState& state);
// The same results as JSON (report/engine_report.h PageReportJson: `estimate --json` and `summary --json`) and as
// Markdown (report/markdown.h, converted from the text), for the DOM results panel's copy buttons.
std::string ResultJson(const AppState& state);
std::string ResultMarkdown(const AppState& state);

}  // namespace sc::app
