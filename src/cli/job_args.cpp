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
    // --precision sets the compute format and its usual recipe (mxfp8 and nvfp4 name both), before any --set, so
    // `--precision fp8 --set precision.scaling=current` asks for current scaling.
    std::vector<std::string> sets;
    if (a.Has("precision")) {
        const std::string p = a.Get("precision");
        const std::string scaling = p == "mxfp8" ? "mx" : p == "nvfp4" ? "nvfp4" : "auto";
        sets.push_back("precision.compute=" + std::string(p == "mxfp8" ? "fp8" : p == "nvfp4" ? "fp4" : p));
        sets.push_back("precision.scaling=" + scaling);
    }
    for (const std::string& s : a.All("set")) sets.push_back(s);
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
