// DualPipe (DeepSeek-V3 report, arXiv:2412.19437 Sec. 3.2.1; deepseek-ai/DualPipe): the order each rank runs,
// its validation, its memory (two chunks of parameters, pp+1 chunk-microbatches of activations, Table 2), its
// traces and replay against the paper's bubble (pp/2-1)(F&B + B - 3W), and the estimate's bubble, a replay of the
// steps, against the traces'.
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
#include "training/timeline.h"

namespace {

sc::ModelConfig Preset(const std::string& name) { return sc::ParseModelConfig(sctest::Preset(name)); }

// Every step of every rank: each microbatch of a chunk's direction gets one forward and one backward (whole, or
// an input half and later a weight half) in that order; chunk 0 runs the first half of the microbatches, fed
// from rank 0, chunk 1 the second half, fed from rank pp-1; forwards and backwards of a chunk go in microbatch
// order (the repository's FIFO chunk ids).
void CheckOrder(int pp, int M) {
    sc::ParallelConfig p =
        sc::ParseParallelSpec("pp=" + std::to_string(pp) + ",batch=" + std::to_string(M) + ",schedule=dualpipe");
    ASSERT_EQ(p.microbatches(), M);
    const int C = M / 2;
    int max_peak = 0;
    for (int s = 0; s < pp; ++s) {
        std::vector<int> f(M, -1), b(M, -1), w(M, -1);
        std::vector<bool> split(M, false);
        int i = 0, alive = 0, peak = 0, last_f[2] = {-1, -1}, last_b[2] = {-1, -1};
        for (const sc::PipelineStep& st : sc::PipelineSchedule(p, s)) {
            ASSERT_TRUE(st.chunk == 0 || st.chunk == 1);
            EXPECT_EQ(st.microbatch / C, st.chunk) << "stage " << s << " microbatch " << st.microbatch;
            int& slot = st.forward ? f[st.microbatch] : st.weight ? w[st.microbatch] : b[st.microbatch];
            EXPECT_EQ(slot, -1) << "stage " << s << " runs a step twice";
            slot = i++;
            if (st.forward) {
                EXPECT_EQ(st.microbatch, last_f[st.chunk] + (last_f[st.chunk] < 0 ? st.chunk * C + 1 : 1));
                last_f[st.chunk] = st.microbatch;
            } else if (!st.weight) {
                EXPECT_EQ(st.microbatch, last_b[st.chunk] + (last_b[st.chunk] < 0 ? st.chunk * C + 1 : 1));
                last_b[st.chunk] = st.microbatch;
                split[st.microbatch] = st.split;
            }
            alive += st.forward ? 1 : (st.weight || !st.split) ? -1 : 0;
            peak = std::max(peak, alive);
        }
        max_peak = std::max(max_peak, peak);
        for (int m = 0; m < M; ++m) {
            EXPECT_TRUE(f[m] >= 0 && f[m] < b[m]) << "stage " << s << " microbatch " << m;
            if (split[m]) {
                EXPECT_GT(w[m], b[m]) << "stage " << s << " microbatch " << m;
            } else {
                EXPECT_EQ(w[m], -1) << "stage " << s << " microbatch " << m;
            }
        }
        // The memory model's walk gives the same peak (one unit of activations per chunk).
        const double unit[2] = {1, 1};
        EXPECT_EQ(sc::PeakInFlight(p, s, unit).inflight, peak) << "stage " << s;
    }
    // Table 2: DualPipe keeps pp+1 chunk-microbatches of activations alive at most.
    EXPECT_EQ(max_peak, pp + 1) << "pp=" << pp << " M=" << M;
}

TEST(DualPipe, EveryRankRunsEachMicrobatchOfItsChunksOnceInOrder) {
    CheckOrder(2, 4);
    CheckOrder(4, 8);
    CheckOrder(8, 20);  // the report's Fig. 5: 8 ranks, 20 microbatches in two directions
    CheckOrder(8, 32);
}

TEST(DualPipe, PairsForwardsAndBackwardsInTheSteadyState) {
    // Phase 4 of the repository runs C - pp + h + 1 rounds of two overlapped pairs (F0&B1, F1&B0) on the rank of
    // half-index h (the middle ranks' first pair apart), phase 5 N - h - 1 more pairs.
    sc::ParallelConfig p = sc::ParseParallelSpec("pp=8,batch=32,schedule=dualpipe");
    const int C = 16, N = 4;
    for (int s = 0; s < 8; ++s) {
        const int h = std::min(s, 7 - s);
        const bool middle = s == 3 || s == 4;
        int paired = 0;
        std::vector<sc::PipelineStep> steps = sc::PipelineSchedule(p, s);
        for (size_t i = 0; i < steps.size(); ++i) {
            if (!steps[i].paired) continue;
            ++paired;
            ASSERT_LT(i + 1, steps.size());
            EXPECT_TRUE(steps[i].forward);
            EXPECT_FALSE(steps[i + 1].forward);  // its partner: the other chunk's backward
            EXPECT_NE(steps[i].chunk, steps[i + 1].chunk);
        }
        EXPECT_EQ(paired, 2 * (C - 8 + h + 1) - (middle ? 1 : 0) + (N - h - 1)) << "stage " << s;
    }
}

TEST(DualPipe, ClearErrorsForWhatTheScheduleCannotRun) {
    sc::ModelConfig m = Preset("llama3-8b.json");
    auto err = [&](const std::string& spec) {
        return sctest::ErrorOf([&] { sc::ValidateParallel(m, sc::ParseParallelSpec(spec)); });
    };
    EXPECT_EQ(err("pp=4,batch=8,schedule=dualpipe"), "");
    EXPECT_EQ(err("pp=1,batch=8,schedule=dualpipe"),
              "pp: DualPipe needs an even pp >= 2 (each rank holds stages i and pp-1-i; got pp=1)");
    EXPECT_EQ(err("pp=4,batch=6,schedule=dualpipe"),
              "batch: DualPipe needs an even number of microbatches, at least 2*pp = 8 (half enter from each end); "
              "batch=6 gives 6");
    EXPECT_EQ(err("pp=2,batch=5,schedule=dualpipe"),
              "batch: DualPipe needs an even number of microbatches, at least 2*pp = 4 (half enter from each end); "
              "batch=5 gives 5");
    EXPECT_EQ(err("pp=4,batch=8,schedule=dualpipe,vstages=2"),
              "vstages: vstages=2 needs schedule=interleaved or interleaved_zb");
    EXPECT_NE(err("pp=4,batch=8,schedule=dual").find("not one of gpipe, 1f1b, interleaved, zbh1, dualpipe, zbv"),
              std::string::npos);
}

TEST(DualPipe, EachRankHoldsTwoStagesOfParameters) {
    // Table 2: parameters 2x. Rank 1 of 4 holds stages 1 and 2 (no embedding or head): twice 1F1B's stage 1.
    sc::ModelConfig m = Preset("llama3-8b.json");
    sc::Job one = sc::MakeJob(m, sc::ParseParallelSpec("pp=4,batch=8"));
    sc::Job dual = sc::MakeJob(m, sc::ParseParallelSpec("pp=4,batch=8,schedule=dualpipe"));
    EXPECT_DOUBLE_EQ(sc::StageMemoryOf(dual, 1).params, 2 * sc::StageMemoryOf(one, 1).params);
    // Rank 0 holds the first and the last stage: embedding and LM head together.
    EXPECT_DOUBLE_EQ(sc::StageMemoryOf(dual, 0).params,
                     sc::StageMemoryOf(one, 0).params + sc::StageMemoryOf(one, 3).params);
    EXPECT_DOUBLE_EQ(sc::StageMemoryOf(dual, 3).params, sc::StageMemoryOf(dual, 0).params);
}

TEST(DualPipe, ReplayedBubbleIsThePapersFormula) {
    // The middle ranks idle about (pp/2-1)(F&B + B - 3W); the estimate replays the steps rather than charging the
    // paper's form, which the replay of the traces undercuts by a tenth. A tiny vocabulary keeps the embedding and
    // LM head (on ranks 0 and pp-1) from making chunks unequal.
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::ModelConfig m = Preset("llama3-8b.json");
    m.vocab = 256, m.seq = 2048, m.layers = 32;
    for (int pp : {4, 8}) {
        const int M = 2 * pp;
        const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("pp=" + std::to_string(pp) +
                                                                 ",batch=" + std::to_string(M) + ",schedule=dualpipe"));
        sctest::ExpectDualPipeBubble(job, sys, pp / 2 - 1, M, pp / 2 - 1);
    }
}

