// CPU activation offloading (`offload_layers=N`, Megatron-Core's --cpu-offloading-num-layers on Transformer Engine's
// schedule): the key's rules, the layers on the GPU at the schedule's peak, the compute's wait for the copies (by hand
// on a small case, and in closed form where every copy is on the critical path), and the estimate's memory, host
// memory and step term.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parallel/job.h"
#include "parallel/memory.h"
#include "parallel/offload_schedule.h"
#include "preset_files.h"
#include "report/summary_report.h"
#include "test_util.h"
#include "trace/summary.h"
#include "trace_test_util.h"
#include "training/estimate.h"
#include "training/search.h"

namespace {

std::string SpecError(const sc::ModelConfig& m, const std::string& spec) {
    return sctest::ErrorOf([&] { sc::MakeJob(m, sc::ParseParallelSpec(spec)); });
}

TEST(ActivationOffload, KeyFollowsMegatronCoresRulesAndRoundTrips) {
    const sc::ParallelConfig p = sc::ParseParallelSpec("dp=2,offload_layers=3");
    EXPECT_EQ(p.offload_layers, 3);
    const std::string spec = sc::ParallelSpecString(p);
    EXPECT_NE(spec.find(",offload_layers=3"), std::string::npos) << spec;
    EXPECT_EQ(sc::ParseParallelSpec(spec).offload_layers, 3);
    EXPECT_EQ(sc::ParallelSpecString(sc::ParseParallelSpec("dp=2")).find("offload"), std::string::npos);

    const sc::ModelConfig gpt = sctest::SmallGpt();  // 4 layers
    EXPECT_EQ(SpecError(gpt, "dp=2,offload_layers=3"), "");
    EXPECT_EQ(SpecError(gpt, "dp=2,zero=3,offload_layers=1"), "");
    const std::string head = "offload_layers: offload_layers=";
    EXPECT_EQ(SpecError(gpt, "dp=2,offload_layers=4"),
              head +
                  "4 (Megatron-Core's --cpu-offloading-num-layers) must be below the layer count (4): the last "
                  "layer's activations are used as soon as the backward starts");
    EXPECT_EQ(SpecError(gpt, "pp=2,batch=4,offload_layers=1"),
              head +
                  "1 (Megatron-Core's --cpu-offloading-num-layers) runs without pipeline parallelism, as "
                  "Megatron-Core requires; pp=2 was given");
    EXPECT_EQ(SpecError(gpt, "dp=2,recompute=selective,offload_layers=1"),
              head +
                  "1 (Megatron-Core's --cpu-offloading-num-layers) runs without recomputation, as Megatron-Core "
                  "requires; recompute=selective was given");
    EXPECT_EQ(SpecError(gpt, "batch=4,schedule=gpipe,offload_layers=1").rfind(head + "1", 0), 0u);
    EXPECT_EQ(SpecError(sctest::SmallMoe(), "ep=2,dp=2,a2a_overlap=1,offload_layers=1"),
              head +
                  "1 (Megatron-Core's --cpu-offloading-num-layers) runs one microbatch's forward, then its "
                  "backward; a2a_overlap=1 pairs the layers of two microbatches");
    // The shared predicate the search and the page ask says the same as the errors above.
    EXPECT_TRUE(sc::ParseParallelSpec("dp=2,zero=3").offload_runs());
    for (const char* no :
         {"pp=2,batch=4", "dp=2,recompute=selective", "batch=4,schedule=gpipe", "ep=2,dp=2,a2a_overlap=1"})
        EXPECT_FALSE(sc::ParseParallelSpec(no).offload_runs()) << no;
    EXPECT_EQ(SpecError(gpt, "offload_layers=-1"), "offload_layers: must be zero or a positive integer, got \"-1\"");
}

TEST(ActivationOffload, AtMostLMinusNLayersAreOnTheGpu) {
    const std::vector<double> same(10, 1.0);
    for (int n = 0; n < 10; ++n) EXPECT_DOUBLE_EQ(sc::OffloadResidentPeak(same, n), 10 - n) << n;
    // Uneven layers, L = 4, N = 2, bytes 8 4 2 1, walked by hand ({layers on the GPU} bytes):
    //   forward  k=0: {0} 8;  k=1: {0,1} 12;  k=2: {1,2} 6;  k=3: {2,3} 3
    //   backward k=3: {2,3} 3, then 3 leaves;  k=2: + layer 1 back {1,2} 6, then 2 leaves;
    //            k=1: + layer 0 back {0,1} 12, then 1 leaves;  k=0: {0} 8.
    const std::vector<double> uneven = {8, 4, 2, 1};
    EXPECT_DOUBLE_EQ(sc::OffloadResidentPeak(uneven, 2), 12);
    const std::vector<double> rising = {1, 2, 4, 8};  // the peak is the last two layers: 12, with no offload 15
    EXPECT_DOUBLE_EQ(sc::OffloadResidentPeak(rising, 2), 12);
    EXPECT_DOUBLE_EQ(sc::OffloadResidentPeak(rising, 0), 15);
    // Offloading one more layer never raises the peak (the search's scan for the fewest that fit relies on it), for
    // any bytes: a few arbitrary ones.
    uint32_t x = 12345;
    for (int trial = 0; trial < 50; ++trial) {
        std::vector<double> bytes(3 + trial % 17);
        for (double& b : bytes) x = x * 1664525u + 1013904223u, b = 1 + (x >> 20);
        for (int n = 0; n + 1 < static_cast<int>(bytes.size()); ++n)
            EXPECT_LE(sc::OffloadResidentPeak(bytes, n + 1), sc::OffloadResidentPeak(bytes, n)) << trial << " " << n;
    }
}

TEST(ActivationOffload, TheComputeWaitsWhereTheCopiesAreSlower) {
    // Copies shorter than the layers beside them: nothing waits.
    std::vector<sc::OffloadLayer> fast(8, {1.0, 2.0, 0.5});
    EXPECT_EQ(sc::OffloadWaitSeconds(fast, 4, 0, {1, 1}), 0);
    EXPECT_EQ(sc::OffloadWaitSeconds(fast, 0, 0, {1e-9, 1e-9}), 0);
    // L = 4, N = 2, forward 1, backward 2, each copy 3 s (bytes 3 at 1 B/s), walked by hand:
    //   forward: layer 0 ends at 1, its copy out runs 1-4; layer 1 ends at 2, its copy 4-7; layer 2 waits for copy 0
    //   (to 4), ends at 5; layer 3 waits for copy 1 (to 7), ends at 8: 4 s of waiting.
    //   backward from 8: layer 3 to 10; before layer 2 layer 1's copy in starts (10-13), layer 2 to 12; before layer 1
    //   layer 0's copy in (13-16), layer 1 waits to 13, ends at 15; layer 0 waits to 16, ends at 18: 2 s more.
    std::vector<sc::OffloadLayer> slow(4, {1.0, 2.0, 3.0});
    EXPECT_DOUBLE_EQ(sc::OffloadWaitSeconds(slow, 2, 0, {1, 1}), 6);
    // The head between the forward and the backward gives the first copies in time to come back: here it does not
    // change the waits of the forward (4) and covers none of the backward's (its copies start only when the backward
    // reaches them).
    EXPECT_DOUBLE_EQ(sc::OffloadWaitSeconds(slow, 2, 5, {1, 1}), 6);
    // N = L - 1: each layer's forward waits for the copy out of the one before, and each backward for its own copy in,
    // so every copy is on the critical path: the wait is sum(bytes) x (1/out + 1/in) whatever the layers' times.
    std::vector<sc::OffloadLayer> any = {{0.3, 0.7, 2}, {0.1, 0.2, 5}, {2.0, 4.0, 1}, {1.0, 1.0, 9}};
    EXPECT_DOUBLE_EQ(sc::OffloadWaitSeconds(any, 3, 0.5, {2, 4}), (2 + 5 + 1) * (0.5 + 0.25));
}

const sc::ModelConfig& Llama8b() {
    static const sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    return m;
}

sc::TrainingEstimate Estimate(const std::string& spec, const std::string& system, sc::TrainingOptions opt = {}) {
    return sc::EstimateTraining(sc::MakeJob(Llama8b(), sc::ParseParallelSpec(spec)), sctest::LoadSystemPreset(system),
                                &sctest::MeasuredCalibration(), opt);
}

TEST(ActivationOffload, MemoryHoldsWhatTheScheduleLeavesOnTheGpu) {
    const std::string base = "dp=8,microbatch=2,batch=64,zero=1";
    const sc::Job plain = sc::MakeJob(Llama8b(), sc::ParseParallelSpec(base));
    const sc::Job off = sc::MakeJob(Llama8b(), sc::ParseParallelSpec(base + ",offload_layers=12"));
    const sc::StageMemory a = sc::StageMemoryOf(plain, 0), b = sc::StageMemoryOf(off, 0);
    // Every layer of Llama 3 8B keeps the same bytes: 12 of the 32 leave, and only the activations change.
    const double layer = plain.sums[static_cast<int>(sc::BlockKind::dense_layer)].saved[0];
    ASSERT_GT(layer, 0);
    EXPECT_NEAR(b.activations, a.activations - 12 * layer, 1e-9 * a.activations);
    EXPECT_NEAR(b.host_activations, 12 * layer, 1e-9 * layer);
    EXPECT_EQ(a.host_activations, 0);
    EXPECT_EQ(b.weights, a.weights);
    EXPECT_EQ(b.optimizer, a.optimizer);
}

TEST(ActivationOffload, TheEstimateChargesTheWaitOnTheMeasuredHostLink) {
    const std::string base = "dp=8,microbatch=2,batch=64,zero=1";
    const sc::TrainingEstimate plain = Estimate(base, "gb200-nvl72");
    // A few layers over GB200's NVLink-C2C (nvbandwidth: 193 GB/s out, 201 in) hide behind the others' compute.
    const sc::TrainingEstimate few = Estimate(base + ",offload_layers=8", "gb200-nvl72");
    EXPECT_EQ(few.step.offload, 0);
    EXPECT_DOUBLE_EQ(few.step_seconds, plain.step_seconds);
    EXPECT_TRUE(few.host_link.measured);
    EXPECT_EQ(few.host_link.out_gbps, 193);
    EXPECT_EQ(few.host_link.in_gbps, 201);
    EXPECT_LT(few.memory_peak, plain.memory_peak);
    // All but the last: every copy is on the critical path (the closed form above), for each of the M microbatches.
    const sc::TrainingEstimate all = Estimate(base + ",offload_layers=31", "gb200-nvl72");
    const double host = all.memory[0].host_activations, M = 64 / (8 * 2);
    EXPECT_NEAR(all.step.offload, M * host * (1 / 193e9 + 1 / 201e9), 1e-9 * all.step.offload);
    EXPECT_NEAR(all.step_seconds, plain.step_seconds + all.step.offload, 1e-9 * all.step_seconds);
    // A stated rate replaces the measurement, in both directions.
    sc::TrainingOptions slow;
    slow.host_link_gbps = 25;
    const sc::TrainingEstimate stated = Estimate(base + ",offload_layers=31", "gb200-nvl72", slow);
    EXPECT_FALSE(stated.host_link.measured);
    EXPECT_NEAR(stated.step.offload, M * host * 2 / 25e9, 1e-9 * stated.step.offload);
}

TEST(ActivationOffload, APartWithoutAMeasuredHostLinkNeedsItStated) {
    const std::string spec = "dp=8,microbatch=2,batch=64,offload_layers=4";
    const std::string e = sctest::ErrorOf([&] { Estimate(spec, "dgx-b200-superpod"); });
    EXPECT_EQ(e.rfind("offload_layers: CPU activation offloading copies over the host link, and b200 has no measured "
                      "host-link rate (measured: ",
                      0),
              0u)
        << e;
    EXPECT_NE(e.find("gb200"), std::string::npos) << e;
    EXPECT_NE(e.find("state one with --options host_link_gbps=<GB/s>"), std::string::npos) << e;
    sc::TrainingOptions stated;
    stated.host_link_gbps = 55;
    EXPECT_GE(Estimate(spec, "dgx-b200-superpod", stated).step.offload, 0);
    stated.host_link_gbps = -1;
    EXPECT_EQ(sctest::ErrorOf([&] { Estimate(spec, "dgx-b200-superpod", stated); }),
              "host_link_gbps: must be >= 0 GB/s each way (0: the part's measured host link), got -1");
}

TEST(ActivationOffload, TheCliPrintsTheHostMemoryAndTheTerm) {
    const sctest::CliResult r = sctest::RunCli(
        "estimate --model llama3-8b --system gb200-nvl72 --gpus 8 --parallel dp=8,microbatch=2,batch=64,offload_layers=31");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("activation offload"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("31 layers' activations in host memory, over 193 GB/s out, 201 in (azure-host-device"),
              std::string::npos)
        << r.out;
    const sctest::CliResult j = sctest::RunCli(
        "estimate --json --model llama3-8b --system gb200-nvl72 --gpus 8 --parallel "
        "dp=8,microbatch=2,batch=64,offload_layers=31");
    ASSERT_EQ(j.status, 0) << j.out;
    EXPECT_NE(j.out.find("\"offload\":"), std::string::npos);
    EXPECT_NE(j.out.find("\"host_activations\":"), std::string::npos);
    EXPECT_NE(j.out.find("\"host_link\":"), std::string::npos);
}

}  // namespace

