// Clusters of any size and edits of their fields: ExtendSystem joins leaf-spine pods with a core tier, and
// --system-set edits (ApplySystemEdits) change a level or the accelerator with errors naming the edit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/error.h"
#include "config/system_edits.h"
#include "parallel/job.h"
#include "preset_files.h"
#include "test_util.h"
#include "training/compute_model.h"
#include "training/estimate.h"
#include "training/sweep.h"

namespace {

const std::string kRoot = SC_SOURCE_DIR;

sc::System Preset(const std::string& id) {
    std::string text = sctest::ReadFile(kRoot + "/presets/systems/" + id + ".json");
    std::string acc = nlohmann::json::parse(text)["accelerator"];
    return sc::ParseSystem(text, sctest::ReadFile(kRoot + "/presets/hardware/" + acc + ".json"));
}

TEST(ClusterSize, PodsBeyondTheirSizeAreJoinedByACoreTier) {
    const sc::System pod = Preset("dgx-h100-superpod");
    ASSERT_EQ(pod.levels.size(), 2u);
    const sc::System big = sc::ExtendSystem(pod, 16384);
    ASSERT_EQ(big.levels.size(), 3u);
    EXPECT_EQ(big.levels[1].size, pod.levels[1].size);  // the pod keeps its size
    EXPECT_EQ(big.levels[2].kind, sc::LevelKind::three_tier);
    EXPECT_EQ(big.levels[2].size, 16384);
    EXPECT_EQ(big.levels[2].bandwidth_gbps, pod.levels[1].bandwidth_gbps);  // same NICs
    EXPECT_EQ(big.levels[2].oversubscription, 1);
    sc::ValidateSystemHierarchy(big);
    // Not a whole number of pods: rounded up to whole pods.
    EXPECT_EQ(sc::ExtendSystem(pod, 1500).levels[2].size, 2048);
    // A system that already holds the GPUs is unchanged.
    EXPECT_EQ(sc::ExtendSystem(pod, 512).levels.size(), 2u);
    // A fullflat fabric grows instead.
    const sc::System flat = Preset("h100-fullflat");
    const sc::System flat_big = sc::ExtendSystem(flat, 4 * flat.TotalAccelerators());
    EXPECT_EQ(flat_big.levels.size(), flat.levels.size());
    EXPECT_EQ(flat_big.TotalAccelerators(), 4 * flat.TotalAccelerators());
}

TEST(ClusterSize, ACoreTaperSlowsTheGradientReduction) {
    sc::ModelConfig m = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/llama3-8b.json"));
    // Pure data parallelism over 2,048 GPUs: the gradient all-reduce crosses the core tier.
    sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("dp=2048,microbatch=1,batch=2048"));
    sc::System sys = sc::ExtendSystem(Preset("dgx-h100-superpod"), 2048);
    sc::TrainingOptions opt;
    opt.overlap_dp = false;
    const double t1 = sc::EstimateTraining(job, sys, nullptr, opt).step.dp_comm;
    sc::ApplySystemEdits(sys, {"ndr-ib-fat-tree-core.oversubscription=8"});
    const double t8 = sc::EstimateTraining(job, sys, nullptr, opt).step.dp_comm;
    EXPECT_GT(t1, 0);
    EXPECT_GT(t8, t1);
}

TEST(SystemEdits, ChangeTheNamedFieldAndRecordIt) {
    sc::System s = Preset("dgx-h100-superpod");
    sc::ApplySystemEdits(
        s, {"1.bandwidth=25", "ndr-ib-fat-tree.oversubscription=2", "0.efficiency=0.5", "1.in_network_reduction=off",
            "accelerator.hbm_tbps=2.4", "accelerator.memory_gb=96", "accelerator.bf16_tflops=835", "1.latency=5"});
    EXPECT_EQ(s.levels[1].bandwidth_gbps, 25);
    EXPECT_EQ(s.levels[1].oversubscription, 2);
    EXPECT_EQ(s.levels[0].efficiency, 0.5);
    EXPECT_FALSE(s.levels[1].in_network_reduction);
    EXPECT_EQ(s.levels[1].latency_us, 5);
    EXPECT_EQ(s.accelerator.hbm_bandwidth_tbps, 2.4);
    EXPECT_DOUBLE_EQ(s.accelerator.MemoryBytes(), 96e9);
    EXPECT_EQ(*s.accelerator.matrix.bf16, 835);
    EXPECT_EQ(s.levels[1].provenance.at("bandwidth").status, "EDITED");
    EXPECT_EQ(s.accelerator.provenance.at("hbm_tbps").status, "EDITED");
}

