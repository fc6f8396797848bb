// Vidur's profile of every linear layer of Llama 2 7B and 70B on one H100 and one A100 (vidur_profile.h) against
// the serving model's per-op GEMM times, by shape where the part has a grid (H100: XLA's sm_90 table) and by FLOP
// count (the grid removed): how well the single-GPU curves time a framework's GEMMs. Those readings leave out the
// framework profile (presets/calibration/measured.json "framework_gemm"), which is derived from these rows
// (test_framework_gemm.cpp); the model with it is shown apart and is in-sample. (8 TP8 70B rows on H100 are
// serving validation rows too, records 126-133 of data/inference_measured.json.) Writes build/gemm_profile.md;
// docs/validation.md carries it. Nothing here gates the errors: the test fails only when a row cannot be read or
// predicted, or the docs are stale.
//   ./build/stagecraft_tests --gtest_filter='GemmProfile.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "inference/iteration_cost.h"
#include "serve_test_util.h"
#include "vidur_profile.h"

namespace {

using namespace sc;

using vidur::Fp16;
using vidur::Llama2;
using vidur::ProfileRow;
using vidur::ReadProfile;

// The single-GPU curves alone: the framework profile and the A100's weight-read floor are derived from these very
// rows (test_framework_gemm.cpp), so the table's first readings leave them out.
CalibrationTable WithoutFramework() {
    CalibrationTable t = servetest::Calibration();
    t.framework_gemm.clear();
    t.weight_read_floor.clear();
    return t;
}

CalibrationTable WithoutGrids() {
    CalibrationTable t = WithoutFramework();
    for (GemmCurve& g : t.gemm) g.grid = GemmGrid{};
    return t;
}

struct Band {
    const char* name;
    double lo, hi;
};
constexpr Band kBands[] = {
    {"1-128 tokens (weight reads)", 1, 128}, {"129-1,024 tokens", 129, 1024}, {"1,025-4,096 tokens", 1025, 4096}};

struct Errors {
    std::vector<double> abs;
    double signed_sum = 0;
    int within = 0;
    void Add(double predicted, double measured) {
        const double e = std::fabs(predicted / measured - 1);
        abs.push_back(e);
        signed_sum += predicted / measured - 1;
        within += e <= 0.10;
    }
    std::string Row(const std::string& what) {
        std::sort(abs.begin(), abs.end());
        double mean = 0;
        for (double e : abs) mean += e;
        mean /= std::max<size_t>(1, abs.size());
        char buf[240];
        std::snprintf(buf, sizeof buf, "| %s | %zu | %d | %.1f%% | %.1f%% | %+.1f%% |\n", what.c_str(), abs.size(),
                      within, 100 * mean, abs.empty() ? 0.0 : 100 * abs[abs.size() / 2],
                      100 * signed_sum / std::max<size_t>(1, abs.size()));
        return buf;
    }
};

// One GPU's profile: its rows by token band, timed by shape where the part's curve has a grid and by FLOP count.
void AddProfile(const std::string& gpu, const std::string& file, const std::string& system, std::string* md) {
    const std::vector<ProfileRow> rows = ReadProfile(file);
    EXPECT_EQ(rows.size(), 2088u) << file;
    static const CalibrationTable flat = WithoutGrids(), bare = WithoutFramework();
    const System& sys = servetest::System(system);
    const GemmCurve* curve = FindGemmCurve(servetest::Calibration(), sys.accelerator.id, Precision::bf16);
    if (!curve) curve = FindGemmCurve(servetest::Calibration(), sys.accelerator.id, Precision::fp16);
    ASSERT_NE(curve, nullptr) << system;
    const bool has_grid = !curve->grid.empty();
    const bool has_framework = FindFrameworkGemm(servetest::Calibration(), sys.accelerator.id, false) != nullptr ||
                               FindWeightReadFloor(servetest::Calibration(), sys.accelerator.id) != nullptr;
    std::map<std::string, Errors> grid, flops, framework;
    for (const ProfileRow& r : rows) {
        IterationCost by_shape(Llama2(r.model), Fp16(), r.tp, sys, &bare, 1024, 1);
        IterationCost by_flops(Llama2(r.model), Fp16(), r.tp, sys, &flat, 1024, 1);
        IterationCost with_framework(Llama2(r.model), Fp16(), r.tp, sys, &servetest::Calibration(), 1024, 1);
        const LayerLinearTimes a = by_shape.LayerLinear(r.tokens), b = by_flops.LayerLinear(r.tokens);
        const LayerLinearTimes c = with_framework.LayerLinear(r.tokens);
        const double shape_ms[4] = {a.qkv * 1e3, a.out * 1e3, a.mlp_up * 1e3, a.mlp_down * 1e3};
        const double flops_ms[4] = {b.qkv * 1e3, b.out * 1e3, b.mlp_up * 1e3, b.mlp_down * 1e3};
        const double framework_ms[4] = {c.qkv * 1e3, c.out * 1e3, c.mlp_up * 1e3, c.mlp_down * 1e3};
        for (const Band& band : kBands) {
            if (r.tokens < band.lo || r.tokens > band.hi) continue;
            for (int k = 0; k < 4; ++k) {
                EXPECT_TRUE(shape_ms[k] > 0 && std::isfinite(shape_ms[k])) << r.model << " " << r.tokens;
                for (const std::string& key : {std::string(band.name), std::string("all")}) {
                    grid[key].Add(shape_ms[k], r.ms[k]);
                    flops[key].Add(flops_ms[k], r.ms[k]);
                    framework[key].Add(framework_ms[k], r.ms[k]);
                }
            }
        }
    }
    for (const char* band : {kBands[0].name, kBands[1].name, kBands[2].name, "all"}) {
        if (has_grid) *md += grid[band].Row(gpu + ", " + band + ", by shape (the grid)");
        *md += flops[band].Row(gpu + ", " + band + ", by FLOP count");
    }
    if (has_framework)
        for (const char* band : {kBands[0].name, kBands[1].name, kBands[2].name, "all"})
            *md += framework[band].Row(gpu + ", " + band + ", with the framework profile (derived from these rows)");
}

std::string Markdown() {
    std::string md =
        "<!-- generated by tests/native/test_gemm_profile.cpp (GemmProfile.WritesTheTable); do not edit by hand -->\n"
        "| Vidur's GEMMs | GEMMs | within 10% | mean abs error | median abs error | mean error |\n"
        "|---|---|---|---|---|---|\n";
    AddProfile("H100", "vidur_h100_linear_ms.csv", "dgx-h100-superpod", &md);
    AddProfile("A100", "vidur_a100_linear_ms.csv", "dgx-a100-superpod", &md);
    return md + "<!-- end of the generated GEMM profile table -->\n";
}

TEST(GemmProfile, WritesTheTableAndDocsCarryIt) {
    const std::string md = Markdown();
    std::ofstream(sctest::BuildDir() + "/gemm_profile.md") << md;
    EXPECT_NE(sctest::ReadFile(servetest::kRoot + "/docs/validation.md").find(md), std::string::npos)
        << "docs/validation.md is stale: replace its GEMM profile table (between the generated-by comment of "
           "tests/native/test_gemm_profile.cpp and its end comment) with build/gemm_profile.md";
}

}  // namespace
