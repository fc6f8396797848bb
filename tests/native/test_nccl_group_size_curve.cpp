// A group smaller than its scale-up domain reads the nccl-tests curve measured on its own GPU count (aiconfigurator's
// NCCL 2.29.2 tables: 2, 4 and 8 GPUs of one node; data/calibration.json series aiconf-nccl2.29.2-*-<n>gpu-default).
// The chunk-size rule it read before (k ranks at the buffer a measurement on n ranks sees) keeps the per-step time
// and scales the whole time by (k - 1) / (n - 1), NCCL's fixed per-call cost and the tuner's choice for k GPUs
// included: on 4 of 8 H100s it gave 248 us for a 64 MiB all-reduce that takes 330 us, and 8 us for 128 KiB that takes
// 11.4 us.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "inference/iteration_cost.h"
#include "parallel/layout.h"
#include "serve_test_util.h"
#include "training/comm_model.h"

namespace {

using namespace sc;

CommModel Net(const std::string& system, const std::string& spec, bool inr, const CalibrationTable& cal) {
    return CommModel(servetest::System(system), Layout(ParseParallelSpec(spec)), inr, &cal);
}

// The table without the curves measured on `ranks` GPUs.
CalibrationTable Without(int ranks) {
    CalibrationTable t = servetest::Calibration();
    std::erase_if(t.collectives, [&](const CollectiveCurve& c) { return c.n_ranks == ranks; });
    return t;
}

// Every part with measurements on 2 and 4 GPUs: a TP group of that size reads them for every collective.
TEST(NcclGroupSizeCurve, EachGroupReadsTheCurveOfItsOwnSize) {
    const CalibrationTable& cal = servetest::Calibration();
    for (const std::string system : {"dgx-h100-superpod", "dgx-h200-superpod", "dgx-b200-superpod", "dgx-b300-superpod",
                                     "gb200-nvl72", "gb300-nvl72"})
        for (int k : {2, 4}) {
            SCOPED_TRACE(system + " tp=" + std::to_string(k));
            const CommModel net = Net(system, "tp=" + std::to_string(k), true, cal);
            for (CollectiveType t : {CollectiveType::all_reduce, CollectiveType::all_gather,
                                     CollectiveType::reduce_scatter, CollectiveType::all_to_all}) {
                const CollectiveCurve* c = net.ScaleUpCurve(t, k);
                ASSERT_NE(c, nullptr);
                EXPECT_EQ(c->n_ranks, k) << c->series;
                EXPECT_EQ(c->series.rfind("aiconf-nccl2.29.2-", 0), 0u) << c->series;
            }
        }
}

// A count measured at one size only is a point, not a curve: 2 of 8 MI300X read the node's RCCL curve by the chunk
// rule, not ml-engineering's one 2-rank all-reduce.
TEST(NcclGroupSizeCurve, OnePointIsNotACurve) {
    const CalibrationTable& cal = servetest::Calibration();
    bool point = false;
    for (const CollectiveCurve& c : cal.collectives)
        point |= c.n_ranks == 2 && c.busbw.x.size() == 1 && c.scope == "scale_up" &&
                 std::find(c.accelerators.begin(), c.accelerators.end(), "mi300x") != c.accelerators.end();
    ASSERT_TRUE(point);
    const CollectiveCurve* c = Net("mi300x-cluster", "tp=2", true, cal).ScaleUpCurve(CollectiveType::all_reduce, 2);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->n_ranks, 8);
    EXPECT_GT(c->busbw.x.size(), 1u);
}

// A100: its 2- and 4-GPU curves are NCCL 2.27.3's (the table's only A100 release), its 8-GPU all-reduce Azure's NCCL
// 2.18.5 run. A node's gather reads that all-reduce at the same buffer (equal steps, equal busbw), not the 4-GPU
// gather by the chunk rule: the curve measured nearest the domain's GPU count stands in. A TP-2 all-reduce of 256 KiB
// takes the measured 15.26 us, 2.1x the rule's time on the 8-GPU curve.
TEST(NcclGroupSizeCurve, A100ReadsItsOwnCountsAndItsNodesAllReduce) {
    const CalibrationTable& cal = servetest::Calibration();
    const CommModel eight = Net("dgx-a100-superpod", "tp=8", true, cal);
    EXPECT_EQ(eight.ScaleUpCurve(CollectiveType::all_gather)->series, "azure-ndv4-a100-allreduce");
    EXPECT_EQ(eight.ScaleUpCurve(CollectiveType::reduce_scatter)->series, "azure-ndv4-a100-allreduce");
    EXPECT_EQ(eight.ScaleUpCurve(CollectiveType::all_to_all)->series,
              "aiconf-nccl2.27.3-a100-80gb-alltoall-8gpu-default");
    for (int k : {2, 4}) {
        const CommModel net = Net("dgx-a100-superpod", "tp=" + std::to_string(k), true, cal);
        for (CollectiveType t :
             {CollectiveType::all_reduce, CollectiveType::all_gather, CollectiveType::reduce_scatter})
            EXPECT_EQ(net.ScaleUpCurve(t, k)->series.rfind("aiconf-nccl2.27.3-a100-80gb-", 0), 0u) << k;
    }
    const CalibrationTable without = Without(2);
    const double bytes = 262144;
    const double own =
        Net("dgx-a100-superpod", "tp=2", true, cal).Seconds(CollectiveType::all_reduce, GroupKind::tp, bytes);
    EXPECT_NEAR(own, 15.26e-6, 0.01e-6);
    EXPECT_GT(
        own,
        2 * Net("dgx-a100-superpod", "tp=2", true, without).Seconds(CollectiveType::all_reduce, GroupKind::tp, bytes));
}

