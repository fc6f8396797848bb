// The stagecraft command line, run as a user would.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include "test_util.h"

namespace {

using sctest::CliResult;
using sctest::RunCli;

TEST(Cli, EstimatePrintsParametersAndFlops) {
    CliResult r = RunCli("estimate --model presets/models/llama3-8b.json");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("parameters                    8.03 B (8030261248)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("attention (causal)"), std::string::npos);
}

TEST(Cli, EstimateJson) {
    CliResult r = RunCli("estimate --model presets/models/gpt3-175b.json --json");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("\"params\": 174604259328"), std::string::npos) << r.out;
}

TEST(Cli, OverridesAndPrecisionChangeTheResult) {
    CliResult r = RunCli("estimate --model presets/models/gpt3-175b.json --set layers=48 --precision fp8");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("fp8 weights"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("87.6"), std::string::npos) << r.out;
}

TEST(Cli, BadInputIsOneClearError) {
    CliResult r = RunCli("estimate --model presets/models/gpt3-175b.json --set heads=7");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out,
              "stagecraft estimate: error: presets/models/gpt3-175b.json: heads: 7 attention heads do not divide "
              "hidden size 12288 (give head_dim explicitly, or pick heads dividing 12288)\n");
    r = RunCli("estimate --model no/such.json");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("no/such.json: cannot open file"), std::string::npos);
    r = RunCli("estimate --modle x");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--modle: unknown flag"), std::string::npos);
}

}  // namespace
