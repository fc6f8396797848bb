// Traces run unchanged in ASTRA-sim's analytical backend, when SC_ASTRA_BIN names its binary (see
// tests/astra/README.md): a dense job, a MoE job and a ZeRO-3 + context-parallel job, in roofline mode and in
// replay mode (duration_micros); and the replayed step times of four Llama 3 8B layouts beside the estimate's. ASTRA-sim exits 0 even when ranks hang, so a run passes only with exit 0,
// one "finished" line per NPU and no "[critical]" line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <string>

#include <unistd.h>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "parallel/job.h"
#include "parallel/layout.h"
#include "test_util.h"
#include "trace/rank_traces.h"
#include "trace_test_util.h"
#include "training/estimate.h"
#include "training/timeline.h"

namespace {

namespace fs = std::filesystem;
const std::string kConfigs = std::string(SC_SOURCE_DIR) + "/tests/astra/configs/";

struct AstraRun {
    int exit_code = -1;
    int finished = 0, critical = 0;
    std::string output;
};

// Writes every rank's trace (compute nodes timed on dgx-h100-superpod) and the groups into `dir`.
void WriteTimedTraces(const sc::Job& job, const std::string& dir, const sc::CalibrationTable* cal = nullptr) {
    // The options the job was built with (its kernel choices), so the durations are the estimate's.
    const std::string root = SC_SOURCE_DIR;
    std::string text = sctest::ReadFile(root + "/presets/systems/dgx-h100-superpod.json");
    static const sc::System sys = sc::ParseSystem(text, sctest::ReadFile(root + "/presets/hardware/h100-sxm.json"));
    sc::TrainingOptions opt;
    opt.kernels = job.graph.kernels;
    // Offloading's copies at mem.json's remote-memory rate (H100's measured host link) where no calibration is given.
    if (job.par.offload_layers > 0 && !cal) opt.host_link_gbps = 51;
    sc::RankTraceWriter w(job, [&](const sc::StageProgram& p) { return sc::NodeSeconds(job, p, sys, cal, opt); });
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (int r = 0; r < w.world(); ++r) {
        sctest::FileSink s(dir + "/trace." + std::to_string(r) + ".et");
        w.WriteRank(r, s);
    }
    sctest::FileSink g(dir + "/trace.json");
    w.WriteCommGroups(g);
}

// A directory for one test's traces and ASTRA-sim's log, named for this process: two suites on one machine (a clean
// clone's CI run beside a developer's) must not write each other's traces.
std::string ScratchDir(const std::string& name) {
    return (fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()))).string();
}

void RemoveScratch(const std::string& dir) {
    fs::remove_all(dir);
    fs::remove_all(dir + ".run");
}

AstraRun RunAstra(const std::string& bin, const std::string& traces, const std::string& sys, const std::string& net) {
    const std::string out = traces + ".run";  // ASTRA-sim writes ./log/ where it runs
    fs::remove_all(out);
    fs::create_directories(out);
    std::string cmd = "cd '" + out + "' && '" + bin + "' --workload-configuration='" + traces + "/trace'" +
                      " --comm-group-configuration='" + traces + "/trace.json' --system-configuration='" + kConfigs +
                      sys + "' --remote-memory-configuration='" + kConfigs + "mem.json' --network-configuration='" +
                      kConfigs + net + "' > astra.out 2>&1";
    AstraRun r;
    r.exit_code = WEXITSTATUS(std::system(cmd.c_str()));
    r.output = sctest::ReadFile(out + "/astra.out");
    for (size_t p = 0; (p = r.output.find("finished,", p)) != std::string::npos; ++p) ++r.finished;
    for (size_t p = 0; (p = r.output.find("[critical]", p)) != std::string::npos; ++p) ++r.critical;
    return r;
}

