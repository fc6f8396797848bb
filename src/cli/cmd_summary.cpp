// stagecraft summary: the compact per-class summary of a job's traces, without writing them.
#include <cstdio>

#include "cli/commands.h"
#include "cli/job_args.h"
#include "engine/estimate.h"
#include "report/engine_report.h"

namespace sc::cli {

int Summary(int argc, char** argv) {
    std::vector<std::string> flags = ModelFlags();
    flags.push_back("parallel");
    Args a = ParseArgs(argc, argv, flags, {"json", "help"});
    if (a.Has("help")) {
        std::puts(
            "usage: stagecraft summary --model FILE --parallel tp=8,pp=16,dp=256,... [--set key=value]... [--json]\n"
            "  one entry per class of ranks with identical traces: node counts, FLOPs, bytes per collective and\n"
            "  group, pipeline traffic, peak memory. Parallel keys: tp pp dp cp ep sp microbatch batch schedule\n"
            "  (gpipe|1f1b|interleaved|zbh1|dualpipe) vstages recompute (none|selective|full) zero (0-3) fsdp order gpus uneven bucket_mb");
        return 0;
    }
    engine::Request request;
    request.model = LoadModel(a);
    request.parallel = ParseParallelSpec(a.Get("parallel", ""));
    const engine::SummaryResult s = engine::RunSummary(request);
    std::string out = a.Has("json") ? SummaryReportJson(s) : SummaryReportText(s);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}

}  // namespace sc::cli
