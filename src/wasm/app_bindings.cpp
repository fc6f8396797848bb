// Embind API of the ImGui page: class WebApp = ImGui bridge (context, input, draw data) + the app's
// state and panels (src/app/app.h). web/main.js drives it once per animation frame.
//
// Zero copy: drawData() returns a Uint32Array view of the bridge's command table; the vertex and
// index ranges it points to are read by JS straight out of the wasm heap (Module.HEAPU8.buffer).
// Views are only valid until the next call into the module that may grow memory: take them fresh
// each frame.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <exception>
#include <memory>
#include <string>

#include "app/app.h"
#include "app/app_state.h"
#include "app/imgui_bridge.h"
#include "guard.h"
#include "page_pool.h"
#include "trace_stream.h"

namespace {

using emscripten::val;

class WebApp {
public:
    WebApp() : state_(sc::app::CreateAppState()) {}
    ~WebApp() { sc::app::DestroyAppState(state_); }
    WebApp(const WebApp&) = delete;
    WebApp& operator=(const WebApp&) = delete;

    // One ImGui frame: NewFrame, the app's panels, Render, draw-data export. lastError() then says what the
    // frame threw (ImGui's stacks were recovered), else what a call since the previous frame threw.
    void frame(double css_width, double css_height, double dpr, double time_seconds) {
        last_error_ = std::move(call_error_);
        call_error_.clear();
        Safe([&] { bridge_.BeginFrame(float(css_width), float(css_height), float(dpr), time_seconds); });
        std::string drawn = scweb::ErrorOf([&] { sc::app::DrawUI(*state_); });
        if (!drawn.empty()) Fail(std::move(drawn));
        Safe([&] { bridge_.EndFrame(); });
    }
    std::string lastError() {
        return Safe([&] { return last_error_; });
    }
    double frameCount() {
        return Safe([&] { return double(bridge_.FrameCount()); });
    }

    // ---- Input
    void mousePos(float x, float y) {
        Safe([&] { bridge_.MousePos(x, y); });
    }
    void mouseLeave() {
        Safe([&] { bridge_.MouseLeave(); });
    }
    void mouseButton(int button, bool down) {
        Safe([&] { bridge_.MouseButton(button, down); });
    }
    void mouseWheel(float x, float y) {
        Safe([&] { bridge_.MouseWheel(x, y); });
    }
    void mouseSource(int source) {
        Safe([&] { bridge_.MouseSource(source); });
    }
    bool keyEvent(const std::string& code, const std::string& key, bool down, int mods) {
        return Safe([&] { return bridge_.Key(code, key, down, mods); });
    }
    void modifiers(int mods) {
        Safe([&] { bridge_.Modifiers(mods); });
    }
    void focus(bool focused) {
        Safe([&] { bridge_.Focus(focused); });
    }
    void inputText(const std::string& utf8) {
        Safe([&] { bridge_.InputUtf8(utf8); });
    }
    void inputUtf16(unsigned code_unit) {
        Safe([&] { bridge_.InputUtf16(code_unit); });
    }
    void setMacBehaviors(bool mac) {
        Safe([&] { bridge_.SetMacBehaviors(mac); });
    }

    // ---- Output of the last frame
    bool wantTextInput() {
        return Safe([&] { return bridge_.WantTextInput(); });
    }
    bool wantCaptureMouse() {
        return Safe([&] { return bridge_.WantCaptureMouse(); });
    }
    bool wantCaptureKeyboard() {
        return Safe([&] { return bridge_.WantCaptureKeyboard(); });
    }
    int mouseCursor() {
        return Safe([&] { return bridge_.MouseCursor(); });
    }
    val ime() {
        return Safe([&] {
            val o = val::object();
            o.set("visible", bridge_.ImeWanted());
            o.set("x", bridge_.ImeX());
            o.set("y", bridge_.ImeY());
            o.set("lineHeight", bridge_.ImeLineHeight());
            return o;
        });
    }
    // Layout: see sc::app::drawdata in imgui_bridge.h (header words 10 and 11 describe it; web/renderer.js
    // checks them against its own constants on the first frame).
    val drawData() {
        return Safe([&] {
            const auto& d = bridge_.DrawData();
            return val(emscripten::typed_memory_view(d.size(), d.data()));
        });
    }
    val fontAtlas() {
        return Safe([&] {
            val o = val::object();
            o.set("ptr", reinterpret_cast<uintptr_t>(bridge_.FontPixels()));
            o.set("width", bridge_.FontWidth());
            o.set("height", bridge_.FontHeight());
            o.set("version", bridge_.FontVersion());
            o.set("textureId", sc::app::kFontTextureId);
            return o;
        });
    }
    double fontVersion() {
        return Safe([&] { return double(bridge_.FontVersion()); });
    }