struct AstraCase {
    const char* name;
    bool moe;
    const char* spec;
    const char* net;
    bool fp8 = false;  // fp8 GEMMs: the trace carries Transformer Engine's cast/transpose nodes
    // Megatron-LM 2021's kernels: unfused attention, dropout masks, unfused gradient accumulation nodes.
    bool legacy_kernels = false;
    bool eager = false;            // PyTorch eager's elementwise kernels (KernelChoices::fused_elementwise = false)
    double load_imbalance = 1;     // moe.load_imbalance: the routed sizes of the most loaded expert rank
    bool deepep = false;           // DeepEP's dispatch (KernelChoices::deepep_dispatch): one copy per destination rank
    bool fp8_dispatch = false;     // the token-to-expert all-to-alls in FP8 with per-128 scales (not whole elements)
    int window = 0;                // a sliding window on every other layer (ModelConfig::window)
    int mtp = 0;                   // multi-token prediction modules (ModelConfig::mtp_layers), on the last stage
    const char* hybrid = "";       // a hybrid pattern over the small model's layers (ModelConfig::hybrid), Mamba mixers
    int latent = 0;                // a latent MoE (MoeConfig::latent): routed tokens this wide
    const char* mtp_pattern = "";  // a hybrid model's MTP layers (ModelConfig::mtp_pattern), depths sharing them
    // fp8 with current scaling, its last layer and its attention kept in BF16 (PrecisionConfig::bf16_*): one layer's
    // nodes without casts beside layers with them.
    bool bf16_last = false;
};
void PrintTo(const AstraCase& c, std::ostream* os) {
    *os << (c.moe ? "moe " : "") << (c.fp8 ? "fp8 " : "") << (c.legacy_kernels ? "legacy kernels " : "")
        << (c.eager ? "eager " : "") << (c.load_imbalance != 1 ? "imbalanced " : "") << (c.deepep ? "deepep " : "")
        << (c.fp8_dispatch ? "fp8-dispatch " : "") << (c.window ? "windowed " : "") << (c.mtp ? "mtp " : "")
        << (*c.hybrid ? "hybrid " : "") << (c.latent ? "latent " : "") << (c.bf16_last ? "bf16-last " : "") << c.spec
        << " on " << c.net;
}

class AstraTest : public ::testing::TestWithParam<AstraCase> {};