TEST(DualPipe, OnlyPairedStepsTakeThePairsTimes) {
    // A forward of 1, a backward of 2 (input 1.5, weight 0.5), and a pair F&B of pf + pb where the two would take 3
    // apart (the pair hides each chunk's all-to-all behind the other's compute); warm-up and cool-down steps run
    // alone, with theirs.
    const auto times = [](const sc::ParallelConfig& p, double pf, double pb) {
        return std::vector<sc::ChunkTimes>(static_cast<size_t>(2 * p.pp), sc::ChunkTimes{1, 1.5, 0.5, pf, pb});
    };
    // pp = 2, M = 4, by hand: rank 0 runs F0(0) F1(2) F0(1) B1(2) [F1(3) B0(0)] B1(3) B0(1)i W0(1), rank 1 the
    // mirror; each runs one pair, its first forward of the steady state (the ranks by the middle run the first
    // pair apart), which waits for nothing, so both finish at 9 + pf + pb and neither idles.
    const sc::ParallelConfig two = sc::ParseParallelSpec("pp=2,batch=4,schedule=dualpipe");
    const sc::PipelineReplayTimes r2 = sc::ReplayPipelineTimes(two, times(two, 0.6, 1.2));
    EXPECT_DOUBLE_EQ(r2.end, 10.8);
    EXPECT_DOUBLE_EQ(r2.busy[0], 10.8);
    EXPECT_DOUBLE_EQ(r2.busy[1], 10.8);
    EXPECT_DOUBLE_EQ(sc::ReplayPipeline(two, times(two, 1, 2)), 12);  // pairs that hide nothing: 3 M
    // Any pp: each rank computes 3 M less what its pairs save, and no more.
    for (int pp : {4, 8}) {
        const int M = 4 * pp;
        const sc::ParallelConfig p =
            sc::ParseParallelSpec("pp=" + std::to_string(pp) + ",batch=" + std::to_string(M) + ",schedule=dualpipe");
        const sc::PipelineReplayTimes r = sc::ReplayPipelineTimes(p, times(p, 0.6, 1.2));
        for (int s = 0; s < pp; ++s) {
            int pairs = 0;
            for (const sc::PipelineStep& st : sc::PipelineSchedule(p, s)) pairs += st.paired ? 1 : 0;
            EXPECT_GT(pairs, 0);
            EXPECT_NEAR(r.busy[s], 3 * M - 1.2 * pairs, 1e-9) << "pp=" << pp << " stage " << s;
            EXPECT_GE(r.end, r.busy[s]);
        }
    }
}

