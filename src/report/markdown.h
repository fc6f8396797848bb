// The page's report as Markdown ("Copy as Markdown"), converted from its text (engine_report.h's PageReportText)
// so every figure is the one the text, the CLI and the panels show. The text's layout is the contract:
//   - "label<spaces>value" with the value at column 30 (report/*.cpp pad labels to 30) -> a table row;
//   - a line starting "Model: ", "Training on " or "Traces: " (the three parts of the report) -> a heading;
//   - another line at column 0 -> a bold paragraph (a section title such as "Training state (...)");
//   - another indented line -> a list item.
#pragma once
#include <string>
#include <string_view>

namespace sc {

std::string ReportMarkdown(std::string_view text);

}  // namespace sc
