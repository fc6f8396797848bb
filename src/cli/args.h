// Command-line flags: --name value, --name=value and boolean --name. Unknown flags are errors.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace sc::cli {

struct Args {
    std::string command;
    std::map<std::string, std::vector<std::string>> flags;  // every value given, in order
    bool Has(const std::string& name) const { return flags.count(name) > 0; }
    std::string Get(const std::string& name, const std::string& fallback = "") const;
    std::vector<std::string> All(const std::string& name) const;
};

// `boolean` lists flags that take no value. Throws sc::Error on an unknown flag or a missing value.
Args ParseArgs(int argc, char** argv, const std::vector<std::string>& valued, const std::vector<std::string>& boolean);

// The whole of a regular file of at most kMaxInputFileBytes; sc::Error on `flag` naming the path otherwise
// (missing, a directory, a device or FIFO, too large, unreadable).
std::string ReadFile(const std::string& path, const std::string& flag);

}  // namespace sc::cli
