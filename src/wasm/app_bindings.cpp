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

std::string Describe(const std::exception& e) { return e.what(); }

class WebApp {
public:
    WebApp() : state_(sc::app::CreateAppState()) {}
    ~WebApp() { sc::app::DestroyAppState(state_); }
    WebApp(const WebApp&) = delete;
    WebApp& operator=(const WebApp&) = delete;

    // One ImGui frame: NewFrame, the app's panels, Render, draw-data export.
    void frame(double css_width, double css_height, double dpr, double time_seconds) {
        bridge_.BeginFrame(float(css_width), float(css_height), float(dpr), time_seconds);
        last_error_.clear();
        try {
            sc::app::DrawUI(*state_);
        } catch (const std::exception& e) {
            Fail(Describe(e));
        } catch (...) {
            Fail("unknown exception in DrawUI");
        }
        bridge_.EndFrame();
    }
    // The exception that escaped DrawUI in the last frame (ImGui's stacks were recovered), or "".
    std::string lastError() const { return last_error_; }
    double frameCount() const { return double(bridge_.FrameCount()); }

    // ---- Input
    void mousePos(float x, float y) { bridge_.MousePos(x, y); }
    void mouseLeave() { bridge_.MouseLeave(); }
    void mouseButton(int button, bool down) { bridge_.MouseButton(button, down); }
    void mouseWheel(float x, float y) { bridge_.MouseWheel(x, y); }
    void mouseSource(int source) { bridge_.MouseSource(source); }
    bool keyEvent(const std::string& code, const std::string& key, bool down, int mods) {
        return bridge_.Key(code, key, down, mods);
    }
    void modifiers(int mods) { bridge_.Modifiers(mods); }
    void focus(bool focused) { bridge_.Focus(focused); }
    void inputText(const std::string& utf8) { bridge_.InputUtf8(utf8); }
    void inputUtf16(unsigned code_unit) { bridge_.InputUtf16(code_unit); }
    void setMacBehaviors(bool mac) { bridge_.SetMacBehaviors(mac); }

    // ---- Output of the last frame
    bool wantTextInput() const { return bridge_.WantTextInput(); }
    bool wantCaptureMouse() const { return bridge_.WantCaptureMouse(); }
    bool wantCaptureKeyboard() const { return bridge_.WantCaptureKeyboard(); }
    int mouseCursor() const { return bridge_.MouseCursor(); }
    val ime() const {
        val o = val::object();
        o.set("visible", bridge_.ImeWanted());
        o.set("x", bridge_.ImeX());
        o.set("y", bridge_.ImeY());
        o.set("lineHeight", bridge_.ImeLineHeight());
        return o;
    }
    // Layout: see sc::app::drawdata in imgui_bridge.h.
    val drawData() const {
        const auto& d = bridge_.DrawData();
        return val(emscripten::typed_memory_view(d.size(), d.data()));
    }
    val fontAtlas() const {
        val o = val::object();
        o.set("ptr", reinterpret_cast<uintptr_t>(bridge_.FontPixels()));
        o.set("width", bridge_.FontWidth());
        o.set("height", bridge_.FontHeight());
        o.set("version", bridge_.FontVersion());
        o.set("textureId", sc::app::kFontTextureId);
        return o;
    }
    double fontVersion() const { return bridge_.FontVersion(); }

