#include "cli/job_args.h"

#include "cli/preset_paths.h"
#include "cli/system_args.h"
#include "config/error.h"
#include "config/numbers.h"
#include "config/overrides.h"

namespace sc::cli {

std::vector<std::string> ModelFlags() { return {"model", "set", "precision"}; }

ModelConfig LoadModel(const Args& a) {
    if (!a.Has("model")) throw Error("--model", "missing; give a model preset file or id, e.g. --model gpt3-175b");
    const std::string path = PresetPath("--model", "models", "model", a.Get("model")).string();
    std::vector<std::string> sets = a.All("set");
    if (a.Has("precision")) sets.push_back("precision.compute=" + a.Get("precision"));
    std::string text = ReadFile(path, "--model");
    try {
        return ParseModelConfig(sets.empty() ? text : ApplyOverrides(text, sets, path));
    } catch (const Error& e) {
        throw Error("", Clip(path) + ": " + e.what());
    }
}

Job LoadJob(const Args& a) {
    ModelConfig m = LoadModel(a);
    ParallelConfig p = ParseParallelSpec(a.Get("parallel", ""));
    return MakeJob(m, p, LoadTrainingOptions(a).kernels);
}

}  // namespace sc::cli