TEST(SystemEdits, BadEditsNameKeyValueAndWhatIsValid) {
    const sc::System base = Preset("dgx-h100-superpod");
    auto err = [&](const std::string& edit) {
        sc::System s = base;
        return sctest::ErrorOf([&] { sc::ApplySystemEdits(s, {edit}); });
    };
    EXPECT_NE(err("1.bandwidth=-3").find("1.bandwidth"), std::string::npos);
    EXPECT_NE(err("1.bandwidth=nan").find("1.bandwidth"), std::string::npos);
    EXPECT_NE(err("1.bandwidth=1e999").find("1.bandwidth"), std::string::npos);
    EXPECT_NE(err("0.efficiency=1.5").find("0.efficiency"), std::string::npos);
    EXPECT_NE(err("0.oversubscription=2").find("scale_up"), std::string::npos);
    EXPECT_NE(err("1.oversubscription=0.5").find("1.oversubscription"), std::string::npos);
    EXPECT_NE(err("7.size=8").find("levels 0 to 1"), std::string::npos);
    EXPECT_NE(err("spine.size=8").find("not a level"), std::string::npos);
    EXPECT_NE(err("1.colour=red").find("size bandwidth latency"), std::string::npos);
    EXPECT_NE(err("accelerator.hbm=4").find("hbm_tbps"), std::string::npos);
    EXPECT_NE(err("bandwidth").find("key=value"), std::string::npos);
    EXPECT_NE(err("bandwidth=4").find("<level>.<field>"), std::string::npos);
    EXPECT_NE(err("1.in_network_reduction=maybe").find("on or off"), std::string::npos);
    // The hierarchy is re-checked: sizes grow and divide, the scale-up level fits the accelerator.
    EXPECT_NE(err("1.size=1004").find("multiple"), std::string::npos);
    EXPECT_NE(err("0.size=16").find("scale-up domain"), std::string::npos);
    EXPECT_NE(err("1.size=4").find("larger"), std::string::npos);
}

// The measured curves describe the preset's part. An edited peak, HBM bandwidth or scale-up bandwidth must change
// the result, by exactly the edit where the measured curve decides it (the same fraction of the new peak): it was
// ignored, since efficiency = measured / edited peak cancelled the edit.
TEST(SystemEdits, AnEditedPartScalesWhatItsCalibrationMeasured) {
    const sc::CalibrationTable cal =
        sc::ParseCalibration(sctest::ReadFile(kRoot + "/presets/calibration/measured.json"));
    const sc::System base = Preset("dgx-h100-superpod");
    const sc::TrainingOptions opt;
    const sc::ComputeModel before(base.accelerator, sc::Precision::bf16, &cal, opt, {});
    sc::System edited = base;
    sc::ApplySystemEdits(edited, {"accelerator.bf16_tflops=" + std::to_string(2 * *base.accelerator.matrix.bf16),
                                  "accelerator.hbm_tbps=" + std::to_string(1.5 * base.accelerator.hbm_bandwidth_tbps)});
    const sc::ComputeModel after(edited.accelerator, sc::Precision::bf16, &cal, opt, {});
    EXPECT_GT(before.MatmulEfficiency(1e12), 0.1) << "the H100 preset has a measured bf16 GEMM curve";
    // Same fraction of a doubled peak: a compute-bound GEMM takes half the time.
    EXPECT_DOUBLE_EQ(after.MatmulEfficiency(1e12), before.MatmulEfficiency(1e12));
    EXPECT_NEAR(after.Seconds(sc::OpKind::matmul, 1e12, 0), before.Seconds(sc::OpKind::matmul, 1e12, 0) / 2,
                1e-12 * before.Seconds(sc::OpKind::matmul, 1e12, 0));
    EXPECT_NEAR(after.memory_bytes_per_s(), 1.5 * before.memory_bytes_per_s(), 1e-9 * before.memory_bytes_per_s());

    // The NVLink level: a measured all-reduce curve decides its time; doubling the bandwidth halves it.
    sc::ModelConfig m = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/llama3-8b.json"));
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=8,dp=1,microbatch=1,batch=8"));
    sc::TrainingOptions blocking;
    blocking.overlap_tp = false;
    const double tp1 = sc::EstimateTraining(job, base, &cal, blocking).step.tp_comm;
    sc::System fast = base;
    sc::ApplySystemEdits(fast, {"0.bandwidth=" + std::to_string(2 * base.levels[0].bandwidth_gbps)});
    const double tp2 = sc::EstimateTraining(job, fast, &cal, blocking).step.tp_comm;
    EXPECT_GT(tp1, 0);
    EXPECT_LT(tp2, 0.75 * tp1) << "the measured curve, scaled by the edit";
}

