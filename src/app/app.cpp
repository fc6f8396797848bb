// App lifecycle and the glue between state and panels.
#include "app/app.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/app_state.h"
#include "app/imgui_bridge.h"
#include "app/panels.h"
#include "config/error.h"
#include "engine/estimate.h"
#include "engine/trace.h"
#include "imgui.h"
#include "report/engine_report.h"
#include "report/markdown.h"
#include "report/pipeline_timeline_json.h"

namespace sc::app {

// The page opens on the first model and cluster of presets/*/index.json (Llama 3 8B on DGX H100) with a split
// that fits there and shows each kind of cost: TP 2 with SP inside a node, 32 data-parallel replicas with the
// distributed optimizer (ZeRO-1), and a global batch of 256 sequences (2M tokens at Llama 3's 8,192). Every
// preset accepts it (tp divides every head count, SP as MoE needs); the larger ones then say plainly that they
// do not fit. tests/native/test_app.cpp checks that this first screen fits.
static const char* kDefaultSplit = "tp=2,sp=1,dp=32,batch=256,zero=1";

AppState* CreateAppState() {
    AppState* s = new AppState();
    s->parallel = ParseParallelSpec(kDefaultSplit);
    return s;
}
void DestroyAppState(AppState* state) { delete state; }

engine::Request CurrentRequest(const AppState& s) {
    engine::Request r;
    r.model = s.model;
    r.parallel = s.parallel;
    r.system = CurrentSystem(s);
    r.calibration = s.calibration.get();
    r.options = s.options;
    r.search.gpus = s.search.gpus > 0 ? s.search.gpus : s.parallel.world();
    r.search.batch = s.parallel.global_batch();
    r.search.top_k = 10;
    r.search.space.uneven = s.search.uneven;
    return r;
}

void UpdateReport(AppState& s) {
    const engine::Request request = CurrentRequest(s);
    s.report = PageReportText(request, s.evaluation);
    s.report_json = PageReportJson(request, s.evaluation);
    s.summary_error = s.evaluation.summary_error;
}

void Recompute(AppState& s) {
    s.link_error.clear();  // every edit (and a link applied whole) ends the message about a refused link
    s.link_note.clear();   // "copied" was about the state before this edit
    CancelSummary(s);      // before the job it counts
    s.evaluation = {};
    s.has_estimate = false;
    engine::Evaluation ev;
    try {
        // head_dim follows hidden/heads in the panel: an edit of the page's model, so it is made on the state
        // before the request is taken.
        if (s.derive_head_dim) DeriveHeadDim(s.model);
    } catch (const Error& e) {
        ev.model_error = e.what();
    }
    if (ev.model_error.empty()) ev = engine::EvaluateEstimate(CurrentRequest(s));
    s.evaluation = std::move(ev);
    const engine::Evaluation& e = s.evaluation;
    StartSummary(s);  // counts the summary, or its first nodes
    UpdateReport(s);
    s.error = e.model_error;
    s.parallel_error = e.parallel_error;
    s.training_error = e.training_error;
    s.computed_inputs = InputsKey(s);  // after DeriveHeadDim: the key of the model as computed
    if (!e.model_error.empty()) return;
    s.stats = e.stats;
    if (e.training) s.estimate = *e.training, s.has_estimate = true;
}

namespace {

// Doubles in hexadecimal: exact, so any edit changes the key.
void Put(std::string& out, const char* name, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ";%s=%a", name, v);
    out += buf;
}

void PutLevels(std::string& out, const std::vector<NetworkLevel>& levels) {
    // Every field that reaches a result; provenance does not.
    // A tripwire on 64-bit builds (where the tests run): a new NetworkLevel field changes its size.
    static_assert(sizeof(void*) != 8 || sizeof(NetworkLevel) == 144, "NetworkLevel changed: key the new field here");
    for (const NetworkLevel& l : levels) {
        out += ";level=" + l.name;
        Put(out, "kind", static_cast<int>(l.kind));
        Put(out, "size", l.size);
        Put(out, "bw", l.bandwidth_gbps);
        Put(out, "lat", l.latency_us);
        Put(out, "eff", l.efficiency);
        Put(out, "inr", l.in_network_reduction);
        Put(out, "wrap", l.wraparound);
        Put(out, "os", l.oversubscription);
        Put(out, "node", l.node_size);
        Put(out, "eff0", l.preset_effective_gbps);
    }
}

void PutOptions(std::string& out, const TrainingOptions& o) {
    static_assert(sizeof(void*) != 8 || sizeof(TrainingOptions) == 112,
                  "TrainingOptions changed: key the new field here");
    Put(out, "overlap_dp", o.overlap_dp);
    Put(out, "overlap_pp", o.overlap_pp);
    Put(out, "overlap_tp", o.overlap_tp);
    Put(out, "overlap_tp_fraction", o.overlap_tp_fraction);
    Put(out, "inr", o.in_network_reduction);
    Put(out, "fw_gemm", o.framework_gemm);
    Put(out, "matmul_eff", o.matmul_efficiency);
    Put(out, "attention_eff", o.attention_efficiency);
    Put(out, "memory_eff", o.memory_efficiency);
    Put(out, "fallback_matmul", o.fallback_matmul_efficiency);
    Put(out, "fallback_attention", o.fallback_attention_efficiency);
    Put(out, "fallback_memory", o.fallback_memory_efficiency);
    Put(out, "flash", o.kernels.flash_attention);
    Put(out, "kernel", static_cast<int>(o.attention_kernel));
    Put(out, "attention_dtype", static_cast<int>(o.attention_dtype));
    Put(out, "dropout", o.kernels.dropout);
    Put(out, "scatter_gather", o.kernels.pp_scatter_gather);
    Put(out, "gaf", o.kernels.grad_accumulation_fusion);
    Put(out, "fused_ew", o.kernels.fused_elementwise);
    Put(out, "deepep", o.kernels.deepep_dispatch);
    Put(out, "fp8_dispatch", o.kernels.fp8_dispatch);
    Put(out, "host_gbps", o.host_link_gbps);
    Put(out, "tokens", o.tokens_to_train);
}

}  // namespace

