#include "app/imgui_bridge.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstring>
#include <unordered_map>

#include "imgui.h"
#include "imgui_internal.h"

namespace sc::app {
namespace {

ImGuiBridge* BridgeOf(ImGuiContext* ctx) { return ctx ? static_cast<ImGuiBridge*>(ctx->TestEngine) : nullptr; }

// KeyboardEvent.code (physical key) -> ImGuiKey, for keys whose meaning does not depend on the layout.
const std::unordered_map<std::string, ImGuiKey>& CodeMap() {
    static const std::unordered_map<std::string, ImGuiKey> map = [] {
        std::unordered_map<std::string, ImGuiKey> m = {
            {"Tab", ImGuiKey_Tab},
            {"ArrowLeft", ImGuiKey_LeftArrow},
            {"ArrowRight", ImGuiKey_RightArrow},
            {"ArrowUp", ImGuiKey_UpArrow},
            {"ArrowDown", ImGuiKey_DownArrow},
            {"PageUp", ImGuiKey_PageUp},
            {"PageDown", ImGuiKey_PageDown},
            {"Home", ImGuiKey_Home},
            {"End", ImGuiKey_End},
            {"Insert", ImGuiKey_Insert},
            {"Delete", ImGuiKey_Delete},
            {"Backspace", ImGuiKey_Backspace},
            {"Space", ImGuiKey_Space},
            {"Enter", ImGuiKey_Enter},
            {"Escape", ImGuiKey_Escape},
            {"ControlLeft", ImGuiKey_LeftCtrl},
            {"ControlRight", ImGuiKey_RightCtrl},
            {"ShiftLeft", ImGuiKey_LeftShift},
            {"ShiftRight", ImGuiKey_RightShift},
            {"AltLeft", ImGuiKey_LeftAlt},
            {"AltRight", ImGuiKey_RightAlt},
            {"MetaLeft", ImGuiKey_LeftSuper},
            {"MetaRight", ImGuiKey_RightSuper},
            {"OSLeft", ImGuiKey_LeftSuper},
            {"OSRight", ImGuiKey_RightSuper},
            {"ContextMenu", ImGuiKey_Menu},
            {"Quote", ImGuiKey_Apostrophe},
            {"Comma", ImGuiKey_Comma},
            {"Minus", ImGuiKey_Minus},
            {"Period", ImGuiKey_Period},
            {"Slash", ImGuiKey_Slash},
            {"Semicolon", ImGuiKey_Semicolon},
            {"Equal", ImGuiKey_Equal},
            {"BracketLeft", ImGuiKey_LeftBracket},
            {"Backslash", ImGuiKey_Backslash},
            {"BracketRight", ImGuiKey_RightBracket},
            {"Backquote", ImGuiKey_GraveAccent},
            {"CapsLock", ImGuiKey_CapsLock},
            {"ScrollLock", ImGuiKey_ScrollLock},
            {"NumLock", ImGuiKey_NumLock},
            {"PrintScreen", ImGuiKey_PrintScreen},
            {"Pause", ImGuiKey_Pause},
            {"NumpadDecimal", ImGuiKey_KeypadDecimal},
            {"NumpadDivide", ImGuiKey_KeypadDivide},
            {"NumpadMultiply", ImGuiKey_KeypadMultiply},
            {"NumpadSubtract", ImGuiKey_KeypadSubtract},
            {"NumpadAdd", ImGuiKey_KeypadAdd},
            {"NumpadEnter", ImGuiKey_KeypadEnter},
            {"NumpadEqual", ImGuiKey_KeypadEqual},
        };
        for (int i = 0; i < 10; ++i) {
            m["Digit" + std::to_string(i)] = static_cast<ImGuiKey>(ImGuiKey_0 + i);
            m["Numpad" + std::to_string(i)] = static_cast<ImGuiKey>(ImGuiKey_Keypad0 + i);
        }
        for (int i = 0; i < 26; ++i) m[std::string("Key") + char('A' + i)] = static_cast<ImGuiKey>(ImGuiKey_A + i);
        for (int i = 0; i < 12; ++i) m["F" + std::to_string(i + 1)] = static_cast<ImGuiKey>(ImGuiKey_F1 + i);
        return m;
    }();
    return map;
}

// Letters follow the layout (KeyboardEvent.key) so Ctrl+Z is Ctrl+Z on AZERTY too; everything else
// follows the physical key.
ImGuiKey KeyFromDom(const std::string& code, const std::string& key) {
    if (key.size() == 1) {
        char c = key[0];
        if (c >= 'a' && c <= 'z') return static_cast<ImGuiKey>(ImGuiKey_A + (c - 'a'));
        if (c >= 'A' && c <= 'Z') return static_cast<ImGuiKey>(ImGuiKey_A + (c - 'A'));
    }
    const auto& m = CodeMap();
    if (auto it = m.find(code); it != m.end()) return it->second;
    // No code (synthetic events, some virtual keyboards): fall back to the key name.
    if (code.empty() && !key.empty()) {
        if (auto it = m.find(key); it != m.end()) return it->second;
        if (key == "Esc") return ImGuiKey_Escape;
        if (key == "Left") return ImGuiKey_LeftArrow;
        if (key == "Right") return ImGuiKey_RightArrow;
        if (key == "Up") return ImGuiKey_UpArrow;
        if (key == "Down") return ImGuiKey_DownArrow;
        if (key == "Del") return ImGuiKey_Delete;
        if (key.size() == 1 && key[0] >= '0' && key[0] <= '9')
            return static_cast<ImGuiKey>(ImGuiKey_0 + (key[0] - '0'));
    }
    return ImGuiKey_None;
}

void SetClipboardThunk(void* user, const char* text) { static_cast<ImGuiBridge*>(user)->OnSetClipboard(text); }
const char* GetClipboardThunk(void* user) { return static_cast<ImGuiBridge*>(user)->Clipboard().c_str(); }
void SetImeDataThunk(ImGuiViewport*, ImGuiPlatformImeData* data) {
    if (ImGuiBridge* b = BridgeOf(ImGui::GetCurrentContext()))
        b->OnImeData(data->WantVisible, data->InputPos.x, data->InputPos.y, data->InputLineHeight);
}

bool LabelMatches(const char* label, const std::string& query) {
    if (!label) return false;
    if (query == label) return true;
    const char* end = ImGui::FindRenderedTextEnd(label);
    return query.size() == size_t(end - label) && std::memcmp(label, query.data(), query.size()) == 0;
}

}  // namespace

ImGuiBridge::ImGuiBridge() {
    IMGUI_CHECKVERSION();
    ctx_ = ImGui::CreateContext();
    ImGui::SetCurrentContext(ctx_);
    ctx_->TestEngine = this;  // our item hooks find the bridge through the context

    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // no imgui.ini in the browser
    io.LogFilename = nullptr;
    io.BackendPlatformName = "stagecraft_web";
    io.BackendRendererName = "stagecraft_webgpu_js";
    io.BackendFlags |= ImGuiBackendFlags_HasMouseCursors | ImGuiBackendFlags_RendererHasVtxOffset;
    io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
    io.SetClipboardTextFn = SetClipboardThunk;
    io.GetClipboardTextFn = GetClipboardThunk;
    io.ClipboardUserData = this;
    io.SetPlatformImeDataFn = SetImeDataThunk;
    io.ConfigMacOSXBehaviors = false;  // JS switches it on for Apple platforms
    ImGui::StyleColorsDark();
    BuildFonts(1.0f);
}

ImGuiBridge::~ImGuiBridge() {
    if (ctx_) {
        ctx_->TestEngine = nullptr;
        ImGui::DestroyContext(ctx_);
    }
}

void ImGuiBridge::BuildFonts(float scale) {
    ImGuiIO& io = ImGui::GetIO();
    io.Fonts->Clear();
    ImFontConfig cfg;
    cfg.SizePixels = kFontCssPx * scale;  // rasterised for the device pixels
    io.Fonts->AddFontDefault(&cfg);
    io.FontGlobalScale = 1.0f / scale;  // ... and laid out at kFontCssPx CSS px (DrawUI applies the UI scale too)
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    io.Fonts->SetTexID(reinterpret_cast<ImTextureID>(static_cast<uintptr_t>(kFontTextureId)));
    font_pixels_ = pixels;
    font_width_ = w;
    font_height_ = h;
    font_scale_ = scale;
    ++font_version_;
}

// ---- Input -------------------------------------------------------------------------------------

ImGuiIO& ImGuiBridge::IO() {
    ImGui::SetCurrentContext(ctx_);
    return ImGui::GetIO();
}

void ImGuiBridge::MousePos(float x, float y) { IO().AddMousePosEvent(x, y); }
void ImGuiBridge::MouseLeave() { IO().AddMousePosEvent(-FLT_MAX, -FLT_MAX); }

void ImGuiBridge::MouseButton(int dom_button, bool down) {
    static constexpr int kMap[5] = {0, 2, 1, 3, 4};  // DOM left, middle, right, back, forward
    if (dom_button < 0 || dom_button > 4) return;
    IO().AddMouseButtonEvent(kMap[dom_button], down);
}

void ImGuiBridge::MouseWheel(float wheel_x, float wheel_y) { IO().AddMouseWheelEvent(wheel_x, wheel_y); }

void ImGuiBridge::MouseSource(int source) {
    ImGuiMouseSource s = source == 1   ? ImGuiMouseSource_TouchScreen
                         : source == 2 ? ImGuiMouseSource_Pen
                                       : ImGuiMouseSource_Mouse;
    IO().AddMouseSourceEvent(s);
}

void ImGuiBridge::Modifiers(int mods) {
    ImGuiIO& io = IO();
    if ((mods ^ mods_) & 1) io.AddKeyEvent(ImGuiMod_Ctrl, (mods & 1) != 0);
    if ((mods ^ mods_) & 2) io.AddKeyEvent(ImGuiMod_Shift, (mods & 2) != 0);
    if ((mods ^ mods_) & 4) io.AddKeyEvent(ImGuiMod_Alt, (mods & 4) != 0);
    if ((mods ^ mods_) & 8) io.AddKeyEvent(ImGuiMod_Super, (mods & 8) != 0);
    mods_ = mods;
}

bool ImGuiBridge::Key(const std::string& code, const std::string& key, bool down, int mods) {
    Modifiers(mods);
    ImGuiKey k = KeyFromDom(code, key);
    if (k == ImGuiKey_None) return false;
    IO().AddKeyEvent(k, down);
    return true;
}

void ImGuiBridge::Focus(bool focused) {
    IO().AddFocusEvent(focused);
    if (!focused) mods_ = 0;  // ImGui clears its key state on focus loss
}

void ImGuiBridge::InputUtf8(const std::string& text) { IO().AddInputCharactersUTF8(text.c_str()); }
void ImGuiBridge::InputUtf16(unsigned code_unit) { IO().AddInputCharacterUTF16(static_cast<ImWchar16>(code_unit)); }
void ImGuiBridge::SetMacBehaviors(bool mac) { IO().ConfigMacOSXBehaviors = mac; }

void ImGuiBridge::OnSetClipboard(const char* text) {
    clipboard_ = text ? text : "";
    ++clipboard_serial_;
}

void ImGuiBridge::OnImeData(bool visible, float x, float y, float line_height) {
    ime_visible_ = visible;
    ime_x_ = x;
    ime_y_ = y;
    ime_line_height_ = line_height;
}

// ---- Frame -------------------------------------------------------------------------------------

void ImGuiBridge::BeginFrame(float css_width, float css_height, float dpr, double time_seconds) {
    ImGui::SetCurrentContext(ctx_);
    if (!(dpr > 0.0f) || !std::isfinite(dpr)) dpr = 1.0f;
    float font_scale = std::clamp(dpr, 1.0f, 4.0f);
    if (std::fabs(font_scale - font_scale_) > 0.01f) BuildFonts(font_scale);

    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(std::max(css_width, 0.0f), std::max(css_height, 0.0f));
    io.DisplayFramebufferScale = ImVec2(dpr, dpr);
    double dt = last_time_ < 0.0 ? 1.0 / 60.0 : time_seconds - last_time_;
    io.DeltaTime = static_cast<float>(dt > 1e-5 ? std::min(dt, 1.0) : 1e-5);
    last_time_ = time_seconds;

    items_.clear();
    ctx_->TestEngineHookItems = record_items_;
    ImGui::NewFrame();
    in_frame_ = true;

    if (locate_id_ != 0) {  // navigation-based ItemRect fallback: focus the item so ImGui records its rect
        if (ImGuiWindow* w = ImGui::FindWindowByName(locate_window_.c_str())) {
            ImGui::FocusWindow(w);
            ImGui::SetFocusID(locate_id_, w);
        }
        locate_id_ = 0;
    }
}

void ImGuiBridge::RecoverFromException() {
    if (in_frame_) ImGui::ErrorCheckEndFrameRecover(nullptr);
}

void ImGuiBridge::EndFrame() {
    if (!in_frame_) return;
    ImGui::Render();
    in_frame_ = false;
    ++frame_count_;
    last_items_.swap(items_);
    ExportDrawData();
}

void ImGuiBridge::ExportDrawData() {
    namespace dd = drawdata;
    ImDrawData* d = ImGui::GetDrawData();
    draw_data_.assign(dd::kHeaderWords, 0);
    auto bytes4 = [](size_t a, size_t b, size_t c, size_t d) {
        return static_cast<uint32_t>(a | b << 8 | c << 16 | d << 24);
    };
    static_assert(dd::kHeaderWords < 256 && dd::kListWords < 256 && dd::kCmdWords < 256 && sizeof(ImDrawVert) < 256);
    draw_data_[dd::kLayout] = bytes4(dd::kHeaderWords, dd::kListWords, dd::kCmdWords, sizeof(ImDrawVert));
    draw_data_[dd::kVertexLayout] =
        bytes4(sizeof(ImDrawIdx), offsetof(ImDrawVert, pos), offsetof(ImDrawVert, uv), offsetof(ImDrawVert, col));
    auto put_f = [](uint32_t& word, float f) { std::memcpy(&word, &f, 4); };
    if (!d || !d->Valid) return;
    const ImVec2 pos = d->DisplayPos, scale = d->FramebufferScale;
    put_f(draw_data_[dd::kDisplayPosX], pos.x);
    put_f(draw_data_[dd::kDisplayPosY], pos.y);
    put_f(draw_data_[dd::kDisplayW], d->DisplaySize.x);
    put_f(draw_data_[dd::kDisplayH], d->DisplaySize.y);
    put_f(draw_data_[dd::kFbScaleX], scale.x);
    put_f(draw_data_[dd::kFbScaleY], scale.y);

    const int lists = d->CmdListsCount;
    draw_data_.resize(dd::kHeaderWords + size_t(lists) * dd::kListWords, 0);
    uint32_t cmd_count = 0, total_vtx = 0, total_idx = 0;
    for (int n = 0; n < lists; ++n) {
        ImDrawList* list = d->CmdLists[n];
        // JS uploads index data rounded up to 4 bytes: make sure the allocation covers it.
        if (list->IdxBuffer.Size & 1) list->IdxBuffer.reserve(list->IdxBuffer.Size + 1);
        const uint32_t first_cmd = cmd_count;
        for (const ImDrawCmd& cmd : list->CmdBuffer) {
            if (cmd.UserCallback != nullptr || cmd.ElemCount == 0) continue;  // no callbacks in this app
            uint32_t w[dd::kCmdWords];
            float clip[4] = {(cmd.ClipRect.x - pos.x) * scale.x, (cmd.ClipRect.y - pos.y) * scale.y,
                             (cmd.ClipRect.z - pos.x) * scale.x, (cmd.ClipRect.w - pos.y) * scale.y};
            std::memcpy(w, clip, sizeof clip);
            w[4] = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(cmd.GetTexID()));
            w[5] = cmd.IdxOffset;
            w[6] = cmd.VtxOffset;
            w[7] = cmd.ElemCount;
            draw_data_.insert(draw_data_.end(), w, w + dd::kCmdWords);
            ++cmd_count;
        }
        uint32_t* l = &draw_data_[dd::kHeaderWords + size_t(n) * dd::kListWords];
        l[0] = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(list->VtxBuffer.Data));
        l[1] = static_cast<uint32_t>(list->VtxBuffer.Size);
        l[2] = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(list->IdxBuffer.Data));
        l[3] = static_cast<uint32_t>(list->IdxBuffer.Size);
        l[4] = first_cmd;
        l[5] = cmd_count - first_cmd;
        total_vtx += l[1];
        total_idx += l[3];
    }
    draw_data_[dd::kListCount] = static_cast<uint32_t>(lists);
    draw_data_[dd::kCmdCount] = cmd_count;
    draw_data_[dd::kTotalVtx] = total_vtx;
    draw_data_[dd::kTotalIdx] = total_idx;
}

