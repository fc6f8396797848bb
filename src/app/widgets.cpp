// Small widgets shared by the panels.
#include <chrono>
#include <cstdint>
#include <cstring>

#include "app/panels.h"
#include "imgui.h"

namespace sc::app {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// A numeric field's edit is applied when the user presses Enter, leaves the field (click, Tab) or stops
// typing for kApplyPause seconds: not at every keystroke, so typing "16" into dp never computes dp=1 first.
// ImGui shows its own text buffer while a field is active, so the value being typed is kept beside it, in the
// window's state storage (no globals): a "pending" flag, the value (as the two halves of a double's bits) and
// the time of the last keystroke.
constexpr double kApplyPause = 0.6;

namespace {

struct PendingKeys {
    ImGuiID has, lo, hi, at;
};

PendingKeys KeysOf(const char* label) {
    ImGui::PushID(label);
    PendingKeys k{ImGui::GetID("pending"), ImGui::GetID("lo"), ImGui::GetID("hi"), ImGui::GetID("at")};
    ImGui::PopID();
    return k;
}

double LoadValue(const ImGuiStorage* st, const PendingKeys& k) {
    const uint64_t bits =
        static_cast<uint32_t>(st->GetInt(k.lo)) | (uint64_t{static_cast<uint32_t>(st->GetInt(k.hi))} << 32);
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}

void StoreValue(ImGuiStorage* st, const PendingKeys& k, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    st->SetInt(k.lo, static_cast<int>(static_cast<uint32_t>(bits)));
    st->SetInt(k.hi, static_cast<int>(static_cast<uint32_t>(bits >> 32)));
}

// Call right after the input widget: `edited` and `typed` are what it returned and parsed this frame.
// Returns true (with *applied) when the pending edit is to be applied now.
bool ApplyWhenDone(const PendingKeys& k, bool edited, double typed, double* applied) {
    ImGuiStorage* st = ImGui::GetStateStorage();
    const double now = ImGui::GetTime();
    if (edited) {
        StoreValue(st, k, typed);
        st->SetBool(k.has, true);
        st->SetFloat(k.at, static_cast<float>(now));
    }
    if (!st->GetBool(k.has)) return false;
    const bool left = !ImGui::IsItemActive();  // Enter, Tab or a click elsewhere ended the edit
    const bool paused = now - st->GetFloat(k.at) >= kApplyPause;
    if (!left && !paused) return false;
    *applied = LoadValue(st, k);
    st->SetBool(k.has, false);
    return true;
}

// The value the widget compares its parse against: the pending one while typing (so typing back to the
// applied value still counts as an edit), else the applied one.
double Shown(const PendingKeys& k, double applied) {
    const ImGuiStorage* st = ImGui::GetStateStorage();
    return st->GetBool(k.has) ? LoadValue(st, k) : applied;
}

void Help(const char* help) {
    if (help && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", help);
}

}  // namespace

bool IntField(const char* label, int* v, const char* help) {
    const PendingKeys k = KeysOf(label);
    int shown = static_cast<int>(Shown(k, *v));
    const bool edited = ImGui::InputInt(label, &shown, 0, 0);
    Help(help);
    double applied = 0;
    if (!ApplyWhenDone(k, edited, shown, &applied) || static_cast<int>(applied) == *v) return false;
    *v = static_cast<int>(applied);
    return true;
}

bool DoubleField(const char* label, double* v, const char* format, const char* help) {
    const PendingKeys k = KeysOf(label);
    double shown = Shown(k, *v);
    const bool edited = ImGui::InputDouble(label, &shown, 0, 0, format);
    Help(help);
    double applied = 0;
    if (!ApplyWhenDone(k, edited, shown, &applied) || applied == *v) return false;
    *v = applied;
    return true;
}

void TableRow(const char* label, const std::string& value) {
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    ImGui::TextUnformatted(label);
    ImGui::TableSetColumnIndex(1);
    ImGui::TextUnformatted(value.c_str());
}

void ErrorText(const std::string& message) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
    ImGui::TextWrapped("%s", message.c_str());
    ImGui::PopStyleColor();
}

void WarningText(const std::string& message) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.90f, 0.62f, 0.0f, 1.0f));  // Okabe-Ito orange
    ImGui::TextWrapped("%s", message.c_str());
    ImGui::PopStyleColor();
}

}  // namespace sc::app
