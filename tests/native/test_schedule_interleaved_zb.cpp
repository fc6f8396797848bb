// Interleaved zero bubble (schedule=interleaved_zb): PyTorch's ScheduleInterleavedZeroBubble
// (torch.distributed.pipelining, the ZB1P schedule of Qi et al. 2024 over interleaved chunks, torchtitan's
// "InterleavedZeroBubble"): the order each rank runs, its validation, memory and bubble against interleaved 1F1B,
// and the estimate's bubble, a replay of its steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "config/hardware_config.h"
#include "parallel/job.h"
#include "parallel/memory.h"
#include "parallel/schedule.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace/stage_program.h"
#include "trace_test_util.h"
#include "training/estimate.h"
#include "training/pipeline_replay.h"
#include "training/search.h"

namespace {

sc::ParallelConfig InterleavedZb(int pp, int v, int M) {
    return sc::ParseParallelSpec("pp=" + std::to_string(pp) + ",vstages=" + std::to_string(v) +
                                 ",batch=" + std::to_string(M) + ",schedule=interleaved_zb");
}

TEST(InterleavedZb, RunsPyTorchsOrder) {
    // _get_1f1b_rank_ops with enable_zero_bubble, written out by hand for 2 ranks, 2 chunks and 4 microbatches.
    // Rank r: (v-1) pp + pp-1-r warm-up forwards, the k-th of chunk (k / pp) % v; then a forward and an input half
    // per op, the input half's chunk v-1 - ((k - warm-up) / pp) % v, and from the (r+1)-th op on the weight half of
    // the oldest input half not yet weighed; the input halves left, each with its weight half; the weight halves
    // left.
    const sc::ParallelConfig p = InterleavedZb(2, 2, 4);
    EXPECT_EQ(sctest::StepOrder(p, 0),
              "F0.0 F0.1 F1.0 F1.1 I1.0 W1.0 F0.2 I1.1 W1.1 F0.3 I0.0 W0.0 F1.2 I0.1 W0.1 F1.3 I1.2 W1.2 I1.3 W1.3 "
              "I0.2 W0.2 I0.3 W0.3");
    EXPECT_EQ(sctest::StepOrder(p, 1),
              "F0.0 F0.1 F1.0 I1.0 F1.1 I1.1 W1.0 F0.2 I0.0 W1.1 F0.3 I0.1 W0.0 F1.2 I1.2 W0.1 F1.3 I1.3 W1.2 I0.2 "
              "W1.3 I0.3 W0.2 W0.3");
}

TEST(InterleavedZb, EveryStepOnceInOrderAndItsPeakAsWalked) {
    for (int pp : {2, 4, 8})
        for (int v : {2, 3})
            for (int M : {pp, 2 * pp, 5 * pp}) {
                const sc::ParallelConfig p = InterleavedZb(pp, v, M);
                for (int s = 0; s < pp; ++s) {
                    std::vector<int> f(static_cast<size_t>(M) * v, -1), b(f), w(f);
                    int i = 0, alive = 0, peak = 0;
                    for (const sc::PipelineStep& st : sc::PipelineSchedule(p, s)) {
                        ASSERT_TRUE(st.chunk >= 0 && st.chunk < v);
                        ASSERT_TRUE(st.forward || st.weight || st.split) << "every backward is split";
                        int& slot = (st.forward ? f : st.weight ? w : b)[st.chunk * M + st.microbatch];
                        EXPECT_EQ(slot, -1) << "pp=" << pp << " stage " << s << " runs a step twice";
                        slot = i++;
                        alive += st.forward ? 1 : st.weight ? -1 : 0;
                        peak = std::max(peak, alive);
                    }
                    for (int k = 0; k < M * v; ++k) {
                        EXPECT_TRUE(f[k] >= 0 && f[k] < b[k] && b[k] < w[k]) << "pp=" << pp << " stage " << s;
                        if (k % M) {  // a chunk's microbatches in order
                            EXPECT_LT(f[k - 1], f[k]);
                            EXPECT_LT(b[k - 1], b[k]);
                        }
                    }
                    const std::vector<double> unit(v, 1.0);
                    EXPECT_EQ(sc::PeakInFlight(p, s, unit.data()).inflight, peak) << "pp=" << pp << " stage " << s;
                }
            }
}

TEST(InterleavedZb, ClearErrorsForWhatTheScheduleCannotRun) {
    const sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    auto err = [&](const std::string& spec) {
        try {
            sc::MakeJob(m, sc::ParseParallelSpec(spec));
            return std::string();
        } catch (const sc::Error& e) {
            return std::string(e.what());
        }
    };
    EXPECT_EQ(err("pp=4,batch=8,schedule=interleaved_zb"), "");  // vstages 2 unless given
    EXPECT_EQ(sc::ParseParallelSpec("pp=4,batch=8,schedule=interleaved_zb").vstages, 2);
    EXPECT_EQ(err("pp=1,batch=8,schedule=interleaved_zb"),
              "vstages: interleaved_zb needs pp>=2 and vstages>=2 (got pp=1, vstages=2)");
    EXPECT_EQ(err("pp=4,batch=6,schedule=interleaved_zb"),
              "batch: interleaved_zb needs the number of microbatches (6) to be a multiple of pp=4");
}

TEST(InterleavedZb, LessBubbleThanInterleaved1F1BAndTheEstimateReplaysIt) {
    // Equal chunks, F = I = W: the weight halves fill interleaved 1F1B's drain.
    const sc::ParallelConfig zb = InterleavedZb(4, 2, 16);
    const sc::ParallelConfig one = sc::ParseParallelSpec("pp=4,vstages=2,batch=16,schedule=interleaved");
    const std::vector<sc::ChunkTimes> t(8, sc::ChunkTimes{1, 1, 1});
    const double work = 16 * 2 * 3;  // a rank's steps: 16 microbatches through 2 chunks, 3 units each
    const double zb_bubble = sc::ReplayPipeline(zb, t) - work, one_bubble = sc::ReplayPipeline(one, t) - work;
    std::printf("pp=4 v=2 M=16, F = I = W = 1: interleaved 1F1B idles %.1f, interleaved_zb %.1f\n", one_bubble,
                zb_bubble);
    // Interleaved 1F1B: (pp - 1)(F + B) / v of a rank's whole stage, 2 chunks of F + I + W = 3: 3 x 6 / 2.
    EXPECT_DOUBLE_EQ(one_bubble, 9);
    EXPECT_LT(zb_bubble, one_bubble);
    // The estimate's bubble is that replay with the chunks' own times (the step's timeline idles exactly it).
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    m.vocab = 256;
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("pp=4,vstages=2,batch=32,schedule=interleaved_zb"));
    const sc::TrainingEstimate e = sc::EstimateTraining(job, sys, nullptr, {});
    const sc::PipelineTimeline tl = sc::TimePipeline(job, sys, nullptr, {});
    EXPECT_GT(e.step.bubble, 0);
    EXPECT_NEAR(tl.Idle(tl.bottleneck_stage), e.step.bubble, 1e-9 * e.step_seconds);
    const sc::TrainingEstimate e1 = sc::EstimateTraining(
        sc::MakeJob(m, sc::ParseParallelSpec("pp=4,vstages=2,batch=32,schedule=interleaved")), sys, nullptr, {});
    EXPECT_LT(e.step.bubble, e1.step.bubble);
    EXPECT_NEAR(e.step.compute, e1.step.compute, 1e-9 * e1.step.compute);
}

