#include "cli/args.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "config/error.h"
#include "config/numbers.h"

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
    auto in = [](const std::vector<std::string>& v, const std::string& s) {
        return std::find(v.begin(), v.end(), s) != v.end();
    };
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

std::string ReadFile(const std::string& path, const std::string& flag) {
    namespace fs = std::filesystem;
    if (path.empty()) throw Error(flag, "the file name is empty");
    const std::string name = Clip(path);
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found) throw Error(flag, name + ": cannot open file (no such file)");
    if (ec) throw Error(flag, name + ": cannot open file (" + ec.message() + ")");
    // A directory, device (/dev/zero), FIFO or socket would fail late or be read forever.
    if (fs::is_directory(st)) throw Error(flag, name + ": is a directory, not a regular file");
    if (!fs::is_regular_file(st)) throw Error(flag, name + ": not a regular file (a device, FIFO or socket)");
    const std::uintmax_t size = fs::file_size(path, ec);
    if (ec) throw Error(flag, name + ": cannot read its size (" + ec.message() + ")");
    if (size > static_cast<std::uintmax_t>(kMaxInputFileBytes))
        throw Error(flag, name + ": is " + std::to_string(size) + " bytes; input files are limited to " +
                              std::to_string(kMaxInputFileBytes >> 20) + " MiB");
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(flag, name + ": cannot open file");
    std::string text(static_cast<size_t>(size), '\0');
    f.read(text.data(), static_cast<std::streamsize>(size));
    text.resize(static_cast<size_t>(f.gcount()));  // it may have shrunk meanwhile; growth past `size` is not read
    return text;
}

}  // namespace sc::cli
