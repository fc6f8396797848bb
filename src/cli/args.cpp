#include "cli/args.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config/error.h"

namespace sc::cli {

std::string Args::Get(const std::string& name, const std::string& fallback) const {
    auto it = flags.find(name);
    return it == flags.end() || it->second.empty() ? fallback : it->second.back();
}

std::vector<std::string> Args::All(const std::string& name) const {
    auto it = flags.find(name);
    return it == flags.end() ? std::vector<std::string>{} : it->second;
}

Args ParseArgs(int argc, char** argv, const std::vector<std::string>& valued, const std::vector<std::string>& boolean) {
    Args a;
    auto in = [](const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); };
    for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0) throw Error(arg, "unexpected argument (flags start with --)");
        std::string name = arg.substr(2), value;
        bool has_value = false;
        if (size_t eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1), name = name.substr(0, eq), has_value = true;
        }
        if (in(boolean, name)) {
            if (has_value) throw Error("--" + name, "takes no value");
            a.flags[name];
        } else if (in(valued, name)) {
            if (!has_value) {
                if (i + 1 >= argc) throw Error("--" + name, "needs a value");
                value = argv[++i];
            }
            a.flags[name].push_back(value);
        } else {
            std::string list;
            for (const auto& v : valued) list += " --" + v;
            for (const auto& v : boolean) list += " --" + v;
            throw Error("--" + name, "unknown flag; this command takes:" + list);
        }
    }
    return a;
}

std::string ReadFile(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(path, "cannot open file");
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace sc::cli
