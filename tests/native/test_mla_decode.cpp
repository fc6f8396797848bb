// MLA's decode attention at the serving engine's measured op (config/mla_decode_curve.h): the curves are the rows of
// data/mla_decode_trtllm.json, a decode batch at a measured point costs the op's time in every layer, between points
// it is interpolated, and where no op was measured (another cache precision, another head count, another part) the
// FLOPs-and-bytes kernel times it as before.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "config/calibration.h"
#include "inference/iteration_cost.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using nlohmann::json;
using servetest::Calibration;
using servetest::Model;
using servetest::System;

const json& Table() {
    static const json t = json::parse(sctest::ReadFile(servetest::kRoot + "/data/mla_decode_trtllm.json"));
    return t;
}

// The op's ms in the data file for a part's first accelerator at (cache, heads, sequences, cached tokens).
double TableMs(const std::string& accelerator, const std::string& cache, int heads, int sequences, int cached) {
    for (const json& p : Table().at("parts"))
        if (p.at("accelerators").at(0) == accelerator)
            for (const json& r : p.at("rows"))
                if (r[0] == heads && r[1] == sequences && r[2] == cached && r[3] == cache) return r[4];
    return 0;
}

TEST(ServeMlaDecode, TheCurvesAreTheTablesRows) {
    std::map<std::tuple<std::string, std::string, int>, const MlaDecodeCurve*> curves;
    for (const MlaDecodeCurve& c : Calibration().mla_decode_attention)
        curves[{c.accelerators.at(0), c.dtype == Precision::fp8 ? "fp8" : "bfloat16", c.heads}] = &c;
    size_t rows = 0, points = 0;
    for (const json& p : Table().at("parts")) {
        const std::string acc = p.at("accelerators").at(0);
        for (const json& r : p.at("rows")) {
            ++rows;
            auto it = curves.find({acc, r[3].get<std::string>(), r[0].get<int>()});
            ASSERT_NE(it, curves.end()) << acc << " " << r.dump();
            const MlaDecodeCurve& c = *it->second;
            EXPECT_EQ(c.accelerators, p.at("accelerators").get<std::vector<std::string>>());
            // The op's time at the row's own sequences and cached tokens is the row's.
            EXPECT_DOUBLE_EQ(MlaDecodeSeconds(c, r[1], r[2]), r[4].get<double>() * 1e-3) << acc << " " << r.dump();
        }
    }
    for (const auto& [key, c] : curves)
        for (const MlaDecodeCurve::Row& r : c->rows) points += r.cached.size();
    EXPECT_EQ(points, rows);  // and no point of a curve that is not a row
    EXPECT_EQ(rows, 7u * 2896u);
}

TEST(ServeMlaDecode, ADecodeBatchCostsTheOpInEveryLayer) {
    const ModelConfig m = Model("deepseek-v3");
    ServingPrecision prec;
    prec.weights = prec.compute = Precision::fp4;
    for (const auto& [system, acc] : {std::pair{"dgx-b200-superpod", "b200"}, {"gb200-nvl72", "gb200"}})
        for (Precision kv : {Precision::fp8, Precision::bf16}) {
            prec.kv_cache = kv;
            // Data-parallel attention: each GPU runs all 128 heads on its own sequences.
            PoolConfig pool{4, 1};
            pool.ep = 4, pool.attention_dp = true;
            IterationCost cost(m, prec, pool, System(system), &Calibration(), 1024, 4096);
            ASSERT_NE(cost.mla_decode(), nullptr);
            const std::string cache = kv == Precision::fp8 ? "fp8" : "bfloat16";
            for (auto [seqs, cached] : {std::pair{64, 4095}, {256, 1023}, {1, 131071}}) {
                BatchShape rank;
                for (int i = 0; i < seqs; ++i) rank.AddDecode(cached, 0);
                const double ms = TableMs(acc, cache, 128, seqs, cached);
                ASSERT_GT(ms, 0);
                EXPECT_NEAR(cost.Breakdown(rank.Scaled(4), &rank).attention, 61 * ms * 1e-3, 1e-12)
                    << system << " " << cache << " " << seqs << " x " << cached;
            }
        }
}

