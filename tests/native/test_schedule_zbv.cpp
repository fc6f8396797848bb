// ZB-V (Qi et al. 2024, "Zero Bubble Pipeline Parallelism" Sec. 6, as PyTorch's ScheduleZBVZeroBubble builds it):
// the order each rank runs, its validation and memory, the replay the estimate times it with against the papers'
// closed forms of the other schedules, and the traces of every rank replayed together against that replay.
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

sc::ModelConfig Preset(const std::string& name) { return sctest::LoadModelPreset(name); }

sc::ParallelConfig Zbv(int pp, int M) {
    return sc::ParseParallelSpec("pp=" + std::to_string(pp) + ",batch=" + std::to_string(M) + ",schedule=zbv");
}

// A rank's steps as PyTorch's rank_ops print them: F forward, I input half, W weight half, then chunk.microbatch.
std::string OrderOf(const sc::ParallelConfig& p, int stage) {
    std::string s;
    for (const sc::PipelineStep& st : sc::PipelineSchedule(p, stage)) {
        if (!s.empty()) s += ' ';
        s += st.forward ? 'F' : st.weight ? 'W' : 'I';
        s += std::to_string(st.chunk) + "." + std::to_string(st.microbatch);
    }
    return s;
}

TEST(Zbv, RunsPyTorchsOrder) {
    // From ScheduleZBVZeroBubble._calculate_single_rank_operations (pytorch torch/distributed/pipelining/
    // schedules.py), written out by hand for these ranks: rank 1 of 4 with 8 microbatches, and rank 3 of 4 with 3
    // (built for 2*pp-1 = 7 and the steps of microbatches 3-6 dropped).
    EXPECT_EQ(OrderOf(Zbv(4, 8), 1),
              "F0.0 F0.1 F0.2 F0.3 F0.4 F1.0 F0.5 F1.1 I1.0 W1.0 F1.2 I1.1 W1.1 F1.3 I1.2 W1.2 F0.6 I0.0 W0.0 F1.4 "
              "I1.3 W1.3 F0.7 I0.1 W0.1 F1.5 I1.4 W1.4 I0.2 W0.2 F1.6 I1.5 W1.5 I0.3 W0.3 F1.7 I1.6 W1.6 I0.4 I1.7 "
              "I0.5 W0.4 I0.6 W0.5 I0.7 W0.6 W1.7 W0.7");
    EXPECT_EQ(OrderOf(Zbv(4, 3), 3),
              "F0.0 F1.0 F0.1 F1.1 F0.2 F1.2 I1.0 W1.0 I0.0 W0.0 I1.1 W1.1 I0.1 W0.1 I1.2 W1.2 "
              "I0.2 W0.2");
}

TEST(Zbv, EveryRankRunsEachMicrobatchOfBothChunksOnceAndHolds1F1BsMemory) {
    for (int pp : {2, 4, 8})
        for (int M : {1, pp, 2 * pp - 1, 4 * pp + 3}) {
            const sc::ParallelConfig p = Zbv(pp, M);
            int max_peak = 0;
            for (int s = 0; s < pp; ++s) {
                std::vector<int> f(2 * M, -1), in(2 * M, -1), w(2 * M, -1);
                int i = 0, alive = 0, peak = 0;
                for (const sc::PipelineStep& st : sc::PipelineSchedule(p, s)) {
                    const int k = st.chunk * M + st.microbatch;
                    int& slot = st.forward ? f[k] : st.weight ? w[k] : in[k];
                    EXPECT_EQ(slot, -1) << "pp " << pp << " stage " << s << " runs a step twice";
                    EXPECT_TRUE(st.forward || st.weight || st.split);  // every backward is split
                    slot = i++;
                    alive += st.forward ? 1 : st.weight ? -1 : 0;
                    peak = std::max(peak, alive);
                }
                for (int k = 0; k < 2 * M; ++k)
                    EXPECT_TRUE(f[k] >= 0 && f[k] < in[k] && in[k] < w[k]) << "pp " << pp << " stage " << s;
                const double unit[2] = {1, 1};
                EXPECT_EQ(sc::PeakInFlight(p, s, unit).inflight, peak) << "pp " << pp << " stage " << s;
                max_peak = std::max(max_peak, peak);
            }
            // At most 2 pp chunk-microbatches alive: pp of a whole stage's, 1F1B's first-stage peak (Sec. 6).
            EXPECT_EQ(max_peak, std::min(2 * pp, 2 * M)) << "pp " << pp << " M " << M;
        }
}

