// Platform + renderer glue between Dear ImGui and the browser page.
//
// The bridge owns the ImGui context. The page (web/input.js) forwards DOM input to it, calls
// BeginFrame/EndFrame once per animation frame, and web/renderer.js draws the exported draw data
// with WebGPU straight out of wasm memory (no copies on the C++ side).
//
// Coordinates: ImGui works in CSS pixels (io.DisplaySize); io.DisplayFramebufferScale is the
// devicePixelRatio, so clip rectangles are exported in framebuffer (device) pixels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

struct ImGuiContext;
struct ImGuiIO;

namespace sc::app {

// Layout of the flat draw-data description (all 32-bit words; "f32" words are IEEE floats that JS
// reads through a Float32Array over the same bytes).
namespace drawdata {
// Header.
constexpr int kListCount = 0;    // number of draw lists
constexpr int kCmdCount = 1;     // total draw commands exported (callbacks and empty ones skipped)
constexpr int kTotalVtx = 2;     // total vertices
constexpr int kTotalIdx = 3;     // total indices
constexpr int kDisplayPosX = 4;  // f32, CSS px
constexpr int kDisplayPosY = 5;  // f32
constexpr int kDisplayW = 6;     // f32
constexpr int kDisplayH = 7;     // f32
constexpr int kFbScaleX = 8;     // f32
constexpr int kFbScaleY = 9;     // f32
// The layout itself, written into every frame's header so web/renderer.js can check its constants against it
// once at start (a mismatch is a clear error, not a garbled frame). One byte each, low byte first:
constexpr int kLayout = 10;        // kHeaderWords, kListWords, kCmdWords, sizeof(ImDrawVert)
constexpr int kVertexLayout = 11;  // sizeof(ImDrawIdx), offsetof(ImDrawVert, pos), offsetof uv, offsetof col
constexpr int kHeaderWords = 12;
// Per draw list, kListWords words: vertex byte pointer, vertex count, index byte pointer, index
// count, first command (index into the command table), command count. The index allocation is
// guaranteed to hold a multiple of 4 bytes, so JS may upload round_up(idx_count * 2, 4) bytes.
constexpr int kListWords = 6;
// Per command, kCmdWords words: clip rect min x, min y, max x, max y (f32, framebuffer px relative to
// DisplayPos, not clamped), texture id, index offset (in indices, within its list), vertex offset
// (within its list), element count.
constexpr int kCmdWords = 8;
}  // namespace drawdata

constexpr uint32_t kFontTextureId = 1;  // ImTextureID of the font atlas

// The font's layout size in CSS px: the atlas is rasterised at this times the device pixel ratio (crisp text), and
// io.FontGlobalScale brings it back to this size times the page's UI scale (app.cpp DrawUI).
inline constexpr float kFontCssPx = 13.0f;  // ProggyClean's native size

struct Rect {
    bool found = false;
    float x = 0, y = 0, w = 0, h = 0;  // CSS px
};

struct WindowInfo {
    bool found = false;
    float x = 0, y = 0, w = 0, h = 0;  // CSS px
    float title_bar_height = 0;
    bool focused = false;  // it is (the root of) the focused window
    bool collapsed = false;
    bool hidden = false;
};

class ImGuiBridge {
public:
    ImGuiBridge();
    ~ImGuiBridge();
    ImGuiBridge(const ImGuiBridge&) = delete;
    ImGuiBridge& operator=(const ImGuiBridge&) = delete;

    // ---- Input (queued; processed by the next BeginFrame). Positions in CSS px.
    void MousePos(float x, float y);
    void MouseLeave();
    // DOM button numbering: 0 left, 1 middle, 2 right, 3 back, 4 forward.
    void MouseButton(int dom_button, bool down);
    // Wheel in ImGui units (one unit ~ one line / notch), positive = up/left as ImGui expects.
    void MouseWheel(float wheel_x, float wheel_y);
    // 0 mouse, 1 touch, 2 pen (PointerEvent.pointerType).
    void MouseSource(int source);
    // KeyboardEvent.code / .key, pressed state, modifiers bitmask (1 ctrl, 2 shift, 4 alt, 8 meta).
    // Returns true when the key maps to an ImGuiKey.
    bool Key(const std::string& code, const std::string& key, bool down, int mods);
    void Modifiers(int mods);
    void Focus(bool focused);
    void InputUtf8(const std::string& text);
    void InputUtf16(unsigned code_unit);
    void SetMacBehaviors(bool mac);

