// A hybrid model's chunked SSD scan at its measured rate (presets/calibration/measured.json "ssd_scan"): NVIDIA
// aiconfigurator's TensorRT-LLM 1.3.0rc15 table of mamba_chunk_scan_combined on B200 (data/calibration.json
// "ssd_scan"), one curve per measured (model, batch). The curves are the records' own numbers and the records their
// measured times; a scan of a measured shape takes its measured time; the training graph's scan ops and a served
// prefill read the curve nearest their sequences x heads; other NVIDIA parts read B200's fraction of their own peak,
// parts without a curve time the scan as an attention kernel.
//   ./build/stagecraft_tests --gtest_filter='SsdScan.*'
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "inference/iteration_cost.h"
#include "parallel/job.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "training/compute_model.h"
#include "training/rate_sources.h"

namespace {

using namespace sc;
using json = nlohmann::json;

using servetest::Part;

const json& Records() { return servetest::CalibrationRecords("ssd_scan"); }

ComputeModel Model(const std::string& part, const CalibrationTable* cal = &servetest::Calibration()) {
    return ComputeModel(Part(part), Precision::bf16, cal, TrainingOptions{});
}

// Every record's efficiency is its FLOPs (7 x d_inner x state a token) over its measured time and B200's 2,250
// TFLOPS; every curve is its series' records, point for point, at the series' one shape.
TEST(SsdScan, TheCurvesAreTheRecords) {
    std::map<std::string, std::map<double, double>> by_series;
    for (const json& r : Records()) {
        const json& s = r.at("shape");
        const double tokens = s.at("batch").get<double>() * s.at("seq_len").get<double>();
        const double flops =
            7 * tokens * s.at("heads").get<double>() * s.at("head_dim").get<double>() * s.at("state").get<double>();
        EXPECT_EQ(r.at("derived").at("flops").get<double>(), flops);
        const double eff = flops / (r.at("measured").at("latency_ms").get<double>() * 1e-3) / 2250e12;
        EXPECT_NEAR(r.at("derived").at("efficiency").get<double>(), eff, 5e-6) << r.at("series");
        EXPECT_LT(eff, 0.05);  // a Triton chain far from the tensor cores' rate
        by_series[r.at("series")][s.at("seq_len")] = r.at("derived").at("efficiency");
    }
    EXPECT_EQ(Records().size(), 305u);
    const CalibrationTable& cal = servetest::Calibration();
    ASSERT_EQ(cal.ssd_scan.size(), 21u);  // Nano, Super and Ultra at the batches the table measured
    for (const ScanCurve& c : cal.ssd_scan) {
        SCOPED_TRACE(c.id);
        servetest::ExpectCurveIsRecords(c.efficiency, by_series.at(c.series));
        EXPECT_EQ(c.chunk, 128);  // Megatron-Core's MambaMixer default, which the graph's models run
    }
}

// A malformed scan curve is refused with its field named, never read as a default.
TEST(SsdScan, CurveErrorsNameTheField) {
    auto broken = [](const std::string& from, const std::string& to) {
        return servetest::CalibrationErrorWith("ssd_scan", from, to);
    };
    EXPECT_NE(broken("\"heads\": 64,", "\"heads\": 0,").find("ssd_scan[0].heads"), std::string::npos);
    EXPECT_NE(broken("\"chunk\": 128,", "").find("ssd_scan[0].chunk"), std::string::npos);
    EXPECT_NE(broken("\"x\": \"seq_len\"", "\"x\": \"tokens\"").find("ssd_scan[0].x"), std::string::npos);
    EXPECT_NE(broken("\"batch\": 1,", "\"batch\": 1, \"batches\": 2,").find("ssd_scan[0]"), std::string::npos);
}

// A call of a measured shape takes the measured time: Nemotron 3 Nano's 64 heads (d_inner 4,096, state 128), two
// sequences of 8,192 tokens, on B200, within the records' 5-digit rounding of the efficiency.
TEST(SsdScan, AScanOfAMeasuredShapeTakesItsMeasuredTime) {
    const ComputeModel cm = Model("b200");
    int checked = 0;
    for (const json& r : Records()) {
        const json& s = r.at("shape");
        if (s.at("seq_len").get<int>() < 1024) continue;  // (shorter: the rounding is a larger share)
        const double heads = s.at("heads"), batch = s.at("batch"), len = s.at("seq_len");
        const double flops = r.at("derived").at("flops");
        const double t = cm.ScanSeconds(flops, 0, batch * heads, heads, len);
        EXPECT_NEAR(t / (r.at("measured").at("latency_ms").get<double>() * 1e-3), 1.0, 2e-3) << r.at("series") << len;
        ++checked;
    }
    EXPECT_EQ(checked, 95);  // every record of 1,024 tokens a sequence and more
}

// The curve read is the one nearest the call's sequences x heads (by ratio), then the one of the nearest heads; its
// length is read on it (clamped beyond the measured 1-32,768 tokens).
TEST(SsdScan, TheNearestSequencesTimesHeadsIsRead) {
    const CalibrationTable& cal = servetest::Calibration();
    const std::vector<const ScanCurve*> b200 = FindScanCurves(cal, "b200");
    ASSERT_EQ(b200.size(), 21u);
    EXPECT_EQ(NearestScanCurve(b200, 128, 64)->series, "aiconf-b200-trtllm1.3rc15-ssd-scan-nemotron3nano-b2");
    EXPECT_EQ(NearestScanCurve(b200, 128, 128)->series, "aiconf-b200-trtllm1.3rc15-ssd-scan-nemotron3super-b1");
    EXPECT_EQ(NearestScanCurve(b200, 100, 100)->parallel_heads(), 128);  // 128/100 < 100/64
    EXPECT_EQ(NearestScanCurve(b200, 8, 8)->parallel_heads(), 64);       // below the table: its smallest
    const ComputeModel cm = Model("b200");
    const ScanCurve* nano2 = NearestScanCurve(b200, 128, 64);
    EXPECT_EQ(cm.ScanEfficiency(128, 64, 8192), Interpolate(nano2->efficiency, 8192));
    EXPECT_EQ(cm.ScanEfficiency(128, 64, 1e6), nano2->efficiency.y.back());
    // Half the sequences x heads, half the rate at length (the table's Nano at one sequence against two).
    EXPECT_NEAR(cm.ScanEfficiency(64, 64, 8192) / cm.ScanEfficiency(128, 64, 8192), 0.5, 0.02);
}

// Another NVIDIA part reads B200's fraction of its own 16-bit peak: H100 takes 2,250 / 989.5 the time. A part with no
// curve (MI300X) times the scan as an attention kernel, as does a calibration without the curves.
TEST(SsdScan, OtherPartsReadTheFractionOfTheirOwnPeak) {
    const double flops = 7.0 * 2 * 8192 * 4096 * 128;
    const double b200 = Model("b200").ScanSeconds(flops, 0, 128, 64, 8192);
    const double h100 = Model("h100-sxm").ScanSeconds(flops, 0, 128, 64, 8192);
    EXPECT_NEAR(h100 / b200, 2250 / 989.5, 1e-9);
    EXPECT_EQ(Model("h100-sxm").ScanEfficiency(128, 64, 8192), Model("b200").ScanEfficiency(128, 64, 8192));
    const ComputeModel mi300x = Model("mi300x");
    EXPECT_EQ(mi300x.ScanEfficiency(128, 64, 8192), 0);
    EXPECT_NEAR(mi300x.ScanSeconds(flops, 0, 128, 64, 8192),
                flops / (mi300x.peak_flops() * mi300x.clock_scale() * mi300x.AttentionEfficiency(true)), 1e-12);
    CalibrationTable without = servetest::Calibration();
    without.ssd_scan.clear();
    const ComputeModel b200_without = Model("b200", &without);
    EXPECT_NEAR(b200_without.ScanSeconds(flops, 0, 128, 64, 8192),
                flops / (b200_without.peak_flops() * b200_without.AttentionEfficiency(true)), 1e-12);
    EXPECT_GT(b200 / b200_without.ScanSeconds(flops, 0, 128, 64, 8192), 10);  // what the measurement changed
}

// In the training graph the scan is its own kind of op; the estimate times its forward and its backward (twice the
// FLOPs) at the curve nearest the job's microbatch x heads on the rank, at s/cp tokens.
TEST(SsdScan, TheTrainingGraphTimesItsScanOnTheCurve) {
    ModelConfig m = servetest::Model("nemotron-3-nano");
    for (int tp : {1, 2}) {
        ParallelConfig p;
        p.tp = tp;
        p.sp = tp > 1;  // Megatron-Core's rule for MoE under TP
        p.microbatch = 2;
        const Job job = MakeJob(m, p);
        const AttentionShape shape = AttentionShapeOf(job);
        EXPECT_EQ(shape.scan_heads, 64.0 / tp);
        EXPECT_EQ(shape.microbatch, 2);
        const ComputeModel cm(Part("b200"), Precision::bf16, &servetest::Calibration(), TrainingOptions{}, shape);
        ASSERT_NE(cm.scan_curve(), nullptr);
        EXPECT_EQ(cm.scan_curve()->parallel_heads(), 128.0 / tp);
        EXPECT_EQ(cm.scan_efficiency(), cm.ScanEfficiency(128.0 / tp, 64.0 / tp, 8192));
        int scans = 0;
        for (const Block& b : job.graph.blocks)
            for (const Op& op : b.forward) {
                if (op.kind != OpKind::scan) continue;
                ++scans;
                const double f = job.V(op.flops);
                EXPECT_DOUBLE_EQ(f, 7.0 * 2 * 8192 * 4096 / tp * 128);
                EXPECT_DOUBLE_EQ(cm.Seconds(OpKind::scan, f, 0, true), f / (cm.peak_flops() * cm.scan_efficiency()));
                EXPECT_DOUBLE_EQ(cm.Seconds(OpKind::scan, 2 * f, 0, false), 2 * cm.Seconds(OpKind::scan, f, 0, true));
            }
        EXPECT_GT(scans, 0);
    }
}

// The estimate says which curve its scan read, or that none applies, and a scan at attention's rate makes the rates
// not all measured; a model without a scan says nothing of one.
TEST(SsdScan, TheRatesNameTheScansCurve) {
    ParallelConfig p;
    p.microbatch = 2;
    const Job nano = MakeJob(servetest::Model("nemotron-3-nano"), p);
    const RateSources b200 =
        DescribeRates(nano, servetest::System("dgx-b200-superpod"), &servetest::Calibration(), TrainingOptions{});
    EXPECT_NE(b200.scan.find("aiconf-b200-trtllm1.3rc15-ssd-scan-nemotron3nano-b2"), std::string::npos) << b200.scan;
    const RateSources mi300x =
        DescribeRates(nano, servetest::System("mi300x-cluster"), &servetest::Calibration(), TrainingOptions{});
    EXPECT_EQ(mi300x.scan.rfind("no scan measured for mi300x", 0), 0u) << mi300x.scan;
    EXPECT_FALSE(mi300x.all_measured);
    const Job dense = MakeJob(servetest::Model("llama3-8b"), p);
    EXPECT_EQ(
        DescribeRates(dense, servetest::System("dgx-b200-superpod"), &servetest::Calibration(), TrainingOptions{}).scan,
        "");
}

// A served prefill reads the same curves, at the batch's prefill sequences x heads and their length: two Mamba layers
// of Nemotron 3 Nano's mixer (64 heads of 64, state 128) and two MLPs, one prompt of 4,096 tokens on B200, whose
// attention part is exactly the two scans at the curve (compute-bound far above the kernel floor); without the curves
// they run at the attention kernel's efficiency, an order of magnitude faster.
TEST(SsdScan, AServedPrefillReadsTheCurves) {
    const ModelConfig m = ParseModelConfig(
        R"({"name":"h","layers":4,"hidden":2688,"heads":32,"kv_heads":2,"ffn":1856,"vocab":1000,"seq":8192,
            "mlp":"relu2","norm":"rmsnorm","position":"none","tied_embeddings":false,
            "hybrid_pattern":"M-M-","mamba":{"heads":64,"head_dim":64,"state":128,"groups":8}})");
    const System& sys = servetest::System("dgx-b200-superpod");
    CalibrationTable without = servetest::Calibration();
    without.ssd_scan.clear();
    const IterationCost with(m, ServingPrecision{}, 1, sys, &servetest::Calibration(), 4096, 8192);
    const IterationCost none(m, ServingPrecision{}, 1, sys, &without, 4096, 8192);
    BatchShape b;
    b.AddPrefillChunk(0, 4096, 0);
    const double f = 7.0 * 4096 * 4096 * 128, bytes = 4096 * (6144.0 + 64 + 4096) * 2;
    const double scan = with.compute_model().ScanSeconds(f, bytes, 64, 64, 4096);
    EXPECT_EQ(scan, f / (2250e12 * with.compute_model().ScanEfficiency(64, 64, 4096)));
    EXPECT_NEAR(with.Breakdown(b).attention, 2 * scan, 1e-12);
    EXPECT_GT(with.Breakdown(b).attention / none.Breakdown(b).attention, 10);
    EXPECT_EQ(with.Breakdown(b).linear, none.Breakdown(b).linear);
}

}  // namespace