bool ImGuiBridge::WantTextInput() const { return ctx_->IO.WantTextInput; }
bool ImGuiBridge::WantCaptureMouse() const { return ctx_->IO.WantCaptureMouse; }
bool ImGuiBridge::WantCaptureKeyboard() const { return ctx_->IO.WantCaptureKeyboard; }
int ImGuiBridge::MouseCursor() const { return ctx_->IO.MouseDrawCursor ? ImGuiMouseCursor_None : ctx_->MouseCursor; }

// ---- Debug helpers -------------------------------------------------------------------------------

WindowInfo ImGuiBridge::FindWindow(const std::string& name) const {
    WindowInfo info;
    ImGuiWindow* w = ImGui::FindWindowByName(name.c_str());
    if (!w) return info;
    info.found = true;
    info.x = w->Pos.x;
    info.y = w->Pos.y;
    info.w = w->Size.x;
    info.h = w->Size.y;
    info.title_bar_height = (w->Flags & ImGuiWindowFlags_NoTitleBar) ? 0.0f : w->TitleBarHeight();
    const ImGuiWindow* nav = ctx_->NavWindow;
    info.focused = nav && nav->RootWindow == w->RootWindow;
    info.collapsed = w->Collapsed;
    info.hidden = !w->WasActive || w->Hidden;
    return info;
}

