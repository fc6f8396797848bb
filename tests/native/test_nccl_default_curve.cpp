// NCCL's default all-reduce on one H100 or H200 node: NVIDIA aiconfigurator's nccl-tests tables (NCCL 2.29.2,
// no NCCL_ALGO, 8 GPUs; data/calibration.json series aiconf-nccl2.29.2-*) are the scale-up all-reduce curve of
// those parts, in place of Azure's run forced to NVLS. The tuner takes ring/tree LL below about a megabyte and
// NVLS above it, so the two agree on large buffers and differ by 2x on the small all-reduces of a decode step.
#include <gtest/gtest.h>

#include <string>

#include "inference/iteration_cost.h"
#include "parallel/layout.h"
#include "serve_test_util.h"
#include "training/comm_model.h"

namespace {

using namespace sc;

// The curve a TP-8 group's all-reduce reads (it points into `cal`, which outlives the model).
const CollectiveCurve* ScaleUpAllReduce(const std::string& system, const CalibrationTable& cal) {
    const CommModel net(servetest::System(system), Layout(ParseParallelSpec("tp=8")), true, &cal);
    return net.ScaleUpCurve(CollectiveType::all_reduce);
}

CalibrationTable WithoutDefaultCurves() {
    CalibrationTable t = servetest::Calibration();
    std::erase_if(t.collectives, [](const CollectiveCurve& c) {
        return c.op == CollectiveOp::all_reduce && c.series.rfind("aiconf-nccl", 0) == 0;
    });
    return t;
}

// H100 and H200 read the default curve; parts without one keep theirs (B200's is a default run already, A100 has
// no NVLS and reads its ring/tree curve).
TEST(NcclDefaultCurve, HopperReadsTheTunersCurve) {
    const CalibrationTable& cal = servetest::Calibration();
    EXPECT_EQ(ScaleUpAllReduce("dgx-h100-superpod", cal)->series, "aiconf-nccl2.29.2-h100-sxm-allreduce-8gpu-default");
    EXPECT_EQ(ScaleUpAllReduce("dgx-h200-superpod", cal)->series, "aiconf-nccl2.29.2-h200-allreduce-8gpu-default");
    EXPECT_EQ(ScaleUpAllReduce("dgx-b200-superpod", cal)->series, "mle-b200-1node-allreduce");
    EXPECT_EQ(ScaleUpAllReduce("dgx-a100-superpod", cal)->series, "azure-ndv4-a100-allreduce");
    // Without it, the H100 reads the forced-NVLS run, as before (the rule prefers a default curve, it does not
    // require one).
    const CalibrationTable without = WithoutDefaultCurves();
    EXPECT_EQ(ScaleUpAllReduce("dgx-h100-superpod", without)->series, "azure-ndv5-h100-allreduce-nvls");
}

// What the two runs say about NCCL: on large buffers the tuner runs NVLS, so the default and the forced curves
// agree; at 64 KiB the default is less than half the forced one's time.
TEST(NcclDefaultCurve, TheTunerAgreesWithNvlsOnLargeBuffersOnly) {
    const CalibrationTable without = WithoutDefaultCurves();
    const CollectiveCurve* tuned = ScaleUpAllReduce("dgx-h100-superpod", servetest::Calibration());
    const CollectiveCurve* forced = ScaleUpAllReduce("dgx-h100-superpod", without);
    const double large = 268435456, small = 65536;
    EXPECT_NEAR(BusBandwidthGBps(*tuned, large) / BusBandwidthGBps(*forced, large), 1.0, 0.03);
    EXPECT_GT(BusBandwidthGBps(*tuned, small), 2 * BusBandwidthGBps(*forced, small));
}

// A decode step of 8 sequences of Llama 3 70B on 8 H100s: each layer's two TP all-reduces carry 8 x 8192 bf16
// values (128 KiB, a measured point of both curves), and the step's TP time is shorter by exactly their
// difference; nothing else in the step moves.
TEST(NcclDefaultCurve, ADecodeStepsAllReducesTakeTheMeasuredTime) {
    const CalibrationTable without = WithoutDefaultCurves();
    const ModelConfig m = servetest::Model("llama3-70b");
    const auto [t, f] = servetest::DecodeStepUnder(8, servetest::Calibration(), without);
    const double bytes = 8.0 * m.hidden * 2;
    ASSERT_EQ(bytes, 131072);
    auto seconds = [&](const CollectiveCurve* c) { return 2.0 * 7 / 8 * bytes / (BusBandwidthGBps(*c, bytes) * 1e9); };
    const double each = seconds(ScaleUpAllReduce("dgx-h100-superpod", without)) -
                        seconds(ScaleUpAllReduce("dgx-h100-superpod", servetest::Calibration()));
    EXPECT_GT(each, 20e-6);  // 42.5 us forced against 19.0 us measured by default
    EXPECT_NEAR(f.tp_comm - t.tp_comm, 2 * m.layers * each, 1e-9);
    EXPECT_EQ(t.linear, f.linear);
    EXPECT_EQ(t.attention, f.attention);
    EXPECT_EQ(t.head, f.head);
}

}  // namespace

