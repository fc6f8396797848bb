#include "config/split_list.h"

namespace sc {

std::vector<std::string> SplitList(std::string_view s, char separator) {
    std::vector<std::string> out;
    size_t pos = 0;
    for (;;) {
        const size_t c = s.find(separator, pos);
        out.emplace_back(s.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
        if (c == std::string_view::npos) return out;
        pos = c + 1;
    }
}

}  // namespace sc