void ImGuiBridge::OnItemAdd(ImGuiContext* ctx, uint32_t id, float x0, float y0, float x1, float y1) {
    if (id == 0 || id != pending_label_id_ || !ctx->CurrentWindow || x1 <= x0) return;
    items_.push_back({ctx->CurrentWindow->RootWindow->Name, pending_label_, x0, y0, x1 - x0, y1 - y0});
    pending_label_id_ = 0;
}

void ImGuiBridge::OnItemInfo(ImGuiContext* ctx, uint32_t id, const char* label) {
    if (!label || !label[0] || !ctx->CurrentWindow) return;
    // ItemInfo follows the item's ItemAdd, so LastItemData still describes it. NavRect is the
    // interactive part (an InputText's frame without its label), the same rect navigation records.
    const ImRect r = ctx->LastItemData.ID == id ? ctx->LastItemData.NavRect : ImRect();
    if (r.GetWidth() <= 0 && r.GetHeight() <= 0) {
        // Some widgets (tab items) announce their label before adding the item: keep the label until
        // OnItemAdd brings the rect.
        pending_label_id_ = id;
        pending_label_ = label;
        return;
    }
    items_.push_back({ctx->CurrentWindow->RootWindow->Name, label, r.Min.x, r.Min.y, r.GetWidth(), r.GetHeight()});
}