TEST_P(AstraTest, EveryRankFinishesInRooflineAndReplayMode) {
    const char* bin = std::getenv("SC_ASTRA_BIN");
    if (!bin || !*bin)
        GTEST_SKIP() << "SC_ASTRA_BIN is not set: ASTRA-sim's analytical binary is needed to run the traces";
    const AstraCase& c = GetParam();
    sc::ModelConfig m = c.moe ? sctest::SmallMoe() : sctest::SmallGpt();
    if (c.fp8) m.precision.compute = sc::Precision::fp8;
    m.moe.load_imbalance = c.load_imbalance;
    sc::KernelChoices kernels;
    if (c.legacy_kernels)
        kernels.flash_attention = false, kernels.dropout = true, kernels.grad_accumulation_fusion = false;
    kernels.fused_elementwise = !c.eager;
    kernels.deepep_dispatch = c.deepep;
    kernels.fp8_dispatch = c.fp8_dispatch;
    m.window = {c.window, 2};
    if (!c.window) m.window = {};
    m.mtp_layers = c.mtp;
    if (*c.hybrid) {
        m.hybrid = c.hybrid;
        m.moe.dense_layers = 0;
        m.mamba = {8, 32, 16, 2, 4};
        m.mtp_pattern = c.mtp_pattern;
        m.mtp_repeated = *c.mtp_pattern && c.mtp > 1;
    }
    m.moe.latent = c.latent;
    if (c.bf16_last) {
        m.precision.compute = sc::Precision::fp8;
        m.precision.scaling = sc::Scaling::current;
        m.precision.bf16_last_layers = 1;
        m.precision.bf16_modules = sc::kBf16Attention;
    }
    sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec(c.spec), kernels);
    const std::string dir = ScratchDir(std::string("sc-astra-") + c.name);
    WriteTimedTraces(job, dir);
    for (const char* sys : {"sys_h100_2d.json", "sys_h100_2d_replay.json"}) {
        AstraRun r = RunAstra(bin, dir, sys, c.net);
        const std::string tail = r.output.size() > 3000 ? r.output.substr(r.output.size() - 3000) : r.output;
        EXPECT_EQ(r.exit_code, 0) << sys << "\n" << tail;
        EXPECT_EQ(r.finished, job.par.world()) << sys << "\n" << tail;
        EXPECT_EQ(r.critical, 0) << sys << "\n" << tail;
    }
    if (!HasFailure()) RemoveScratch(dir);  // a failed run keeps its traces to look at
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, AstraTest,
    ::testing::Values(
        AstraCase{"dense", false, "tp=2,pp=2,dp=2,sp=1,batch=8,zero=1", "net_test_8_2d.yml"},
        AstraCase{"moe", true, "tp=2,sp=1,ep=2,dp=4,batch=8", "net_test_8_2d.yml"},
        AstraCase{"moe_fp8", true, "tp=2,sp=1,ep=2,dp=4,batch=8", "net_test_8_2d.yml", true},
        AstraCase{"zero3_cp", false, "cp=2,dp=4,batch=8,zero=3", "net_test_8_2d.yml"},
        AstraCase{"zbh1", false, "tp=2,pp=4,dp=2,sp=1,batch=16,schedule=zbh1,zero=1", "net_h100_16_eff.yml"},
        AstraCase{"dualpipe", false, "tp=2,pp=4,dp=2,sp=1,batch=16,schedule=dualpipe,zero=1", "net_h100_16_eff.yml"},
        // ZB-V: two chunks a rank in a V (the small model's 4 layers on 2 ranks), the turn on rank pp-1 without a send,
        // the embedding and the loss on rank 0.
        AstraCase{"zbv", false, "tp=2,pp=2,dp=4,sp=1,batch=12,schedule=zbv,zero=1", "net_h100_16_eff.yml"},
        AstraCase{"moe_folded", true, "tp=2,sp=1,ep=4,dp=2,pp=2,batch=8,zero=1", "net_test_8_2d.yml"},
        AstraCase{"moe_folded_dualpipe", true, "tp=2,sp=1,ep=4,dp=2,pp=2,batch=8,schedule=dualpipe",
                  "net_test_8_2d.yml"},
        AstraCase{"moe_folded_dualpipev", true, "tp=2,sp=1,ep=4,dp=2,pp=2,batch=8,schedule=dualpipev",
                  "net_test_8_2d.yml"},
        AstraCase{"interleaved_16", false, "tp=2,pp=2,dp=4,schedule=interleaved,vstages=2,batch=16",
                  "net_h100_16_eff.yml"},
        AstraCase{"interleaved_zb_16", false, "tp=2,pp=2,dp=4,schedule=interleaved_zb,vstages=2,batch=16",
                  "net_h100_16_eff.yml"},
        AstraCase{"legacy_kernels_zbh1", false, "tp=2,pp=4,dp=2,batch=16,schedule=zbh1,recompute=selective",
                  "net_h100_16_eff.yml", false, true},
        // torchtitan's op-level checkpointing: recompute nodes carrying a share of a fused GEMM, re-run all-gathers,
        // with MoE (re-run all-to-alls) and ZeRO-3.
        AstraCase{"op_checkpointing_moe", true, "tp=2,sp=1,ep=2,dp=4,batch=8,recompute=op,zero=3", "net_test_8_2d.yml"},
        // PyTorch eager's RMSNorm, rotary, repeat_kv and SwiGLU kernels (the small MoE is Llama-shaped), pipelined.
        AstraCase{"eager_moe", true, "tp=2,sp=1,ep=2,pp=2,dp=2,batch=8,zero=1", "net_test_8_2d.yml", false, false,
                  true},
        // Dropless routing with the hottest expert at 1.7x the mean: 1.3x the routed sizes on 2 experts a rank,
        // not whole multiples of a token's bytes, so every all-to-all and expert GEMM node rounds.
        AstraCase{"moe_imbalanced", true, "tp=2,sp=1,ep=4,dp=2,pp=2,batch=8,zero=1", "net_test_8_2d.yml", false, false,
                  false, 1.7},
        // DeepEP's dispatch: 1.86 destination ranks a token of 2 experts on 4 ranks of 2 experts each (uniform
        // routing), so the expert all-to-alls carry a rounded share of the routed copies.
        AstraCase{"moe_deepep", true, "tp=2,sp=1,ep=4,dp=2,pp=2,batch=8,zero=1", "net_test_8_2d.yml", false, false,
                  false, 1, true},
        // DeepSeek-V3's FP8 dispatch (1 + 4/128 bytes an element one way, bf16 the other) over DeepEP's copies, on a
        // model whose every other layer has a sliding window (each layer's own attention FLOPs), pipelined.
        AstraCase{"moe_fp8_dispatch_window", true, "tp=2,sp=1,ep=4,dp=2,pp=2,batch=8,zero=1", "net_test_8_2d.yml",
                  false, false, false, 1, true, true, 64},
        // One MTP module (an MoE layer, its projection, a second LM head) on the last of two stages that Megatron's
        // layout string splits 3 + 1, and the embedding table's gradient all-reduce between the two stages that the
        // untied model's MTP copy brings.
        AstraCase{"moe_mtp_layout", true, "tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1,layout=Et*3|tmL",
                  "net_test_8_2d.yml", false, false, false, 1, false, false, 0, 1},
        // A first virtual stage of only the embedding and a last of only the loss (Megatron's
        // account_for_embedding/loss_in_pipeline_split), interleaved.
        AstraCase{"embedding_loss_stages", false,
                  "tp=2,pp=2,dp=2,sp=1,schedule=interleaved,vstages=2,batch=8,zero=1,layout=E|(t*2|)*2L",
                  "net_test_8_2d.yml"},
        // Full recomputation with an MTP module: the module's checkpointed part re-run in the head's backward.
        AstraCase{"moe_mtp_full_recompute", true, "tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1,recompute=full",
                  "net_test_8_2d.yml", false, false, false, 1, false, false, 0, 1},
        // Full recomputation's block method: the first of each stage's two layers re-run, the other kept.
        AstraCase{"moe_recompute_layers", true, "tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1,recompute_layers=1",
                  "net_test_8_2d.yml"},
        // Megatron-Core's EP all-to-all overlap: the combined 1F1B order (one more warm-up forward), interleaved.
        AstraCase{"moe_a2a_overlap", true,
                  "tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1,schedule=interleaved,vstages=2,a2a_overlap=1",
                  "net_test_8_2d.yml"},
        // The same pairs under ZeRO-3: each block of a pair waits for its gather, the next ones prefetched.
        AstraCase{"moe_a2a_overlap_zero3", true,
                  "ep=4,dp=4,pp=2,batch=8,zero=3,schedule=interleaved,vstages=2,a2a_overlap=1", "net_test_8_2d.yml"},
        // Megatron's recompute modules: the MoE layer re-run whole in the backward (its all-to-alls and the expert
        // TP collectives among the recompute nodes), the norms and the dense MLP too, pipelined.
        AstraCase{"moe_recompute_modules", true,
                  "tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1,recompute_modules=moe+layernorm+mlp", "net_test_8_2d.yml"},
        // A hybrid model (Nemotron 3's kinds): Mamba-2 mixers, attention alone and MoE alone, pipelined over TP.
        AstraCase{"hybrid_mamba_moe", true, "tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1", "net_test_8_2d.yml", false,
                  false, false, 1, false, false, 0, 0, "M*ME"},
        // Nemotron 3 Super's kinds: a latent MoE (the all-to-alls and experts at half the hidden size, its two
        // duplicated projections) and two MTP depths of one shared "*E" module on the last stage.
        AstraCase{"hybrid_latent_mtp", true, "tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1", "net_test_8_2d.yml", false,
                  false, false, 1, false, false, 0, 2, "M*ME", 64, "*E"},
        // An fp8 model keeping its last layer and its attention in BF16 (Megatron's first_last_layers_bf16 and a
        // quant_recipe matcher): the last stage runs the last layer's BF16 twin, without cast nodes, under ZeRO-3.
        AstraCase{"activation_offload", false, "dp=8,batch=16,zero=1,offload_layers=2", "net_test_8_2d.yml"},
        AstraCase{"bf16_last_layer", true, "tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=3", "net_test_8_2d.yml", false, false,
                  false, 1, false, false, 0, 0, "", 0, "", true}),
    [](const ::testing::TestParamInfo<AstraCase>& i) { return std::string(i.param.name); });