TEST(DualPipe, EstimateBubbleIsWithinThePapersBoundsAndPairsHideTheAllToAll) {
    sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::TrainingOptions opt;
    sc::ModelConfig m = Preset("llama3-8b.json");
    m.vocab = 256, m.layers = 32;
    // A dense model has no all-to-all: DualPipe runs the same work as 1F1B in (pp/2-1)(F&B + B - 3W) of bubble
    // instead of (pp-1)(F + B + W); pp = 2 has none.
    sc::TrainingEstimate one =
        sc::EstimateTraining(sc::MakeJob(m, sc::ParseParallelSpec("pp=8,batch=16")), sys, nullptr, opt);
    sc::TrainingEstimate dual = sc::EstimateTraining(
        sc::MakeJob(m, sc::ParseParallelSpec("pp=8,batch=16,schedule=dualpipe")), sys, nullptr, opt);
    // (The same work: rank 0 holds the embedding and the LM head, 1F1B's bottleneck the head alone.)
    EXPECT_NEAR(dual.step.compute, one.step.compute, 0.01 * one.step.compute);
    EXPECT_LT(dual.step.bubble, one.step.bubble / 2);
    EXPECT_GT(dual.step.bubble, 0);
    sc::TrainingEstimate two = sc::EstimateTraining(
        sc::MakeJob(m, sc::ParseParallelSpec("pp=2,batch=4,schedule=dualpipe")), sys, nullptr, opt);
    EXPECT_EQ(two.step.bubble, 0);
    // With T = F + B + W of one chunk (1F1B's bubble / (pp-1) on equal stages) and W, B of the split:
    // the paper's (pp/2 - 1)(T + B - 3W) bounds DualPipe's from T - 3W (B = 0) to 2T - 3W (W = 0).
    const double T = one.step.bubble / 7;
    EXPECT_LE(dual.step.bubble, 3 * (2 * T) + 1e-12);
    EXPECT_GE(dual.step.bubble, 3 * (T - 3 * (T / 3)) - 1e-12);

    // MoE: the all-to-all of a chunk hides behind the other chunk's compute in the overlapped pairs; 1F1B
    // exposes all of it.
    sc::ModelConfig moe = Preset("deepseek-v3.json");
    moe.layers = 16, moe.moe.dense_layers = 1;
    // 32 microbatches: 27 of each rank's 32 forwards run paired (the rest fill and drain the pipeline).
    const std::string split = "tp=1,pp=4,dp=8,ep=8,batch=256";
    sc::TrainingEstimate moe1 = sc::EstimateTraining(sc::MakeJob(moe, sc::ParseParallelSpec(split)), sys, nullptr, opt);
    sc::TrainingEstimate moed =
        sc::EstimateTraining(sc::MakeJob(moe, sc::ParseParallelSpec(split + ",schedule=dualpipe")), sys, nullptr, opt);
    ASSERT_GT(moe1.step.ep_comm, 0);
    EXPECT_LT(moed.step.ep_comm, 0.5 * moe1.step.ep_comm);
    EXPECT_GT(moed.step.comm_sms, moe1.step.comm_sms);  // the communication kernels' 20 SMs
    // ... charged to the step: the same run on an accelerator that publishes no SM count (no term) computes for
    // exactly comm_sms less (and for the SMs its overlapped DP collectives hold, dp_comm_sms).
    sc::System no_sms = sys;
    no_sms.accelerator.sm_count = 0;
    const sc::TrainingEstimate free = sc::EstimateTraining(
        sc::MakeJob(moe, sc::ParseParallelSpec(split + ",schedule=dualpipe")), no_sms, nullptr, opt);
    EXPECT_EQ(free.step.comm_sms, 0);
    EXPECT_EQ(free.step.dp_comm_sms, 0);
    const double sms = moed.step.comm_sms + moed.step.dp_comm_sms;
    EXPECT_NEAR(moed.step.compute - free.step.compute, sms, 1e-9 * moed.step.compute);
    EXPECT_NEAR(moed.step_seconds - free.step_seconds, sms, 1e-9 * moed.step_seconds);
    std::printf(
        "deepseek-v3 16 layers pp4 ep8: 1f1b step %.3f s (ep %.3f, bubble %.3f), dualpipe %.3f s (ep %.3f, "
        "bubble %.3f, comm SMs %.3f)\n",
        moe1.step_seconds, moe1.step.ep_comm, moe1.step.bubble, moed.step_seconds, moed.step.ep_comm, moed.step.bubble,
        moed.step.comm_sms);
}

}  // namespace