Rect ImGuiBridge::ItemRect(const std::string& window, const std::string& label) {
    Rect out;
    if (!record_items_) {  // start recording; the answer comes after the next frame
        record_items_ = true;
        return out;
    }
    for (const ItemRecord& it : last_items_) {
        if (it.window == window && LabelMatches(it.label.c_str(), label)) {
            out = {true, it.x, it.y, it.w, it.h};
            return out;
        }
    }
    if (!last_items_.empty()) return out;  // hooks work; the item is not on screen
    // No item hooks compiled in (IMGUI_ENABLE_TEST_ENGINE undefined): find an item at the root of
    // the window's ID stack through keyboard navigation, which records the focused item's rect.
    ImGuiWindow* w = ImGui::FindWindowByName(window.c_str());
    if (!w) return out;
    const ImGuiID id = ImHashStr(label.c_str(), 0, w->ID);
    if (ctx_->NavId == id && ctx_->NavWindow == w) {
        ImRect r = ImGui::WindowRectRelToAbs(w, w->NavRectRel[ImGuiNavLayer_Main]);
        if (r.GetWidth() > 0) {
            out = {true, r.Min.x, r.Min.y, r.GetWidth(), r.GetHeight()};
            return out;
        }
    }
    locate_id_ = id;
    locate_window_ = window;
    return out;
}