std::string InputsKey(const AppState& s) {
    if (!s.has_model) return "";
    std::string key = ModelConfigToJson(s.model);  // every model field (it round-trips through the parser)
    Put(key, "derive_head_dim", s.derive_head_dim);
    key += ";parallel=" + ParallelSpecString(s.parallel);
    Put(key, "system", s.system_index);
    if (const System* sys = CurrentSystem(s)) PutLevels(key, sys->levels);
    char cal[64];
    std::snprintf(cal, sizeof cal, ";calibration=%p/%d", static_cast<const void*>(s.calibration.get()),
                  s.calibration_generation);
    key += cal;
    PutOptions(key, s.options);
    return key;
}

void Refresh(AppState& s) {
    if (s.has_model && InputsKey(s) != s.computed_inputs) Recompute(s);
}

void SetModel(AppState& s, const ModelConfig& m) {
    s.model = m;
    s.derive_head_dim = m.head_dim * m.heads == m.hidden;
    s.has_model = true;
}

std::string LoadModelJson(AppState& s, const std::string& json_text) {
    try {
        SetModel(s, ParseModelConfig(json_text));
        Recompute(s);
        return "";
    } catch (const Error& e) {
        s.error = e.what();
        s.report = "error: " + s.error + "\n";
        nlohmann::ordered_json j;
        j["errors"].push_back({{"stage", "model"}, {"message", s.error}});
        s.report_json = j.dump(2) + "\n";
        return s.error;
    }
}

std::string LoadCustomModel(AppState& s, const std::string& json_text) {
    std::string error = LoadModelJson(s, json_text);
    if (error.empty()) s.preset_index = -1;
    return error;
}

