// A request trace as text (what `stagecraft serve --trace FILE` reads): one request per line,
//   arrival_s,input_tokens,output_tokens[,priority]
// with arrival times in seconds, non-decreasing. Blank lines and lines starting with '#' are skipped, and so is
// a first line that does not start with a number (a CSV header). Errors name the line and the column.
#pragma once
#include <string_view>
#include <vector>

#include "inference/serving_config.h"

namespace sc {

std::vector<TraceRequest> ParseTraceCsv(std::string_view text);

}  // namespace sc