namespace {

// All-gathers and reduce-scatters of 8 H100s: NCCL's default runs ring there (the measured busbw stays under the ring
// plateau: 335 GB/s at 512 MiB against the 370 the fabric level plans), and a TP group's gather reads that curve
// where it used the alpha-beta line at the plateau before: a 128 MiB gather takes the measured 392.8 us, 1.23x the
// line's time.
TEST(NcclDefaultCurve, GathersAndScattersOfAnH100NodeTakeTheMeasuredTime) {
    const System& sys = servetest::System("dgx-h100-superpod");
    const Layout layout(ParseParallelSpec("tp=8"));
    const CommModel measured(sys, layout, true, &servetest::Calibration()), line(sys, layout, true, nullptr);
    EXPECT_EQ(measured.ScaleUpCurve(CollectiveType::all_gather)->series,
              "aiconf-nccl2.29.2-h100-sxm-allgather-8gpu-default");
    EXPECT_EQ(measured.ScaleUpCurve(CollectiveType::reduce_scatter)->series,
              "aiconf-nccl2.29.2-h100-sxm-reducescatter-8gpu-default");
    const double bytes = 134217728;  // a measured point: 392.8 us gathered, 382.2 us scattered
    EXPECT_NEAR(measured.Seconds(CollectiveType::all_gather, GroupKind::tp, bytes), 392.8e-6, 0.05e-6);
    EXPECT_NEAR(measured.Seconds(CollectiveType::reduce_scatter, GroupKind::tp, bytes), 382.2e-6, 0.05e-6);
    EXPECT_GT(measured.Seconds(CollectiveType::all_gather, GroupKind::tp, bytes),
              1.2 * line.Seconds(CollectiveType::all_gather, GroupKind::tp, bytes));
    // The all-reduce keeps its in-network pick.
    EXPECT_EQ(measured.ScaleUpCurve(CollectiveType::all_reduce)->series,
              "aiconf-nccl2.29.2-h100-sxm-allreduce-8gpu-default");
}

}  // namespace

namespace {

// GB200 and GB300 read their own trays' all-gather, reduce-scatter and all-reduce (4 GPUs: the tables stop there), each
// part its own.
TEST(NcclDefaultCurve, Nvl72PartsReadTheirOwnTraysGathers) {
    for (const std::string part : {"gb200", "gb300"}) {
        SCOPED_TRACE(part);
        const CommModel net(servetest::System(part + "-nvl72"), Layout(ParseParallelSpec("tp=4")), true,
                            &servetest::Calibration());
        EXPECT_EQ(net.ScaleUpCurve(CollectiveType::all_gather)->series,
                  "aiconf-nccl2.29.2-" + part + "-allgather-4gpu-default");
        EXPECT_EQ(net.ScaleUpCurve(CollectiveType::reduce_scatter)->series,
                  "aiconf-nccl2.29.2-" + part + "-reducescatter-4gpu-default");
        EXPECT_EQ(net.ScaleUpCurve(CollectiveType::all_reduce)->series,
                  "aiconf-nccl2.29.2-" + part + "-allreduce-4gpu-default");
        // A TP-4 gather of 128 MiB takes the tray's measured time (GB200 195.3 us, GB300 191.8 us), and so does its
        // all-reduce (GB200 342.48 us, GB300 338.78 us).
        EXPECT_NEAR(net.Seconds(CollectiveType::all_gather, GroupKind::tp, 134217728),
                    part == "gb200" ? 195.3e-6 : 191.8e-6, 0.05e-6);
        EXPECT_NEAR(net.Seconds(CollectiveType::all_reduce, GroupKind::tp, 134217728),
                    part == "gb200" ? 342.48e-6 : 338.78e-6, 0.05e-6);
    }
}

}  // namespace

namespace {

// The expert all-to-all inside a node (or a tray) at nccl-tests' measured alltoall, not the fabric level's planned
// rate: 8 H100s send 128 MiB each (16 MiB to every peer) in the measured 402.4 us, 1.27x the alpha-beta line's time
// at the ring plateau. A group of 4 of them reads the curve measured on 4 (64 MiB each in 192.34 us).
TEST(NcclDefaultCurve, AnExpertAllToAllInsideANodeTakesTheMeasuredTime) {
    const System& sys = servetest::System("dgx-h100-superpod");
    const CommModel measured(sys, Layout(ParseParallelSpec("tp=1,dp=8,ep=8")), true, &servetest::Calibration(), true),
        line(sys, Layout(ParseParallelSpec("tp=1,dp=8,ep=8")), true, nullptr, true);
    ASSERT_NE(measured.ScaleUpCurve(CollectiveType::all_to_all), nullptr);
    EXPECT_EQ(measured.ScaleUpCurve(CollectiveType::all_to_all)->series,
              "aiconf-nccl2.29.2-h100-sxm-alltoall-8gpu-default");
    const double bytes = 134217728;
    EXPECT_NEAR(measured.Seconds(CollectiveType::all_to_all, GroupKind::ep, bytes), 402.42e-6, 0.01e-6);
    EXPECT_GT(measured.Seconds(CollectiveType::all_to_all, GroupKind::ep, bytes),
              1.25 * line.Seconds(CollectiveType::all_to_all, GroupKind::ep, bytes));
    const CommModel four(sys, Layout(ParseParallelSpec("tp=1,dp=4,ep=4")), true, &servetest::Calibration(), true);
    EXPECT_EQ(four.ScaleUpCurve(CollectiveType::all_to_all, 4)->series,
              "aiconf-nccl2.29.2-h100-sxm-alltoall-4gpu-default");
    EXPECT_NEAR(four.Seconds(CollectiveType::all_to_all, GroupKind::ep, bytes / 2), 192.34e-6, 0.01e-6);
    // GB300 reads its own tray's (4 GPUs).
    const CommModel gb300(servetest::System("gb300-nvl72"), Layout(ParseParallelSpec("tp=1,dp=4,ep=4")), true,
                          &servetest::Calibration(), true);
    EXPECT_EQ(gb300.ScaleUpCurve(CollectiveType::all_to_all)->series, "aiconf-nccl2.29.2-gb300-alltoall-4gpu-default");
    EXPECT_NEAR(gb300.Seconds(CollectiveType::all_to_all, GroupKind::ep, bytes), 217.4e-6, 0.01e-6);
}

}  // namespace