// The traces' clock against the estimate's. Llama 3 8B on 16 H100s (two DGX nodes; net_h100_16_eff.yml models
// dgx-h100-superpod's two levels at their measured bandwidths), timed traces replayed by ASTRA-sim with its
// roofline off, so every compute node runs its duration_micros: the estimate's compute, node for node. What differs
// is ASTRA-sim's own ring collectives, point-to-point sends and schedule replay against the estimate's nccl-tests
// curves and pipeline formulas. A measurement, written to <build>/astra_timing.md (and copied into
// tests/astra/README.md), not a gate on the difference: what the test asserts is what must hold whatever the
// network model, that no rank finishes before its own compute has run.
TEST(AstraTiming, ReplayedStepTimesAreMeasuredAgainstTheEstimate) {
    const char* bin = std::getenv("SC_ASTRA_BIN");
    if (!bin || !*bin)
        GTEST_SKIP() << "SC_ASTRA_BIN is not set: ASTRA-sim's analytical binary is needed to run the traces";
    const std::string root = SC_SOURCE_DIR;
    const sc::ModelConfig llama = sc::ParseModelConfig(sctest::ReadFile(root + "/presets/models/llama3-8b.json"));
    // An MoE model for the pairs' windows (a2a_overlap, DualPipe): Qwen3-30B-A3B cut to 12 layers.
    sc::ModelConfig qwen = sc::ParseModelConfig(sctest::ReadFile(root + "/presets/models/qwen3-30b-a3b.json"));
    qwen.layers = 12;
    const sc::System sys = sc::ParseSystem(sctest::ReadFile(root + "/presets/systems/dgx-h100-superpod.json"),
                                           sctest::ReadFile(root + "/presets/hardware/h100-sxm.json"));
    // The measured rates the CLI times with by default (the nccl-tests curves the two levels' bandwidths come from).
    const sc::CalibrationTable cal =
        sc::ParseCalibration(sctest::ReadFile(root + "/presets/calibration/measured.json"));
    std::string md =
        "| layout (16 H100) | estimate step (s) | ASTRA-sim replay (s) | difference |\n|---|---:|---:|---:|\n";
    const std::pair<const sc::ModelConfig*, const char*> rows[] = {
        {&llama, "tp=2,pp=4,dp=2,sp=1,batch=16,schedule=1f1b,zero=1"},
        {&llama, "tp=2,pp=4,dp=2,sp=1,batch=16,schedule=zbh1,zero=1"},
        {&llama, "tp=2,pp=2,dp=4,batch=16,schedule=interleaved,vstages=2"},
        {&llama, "tp=2,pp=4,dp=2,sp=1,batch=16,schedule=zbv,zero=1"},
        {&llama, "tp=2,pp=4,dp=2,sp=1,batch=16,schedule=dualpipe,zero=1"},
        {&llama, "tp=2,pp=4,dp=2,sp=1,batch=16,schedule=dualpipev,zero=1"},
        {&llama, "tp=2,pp=2,dp=4,batch=16,schedule=interleaved_zb,vstages=2"},
        {&llama, "tp=8,pp=2,batch=16"},
        {&qwen, "pp=2,dp=8,ep=8,batch=64,schedule=interleaved,vstages=2,zero=1"},
        {&qwen, "pp=2,dp=8,ep=8,batch=64,schedule=interleaved,vstages=2,zero=1,a2a_overlap=1"},
        {&qwen, "pp=2,dp=8,ep=8,batch=64,schedule=dualpipe,zero=1"},
        // CPU activation offloading over H100's PCIe host link (mem.json's 51 GB/s, the traces' copies at the
        // measured 52 out and 51 in): half the layers, and all but the last, whose copies are all on the critical path.
        {&llama, "tp=2,dp=8,sp=1,batch=16,zero=1"},
        {&llama, "tp=2,dp=8,sp=1,batch=16,zero=1,offload_layers=16"},
        {&llama, "tp=2,dp=8,sp=1,batch=16,zero=1,offload_layers=31"},
        {&llama, "dp=16,batch=16,zero=1"},
        {&llama, "dp=16,batch=16,zero=1,offload_layers=16"},
    };
    for (const auto& [model, spec] : rows) {
        const sc::ModelConfig& m = *model;
        const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec(spec));
        const std::string dir = ScratchDir("sc-astra-timing");
        WriteTimedTraces(job, dir, &cal);
        const AstraRun r = RunAstra(bin, dir, "sys_h100_2d_replay.json", "net_h100_16_eff.yml");
        ASSERT_EQ(r.exit_code, 0) << spec;
        ASSERT_EQ(r.finished, job.par.world()) << spec;
        // "sys[<rank>] finished, <ns> cycles": ASTRA-sim's analytical clock counts nanoseconds.
        std::vector<long long> end_ns(job.par.world(), 0);
        const std::regex line(R"(sys\[(\d+)\] finished, (\d+) cycles)");
        for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), line); it != std::sregex_iterator(); ++it)
            end_ns[std::stoi((*it)[1])] = std::stoll((*it)[2]);
        const sc::Layout layout(job.par);
        sc::TrainingOptions opt;
        opt.kernels = job.graph.kernels;
        for (int stage = 0; stage < job.par.pp; ++stage) {
            const sc::StageProgram prog = sc::BuildStageProgram(job, stage);
            const std::vector<double> t = sc::NodeSeconds(job, prog, sys, &cal, opt);
            long long compute_us = 0;  // as the trace carries it: whole microseconds, at least 1
            for (size_t i = 0; i < prog.nodes.size(); ++i)
                if (prog.nodes[i].type == sc::EtNodeType::comp)
                    compute_us += std::max<long long>(1, std::llround(t[i] * 1e6));
            for (int rank = 0; rank < job.par.world(); ++rank) {
                if (layout.Stage(rank) != stage) continue;
                EXPECT_GE(end_ns[rank], compute_us * 1000) << spec << " rank " << rank;
            }
        }
        const double astra = 1e-9 * static_cast<double>(*std::max_element(end_ns.begin(), end_ns.end()));
        const double estimate = sc::EstimateTraining(job, sys, &cal, opt).step_seconds;
        char row[256];
        std::snprintf(row, sizeof row, "| %s, %s | %.3f | %.3f | %+.1f%% |\n", m.name.c_str(), spec, estimate, astra,
                      100 * (astra / estimate - 1));
        md += row;
    }
    if (!HasFailure()) RemoveScratch(ScratchDir("sc-astra-timing"));
    std::ofstream(sctest::BuildDir() + "/astra_timing.md") << md;
    std::cout << md;
}

}  // namespace
