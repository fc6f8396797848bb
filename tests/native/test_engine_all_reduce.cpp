// A serving engine's own TP all-reduce (PoolConfig::all_reduce): TensorRT-LLM runs its AllReduce under
// AllReduceStrategy.AUTO, one-shot and two-shot kernels over NVLink peer memory for buffers within its workspace and
// NCCL above; vLLM and SGLang their custom all-reduce inside a CUDA graph. NVIDIA's aiconfigurator measured each on
// 2, 4 and 8 GPUs of H100, H200, B200, B300 and A100 nodes and 2 and 4 of a GB200 or GB300 tray (data/calibration.json
// "engine_all_reduce"). The curves are the records; a pool that names an engine reads its curve for the group's GPU
// count, one that does not (or a part or count without a curve) reads NCCL's as before; NCCL's own picks never see
// these curves.
//   ./build/stagecraft_tests --gtest_filter='EngineAllReduce.*'
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "inference/iteration_cost.h"
#include "inference/serving_parse.h"
#include "serve_test_util.h"
#include "test_util.h"

namespace {

using namespace sc;
using json = nlohmann::json;

const json& Records() { return servetest::CalibrationRecords("engine_all_reduce"); }

// One TP all-reduce of `tokens` tokens of Llama 3 70B's hidden state in bf16 on `tp` GPUs of `system`.
double AllReduceOf(double tokens, int tp, EngineAllReduce kind, const std::string& system,
                   const CalibrationTable& cal = servetest::Calibration()) {
    PoolConfig p;
    p.tp = tp;
    p.all_reduce = kind;
    const IterationCost cost(servetest::Model("llama3-70b"), ServingPrecision{}, p, servetest::System(system), &cal,
                             1024, 1);
    return cost.LayerLinear(tokens).all_reduce;
}

// Every record's bus bandwidth is 2 (n - 1) / n x its bytes over its measured time; every curve is its series'
// records, point for point.
TEST(EngineAllReduce, TheCurvesAreTheRecords) {
    std::map<std::string, std::map<double, double>> by_series;
    std::map<std::string, std::string> engine_of;
    for (const json& r : Records()) {
        const double n = r.at("n_ranks"), bytes = r.at("message_bytes");
        const double bus = 2 * (n - 1) / n * bytes / (r.at("measured").at("time_us").get<double>() * 1e-6) / 1e9;
        EXPECT_NEAR(r.at("derived").at("busbw_GBps").get<double>(), bus, 5e-5 + 1e-6 * bus) << r.at("series");
        engine_of[r.at("series")] = r.at("engine");
        by_series[r.at("series")][bytes] = r.at("derived").at("busbw_GBps");
    }
    // 23 sizes on 2, 4 and 8 GPUs of 5 node parts and 2 and 4 of 2 tray parts, for 3 engines
    EXPECT_EQ(Records().size(), 3 * 437u);
    const CalibrationTable& cal = servetest::Calibration();
    ASSERT_EQ(cal.engine_all_reduce.size(), 3 * 19u);
    for (const CollectiveCurve& c : cal.engine_all_reduce) {
        SCOPED_TRACE(c.id);
        EXPECT_EQ(c.engine, engine_of.at(c.series));
        EXPECT_TRUE(EngineAllReduceNamed(c.engine).has_value());
        servetest::ExpectCurveIsRecords(c.busbw, by_series.at(c.series));
    }
}

// A pool that names an engine takes its measured time at a measured size; at kilobytes that is its custom kernel's
// few microseconds where NCCL's default takes 10-16 (H100, 4 and 8 GPUs), and from tens of megabytes, where
// TensorRT-LLM hands the buffer to NCCL, the two agree.
TEST(EngineAllReduce, APoolNamingTheEngineReadsItsMeasuredTimes) {
    const std::map<std::string, EngineAllReduce> series = {
        {"aiconf-trtllm1.3.0rc20-h100-sxm-allreduce-4gpu-auto", EngineAllReduce::tensorrt_llm},
        {"aiconf-vllm0.24.0-h100-sxm-allreduce-4gpu-graph", EngineAllReduce::vllm},
        {"aiconf-sglang0.5.14-h100-sxm-allreduce-4gpu-graph", EngineAllReduce::sglang}};
    int read = 0;
    for (const json& r : Records()) {
        const auto it = series.find(r.at("series"));
        const double bytes = r.at("message_bytes");
        if (it == series.end() || bytes < 16384) continue;  // a whole number of 8,192-wide bf16 rows
        const double t = AllReduceOf(bytes / 16384, 4, it->second, "dgx-h100-superpod");
        EXPECT_NEAR(t * 1e6, r.at("measured").at("time_us").get<double>(), 1e-3) << it->first << " " << bytes;
        ++read;
    }
    EXPECT_EQ(read, 3 * 17);
    for (int tp : {4, 8}) {
        const double nccl = AllReduceOf(1, tp, EngineAllReduce::nccl, "dgx-h100-superpod");
        EXPECT_GT(nccl * 1e6, 9.0) << tp;
        for (EngineAllReduce a : {EngineAllReduce::tensorrt_llm, EngineAllReduce::vllm, EngineAllReduce::sglang})
            EXPECT_LT(AllReduceOf(1, tp, a, "dgx-h100-superpod") * 1e6, 6.0) << tp << " " << NameOf(a);
        const double big_ours = AllReduceOf(4096, tp, EngineAllReduce::tensorrt_llm, "dgx-h100-superpod");
        const double big_nccl = AllReduceOf(4096, tp, EngineAllReduce::nccl, "dgx-h100-superpod");
        EXPECT_NEAR(big_ours / big_nccl, 1.0, 0.03) << tp;  // 64 MiB: NCCL in both
    }
}

// Under the smallest measured size the engine's time is that size's (its kernels' fixed cost), not a bandwidth's
// share of it.
TEST(EngineAllReduce, UnderTheSmallestSizeTheTimeIsItsFixedCost) {
    CalibrationTable cal = servetest::Calibration();
    for (CollectiveCurve& c : cal.engine_all_reduce) {  // drop the sizes under 64 KiB
        std::erase_if(c.busbw.x, [](double b) { return b < 65536; });
        c.busbw.y.erase(c.busbw.y.begin(), c.busbw.y.end() - static_cast<long>(c.busbw.x.size()));
        c.busbw.log_x.clear();
    }
    const double at_64k = AllReduceOf(4, 8, EngineAllReduce::tensorrt_llm, "dgx-h100-superpod", cal);
    EXPECT_EQ(AllReduceOf(1, 8, EngineAllReduce::tensorrt_llm, "dgx-h100-superpod", cal), at_64k);
}

// NCCL's pool, a part without the engine's curve (MI300X), and a GPU count without one (8 of a GB200 rack, whose
// tables stop at a tray's 4) all time NCCL's all-reduce as before; NCCL's picks never see the engine's curves.
TEST(EngineAllReduce, WithoutItsCurveAPoolReadsNcclsAsBefore) {
    CalibrationTable without = servetest::Calibration();
    without.engine_all_reduce.clear();
    for (const auto& [system, acc, tp] :
         {std::tuple{"dgx-h100-superpod", "", 8}, {"gb200-nvl72", "", 8}, {"dgx-h100-superpod", "mi300x", 8}}) {
        SCOPED_TRACE(std::string(system) + " " + acc);
        const System& sys = servetest::System(system, acc);
        PoolConfig p;
        p.tp = tp;
        p.all_reduce = EngineAllReduce::tensorrt_llm;
        const IterationCost with(servetest::Model("llama3-70b"), ServingPrecision{}, p, sys, &servetest::Calibration(),
                                 1024, 1);
        p.all_reduce = EngineAllReduce::nccl;
        const IterationCost nccl(servetest::Model("llama3-70b"), ServingPrecision{}, p, sys, &servetest::Calibration(),
                                 1024, 1);
        const IterationCost bare(servetest::Model("llama3-70b"), ServingPrecision{}, p, sys, &without, 1024, 1);
        const bool has_curve = std::string(system) == "dgx-h100-superpod" && std::string(acc).empty();
        EXPECT_EQ(with.LayerLinear(64).all_reduce == nccl.LayerLinear(64).all_reduce, !has_curve);
        EXPECT_EQ(nccl.LayerLinear(64).all_reduce, bare.LayerLinear(64).all_reduce);
        EXPECT_EQ(nccl.AllReduceText().find("engine"), std::string::npos) << nccl.AllReduceText();
        EXPECT_EQ(with.AllReduceText().find("aiconf-trtllm") != std::string::npos, has_curve) << with.AllReduceText();
    }
    for (const CollectiveCurve& c : servetest::Calibration().collectives) EXPECT_EQ(c.engine, "") << c.id;
}

// The description names it strictly; the table's entries are checked as the other curves are.
TEST(EngineAllReduce, ItsFieldsAreCheckedAndNamed) {
    const std::string desc =
        sctest::ReadFile(servetest::kRoot + "/presets/inference/llama3-70b-h100x8-fp8-offline.json");
    EXPECT_EQ(ParseServingDescription(desc).config.pool.all_reduce, EngineAllReduce::tensorrt_llm);
    std::string bad = desc;
    bad.replace(bad.find("\"tensorrt-llm\""), 14, "\"trtllm\"");
    const std::string e = sctest::ErrorOf([&] { ParseServingDescription(bad); });
    EXPECT_NE(e.find("pool.all_reduce"), std::string::npos) << e;
    EXPECT_NE(e.find("tensorrt-llm"), std::string::npos) << e;
    auto broken = [](const std::string& from, const std::string& to) {
        return servetest::CalibrationErrorWith("engine_all_reduce", from, to);
    };
    EXPECT_NE(broken("\"engine\": \"tensorrt-llm\"", "\"engine\": \"mooncake\"").find("engine_all_reduce[0].engine"),
              std::string::npos);
    EXPECT_NE(broken("\"n_ranks\": 2,", "\"n_ranks\": 1,").find("engine_all_reduce[0].n_ranks"), std::string::npos);
    EXPECT_NE(broken("\"n_ranks\": 2,", "\"n_ranks\": 2, \"n_nodes\": 1,").find("engine_all_reduce[0]"),
              std::string::npos);
}

}  // namespace