TEST(SystemEdits, FromTheCommandLine) {
    const std::string base =
        "estimate --model presets/models/llama3-8b.json --system dgx-h100-superpod --parallel dp=2048 --gpus 2048 --allow-oom";
    sctest::CliResult ok = sctest::RunCli(base + " --system-set ndr-ib-fat-tree-core.oversubscription=2 --json", false);
    ASSERT_EQ(ok.status, 0) << ok.out;
    sctest::CliResult bad = sctest::RunCli(base + " --system-set 1.bandwidth=0");
    EXPECT_EQ(bad.status, 1);
    EXPECT_NE(bad.out.find("--system-set: 1.bandwidth"), std::string::npos) << bad.out;
}

}  // namespace

namespace {

// The CTAs an overlapped NCCL collective holds (Accelerator::collective_ctas) as a what-if: 0 is a collective that
// holds no SM (NCCL's copy-engine path), and the estimate's DP comm SMs follow the count.
TEST(SystemEdits, CollectiveCtasAreAWhatIf) {
    const sc::System base = Preset("dgx-h100-superpod");
    const sc::ModelConfig model = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/llama3-8b.json"));
    const sc::Job job = sc::MakeJob(model, sc::ParseParallelSpec("tp=1,pp=1,dp=64,microbatch=1,batch=64,zero=1"));
    auto dp_sms = [&](const std::string& edit) {
        sc::System s = base;
        sc::ApplySystemEdits(s, {edit});
        EXPECT_EQ(s.accelerator.provenance.at("collective_ctas").status, "EDITED");
        return sc::EstimateTraining(job, s, &sctest::MeasuredCalibration(), sc::TrainingOptions{}).step.dp_comm_sms;
    };
    const double at24 =
        sc::EstimateTraining(job, base, &sctest::MeasuredCalibration(), sc::TrainingOptions{}).step.dp_comm_sms;
    ASSERT_GT(at24, 0);
    EXPECT_EQ(dp_sms("accelerator.collective_ctas=0"), 0);
    EXPECT_NEAR(dp_sms("accelerator.collective_ctas=12"), at24 / 2, 1e-12);
    auto err = [&](const sc::System& sys, const std::string& edit) {
        sc::System s = sys;
        return sctest::ErrorOf([&] { sc::ApplySystemEdits(s, {edit}); });
    };
    std::string e = err(base, "accelerator.collective_ctas=132");
    EXPECT_NE(e.find("accelerator.collective_ctas"), std::string::npos) << e;
    EXPECT_NE(e.find("131"), std::string::npos) << e;
    EXPECT_NE(err(base, "accelerator.collective_ctas=2.5").find("accelerator.collective_ctas"), std::string::npos);
    EXPECT_NE(err(base, "accelerator.collective_ctas=-1").find("accelerator.collective_ctas"), std::string::npos);
    // A part that gives no SM count takes only 0.
    sc::System no_sms = base;
    no_sms.accelerator.sm_count = 0, no_sms.accelerator.collective_ctas = 0;
    e = err(no_sms, "accelerator.collective_ctas=8");
    EXPECT_NE(e.find("no SM count"), std::string::npos) << e;
    EXPECT_EQ(err(no_sms, "accelerator.collective_ctas=0"), "");
}

}  // namespace