    // ---- Clipboard
    std::string getClipboard() {
        return Safe([&] { return bridge_.Clipboard(); });
    }
    void setClipboard(const std::string& text) {
        Safe([&] { bridge_.SetClipboard(text); });
    }
    double clipboardSerial() {
        return Safe([&] { return double(bridge_.ClipboardSerial()); });
    }

    // ---- App
    // A model from outside the registered presets (the picker then shows "custom", and no link is made).
    std::string loadModel(const std::string& json_text) {
        return Guard([&] { return sc::app::LoadCustomModel(*state_, json_text); });
    }
    // Registers a preset for the UI's picker (the first one becomes current); "" or the error.
    std::string addPreset(const std::string& file, const std::string& json_text) {
        return Guard([&] { return sc::app::AddPreset(*state_, file, json_text); });
    }
    bool selectPreset(const std::string& file) {
        bool found = false;
        return Guard([&] {
                   found = sc::app::SelectPreset(*state_, file);
                   return std::string();
               }).empty() &&
               found;
    }
    // Clusters, calibration and the parallel split (see app.h); each returns "" or the error.
    std::string addSystem(const std::string& file, const std::string& system_json,
                          const std::string& accelerator_json) {
        return Guard([&] { return sc::app::AddSystem(*state_, file, system_json, accelerator_json); });
    }
    bool selectSystem(const std::string& file) {
        bool found = false;
        return Guard([&] {
                   found = sc::app::SelectSystem(*state_, file);
                   return std::string();
               }).empty() &&
               found;
    }
    // Serving presets (presets/inference/*.json) for the Serving tab; the first becomes current.
    std::string addServingPreset(const std::string& file, const std::string& json_text) {
        return Guard([&] { return sc::app::AddServingPreset(*state_, file, json_text); });
    }
    // The Serving tab's last simulation as `stagecraft serve` prints it ("" before one ran).
    std::string servingReport() {
        return Safe([&] { return state_->inference.report; });
    }
    std::string setCalibration(const std::string& json_text) {
        return Guard([&] { return sc::app::SetCalibration(*state_, json_text); });
    }
    std::string setParallel(const std::string& spec) {
        return Guard([&] { return sc::app::SetParallel(*state_, spec); });
    }
    // ---- The configuration as a link (src/app/app_link.cpp; web/link.js compresses it into the URL hash)
    // {ok: true, link} or {ok: false, error} when the state cannot be a link (the page keeps its last hash).
    val linkState() const {
        return scweb::Guard([&] {
            val r = val::object();
            r.set("ok", true);
            r.set("link", sc::app::LinkState(*state_));
            return r;
        });
    }
    // "" or the error; on an error the page is at its defaults and shows the message until the next edit.
    std::string applyLink(const std::string& text) {
        return Guard([&] { return sc::app::ApplyLink(*state_, text); });
    }
    // A hash the page could not decompress: the defaults, with the message shown.
    std::string rejectLink(const std::string& message) {
        return Guard([&] {
            sc::app::RejectLink(*state_, message);
            return std::string();
        });
    }
    bool takeCopyLinkRequest() {
        return Safe([&] { return sc::app::TakeCopyLinkRequest(*state_); });
    }
    void setLinkNote(const std::string& note) {
        Safe([&] { sc::app::SetLinkNote(*state_, note); });
    }

    std::string currentModelJson() {
        return Safe([&] { return sc::app::CurrentModelJson(*state_); });
    }
    std::string currentParallelSpec() {
        return Safe([&] { return sc::app::CurrentParallelSpec(*state_); });
    }
    // Times a trace stream's compute nodes on the current cluster (duration_micros); false when none is chosen.
    bool timeTraceStream(TraceStream& stream) {
        return Safe([&] {
            const sc::System* sys = sc::app::CurrentSystem(*state_);
            if (!sys) return false;
            stream.TimeOn(*sys, sc::app::CurrentCalibration(*state_), sc::app::CurrentOptions(*state_));
            return true;
        });
    }

    // Trace-download handshake with the page (DownloadState in app_state.h).
    bool takeDownloadRequest() {
        return Safe([&] { return sc::app::TakeDownloadRequest(*state_); });
    }
    void setDownloadProgress(int done, int total, double bytes, bool running, const std::string& message) {
        Safe([&] { sc::app::SetDownloadProgress(*state_, done, total, bytes, running, message); });
    }
    bool downloadCancelled() {
        return Safe([&] { return sc::app::DownloadCancelled(*state_); });
    }
    void setDownloadSupported(bool supported) {
        Safe([&] { sc::app::SetDownloadSupported(*state_, supported); });
    }

