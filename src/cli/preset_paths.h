// Presets named on the command line (--model, --system, --preset). A path that exists is read as given. An id
// ("llama3-8b": letters, digits, '.', '_', '-', no ".json") names presets/<folder>/<id>.json, looked for under the
// working directory, then beside the program (the repository's presets/ for build/stagecraft), then in the source
// tree the program was built from, so the CLI runs from any directory. An id found in none is an error naming the
// flag, the id, the folders looked in and the ids they hold.
#pragma once
#include <filesystem>
#include <string>

namespace sc::cli {

// A preset id: a plain file name (letters, digits, '.', '_', '-'; at most 100; no ".."), never a path.
bool IsPresetId(const std::string& s);
// folder: "models", "systems" or "inference"; what: "model", "system" or "serving" (for the error).
std::filesystem::path PresetPath(const std::string& flag, const std::string& folder, const std::string& what,
                                 const std::string& given);

}  // namespace sc::cli
