// DualPipeV (deepseek-ai/DualPipe dualpipe/dualpipev.py: DualPipe cut in half onto ZB-V's V): the order each rank
// runs, its validation and memory (one copy of the parameters, 2*pp+1 chunk-microbatches of activations), the
// traces of every rank replayed together against the repository's bubble (PP/2-1)(F&B + B - 3W) for its PP = 2*pp
// stages and against the estimate's replay of its steps.
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
#include "training/search.h"
#include "training/timeline.h"

namespace {

sc::ParallelConfig DualPipeV(int pp, int M) {
    return sc::ParseParallelSpec("pp=" + std::to_string(pp) + ",batch=" + std::to_string(M) + ",schedule=dualpipev");
}

TEST(DualPipeV, RunsTheRepositorysOrder) {
    // DualPipeV.step's eight phases written out by hand for 2 ranks and 4 microbatches. Rank 0: 1 nF0 (2), 2 nF0F1
    // (1), 3 nB1W1F1 (1, zero-bubble), 4 nF0B1F1B0 (1: two pairs), 5 nB1F1B0 (1), 6 nB1B0 (1; rank 0 turns zero-bubble
    // on before its B0), 7 nWB0 (1), 8 nW. Rank 1, the last: 2 nF0F1 (2), 4 (2, the first F0 and B1 apart), 6 (2,
    // zero-bubble from the second round), 8.
    const sc::ParallelConfig p = DualPipeV(2, 4);
    EXPECT_EQ(sctest::StepOrder(p, 0),
              "F0.0 F0.1 F0.2 F1.0 I1.0 W1.0 F1.1 F0.3& B1.1 F1.2& B0.0 B1.2 F1.3& B0.1 B1.3 I0.2 W0.2 "
              "I0.3 W0.3");
    EXPECT_EQ(sctest::StepOrder(p, 1),
              "F0.0 F1.0 F0.1 F1.1 F0.2 B1.0 F1.2& B0.0 F0.3& B1.1 F1.3& B0.1 B1.2 B0.2 I1.3 I0.3 W1.3 "
              "W0.3");
}

TEST(DualPipeV, EveryRankRunsEachMicrobatchDownAndBackUpOnceAndHoldsTwicePpPlusOne) {
    for (int pp : {2, 3, 4, 8})
        for (int M : {2 * pp, 2 * pp + 1, 5 * pp}) {
            const sc::ParallelConfig p = DualPipeV(pp, M);
            int max_peak = 0;
            for (int s = 0; s < pp; ++s) {
                // Index of each step per chunk and microbatch: forward, backward (whole or input half), weight half.
                std::vector<int> f[2], b[2], w[2];
                for (int c = 0; c < 2; ++c) f[c].assign(M, -1), b[c].assign(M, -1), w[c].assign(M, -1);
                std::vector<bool> split[2] = {std::vector<bool>(M), std::vector<bool>(M)};
                int i = 0, alive = 0, peak = 0, next_f[2] = {0, 0}, next_b[2] = {0, 0};
                for (const sc::PipelineStep& st : sc::PipelineSchedule(p, s)) {
                    const int c = st.chunk, m = st.microbatch;
                    ASSERT_TRUE((c == 0 || c == 1) && m >= 0 && m < M);
                    int& slot = st.forward ? f[c][m] : st.weight ? w[c][m] : b[c][m];
                    EXPECT_EQ(slot, -1) << "pp " << pp << " M " << M << " stage " << s << " runs a step twice";
                    slot = i++;
                    if (st.forward) {
                        EXPECT_EQ(m, next_f[c]++) << "forwards in microbatch order";
                    }
                    if (!st.forward && !st.weight) {
                        EXPECT_EQ(m, next_b[c]++) << "backwards in microbatch order";
                        split[c][m] = st.split;
                    }
                    alive += st.forward ? 1 : (st.weight || !st.split) ? -1 : 0;
                    peak = std::max(peak, alive);
                }
                for (int m = 0; m < M; ++m) {
                    // Down the V, back up, then the gradients down and back up: F0 < F1 < B1 < B0 on every rank.
                    EXPECT_TRUE(f[0][m] >= 0 && f[0][m] < f[1][m] && f[1][m] < b[1][m] && b[1][m] < b[0][m])
                        << "pp " << pp << " M " << M << " stage " << s << " microbatch " << m;
                    for (int c = 0; c < 2; ++c)
                        EXPECT_EQ(w[c][m] > b[c][m], split[c][m])
                            << "a weight half after its input half, and only then";
                }
                max_peak = std::max(max_peak, peak);
                const double unit[2] = {1, 1};
                EXPECT_EQ(sc::PeakInFlight(p, s, unit).inflight, peak) << "the memory model's walk, stage " << s;
            }
            // The repository's table: PP+1 chunk-microbatches of activations for its PP = 2*pp stages.
            EXPECT_EQ(max_peak, 2 * pp + 1) << "pp=" << pp << " M=" << M;
        }
}

TEST(DualPipeV, PairsForwardsWithTheOtherArmsBackwards) {
    // Phase 4 runs M - 2pp + r + 1 rounds of two pairs on rank r (the last rank's first forward apart), phase 5
    // pp - r - 1 more.
    const int pp = 4, M = 12;
    const sc::ParallelConfig p = DualPipeV(pp, M);
    for (int r = 0; r < pp; ++r) {
        const std::vector<sc::PipelineStep> steps = sc::PipelineSchedule(p, r);
        int paired = 0;
        for (size_t i = 0; i < steps.size(); ++i) {
            if (!steps[i].paired) continue;
            ++paired;
            ASSERT_LT(i + 1, steps.size());
            EXPECT_TRUE(steps[i].forward);
            EXPECT_FALSE(steps[i + 1].forward);
            EXPECT_NE(steps[i].chunk, steps[i + 1].chunk);
        }
        EXPECT_EQ(paired, 2 * (M - 2 * pp + r + 1) - (r == pp - 1 ? 1 : 0) + (pp - r - 1)) << "rank " << r;
    }
}

TEST(DualPipeV, ClearErrorsForWhatTheScheduleCannotRun) {
    const sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");  // 32 layers
    auto err = [&](const std::string& spec) {
        return sctest::ErrorOf([&] { sc::ValidateParallel(m, sc::ParseParallelSpec(spec)); });
    };
    EXPECT_EQ(err("pp=4,batch=8,schedule=dualpipev"), "");
    EXPECT_EQ(err("pp=1,batch=8,schedule=dualpipev"),
              "pp: dualpipev needs pp >= 2 (rank i holds stages i and 2*pp-1-i of a V; got pp=1)");
    EXPECT_EQ(err("pp=4,batch=7,schedule=dualpipev"),
              "batch: dualpipev needs at least 2*pp = 8 microbatches; batch=7 gives 7");
    EXPECT_EQ(err("pp=3,batch=6,schedule=dualpipev"),
              "pp: dualpipev cuts the layers into 2*pp = 6 stages, which does not divide 32 layers (or set uneven=1)");
    EXPECT_EQ(err("pp=3,batch=6,schedule=dualpipev,uneven=1"), "");
    EXPECT_NE(err("pp=4,batch=8,schedule=dual").find("zbv, dualpipev"), std::string::npos);
}

TEST(DualPipeV, HoldsOneCopyOfTheParametersAsAV) {
    // Unlike DualPipe (every stage on two ranks), rank i holds positions i and 2pp-1-i of 2pp: the parameters of
    // ZB-V's placement, and the embedding and the LM head both on rank 0.
    const sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    const sc::Job v = sc::MakeJob(m, sc::ParseParallelSpec("pp=4,batch=8,schedule=dualpipev"));
    const sc::Job zbv = sc::MakeJob(m, sc::ParseParallelSpec("pp=4,batch=8,schedule=zbv"));
    for (int s = 0; s < 4; ++s) EXPECT_DOUBLE_EQ(sc::StageMemoryOf(v, s).params, sc::StageMemoryOf(zbv, s).params);
    EXPECT_EQ(sc::PositionOf(v.par, 1, 0), 7);
    EXPECT_TRUE(sc::SameRankAfter(v.par, 3));
    EXPECT_TRUE(v.par.head_on_first_rank());
}

TEST(DualPipeV, ReplayedBubbleIsTheRepositorysFormula) {
    // The rank of no embedding or head idles about (pp-1)(F&B + B - 3W), the repository's form for its 2pp stages;
    // the estimate replays the steps rather than charging it (as for ZB-V). A tiny vocabulary keeps the embedding
    // and LM head on rank 0 from making its chunks longer.
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    m.vocab = 256, m.seq = 2048, m.layers = 32;
    for (int pp : {2, 4}) {
        const int M = 4 * pp;
        sctest::ExpectDualPipeBubble(sc::MakeJob(m, DualPipeV(pp, M)), sys, pp - 1, 2 * M, pp - 1);
    }
}

TEST(DualPipeV, TheEstimatesBubbleStaysAsMicrobatchesGrow) {
    // The estimate replays DualPipe's and DualPipeV's steps over min(M, 4pp) microbatches: beyond, the steady
    // state adds work and no bubble. Checked against a replay of 8pp: within 1% of a chunk's work.
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    m.layers = 32;
    for (const char* schedule : {"dualpipe", "dualpipev"}) {
        auto est = [&](int M) {
            return sc::EstimateTraining(
                sc::MakeJob(m, sc::ParseParallelSpec("pp=4,batch=" + std::to_string(M) + ",schedule=" + schedule)), sys,
                nullptr, sc::TrainingOptions{});
        };
        const sc::TrainingEstimate four = est(16), eight = est(32);
        const double chunk = four.step.compute / (16 * (std::string(schedule) == "dualpipe" ? 1 : 2));
        EXPECT_GT(four.step.bubble, 0) << schedule;
        EXPECT_NEAR(four.step.bubble, eight.step.bubble, 0.01 * chunk) << schedule;
    }
}

TEST(DualPipeV, EstimateHidesTheAllToAllInPairsAndKeepsOneTiedTable) {
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    const sc::TrainingOptions opt;
    auto est = [&](const sc::ModelConfig& m, const std::string& spec) {
        return sc::EstimateTraining(sc::MakeJob(m, sc::ParseParallelSpec(spec)), sys, nullptr, opt);
    };
    // Dense: the same work as ZB-V, less bubble than 1F1B; pairs have no all-to-all to hide.
    sc::ModelConfig dense = sctest::LoadModelPreset("llama3-8b.json");
    dense.vocab = 256;
    const sc::TrainingEstimate one = est(dense, "pp=4,batch=16"), v = est(dense, "pp=4,batch=16,schedule=dualpipev"),
                               zbv = est(dense, "pp=4,batch=16,schedule=zbv");
    EXPECT_NEAR(v.step.compute, zbv.step.compute, 1e-9 * zbv.step.compute);
    EXPECT_LT(v.step.bubble, one.step.bubble);
    EXPECT_GT(v.step.bubble, 0);
    EXPECT_EQ(v.step.pp_comm, zbv.step.pp_comm) << "down and back up: 2(pp-1) boundaries";
    // MoE: each pair's all-to-all runs beside the other chunk's compute, on 20 SMs of its own; ZB-V exposes it.
    sc::ModelConfig moe = sctest::LoadModelPreset("deepseek-v3.json");
    moe.layers = 16, moe.moe.dense_layers = 1;
    const std::string spec = "tp=1,pp=2,dp=16,ep=16,batch=256";
    const sc::TrainingEstimate moev = est(moe, spec + ",schedule=dualpipev"), moez = est(moe, spec + ",schedule=zbv");
    ASSERT_GT(moez.step.ep_comm, 0);
    EXPECT_LT(moev.step.ep_comm, 0.5 * moez.step.ep_comm);
    EXPECT_GT(moev.step.comm_sms, moez.step.comm_sms);
    // A tied head sits on rank 0 with the embedding: one table, no embedding all-reduce in the traces.
    dense.tied_embeddings = true;
    for (const sc::ProgNode& n : sc::BuildStageProgram(sc::MakeJob(dense, DualPipeV(4, 8)), 0).nodes)
        if (n.type == sc::EtNodeType::comm_coll) {
            EXPECT_NE(n.group, sc::GroupKind::embed);
        }
}

TEST(DualPipeV, TheSearchOffersItWhereItCanRun) {
    // Asked for dualpipev only: every layout listed runs it, with at least 2*pp microbatches and 2*pp stages that
    // divide the layers or uneven=1.
    for (const sc::RankedLayout& e : sctest::SearchedLayoutsOf(sc::Schedule::dualpipev)) {
        EXPECT_GE(e.par.pp, 2);
        EXPECT_GE(e.par.microbatches(), 2 * e.par.pp);
    }
}

}  // namespace