    // The worker pool's handshake (worker_bindings.cpp); making it only stores the state's address, so it cannot
    // throw, and its own methods go through the guard.
    PagePool pool() { return PagePool(*state_); }

    // Without frames (the no-WebGPU page): counts a slice of a large split's trace summary, which the canvas page
    // counts a slice a frame; true while some of it is left.
    bool stepSummary() {
        return Safe([&] {
            sc::app::StepSummary(*state_, sc::app::kJobFrameBudget);
            return sc::app::SummaryRunning(*state_);
        });
    }

    std::string mirrorText() {
        std::string text;
        std::string error = scweb::ErrorOf([&] { text = sc::app::MirrorText(*state_); });
        return error.empty() ? text : "error: " + error + "\n";
    }
    // Increments whenever mirrorText() changes (JS touches the DOM only then).
    double mirrorVersion() {
        return Safe([&] {
            std::string text = mirrorText();
            if (text != mirror_cache_ || mirror_version_ == 0) {
                mirror_cache_ = std::move(text);
                ++mirror_version_;
            }
            return mirror_version_;
        });
    }

    // The results as JSON and Markdown, for the DOM results panel's copy buttons (app.h ResultJson/ResultMarkdown).
    std::string resultJson() {
        return Safe([&] { return sc::app::ResultJson(*state_); });
    }
    std::string resultMarkdown() {
        return Safe([&] { return sc::app::ResultMarkdown(*state_); });
    }
    // "Perfetto JSON" handshake: the rank the button asked for, once; -1 when none.
    int takeTimelineRequest() {
        return Safe([&] { return sc::app::TakeTimelineRequest(*state_); });
    }
    // The pipeline schedule's "Perfetto JSON", once after its button; "" when not asked.
    std::string takePipelineTimelineJson() {
        return Safe([&] { return sc::app::TakePipelineTimelineJson(*state_); });
    }
    // What the page without WebGPU offers in its pickers: {models: [{file, name}], systems: [{file, name}],
    // model: current preset file ("" when custom), system: current cluster file ("" when none)}.
    val choices() {
        return Safe([&] {
            const sc::app::AppState& s = *state_;
            val models = val::array();
            for (const auto& p : s.presets) models.call<void>("push", Choice(p.file, p.name));
            val systems = val::array();
            for (const auto& sys : s.systems) systems.call<void>("push", Choice(sys.file, sys.system.name));
            val out = val::object();
            out.set("models", models);
            out.set("systems", systems);
            out.set("model", s.preset_index >= 0 ? s.presets[s.preset_index].file : std::string());
            out.set("system", s.system_index >= 0 ? s.systems[s.system_index].file : std::string());
            return out;
        });
    }

    // ---- Debug / test helpers (CSS px, last frame)
    val windowRect(const std::string& name) {
        return Safe([&] { return WindowRect(name); });
    }
    val itemRect(const std::string& window, const std::string& label) {
        return Safe([&] { return ItemRect(window, label); });
    }
    val styleColor(const std::string& name) {
        return Safe([&] { return StyleColor(name); });
    }

private:
    val WindowRect(const std::string& name) const {
        sc::app::WindowInfo w = bridge_.FindWindow(name);
        if (!w.found) return val::null();
        val o = val::object();
        o.set("x", w.x);
        o.set("y", w.y);
        o.set("w", w.w);
        o.set("h", w.h);
        o.set("titleBarHeight", w.title_bar_height);
        o.set("focused", w.focused);
        o.set("collapsed", w.collapsed);
        o.set("hidden", w.hidden);
        return o;
    }
    val ItemRect(const std::string& window, const std::string& label) {
        sc::app::Rect r = bridge_.ItemRect(window, label);
        if (!r.found) return val::null();
        val o = val::object();
        o.set("x", r.x);
        o.set("y", r.y);
        o.set("w", r.w);
        o.set("h", r.h);
        return o;
    }
    val StyleColor(const std::string& name) const {
        float c[4];
        if (!bridge_.StyleColor(name, c)) return val::null();
        val a = val::array();
        for (float f : c) a.call<void>("push", f);
        return a;
    }

