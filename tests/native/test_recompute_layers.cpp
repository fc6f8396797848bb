// Full recomputation's block method (`recompute_layers=N`, Megatron-Core --recompute-method block
// --recompute-num-layers N): the key's rules, the recompute time and the activations of a chunk in closed form
// (N layers at full recomputation's, the rest at none's), the layer kinds of a chunk taken in order (a MoE model's
// leading dense layer is among its first N), and the trace charging what the estimate charges.
#include <gtest/gtest.h>

#include <string>

#include "parallel/job.h"
#include "parallel/memory.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace_test_util.h"
#include "training/estimate.h"

namespace {

std::string SpecError(const std::string& spec) {
    return sctest::ErrorOf([&] { sc::MakeJob(sctest::SmallMoe(), sc::ParseParallelSpec(spec)); });
}

TEST(RecomputeLayers, KeyIsStrictAndRoundTrips) {
    const sc::ParallelConfig p = sc::ParseParallelSpec("dp=2,recompute_layers=3");
    EXPECT_EQ(p.recompute, sc::Recompute::full);  // naming the count is enough
    EXPECT_EQ(p.recompute_layers, 3);
    const std::string spec = sc::ParallelSpecString(p);
    EXPECT_NE(spec.find(",recompute_layers=3"), std::string::npos) << spec;
    EXPECT_EQ(sc::ParseParallelSpec(spec).recompute_layers, 3);
    EXPECT_EQ(sc::ParallelSpecString(sc::ParseParallelSpec("recompute=full")).find("recompute_layers"),
              std::string::npos);
    EXPECT_EQ(SpecError("recompute=full,recompute_layers=2"), "");
    EXPECT_EQ(SpecError("recompute_layers=0"), "recompute_layers: must be a positive integer, got \"0\"");
    std::string e = SpecError("recompute=selective,recompute_layers=2");
    EXPECT_NE(e.find("recompute_layers: recompute_layers=2 is Megatron's block method of full recomputation; "
                     "recompute=selective was given"),
              std::string::npos)
        << e;
    sc::ParallelConfig q;
    q.recompute = sc::Recompute::full, q.recompute_layers = -1;
    e = sctest::ErrorOf([&] { sc::MakeJob(sctest::SmallMoe(), q); });
    EXPECT_NE(e.find("recompute_layers: recompute_layers=-1 is negative"), std::string::npos) << e;
}

sc::TrainingEstimate Estimate(const sc::ModelConfig& m, const std::string& spec) {
    static const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    return sc::EstimateTraining(sc::MakeJob(m, sc::ParseParallelSpec(spec)), sys, &sctest::MeasuredCalibration(), {});
}

TEST(RecomputeLayers, RecomputeTimeAndActivationsOfAChunkInClosedForm) {
    // SmallGpt: 4 identical dense layers on one stage. N of them re-run their forward: N/4 of full recomputation's
    // time; they keep full recomputation's bytes, the others none's.
    const sc::ModelConfig m = sctest::SmallGpt();
    const std::string base = "tp=1,dp=1,microbatch=1,batch=2";
    const double full = Estimate(m, base + ",recompute=full").step.recompute;
    ASSERT_GT(full, 0);
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec(base));
    const auto saved = [&](sc::Recompute rc) {
        return job.sums[static_cast<int>(sc::BlockKind::dense_layer)].saved[static_cast<int>(rc)];
    };
    const double act_none = sc::StageMemoryOf(job, 0).activations;
    for (int n : {1, 2, 3}) {
        const std::string spec = base + ",recompute_layers=" + std::to_string(n);
        EXPECT_NEAR(Estimate(m, spec).step.recompute, n * full / 4, 1e-12 * full) << n;
        const sc::Job jn = sc::MakeJob(m, sc::ParseParallelSpec(spec));
        // The layers' bytes, and one layer's re-run working set (what full recomputation adds back while it runs).
        const double dropped = n * (saved(sc::Recompute::none) - saved(sc::Recompute::full));
        const double working = saved(sc::Recompute::none) - saved(sc::Recompute::full);
        EXPECT_NEAR(sc::StageMemoryOf(jn, 0).activations, act_none - dropped + working, 1e-6 * act_none) << n;
    }
    // As many layers as the chunk has, or more: full recomputation itself.
    for (int n : {4, 9})
        EXPECT_DOUBLE_EQ(Estimate(m, base + ",recompute_layers=" + std::to_string(n)).step_seconds,
                         Estimate(m, base + ",recompute=full").step_seconds)
            << n;
}

TEST(RecomputeLayers, TheFirstLayersOfEachChunkInOrder) {
    // SmallMoe: layer 0 dense, layers 1-3 MoE. On pp=2 x vp=2 each chunk holds one layer; on pp=1 the first layer
    // is the dense one, so recompute_layers=1 re-runs exactly the dense layer's forward.
    const sc::ModelConfig m = sctest::SmallMoe();
    const std::string one = "tp=1,dp=1,microbatch=1,batch=2";
    const double dense_only = Estimate(m, one + ",recompute_layers=1").step.recompute;
    const sc::ModelConfig dense_model = [&] {
        sc::ModelConfig d = m;
        d.moe = {};
        d.layers = 1;
        return d;
    }();
    EXPECT_NEAR(dense_only, Estimate(dense_model, one + ",recompute=full").step.recompute, 1e-9 * dense_only);
    // One layer a chunk: recompute_layers=1 is full recomputation.
    const std::string chunks = "tp=1,pp=2,dp=1,microbatch=1,batch=4,schedule=interleaved,vstages=2";
    EXPECT_DOUBLE_EQ(Estimate(m, chunks + ",recompute_layers=1").step_seconds,
                     Estimate(m, chunks + ",recompute=full").step_seconds);
}

TEST(RecomputeLayers, TheTraceChargesWhatTheEstimateCharges) {
    for (const char* spec :
         {"tp=2,sp=1,ep=2,dp=2,batch=4,recompute_layers=2", "tp=2,sp=1,dp=2,batch=4,recompute_layers=1"}) {
        const sc::Job job = sc::MakeJob(sctest::SmallMoe(), sc::ParseParallelSpec(spec));
        const double charged = sctest::ChargedComputeEqualsTraceCompute(job);
        EXPECT_GT(charged, 0) << spec;
    }
    // Recompute FLOPs in the trace: 2 of 4 layers' forwards.
    const sc::Job half = sc::MakeJob(sctest::SmallGpt(), sc::ParseParallelSpec("tp=1,dp=1,batch=1,recompute_layers=2"));
    const sc::Job all = sc::MakeJob(sctest::SmallGpt(), sc::ParseParallelSpec("tp=1,dp=1,batch=1,recompute=full"));
    const auto recompute_flops = [](const sc::Job& j) {
        const sc::StageProgram prog = sc::BuildStageProgram(j, 0);
        double f = 0;
        for (const auto& n : prog.nodes)
            if (n.role == sc::NodeRole::recompute) f += n.flops;
        return f;
    };
    EXPECT_NEAR(recompute_flops(half), recompute_flops(all) / 2, 1e-9 * recompute_flops(all));
}

TEST(RecomputeLayers, TracesKeepAstraSimsRules) {
    const sc::Job job = sc::MakeJob(
        sctest::SmallMoe(), sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1,recompute_layers=1"));
    sctest::ExpectTracesKeepAstraSimsRules(job, "recompute-layers");
}

}  // namespace
