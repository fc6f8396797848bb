// A grouped (MoE expert) GEMM's measured ceiling (presets/calibration/measured.json "grouped_gemm"): TensorRT-LLM's
// MoE op from NVIDIA aiconfigurator's tables (data/calibration.json "grouped_gemm"), on A100 (TensorRT-LLM 1.0.0) and
// on H100 and H200 (1.3.0rc20, fp8 and bf16, one curve per expert width), and on B200, GB200, B300 and GB300
// (1.3.0rc20, bf16, fp8 and fp4, Mixtral's and Qwen3-30B-A3B's experts). The curves are the records' own numbers;
// on A100 the rate follows the rows per expert, not the expert's width, on Hopper it falls with the width; the serving
// engine holds its expert GEMMs to the curve of the nearest width where, and only where, one was measured, and the
// training model (other kernels, balanced routing) not at all.
//   ./build/stagecraft_tests --gtest_filter='GroupedGemm.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "inference/iteration_cost.h"
#include "parallel/job.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "training/compute_model.h"
#include "training/kernel_floor.h"
#include "training/rate_sources.h"

namespace {

using namespace sc;
using json = nlohmann::json;

using servetest::Part;

const json& Records() { return servetest::CalibrationRecords("grouped_gemm"); }

// rows per group -> TFLOPS of one series' records at one moe_tp (whole experts hit: 4 tokens and up).
std::map<double, double> RecordsAt(const std::string& series, int moe_tp) {
    std::map<double, double> out;
    for (const json& r : Records())
        if (r.at("series") == series && r.at("shape").at("moe_tp") == moe_tp &&
            r.at("shape").at("num_tokens").get<int>() >= 4)
            out[r.at("derived").at("rows_per_group")] = r.at("derived").at("tflops");
    return out;
}

TrainingOptions Serving() {
    TrainingOptions opt;
    opt.engine_moe_op = true;
    return opt;
}

// The tokens a series' records start from: Mixtral's curves on Hopper and A100 begin where every one of its 8 experts
// is hit (4 tokens, rows per group = tokens / 4); every other curve (Blackwell's, and the many-expert ones on every
// part) at 1 token (rows per group on the serving model's count of experts hit, ExpectedExpertsHit).
int FirstTokens(const std::string& series) {
    for (const char* part :
         {"aiconf-b200", "aiconf-gb200", "aiconf-b300", "aiconf-gb300", "aiconf-rtx-pro-6000-server"})
        if (series.rfind(part, 0) == 0) return 1;
    return series.find("-mixtral8x7b") != std::string::npos ? 4 : 1;
}

// rows per group -> TFLOPS of one series' records at one moe_tp and moe_ep, from the series' first token count.
std::map<double, double> CurveRecords(const std::string& series, int moe_tp, int moe_ep) {
    std::map<double, double> out;
    for (const json& r : Records())
        if (r.at("series") == series && r.at("shape").at("moe_tp") == moe_tp && r.at("shape").at("moe_ep") == moe_ep &&
            r.at("shape").at("num_tokens").get<int>() >= FirstTokens(series))
            out[r.at("derived").at("rows_per_group")] = r.at("derived").at("tflops");
    return out;
}

// The other part of one GPU die (B200 and GB200 are one Blackwell GPU at 1,000 and 1,200 W, B300 and GB300 one
// Blackwell Ultra at 1,100 and 1,400 W); "" for a part without one in these tables.
std::string DieTwin(const std::string& part) {
    static const std::map<std::string, std::string> twin = {
        {"b200", "gb200"}, {"gb200", "b200"}, {"b300", "gb300"}, {"gb300", "b300"}};
    auto it = twin.find(part);
    return it == twin.end() ? "" : it->second;
}

// Every curve is its series' records at the moe_tp that splits an expert to its width and the moe_ep that leaves its
// experts on a rank, point for point; every record is physically possible (under its part's dense peak at its
// precision); a Blackwell record's rows per group is the serving model's count (tokens x top-k over the experts
// uniform routing hits).
TEST(GroupedGemm, TheCurvesAreTheRecords) {
    const CalibrationTable& cal = servetest::Calibration();
    // A100's one; H100's and H200's four widths in fp8 and bf16; B200's, GB200's, B300's and GB300's eleven
    // (Mixtral's at moe_tp 1-8, Qwen3-30B-A3B's at 1 and 2, 256 experts at moe_ep 1-16) in bf16, fp8 and fp4;
    // gpt-oss-120b's MXFP4 experts at moe_ep 1-8: W4A16 and W4A8 on B200 and GB200, W4A16 on H200 and H100 (from 2);
    // gpt-oss-20b's at moe_ep 1-8: W4A16 and W4A8 on B200 and GB200, W4A16 on H200 and H100, W4A8 on the RTX part;
    // and at moe_ep 1-16 Qwen3-235B-A22B's and Llama 4 Maverick's experts in bf16 and fp8 on all six parts, in fp4
    // on the four Blackwell ones, with DeepSeek-V3's in fp4 there and in block-scaled fp8 on all six.
    // The RTX PRO 6000 Server (sm_120) has the Blackwell parts' set but gpt-oss's W4A16 (its table has no such rows):
    // eleven in three precisions, W4A8 at moe_ep 1-8, Qwen3-235B's and Maverick's in three, DeepSeek-V3's in two.
    const size_t model_shapes = 2 * 2 * 2 * 5 + 4 * (2 * 3 + 1) * 5 + 6 * 5;
    const size_t rtx = 3 * 11 + 4 + 2 * 3 * 5 + 2 * 5;
    const size_t gptoss20b = (2 * 2 + 2 + 1) * 4;
    // Less the 17 curves of one die's slower part where its two parts' tables disagree (OneDieReads... below).
    const size_t shared_with_twin = 17;
    ASSERT_EQ(cal.grouped_gemm.size(),
              1u + 2 * 8 + 4 * 3 * 11 + 2 * 2 * 4 + 4 + 3 + model_shapes + rtx + gptoss20b - shared_with_twin);
    for (const GroupedGemmCurve& g : cal.grouped_gemm) {
        SCOPED_TRACE(g.id);
        EXPECT_EQ(g.routing, "power_law_1.01");
        double inter = 0, experts = 0, hidden = 0, top_k = 0;
        for (const json& r : Records())
            if (r.at("series") == g.series)
                inter = r.at("shape").at("inter"), experts = r.at("shape").at("experts"),
                hidden = r.at("shape").at("hidden"), top_k = r.at("shape").at("top_k");
        EXPECT_EQ(g.hidden, hidden);
        EXPECT_EQ(g.top_k, top_k);  // the routing the records state, on every curve
        EXPECT_EQ(g.model_experts, experts);
        const int moe_tp = static_cast<int>(std::lround(inter / g.expert_width));
        const int moe_ep = static_cast<int>(std::lround(experts / g.experts));
        ASSERT_EQ(inter / moe_tp, g.expert_width);
        ASSERT_EQ(experts / moe_ep, g.experts);
        const std::map<double, double> pts = CurveRecords(g.series, moe_tp, moe_ep);
        ASSERT_EQ(g.tflops.x.size(), pts.size());
        size_t i = 0;
        for (const auto& [m, tflops] : pts) {
            EXPECT_EQ(g.tflops.x[i], m);
            EXPECT_EQ(g.tflops.y[i], tflops) << m;
            ++i;
        }
    }
    const std::map<std::string, double> peak = {
        {"a100-bf16", 312.0}, {"h100-fp8", 1979},   {"h100-bf16", 989.5}, {"h200-fp8", 1979},   {"h200-bf16", 989.5},
        {"b200-bf16", 2250},  {"b200-fp8", 4500},   {"b200-fp4", 9000},   {"gb200-bf16", 2500}, {"gb200-fp8", 5000},
        {"gb200-fp4", 10000}, {"b300-bf16", 2250},  {"b300-fp8", 4500},   {"b300-fp4", 12600},  {"gb300-bf16", 2500},
        {"gb300-fp8", 5000},  {"gb300-fp4", 15000}, {"rtx-bf16", 467.8},  {"rtx-fp8", 935.6},   {"rtx-fp4", 1871.2}};
    int blackwell = 0;
    for (const json& r : Records()) {
        const std::string s = r.at("series");
        const std::string part = s.substr(7, s.find('-', 7) - 7);
        const std::string dtype = s.substr(s.rfind('-') + 1);
        const std::string key = part + "-" + (dtype == "fp8" || dtype == "fp4" ? dtype : "bf16");
        ASSERT_TRUE(peak.count(key)) << s;
        EXPECT_LT(r.at("derived").at("tflops").get<double>(), peak.at(key)) << s;
        if (FirstTokens(s) == 1) {
            const json& sh = r.at("shape");
            const double T = sh.at("num_tokens"), E = sh.at("experts"), k = sh.at("top_k");
            EXPECT_NEAR(r.at("derived").at("rows_per_group").get<double>(), T * k / ExpectedExpertsHit(E, k, T), 1e-4);
            ++blackwell;
        }
    }
    EXPECT_EQ(blackwell, (4 * 3 * 11 + 2 * 2 * 4 + 4 + 3 + model_shapes + rtx + gptoss20b) * 27);
    // Who reads which: both A100 presets A100's (fp16 too, the same tensor-core rate), H800 H100's (the same GH100
    // SMs and HBM3), H200 its own, each Blackwell part its own; GH200 (another HBM) none.
    EXPECT_EQ(FindGroupedGemms(cal, "a100-40gb", Precision::fp16).size(), 1u);
    EXPECT_EQ(FindGroupedGemms(cal, "h100-sxm", Precision::fp8).size(), 4u + 2 * 5);
    EXPECT_EQ(FindGroupedGemms(cal, "h800", Precision::bf16), FindGroupedGemms(cal, "h100-sxm", Precision::bf16));
    EXPECT_EQ(FindGroupedGemms(cal, "h200", Precision::fp8).front()->series,
              "aiconf-h200-trtllm1.3-moe-mixtral8x7b-fp8");
    EXPECT_TRUE(FindGroupedGemms(cal, "gh200", Precision::fp8).empty());
    // Block-scaled fp8 (DeepSeek-V3's experts at moe_ep 1-16) is read only by that scaling, on every part that has it.
    for (const std::string part :
         {"h100-sxm", "h800", "h200", "b200", "gb200", "b300", "gb300", "rtx-pro-6000-server"}) {
        const std::vector<const GroupedGemmCurve*> gs = FindGroupedGemms(cal, part, Precision::fp8, "", "block");
        ASSERT_EQ(gs.size(), 5u) << part;
        for (const GroupedGemmCurve* g : gs) EXPECT_EQ(g->hidden, 7168) << part;
        for (const GroupedGemmCurve* g : FindGroupedGemms(cal, part, Precision::fp8)) EXPECT_EQ(g->scaling, "") << part;
    }
    for (const std::string part : {"b200", "gb200", "b300", "gb300"})
        for (Precision p : {Precision::bf16, Precision::fp8, Precision::fp4}) {
            const std::vector<const GroupedGemmCurve*> gs = FindGroupedGemms(cal, part, p);
            ASSERT_EQ(gs.size(), p == Precision::fp4 ? 26u : 21u) << part;  // the MXFP4 curves are not among them
            EXPECT_TRUE(FindGroupedGemms(cal, part, p, "mxfp4").size() ==
                        (p != Precision::fp4 && part.find("b200") != std::string::npos ? 8u : 0u))
                << part;
            for (const GroupedGemmCurve* g : gs)  // its own, or its die twin's where both read the faster one
                EXPECT_TRUE(g->series.substr(7, part.size() + 1) == part + "-" ||
                            (g->accelerators.size() == 2 &&
                             g->series.substr(7, DieTwin(part).size() + 1) == DieTwin(part) + "-"))
                    << part << " " << g->series;
        }
    // The RTX PRO 6000 Server reads its own, the same set; its gpt-oss experts only as W4A8 (no W4A16 rows).
    for (Precision p : {Precision::bf16, Precision::fp8, Precision::fp4}) {
        const std::vector<const GroupedGemmCurve*> gs = FindGroupedGemms(cal, "rtx-pro-6000-server", p);
        ASSERT_EQ(gs.size(), p == Precision::fp4 ? 26u : 21u);
        for (const GroupedGemmCurve* g : gs) EXPECT_EQ(g->series.rfind("aiconf-rtx-pro-6000-server-", 0), 0u);
        EXPECT_EQ(FindGroupedGemms(cal, "rtx-pro-6000-server", p, "mxfp4").size(), p == Precision::fp8 ? 8u : 0u);
    }
}

// One die's two parts (B200 and GB200, B300 and GB300) time one MoE op at one shape as their power does, except where
// one collection ran it far slower on one part; there both parts read the faster part's curve (presets/calibration/
// measured.json's extraction rule). Recomputed here from the records: each curve's median GB-over-B TFLOPS ratio
// against the pair's median of them; more than 20% away (the two tables' gap lies between 18% and 25%), one curve
// for both, the faster; within, each part its own.
TEST(GroupedGemm, OneDieReadsItsFasterCurveWhereItsPartsDisagree) {
    const CalibrationTable& cal = servetest::Calibration();
    int shared = 0;
    for (const auto& [b, gb] : {std::pair<std::string, std::string>{"b200", "gb200"}, {"b300", "gb300"}}) {
        SCOPED_TRACE(b);
        // Every (series, moe_tp, moe_ep) curve of the B part whose GB series has the same curve.
        struct Curve {
            std::string series;
            int tp, ep;
            double inter, ratio;
        };
        std::vector<Curve> curves;
        std::map<std::tuple<std::string, int, int>, bool> seen;
        for (const json& r : Records()) {
            const std::string series = r.at("series");
            if (series.rfind("aiconf-" + b + "-", 0) != 0) continue;
            const int tp = r.at("shape").at("moe_tp"), ep = r.at("shape").at("moe_ep");
            if (!seen.emplace(std::tuple{series, tp, ep}, true).second) continue;
            const std::string twin = "aiconf-" + gb + series.substr(7 + b.size());
            const std::map<double, double> pb = CurveRecords(series, tp, ep), pg = CurveRecords(twin, tp, ep);
            std::vector<double> ratios;
            for (const auto& [x, y] : pb)
                if (auto it = pg.find(x); it != pg.end()) ratios.push_back(it->second / y);
            if (ratios.empty()) continue;
            std::sort(ratios.begin(), ratios.end());
            const size_t n = ratios.size();
            curves.push_back({series, tp, ep, r.at("shape").at("inter").get<double>(),
                              n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2});
        }
        ASSERT_GT(curves.size(), 60u);
        std::vector<double> medians;
        for (const Curve& c : curves) medians.push_back(c.ratio);
        std::sort(medians.begin(), medians.end());
        const size_t n = medians.size();
        const double pair = n % 2 ? medians[n / 2] : (medians[n / 2 - 1] + medians[n / 2]) / 2;
        EXPECT_NEAR(pair, 1.04, 0.02);  // GB200 over B200 1.05, GB300 over B300 1.03: their power
        for (const Curve& c : curves) {
            SCOPED_TRACE(c.series + " tp" + std::to_string(c.tp) + " ep" + std::to_string(c.ep));
            const double off = std::fabs(c.ratio / pair - 1);
            EXPECT_TRUE(off < 0.18 || off > 0.25) << off;  // nothing in the gap the rule's 20% sits in
            const std::string twin = "aiconf-" + gb + c.series.substr(7 + b.size());
            const std::string faster = c.ratio > 1 ? twin : c.series, slower = c.ratio > 1 ? c.series : twin;
            // The calibration's curve of `series` at this moe_tp and moe_ep (nullptr: none).
            auto find = [&](const std::string& series) -> const GroupedGemmCurve* {
                for (const GroupedGemmCurve& g : cal.grouped_gemm)
                    if (g.series == series && std::lround(g.model_experts / g.experts) == c.ep &&
                        std::lround(c.inter / g.expert_width) == c.tp)
                        return &g;
                return nullptr;
            };
            if (off > 0.2) {
                ++shared;
                const GroupedGemmCurve* kept = find(faster);
                ASSERT_NE(kept, nullptr);
                EXPECT_EQ(kept->accelerators, (std::vector<std::string>{b, gb}));
                EXPECT_EQ(find(slower), nullptr);
            } else {
                ASSERT_NE(find(c.series), nullptr);
                ASSERT_NE(find(twin), nullptr);
                EXPECT_EQ(find(c.series)->accelerators, std::vector<std::string>{b});
            }
        }
    }
    EXPECT_EQ(shared, 17);
}

// On A100 the experts split over 2 and 4 ranks (half and a quarter of their width) run at the whole experts' rate at
// the same rows per expert: within 5% from 192 rows (3% from 384), within 16% from 64 (aiconfigurator's moe_tp 2 and
// 4 rows); one curve serves every width there.
TEST(GroupedGemm, OnA100TheRateFollowsTheRowsPerExpertNotTheWidth) {
    const std::string a100 = "aiconf-a100-trtllm1.0-moe-mixtral8x7b";
    const std::map<double, double> tp1 = RecordsAt(a100, 1);
    int checked = 0;
    for (int tp : {2, 4})
        for (const auto& [m, tflops] : RecordsAt(a100, tp)) {
            if (m < 64 || !tp1.count(m)) continue;
            EXPECT_NEAR(tflops / tp1.at(m), 1.0, m >= 192 ? 0.05 : 0.16) << "moe_tp " << tp << " at " << m;
            ++checked;
        }
    EXPECT_GE(checked, 30);
}

// On H100 and H200 in fp8 the op slows as its experts narrow: at moe_tp 8 (1,792 a rank) it runs at 0.55-0.85 of the
// whole experts' rate from 128 rows per expert, which one curve by rows per expert would miss.
TEST(GroupedGemm, OnHopperTheRateFallsWithTheWidth) {
    for (const std::string series :
         {"aiconf-h100-trtllm1.3-moe-mixtral8x7b-fp8", "aiconf-h200-trtllm1.3-moe-mixtral8x7b-fp8"}) {
        const std::map<double, double> tp1 = RecordsAt(series, 1), tp8 = RecordsAt(series, 8);
        int checked = 0;
        for (const auto& [m, tflops] : tp8) {
            if (m < 128) continue;
            EXPECT_GT(tflops / tp1.at(m), 0.55) << series << " at " << m;
            EXPECT_LT(tflops / tp1.at(m), 0.85) << series << " at " << m;
            ++checked;
        }
        EXPECT_GE(checked, 10) << series;
    }
}

// A grouped GEMM of a stated expert width runs at the curve of the nearest width where it is below the dense rate:
// on A100, 8 experts x 1,024 rows of Mixtral's gate/up projection (n 28,672, k 4,096) at the curve's 144.73 TFLOPS;
// on H100 in fp8 a 1,792-wide expert (TP8) at the moe_tp 8 curve, a 3,000-wide one at the moe_tp 4 curve (nearer by
// ratio) and a 7,168-wide one (TP2) at the moe_tp 2 curve, each the slower of it and the dense rate, which at some
// rows per expert the curve is well below. Without a stated width, in the training model, or with a hand-set
// efficiency, the dense rate holds.
TEST(GroupedGemm, ExpertGemmsRunAtTheMeasuredMoeOpOfTheNearestWidth) {
    const CalibrationTable& cal = servetest::Calibration();
    const double groups = 8;
    // `w`: bytes of an input or weight element (1 in fp8); outputs in 16 bits.
    auto time = [&](const ComputeModel& cm, double m, double n, double k, double width, double w = 2) {
        const double flops = 2 * m * n * k * groups, bytes = ((m * k + k * n) * w + m * n * 2) * groups;
        GemmDims d{m, n, k};
        d.group_width = width;
        return std::pair{flops, cm.Seconds(OpKind::matmul, flops, bytes, true, groups, false, false, d)};
    };
    const ComputeModel a100(Part("a100-80gb"), Precision::fp16, &cal, Serving());
    const auto [fa, ta] = time(a100, 1024, 28672, 4096, 14336);
    EXPECT_NEAR(fa / ta / 1e12, 144.73, 1e-6);
    const ComputeModel h100(Part("h100-sxm"), Precision::fp8, &cal, Serving());
    const auto curve = [&](double width) {
        for (const GroupedGemmCurve* g : FindGroupedGemms(cal, "h100-sxm", Precision::fp8))
            if (g->expert_width == width) return g;
        return static_cast<const GroupedGemmCurve*>(nullptr);
    };
    ASSERT_NE(curve(1792), nullptr);
    ASSERT_NE(curve(3584), nullptr);
    ASSERT_NE(curve(7168), nullptr);
    bool binds = false;
    for (double m : {32.0, 64.0, 128.0, 256.0, 1024.0, 4096.0}) {
        SCOPED_TRACE(m);
        for (const auto& [width, measured] :
             {std::pair{1792.0, 1792.0}, std::pair{3000.0, 3584.0}, std::pair{7168.0, 7168.0}}) {
            const auto [f, t] = time(h100, m, 2 * width, 4096, width, 1);
            const double dense = time(h100, m, 2 * width, 4096, 0, 1).second;
            EXPECT_NEAR(t, std::max(dense, f / (Interpolate(curve(measured)->tflops, m) * 1e12)), 1e-12) << width;
            binds |= t > 1.2 * dense;
        }
    }
    EXPECT_TRUE(binds);
    // The training model and a hand-set efficiency read no curve.
    const ComputeModel training(Part("h100-sxm"), Precision::fp8, &cal, TrainingOptions{});
    EXPECT_TRUE(training.grouped_gemms().empty());
    EXPECT_EQ(time(training, 64, 2 * 1792, 4096, 1792).second, time(h100, 64, 2 * 1792, 4096, 0).second);
    TrainingOptions hand = Serving();
    hand.matmul_efficiency = 0.6;
    const ComputeModel set(Part("a100-80gb"), Precision::fp16, &cal, hand);
    EXPECT_TRUE(set.grouped_gemms().empty());
    const auto [fs, ts] = time(set, 1024, 28672, 4096, 14336);
    EXPECT_NEAR(ts, fs / (0.6 * PeakFlops(Part("a100-80gb"), Precision::fp16)), 1e-12);
}

// The serving model states its experts' width: Mixtral 8x7B in fp8 on two H100s (each expert 7,168 wide on a rank)
// decodes 512 sequences slower with the curves than without them, all of it in the expert GEMMs; a dense model is
// untouched, and so are weights stored narrower than the GEMMs run (fp8 weights under bf16 GEMMs: the measured op
// read its weights at its own precision).
TEST(GroupedGemm, TheServingEngineHoldsItsExpertsToTheOp) {
    CalibrationTable without = servetest::Calibration();
    without.grouped_gemm.clear();
    ServingPrecision fp8;
    fp8.weights = fp8.compute = Precision::fp8;
    const System& sys = servetest::System("dgx-h100-superpod");
    BatchShape b;
    b.decodes = b.sequences = b.logits = 512;
    b.decode_keys = 512 * 1024.0;
    for (const std::string model : {"mixtral-8x7b", "llama3-70b"}) {
        SCOPED_TRACE(model);
        const ModelConfig mc = servetest::Model(model);
        const IterationCost with_op(mc, fp8, 2, sys, &servetest::Calibration(), 1024, 1);
        const IterationCost dense(mc, fp8, 2, sys, &without, 1024, 1);
        const IterationBreakdown a = with_op.Breakdown(b), d = dense.Breakdown(b);
        EXPECT_EQ(a.attention, d.attention);
        EXPECT_EQ(a.tp_comm, d.tp_comm);
        if (model == "mixtral-8x7b") EXPECT_GT(a.linear, d.linear * 1.15);
        else EXPECT_EQ(a.linear, d.linear);
    }
    ServingPrecision weight_only;
    weight_only.weights = Precision::fp8;
    const ModelConfig mixtral = servetest::Model("mixtral-8x7b");
    const IterationCost with_op(mixtral, weight_only, 2, sys, &servetest::Calibration(), 1024, 1);
    const IterationCost dense(mixtral, weight_only, 2, sys, &without, 1024, 1);
    EXPECT_EQ(with_op.Breakdown(b).linear, dense.Breakdown(b).linear);
}

// The rates line names the curves where they apply (the serving engine's) and not in training.
// On Blackwell the fp4 op runs well below the model's fp4 GEMMs of the same shapes: Qwen3-30B-A3B on one B200 in
// NVFP4, decoding 256 sequences (16 rows per expert), spends 2.4x as long in its GEMMs with the curves as without,
// all of it in the expert GEMMs (the op there is 2.8x the model's time for the same GEMMs: docs/serving.md,
// "TensorRT-LLM's MoE op on Blackwell"); in bf16 the same step's GEMMs take 1.1x. Attention and the all-reduce are untouched, and so is a dense model.
TEST(GroupedGemm, BlackwellExpertsAreHeldToTheirPartsOp) {
    CalibrationTable without = servetest::Calibration();
    without.grouped_gemm.clear();
    const System& sys = servetest::System("dgx-b200-superpod");
    BatchShape b;
    b.decodes = b.sequences = b.logits = 256;
    b.decode_keys = 256 * 1024.0;
    double slowed[2] = {0, 0};
    int i = 0;
    for (Precision p : {Precision::fp4, Precision::bf16}) {
        ServingPrecision prec;
        prec.weights = prec.compute = p;
        for (const std::string model : {"qwen3-30b-a3b", "llama3-8b"}) {
            SCOPED_TRACE(model);
            const ModelConfig mc = servetest::Model(model);
            const IterationBreakdown a =
                IterationCost(mc, prec, 1, sys, &servetest::Calibration(), 1024, 1).Breakdown(b);
            const IterationBreakdown d = IterationCost(mc, prec, 1, sys, &without, 1024, 1).Breakdown(b);
            EXPECT_EQ(a.attention, d.attention);
            EXPECT_EQ(a.tp_comm, d.tp_comm);
            if (model == "llama3-8b") EXPECT_EQ(a.linear, d.linear);
            else slowed[i] = a.linear / d.linear;
        }
        ++i;
    }
    EXPECT_GT(slowed[0], 1.5);  // 2.0 at B200's own Qwen3-30B-A3B curve, 1.68 at GB200's it now shares
    EXPECT_GT(slowed[1], 1.0);
    EXPECT_LT(slowed[1], 1.3);
}

// The Blackwell op against what the model would charge without it: for each Blackwell curve, the op's time over the
// model's time for the same expert GEMMs (groups of the experts hit, rows per expert, the part's measured kernel
// floor per GEMM as the serving engine floors them), at the table's token counts nearest 2, 16, 64, 256 and 1,024
// rows per expert. Above 1 the curve binds ("no faster than"); below 1 the grouped kernel beats the model's isolated
// GEMMs and the model keeps its own rate. Written to build/moe_op_blackwell.md (docs/serving.md quotes it).
TEST(GroupedGemm, TheBlackwellOpAgainstTheModelsGemms) {
    const CalibrationTable& cal = servetest::Calibration();
    const double targets[] = {2, 16, 64, 256, 1024};
    std::string md =
        "<!-- generated by tests/native/test_grouped_gemm.cpp (GroupedGemm.TheBlackwellOpAgainstTheModelsGemms); do "
        "not edit by hand -->\n\n| part | dtype | experts | width x experts a rank | op / model at ~2 | ~16 | ~64 | ~256 | ~1024 "
        "rows per expert |\n|---|---|---|---|---|---|---|---|---|\n";
    int fp4_curves = 0, fp4_slower_at_16 = 0;
    for (const GroupedGemmCurve& g : cal.grouped_gemm) {
        const std::string part = g.accelerators.front();
        if (part != "b200" && part != "gb200" && part != "b300" && part != "gb300") continue;
        if (!g.weights.empty()) continue;  // the MXFP4 experts' op: GptOss below
        const ComputeModel cm(Part(part), g.dtype, &cal, TrainingOptions{});
        const KernelFloor floor = MeasuredKernelFloor(&cal, Part(part), cm.memory_bytes_per_s());
        const double in = StoredBytes(g.dtype);
        std::map<double, double> ratio;      // rows per expert -> op time / model time
        const json* series_shape = nullptr;  // one record's shape of the series, and whether it splits experts
        bool split = false;
        for (const json& r : Records()) {
            if (r.at("series") != g.series) continue;
            const json& sh = r.at("shape");
            series_shape = &sh;
            split |= sh.at("moe_ep") != 1;
            const double inter = sh.at("inter"), moe_tp = sh.at("moe_tp"), moe_ep = sh.at("moe_ep");
            if (inter / moe_tp != g.expert_width || sh.at("experts").get<double>() / moe_ep != g.experts) continue;
            const double T = sh.at("num_tokens"), E = sh.at("experts"), k = sh.at("top_k"), h = sh.at("hidden");
            // The rank's share: its tokens' copies over its hit experts.
            const double rows = T * k / moe_ep, hit = ExpectedExpertsHit(E, k, T) / moe_ep, w = g.expert_width;
            auto gemm = [&](double n, double kk) {
                const double flops = 2 * rows * n * kk, bytes = rows * kk * in + hit * kk * n * in + rows * n * 2;
                GemmDims d{rows / hit, n, kk};
                const double t = cm.Seconds(OpKind::matmul, flops, bytes, true, hit, false, false, d);
                return std::max(t, floor.alpha_s + bytes / cm.memory_bytes_per_s());
            };
            ratio[rows / hit] = r.at("measured").at("latency_ms").get<double>() * 1e-3 / (gemm(2 * w, h) + gemm(h, w));
        }
        ASSERT_EQ(ratio.size(), 27u) << g.id;
        char line[200];
        // The op's experts: "E over moe_ep n" for a curve of an expert-parallel series (one with moe_ep > 1).
        const json& sh = *series_shape;
        const int E = sh.at("experts"), k = sh.at("top_k"), h = sh.at("hidden");
        const int ep = static_cast<int>(std::lround(E / g.experts));
        char op[80];
        if (split) std::snprintf(op, sizeof op, "%d over moe_ep %d, top-%d, hidden %d", E, ep, k, h);
        else std::snprintf(op, sizeof op, "%d, top-%d, hidden %d", E, k, h);
        std::string parts = part;  // a curve one die's two parts share names both
        for (size_t a = 1; a < g.accelerators.size(); ++a) parts += ", " + g.accelerators[a];
        std::snprintf(line, sizeof line, "| %s | %s | %s | %.0f x %.0f |", parts.c_str(), NameOf(g.dtype), op,
                      g.expert_width, g.experts);
        md += line;
        for (double t : targets) {
            auto best = ratio.begin();
            for (auto it = ratio.begin(); it != ratio.end(); ++it)
                if (std::fabs(std::log(it->first / t)) < std::fabs(std::log(best->first / t))) best = it;
            std::snprintf(line, sizeof line, " %.2f |", best->second);
            md += line;
            // GB200's fp4 GEMMs already run at Azure's cuBLASLt fp4 curve; the others' at the bf16 curve's fraction.
            if (g.dtype == Precision::fp4 && t == 16 && part != "gb200")
                ++fp4_curves, fp4_slower_at_16 += best->second > 1;
        }
        md += "\n";
    }
    std::ofstream(sctest::BuildDir() + "/moe_op_blackwell.md") << md;
    std::printf("%s", md.c_str());
    // 78 before one die's parts shared their faster curve where their tables disagree (B300's Maverick at moe_ep 16
    // now GB300's, counted once).
    EXPECT_EQ(fp4_curves, 77);
    // What the curves are for: fp4 decode batches run at the op, not the model's GEMMs. All but nine: Llama 4
    // Maverick's 8,192-wide top-1 experts at 128 to 32 a rank, where the op runs at 0.85-0.99 of the model, and
    // DeepSeek-V3's 256 experts on one rank (0.99, the GB200 curve B200 shares).
    EXPECT_EQ(fp4_slower_at_16, 68);
}

// A curve must say how many experts its op held on a rank, at least one, and may state its experts' storage only as
// "mxfp4": the file names the field when it does not.
TEST(GroupedGemm, ACurveStatesItsExperts) {
    json j = json::parse(sctest::ReadFile(servetest::kRoot + "/presets/calibration/measured.json"));
    auto error = [&] { return sctest::ErrorOf([&] { ParseCalibration(j.dump()); }); };
    j["grouped_gemm"][3]["experts"] = 0;
    std::string e = error();
    EXPECT_NE(e.find("grouped_gemm[3].experts"), std::string::npos) << e;
    EXPECT_NE(e.find("must be at least 1"), std::string::npos) << e;
    j["grouped_gemm"][3]["experts"] = 8;
    j["grouped_gemm"][3]["weights"] = "int4";
    e = error();
    EXPECT_NE(e.find("grouped_gemm[3].weights"), std::string::npos) << e;
    EXPECT_NE(e.find("\"mxfp4\""), std::string::npos) << e;
    j["grouped_gemm"][3].erase("weights");
    j["grouped_gemm"][3]["hidden"] = 0;
    e = error();
    EXPECT_NE(e.find("grouped_gemm[3].hidden"), std::string::npos) << e;
    EXPECT_NE(e.find("must be at least 1"), std::string::npos) << e;
    j["grouped_gemm"][3].erase("hidden");
    e = error();
    EXPECT_NE(e.find("grouped_gemm[3].hidden"), std::string::npos) << e;
    j["grouped_gemm"][3]["hidden"] = 4096;
    j["grouped_gemm"][3].erase("experts");
    e = error();
    EXPECT_NE(e.find("grouped_gemm[3].experts"), std::string::npos) << e;
}

// The curve a model's experts read is the one nearest in width, experts a rank and hidden size together: DeepSeek-V3
// in fp4 on B200 with 64 experts a rank reads its own shape's op (hidden 7,168), not the 256-expert op measured at
// hidden 4,096 with the same width and experts; Qwen3-235B-A22B at 16 a rank on H100 its own, not Mixtral's; and
// without a hidden size the pick is the width and experts' alone, as before curves stated it.
TEST(GroupedGemm, TheNearestCurveIsTheModelsOwnShape) {
    const CalibrationTable& cal = servetest::Calibration();
    const std::vector<const GroupedGemmCurve*> b200 = FindGroupedGemms(cal, "b200", Precision::fp4);
    // (B200's own DeepSeek-V3 op ran 1.84x GB200's; both parts read GB200's: OneDieReadsItsFasterCurve... above.)
    EXPECT_EQ(NearestGroupedGemm(b200, 2048, 64, 7168)->id, "aiconf-gb200-trtllm1.3-moe-deepseek-v3-fp4-ep4");
    EXPECT_EQ(NearestGroupedGemm(b200, 2048, 64, 4096)->id, "aiconf-b200-trtllm1.3-moe-e256-fp4-ep4");
    EXPECT_EQ(NearestGroupedGemm(b200, 8192, 32, 5120)->id, "aiconf-b200-trtllm1.3-moe-llama4-maverick-fp4-ep4");
    const std::vector<const GroupedGemmCurve*> h100 = FindGroupedGemms(cal, "h100-sxm", Precision::fp8);
    EXPECT_EQ(NearestGroupedGemm(h100, 1536, 16, 4096)->id, "aiconf-h100-trtllm1.3-moe-qwen3-235b-a22b-fp8-ep8");
    EXPECT_EQ(NearestGroupedGemm(h100, 7168, 8, 4096)->id, "aiconf-h100-trtllm1.3-moe-mixtral8x7b-fp8-tp2");
    // No hidden size: the first of the curves equally near in width and experts (the 256-expert op, listed first).
    EXPECT_EQ(NearestGroupedGemm(b200, 2048, 64)->id, "aiconf-b200-trtllm1.3-moe-e256-fp4-ep4");
    // The serving model states its hidden size: DeepSeek-V3's expert GEMMs on B200 in fp4 read their own op.
    ServingPrecision fp4;
    fp4.weights = fp4.compute = Precision::fp4;
    const ModelConfig ds = servetest::Model("deepseek-v3");
    BatchShape b;
    b.decodes = b.sequences = b.logits = 256;
    b.decode_keys = 256 * 1024.0;
    CalibrationTable own = servetest::Calibration(), other = servetest::Calibration();
    std::erase_if(own.grouped_gemm,
                  [](const GroupedGemmCurve& g) { return g.series.find("-e256-") != std::string::npos; });
    std::erase_if(other.grouped_gemm,
                  [](const GroupedGemmCurve& g) { return g.series.find("-deepseek-v3-") != std::string::npos; });
    const System& sys = servetest::System("dgx-b200-superpod");
    PoolConfig ep4;
    ep4.tp = ep4.ep = 4;
    const double all = IterationCost(ds, fp4, ep4, sys, &servetest::Calibration(), 1024, 1).Breakdown(b).linear;
    EXPECT_EQ(all, IterationCost(ds, fp4, ep4, sys, &own, 1024, 1).Breakdown(b).linear);
    EXPECT_NE(all, IterationCost(ds, fp4, ep4, sys, &other, 1024, 1).Breakdown(b).linear);
}

// A curve's routing is "top_k" and "model_experts" together or neither, whole numbers, top_k at most the experts
// and the experts at least the rank's: the file names the field and the value when it is not.
TEST(GroupedGemm, ACurveStatesItsRoutingWhole) {
    json j = json::parse(sctest::ReadFile(servetest::kRoot + "/presets/calibration/measured.json"));
    auto error = [&] { return sctest::ErrorOf([&] { ParseCalibration(j.dump()); }); };
    json& g = j["grouped_gemm"][3];  // Mixtral's at moe_tp 2: 8 experts, top-2
    ASSERT_EQ(g["model_experts"], 8);
    g.erase("top_k");
    std::string e = error();
    EXPECT_NE(e.find("grouped_gemm[3].top_k"), std::string::npos) << e;
    EXPECT_NE(e.find("together"), std::string::npos) << e;
    g["top_k"] = 9;
    e = error();
    EXPECT_NE(e.find("grouped_gemm[3].top_k"), std::string::npos) << e;
    EXPECT_NE(e.find("from 1 to model_experts (8), got 9"), std::string::npos) << e;
    g["top_k"] = 1.5;
    EXPECT_NE(error().find("got 1.5"), std::string::npos);
    g["top_k"] = 2;
    g["model_experts"] = 4;  // fewer than the 8 the rank held
    e = error();
    EXPECT_NE(e.find("grouped_gemm[3].model_experts"), std::string::npos) << e;
    EXPECT_NE(e.find("at least the rank's 8, got 4"), std::string::npos) << e;
    g.erase("model_experts");
    g.erase("top_k");
    const CalibrationTable cal = ParseCalibration(j.dump());  // neither: accepted, the pick leaves the term out
    EXPECT_EQ(cal.grouped_gemm[3].LocalHits(), 0);
    EXPECT_EQ(servetest::Calibration().grouped_gemm[3].LocalHits(), 2);  // top-2 of 8, all 8 on the rank
}

// gpt-oss-20b (32 experts, top-4) whole on one GPU and gpt-oss-120b (128, top-4) over four hold the same 32 experts
// of the same width and hidden size a rank, but a token sends the first rank 4 rows and the second 1: at one rows per
// group the 120b rank routes four times the tokens. Measured (aiconfigurator, TensorRT-LLM 1.3.0rc20, H200, W4A16),
// 20b's op at 256 tokens takes 0.36 ms and 120b's rank at 1,024 (the same 32 rows an expert) 0.65. Each model reads
// its own op, and a model without one the op nearest in the rows a token sends.
TEST(GroupedGemm, TheNearestCurveRoutesAsTheModelDoes) {
    const CalibrationTable& cal = servetest::Calibration();
    const std::vector<const GroupedGemmCurve*> h200 = FindGroupedGemms(cal, "h200", Precision::bf16, "mxfp4");
    EXPECT_EQ(NearestGroupedGemm(h200, 2880, 32, 2880, 4)->id, "aiconf-h200-trtllm1.3-moe-gptoss20b-mxfp4-bf16-ep1");
    EXPECT_EQ(NearestGroupedGemm(h200, 2880, 32, 2880, 1)->id, "aiconf-h200-trtllm1.3-moe-gptoss-mxfp4-bf16-ep4");
    EXPECT_EQ(NearestGroupedGemm(h200, 2880, 16, 2880, 2)->id, "aiconf-h200-trtllm1.3-moe-gptoss20b-mxfp4-bf16-ep2");
    EXPECT_EQ(NearestGroupedGemm(h200, 2880, 16, 2880, 0.5)->id, "aiconf-h200-trtllm1.3-moe-gptoss-mxfp4-bf16-ep8");
    const GroupedGemmCurve* small = NearestGroupedGemm(h200, 2880, 32, 2880, 4);
    const GroupedGemmCurve* large = NearestGroupedGemm(h200, 2880, 32, 2880, 1);
    EXPECT_GT(Interpolate(small->tflops, 32) / Interpolate(large->tflops, 32), 1.5);
    // The serving model states the rows a token sends (top-k / ep): gpt-oss-20b on one H200 reads its own op.
    ServingPrecision w4a16;
    w4a16.int4 = kMxfp4;
    w4a16.compute = w4a16.kv_cache = Precision::bf16;
    const ModelConfig m = servetest::Model("gpt-oss-20b");
    BatchShape b;
    b.decodes = b.sequences = b.logits = 256;
    b.decode_keys = 256 * 1024.0;
    CalibrationTable own = servetest::Calibration();
    std::erase_if(own.grouped_gemm,
                  [](const GroupedGemmCurve& g) { return g.series.find("-gptoss-mxfp4-") != std::string::npos; });
    const System& sys = servetest::System("dgx-h200-superpod");
    const double all = IterationCost(m, w4a16, 1, sys, &cal, 1024, 1).Breakdown(b).linear;
    EXPECT_EQ(all, IterationCost(m, w4a16, 1, sys, &own, 1024, 1).Breakdown(b).linear);
}

TEST(GroupedGemm, TheRatesLineNamesThem) {
    const Job job = MakeJob(servetest::Model("mixtral-8x7b"), ParseParallelSpec("tp=8,ep=8,sp=1"));
    const std::string serving =
        DescribeRates(job, servetest::System("dgx-a100-superpod"), &servetest::Calibration(), Serving()).gemm;
    EXPECT_NE(serving.find("grouped (MoE expert) GEMMs at most aiconf-a100-trtllm1.0-moe-mixtral8x7b"),
              std::string::npos)
        << serving;
    const std::string training =
        DescribeRates(job, servetest::System("dgx-a100-superpod"), &servetest::Calibration(), TrainingOptions{}).gemm;
    EXPECT_EQ(training.find("grouped"), std::string::npos) << training;
}

}  // namespace