TEST(Zbv, PositionsFormAVAndTheTurnStaysOnItsRank) {
    const sc::ParallelConfig p = Zbv(4, 8);
    EXPECT_EQ(p.active_vstages(), 2);
    EXPECT_EQ(p.pipeline_positions(), 8);
    EXPECT_EQ(sc::PositionOf(p, 0, 1), 1);
    EXPECT_EQ(sc::PositionOf(p, 1, 1), 6);
    EXPECT_EQ(sc::ForwardPeer(p, 0), +1);
    EXPECT_EQ(sc::ForwardPeer(p, 1), -1);
    for (int g = 0; g < 7; ++g) EXPECT_EQ(sc::SameRankAfter(p, g), g == 3) << g;
    EXPECT_TRUE(p.head_on_first_rank());
}

TEST(Zbv, ClearErrorsForWhatTheScheduleCannotRun) {
    sc::ModelConfig m = Preset("llama3-8b.json");
    auto err = [&](const std::string& spec) {
        return sctest::ErrorOf([&] { sc::ValidateParallel(m, sc::ParseParallelSpec(spec)); });
    };
    EXPECT_EQ(err("pp=4,batch=3,schedule=zbv"), "");
    EXPECT_EQ(err("pp=1,batch=8,schedule=zbv"),
              "pp: zbv needs pp >= 2 (rank i holds stages i and 2*pp-1-i of a V; got pp=1)");
    EXPECT_EQ(err("pp=4,batch=8,schedule=zbv,vstages=2"),
              "vstages: vstages=2 needs schedule=interleaved or interleaved_zb");
    EXPECT_EQ(err("pp=3,batch=8,schedule=zbv"),
              "pp: zbv cuts the layers into 2*pp = 6 stages, which does not divide 32 layers (or set uneven=1)");
    EXPECT_EQ(err("pp=3,batch=8,schedule=zbv,uneven=1"), "");
    EXPECT_EQ(err("pp=32,batch=8,schedule=zbv,uneven=1"), "pp: 2*pp (zbv)=64 pipeline stages exceed 32 layers");
}

// ---- The replay (training/pipeline_replay.h) against the papers' closed forms, then ZB-V against a second
// implementation: a Python list scheduler over PyTorch's rank_ops with the same rules, run by hand.

std::vector<sc::ChunkTimes> Uniform(const sc::ParallelConfig& p, sc::ChunkTimes t) {
    return std::vector<sc::ChunkTimes>(static_cast<size_t>(p.pp) * p.active_vstages(), t);
}

TEST(PipelineReplay, GivesThePapersBubblesForEqualStages) {
    // 1F1B (Narayanan et al. 2021): M (F + B) + (pp - 1)(F + B), a backward not split taking input + weight.
    const sc::ParallelConfig one = sc::ParseParallelSpec("pp=4,batch=8");
    EXPECT_DOUBLE_EQ(sc::ReplayPipeline(one, Uniform(one, {1, 1.5, 0.5})), 8 * 3 + 3 * 3);
    // GPipe: the same bubble.
    const sc::ParallelConfig gpipe = sc::ParseParallelSpec("pp=4,batch=8,schedule=gpipe");
    EXPECT_DOUBLE_EQ(sc::ReplayPipeline(gpipe, Uniform(gpipe, {1, 1.5, 0.5})), 8 * 3 + 3 * 3);
    // Interleaved over v chunks of 1/v of a stage: (pp - 1)(F + B) / v.
    const sc::ParallelConfig inter = sc::ParseParallelSpec("pp=4,batch=8,schedule=interleaved,vstages=2");
    EXPECT_DOUBLE_EQ(sc::ReplayPipeline(inter, Uniform(inter, {0.5, 0.75, 0.25})), 8 * 3 + 3 * 1.5);
    // ZB-H1 (Qi et al. 2024 Table 1): (pp - 1)(F + B - W), B the input half.
    const sc::ParallelConfig zbh1 = sc::ParseParallelSpec("pp=4,batch=8,schedule=zbh1");
    EXPECT_DOUBLE_EQ(sc::ReplayPipeline(zbh1, Uniform(zbh1, {1, 1, 1})), 8 * 3 + 3 * 1);
}

