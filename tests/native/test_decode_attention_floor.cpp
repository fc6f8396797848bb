// The fixed cost of a decode-attention call (presets/calibration/measured.json "decode_attention_floor"): derived
// here again from the published paged-decode timings in data/calibration.json ("decode_attention"), so a change to
// either shows as a stale preset; then the serving model is checked to charge it to every decode-attention call
// where, and only where, it was measured.
//   ./build/stagecraft_tests --gtest_filter='DecodeAttentionFloor.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "inference/iteration_cost.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "training/compute_model.h"

namespace {

using namespace sc;
using json = nlohmann::json;

// Per series (one kernel at one shape, the cache growing), the intercept of the least-squares line through its
// (read + written bytes, GPU time in us) points; the median over the series whose hardware names `gpu`.
struct Derived {
    double alpha_us = 0;
    int series = 0;
};

Derived Derive(const std::string& gpu) {
    const json data = json::parse(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/data/calibration.json"));
    std::map<std::string, std::vector<std::pair<double, double>>> by_series;
    for (const json& r : data.at("decode_attention")) {
        if (r.at("hardware").get<std::string>().rfind(gpu, 0) != 0) continue;
        const json& m = r.at("measured");
        by_series[r.at("series")].push_back(
            {m.at("read_bytes").get<double>() + m.at("write_bytes").get<double>(), m.at("time_us").get<double>()});
    }
    std::vector<double> alphas;
    for (const auto& [series, pts] : by_series) {
        double mx = 0, my = 0;
        for (const auto& [x, y] : pts) mx += x, my += y;
        mx /= pts.size(), my /= pts.size();
        double sxy = 0, sxx = 0;
        for (const auto& [x, y] : pts) sxy += (x - mx) * (y - my), sxx += (x - mx) * (x - mx);
        alphas.push_back(my - sxy / sxx * mx);
    }
    Derived d;
    d.series = static_cast<int>(alphas.size());
    if (alphas.empty()) return d;
    std::sort(alphas.begin(), alphas.end());
    const size_t n = alphas.size();
    const double median = n % 2 ? alphas[n / 2] : (alphas[n / 2 - 1] + alphas[n / 2]) / 2;
    d.alpha_us = std::round(median * 100) / 100;
    return d;
}

TEST(DecodeAttentionFloor, IsTheMedianInterceptOfThePublishedSeries) {
    for (const auto& [gpu, part] :
         {std::pair{"H100", "h100-sxm"}, std::pair{"A100", "a100-80gb"}, std::pair{"B200", "b200"},
          std::pair{"GB200", "gb200"}, std::pair{"B300", "b300"}, std::pair{"GB300", "gb300"}}) {
        SCOPED_TRACE(gpu);
        const Derived d = Derive(gpu);
        const DecodeAttentionFloor* f = FindDecodeAttentionFloor(servetest::Calibration(), part);
        ASSERT_NE(f, nullptr) << part << " has no decode_attention_floor entry; it would be alpha_us " << d.alpha_us;
        EXPECT_EQ(f->alpha_us, d.alpha_us) << "presets/calibration/measured.json decode_attention_floor \"" << f->id
                                           << "\" is stale: alpha_us is now " << d.alpha_us;
        EXPECT_EQ(f->series_count, d.series);
    }
    // Ten series of three kernels on H100 (ONNX Runtime's, FlashAttention-2's and -3's), two of one on A100; on
    // each Blackwell part TensorRT-LLM's attention op at Llama 3 70B's TP8 shape, one series a batch of 1-2,048.
    EXPECT_EQ(Derive("H100").series, 10);
    EXPECT_EQ(Derive("A100").series, 2);
    for (const char* gpu : {"B200", "GB200", "B300", "GB300"}) EXPECT_EQ(Derive(gpu).series, 12) << gpu;
    // The 40 GB A100 and the other sm_90 parts read the same entries; a part with no measurement has none.
    EXPECT_EQ(FindDecodeAttentionFloor(servetest::Calibration(), "a100-40gb"),
              FindDecodeAttentionFloor(servetest::Calibration(), "a100-80gb"));
    EXPECT_EQ(FindDecodeAttentionFloor(servetest::Calibration(), "h200"),
              FindDecodeAttentionFloor(servetest::Calibration(), "h100-sxm"));
    EXPECT_EQ(FindDecodeAttentionFloor(servetest::Calibration(), "l40s"), nullptr);
    EXPECT_EQ(FindDecodeAttentionFloor(servetest::Calibration(), "mi300x"), nullptr);
}

// A fixed cost given in milliseconds, or none, or a count that is no count, is refused naming the field.
TEST(DecodeAttentionFloor, BadEntriesAreRefusedNamingTheField) {
    auto broken = [](const std::string& from, const std::string& to) {
        return servetest::CalibrationErrorWith("decode_attention_floor", from, to);
    };
    EXPECT_NE(broken("\"alpha_us\": 15.39", "\"alpha_us\": 15390").find("decode_attention_floor[0].alpha_us"),
              std::string::npos);
    EXPECT_NE(broken("\"alpha_us\": 15.39", "\"alpha_us\": 0").find("decode_attention_floor[0].alpha_us"),
              std::string::npos);
    EXPECT_NE(broken("\"series_count\": 10", "\"series_count\": -1").find("decode_attention_floor[0].series_count"),
              std::string::npos);
    EXPECT_NE(broken("\"series_count\": 10", "\"kernels\": 10").find("decode_attention_floor[0]"), std::string::npos);
}

// One decode step of one short sequence: every layer's attention is the fixed cost plus its bytes at the
// STREAM-copy bandwidth, the same sum whatever the GEMMs' floor; a part without the entry pays the kernel floor.
TEST(DecodeAttentionFloor, EveryDecodeAttentionCallPaysIt) {
    const ModelConfig m = servetest::Model("llama3-70b");
    ServingPrecision p;
    BatchShape b;
    b.AddDecode(100, 0);
    const double kv = 2.0 * 1 * 128 * 2;  // K and V of one token, one KV head per rank at TP8
    // Q and O of 8 heads; the 100 cached keys and the new one read, the new one written.
    const double bytes = 64.0 / 8 * 128 * 2 * 2 + 101 * kv + kv;
    for (const char* sys : {"dgx-h100-superpod", "dgx-a100-superpod", "dgx-b200-superpod", "mi300x-cluster"}) {
        SCOPED_TRACE(sys);
        const IterationCost cost(m, p, 8, servetest::System(sys), &servetest::Calibration(), 128, 64);
        const double bw = cost.compute_model().memory_bytes_per_s();
        const IterationBreakdown d = cost.Breakdown(b);
        if (const DecodeAttentionFloor* f = cost.decode_attention_floor()) {
            EXPECT_NEAR(d.attention, 80 * (f->alpha_us * 1e-6 + bytes / bw), 1e-12);
        } else {
            EXPECT_NEAR(d.attention, 80 * (cost.kernel_floor().alpha_s + bytes / bw), 1e-12);
        }
    }
    const IterationCost h100(m, p, 8, servetest::System("dgx-h100-superpod"), &servetest::Calibration(), 128, 64);
    ASSERT_NE(h100.decode_attention_floor(), nullptr);
    EXPECT_EQ(h100.decode_attention_floor()->alpha_us, 15.39);
    EXPECT_GT(h100.decode_attention_floor()->alpha_us * 1e-6, h100.kernel_floor().alpha_s);
}

}  // namespace