bool ImGuiBridge::StyleColor(const std::string& name, float out_rgba[4]) const {
    for (int i = 0; i < ImGuiCol_COUNT; ++i) {
        if (name == ImGui::GetStyleColorName(i)) {
            const ImVec4& c = ImGui::GetStyle().Colors[i];
            out_rgba[0] = c.x;
            out_rgba[1] = c.y;
            out_rgba[2] = c.z;
            out_rgba[3] = c.w;
            return true;
        }
    }
    return false;
}

}  // namespace sc::app

// ---- Dear ImGui item hooks (compiled into ImGui when the imgui target defines
// IMGUI_ENABLE_TEST_ENGINE; unused otherwise). They only record item rects for ItemRect().
void ImGuiTestEngineHook_ItemAdd(ImGuiContext* ctx, ImGuiID id, const ImRect& bb, const ImGuiLastItemData*) {
    if (auto* b = static_cast<sc::app::ImGuiBridge*>(ctx->TestEngine))
        b->OnItemAdd(ctx, id, bb.Min.x, bb.Min.y, bb.Max.x, bb.Max.y);
}
void ImGuiTestEngineHook_ItemInfo(ImGuiContext* ctx, ImGuiID id, const char* label, ImGuiItemStatusFlags) {
    if (auto* b = static_cast<sc::app::ImGuiBridge*>(ctx->TestEngine)) b->OnItemInfo(ctx, id, label);
}
void ImGuiTestEngineHook_Log(ImGuiContext*, const char*, ...) {}
const char* ImGuiTestEngine_FindItemDebugLabel(ImGuiContext*, ImGuiID) { return nullptr; }
