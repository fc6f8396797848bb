// Shared by the trace tests: small models, writing a job's traces to a directory, running the
// independent checker.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "astra_rules.h"
#include "config/model_config.h"
#include "parallel/job.h"
#include "parallel/schedule.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace/chakra_et.h"
#include "trace/rank_traces.h"
#include "trace/stage_program.h"
#include "training/estimate.h"
#include "training/search.h"
#include "training/timeline.h"

namespace sctest {

// The forward attention core's FLOPs a layer of block `kind` runs on one rank (-1: the block has none).
inline double ForwardCoreFlops(const sc::Job& job, sc::BlockKind kind) {
    for (const sc::Op& op : job.graph.Find(kind)->forward)
        if (op.kind == sc::OpKind::attention) return job.V(op.flops);
    return -1;
}

// Seconds of the compute nodes of a one-stage job's trace program (the ET files' duration_micros), optimizer
// nodes apart.
inline double TraceComputeSeconds(const sc::Job& job, const sc::System& sys, const sc::CalibrationTable* cal,
                                  const sc::TrainingOptions& opt) {
    const sc::StageProgram prog = sc::BuildStageProgram(job, 0);
    const std::vector<double> secs = sc::NodeSeconds(job, prog, sys, cal, opt);
    double total = 0;
    for (size_t i = 0; i < prog.nodes.size(); ++i)
        if (prog.nodes[i].type == sc::EtNodeType::comp && prog.nodes[i].role != sc::NodeRole::optimizer)
            total += secs[i];
    return total;
}

// Every rank's trace program replayed together (sends and receives matched across ranks; a schedule that waits
// on itself throws): `progs` gets the programs, the result is when the last non-optimizer node of any rank ends,
// the step's pipeline part.
inline double ReplayedPipelineSeconds(const sc::Job& job, const sc::System& sys, const sc::TrainingOptions& opt,
                                      std::vector<sc::StageProgram>& progs) {
    progs.clear();
    for (int s = 0; s < job.par.pp; ++s) progs.push_back(sc::BuildStageProgram(job, s));
    std::vector<const sc::StageProgram*> ptrs;
    for (const auto& pr : progs) ptrs.push_back(&pr);
    const auto tl = sc::ReplayJob(job, ptrs, sys, nullptr, opt);
    double end = 0;
    for (int s = 0; s < job.par.pp; ++s)
        for (size_t i = 0; i < progs[s].nodes.size(); ++i)
            if (progs[s].nodes[i].role != sc::NodeRole::optimizer)
                end = std::max(end, tl[s][i].start_us + tl[s][i].dur_us);
    return end * 1e-6;
}

// A rank's compute seconds by kind of pass (optimizer apart), per chunk pass: `passes` the chunk-microbatches it
// runs (a weight-gradient node's name ends in ".wgrad").
struct PassTimes {
    double f = 0, b = 0, w = 0;  // forward, input-gradient backward (or the whole backward), weight-gradient backward
};
inline PassTimes PassTimesOf(const sc::StageProgram& prog, const std::vector<double>& secs, int passes) {
    PassTimes t;
    for (size_t i = 0; i < prog.nodes.size(); ++i) {
        const sc::ProgNode& n = prog.nodes[i];
        if (n.type != sc::EtNodeType::comp || n.role == sc::NodeRole::optimizer) continue;
        const bool wgrad = prog.names[n.name].find(".wgrad") != std::string::npos;
        (n.role == sc::NodeRole::forward ? t.f : wgrad ? t.w : t.b) += secs[i] / passes;
    }
    return t;
}

// DualPipe's and DualPipeV's bubble, measured three ways: every rank's traces replayed together (the order must not
// deadlock) against DeepSeek's (factor)(F&B + B - 3W), F&B = F + B + W in a replay, which runs a pair one after the
// other (within 10%), F, B and W those of rank `rank`'s `passes` chunk-microbatches; and the estimate's bubble, a
// replay of the steps, against the traces' (3% of the pipeline's time, the transfers the traces carry).
inline void ExpectDualPipeBubble(const sc::Job& job, const sc::System& sys, int rank, int passes, int factor) {
    const sc::TrainingOptions opt;
    std::vector<sc::StageProgram> progs;
    const double end = ReplayedPipelineSeconds(job, sys, opt, progs);
    const PassTimes c = PassTimesOf(progs[rank], sc::NodeSeconds(job, progs[rank], sys, nullptr, opt), passes);
    const double fb = c.f + c.b + c.w, bubble = end - passes * fb, formula = factor * (fb + c.b - 3 * c.w);
    const sc::TrainingEstimate e = sc::EstimateTraining(job, sys, nullptr, opt);
    std::printf(
        "%s pp=%d M=%d: F %.2f B %.2f W %.2f ms; traces' bubble %.2f ms, DeepSeek's form %.2f ms, estimate %.2f ms\n",
        sc::NameOf(job.par.schedule), job.par.pp, job.par.microbatches(), c.f * 1e3, c.b * 1e3, c.w * 1e3, bubble * 1e3,
        formula * 1e3, e.step.bubble * 1e3);
    EXPECT_NEAR(bubble, formula, 0.1 * fb + 0.1 * formula) << "pp=" << job.par.pp;
    EXPECT_NEAR(e.step.bubble, bubble, 0.03 * end) << "pp=" << job.par.pp;
}

// A rank's steps: F forward, B whole backward, I input half (its W later), W weight half, then chunk.microbatch;
// a forward run as a pair with the backward after it is written "F...&".
inline std::string StepOrder(const sc::ParallelConfig& p, int stage) {
    std::string s;
    for (const sc::PipelineStep& st : sc::PipelineSchedule(p, stage)) {
        if (!s.empty()) s += ' ';
        s += st.forward ? 'F' : st.weight ? 'W' : st.split ? 'I' : 'B';
        s += std::to_string(st.chunk) + "." + std::to_string(st.microbatch) + (st.paired ? "&" : "");
    }
    return s;
}

// The layouts the search lists for Llama 3 8B on 16 GPUs of a DGX H100 SuperPOD, batch 16, asked for `schedule` only
// (every fitting one, up to 1000), each checked to run it.
inline std::vector<sc::RankedLayout> SearchedLayoutsOf(sc::Schedule schedule) {
    const sc::ModelConfig m = LoadModelPreset("llama3-8b.json");
    const sc::System sys = LoadSystemPreset("dgx-h100-superpod");
    sc::SearchRequest req;
    req.gpus = 16, req.batch = 16, req.top_k = 1000;
    req.space.schedules = {schedule};
    const sc::SearchResult r = sc::SearchLayouts(m, sys, nullptr, sc::TrainingOptions{}, req);
    EXPECT_FALSE(r.top.empty());
    for (const sc::RankedLayout& e : r.top) EXPECT_EQ(e.par.schedule, schedule);
    return r.top;
}

// What the estimate charges for those nodes: compute (TP-overlap SMs included), recompute, the per-kernel fixed
// cost, MoE routing and fp8 casts; not the SMs the overlapped DP collectives hold (StepBreakdown::dp_comm_sms),
// which only the estimate charges (ASTRA-sim decides what runs beside what).
inline double ChargedComputeSeconds(const sc::TrainingEstimate& e) {
    return e.step.compute - e.step.dp_comm_sms + e.step.recompute + e.step.kernel_fixed + e.step.moe_routing +
           e.step.fp8_cast;
}

// The compute the estimate charges for `job` on a system preset (a DGX H100 SuperPOD unless named) at the measured
// rates, checked equal to what its trace's compute nodes take; returned for the caller's own comparisons.
inline double ChargedComputeEqualsTraceCompute(const sc::Job& job, const sc::System& sys,
                                               const sc::TrainingOptions& opt = {}) {
    const double charged = ChargedComputeSeconds(sc::EstimateTraining(job, sys, &MeasuredCalibration(), opt));
    EXPECT_NEAR(TraceComputeSeconds(job, sys, &MeasuredCalibration(), opt), charged, 1e-9 * charged);
    return charged;
}
inline double ChargedComputeEqualsTraceCompute(const sc::Job& job, const sc::TrainingOptions& opt = {},
                                               const std::string& system = "dgx-h100-superpod") {
    return ChargedComputeEqualsTraceCompute(job, LoadSystemPreset(system), opt);
}

inline sc::ModelConfig SmallGpt() {
    sc::ModelConfig m;
    m.name = "small-gpt";
    m.layers = 4;
    m.hidden = 256;
    m.heads = 8;
    m.kv_heads = 8;
    m.head_dim = 32;
    m.ffn = 1024;
    m.vocab = 1000;
    m.seq = 128;
    m.bias = true;
    return m;
}

inline sc::ModelConfig SmallMoe() {
    sc::ModelConfig m = SmallGpt();
    m.name = "small-moe";
    m.kv_heads = 4;
    m.mlp = sc::MlpKind::swiglu;
    m.norm = sc::NormKind::rmsnorm;
    m.position = sc::PositionKind::rotary;
    m.tied_embeddings = false;
    m.bias = false;
    m.moe = {8, 2, 1, 512, 1, 0};
    return m;
}

inline std::string Preset(const std::string& name) {
    std::ifstream f(std::string(SC_SOURCE_DIR) + "/presets/models/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct FileSink final : sc::ByteSink {
    std::ofstream f;
    explicit FileSink(const std::string& path) : f(path, std::ios::binary) {}
    void Write(std::string_view b) override { f.write(b.data(), static_cast<std::streamsize>(b.size())); }
};

// Writes <dir>/trace.<rank>.et and <dir>/trace.json; returns dir.
inline std::string WriteTraces(const sc::Job& job, const std::string& name) {
    std::string dir = (std::filesystem::temp_directory_path() / ("sc-trace-" + name)).string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    sc::RankTraceWriter w(job);
    for (int r = 0; r < w.world(); ++r) {
        FileSink s(dir + "/trace." + std::to_string(r) + ".et");
        w.WriteRank(r, s);
    }
    FileSink g(dir + "/trace.json");
    w.WriteCommGroups(g);
    return dir;
}

// ASTRA-sim's rules (docs/chakra_et.md), checked with our own reader over the traces WriteTraces wrote for `job`
// into `dir`: "" when every rank keeps them, else what breaks.
inline std::string AstraRuleBreaches(const sc::Job& job, const std::string& dir) {
    std::vector<sc::EtFile> files;
    for (int r = 0; r < job.par.world(); ++r)
        files.push_back(sc::ReadEt(ReadFile(dir + "/trace." + std::to_string(r) + ".et")));
    return AstraRules::Check(files, AstraRules::ParseGroups(ReadFile(dir + "/trace.json")));
}

inline int RunChecker(const std::string& dir, const std::string& extra = "") {
    std::string cmd =
        "python3 '" + ChakraCheckerPath() + "' --strict " + extra + " " + dir + " > " + dir + ".check.log 2>&1";
    int rc = std::system(cmd.c_str());
    return WEXITSTATUS(rc);
}

// `job`'s traces keep ASTRA-sim's rules (our reader) and, when it is beside the project, the independent checker's;
// without the checker the calling test is marked skipped with the reason (call it last).
inline void ExpectTracesKeepAstraSimsRules(const sc::Job& job, const std::string& name) {
    const std::string dir = WriteTraces(job, name);
    EXPECT_EQ(AstraRuleBreaches(job, dir), "");
    if (ChakraCheckerPath().empty()) GTEST_SKIP() << NoCheckerReason();
    EXPECT_EQ(RunChecker(dir), 0) << ReadFile(dir + ".check.log");
}

}  // namespace sctest
