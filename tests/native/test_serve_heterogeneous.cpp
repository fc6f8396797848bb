// Heterogeneous pools: a disaggregated decode pool on a cluster of its own (Splitwise-HA: H100 prompt machines, A100
// token machines). One request's time is written out from the two parts' per-op costs and the KV transfer between
// the clusters' scale-out networks; the decode pool's cache comes from its own part's memory; each cluster holds its
// own pool; the report, JSON, energy and a rate sweep name both parts; the errors name the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/error.h"
#include "engine/serve.h"
#include "inference/engine.h"
#include "inference/serving_parse.h"
#include "report/serve_report.h"
#include "serve_test_util.h"
#include "training/power_cap.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::System;

// Llama 3 8B, one request of 900 prompt tokens and 40 output tokens, prefilled on one H100 and decoded on one A100.
ServingConfig OneRequest() {
    ServingConfig c = Base("llama3-8b", 1, 900, 40, 1);
    c.decode_pool = PoolConfig{1, 1};
    return c;
}

// A request of `c` prefilled on the DGX H100 cluster and decoded on the DGX A100 cluster, with the calibration.
engine::ServeRequest H100ThenA100(ServingConfig c) {
    engine::ServeRequest q;
    q.config = std::move(c);
    q.system = &System("dgx-h100-superpod");
    q.calibration = &Calibration();
    q.decode_system = &System("dgx-a100-superpod");
    return q;
}

TEST(ServeHeterogeneous, OneRequestPrefillsOnOnePartAndDecodesOnTheOther) {
    const ServingConfig c = OneRequest();
    const sc::System& h100 = System("dgx-h100-superpod");
    const sc::System& a100 = System("dgx-a100-superpod");
    const ServingRun run = SimulateServing(c, h100, &Calibration(), &a100);
    const ServingResult& r = run.result;
    ASSERT_EQ(r.completed, 1);
    // Each pool's cost on its own part (the context kernel looked up at the 900-token prompt, as the run does).
    const IterationCost prefill(c.model, c.precision, c.pool, h100, &Calibration(), 900, c.engine.max_tokens);
    const IterationCost decode(c.model, c.precision, *c.decode_pool, a100, &Calibration(), 900, c.engine.max_tokens);
    // The KV cache leaves by the H100 cluster's NDR fat tree and enters by the A100 cluster's HDR one: the slower,
    // HDR (25 GB/s a GPU at 0.96), paces it, after the larger hop latency (both NCCL's 2.7 us).
    ASSERT_TRUE(run.transfer);
    const NetworkLevel& ndr = h100.levels[1];
    const NetworkLevel& hdr = a100.levels[1];
    ASSERT_LT(hdr.EffectiveGBps(), ndr.EffectiveGBps());
    EXPECT_DOUBLE_EQ(run.transfer->seconds_per_token, prefill.KvBytesPerToken() / (hdr.EffectiveGBps() * 1e9));
    EXPECT_DOUBLE_EQ(run.transfer->latency, std::max(ndr.latency_us, hdr.latency_us) * 1e-6);
    // The first token from the H100's prefill; then the transfer; then 39 decode steps at the A100's cost.
    EXPECT_NEAR(r.ttft.mean, prefill.PrefillSeconds(900), 1e-12);
    double e2e = prefill.PrefillSeconds(900) + run.transfer->Seconds(900);
    for (int k = 1; k < 40; ++k) e2e += decode.DecodeSeconds(900 + k - 1);
    EXPECT_NEAR(r.e2e.mean, e2e, 1e-12);
    EXPECT_NEAR(r.kv_transfer_mean, run.transfer->Seconds(900), 1e-15);
    // The A100 decodes slower than an H100 decode pool would: its HBM reads the weights at 1.61 against 2.9 TB/s.
    const IterationCost h100_decode(c.model, c.precision, *c.decode_pool, h100, &Calibration(), 900,
                                    c.engine.max_tokens);
    EXPECT_GT(decode.DecodeSeconds(950), 1.3 * h100_decode.DecodeSeconds(950));
    // The decode pool's cache is the A100's memory less the weights, from the same memory model.
    ASSERT_TRUE(run.decode_kv);
    EXPECT_EQ(run.decode_kv->blocks,
              ComputeKvCapacity(c.model, c.precision, *c.decode_pool, a100.accelerator, c.engine).blocks);
    EXPECT_EQ(run.kv.blocks, ComputeKvCapacity(c.model, c.precision, c.pool, h100.accelerator, c.engine).blocks);
    EXPECT_EQ(run.decode_system_name, a100.name);
    EXPECT_EQ(run.decode_accelerator, a100.accelerator.name);
    EXPECT_FALSE(run.decode_rates.gemm.empty());
    EXPECT_EQ(r.gpus, 2);
}

