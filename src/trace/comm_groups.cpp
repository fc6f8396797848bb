#include "trace/comm_groups.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "config/error.h"

namespace sc {
namespace {

constexpr size_t kChunk = 64 * 1024;  // hand text to the sink in pieces of about this size

void AppendInt(std::string* out, long long v) {
    char digits[24];
    const auto res = std::to_chars(digits, digits + sizeof(digits), v);
    out->append(digits, static_cast<size_t>(res.ptr - digits));
}

}  // namespace

void WriteCommGroups(ByteSink& sink, const std::vector<std::vector<int>>& groups, int num_ranks) {
    std::string out;
    out.reserve(kChunk + 256);
    std::vector<int> sorted;  // reused per group
    out += '{';
    for (size_t g = 0; g < groups.size(); ++g) {
        const long long id = static_cast<long long>(g) + 1;
        const auto fail = [&](const std::string& what) {
            throw Error("comm_groups[" + std::to_string(g) + "]", "group " + std::to_string(id) + ": " + what);
        };
        if (groups[g].empty()) fail("has no ranks");
        sorted.assign(groups[g].begin(), groups[g].end());
        std::sort(sorted.begin(), sorted.end());
        if (sorted.front() < 0 || sorted.back() >= num_ranks) {
            const int bad = sorted.front() < 0 ? sorted.front() : sorted.back();
            fail("rank " + std::to_string(bad) + " is outside 0.." + std::to_string(num_ranks - 1));
        }
        const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
        if (dup != sorted.end()) fail("rank " + std::to_string(*dup) + " is listed twice");

        out += g == 0 ? "\n  \"" : ",\n  \"";
        AppendInt(&out, id);
        out += "\": [";
        for (size_t i = 0; i < sorted.size(); ++i) {
            if (i) out += ", ";
            AppendInt(&out, sorted[i]);
            if (out.size() >= kChunk) {
                sink.Write(out);
                out.clear();
            }
        }
        out += ']';
    }
    out += groups.empty() ? "}\n" : "\n}\n";
    sink.Write(out);
}

}  // namespace sc