    // ---- Clipboard: ImGui writes through SetClipboardTextFn (serial increments, JS copies it to the
    // system clipboard); JS writes pasted text with SetClipboard before forwarding the paste shortcut.
    void SetClipboard(const std::string& text) { clipboard_ = text; }
    const std::string& Clipboard() const { return clipboard_; }
    uint32_t ClipboardSerial() const { return clipboard_serial_; }

    // ---- Frame. BeginFrame = NewFrame (display size in CSS px, dpr = devicePixelRatio, time in
    // seconds, any monotonic origin). The caller draws its UI, then calls EndFrame (Render + export).
    void BeginFrame(float css_width, float css_height, float dpr, double time_seconds);
    void EndFrame();
    // Recovers ImGui's stacks after an exception escaped the UI code between BeginFrame and EndFrame.
    void RecoverFromException();
    bool InFrame() const { return in_frame_; }
    uint64_t FrameCount() const { return frame_count_; }

    // ---- Output of the last EndFrame.
    const std::vector<uint32_t>& DrawData() const { return draw_data_; }
    bool WantTextInput() const;
    bool WantCaptureMouse() const;
    bool WantCaptureKeyboard() const;
    int MouseCursor() const;  // ImGuiMouseCursor (-1 none)
    // IME: where the text cursor is (CSS px), for placing the hidden <input>.
    bool ImeWanted() const { return ime_visible_; }
    float ImeX() const { return ime_x_; }
    float ImeY() const { return ime_y_; }
    float ImeLineHeight() const { return ime_line_height_; }

    // ---- Font atlas (RGBA32). The version changes whenever the atlas is rebuilt (devicePixelRatio
    // change: glyphs are rasterised at dpr x size so text stays crisp); JS re-uploads on change.
    const uint8_t* FontPixels() const { return font_pixels_; }
    int FontWidth() const { return font_width_; }
    int FontHeight() const { return font_height_; }
    uint32_t FontVersion() const { return font_version_; }

    // ---- Debug/test helpers (read the state of the last frame).
    WindowInfo FindWindow(const std::string& name) const;
    // Rect of the item labelled `label` (full label, or its visible part before "##") inside the
    // window `window` (or one of its child windows) in the last frame. Needs item hooks: with
    // IMGUI_ENABLE_TEST_ENGINE defined for the imgui target, any item; otherwise only items at the
    // root of the window's ID stack, located through ImGui's navigation (focuses that item).
    Rect ItemRect(const std::string& window, const std::string& label);
    // Style colour by ImGuiCol name ("TitleBgActive"), RGBA 0..1; found=false if unknown.
    bool StyleColor(const std::string& name, float out_rgba[4]) const;

    // Called by the test-engine hooks (internal).
    void OnItemInfo(ImGuiContext* ctx, uint32_t id, const char* label);
    void OnItemAdd(ImGuiContext* ctx, uint32_t id, float x0, float y0, float x1, float y1);
    void OnSetClipboard(const char* text);
    void OnImeData(bool visible, float x, float y, float line_height);

private:
    ImGuiIO& IO();  // makes our context current
    void BuildFonts(float scale);
    void ExportDrawData();

    ImGuiContext* ctx_ = nullptr;
    std::vector<uint32_t> draw_data_;
    std::string clipboard_;
    uint32_t clipboard_serial_ = 0;
    int mods_ = 0;
    bool in_frame_ = false;
    uint64_t frame_count_ = 0;
    double last_time_ = -1.0;

    uint8_t* font_pixels_ = nullptr;
    int font_width_ = 0, font_height_ = 0;
    uint32_t font_version_ = 0;
    float font_scale_ = 0.0f;

    bool ime_visible_ = false;
    float ime_x_ = 0, ime_y_ = 0, ime_line_height_ = 0;

    struct ItemRecord {
        std::string window;  // root window name
        std::string label;
        float x, y, w, h;
    };
    std::vector<ItemRecord> items_;       // recorded during the current frame
    std::vector<ItemRecord> last_items_;  // of the last completed frame
    bool record_items_ = false;           // switched on by the first ItemRect call
    uint32_t pending_label_id_ = 0;       // an item whose label came before its rect (tab items)
    std::string pending_label_;
    // Navigation-based locate (when the test-engine hooks are not compiled in).
    uint32_t locate_id_ = 0;
    std::string locate_window_;
};

}  // namespace sc::app
