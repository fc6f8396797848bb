// stagecraft estimate: the model's size, FLOPs and training state (issue 2); with --system and
// --parallel the training step estimate joins it.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/error.h"
#include "config/overrides.h"
#include "graph/model_stats.h"
#include "report/model_report.h"

namespace sc::cli {

int Estimate(int argc, char** argv) {
    Args a = ParseArgs(argc, argv, {"model", "precision", "set"}, {"json", "help"});
    if (a.Has("help") || !a.Has("model")) {
        std::fputs(
            "usage: stagecraft estimate --model FILE [--precision fp32|bf16|fp16|fp8|fp4] [--set key=value]... [--json]\n"
            "  --model      a model preset (presets/models/*.json) or any file of that form\n"
            "  --precision  compute precision of weights and activations (default: the preset's, else bf16)\n"
            "  --set        override a preset field, e.g. --set layers=48 --set seq=4096 --set moe.top_k=4\n"
            "  --json       print JSON instead of text\n",
            a.Has("help") ? stdout : stderr);
        return a.Has("help") ? 0 : 2;
    }
    std::string path = a.Get("model");
    std::vector<std::string> sets = a.All("set");
    if (a.Has("precision")) sets.push_back("precision.compute=" + a.Get("precision"));
    std::string text = ReadFile(path);
    ModelConfig m;
    try {
        m = ParseModelConfig(sets.empty() ? text : ApplyOverrides(text, sets, path));
    } catch (const Error& e) {
        throw Error("", path + ": " + e.what());
    }
    ModelStats st = ComputeModelStats(m);
    std::string out = a.Has("json") ? ModelReportJson(m, st) : ModelReportText(m, st);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}

}  // namespace sc::cli
