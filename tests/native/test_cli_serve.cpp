// `stagecraft serve`, run as a user would: a description, strict --set overrides, a trace file, a rate sweep, a
// field sweep, JSON, and the exit codes of the other commands (0 done, 1 bad input, 2 usage).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_util.h"

namespace {

using sctest::CliResult;
using sctest::RunCli;

const std::string kPreset = "serve --preset presets/inference/llama3-8b-h100-poisson.json --set workload.requests=200";

TEST(CliServe, PrintsLatencyThroughputAndSlo) {
    CliResult r = RunCli(kPreset + " --set slo.ttft_ms=200");
    ASSERT_EQ(r.status, 0) << r.out;
    for (const char* s :
         {"Serving: Llama-3 8B", "pool           2 replicas x TP1 (2 GPUs)", "completed      200 requests", "TTFT",
          "TPOT", "E2E", "goodput", "TTFT <= 200.000 ms", "KV occupancy"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
    // A preset id works as well as its path.
    EXPECT_EQ(RunCli("serve --preset llama3-8b-h100-poisson --set workload.requests=200 --set slo.ttft_ms=200").out,
              r.out);
}

TEST(CliServe, JsonHasTheNumbersAndTheSeries) {
    CliResult r = RunCli(kPreset + " --json", false);
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["result"]["completed"], 200);
    EXPECT_GT(j["result"]["ttft_s"]["p99"].get<double>(), 0);
    EXPECT_GT(j["result"]["series"].size(), 0u);
    EXPECT_LE(j["result"]["series"].size(), 256u);
    EXPECT_EQ(j["deployment"]["pool"]["replicas"], 2);
}

TEST(CliServe, OverridesAreCheckedLikeTheFile) {
    CliResult r = RunCli(kPreset + " --set pool.tp=3");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("pool.tp: tp=3 does not divide 32 attention heads"), std::string::npos) << r.out;
    r = RunCli(kPreset + " --set engine.max_seq=4");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("engine.max_seq"), std::string::npos) << r.out;
    // Swapping needs the host link: H100's is measured (nvbandwidth), A100's is not in the calibration.
    r = RunCli(kPreset + " --set engine.preemption=swap");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("swap preemption over the host link at 51 GB/s in, 52 GB/s out (measured host link)"),
              std::string::npos)
        << r.out;
    r = RunCli(kPreset + " --set engine.preemption=swap --system dgx-a100-superpod");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("engine.swap_gbps: swap preemption copies over the host link"), std::string::npos) << r.out;
    r = RunCli(kPreset + " --set engine.preemption=swap --system dgx-a100-superpod --set engine.swap_gbps=25");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("swap preemption over the host link at 25 GB/s\n"), std::string::npos) << r.out;
    EXPECT_EQ(RunCli("serve").status, 2);
    EXPECT_EQ(RunCli("serve --preset no/such.json").status, 1);
    EXPECT_EQ(RunCli(kPreset + " --threads 2").status, 1);  // threads only run a sweep
}

TEST(CliServe, RateSweepPrintsTheCurve) {
    CliResult r = RunCli(kPreset + " --rate-sweep 1,4,16 --threads 2");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("Rate sweep: Llama-3 8B"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("     1.000"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("    16.000"), std::string::npos) << r.out;
    // The same numbers whatever the thread count.
    CliResult one = RunCli(kPreset + " --rate-sweep 1,4,16 --threads 1 --json", false);
    CliResult three = RunCli(kPreset + " --rate-sweep 1,4,16 --threads 3 --json", false);
    ASSERT_EQ(one.status, 0);
    EXPECT_EQ(one.out, three.out);
    EXPECT_EQ(nlohmann::json::parse(one.out)["points"].size(), 3u);
    r = RunCli(kPreset + " --rate-sweep 1,,4");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--rate-sweep"), std::string::npos) << r.out;
    r = RunCli(kPreset + " --rate-sweep 2 --set workload.arrival=offline");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("workload.arrival"), std::string::npos) << r.out;
}

