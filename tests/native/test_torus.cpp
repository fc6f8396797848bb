// Torus levels (TPU ICI): the collective times of training/comm_model.h against the closed forms of rings on a
// torus, the slices a job gets (config/torus_slice.h), and the checks on torus presets and edits.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "config/hardware_config.h"
#include "config/model_config.h"
#include "config/system_edits.h"
#include "config/torus_slice.h"
#include "engine/estimate.h"
#include "engine/search.h"
#include "engine/trace.h"
#include "inference/iteration_cost.h"
#include "parallel/layout.h"
#include "parallel/parallel_config.h"
#include "preset_files.h"
#include "report/engine_report.h"
#include "test_util.h"
#include "training/comm_model.h"
#include "training/sweep.h"

namespace {

using sc::CollectiveType;
using sc::GroupKind;
using sctest::ErrorOf;
using sctest::FieldOf;

const sc::System& V4() {
    static const sc::System s = sctest::LoadSystemPreset("tpu-v4-pod");
    return s;
}

// One link of the v4 preset, per direction: a torus level's bandwidth is the two links of its dimension.
double LinkBps() { return V4().levels[0].EffectiveGBps() * 1e9 / 2; }
double Latency() { return V4().levels[0].latency_us * 1e-6; }
// The comm model's latency term of one all-reduce over a dimension of k: 2 min(k - 1, ceil(log2 k)) steps.
double ArLatency(double k) { return 2 * std::min(k - 1, std::ceil(std::log2(k))) * Latency(); }

double AllReduce(const sc::System& sys, const std::string& spec, GroupKind g, double bytes) {
    sc::Layout layout(sc::ParseParallelSpec(spec));
    return sc::CommModel(sys, layout, false).Seconds(CollectiveType::all_reduce, g, bytes);
}

TEST(Torus, PresetIsAPodOfThreeWrappedDimensions) {
    const sc::System& s = V4();
    ASSERT_EQ(s.levels.size(), 3u);
    for (const sc::NetworkLevel& l : s.levels) {
        EXPECT_EQ(l.kind, sc::LevelKind::torus);
        EXPECT_TRUE(l.wraparound);
        EXPECT_FALSE(l.in_network_reduction);
    }
    EXPECT_EQ(s.TotalAccelerators(), 4096);
    // Google states the bisection bandwidth: a cut across one dimension of the 16x16x16 torus severs 2 x 16 x 16
    // links (two per ring), each carrying one link's rate per direction.
    EXPECT_NEAR(2 * 16 * 16 * LinkBps(), 24e12, 1e-3 * 24e12);
}

TEST(Torus, WholeWrappedDimensionIsABidirectionalRing) {
    // tp=16 holds the whole x dimension: a ring over both of its links, 2(k-1)/k of the buffer at the level's rate.
    const double bytes = 1e9, bw = 2 * LinkBps();
    EXPECT_NEAR(AllReduce(V4(), "tp=16", GroupKind::tp, bytes), 2 * 15.0 / 16 * bytes / bw + ArLatency(16), 1e-12);
    // The same dimension without wraparound (a mesh) is a line: one link's worth.
    sc::System mesh = V4();
    sc::ApplySystemEdits(mesh, {"ici-x.wraparound=off"});
    EXPECT_NEAR(AllReduce(mesh, "tp=16", GroupKind::tp, bytes), 2 * 15.0 / 16 * bytes / (bw / 2) + ArLatency(16),
                1e-12);
}

TEST(Torus, PartOfADimensionIsALine) {
    // tp=8 is half the x dimension: its ring cannot close, so it runs over one link's worth.
    const double bytes = 1e9;
    EXPECT_NEAR(AllReduce(V4(), "tp=8", GroupKind::tp, bytes), 2 * 7.0 / 8 * bytes / LinkBps() + ArLatency(8), 1e-12);
}

TEST(Torus, InterleavedGroupsShareTheLinks) {
    // tp=2, dp=8: a data-parallel group is every second chip of the x dimension, eight of them round the whole
    // ring; the two interleaved groups share each link, so each gets half of the ring's rate.
    const double bytes = 1e9, bw = 2 * LinkBps();
    EXPECT_NEAR(AllReduce(V4(), "tp=2,dp=8", GroupKind::dp, bytes), 2 * 7.0 / 8 * bytes / (bw / 2) + ArLatency(8),
                1e-12);
}

TEST(Torus, DimensionsRunConcurrently) {
    // tp=256 holds x and y: the buffer is split in two, one half reduced along x then y, the other along y then x,
    // so each dimension carries S/2 + S/2/16 at once: half the time of running them one after the other.
    const double bytes = 1e9, bw = 2 * LinkBps(), k = 16;
    const double per_dim = 2 * (k - 1) / k * (bytes / 2 + bytes / 2 / k) / bw;
    EXPECT_NEAR(AllReduce(V4(), "tp=256", GroupKind::tp, bytes), per_dim + 2 * ArLatency(k), 1e-12);
    const double sequential = 2 * (k - 1) / k * bytes / bw + 2 * (k - 1) / k * (bytes / k) / bw;
    EXPECT_NEAR(per_dim / sequential, 0.5, 1e-12);
}

TEST(Torus, FullPodAllReduceNearGooglesStatedBandwidth) {
    // Google's v4 page states 1.1 PB/s of all-reduce bandwidth per pod: 268.6 GB/s per chip. The model's bus
    // bandwidth (bytes x 2(n-1)/n over the time, nccl-tests' convention) for a large all-reduce over the whole
    // pod comes from the link rate, which the preset derives from the bisection bandwidth instead: an
    // independent check that the concurrent-dimension ring reaches what Google measures.
    const double bytes = 8e9, n = 4096;
    const double t = AllReduce(V4(), "dp=4096", GroupKind::dp, bytes);
    const double busbw = bytes * 2 * (n - 1) / n / t;
    EXPECT_NEAR(busbw / (1.1e15 / 4096), 1, 0.10) << busbw / 1e9 << " GB/s";
    // And about three dimensions' worth of the ring rate: each chip drives all six of its links.
    EXPECT_GT(busbw, 2.9 * 2 * LinkBps());
}

TEST(Torus, AllToAllCrossesAQuarterOfTheRing) {
    // An all-to-all over a dimension of 16 sends 15/16 of the buffer to peers 4 links away on average.
    sc::Layout layout(sc::ParseParallelSpec("tp=16"));
    sc::CommModel net(V4(), layout, false);
    const double bytes = 1e9, bw = 2 * LinkBps();
    EXPECT_NEAR(net.Seconds(CollectiveType::all_to_all, GroupKind::tp, bytes), 15.0 / 16 * bytes * 4 / bw + Latency(),
                1e-12);
}

TEST(Torus, PipelineSendTakesOneLink) {
    sc::Layout layout(sc::ParseParallelSpec("tp=16,pp=2"));
    sc::CommModel net(V4(), layout, false);
    EXPECT_NEAR(net.P2PSeconds(1e8), 1e8 / LinkBps() + Latency(), 1e-12);
}

std::string Shape(const sc::System& s) {
    std::string out;
    int prev = 1;
    for (const sc::NetworkLevel& l : s.levels) {
        out += (out.empty() ? "" : "x");
        out += std::to_string(l.size / prev);
        out += l.wraparound ? "" : "m";
        prev = l.size;
    }
    return out;
}

TEST(Torus, SlicesAreTheMostCubicOfWholeCubes) {
    auto slice = [](const sc::System& pod, int gpus) {
        std::optional<sc::System> s = sc::SliceTorus(pod, gpus);
        if (!s) return std::string("none");
        EXPECT_NO_THROW(sc::ValidateSystemHierarchy(*s));
        EXPECT_EQ(s->TotalAccelerators(), gpus);
        return Shape(*s);
    };
    EXPECT_EQ(slice(V4(), 64), "4x4x4");
    EXPECT_EQ(slice(V4(), 512), "8x8x8");
    EXPECT_EQ(slice(V4(), 2048), "8x16x16");
    EXPECT_EQ(slice(V4(), 192), "4x4x12");
    // Smaller than a cube: a mesh inside one; dimensions of one chip dropped (v4-8 is 2x2x1).
    EXPECT_EQ(slice(V4(), 32), "2mx4mx4m");
    EXPECT_EQ(slice(V4(), 4), "2mx2m");
    // One chip keeps one level of one chip: with none, the system held 0 accelerators and every one-chip job on a
    // TPU system failed ("a system needs at least one network level").
    EXPECT_EQ(slice(V4(), 1), "1m");
    // The pod itself, more than a cube but not whole cubes, or more than the pod: no slice.
    EXPECT_EQ(slice(V4(), 4096), "none");
    EXPECT_EQ(slice(V4(), 100), "none");
    EXPECT_EQ(slice(V4(), 8192), "none");
    // v5p slices are 16x16x24 at most; 3,072 chips are most cubic as 12x16x16, not 8x16x24.
    const sc::System v5p = sctest::LoadSystemPreset("tpu-v5p-pod");
    EXPECT_EQ(slice(v5p, 3072), "12x16x16");
    EXPECT_EQ(slice(v5p, 4096), "16x16x16");
    // A slice carries no level beyond the torus: the job does not leave it.
    EXPECT_EQ(sc::SliceTorus(v5p, 4096)->levels.size(), 3u);
    // Switched systems have no torus to slice.
    EXPECT_FALSE(sc::SliceTorus(sctest::LoadSystemPreset("dgx-h100-superpod"), 64).has_value());
}

TEST(Torus, JobsBeyondATorusOnlyPodAreRefused) {
    const std::string e = ErrorOf([] { sc::ExtendSystem(V4(), 8192); });
    EXPECT_NE(e.find("gpus"), std::string::npos) << e;
    EXPECT_NE(e.find("tpu-v5p-pod"), std::string::npos) << e;
    // v5p joins slices over the data-center network: two slices of 6,144 hold 8,192 chips.
    const sc::System grown = sc::ExtendSystem(sctest::LoadSystemPreset("tpu-v5p-pod"), 8192);
    EXPECT_EQ(grown.TotalAccelerators(), 12288);
    EXPECT_EQ(grown.levels.back().kind, sc::LevelKind::three_tier);
}

TEST(Torus, EstimateSearchAndTraceRunOnOneSlice) {
    // A 64-chip job on the v4 pod runs on a 4x4x4 slice wherever it is timed: the estimate (CLI and page), the
    // layout search and the trace's timeline, and the report says which slice.
    sc::engine::Request r;
    r.model = sc::ParseModelConfig(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/models/llama3-8b.json"));
    r.parallel = sc::ParseParallelSpec("tp=4,dp=16,batch=32");
    r.system = &V4();
    const sc::engine::EstimateResult e = sc::engine::RunEstimate(r);
    ASSERT_TRUE(e.slice.has_value());
    EXPECT_EQ(Shape(*e.slice), "4x4x4");
    EXPECT_NE(sc::EstimateReportText(r, e).find("(slice 4x4x4) (64 x Google TPU v4)"), std::string::npos);
    EXPECT_EQ(sc::engine::Evaluate(r).training->step_seconds, e.training->step_seconds);
    const sc::engine::TraceSnapshot trace = sc::engine::SnapshotTrace(r);
    EXPECT_EQ(Shape(*trace.system), "4x4x4");
    // The slice's tensor groups hold a whole wrapped dimension of 4; on the pod's first 64 chips (16 along x)
    // they would be lines: slower.
    const sc::TrainingEstimate on_pod = sc::EstimateTraining(*e.job, V4(), nullptr, r.options);
    const sc::TrainingEstimate on_slice = sc::EstimateTraining(*e.job, *e.slice, nullptr, r.options);
    EXPECT_LT(on_slice.step.tp_comm, on_pod.step.tp_comm);
    r.search.gpus = 2048;
    r.search.batch = 1024;
    EXPECT_EQ(Shape(sc::engine::SnapshotSearch(r).system), "8x16x16");
    // 96 chips are no slice of whole cubes: the job runs on the pod's first 96 chips, and the report says so.
    r.parallel = sc::ParseParallelSpec("tp=4,dp=24,batch=48");
    const sc::engine::EstimateResult first = sc::engine::RunEstimate(r);
    ASSERT_TRUE(first.slice.has_value());
    EXPECT_EQ(first.slice->levels.size(), V4().levels.size());
    EXPECT_NE(sc::EstimateReportText(r, first).find("(its first 96 chips: no slice of whole 4x4x4 cubes has 96)"),
              std::string::npos);
    // A job that fills v5p's torus and more runs over the data-center network joining slices: no part of one torus.
    const sc::System v5p = sctest::LoadSystemPreset("tpu-v5p-pod");
    EXPECT_FALSE(sc::TorusPartFor(v5p, 8192).has_value());
    EXPECT_EQ(sc::TorusPartFor(v5p, 6144), std::nullopt);
    EXPECT_EQ(Shape(*sc::TorusPartFor(v5p, 4096)), "16x16x16");
}

TEST(Torus, OneChipJobsRun) {
    // A one-chip estimate, search and serving replica on either TPU system (each failed on a system of no levels).
    sc::engine::Request r;
    r.model = sc::ParseModelConfig(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/models/llama3-8b.json"));
    r.parallel = sc::ParseParallelSpec("tp=1,dp=1,batch=1");
    const sc::System v5p = sctest::LoadSystemPreset("tpu-v5p-pod");
    for (const sc::System* pod : {&V4(), &v5p}) {
        SCOPED_TRACE(pod->id);
        r.system = pod;
        const sc::engine::EstimateResult e = sc::engine::RunEstimate(r);
        ASSERT_TRUE(e.training.has_value());
        EXPECT_GT(e.training->step_seconds, 0);
        EXPECT_EQ(e.training->step.tp_comm + e.training->step.dp_comm, 0);  // nothing leaves the chip
        r.search.gpus = 1;
        r.search.batch = 4;
        EXPECT_EQ(sc::engine::SnapshotSearch(r).system.TotalAccelerators(), 1);
        const sc::IterationCost cost(r.model, {}, sc::PoolConfig{1, 1, 1, 1}, *pod, nullptr, 1024, 64);
        EXPECT_GT(cost.DecodeSeconds(2048), 0);
    }
}

TEST(Torus, AServingReplicaRunsOnItsOwnSlice) {
    // A tp=4, pp=2 replica on the v4 pod is an 8-chip slice (2x2x2, a mesh): its decode step costs what it costs on
    // that slice given directly, and its pipeline send takes one link.
    const sc::ModelConfig m =
        sc::ParseModelConfig(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/models/llama3-8b.json"));
    const sc::PoolConfig split{4, 1, 2, 1};
    const sc::System slice = *sc::SliceTorus(V4(), 8);
    EXPECT_EQ(Shape(slice), "2mx2mx2m");
    const sc::IterationCost on_pod(m, {}, split, V4(), nullptr, 1024, 64);
    const sc::IterationCost on_slice(m, {}, split, slice, nullptr, 1024, 64);
    EXPECT_EQ(on_pod.DecodeSeconds(2048), on_slice.DecodeSeconds(2048));
    const double tokens = 1000, bytes = 2 * tokens * m.hidden * 2;  // SendSeconds: 2 x hidden per token in bf16
    EXPECT_NEAR(on_pod.SendSeconds(0, tokens) - Latency(), bytes / LinkBps(), 1e-12);
}

TEST(Torus, SweepsScaleTheChipAndTheNetworkBeyondTheTorus) {
    // A co-design sweep on a TPU system: the accelerator's factors apply as on any system; net_bw scales the
    // data-center network joining slices, not the ICI; the job gets its slice; domain and topology are errors.
    const sc::System v5p = sctest::LoadSystemPreset("tpu-v5p-pod");
    sc::SweepPoint pt;
    pt.flops = 2, pt.net_bw = 4;
    const sc::System s = sc::MakeSweepSystem(v5p, pt, 8192);
    EXPECT_EQ(*s.accelerator.matrix.bf16, 2 * *v5p.accelerator.matrix.bf16);
    EXPECT_EQ(s.TotalAccelerators(), 12288);
    for (size_t l = 0; l < 3; ++l) EXPECT_EQ(s.levels[l].bandwidth_gbps, v5p.levels[l].bandwidth_gbps);
    EXPECT_EQ(s.levels[3].bandwidth_gbps, 4 * v5p.levels[3].bandwidth_gbps);
    EXPECT_EQ(Shape(sc::MakeSweepSystem(V4(), sc::SweepPoint{}, 512)), "8x8x8");
    sc::SweepPoint domain;
    domain.domain = 72;
    EXPECT_EQ(FieldOf([&] { sc::MakeSweepSystem(V4(), domain, 512); }), "domain");
    sc::SweepPoint flat;
    flat.topology = sc::Topology::fullflat;
    EXPECT_EQ(FieldOf([&] { sc::MakeSweepSystem(V4(), flat, 512); }), "topology");
    // Its rows name the torus as their network (they said two_tier, the axis's default, which was not applied).
    const sctest::CliResult r = sctest::RunCli(
        "sweep --model presets/models/llama3-8b.json --system tpu-v5p-pod --gpus 64 --batch 64 --axis flops=1,2 --json",
        false);
    ASSERT_EQ(r.status, 0) << r.out;
    for (const nlohmann::json& row : nlohmann::json::parse(r.out))
        EXPECT_EQ(row.at("point").at("topology"), "torus") << row;
}

// The v4 pod preset with `edit` applied to its JSON; the parse error.
std::string BadPod(const std::function<void(nlohmann::json&)>& edit, const std::string& accelerator = "tpu-v4") {
    nlohmann::json j =
        nlohmann::json::parse(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/systems/tpu-v4-pod.json"));
    edit(j);
    return ErrorOf([&] {
        sc::ParseSystem(j.dump(),
                        sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/hardware/" + accelerator + ".json"));
    });
}

TEST(Torus, PresetMistakesAreNamed) {
    std::string e = BadPod([](nlohmann::json& j) { j["levels"][0]["in_network_reduction"]["value"] = true; });
    EXPECT_NE(e.find("levels[0].in_network_reduction"), std::string::npos) << e;
    EXPECT_NE(e.find("no switch"), std::string::npos) << e;
    e = BadPod([](nlohmann::json& j) { j["levels"][0].erase("wraparound"); });
    EXPECT_NE(e.find("levels[0].wraparound"), std::string::npos) << e;
    e = BadPod([](nlohmann::json& j) { j["levels"][1]["bandwidth_GBps_per_direction"]["value"] = 150; });
    EXPECT_NE(e.find("add up to"), std::string::npos) << e;
    EXPECT_NE(e.find("281.25"), std::string::npos) << e;
    e = BadPod([](nlohmann::json& j) { j["levels"][2]["size"]["value"] = 8192; });
    EXPECT_NE(e.find("levels[2].size"), std::string::npos) << e;
    // A switched level under a torus: torus levels are the chips' own links and come first.
    e = BadPod([](nlohmann::json& j) {
        nlohmann::json sw = j["levels"][0];
        sw["kind"] = "fullflat";
        sw["name"] = "switch";
        sw["size"]["value"] = 4;
        sw.erase("wraparound");
        j["levels"].insert(j["levels"].begin(), sw);
    });
    EXPECT_NE(e.find("levels[1].kind"), std::string::npos) << e;
    EXPECT_NE(e.find("come first"), std::string::npos) << e;
    // wraparound on a switched level; a NIC level on an accelerator without a published NIC.
    const std::string superpod =
        sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/systems/dgx-h100-superpod.json");
    nlohmann::json j = nlohmann::json::parse(superpod);
    j["levels"][0]["wraparound"] = {{"value", true}, {"unit", "bool"}, {"status", "ASSUMED"}, {"sources", {"x"}}};
    e = ErrorOf([&] {
        sc::ParseSystem(j.dump(), sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/hardware/h100-sxm.json"));
    });
    EXPECT_NE(e.find("levels[0].wraparound"), std::string::npos) << e;
    e = BadPod([](nlohmann::json& j) {
        nlohmann::json dcn = nlohmann::json::parse(
            sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/systems/tpu-v5p-pod.json"))["levels"][3];
        dcn["size"]["value"] = 8192;
        j["levels"].push_back(dcn);
    });
    EXPECT_NE(e.find("no published scale-out NIC"), std::string::npos) << e;
}

TEST(Torus, EditsAreChecked) {
    sc::System s = V4();
    std::string e = ErrorOf([&] { sc::ApplySystemEdits(s, {"0.in_network_reduction=on"}); });
    EXPECT_NE(e.find("no switch"), std::string::npos) << e;
    EXPECT_FALSE(s.levels[0].in_network_reduction);  // a rejected edit changes nothing
    e = ErrorOf([&] { sc::ApplySystemEdits(s, {"0.latency=2", "0.bandwidth=200"}); });
    EXPECT_NE(e.find("add up to"), std::string::npos) << e;
    EXPECT_EQ(s.levels[0].latency_us, V4().levels[0].latency_us);  // nor the edits before it
    sc::System superpod = sctest::LoadSystemPreset("dgx-h100-superpod");
    e = ErrorOf([&] { sc::ApplySystemEdits(superpod, {"0.wraparound=on"}); });
    EXPECT_NE(e.find("only torus levels"), std::string::npos) << e;
    // The page's cluster panel edits levels in place and re-checks them.
    sc::System page = V4();
    page.levels[1].in_network_reduction = true;
    e = ErrorOf([&] { sc::ValidateSystemLevels(page); });
    EXPECT_NE(e.find("levels[1] (ici-xy).in_network_reduction"), std::string::npos) << e;
}

}  // namespace
