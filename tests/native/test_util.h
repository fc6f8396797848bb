// Shared by the native tests: reading a file, running the stagecraft command line as a user would.
#pragma once
#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/error.h"

namespace sctest {

// The q-quantile of sorted `v`, linearly interpolated between neighbours (the published-runs tables' quartiles).
inline double Quantile(const std::vector<double>& v, double q) {
    const double at = q * (v.size() - 1);
    const size_t lo = static_cast<size_t>(at), hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (at - lo) * (v[hi] - v[lo]);
}

// The whole file, bytes as they are. Throws when it cannot be read, which fails the test with the path.
// The build folder (where the CLI is built): the tests' generated tables go there (validation.md, ...).
inline std::string BuildDir() { return std::filesystem::path(SC_CLI_PATH).parent_path().string(); }

inline std::string ReadFile(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// The independent Chakra checker (chakra_check.py, Python 3 standard library only), which is not part of this
// repository: $SC_CHAKRA_CHECK when set (a wrong path then fails the tests that run it, rather than skipping
// them), else the project's reference material beside the clone when present. "" when there is none: the tests
// that need it skip with NoCheckerReason(); our own reader's checks of the same traces run either way.
inline std::string ChakraCheckerBeside() {
    return (std::filesystem::path(SC_SOURCE_DIR) / "../shared/tools/chakra_check.py").lexically_normal().string();
}
inline std::string ChakraCheckerPath() {
    if (const char* env = std::getenv("SC_CHAKRA_CHECK"); env && *env) return env;
    return std::ifstream(ChakraCheckerBeside()).good() ? ChakraCheckerBeside() : "";
}
inline std::string NoCheckerReason() {
    return "independent checker not found at " + ChakraCheckerBeside() +
           "; set SC_CHAKRA_CHECK=/path/to/chakra_check.py; our own reader checks the same traces";
}

// The message of the sc::Error `f` throws ("field: message"); "" when it throws none. Any other exception
// fails the test.
inline std::string ErrorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const sc::Error& e) {
        return e.what();
    }
    return "";
}

// The field of the sc::Error `f` throws; "<no error>" when it throws none.
inline std::string FieldOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const sc::Error& e) {
        return e.field;
    }
    return "<no error>";
}

struct CliResult {
    int status;
    std::string out;  // stdout, and stderr too unless RunCli was told otherwise
};

// `stagecraft <args>` run from `dir` (RunCli: the source folder, which the tests' preset paths are relative to).
inline CliResult RunCliFrom(const std::string& dir, const std::string& args, bool with_stderr = true) {
    const std::string cmd = "cd " + dir + " && " + SC_CLI_PATH + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) throw std::runtime_error("cannot run " + cmd);
    std::string out;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    const int status = pclose(p);
    return {WEXITSTATUS(status), out};
}
inline CliResult RunCli(const std::string& args, bool with_stderr = true) {
    return RunCliFrom(SC_SOURCE_DIR, args, with_stderr);
}

}  // namespace sctest
