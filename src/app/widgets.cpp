// Small widgets shared by the panels.
#include "app/panels.h"
#include "imgui.h"

namespace sc::app {

bool IntField(const char* label, int* v, const char* help) {
    bool changed = ImGui::InputInt(label, v, 0, 0);
    if (help && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", help);
    return changed;
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

}  // namespace sc::app
