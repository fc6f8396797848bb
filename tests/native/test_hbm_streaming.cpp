// The achieved HBM rate of a part without a STREAM run: NVIDIA aiconfigurator's timings of TensorRT-LLM's static fp8
// quantize (bf16 in, fp8 out, 3 bytes an element) at 2^30 elements and more, where no L2 holds the array
// (data/calibration.json memory_bandwidth, op "Quantize"). Where a part has both, the kernel streams within a few
// percent of STREAM's copy, so B200, B300, GB200 and GB300 read it in place of the fallback fraction of their
// nominal bandwidth; a part with a STREAM run keeps it.
//   ./build/stagecraft_tests --gtest_filter='HbmStreaming.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve_test_util.h"
#include "training/compute_model.h"
#include "training/rate_sources.h"

namespace {

using namespace sc;
using json = nlohmann::json;

// Every Quantize row is the median of its series' three records, and each record's rate is 3 bytes an element over
// its measured time.
TEST(HbmStreaming, TheRowsAreTheRecordsMedians) {
    std::map<std::string, std::vector<double>> by_series;
    for (const json& r : servetest::CalibrationRecords("memory_bandwidth")) {
        if (r.value("op", "") != "Quantize") continue;
        const double elems = r.at("shape").at("m").get<double>() * r.at("shape").at("k").get<double>();
        EXPECT_GE(elems, 1 << 30);
        const double tbps = 3 * elems / (r.at("measured").at("latency_ms").get<double>() * 1e-3) / 1e12;
        EXPECT_NEAR(r.at("derived").at("TBps").get<double>(), tbps, 5e-4) << r.at("series");
        by_series[r.at("series")].push_back(r.at("derived").at("TBps"));
    }
    int rows = 0;
    for (const HbmMeasurement& m : servetest::Calibration().memory_bandwidth) {
        if (m.op != "Quantize") continue;
        std::vector<double> v = by_series.at(m.series);
        ASSERT_EQ(v.size(), 3u) << m.series;
        std::sort(v.begin(), v.end());
        EXPECT_EQ(m.tbps, v[1]) << m.series;
        ++rows;
    }
    EXPECT_EQ(rows, 7);  // H100, H200, the four Blackwell parts and the RTX PRO 6000 Server
}

// On the parts measured both ways the quantize kernel streams at 1.00-1.10x STREAM's copy (H100 1.03x, H200 1.07x).
TEST(HbmStreaming, WhereBothWereMeasuredTheKernelStreamsAsStreamsCopyDoes) {
    const CalibrationTable& cal = servetest::Calibration();
    for (const char* id : {"h100-sxm", "h200"}) {
        const double copy = AchievedHbmTBps(cal, id, "Copy"), quantize = AchievedHbmTBps(cal, id, "Quantize");
        ASSERT_GT(copy, 0) << id;
        EXPECT_GT(quantize / copy, 1.0) << id;
        EXPECT_LT(quantize / copy, 1.10) << id;
    }
}

// Blackwell parts read the quantize kernel's rate (no STREAM run of theirs exists); H100 keeps STREAM's copy; the
// rates line says which.
TEST(HbmStreaming, PartsWithoutAStreamRunReadTheKernelsRate) {
    const CalibrationTable& cal = servetest::Calibration();
    for (const char* id : {"b200", "b300", "gb200", "gb300", "rtx-pro-6000-server", "h100-sxm"}) {
        SCOPED_TRACE(id);
        const Accelerator& acc = servetest::Part(id);
        const ComputeModel cm(acc, Precision::bf16, &cal, TrainingOptions{});
        const bool hopper = std::string(id) == "h100-sxm";
        EXPECT_TRUE(cm.hbm_measured());
        EXPECT_EQ(cm.hbm_kernel(), hopper ? "Copy" : "Quantize");
        EXPECT_NEAR(cm.memory_bytes_per_s() / 1e12, AchievedHbmTBps(cal, id, cm.hbm_kernel()), 1e-9);
        if (!hopper) {
            EXPECT_GT(cm.memory_bytes_per_s() / 1e12, 0.8 * acc.hbm_bandwidth_tbps);  // above the fallback
        }
        const std::string text = DescribeRates(cm, KernelFloor{}, acc, Precision::bf16, TrainingOptions{}).hbm;
        EXPECT_NE(text.find(hopper ? "STREAM copy measured" : "fp8 quantize measured"), std::string::npos) << text;
    }
}

}  // namespace