// --sweep KEY=V1,V2,...: each point is the description with one more --set, its result the single run's.
TEST(CliServe, FieldSweepPointsAreTheSingleRuns) {
    const std::string base =
        "serve --preset llama3-8b-h100-shared-prefix --set workload.requests=128 "
        "--set workload.prefixes.count=100 --set workload.prefixes.tokens=8192";
    CliResult r = RunCli(base + " --sweep engine.host_cache_gib=0,16 --threads 2 --json", false);
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["sweep"]["keys"], nlohmann::json::array({"engine.host_cache_gib"}));
    ASSERT_EQ(j["points"].size(), 2u);
    for (int i = 0; i < 2; ++i) {
        const std::string v = i == 0 ? "0" : "16";
        EXPECT_EQ(j["points"][i]["values"], nlohmann::json::array({v}));
        CliResult one = RunCli(base + " --set engine.host_cache_gib=" + v + " --json", false);
        ASSERT_EQ(one.status, 0) << one.out;
        const nlohmann::json single = nlohmann::json::parse(one.out);
        const nlohmann::json& point = j["points"][i]["result"];
        for (auto it = point.begin(); it != point.end(); ++it) EXPECT_EQ(*it, single["result"][it.key()]) << it.key();
        EXPECT_EQ(j["points"][i]["deployment"], single["deployment"]);
    }
    EXPECT_GT(j["points"][1]["result"]["prefix_host_hits"].get<long long>(), 0);  // the field did something
    // Text: one row a value, the same whatever the thread count; a model is a field too.
    CliResult text = RunCli(base + " --sweep engine.host_cache_gib=0,16 --threads 1");
    ASSERT_EQ(text.status, 0) << text.out;
    EXPECT_EQ(text.out, RunCli(base + " --sweep engine.host_cache_gib=0,16 --threads 2").out);
    EXPECT_NE(text.out.find("Sweep of engine.host_cache_gib: Llama-3 8B"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("    hits"), std::string::npos) << text.out;
    CliResult models = RunCli(kPreset + " --set pool.tp=8 --sweep model=llama3-8b,llama3-70b");
    ASSERT_EQ(models.status, 0) << models.out;
    EXPECT_NE(models.out.find("\nllama3-70b "), std::string::npos) << models.out;
    // Errors name the flag or the field and the value.
    r = RunCli(kPreset + " --sweep pool.tp=1,x");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("pool.tp: expected an integer, got \"x\""), std::string::npos) << r.out;
    r = RunCli(kPreset + " --sweep engine.max_seqz=1,2");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("engine.max_seqz: unknown field"), std::string::npos) << r.out;
    // A point may name its own cluster: each runs on it, as `--set system=` runs one.
    r = RunCli(kPreset + " --sweep system=dgx-h100-superpod,dgx-a100-superpod --json", false);
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json systems = nlohmann::json::parse(r.out);
    CliResult a100 = RunCli(kPreset + " --set system=dgx-a100-superpod --json", false);
    ASSERT_EQ(a100.status, 0) << a100.out;
    EXPECT_EQ(systems["points"][1]["deployment"], nlohmann::json::parse(a100.out)["deployment"]);
    EXPECT_EQ(systems["points"][1]["result"]["output_tokens_per_s"],
              nlohmann::json::parse(a100.out)["result"]["output_tokens_per_s"]);
    EXPECT_NE(systems["points"][0]["deployment"]["accelerator"], systems["points"][1]["deployment"]["accelerator"]);
    EXPECT_NE(RunCli(kPreset + " --sweep system=dgx-h100-superpod,dgx-a100-superpod")
                  .out.find("on the cluster each point sets"),
              std::string::npos);
    r = RunCli(kPreset + " --sweep system=dgx-a100-superpod --system dgx-h100-superpod");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--sweep: its points name clusters of their own"), std::string::npos) << r.out;
    r = RunCli(kPreset + " --sweep system=no-such-cluster");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("no-such-cluster"), std::string::npos) << r.out;
    // Given twice, a grid: one row a pair, the second field varying fastest, each the run with both --set.
    r = RunCli(kPreset + " --sweep pool.tp=1,2 --sweep engine.max_seqs=8,256 --json", false);
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json grid = nlohmann::json::parse(r.out);
    EXPECT_EQ(grid["sweep"]["keys"], nlohmann::json::array({"pool.tp", "engine.max_seqs"}));
    ASSERT_EQ(grid["points"].size(), 4u);
    EXPECT_EQ(grid["points"][1]["values"], nlohmann::json::array({"1", "256"}));
    EXPECT_EQ(grid["points"][2]["values"], nlohmann::json::array({"2", "8"}));
    CliResult pair = RunCli(kPreset + " --set pool.tp=2 --set engine.max_seqs=8 --json", false);
    ASSERT_EQ(pair.status, 0) << pair.out;
    EXPECT_EQ(grid["points"][2]["result"]["output_tokens_per_s"],
              nlohmann::json::parse(pair.out)["result"]["output_tokens_per_s"]);
    EXPECT_EQ(grid["points"][2]["result"]["ttft_s"], nlohmann::json::parse(pair.out)["result"]["ttft_s"]);
    r = RunCli(kPreset + " --sweep pool.tp=1,2 --sweep engine.max_seqs=8,256");
    EXPECT_NE(r.out.find("Sweep of pool.tp x engine.max_seqs"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("pool.tp engine.max_seqs"), std::string::npos) << r.out;
    r = RunCli(kPreset + " --sweep pool.tp=1 --sweep pool.tp=2");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--sweep: pool.tp given twice"), std::string::npos) << r.out;
    r = RunCli(kPreset + " --sweep pool.tp=1 --sweep engine.max_seqs=8 --sweep engine.max_tokens=512");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--sweep: given 3 times"), std::string::npos) << r.out;
    r = RunCli(kPreset + " --sweep pool.tp");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--sweep: expected key=V1,V2,..."), std::string::npos) << r.out;
    r = RunCli(kPreset + " --sweep pool.tp=1,2 --rate-sweep 1,2");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--sweep: one sweep a command"), std::string::npos) << r.out;
}

