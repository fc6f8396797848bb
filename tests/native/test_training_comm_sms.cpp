// SMs taken from GEMMs by the communication kernels of Transformer Engine's userbuffers TP overlap
// (training/comm_sms.h): the closed forms of the loss, which GEMMs it applies to, and the term in the estimate.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "parallel/job.h"
#include "preset_files.h"
#include "test_util.h"
#include "training/comm_model.h"
#include "training/comm_sms.h"
#include "training/compute_model.h"
#include "training/estimate.h"

namespace {

using nlohmann::json;
const std::string kRoot = SC_SOURCE_DIR;

sc::System LoadSystem(const std::string& id) { return sctest::LoadSystemPreset(id); }
const sc::CalibrationTable& Cal() { return sctest::MeasuredCalibration(); }

sc::Op Matmul(const std::string& name, sc::Pass pass) {
    sc::Op op;
    op.name = name;
    op.kind = sc::OpKind::matmul;
    op.pass = pass;
    return op;
}

TEST(CommSms, MarginRunsTheGemmOnTheOtherSms) {
    // A GEMM launched on 132 - 16 SMs does 116/132 of the work per second: 1 s becomes 132/116 s.
    EXPECT_DOUBLE_EQ(sc::CommSmSeconds(1.0, 0.2, {16, true}, 132), 16.0 / 116.0);
    EXPECT_DOUBLE_EQ(sc::CommSmSeconds(2.0, 0.0, {24, true}, 148), 2.0 * 24.0 / 124.0);
}

TEST(CommSms, WithoutMarginTheyShareOnlyWhileTheKernelRuns) {
    // 0.5 s of a 16-SM kernel beside a GEMM: the GEMM gets 116/132 of the GPU for 0.5 s, losing 0.5 * 16/132.
    EXPECT_DOUBLE_EQ(sc::CommSmSeconds(1.0, 0.5, {16, false}, 132), 0.5 * 16.0 / 132.0);
    // A kernel outlasting the GEMM costs no more than running the whole GEMM on the other SMs.
    EXPECT_DOUBLE_EQ(sc::CommSmSeconds(1.0, 50.0, {16, false}, 132), 16.0 / 116.0);
}

TEST(CommSms, NothingWithoutSmsOrWithoutAKernel) {
    EXPECT_EQ(sc::CommSmSeconds(1.0, 1.0, {16, true}, 0), 0.0);   // the preset gives no SM count
    EXPECT_EQ(sc::CommSmSeconds(1.0, 1.0, {0, true}, 132), 0.0);  // a copy-engine exchange
    EXPECT_EQ(sc::CommSmSeconds(0.0, 1.0, {16, false}, 132), 0.0);
}

TEST(CommSms, AKernelOnEverySmIsAnError) {
    const std::string e = sctest::ErrorOf([] { sc::CommSmSeconds(1.0, 1.0, {132, true}, 132); });
    EXPECT_NE(e.find("userbuffers.num_sm"), std::string::npos) << e;
    EXPECT_NE(e.find("0 to 131"), std::string::npos) << e;
}

TEST(CommSms, OnlyThePipelineAndBulkGemmsHoldSms) {
    sc::UserbufferConfig cfg;
    cfg.proj_fprop.num_sm = 1, cfg.fc2_fprop.num_sm = 2, cfg.qkv_dgrad.num_sm = 3;
    cfg.qkv_wgrad.num_sm = 4, cfg.fc1_dgrad.num_sm = 5, cfg.fc1_wgrad.num_sm = 6;
    auto sms = [&](const std::string& name, sc::Pass pass) {
        const sc::UserbufferOverlap* o = sc::UserbufferOverlapOf(Matmul(name, pass), cfg);
        return o ? o->num_sm : -1;
    };
    using sc::Pass;
    EXPECT_EQ(sms("attn.out", Pass::forward), 1);
    EXPECT_EQ(sms("mlp.fc2", Pass::forward), 2);
    EXPECT_EQ(sms("attn.qkv.dgrad", Pass::backward), 3);
    EXPECT_EQ(sms("attn.qkv.wgrad", Pass::backward), 4);
    EXPECT_EQ(sms("mlp.fc1.dgrad", Pass::backward), 5);
    EXPECT_EQ(sms("mlp.gate_up.dgrad", Pass::backward), 5);
    EXPECT_EQ(sms("mlp.gate_up.wgrad", Pass::backward), 6);
    // Ring-exchange GEMMs (copy engines), MoE experts and the LM head hold none.
    for (const char* n : {"attn.qkv", "mlp.fc1", "mlp.gate_up"}) EXPECT_EQ(sms(n, Pass::forward), -1) << n;
    for (const char* n : {"attn.out.dgrad", "mlp.fc2.dgrad", "attn.out.wgrad", "moe.experts.fc2.dgrad"})
        EXPECT_EQ(sms(n, Pass::backward), -1) << n;
    EXPECT_EQ(sms("moe.experts.fc2", Pass::forward), -1);
    sc::Op coll = Matmul("attn.out", Pass::forward);
    coll.kind = sc::OpKind::collective;
    EXPECT_EQ(sc::UserbufferOverlapOf(coll, cfg), nullptr);
}

TEST(CommSms, PresetsCarryTheirSmCounts) {
    EXPECT_EQ(LoadSystem("dgx-h100-superpod").accelerator.sm_count, 132);
    EXPECT_EQ(LoadSystem("dgx-a100-superpod").accelerator.sm_count, 108);
    EXPECT_EQ(LoadSystem("dgx-b200-superpod").accelerator.sm_count, 148);
    EXPECT_EQ(LoadSystem("gb200-nvl72").accelerator.sm_count, 148);
    // DeepSeek-V3's own part: the report's "20 out of the 132 SMs available in the H800 GPU" (Sec. 3.5.1).
    EXPECT_EQ(LoadSystem("h800-cluster").accelerator.sm_count, 132);
    json h100 = json::parse(sctest::ReadFile(kRoot + "/presets/hardware/h100-sxm.json"));
    h100.erase("sm_count");
    h100.erase("collective_ctas");                             // a share of the SMs: needs them
    EXPECT_EQ(sc::ParseAccelerator(h100.dump()).sm_count, 0);  // optional: absent means unknown
    h100["sm_count"] = {{"value", 13.5}, {"unit", "SMs"}, {"status", "VERIFIED"}, {"sources", {"x"}}};
    const std::string e = sctest::ErrorOf([&] { sc::ParseAccelerator(h100.dump()); });
    EXPECT_NE(e.find("sm_count"), std::string::npos) << e;
}

// On one TP8 node (pp = 1, dp = 1: no bubble, no gradient reduction) a userbuffers run differs from one whose
// overlap holds no SMs by the term, less the TP traffic the longer input-gradient GEMMs now hide (SP's backward
// re-gather runs beside them), and the term has its closed form: per microbatch and layer, the proj and fc2
// forward GEMMs and the qkv and fc1 input- and weight-gradient GEMMs, each 16/(132 - 16) longer (TE's defaults:
// 16 SMs with the margin).
TEST(CommSms, EstimateChargesTheSixGemmsAtTheirClosedForm) {
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    const sc::ModelConfig model = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/llama3-70b.json"));
    const sc::Job job = sc::MakeJob(model, sc::ParseParallelSpec("tp=8,pp=1,dp=1,sp=1,batch=4"));
    sc::TrainingOptions opt;
    opt.overlap_tp = true;
    const sc::TrainingEstimate with = sc::EstimateTraining(job, sys, &Cal(), opt);
    sc::TpOverlapKernels other;
    other.kind = sc::TpOverlapKind::other;
    const sc::TrainingEstimate without = sc::EstimateTraining(job, sys, &Cal(), opt, other);
    EXPECT_EQ(without.step.comm_sms, 0.0);
    EXPECT_LE(with.step.tp_comm, without.step.tp_comm);
    EXPECT_NEAR(with.step_seconds - without.step_seconds,
                with.step.comm_sms - (without.step.tp_comm - with.step.tp_comm), 1e-12 * with.step_seconds);

    const sc::ComputeModel cm(sys.accelerator, model.precision.compute, &Cal(), opt, sc::AttentionShapeOf(job));
    double gemms = 0;  // one microbatch, one layer
    const sc::Block& layer = *job.graph.Find(sc::BlockKind::dense_layer);
    for (const auto* ops : {&layer.forward, &layer.backward})
        for (const sc::Op& op : *ops) {
            const std::string& n = op.name;
            const bool fwd = op.pass == sc::Pass::forward;
            if (op.kind == sc::OpKind::matmul && (fwd ? n == "attn.out" || n == "mlp.fc2"
                                                      : n == "attn.qkv.dgrad" || n == "attn.qkv.wgrad" ||
                                                            n == "mlp.gate_up.dgrad" || n == "mlp.gate_up.wgrad"))
                gemms += cm.Seconds(op.kind, job.V(op.flops), job.V(op.bytes), fwd, job.V(op.groups), false, false,
                                    sc::GemmDimsOf(job, op));
        }
    ASSERT_GT(gemms, 0);
    const double expected = job.par.microbatches() * model.layers * gemms * 16.0 / 116.0;
    EXPECT_NEAR(with.step.comm_sms, expected, 1e-9 * expected);
    EXPECT_GT(with.step.compute, without.step.compute);
}

TEST(CommSms, NoTermWithoutOverlapSpOrSmCount) {
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    const sc::ModelConfig model = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/llama3-70b.json"));
    sc::TrainingOptions on;
    on.overlap_tp = true;
    auto sms = [&](const std::string& spec, const sc::TrainingOptions& opt, const sc::System& s) {
        return sc::EstimateTraining(sc::MakeJob(model, sc::ParseParallelSpec(spec)), s, &Cal(), opt).step.comm_sms;
    };
    EXPECT_GT(sms("tp=8,sp=1,batch=4", on, sys), 0);
    EXPECT_EQ(sms("tp=8,sp=1,batch=4", sc::TrainingOptions{}, sys), 0);  // no TP overlap
    EXPECT_EQ(sms("tp=8,sp=0,batch=4", on, sys), 0);                     // userbuffers needs SP
    EXPECT_EQ(sms("tp=1,dp=8,batch=8", on, sys), 0);                     // no TP
    sc::System unknown = sys;
    unknown.accelerator.sm_count = 0;
    EXPECT_EQ(sms("tp=8,sp=1,batch=4", on, unknown), 0);
}

}  // namespace