namespace {

// The small GPT (4 layers) on one GPU, two microbatches, its first `n` layers offloaded.
sc::Job SmallJob(int n) {
    return sc::MakeJob(sctest::SmallGpt(),
                       sc::ParseParallelSpec("microbatch=1,batch=2,offload_layers=" + std::to_string(n)));
}

TEST(ActivationOffload, TheTracesCopyEachOffloadedLayerOutAndBackIn) {
    const sc::Job job = SmallJob(2);
    const sc::StageProgram prog = sc::BuildStageProgram(job, 0);
    const double host = sc::StageMemoryOf(job, 0).host_activations;
    ASSERT_GT(host, 0);
    double out = 0, in = 0;
    int stores = 0, loads = 0;
    for (size_t i = 0; i < prog.nodes.size(); ++i) {
        const sc::ProgNode& n = prog.nodes[i];
        const std::string& name = prog.names[n.name];
        if (n.type == sc::EtNodeType::mem_store) {
            ++stores, out += n.bytes;
            EXPECT_NE(name.find(".offload.copy_out"), std::string::npos) << name;
        }
        if (n.type == sc::EtNodeType::mem_load) {
            ++loads, in += n.bytes;
            EXPECT_NE(name.find(".offload.copy_in"), std::string::npos) << name;
        }
    }
    // Two layers out and back in, for each of the two microbatches: the memory model's host bytes each time.
    EXPECT_EQ(stores, 4);
    EXPECT_EQ(loads, 4);
    EXPECT_NEAR(out, 2 * host, 2);
    EXPECT_NEAR(in, 2 * host, 2);
    // The schedule's waits, in the first microbatch: layer 2's forward waits for layer 0's copy out (L - N = 2
    // layers later), and layer 1's backward for its copy in, which starts before layer 2's backward (L - 1 - N = 1
    // layer earlier), after layer 3's.
    auto first = [&](const std::string& prefix, sc::NodeRole role, sc::EtNodeType type = sc::EtNodeType::comp) {
        for (size_t i = 0; i < prog.nodes.size(); ++i)
            if (prog.nodes[i].type == type && prog.nodes[i].role == role &&
                prog.names[prog.nodes[i].name].rfind(prefix, 0) == 0)
                return i;
        return prog.nodes.size();
    };
    auto depends = [&](size_t node, size_t on) {
        const sc::ProgNode& n = prog.nodes[node];
        for (uint32_t d = 0; d < n.dep_count; ++d)
            if (prog.deps[n.dep_begin + d] == on) return true;
        return false;
    };
    const size_t out0 = first("L0.offload", sc::NodeRole::forward, sc::EtNodeType::mem_store);
    const size_t in1 = first("L1.offload", sc::NodeRole::backward, sc::EtNodeType::mem_load);
    ASSERT_LT(out0, prog.nodes.size());
    ASSERT_LT(in1, prog.nodes.size());
    EXPECT_TRUE(depends(first("L2.", sc::NodeRole::forward), out0));
    EXPECT_TRUE(depends(first("L1.", sc::NodeRole::backward), in1));
    EXPECT_LT(in1, first("L2.", sc::NodeRole::backward));
    EXPECT_GT(in1, first("L3.", sc::NodeRole::backward));
    // No offload, no copies.
    for (const sc::ProgNode& n : sc::BuildStageProgram(SmallJob(0), 0).nodes)
        EXPECT_TRUE(n.type != sc::EtNodeType::mem_store && n.type != sc::EtNodeType::mem_load);
}

TEST(ActivationOffload, TheSummaryCountsTheCopiesAndTheHostBytes) {
    const sc::Job job = SmallJob(2);
    const sc::TraceSummary s = sc::SummarizeJob(job);
    ASSERT_EQ(s.classes.size(), 1u);
    const sc::RankClass& c = s.classes[0];
    const double host = sc::StageMemoryOf(job, 0).host_activations;
    EXPECT_EQ(c.host_copies, 2u * 2 * 2);  // 2 layers, out and back, 2 microbatches
    EXPECT_NEAR(c.host_copy_bytes, 2 * 2 * host, 4);
    EXPECT_EQ(c.memory.host_activations, host);
    const std::string text = sc::SummaryReportText(job, s);
    EXPECT_NE(text.find(", 8 host copies\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  activation offload: 8 copies to and from host memory ("), std::string::npos) << text;
    EXPECT_NE(text.find("  in host memory: "), std::string::npos) << text;
}

TEST(ActivationOffload, TheReplayedTracesWaitWhatTheEstimateCharges) {
    // A slow host link and every layer but the last offloaded: each copy is on the critical path (the closed form
    // above), in the estimate and in the replay of the traces alike.
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::TrainingOptions opt;
    opt.host_link_gbps = 0.5;
    std::vector<sc::StageProgram> progs;
    const double plain = sctest::ReplayedPipelineSeconds(SmallJob(0), sys, opt, progs);
    const sc::Job job = SmallJob(3);
    const double off = sctest::ReplayedPipelineSeconds(job, sys, opt, progs);
    const sc::TrainingEstimate e = sc::EstimateTraining(job, sys, nullptr, opt);
    const double closed = 2 * sc::StageMemoryOf(job, 0).host_activations * 2 / 0.5e9;
    EXPECT_NEAR(e.step.offload, closed, 1e-9 * closed);
    EXPECT_NEAR(off - plain, closed, 1e-6 * closed);
    // A fast link: the copies hide in the replay as in the estimate.
    opt.host_link_gbps = 1e5;
    const double fast = sctest::ReplayedPipelineSeconds(SmallJob(2), sys, opt, progs);
    EXPECT_EQ(sc::EstimateTraining(SmallJob(2), sys, nullptr, opt).step.offload, 0);
    EXPECT_NEAR(fast, sctest::ReplayedPipelineSeconds(SmallJob(0), sys, opt, progs), 1e-9);
}

TEST(ActivationOffload, TracesKeepAstraSimsRules) { sctest::ExpectTracesKeepAstraSimsRules(SmallJob(2), "offload"); }

}  // namespace