TEST(CliServe, ReplaysATraceFile) {
    const std::string path = testing::TempDir() + "/serve_trace.csv";
    {
        std::ofstream f(path);
        f << "arrival_s,input_tokens,output_tokens\n0,500,10\n0.5,200,20\n0.75,1000,5\n";
    }
    CliResult r = RunCli(kPreset + " --trace " + path);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("completed      3 requests"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("replayed trace"), std::string::npos) << r.out;
    {
        std::ofstream f(path);
        f << "0,500,10\n0.5,200\n";
    }
    r = RunCli(kPreset + " --trace " + path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("trace line 2"), std::string::npos) << r.out;
}

TEST(CliServe, DisaggregatedPresetReportsTheTransfer) {
    CliResult r = RunCli("serve --preset llama3-70b-h100-disaggregated --set workload.requests=100");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("prefill pool   1 replica x TP8 (8 GPUs)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("KV transfer"), std::string::npos) << r.out;
}

TEST(CliServe, DecodePoolOnAClusterOfItsOwn) {
    const std::string preset = "serve --preset llama3-70b-h100-disaggregated --set workload.requests=50";
    CliResult r = RunCli(preset + " --set decode_pool.system=dgx-a100-superpod");
    ASSERT_EQ(r.status, 0) << r.out;
    for (const char* s : {"NVIDIA A100-SXM4-80GB (DGX A100 SuperPOD", ") decoding\n",
                          "decode pool    1 replica x TP8 (8 GPUs) on NVIDIA A100-SXM4-80GB", "decode rates   "})
        EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
    // --decode-system says the same from the command line.
    EXPECT_EQ(RunCli(preset + " --decode-system dgx-a100-superpod").out, r.out);
    // An unknown id lists the ids there; a cluster with no scale-out network is refused.
    r = RunCli(preset + " --set decode_pool.system=dgx-z100");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("decode_pool.system: \"dgx-z100\" is neither a file nor a system preset id"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("dgx-a100-superpod"), std::string::npos) << r.out;
    r = RunCli(preset + " --decode-system tpu-v4-pod");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("decode_pool.system: Google TPU v4 pod"), std::string::npos) << r.out;
    r = RunCli(kPreset + " --decode-system dgx-a100-superpod");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("but the description has no decode_pool"), std::string::npos) << r.out;
}

// --decode-system-set edits the decode pool's own cluster as --system-set edits the prefill pool's: twice the A100
// cluster's InfiniBand (25 -> 50 GB/s a GPU) halves the KV transfer's time per token (24 -> 48 GB/s effective).
TEST(CliServe, DecodeSystemSetEditsTheDecodeCluster) {
    const std::string preset = "serve --preset llama3-70b-splitwise-ha --set workload.requests=20";
    CliResult base = RunCli(preset);
    CliResult wider = RunCli(preset + " --decode-system-set hdr-ib-fat-tree.bandwidth=50");
    ASSERT_EQ(base.status, 0) << base.out;
    ASSERT_EQ(wider.status, 0) << wider.out;
    EXPECT_NE(base.out.find("KV transfer    2.700 us + 1.707 us per prompt token"), std::string::npos) << base.out;
    EXPECT_NE(wider.out.find("KV transfer    2.700 us + 0.871 us per prompt token"), std::string::npos) << wider.out;
    // The H100 side's NDR (47 GB/s effective) paces it now: the same per token as both pools on H100s.
    EXPECT_NE(RunCli("serve --preset llama3-70b-h100-disaggregated --set workload.requests=20")
                  .out.find("2.700 us + 0.871 us per prompt token"),
              std::string::npos);
    CliResult bad = RunCli(preset + " --decode-system-set hdr-ib-fat-tree.bandwidth=-1");
    EXPECT_EQ(bad.status, 1);
    EXPECT_NE(bad.out.find("--decode-system-set"), std::string::npos) << bad.out;
    bad = RunCli("serve --preset llama3-70b-h100-disaggregated --decode-system-set 1.bandwidth=50");
    EXPECT_EQ(bad.status, 1);
    EXPECT_NE(bad.out.find("--decode-system-set: edits the decode pool's own cluster; there is none"),
              std::string::npos)
        << bad.out;
}

}  // namespace