TEST(ServeHeterogeneous, EachClusterHoldsItsOwnPool) {
    // 8 H100s prefill, 150 A100 replicas of TP8 (1,200 GPUs) decode: together more than the H100 cluster's 1,024,
    // but each pool fits its own cluster, so neither is extended.
    ServingConfig c = servetest::Uniform("llama3-8b", 8, 40, {100, 1000}, {10, 100}, ArrivalKind::offline);
    c.decode_pool = PoolConfig{8, 150};
    engine::ServeRequest q = H100ThenA100(c);
    const sc::System &h100 = *q.system, &a100 = *q.decode_system;
    const engine::ServeResult r = engine::RunServe(q);
    EXPECT_EQ(r.system_name, h100.name);
    EXPECT_EQ(r.decode_system_name, a100.name);
    EXPECT_EQ(r.result.completed, 40);
    // Without a cluster of its own the two pools need 1,208 GPUs, and the H100 cluster is extended to hold them.
    q.decode_system = nullptr;
    EXPECT_NE(engine::RunServe(q).system_name, h100.name);
    // A decode pool larger than its own cluster extends that one, not the prefill pool's.
    q.decode_system = &a100;
    q.config.decode_pool->replicas = 600;  // 4,800 A100s of a 4,480-GPU cluster
    const engine::ServeResult big = engine::RunServe(q);
    EXPECT_EQ(big.system_name, h100.name);
    EXPECT_NE(big.decode_system_name, a100.name);
}

TEST(ServeHeterogeneous, ReportJsonEnergyAndSweepNameBothParts) {
    ServingConfig c = servetest::Uniform("llama3-8b", 1, 300, {100, 1000}, {10, 200}, ArrivalKind::poisson);
    c.workload.rate = 8;
    c.decode_pool = PoolConfig{1, 2};
    engine::ServeRequest q = H100ThenA100(c);
    const sc::System &h100 = *q.system, &a100 = *q.decode_system;
    const engine::ServeResult r = engine::RunServe(q);
    const std::string text = ServeReportText(q, r);
    for (const std::string& s :
         {"prefilling, " + a100.accelerator.name + " (" + a100.name + ") decoding",
          "decode pool    2 replicas x TP1 (2 GPUs) on " + a100.accelerator.name, std::string("prefill rates  "),
          std::string("decode rates   "), std::string("a prefill GPU, ")})
        EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
    const nlohmann::json j = nlohmann::json::parse(ServeReportJson(q, r));
    EXPECT_EQ(j["deployment"]["decode_system"], a100.name);
    EXPECT_EQ(j["deployment"]["decode_accelerator"], a100.accelerator.name);
    EXPECT_TRUE(j.contains("decode_rate_sources"));
    // Energy: every GPU of each pool at its own part's power for the run's duration.
    const double watts = *PowerDrawW(h100.accelerator) * 1 + *PowerDrawW(a100.accelerator) * 2;
    ASSERT_GT(*PowerDrawW(h100.accelerator), *PowerDrawW(a100.accelerator));
    EXPECT_NEAR(j["result"]["energy_joules"].get<double>(), watts * r.result.duration, 1e-9 * watts);
    // A rate sweep's point is the single run at that rate, on the same two clusters.
    q.sweep_rates = {8};
    const engine::ServeSweepSnapshot snap = engine::SnapshotServeSweep(q);
    ASSERT_TRUE(snap.decode_system);
    const auto points = engine::RunServeSweepShard(snap, 0, 1);
    ASSERT_EQ(points.size(), 1u);
    EXPECT_EQ(points[0].run.result.e2e.p99, r.result.e2e.p99);
    EXPECT_EQ(points[0].run.result.duration, r.result.duration);
    EXPECT_NE(ServeSweepReportText(snap, points).find("prefilling, " + a100.accelerator.name + " decoding"),
              std::string::npos);
    // ServeRun, the page's slices, gives the same.
    q.sweep_rates.clear();
    engine::ServeRun slices(q);
    while (!slices.Step(97)) {}
    EXPECT_EQ(slices.Finish().result.e2e.mean, r.result.e2e.mean);
}

TEST(ServeHeterogeneous, ErrorsNameTheField) {
    const sc::System& h100 = System("dgx-h100-superpod");
    const sc::System& a100 = System("dgx-a100-superpod");
    ServingConfig c = OneRequest();
    c.decode_pool.reset();
    EXPECT_NE(sctest::ErrorOf([&] { SimulateServing(c, h100, &Calibration(), &a100); })
                  .find("decode_pool.system: names the decode pool's cluster (" + a100.name +
                        "), but the description has no decode_pool"),
              std::string::npos);
    // A TPU pod's network is its chips' own torus: nothing for a KV cache to leave it by.
    c = OneRequest();
    const sc::System& tpu = System("tpu-v4-pod");
    EXPECT_NE(sctest::ErrorOf([&] {
                  SimulateServing(c, h100, &Calibration(), &tpu);
              }).find("decode_pool.system: " + tpu.name + " has no network beyond its"),
              std::string::npos);
    // The description: decode_pool.system is a preset id the driver resolves, never empty.
    const std::string base =
        R"({"model": "llama3-8b", "system": "dgx-h100-superpod", "workload": {"requests": 1, "input": {"tokens": 10},
            "output": {"tokens": 10}}, "decode_pool": {"tp": 1)";
    EXPECT_EQ(ParseServingDescription(base + R"(, "system": "dgx-a100-superpod"}})").decode_system_id,
              "dgx-a100-superpod");
    EXPECT_EQ(ParseServingDescription(base + "}}").decode_system_id, "");
    EXPECT_NE(sctest::ErrorOf([&] {
                  ParseServingDescription(base + R"(, "system": ""}})");
              }).find("decode_pool.system: a system preset id"),
              std::string::npos);
    EXPECT_NE(sctest::ErrorOf([&] { ParseServingDescription(base + R"(, "system": 3}})"); }).find("decode_pool.system"),
              std::string::npos);
}

}  // namespace
