#include "report/markdown.h"

#include <vector>

namespace sc {

namespace {

constexpr size_t kValueColumn = 30;  // where report/*.cpp's line() puts a value after a padded label

std::string Escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == '|' || c == '*' || c == '\\' || c == '`') out += '\\';
        out += c;
    }
    return out;
}

size_t Indent(std::string_view line) {
    size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    return i;
}

// A "label  value" line: at least two spaces before column 30 and the value starting exactly there.
bool IsPair(std::string_view line) {
    return line.size() > kValueColumn && line[kValueColumn] != ' ' && line[kValueColumn - 1] == ' ' &&
           line[kValueColumn - 2] == ' ' && Indent(line) < kValueColumn - 2;
}

bool IsHeading(std::string_view line) {
    for (std::string_view p : {"Model: ", "Training on ", "Traces: "})
        if (line.substr(0, p.size()) == p) return true;
    return false;
}

std::string TableRow(std::string_view line) {
    std::string_view label = line.substr(0, kValueColumn);
    while (!label.empty() && label.back() == ' ') label.remove_suffix(1);
    const size_t indent = Indent(label);
    std::string cell;
    for (size_t i = 0; i < indent / 2; ++i) cell += "&emsp;";  // the text's nesting (two spaces a level)
    cell += Escape(label.substr(indent));
    return "| " + cell + " | " + Escape(line.substr(kValueColumn)) + " |\n";
}

}  // namespace

std::string ReportMarkdown(std::string_view text) {
    std::string out;
    enum class Block { none, table, list, paragraph } block = Block::none;
    auto start = [&](Block b) {
        if (block == b && b != Block::paragraph) return;
        if (!out.empty()) out += '\n';  // a blank line ends the previous block
        if (b == Block::table) out += "| figure | value |\n|---|---|\n";
        block = b;
    };
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.find_first_not_of(' ') == std::string_view::npos) continue;
        if (IsPair(line)) {
            start(Block::table);
            out += TableRow(line);
        } else if (Indent(line) > 0) {
            start(Block::list);
            out += "- " + Escape(line.substr(Indent(line))) + "\n";
        } else if (IsHeading(line)) {
            start(Block::paragraph);
            out += "## " + Escape(line) + "\n";
        } else {
            start(Block::paragraph);
            out += "**" + Escape(line) + "**\n";
        }
    }
    return out;
}

}  // namespace sc