TEST(InterleavedZb, TracesOfEveryRankReplayedTogetherDoNotWaitOnThemselves) {
    // Every rank's trace program, sends and receives matched across ranks, replayed together: it runs to the end
    // and takes at least the step replay's time (the traces add the pipeline transfers).
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    m.vocab = 256;
    for (int pp : {2, 4}) {
        const sc::Job job = sc::MakeJob(m, InterleavedZb(pp, 2, 2 * pp));
        std::vector<sc::StageProgram> progs;
        const double traces = sctest::ReplayedPipelineSeconds(job, sys, {}, progs);
        const sc::PipelineTimeline t = sc::TimePipeline(job, sys, nullptr, {});
        std::printf("interleaved_zb pp=%d: traces %.3f ms, step replay %.3f ms\n", pp, traces * 1e3, t.end * 1e3);
        EXPECT_GE(traces, t.end * 0.99) << "pp=" << pp;
        EXPECT_LE(traces, t.end * 1.05) << "pp=" << pp;
    }
}

TEST(InterleavedZb, TheSearchOffersItWhereItRuns) {
    for (const sc::RankedLayout& e : sctest::SearchedLayoutsOf(sc::Schedule::interleaved_zb)) {
        EXPECT_GE(e.par.pp, 2);
        EXPECT_GE(e.par.vstages, 2);
        EXPECT_EQ(e.par.microbatches() % e.par.pp, 0);
    }
}

}  // namespace