TEST(PipelineReplay, ZbvAsAnIndependentListSchedulerTimesIt) {
    const sc::ParallelConfig p = Zbv(4, 8);
    // Equal chunks: PyTorch's ZB-V idles pp - 1 steps of one unit when F = I = W ("zero bubble" only counts the
    // steady state), and more as the input half grows.
    EXPECT_DOUBLE_EQ(sc::ReplayPipeline(p, Uniform(p, {1, 1, 1})), 51);
    EXPECT_DOUBLE_EQ(sc::ReplayPipeline(p, Uniform(p, {1, 2, 1})), 70);
    EXPECT_NEAR(sc::ReplayPipeline(p, Uniform(p, {1, 1.2, 0.8})), 51.6, 1e-12);
    // Unequal chunks, [stage * 2 + chunk].
    const std::vector<sc::ChunkTimes> t = {{1.5, 2.0, 1.0},   {1.25, 2.5, 0.75}, {1.0, 1.5, 0.5}, {1.0, 1.5, 0.5},
                                           {0.75, 1.75, 1.0}, {1.0, 2.0, 0.5},   {1.0, 1.0, 1.0}, {0.5, 1.5, 1.25}};
    EXPECT_DOUBLE_EQ(sc::ReplayPipeline(Zbv(4, 3), t), 35.25);
    EXPECT_DOUBLE_EQ(sc::ReplayPipeline(Zbv(4, 8), t), 73);
    EXPECT_DOUBLE_EQ(sc::ReplayPipeline(Zbv(4, 16), t), 145);
}

TEST(PipelineReplay, TheBubbleStaysAsMicrobatchesGrow) {
    // The estimate replays min(M, 4 pp) microbatches: beyond, ZB-V's bubble over the bottleneck's work moves by
    // less than 1% of a chunk's work here (stages made unequal by the embedding and the head on rank 0).
    const std::vector<sc::ChunkTimes> t = {{1.5, 2.0, 1.0},   {1.25, 2.5, 0.75}, {1.0, 1.5, 0.5}, {1.0, 1.5, 0.5},
                                           {0.75, 1.75, 1.0}, {1.0, 2.0, 0.5},   {1.0, 1.0, 1.0}, {0.5, 1.5, 1.25}};
    double work = 0;  // the bottleneck rank's, one microbatch through both chunks
    for (int s = 0; s < 4; ++s) {
        const sc::ChunkTimes a = t[2 * s], b = t[2 * s + 1];
        work = std::max(work, a.forward + a.input + a.weight + b.forward + b.input + b.weight);
    }
    const double at16 = sc::ReplayPipeline(Zbv(4, 16), t) - 16 * work;
    for (int M : {32, 64, 128})
        EXPECT_NEAR(sc::ReplayPipeline(Zbv(4, M), t) - M * work, at16, 0.01 * work / 2) << M;  // a chunk: half
}

// Sum of the seconds of a rank's compute nodes per chunk and pass kind, per microbatch.
std::vector<sc::ChunkTimes> TraceChunkTimes(const sc::Job& job, const std::vector<sc::StageProgram>& progs,
                                            const sc::System& sys, const sc::TrainingOptions& opt) {
    const int pp = job.par.pp, M = job.par.microbatches();
    std::vector<sc::ChunkTimes> t(2 * pp);
    for (int s = 0; s < pp; ++s) {
        const std::vector<double> secs = sc::NodeSeconds(job, progs[s], sys, nullptr, opt);
        for (size_t i = 0; i < progs[s].nodes.size(); ++i) {
            const sc::ProgNode& n = progs[s].nodes[i];
            if (n.type != sc::EtNodeType::comp || n.role == sc::NodeRole::optimizer) continue;
            const std::string& name = progs[s].names[n.name];
            // Position of the node's block: the embedding is position 0 (chunk 0 of rank 0), the head position
            // 2pp-1 (chunk 1 of rank 0); layer blocks are named "L<i>.", layers split evenly over 2 pp positions.
            int chunk = 0;
            if (name.rfind("head.", 0) == 0 || name.find(".head.") != std::string::npos) chunk = 1;
            else if (name[0] == 'L' || name.rfind("recompute.L", 0) == 0) {
                const size_t at = name.find('L');
                const int layer = std::stoi(name.substr(at + 1));
                const int g = layer / (job.model.layers / (2 * pp));
                chunk = g < pp ? 0 : 1;
            }
            const bool wgrad = name.find(".wgrad") != std::string::npos;
            sc::ChunkTimes& c = t[2 * s + chunk];
            (n.role == sc::NodeRole::forward ? c.forward : wgrad ? c.weight : c.input) += secs[i] / M;
        }
    }
    return t;
}