std::string AddPreset(AppState& s, const std::string& file, const std::string& json_text) {
    Preset p{file, json_text, file, {}};
    try {
        p.config = ParseModelConfig(json_text);
        p.name = p.config.name;
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

std::string AddSystem(AppState& s, const std::string& file, const std::string& system_json,
                      const std::string& accelerator_json) {
    try {
        System sys = ParseSystem(system_json, accelerator_json);
        std::vector<NetworkLevel> levels = sys.levels;
        s.systems.push_back({file, std::move(sys), std::move(levels)});
    } catch (const Error& e) {
        return file + ": " + e.what();
    }
    if (s.system_index < 0) {
        s.system_index = static_cast<int>(s.systems.size()) - 1;
        if (s.has_model) Recompute(s);
    }
    return "";
}

bool SelectSystem(AppState& s, const std::string& file) {
    for (size_t i = 0; i < s.systems.size(); ++i)
        if (s.systems[i].file == file || s.systems[i].file == file + ".json") {
            s.system_index = static_cast<int>(i);
            if (s.has_model) Recompute(s);
            return true;
        }
    return false;
}

std::string SetCalibration(AppState& s, const std::string& json_text) {
    try {
        s.calibration = std::make_unique<CalibrationTable>(ParseCalibration(json_text));
        ++s.calibration_generation;
    } catch (const Error& e) {
        return std::string("calibration: ") + e.what();
    }
    if (s.has_model) Recompute(s);
    return "";
}

std::string SetParallel(AppState& s, const std::string& spec) {
    try {
        s.parallel = ParseParallelSpec(spec);
    } catch (const Error& e) {
        return e.what();
    }
    if (s.has_model) Recompute(s);
    return s.parallel_error;
}

void ResetInputsToDefaults(AppState& s) {
    for (SystemPreset& sp : s.systems) {
        sp.system.levels = sp.preset_levels;
        sp.system.accelerator.power_limit_w.reset();  // no preset sets one
    }
    s.system_index = s.systems.empty() ? -1 : 0;
    s.options = TrainingOptions{};
    s.parallel = ParseParallelSpec(kDefaultSplit);
    s.search.gpus = 0;
    CancelSearch(s);
    s.search.has_result = false;
    s.search.error.clear();
    if (!s.presets.empty()) {
        s.preset_index = 0;
        SetModel(s, s.presets[0].config);  // parsed when it was registered (AddPreset)
    }
}

void ResetToDefaults(AppState& s) {
    ResetInputsToDefaults(s);
    if (s.has_model) Recompute(s);
}

void SetComputePrecision(ModelConfig& m, Precision p) {
    // Gradients and activations follow the compute precision, never below bf16 (the parser's defaults; see
    // PrecisionConfig).
    const Precision floor16 = BytesOf(p) < 2 ? Precision::bf16 : p;
    m.precision.compute = p;
    m.precision.grad = floor16;
    m.precision.activation = floor16;
    m.precision.scaling = Scaling::automatic;  // a recipe belongs to one format: the new one's usual recipe
    m.precision.bf16_first_layers = m.precision.bf16_last_layers = 0;  // and so do the layers it leaves in BF16
    m.precision.bf16_modules = 0;                                      // and the modules
}

std::string CurrentModelJson(const AppState& s) { return ModelConfigToJson(s.model); }
std::string CurrentParallelSpec(const AppState& s) { return ParallelSpecString(s.parallel); }
const System* CurrentSystem(const AppState& s) {
    return s.system_index >= 0 ? &s.systems[s.system_index].system : nullptr;
}
const CalibrationTable* CurrentCalibration(const AppState& s) { return s.calibration.get(); }
const TrainingOptions& CurrentOptions(const AppState& s) { return s.options; }

std::string RankTimelineJson(const AppState& s, int rank) {
    engine::Request r;
    r.model = ParseModelConfig(CurrentModelJson(s));
    r.parallel = ParseParallelSpec(CurrentParallelSpec(s));
    r.system = CurrentSystem(s);
    if (!r.system) throw Error("system", "choose a cluster to time the ops");
    r.calibration = CurrentCalibration(s);
    r.options = CurrentOptions(s);
    const engine::TraceSnapshot snap = engine::SnapshotTrace(r);
    const std::unique_ptr<RankTraceWriter> writer = engine::MakeTraceWriter(snap);
    if (rank < 0 || rank >= writer->world())
        throw Error("rank",
                    std::to_string(rank) + " is outside the job's ranks 0.." + std::to_string(writer->world() - 1));
    StringSink out;
    engine::WriteRankTimelineJson(snap, *writer, rank, out);
    return std::move(out.bytes);
}

bool TakeDownloadRequest(AppState& s) {
    bool r = s.download.requested;
    s.download.requested = false;
    if (r) s.download.cancel = false;
    return r;
}

void SetDownloadProgress(AppState& s, int done, int total, double bytes, bool running, const std::string& message) {
    if (running && done == 0) s.download.started = Now();
    s.download.done = done;
    s.download.total = total;
    s.download.bytes = bytes;
    s.download.running = running;
    s.download.message = message;
}

bool DownloadCancelled(const AppState& s) { return s.download.cancel; }

int TakeTimelineRequest(AppState& s) {
    if (!s.download.timeline_requested) return -1;
    s.download.timeline_requested = false;
    return s.download.timeline_rank;
}
std::string TakePipelineTimelineJson(AppState& s) {
    if (!s.download.pipeline_requested) return "";
    s.download.pipeline_requested = false;
    if (!s.has_estimate || !s.estimate.pipeline) return "";
    StringSink out;
    WritePipelineTimeline(out, *s.estimate.pipeline);
    return std::move(out.bytes);
}
void SetDownloadSupported(AppState& s, bool supported) { s.download.supported = supported; }

void DrawUI(AppState& s) {
    // The atlas is rasterised at the device pixel ratio (imgui_bridge.cpp): laid out at kFontCssPx CSS px times the
    // UI scale whatever ratio that is (setting the UI scale alone drew text dpr times too large).
    ImGuiIO& io = ImGui::GetIO();
    const float atlas_px = io.Fonts->Fonts.empty() ? kFontCssPx : io.Fonts->Fonts[0]->FontSize;
    io.FontGlobalScale = s.ui_scale * kFontCssPx / atlas_px;
    Refresh(s);                    // edits made outside the panels (a link, the page's JS) since the last frame
    StepJobs(s, kJobFrameBudget);  // a search or sweep on the page's thread moves on even with its panel closed
    DrawModelPanel(s);
    DrawParallelPanel(s);
    DrawTrainingPanel(s);
    DrawSweepPanel(s);
    s.apply_views = false;  // both panels have opened what a link named
    Refresh(s);             // this frame's edits, so the mirror and the next frame show their results
}

std::string MirrorText(const AppState& s) { return s.report; }
std::string ResultJson(const AppState& s) { return s.report_json; }
std::string ResultMarkdown(const AppState& s) { return ReportMarkdown(s.report); }

}  // namespace sc::app