// 4 of 8 H100s: the all-reduce takes the measured times, 1.3x and 1.4x what the 8-GPU curve said by the chunk rule.
// Without the 4-GPU curves the rule stands again (a preference, not a requirement).
TEST(NcclGroupSizeCurve, AFourGpuAllReduceTakesItsMeasuredTime) {
    const CommModel own = Net("dgx-h100-superpod", "tp=4", true, servetest::Calibration());
    const CalibrationTable without = Without(4);
    const CommModel rule = Net("dgx-h100-superpod", "tp=4", true, without);
    EXPECT_EQ(own.ScaleUpCurve(CollectiveType::all_reduce, 4)->series,
              "aiconf-nccl2.29.2-h100-sxm-allreduce-4gpu-default");
    EXPECT_EQ(rule.ScaleUpCurve(CollectiveType::all_reduce, 4)->n_ranks, 8);
    for (auto [bytes, us] : {std::pair{67108864.0, 330.44}, std::pair{131072.0, 11.42}}) {
        SCOPED_TRACE(bytes);
        const double t = own.Seconds(CollectiveType::all_reduce, GroupKind::tp, bytes);
        EXPECT_NEAR(t, us * 1e-6, 0.01e-6);
        EXPECT_GT(t, 1.3 * rule.Seconds(CollectiveType::all_reduce, GroupKind::tp, bytes));
    }
    // A TP-2 gather likewise: 64 MiB in the measured 159.25 us.
    EXPECT_NEAR(Net("dgx-h100-superpod", "tp=2", true, servetest::Calibration())
                    .Seconds(CollectiveType::all_gather, GroupKind::tp, 67108864),
                159.25e-6, 0.01e-6);
}

// The tuner's measurement on the group's own GPU count is the time with NVLink SHARP allowed, and a floor with it
// off: ring/tree alone (the alpha-beta line here, no ring curve being measured on these parts) is never faster than
// what the tuner picked with them among its choices. So turning in-network reduction on never slows a job.
TEST(NcclGroupSizeCurve, TheTunersMeasurementFloorsRingAlone) {
    for (const std::string spec : {"tp=2", "tp=4", "tp=8"}) {
        SCOPED_TRACE(spec);
        const CommModel on = Net("dgx-h100-superpod", spec, true, servetest::Calibration());
        const CommModel off = Net("dgx-h100-superpod", spec, false, servetest::Calibration());
        const CommModel line = Net("dgx-h100-superpod", spec, false, CalibrationTable{});
        for (double bytes = 1024; bytes <= 1 << 30; bytes *= 4) {
            const double t_on = on.Seconds(CollectiveType::all_reduce, GroupKind::tp, bytes);
            const double t_off = off.Seconds(CollectiveType::all_reduce, GroupKind::tp, bytes);
            EXPECT_EQ(t_off, std::max(t_on, line.Seconds(CollectiveType::all_reduce, GroupKind::tp, bytes))) << bytes;
        }
    }
}

// A decode step of 8 sequences of Llama 3 70B on 4 H100s: each layer's two TP all-reduces carry 128 KiB, and the
// step's TP time is what the 4-GPU curves say for them and for the logits' gather, longer than the chunk rule's by
// exactly the difference.
TEST(NcclGroupSizeCurve, AServingStepsTpAllReducesReadTheFourGpuCurve) {
    const ModelConfig m = servetest::Model("llama3-70b");
    const CalibrationTable without = Without(4);
    const auto [t, r] = servetest::DecodeStepUnder(4, servetest::Calibration(), without);
    const double bytes = 8.0 * m.hidden * 2;
    ASSERT_EQ(bytes, 131072);
    // The engine reads the curve as it stands (CommModel also weighs the alpha-beta line, IterationCost's note).
    const CollectiveCurve* four =
        Net("dgx-h100-superpod", "tp=4", true, servetest::Calibration()).ScaleUpCurve(CollectiveType::all_reduce, 4);
    const CollectiveCurve* eight =
        Net("dgx-h100-superpod", "tp=4", true, without).ScaleUpCurve(CollectiveType::all_reduce, 4);
    ASSERT_EQ(four->n_ranks, 4);
    ASSERT_EQ(eight->n_ranks, 8);
    const double factor = 2.0 * 3 / 4;
    const double each = factor * bytes / (BusBandwidthGBps(*four, bytes) * 1e9) -
                        factor * bytes / (BusBandwidthGBps(*eight, bytes * 8 / 4) * 1e9);
    EXPECT_GT(each, 3e-6);  // 11.42 us measured against 7.9 by the rule
    // And the logits' all-gather (8 x vocab/4 bf16 values from each GPU) its own 4-GPU gather.
    const double logits = 8.0 * std::ceil(m.vocab / 4.0) * 4 * 2;
    const double gather =
        Net("dgx-h100-superpod", "tp=4", true, servetest::Calibration())
            .Seconds(CollectiveType::all_gather, GroupKind::tp, logits) -
        Net("dgx-h100-superpod", "tp=4", true, without).Seconds(CollectiveType::all_gather, GroupKind::tp, logits);
    EXPECT_NEAR(t.tp_comm - r.tp_comm, 2 * m.layers * each + gather, 1e-9);
    EXPECT_EQ(t.linear, r.linear);
    EXPECT_EQ(t.attention, r.attention);
}

}  // namespace