namespace {

// Llama 3 70B in FP8 on 64 GB200 or B200 with Megatron-Bridge's FSDP layout, microbatch 2: it fits only offloaded.
sc::SearchResult SearchFsdp(const std::string& system, bool offload, double host_link_gbps = 0) {
    sc::ModelConfig m = sctest::LoadModelPreset("llama3-70b.json");
    m.precision.compute = sc::Precision::fp8;
    m.seq = 8192;
    sc::SearchRequest req;
    req.gpus = 64, req.batch = 256, req.top_k = 5;
    req.space.tp = {1}, req.space.pp = {1}, req.space.cp = {1}, req.space.microbatch = {2};
    req.space.recompute = {sc::Recompute::none}, req.space.zero = {3};
    req.space.offload = offload;
    sc::TrainingOptions opt;
    opt.host_link_gbps = host_link_gbps;
    return sc::SearchLayouts(m, sctest::LoadSystemPreset(system), &sctest::MeasuredCalibration(), opt, req);
}

TEST(ActivationOffload, TheSearchOffloadsTheFewestLayersThatFit) {
    const sc::SearchResult r = SearchFsdp("gb200-nvl72", true);
    ASSERT_EQ(r.top.size(), 1u);
    const sc::ParallelConfig& p = r.top[0].par;
    ASSERT_GT(p.offload_layers, 0);
    EXPECT_TRUE(r.top[0].estimate.fits);
    // The fewest: one layer fewer does not fit.
    sc::ModelConfig m = sctest::LoadModelPreset("llama3-70b.json");
    m.precision.compute = sc::Precision::fp8;
    m.seq = 8192;
    sc::ParallelConfig fewer = p;
    fewer.offload_layers = p.offload_layers - 1;
    const sc::System gb200 = sctest::LoadSystemPreset("gb200-nvl72");
    EXPECT_GT(sc::StageMemoryOf(sc::MakeJob(m, fewer), 0).total(), gb200.accelerator.MemoryBytes());
    // The same estimate as the layout given by hand.
    const sc::TrainingEstimate e =
        sc::EstimateTraining(sc::MakeJob(m, p), gb200, &sctest::MeasuredCalibration(), sc::TrainingOptions{});
    EXPECT_EQ(e.step_seconds, r.top[0].estimate.step_seconds);
    // Without offloading nothing of this space fits.
    EXPECT_TRUE(SearchFsdp("gb200-nvl72", false).top.empty());
    // B200 has no measured host link: no layout offloads unless the rate is stated.
    EXPECT_TRUE(SearchFsdp("dgx-b200-superpod", true).top.empty());
    const sc::SearchResult stated = SearchFsdp("dgx-b200-superpod", true, 55);
    ASSERT_EQ(stated.top.size(), 1u);
    EXPECT_GT(stated.top[0].par.offload_layers, 0);
}

TEST(ActivationOffload, TheCliSearchTakesOffloadOnOrOff) {
    const std::string args =
        "search --model llama3-70b --precision fp8 --set seq=8192 --system gb200-nvl72 --gpus 64 --batch 256 --tp 1 "
        "--pp 1 --cp 1 --microbatch 2 --recompute none --zero 3 --top 1";
    const sctest::CliResult on = sctest::RunCli(args);
    EXPECT_EQ(on.status, 0) << on.out;
    EXPECT_NE(on.out.find("offload_layers="), std::string::npos) << on.out;
    const sctest::CliResult bad = sctest::RunCli(args + " --offload maybe");
    EXPECT_NE(bad.out.find("--offload: expected on or off, got \"maybe\""), std::string::npos) << bad.out;
}

}  // namespace