TEST(ServeMlaDecode, BetweenAndBeyondThePoints) {
    const MlaDecodeCurve* c = FindMlaDecodeCurve(Calibration(), "h200", Precision::fp8, 128, 512, 64);
    ASSERT_NE(c, nullptr);
    const double ms = 1e-3;
    // Between two measured sequence counts at a measured length, and two lengths at a measured count: in between.
    const double a = TableMs("h200", "fp8", 128, 64, 4095) * ms, b = TableMs("h200", "fp8", 128, 128, 4095) * ms;
    const double mid = MlaDecodeSeconds(*c, 96, 4095);
    EXPECT_GT(mid, std::min(a, b));
    EXPECT_LT(mid, std::max(a, b));
    EXPECT_NEAR(mid, std::sqrt(a * b) * std::pow(b / a, std::log(96.0 / 64) / std::log(2.0) - 0.5), 1e-15);
    // Beyond the most tokens measured for a row, in proportion to the tokens; beyond the most sequences, to them.
    const double last = TableMs("h200", "fp8", 128, 64, 131071) * ms;
    EXPECT_DOUBLE_EQ(MlaDecodeSeconds(*c, 64, 262142), 2 * last);
    const double widest = TableMs("h200", "fp8", 128, 1024, 4095) * ms;
    EXPECT_DOUBLE_EQ(MlaDecodeSeconds(*c, 3072, 4095), 3 * widest);
    // Below one cached token: the first point, the call's floor.
    EXPECT_DOUBLE_EQ(MlaDecodeSeconds(*c, 1, 0), TableMs("h200", "fp8", 128, 1, 1) * ms);
}

TEST(ServeMlaDecode, WithoutAMeasuredOpTheKernelTimesIt) {
    const ModelConfig m = Model("deepseek-v3");
    ServingPrecision prec;
    prec.weights = prec.compute = Precision::fp8;
    prec.kv_cache = Precision::fp8;
    // H800 reads H100's table (the same GH100 die); A100 has none; an fp4 cache was not measured; nor 96 heads a rank.
    EXPECT_NE(IterationCost(m, prec, 8, System("dgx-h100-superpod"), &Calibration(), 512, 2048).mla_decode(), nullptr);
    EXPECT_NE(FindMlaDecodeCurve(Calibration(), "h800", Precision::fp8, 16, 512, 64), nullptr);
    EXPECT_EQ(FindMlaDecodeCurve(Calibration(), "a100-80gb", Precision::fp8, 16, 512, 64), nullptr);
    EXPECT_EQ(FindMlaDecodeCurve(Calibration(), "h100-sxm", Precision::fp4, 16, 512, 64), nullptr);
    EXPECT_EQ(FindMlaDecodeCurve(Calibration(), "h100-sxm", Precision::fp8, 96, 512, 64), nullptr);
    EXPECT_EQ(FindMlaDecodeCurve(Calibration(), "h100-sxm", Precision::fp8, 16, 256, 64), nullptr);  // another latent
    // A 16-bit cache reads the bf16 table whether it is bf16 or fp16.
    EXPECT_EQ(FindMlaDecodeCurve(Calibration(), "b200", Precision::fp16, 128, 512, 64),
              FindMlaDecodeCurve(Calibration(), "b200", Precision::bf16, 128, 512, 64));
    prec.kv_cache = Precision::fp4;
    IterationCost fp4(m, prec, 8, System("dgx-h100-superpod"), &Calibration(), 512, 2048);
    EXPECT_EQ(fp4.mla_decode(), nullptr);
    BatchShape b;
    b.decodes = 8, b.decode_keys = 8 * 1000.0;
    EXPECT_GT(fp4.Breakdown(b).attention, 0);
}

TEST(ServeMlaDecode, BadPointsAreRefusedByField) {
    const std::string head =
        R"({"description": "x", "collectives": [], "gemm": [], "gemm_max_achievable": [], "memory_bandwidth": [], "mla_decode_attention": [
        {"id": "t", "accelerators": ["b200"], "dtype": "fp8", "heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
         "x": "[sequences, cached_tokens]", "y": "ms", "points": )";
    const std::string tail = R"(, "series": "s", "hardware": "h", "setup": "u", "source": "v"}]})";
    auto error = [&](const std::string& points) {
        return sctest::ErrorOf([&] { ParseCalibration(head + points + tail); });
    };
    EXPECT_EQ(error("[[64, 4095, 0.05]]"), "");
    EXPECT_NE(error("[[64, 4095, 0.05], [64, 4095, 0.06]]").find("mla_decode_attention[0].points[1]"),
              std::string::npos);
    EXPECT_NE(error("[[1.5, 4095, 0.05]]").find("sequences must be a whole number"), std::string::npos);
    EXPECT_NE(error("[[64, 4095, -1]]").find("ms must be in (0, 1e5)"), std::string::npos);
    EXPECT_NE(error("[[64, 4095]]").find("expected [sequences, cached_tokens, ms]"), std::string::npos);
    EXPECT_NE(error("[]").find("no points"), std::string::npos);
}

}  // namespace