    // "" or the error of f() (which returns "" or the error itself), through the one guard (guard.h).
    template <typename F>
    static std::string Guard(F&& f) {
        std::string returned;
        std::string thrown = scweb::ErrorOf([&] { returned = f(); });
        return thrown.empty() ? returned : thrown;
    }
    // Any other call: through the one guard, what it throws kept for lastError() (see scweb::Kept).
    template <typename F>
    auto Safe(F&& f) -> decltype(f()) {
        return scweb::Kept(call_error_, f);
    }
    void Fail(std::string message) {
        last_error_ = std::move(message);
        bridge_.RecoverFromException();
    }

    static val Choice(const std::string& file, const std::string& name) {
        val c = val::object();
        c.set("file", file);
        c.set("name", name);
        return c;
    }

    sc::app::ImGuiBridge bridge_;  // first: the ImGui context exists before the app state
    sc::app::AppState* state_;
    std::string last_error_;
    std::string call_error_;  // thrown by a call since the last frame; lastError() after the next frame
    std::string mirror_cache_;
    double mirror_version_ = 0;
};

}  // namespace

EMSCRIPTEN_BINDINGS(stagecraft_web_app) {
    emscripten::class_<WebApp>("WebApp")
        .constructor<>()
        .function("frame", &WebApp::frame)
        .function("lastError", &WebApp::lastError)
        .function("frameCount", &WebApp::frameCount)
        .function("mousePos", &WebApp::mousePos)
        .function("mouseLeave", &WebApp::mouseLeave)
        .function("mouseButton", &WebApp::mouseButton)
        .function("mouseWheel", &WebApp::mouseWheel)
        .function("mouseSource", &WebApp::mouseSource)
        .function("keyEvent", &WebApp::keyEvent)
        .function("modifiers", &WebApp::modifiers)
        .function("focus", &WebApp::focus)
        .function("inputText", &WebApp::inputText)
        .function("inputUtf16", &WebApp::inputUtf16)
        .function("setMacBehaviors", &WebApp::setMacBehaviors)
        .function("wantTextInput", &WebApp::wantTextInput)
        .function("wantCaptureMouse", &WebApp::wantCaptureMouse)
        .function("wantCaptureKeyboard", &WebApp::wantCaptureKeyboard)
        .function("mouseCursor", &WebApp::mouseCursor)
        .function("ime", &WebApp::ime)
        .function("drawData", &WebApp::drawData)
        .function("fontAtlas", &WebApp::fontAtlas)
        .function("fontVersion", &WebApp::fontVersion)
        .function("getClipboard", &WebApp::getClipboard)
        .function("setClipboard", &WebApp::setClipboard)
        .function("clipboardSerial", &WebApp::clipboardSerial)
        .function("loadModel", &WebApp::loadModel)
        .function("addPreset", &WebApp::addPreset)
        .function("selectPreset", &WebApp::selectPreset)
        .function("addSystem", &WebApp::addSystem)
        .function("selectSystem", &WebApp::selectSystem)
        .function("addServingPreset", &WebApp::addServingPreset)
        .function("servingReport", &WebApp::servingReport)
        .function("setCalibration", &WebApp::setCalibration)
        .function("setParallel", &WebApp::setParallel)
        .function("linkState", &WebApp::linkState)
        .function("applyLink", &WebApp::applyLink)
        .function("rejectLink", &WebApp::rejectLink)
        .function("takeCopyLinkRequest", &WebApp::takeCopyLinkRequest)
        .function("setLinkNote", &WebApp::setLinkNote)
        .function("currentModelJson", &WebApp::currentModelJson)
        .function("currentParallelSpec", &WebApp::currentParallelSpec)
        .function("timeTraceStream", &WebApp::timeTraceStream)
        .function("takeDownloadRequest", &WebApp::takeDownloadRequest)
        .function("setDownloadProgress", &WebApp::setDownloadProgress)
        .function("downloadCancelled", &WebApp::downloadCancelled)
        .function("setDownloadSupported", &WebApp::setDownloadSupported)
        .function("pool", &WebApp::pool)
        .function("stepSummary", &WebApp::stepSummary)
        .function("mirrorText", &WebApp::mirrorText)
        .function("mirrorVersion", &WebApp::mirrorVersion)
        .function("resultJson", &WebApp::resultJson)
        .function("resultMarkdown", &WebApp::resultMarkdown)
        .function("takeTimelineRequest", &WebApp::takeTimelineRequest)
        .function("takePipelineTimelineJson", &WebApp::takePipelineTimelineJson)
        .function("choices", &WebApp::choices)
        .function("windowRect", &WebApp::windowRect)
        .function("itemRect", &WebApp::itemRect)
        .function("styleColor", &WebApp::styleColor);
}
