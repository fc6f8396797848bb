// stagecraft estimate: the model's size, FLOPs and training state; with --system (and --parallel) the
// training step time, memory per GPU and MFU on that cluster.
#include <cstdio>
#include <cstdlib>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/file_sink.h"
#include "cli/job_args.h"
#include "cli/system_args.h"
#include "config/error.h"
#include "config/numbers.h"
#include "engine/estimate.h"
#include "report/engine_report.h"
#include "report/pipeline_timeline_json.h"
#include "training/sweep.h"

namespace sc::cli {

int Estimate(int argc, char** argv) {
    std::vector<std::string> flags = ModelFlags();
    flags.push_back("parallel");
    flags.push_back("gpus");
    flags.push_back("timeline-json");
    for (const std::string& f : SystemFlags()) flags.push_back(f);
    std::vector<std::string> bools = {"json", "help", "allow-oom"};
    for (const std::string& f : SystemBoolFlags()) bools.push_back(f);
    Args a = ParseArgs(argc, argv, flags, bools);
    if (a.Has("help") || !a.Has("model")) {
        std::fputs(
            "usage: stagecraft estimate --model FILE [--precision P] [--set key=value]... [--json]\n"
            "                           [--system SYSTEM --parallel SPEC [--options k=v,...] [--tokens N]]\n"
            "  --model      a model preset (presets/models/*.json or its id) or any file of that form\n"
            "  --precision  compute precision of the GEMMs: bf16, fp16, fp8 (delayed per-tensor scaling), mxfp8,\n"
            "               fp4 or nvfp4 (the same); --set precision.scaling=current|block|mx|delayed picks an fp8\n"
            "               recipe (default: the preset's, else bf16)\n"
            "  --set        override a preset field, e.g. --set layers=48 --set seq=4096 --set moe.top_k=4\n"
            "  --system     a cluster (presets/systems/*.json or its id): adds step time, memory, MFU\n"
            "  --parallel   tp=8,pp=16,dp=64,cp=1,ep=1,sp=1,microbatch=1,batch=2048,schedule=1f1b,\n"
            "               recompute=selective,zero=1 (omitted keys: 1, no SP, batch=microbatch*dp, 1f1b,\n"
            "               no recompute, zero=0); schedule gpipe|1f1b|interleaved|zbh1|dualpipe|zbv|dualpipev|\n"
            "               interleaved_zb; ep (and etp=1|tp)\n"
            "               fold over a stage's tp*cp*dp ranks; recompute none|selective|full (Megatron-LM's) or op\n"
            "               (PyTorch op-level checkpointing with torchtitan's policy: every second torch.mm re-run);\n"
            "               recompute_modules=mla_up_proj+layernorm+moe_act (Megatron's selective modules: core_attn\n"
            "               layernorm mla_up_proj moe_act mlp moe shared_experts); recompute_layers=N (full\n"
            "               recomputation of only the first N layers of each chunk: Megatron's block method);\n"
            "               a2a_overlap=1 (Megatron-Core's EP all-to-all overlap: each steady 1F1B forward beside\n"
            "               another microbatch's backward; ep > 1, interleaved when pp > 1);\n"
            "               offload_layers=N (Megatron-Core's CPU activation offloading: the first N layers'\n"
            "               activations in host memory, pp=1 and no recomputation; --options host_link_gbps=G\n"
            "               states the host link where the part has no measured one);\n"
            "               layout=Et*4|(t*4|)*14tmL (Megatron's\n"
            "               pipeline layout: E embedding, t layer, m MTP module, L loss, | stage end);\n"
            "               also vstages=V (vp=V: chunks per stage under interleaved), uneven=1 (one layer fewer on\n"
            "               the first and last stages), fsdp=1 (zero=3), order=tp-cp-dp-pp (rank order, fastest\n"
            "               first), bucket_mb=N (gradient buckets), gpus=N (checked against tp*cp*dp*pp)\n"
            "  --options    overlap_dp=on,overlap_pp=on,overlap_tp=off,in_network_reduction=on,\n"
            "               framework_gemm=on (off: 16-bit GEMMs at the single-GPU curve, without the framework\n"
            "               profile's measured slowdown),\n"
            "               matmul_efficiency=F,attention_efficiency=F,memory_efficiency=F (default: measured),\n"
            "               flash_attention=on,attention_kernel=cudnn|flash3|flash2,dropout=off,\n"
            "               pp_scatter_gather=on,grad_accumulation_fusion=on,fused_elementwise=on (off: PyTorch\n"
            "               eager, torchtitan without torch.compile),deepep_dispatch=off (on: MoE tokens sent once per\n"
            "               expert rank and, across nodes, once per node, as DeepEP does),fp8_dispatch=off (on: MoE\n"
            "               tokens sent to their experts in FP8 with per-128 scales, as DeepSeek-V3 did)\n"
            "  --tokens     tokens to train, for time, GPU-hours and energy to train\n"
            "  --system-set edit a system field: <level>.size|bandwidth|latency|efficiency|in_network_reduction|\n"
            "               oversubscription (level by index or name) or accelerator.hbm_tbps|memory_gb|bf16_tflops|\n"
            "               fp8_tflops|power_w|power_limit_w|collective_ctas, e.g. --system-set 1.oversubscription=2\n"
            "               (repeatable); power_limit_w: a GPU power limit, its compute at (limit/board)^(1/3)\n"
            "  --gpus N     build the cluster with N GPUs: a leaf-spine pod joined to others by a core tier, or the\n"
            "               system's outermost network level grown to hold\n"
            "               them (a preset describes a topology family; default: its own size)\n"
            "  --allow-oom  exit 0 even when the job does not fit in memory (otherwise the report is printed\n"
            "               and the exit status is 3)\n"
            "  --json       print JSON instead of text\n"
            "  --timeline-json FILE write the pipeline schedule laid out in time (pp > 1) as Chrome trace JSON, for\n"
            "               Perfetto: a lane per stage, each forward and backward of min(M, 4 pp) microbatches in the\n"
            "               time the estimate charges it\n",
            a.Has("help") ? stdout : stderr);
        return a.Has("help") ? 0 : 2;
    }
    engine::Request request;
    request.model = LoadModel(a);
    const bool json = a.Has("json");
    if (!a.Has("system")) {
        if (a.Has("timeline-json"))
            throw Error("--timeline-json", "the schedule is timed on a cluster: pass --system too");
        // Without a cluster the report is the model's alone; the split and options still get checked, so a typo in
        // them is an error here as it is with --system, not silently dropped.
        MakeJob(request.model, ParseParallelSpec(a.Get("parallel", "")), LoadTrainingOptions(a).kernels);
        const engine::EstimateResult e = engine::RunEstimate(request);
        std::string out = json ? EstimateReportJson(request, e) : EstimateReportText(request, e);
        std::fwrite(out.data(), 1, out.size(), stdout);
        return 0;
    }
    request.parallel = ParseParallelSpec(a.Get("parallel", ""));
    // The split is checked before the cluster is read, so a bad split is the error reported first.
    request.options = LoadTrainingOptions(a);
    Job job = MakeJob(request.model, request.parallel, request.options.kernels);
    LoadedSystem ls = LoadSystem(a);
    if (a.Has("gpus")) {
        const int gpus = static_cast<int>(ParseIntegerIn("--gpus", a.Get("gpus"), 1, kMaxRanks));
        if (gpus < job.par.world())
            throw Error("--gpus", std::to_string(gpus) + " GPUs cannot hold the layout's " +
                                      std::to_string(job.par.world()) + " ranks");
        BuildCluster(ls, a, gpus);
    } else {
        BuildCluster(ls, a, 0);
    }
    if (job.par.world() > ls.system.TotalAccelerators()) {
        throw Error("--gpus", std::to_string(job.par.world()) + " ranks do not fit on " + ls.system.name + " (" +
                                  std::to_string(ls.system.TotalAccelerators()) + " accelerators); pass --gpus " +
                                  std::to_string(job.par.world()) + " to build the cluster at that size");
    }
    request.system = &ls.system;
    request.calibration = ls.calibration.get();
    if (a.Has("timeline-json") && job.par.pp == 1)
        throw Error("--timeline-json", "the split has no pipeline (pp=1): there is no schedule to lay out");
    const engine::EstimateResult result = engine::RunEstimate(request, std::move(job));
    const TrainingEstimate& e = *result.training;
    if (a.Has("timeline-json")) {
        FileSink f(a.Get("timeline-json"));
        WritePipelineTimeline(f, *e.pipeline);
        f.Close();
    }
    std::string out = json ? EstimateReportJson(request, result) : EstimateReportText(request, result);
    std::fwrite(out.data(), 1, out.size(), stdout);
    if (!e.fits && !a.Has("allow-oom")) {
        std::fprintf(stderr, "stagecraft estimate: %s (pass --allow-oom to exit 0 anyway)\n", e.memory_message.c_str());
        return 3;
    }
    return 0;
}

}  // namespace sc::cli
