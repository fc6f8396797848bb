// Comma-separated command-line and spec values ("4,8,16", "tp=8,pp=16"), split once for every parser.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sc {

// Every item between commas, empty ones included ("4,,8" gives "4", "", "8"; "" gives one empty item), so
// each parser decides what an empty item means and can name it in its error.
std::vector<std::string> SplitList(std::string_view s, char separator = ',');

}  // namespace sc
