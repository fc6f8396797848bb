// stagecraft summary: the compact per-class summary of a job's traces, without writing them.
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/job_args.h"
#include "cli/search_args.h"
#include "cli/shards.h"
#include "cli/system_args.h"
#include "engine/estimate.h"
#include "report/engine_report.h"

namespace sc::cli {

int Summary(int argc, char** argv) {
    std::vector<std::string> flags = ModelFlags();
    flags.push_back("parallel");
    flags.push_back("options");  // the kernel choices that change the traces' ops (the rest is not read here)
    flags.push_back("threads");
    Args a = ParseArgs(argc, argv, flags, {"json", "help"});
    if (a.Has("help")) {
        std::puts(
            "usage: stagecraft summary --model FILE --parallel tp=8,pp=16,dp=256,... [--set key=value]...\n"
            "                         [--options flash_attention=off,dropout=on,grad_accumulation_fusion=off] [--json]\n"
            "                         [--threads N]\n"
            "  one entry per class of ranks with identical traces: node counts, FLOPs, bytes per collective and\n"
            "  group, pipeline traffic, peak memory. Parallel keys: tp pp dp cp ep sp microbatch batch schedule\n"
            "  (gpipe|1f1b|interleaved|zbh1|dualpipe|zbv|dualpipev|interleaved_zb) vstages recompute (none|selective|full|op) recompute_modules recompute_layers a2a_overlap zero (0-3) fsdp order gpus uneven layout bucket_mb\n"
            "  --options: as for estimate; the kernel choices (flash_attention, dropout, grad_accumulation_fusion,\n"
            "  fused_elementwise, deepep_dispatch, fp8_dispatch) change\n"
            "  the traces' ops, the other keys are accepted and not used.\n"
            "  --threads: threads counting the pipeline stages, each its own stages' nodes (default: the machine's,\n"
            "  at most one a stage); the summary does not depend on it");
        return 0;
    }
    engine::Request request;
    request.model = LoadModel(a);
    request.parallel = ParseParallelSpec(a.Get("parallel", ""));
    request.options = LoadTrainingOptions(a);
    const int threads = LoadThreads(a);
    // Stages are counted apart and summed in stage order (MergeSummaryShards): the same doubles on any thread count.
    Job job = MakeJob(request.model, request.parallel, request.options.kernels);
    std::vector<std::vector<RankClass>> parts = RunShardsOnThreads<std::vector<RankClass>>(
        std::min(threads, job.par.pp), [&](int shard, int count) { return SummarizeStageShard(job, shard, count); });
    TraceSummary summary = MergeSummaryShards(job, std::move(parts));
    const engine::SummaryResult s{std::move(job), std::move(summary)};
    std::string out = a.Has("json") ? SummaryReportJson(s) : SummaryReportText(s);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}

}  // namespace sc::cli
