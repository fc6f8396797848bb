#include "inference/trace_parse.h"

#include <cctype>
#include <string>

#include "config/error.h"
#include "config/numbers.h"

namespace sc {

namespace {

std::vector<std::string_view> Split(std::string_view line) {
    std::vector<std::string_view> cols;
    size_t start = 0;
    while (true) {
        const size_t comma = line.find(',', start);
        std::string_view col =
            line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        while (!col.empty() && std::isspace(static_cast<unsigned char>(col.front()))) col.remove_prefix(1);
        while (!col.empty() && std::isspace(static_cast<unsigned char>(col.back()))) col.remove_suffix(1);
        cols.push_back(col);
        if (comma == std::string_view::npos) return cols;
        start = comma + 1;
    }
}

}  // namespace

std::vector<TraceRequest> ParseTraceCsv(std::string_view text) {
    std::vector<TraceRequest> out;
    size_t pos = 0;
    int line_no = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view line = text.substr(pos, nl - pos);
        pos = nl + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const size_t first = line.find_first_not_of(" \t");
        if (first == std::string_view::npos || line[first] == '#') continue;
        const char c0 = line[first];
        if (out.empty() && line_no == 1 && !std::isdigit(static_cast<unsigned char>(c0)) && c0 != '.')
            continue;  // header
        const std::vector<std::string_view> cols = Split(line);
        const std::string where = "trace line " + std::to_string(line_no);
        if (cols.size() < 3 || cols.size() > 4)
            throw Error(where, "expected arrival_s,input_tokens,output_tokens[,priority], got " +
                                   std::to_string(cols.size()) + " columns");
        TraceRequest t;
        t.arrival = ParseNumberIn(where + " arrival_s", cols[0], 0, kMaxClockSeconds);
        t.input = static_cast<int>(ParseIntegerIn(where + " input_tokens", cols[1], 1, kMaxModelDim));
        t.output = static_cast<int>(ParseIntegerIn(where + " output_tokens", cols[2], 1, kMaxModelDim));
        if (cols.size() == 4) t.priority = static_cast<int>(ParseIntegerIn(where + " priority", cols[3], 0, 1000));
        if (!out.empty() && t.arrival < out.back().arrival)
            throw Error(where + " arrival_s", "arrivals must not go back in time: " + std::string(cols[0]) +
                                                  " s after a request at " + std::to_string(out.back().arrival) + " s");
        out.push_back(t);
    }
    if (out.empty()) throw Error("trace", "no requests in the trace");
    return out;
}

}  // namespace sc