// ---- The SMs of overlapped data-parallel collectives (Accelerator::collective_ctas). ----

namespace {

sc::System WithCtas(sc::System sys, int ctas) {
    sys.accelerator.collective_ctas = ctas;
    return sys;
}

// What hides of a job's data-parallel traffic: the exposed DP time without overlap less that with it (both the
// plain reduction and gather of ZeRO-0..2 and ZeRO-3's per-block traffic expose all of it without overlap).
double HiddenDpSeconds(const sc::Job& job, const sc::System& sys) {
    sc::TrainingOptions off;
    off.overlap_dp = false;
    return sc::EstimateTraining(job, sys, &Cal(), off).step.dp_comm -
           sc::EstimateTraining(job, sys, &Cal(), sc::TrainingOptions{}).step.dp_comm;
}

TEST(CollectiveSms, TheH100PresetGivesItsProfiledCtaCount) {
    EXPECT_EQ(LoadSystem("dgx-h100-superpod").accelerator.collective_ctas, 24);
    EXPECT_EQ(LoadSystem("dgx-a100-superpod").accelerator.collective_ctas, 0);  // no measurement: no term
}

TEST(CollectiveSms, ChargesTheHiddenTrafficTimesCtasOverSms) {
    // Llama 3 8B, pure DP over 8 nodes: the gradient reduce-scatter hides behind the backward and the parameter
    // gather behind the first forward, each but its last bucket. While they run the compute gets 132 - 24 SMs.
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    const sc::ModelConfig model = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/llama3-8b.json"));
    for (const char* spec :
         {"tp=1,pp=1,dp=64,microbatch=1,batch=64,zero=1", "tp=1,pp=1,dp=64,microbatch=1,batch=128,zero=2",
          "tp=1,pp=1,dp=64,microbatch=1,batch=64,zero=3"}) {
        SCOPED_TRACE(spec);
        const sc::Job job = sc::MakeJob(model, sc::ParseParallelSpec(spec));
        const double hidden = HiddenDpSeconds(job, sys);
        ASSERT_GT(hidden, 0);
        const sc::TrainingEstimate with = sc::EstimateTraining(job, sys, &Cal(), sc::TrainingOptions{});
        const sc::TrainingEstimate free = sc::EstimateTraining(job, WithCtas(sys, 0), &Cal(), sc::TrainingOptions{});
        EXPECT_NEAR(with.step.dp_comm_sms, hidden * 24.0 / 132.0, 1e-9 * hidden);
        EXPECT_EQ(free.step.dp_comm_sms, 0);
        // Charged to compute, so to the step, and nowhere else.
        EXPECT_NEAR(with.step.compute - free.step.compute, with.step.dp_comm_sms, 1e-12 * with.step_seconds);
        EXPECT_NEAR(with.step_seconds - free.step_seconds, with.step.dp_comm_sms, 1e-12 * with.step_seconds);
        EXPECT_EQ(with.step.dp_comm, free.step.dp_comm);
        // Twice the CTAs, twice the loss.
        const sc::TrainingEstimate twice = sc::EstimateTraining(job, WithCtas(sys, 48), &Cal(), sc::TrainingOptions{});
        EXPECT_NEAR(twice.step.dp_comm_sms, 2 * with.step.dp_comm_sms, 1e-9 * with.step.dp_comm_sms);
    }
}

TEST(CollectiveSms, NothingHiddenNothingCharged) {
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    const sc::ModelConfig model = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/llama3-8b.json"));
    const sc::Job job = sc::MakeJob(model, sc::ParseParallelSpec("tp=1,pp=1,dp=64,microbatch=1,batch=64,zero=1"));
    sc::TrainingOptions off;
    off.overlap_dp = false;  // the collectives run alone, on every SM
    EXPECT_EQ(sc::EstimateTraining(job, sys, &Cal(), off).step.dp_comm_sms, 0);
    const sc::Job alone = sc::MakeJob(model, sc::ParseParallelSpec("tp=8,pp=1,dp=1,sp=1,batch=4"));  // no DP
    EXPECT_EQ(sc::EstimateTraining(alone, sys, &Cal(), sc::TrainingOptions{}).step.dp_comm_sms, 0);
    sc::System unknown = sys;
    unknown.accelerator.sm_count = 0;
    EXPECT_EQ(sc::EstimateTraining(job, unknown, &Cal(), sc::TrainingOptions{}).step.dp_comm_sms, 0);
}

TEST(CollectiveSms, ACtaCountMustLeaveSmsForCompute) {
    json h100 = json::parse(sctest::ReadFile(kRoot + "/presets/hardware/h100-sxm.json"));
    json ctas = h100["collective_ctas"];
    ctas["value"] = 132;
    h100["collective_ctas"] = ctas;
    std::string e = sctest::ErrorOf([&] { sc::ParseAccelerator(h100.dump()); });
    EXPECT_NE(e.find("collective_ctas"), std::string::npos) << e;
    EXPECT_NE(e.find("valid: 1 to 131"), std::string::npos) << e;
    ctas["value"] = 0;
    h100["collective_ctas"] = ctas;
    e = sctest::ErrorOf([&] { sc::ParseAccelerator(h100.dump()); });
    EXPECT_NE(e.find("collective_ctas"), std::string::npos) << e;
    ctas["value"] = 24;
    h100["collective_ctas"] = ctas;
    h100.erase("sm_count");
    e = sctest::ErrorOf([&] { sc::ParseAccelerator(h100.dump()); });
    EXPECT_NE(e.find("collective_ctas"), std::string::npos) << e;
    EXPECT_NE(e.find("sm_count"), std::string::npos) << e;
}

}  // namespace
