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