TEST(Zbv, TracesOfEveryRankReplayedTogetherTakeWhatTheStepReplayGives) {
    // The traces (sends and receives matched across ranks, the V's turn kept on its rank) replayed together must
    // not wait on themselves and must take what the estimate's replay gives for the same chunk times, up to the
    // pipeline transfers the traces carry and the replay leaves out.
    sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::TrainingOptions opt;
    sc::ModelConfig m = Preset("llama3-8b.json");
    m.vocab = 256, m.seq = 2048, m.layers = 32;
    for (int pp : {2, 4}) {
        const int M = 3 * pp;
        sc::Job job = sc::MakeJob(m, Zbv(pp, M));
        std::vector<sc::StageProgram> progs;
        const double traces = sctest::ReplayedPipelineSeconds(job, sys, opt, progs);
        const std::vector<sc::ChunkTimes> t = TraceChunkTimes(job, progs, sys, opt);
        const double replay = sc::ReplayPipeline(job.par, t);
        std::printf("zbv pp=%d M=%d: traces %.3f ms, step replay %.3f ms\n", pp, M, traces * 1e3, replay * 1e3);
        EXPECT_GE(traces, replay * 0.999) << "pp=" << pp;
        EXPECT_LE(traces, replay * 1.03) << "pp=" << pp;
    }
}

TEST(Zbv, EstimateHasLessBubbleThanZbh1And1F1BAndNoTiedHeadCopy) {
    sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::TrainingOptions opt;
    sc::ModelConfig m = Preset("llama3-8b.json");
    m.vocab = 256, m.layers = 32;
    auto est = [&](const std::string& spec) {
        return sc::EstimateTraining(sc::MakeJob(m, sc::ParseParallelSpec(spec)), sys, nullptr, opt);
    };
    const sc::TrainingEstimate one = est("pp=8,batch=32"), zbh1 = est("pp=8,batch=32,schedule=zbh1"),
                               zbv = est("pp=8,batch=32,schedule=zbv");
    EXPECT_NEAR(zbv.step.compute, one.step.compute, 0.01 * one.step.compute);  // the same work
    EXPECT_LT(zbv.step.bubble, zbh1.step.bubble);
    EXPECT_LT(zbh1.step.bubble, one.step.bubble);
    EXPECT_GT(zbv.step.bubble, 0);
    // Its bubble is the replay's beyond the bottleneck's work, and grows with the microbatches by less than a
    // chunk's work (the replay stops at 4 pp of them).
    const sc::TrainingEstimate more = est("pp=8,batch=128,schedule=zbv");
    EXPECT_NEAR(more.step.bubble, zbv.step.bubble, zbv.step.compute / 32 / 2 * 0.01 + 1e-12);
    // A tied head sits on rank 0 with the embedding: one table, no embedding all-reduce.
    m.tied_embeddings = true;
    const sc::Job tied = sc::MakeJob(m, sc::ParseParallelSpec("pp=4,batch=8,schedule=zbv"));
    const sc::Job tied_1f1b = sc::MakeJob(m, sc::ParseParallelSpec("pp=4,batch=8"));
    EXPECT_LT(sc::StageMemoryOf(tied, 0).params,
              sc::StageMemoryOf(tied_1f1b, 0).params + sc::StageMemoryOf(tied_1f1b, 3).params);
    for (const sc::ProgNode& n : sc::BuildStageProgram(tied, 0).nodes)
        if (n.type == sc::EtNodeType::comm_coll) {
            EXPECT_NE(n.group, sc::GroupKind::embed);
        }
}

}  // namespace
