#include "cli/preset_paths.h"

#include <algorithm>
#include <cctype>
#include <system_error>
#include <vector>

#include "config/error.h"
#include "config/numbers.h"

namespace sc::cli {

namespace fs = std::filesystem;

namespace {

// The presets/ folders an id is looked for in, in order: the working directory's, the one beside the program
// (<dir of the executable>/../presets: build/stagecraft in a checkout), and the source tree's it was built from
// (a build folder elsewhere), each once.
std::vector<fs::path> PresetRoots() {
    std::vector<fs::path> roots{fs::path("presets")};
    auto add = [&](const fs::path& dir) {
        std::error_code ec;
        for (const fs::path& r : roots)
            if (fs::equivalent(dir, r, ec) || dir == r) return;
        roots.push_back(dir);
    };
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) add((exe.parent_path() / ".." / "presets").lexically_normal());
#ifdef SC_PRESETS_DIR
    add(fs::path(SC_PRESETS_DIR));
#endif
    return roots;
}

// The ids of the presets in `dir` (file names without ".json"; index.json is the page's list, not a preset).
std::string IdsIn(const fs::path& dir) {
    std::vector<std::string> ids;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path& p = it->path();
        if (p.extension() == ".json" && p.stem() != "index") ids.push_back(p.stem().string());
    }
    std::sort(ids.begin(), ids.end());
    std::string out;
    for (const std::string& id : ids) out += (out.empty() ? "" : ", ") + id;
    return out;
}

}  // namespace

bool IsPresetId(const std::string& s) {
    bool plain = !s.empty() && s.size() <= 100 && s.find("..") == std::string::npos;
    for (char c : s) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
    return plain;
}

fs::path PresetPath(const std::string& flag, const std::string& folder, const std::string& what,
                    const std::string& given) {
    const fs::path p = given;
    std::error_code ec;
    if (!IsPresetId(given) || p.extension() == ".json" || fs::exists(p, ec))
        return p;  // a path: read (or refused, naming why) as given
    const std::vector<fs::path> roots = PresetRoots();
    std::string looked, ids;
    for (const fs::path& root : roots) {
        const fs::path file = root / folder / (given + ".json");
        if (fs::exists(file, ec)) return file;
        looked += (looked.empty() ? "" : " or ") + (root / folder).string() + "/";
        if (ids.empty()) ids = IdsIn(root / folder);
    }
    throw Error(flag, "\"" + Clip(given) + "\" is neither a file nor a " + what + " preset id (looked in " + looked +
                          ")" + (ids.empty() ? "" : "; the ids there: " + ids));
}

}  // namespace sc::cli