    // ---- Clipboard
    std::string getClipboard() const { return bridge_.Clipboard(); }
    void setClipboard(const std::string& text) { bridge_.SetClipboard(text); }
    double clipboardSerial() const { return bridge_.ClipboardSerial(); }

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
        return Guard([&] { found = sc::app::SelectPreset(*state_, file); return std::string(); }).empty() && found;
    }
    // Clusters, calibration and the parallel split (see app.h); each returns "" or the error.
    std::string addSystem(const std::string& file, const std::string& system_json, const std::string& accelerator_json) {
        return Guard([&] { return sc::app::AddSystem(*state_, file, system_json, accelerator_json); });
    }
    bool selectSystem(const std::string& file) {
        bool found = false;
        return Guard([&] { found = sc::app::SelectSystem(*state_, file); return std::string(); }).empty() && found;
    }
    // Serving presets (presets/inference/*.json) for the Serving tab; the first becomes current.
    std::string addServingPreset(const std::string& file, const std::string& json_text) {
        return Guard([&] { return sc::app::AddServingPreset(*state_, file, json_text); });
    }
    // The Serving tab's last simulation as `stagecraft serve` prints it ("" before one ran).
    std::string servingReport() const { return state_->inference.report; }
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
        return Guard([&] { sc::app::RejectLink(*state_, message); return std::string(); });
    }
    bool takeCopyLinkRequest() { return sc::app::TakeCopyLinkRequest(*state_); }
    void setLinkNote(const std::string& note) { sc::app::SetLinkNote(*state_, note); }

    std::string currentModelJson() const { return sc::app::CurrentModelJson(*state_); }
    std::string currentParallelSpec() const { return sc::app::CurrentParallelSpec(*state_); }
    // Times a trace stream's compute nodes on the current cluster (duration_micros); false when none is chosen.
    bool timeTraceStream(TraceStream& stream) const {
        const sc::System* sys = sc::app::CurrentSystem(*state_);
        if (!sys) return false;
        stream.TimeOn(*sys, sc::app::CurrentCalibration(*state_), sc::app::CurrentOptions(*state_));
        return true;
    }

    // Trace-download handshake with the page (DownloadState in app_state.h).
    bool takeDownloadRequest() { return sc::app::TakeDownloadRequest(*state_); }
    void setDownloadProgress(int done, int total, double bytes, bool running, const std::string& message) {
        sc::app::SetDownloadProgress(*state_, done, total, bytes, running, message);
    }
    bool downloadCancelled() const { return sc::app::DownloadCancelled(*state_); }
    void setDownloadSupported(bool supported) { sc::app::SetDownloadSupported(*state_, supported); }

    PagePool pool() { return PagePool(*state_); }  // the worker pool's handshake (worker_bindings.cpp)

    std::string mirrorText() const {
        try {
            return sc::app::MirrorText(*state_);
        } catch (const std::exception& e) {
            return "error: " + Describe(e) + "\n";
        }
    }
    // Increments whenever mirrorText() changes (JS touches the DOM only then).
    double mirrorVersion() {
        std::string text = mirrorText();
        if (text != mirror_cache_ || mirror_version_ == 0) {
            mirror_cache_ = std::move(text);
            ++mirror_version_;
        }
        return mirror_version_;
    }

    // ---- Debug / test helpers (CSS px, last frame)
    val windowRect(const std::string& name) const {
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
    val itemRect(const std::string& window, const std::string& label) {
        sc::app::Rect r = bridge_.ItemRect(window, label);
        if (!r.found) return val::null();
        val o = val::object();
        o.set("x", r.x);
        o.set("y", r.y);
        o.set("w", r.w);
        o.set("h", r.h);
        return o;
    }
    val styleColor(const std::string& name) const {
        float c[4];
        if (!bridge_.StyleColor(name, c)) return val::null();
        val a = val::array();
        for (float f : c) a.call<void>("push", f);
        return a;
    }

private:
    // "" or the error of f() (which returns "" or the error itself), through the one guard (guard.h).
    template <typename F>
    static std::string Guard(F&& f) {
        std::string returned;
        std::string thrown = scweb::ErrorOf([&] { returned = f(); });
        return thrown.empty() ? returned : thrown;
    }
    void Fail(std::string message) {
        last_error_ = std::move(message);
        bridge_.RecoverFromException();
    }

    sc::app::ImGuiBridge bridge_;  // first: the ImGui context exists before the app state
    sc::app::AppState* state_;
    std::string last_error_;
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
        .function("mirrorText", &WebApp::mirrorText)
        .function("mirrorVersion", &WebApp::mirrorVersion)
        .function("windowRect", &WebApp::windowRect)
        .function("itemRect", &WebApp::itemRect)
        .function("styleColor", &WebApp::styleColor);
}
