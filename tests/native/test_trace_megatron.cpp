// The traces against what the systems they model do (Megatron-LM, Megatron-Core MoE, ZeRO / DeepSpeed,
// PyTorch DDP) and against what ASTRA-sim needs to run them: sequence parallelism's backward all-gathers,
// the expert-data-parallel group, ZeRO-2's per-microbatch reduce-scatter, fixed-size gradient buckets,
// ZeRO-3 prefetch, compute nodes with work and a duration, and the pipeline bubble of the one-rank view.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "config/hardware_config.h"
#include "graph/model_stats.h"
#include "parallel/job.h"
#include "parallel/memory.h"
#include "parallel/schedule.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace/chakra_et.h"
#include "trace/rank_traces.h"
#include "trace/summary.h"
#include "trace_test_util.h"
#include "training/estimate.h"
#include "training/timeline.h"

namespace {

using sc::CollectiveType;
using sc::EtNodeType;
using sc::GroupKind;

sc::Job MakeJob(const sc::ModelConfig& m, const std::string& spec) {
    return sc::MakeJob(m, sc::ParseParallelSpec(spec));
}
sc::ModelConfig Preset(const std::string& name) { return sc::ParseModelConfig(sctest::Preset(name)); }

sc::System LoadSystem(const std::string& id) { return sctest::LoadSystemPreset(id); }

const sc::CollectiveTotal* Find(const sc::RankClass& c, CollectiveType t, GroupKind g) {
    for (const sc::CollectiveTotal& x : c.collectives)
        if (x.type == t && x.group == g) return &x;
    return nullptr;
}

const std::string& NameOf(const sc::StageProgram& p, const sc::ProgNode& n) { return p.names[n.name]; }

TEST(TraceMegatron, SequenceParallelBackwardGathersTheSavedInputAgain) {
    // Korthikanti et al. 2022 Sec. 4.2.2: per layer and microbatch 6 all-gathers (2 forward, 2 backward
    // conjugates, 2 re-gathers of the s/tp input of the QKV and fc1 weight gradients) and 4 reduce-scatters.
    sc::ModelConfig m = Preset("gpt3-175b.json");
    sc::TraceSummary s = sc::SummarizeJob(MakeJob(m, "tp=8,pp=8,dp=2,microbatch=1,batch=32,sp=1"));
    const sc::RankClass& mid = s.classes[3];  // 12 layers, no embedding or head
    const double layers = 12, M = 16, bsh = 1.0 * m.seq * m.hidden * 2;
    const sc::CollectiveTotal* ag = Find(mid, CollectiveType::all_gather, GroupKind::tp);
    const sc::CollectiveTotal* rs = Find(mid, CollectiveType::reduce_scatter, GroupKind::tp);
    ASSERT_TRUE(ag && rs);
    EXPECT_EQ(ag->count, 1152u);
    EXPECT_EQ(ag->count, 6 * layers * M);
    EXPECT_EQ(rs->count, 4 * layers * M);
    EXPECT_DOUBLE_EQ(ag->bytes, 6 * layers * M * bsh / 8);  // comm_size of an all-gather: one rank's s/tp shard
    EXPECT_DOUBLE_EQ(rs->bytes, 4 * layers * M * bsh);      // of a reduce-scatter: the whole input
}

TEST(TraceMegatron, SequenceParallelReGatherCostsTpTimeInTheEstimateToo) {
    // The estimate reads the same graph: SP's TP traffic per layer is 6 all-gathers + 4 reduce-scatters. The
    // re-gather is launched before the input-gradient GEMM, beside it, and the weight-gradient GEMM after
    // waits for it (Megatron's async all-gather); the estimate charges what the GEMM does not cover.
    sc::Job job = MakeJob(Preset("gpt3-175b.json"), "tp=8,pp=8,dp=2,batch=32,sp=1");
    const sc::Block* layer = job.graph.Find(sc::BlockKind::dense_layer);
    int ag = 0;
    for (size_t i = 0; i < layer->backward.size(); ++i) {
        const sc::Op& op = layer->backward[i];
        if (op.kind != sc::OpKind::collective || op.collective != sc::Collective::all_gather) continue;
        ++ag;
        if (op.name.find("saved_input") == std::string::npos) continue;
        EXPECT_TRUE(op.async);
        ASSERT_LT(i + 2, layer->backward.size());
        EXPECT_NE(layer->backward[i + 1].name.find(".dgrad"), std::string::npos) << layer->backward[i + 1].name;
        EXPECT_NE(layer->backward[i + 2].name.find(".wgrad"), std::string::npos) << layer->backward[i + 2].name;
    }
    EXPECT_EQ(ag, 4);  // 2 conjugates of the forward reduce-scatters + 2 re-gathers
    // In the trace the weight-gradient GEMM depends on the re-gather, the input-gradient GEMM does not.
    sc::StageProgram p = sc::BuildStageProgram(job, 3);
    int async = 0;
    for (size_t i = 0; i + 2 < p.nodes.size(); ++i) {
        if (!p.nodes[i].async) continue;
        ++async;
        auto depends = [&](size_t node, size_t on) {
            const sc::ProgNode& n = p.nodes[node];
            for (uint32_t d = 0; d < n.dep_count; ++d)
                if (p.deps[n.dep_begin + d] == on) return true;
            return false;
        };
        EXPECT_FALSE(depends(i + 1, i));
        EXPECT_TRUE(depends(i + 2, i));
        EXPECT_TRUE(depends(i + 2, i + 1));
    }
    EXPECT_EQ(async, 2 * 12 * 16);  // 2 per layer, 12 layers, 16 microbatches
}

TEST(TraceMegatron, ExpertGradientsReduceOverTheExpertDataParallelGroup) {
    // etp = 1, tp = 2: experts are whole, so Megatron-Core folds the stage's tp x dp = 8 ranks into ep x edp
    // (megatron/core/parallel_state.py, the expert RankGenerator: tp=etp=1, ep, dp=edp, same order): the EP
    // group is ep consecutive ranks of the stage, TP partners included, and expert gradients reduce over
    // the ranks 8/ep apart in it that hold the same experts.
    sc::ModelConfig m = Preset("mixtral-8x7b.json");
    m.seq = 4096;
    for (int ep : {4, 2}) {
        sc::Job job = MakeJob(m, "tp=2,sp=1,ep=" + std::to_string(ep) + ",dp=4,pp=2");
        sc::Layout layout(job.par);
        const int edp = 2 * 4 / ep;
        EXPECT_EQ(layout.GroupSize(GroupKind::edp), edp) << "ep=" << ep;
        EXPECT_EQ(sc::ExpertDataParallelSize(job.par), edp);
        std::vector<int> members;
        layout.Members(GroupKind::ep, 0, members);
        std::vector<int> expect_ep;
        for (int r = 0; r < ep; ++r) expect_ep.push_back(r);
        EXPECT_EQ(members, expect_ep) << "ep=" << ep;
        layout.Members(GroupKind::edp, 0, members);
        ASSERT_EQ(static_cast<int>(members.size()), edp);
        // Every member of the group holds the same experts: same EP position, same pipeline stage.
        for (int i = 0; i < edp; ++i) {
            EXPECT_EQ(members[i], i * ep) << "ep=" << ep;
            EXPECT_EQ(layout.ExpertCoordOf(members[i]).ep, 0) << "rank " << members[i];
            EXPECT_EQ(layout.Stage(members[i]), 0);
        }
        // The expert gradients of stage 0 (16 MoE layers, 8/ep experts of 3*h*ffn) are all-reduced over it.
        const sc::RankClass c = sc::SummarizeJob(job).classes[0];
        const sc::CollectiveTotal* ar = Find(c, CollectiveType::all_reduce, GroupKind::edp);
        ASSERT_TRUE(ar) << "ep=" << ep;
        EXPECT_DOUBLE_EQ(ar->bytes, 16.0 * (8 / ep) * 3 * m.hidden * m.moe.expert_ffn * 2);
    }
    // With experts split over TP (etp = tp) each TP rank holds its own slice: the EP group steps over TP
    // positions (ranks 0, 2) and the edp group holds no TP partner.
    sc::Layout split(MakeJob(m, "tp=2,sp=1,etp=2,ep=2,dp=4,pp=2").par);
    EXPECT_EQ(split.GroupSize(GroupKind::edp), 2);
    std::vector<int> members;
    split.Members(GroupKind::ep, 0, members);
    EXPECT_EQ(members, (std::vector<int>{0, 2}));
    split.Members(GroupKind::edp, 0, members);
    EXPECT_EQ(members, (std::vector<int>{0, 4}));
}

TEST(TraceMegatron, ExpertParallelismFoldsOverTensorAndDataParallelRanks) {
    // DGX Cloud's DeepSeek-V3 on 1024 H100 (dgxc-benchmarking deepseek_v3, tp=2 pp=16 dp=32 ep=64 etp=1):
    // ep=64 is larger than dp=32, so the expert group spans both TP ranks of 32 data-parallel replicas, the
    // whole stage of 64 ranks; every rank keeps 256/64 = 4 experts and there is no expert-data parallelism.
    sc::ModelConfig m = Preset("deepseek-v3.json");
    sc::ParallelConfig p = sc::ParseParallelSpec("tp=2,sp=1,pp=16,dp=32,ep=64,batch=512,uneven=1");
    sc::Job job = sc::MakeJob(m, p);
    sc::Layout layout(job.par);
    EXPECT_EQ(layout.GroupSize(GroupKind::ep), 64);
    EXPECT_EQ(layout.GroupSize(GroupKind::edp), 1);
    EXPECT_EQ(layout.GroupCount(GroupKind::ep), 16);
    std::vector<int> members;
    for (int stage = 0; stage < 16; ++stage) {
        layout.Members(GroupKind::ep, stage, members);
        ASSERT_EQ(members.size(), 64u);
        EXPECT_EQ(members.front(), stage * 64);
        EXPECT_EQ(members.back(), stage * 64 + 63);
    }
    // Expert weights per rank: 4 of the 256 experts of each MoE layer (3 * h * expert_ffn each).
    const sc::Block* moe = job.graph.Find(sc::BlockKind::moe_layer);
    double expert = 0;
    for (const sc::Weight& w : moe->weights)
        if (w.expert) expert += job.V(w.numel_per_rank);
    EXPECT_DOUBLE_EQ(expert, 4.0 * 3 * m.hidden * m.moe.expert_ffn);
    // No expert gradient reduction: each rank's experts exist once per stage.
    const sc::RankClass c = sc::SummarizeJob(job).classes[1];
    EXPECT_FALSE(Find(c, CollectiveType::all_reduce, GroupKind::edp));
    EXPECT_TRUE(Find(c, CollectiveType::all_to_all, GroupKind::ep));
    // A degree that does not fold over the stage is refused, naming what it must divide.
    sc::ParallelConfig bad = sc::ParseParallelSpec("tp=2,sp=1,pp=16,dp=32,ep=128,batch=512,uneven=1");
    const std::string err = sctest::ErrorOf([&] { sc::ValidateParallel(m, bad); });
    EXPECT_NE(err.find("ep=128 must divide tp*cp*dp = 2*1*32"), std::string::npos) << err;
}

TEST(TraceMegatron, ExpertOptimizerStateShardsOverTheWholeExpertGroup) {
    sc::ModelConfig m = Preset("mixtral-8x7b.json");
    m.seq = 4096;
    sc::Job one = MakeJob(m, "tp=2,sp=1,ep=4,dp=4,pp=2,zero=1");
    sc::Job none = MakeJob(m, "tp=2,sp=1,ep=4,dp=4,pp=2");
    // Expert optimizer state is halved by the edp group of 2 (dense state by dp = 4).
    const sc::StageMemory a = sc::StageMemoryOf(one, 0), b = sc::StageMemoryOf(none, 0);
    EXPECT_LT(a.optimizer, b.optimizer / 2 + 1);
    EXPECT_GT(a.optimizer, b.optimizer / 4);
}

TEST(TraceMegatron, ZeroTwoShardsGradientsAndReducesThemEveryMicrobatch) {
    // Memory and communication tell one story: ZeRO-2 keeps 1/dp of the gradients, so it must reduce-scatter
    // after every microbatch (DeepSpeed stage 2); ZeRO-1 keeps them whole and reduces once per step.
    sc::ModelConfig m = sctest::SmallGpt();
    const double grads = 2 * sc::ComputeModelStats(m).params, M = 4;
    sc::Job z1 = MakeJob(m, "dp=2,batch=8,zero=1"), z2 = MakeJob(m, "dp=2,batch=8,zero=2");
    EXPECT_DOUBLE_EQ(sc::StageMemoryOf(z1, 0).gradients, grads);
    EXPECT_DOUBLE_EQ(sc::StageMemoryOf(z2, 0).gradients, grads / 2);
    const sc::TraceSummary s1 = sc::SummarizeJob(z1), s2 = sc::SummarizeJob(z2);
    const sc::CollectiveTotal* rs1 = Find(s1.classes[0], CollectiveType::reduce_scatter, GroupKind::dp);
    const sc::CollectiveTotal* rs2 = Find(s2.classes[0], CollectiveType::reduce_scatter, GroupKind::dp);
    ASSERT_TRUE(rs1 && rs2);
    EXPECT_DOUBLE_EQ(rs1->bytes, grads);
    EXPECT_DOUBLE_EQ(rs2->bytes, M * grads);
    // Each microbatch's reduction follows that microbatch's backward, before the next forward starts.
    sc::StageProgram p = sc::BuildStageProgram(z2, 0);
    int buckets_since_backward = 0, backwards = 0;
    bool in_backward = false;
    for (const sc::ProgNode& n : p.nodes) {
        if (n.role == sc::NodeRole::backward) in_backward = true, buckets_since_backward = 0;
        if (n.role == sc::NodeRole::forward && in_backward) {
            EXPECT_GT(buckets_since_backward, 0) << "a forward began before the previous backward was reduced";
            in_backward = false, ++backwards;
        }
        if (n.type == EtNodeType::comm_coll && n.group == GroupKind::dp) ++buckets_since_backward;
    }
    EXPECT_EQ(backwards, M - 1);
}

TEST(TraceMegatron, GradientBucketsAreTheStatedSize) {
    // README: data-parallel gradients reduce in buckets of bucket_mb MiB (25 by default): every bucket but the
    // last of a flush is exactly that size, and together they carry every gradient byte of the stage.
    sc::Job job = MakeJob(Preset("gpt3-175b.json"), "tp=8,pp=8,dp=2,batch=32");
    for (double mb : {25.0, 100.0}) {
        job.par.bucket_mb = mb;
        sc::StageProgram p = sc::BuildStageProgram(job, 3);
        const double bucket = mb * 1024 * 1024;
        std::vector<double> sizes;
        for (const sc::ProgNode& n : p.nodes)
            if (n.type == EtNodeType::comm_coll && n.group == GroupKind::dp)
                sizes.push_back(static_cast<double>(n.comm_bytes));
        const double grads = sc::StageMemoryOf(job, 3).gradients;
        ASSERT_FALSE(sizes.empty());
        EXPECT_EQ(sizes.size(), static_cast<size_t>(std::ceil(grads / bucket))) << mb;
        double sum = 0;
        for (size_t i = 0; i < sizes.size(); ++i) {
            sum += sizes[i];
            if (i + 1 < sizes.size()) EXPECT_EQ(sizes[i], bucket) << "bucket " << i;
            else EXPECT_LE(sizes[i], bucket);
        }
        EXPECT_DOUBLE_EQ(sum, grads);
    }
}

TEST(TraceMegatron, ZeroThreeGathersArePrefetchedOneBlockAhead) {
    // FSDP / DeepSpeed prefetch: block i+1's all-gather is issued before block i's first op, and depends on
    // nothing of block i (dependencies point only backwards, so issue order proves it); block i waits for its own.
    sc::Job job = MakeJob(sctest::SmallGpt(), "dp=2,batch=4,zero=3");
    sc::StageProgram p = sc::BuildStageProgram(job, 0);
    int checked = 0;
    std::string last_gather;
    for (size_t i = 0; i < p.nodes.size(); ++i) {
        const sc::ProgNode& n = p.nodes[i];
        const std::string& name = NameOf(p, n);
        if (n.type == EtNodeType::comm_coll && name.find("zero3.gather") != std::string::npos) {
            EXPECT_EQ(n.coll, CollectiveType::all_gather);
            last_gather = name;
            continue;
        }
        // The first forward op of layer l: the latest gather issued is layer l+1's (or the head's for the last).
        // (Layer(l, op) rather than "L" + ...: GCC 12 warns falsely (-Wrestrict) on a literal plus a string.)
        const auto layer = [](int l, const char* op) {
            return std::string(1, 'L').append(std::to_string(l)).append(op);
        };
        for (int l = 0; l < 4; ++l) {
            if (name != layer(l, ".attn.norm") || n.role != sc::NodeRole::forward) continue;
            EXPECT_EQ(last_gather, l < 3 ? layer(l + 1, ".zero3.gather") : std::string("zero3.gather"))
                << "layer " << l;
            // ...and this op waits for layer l's own gather (a dependency on a gather node).
            bool waits = false;
            for (uint32_t d = 0; d < n.dep_count; ++d) {
                const sc::ProgNode& dep = p.nodes[p.deps[n.dep_begin + d]];
                waits |= NameOf(p, dep) == layer(l, ".zero3.gather");
            }
            EXPECT_TRUE(waits) << "layer " << l;
            ++checked;
        }
    }
    EXPECT_EQ(checked, 4 * 2);  // 4 layers x 2 microbatches
}

TEST(TraceMegatron, EveryComputeNodeHasWorkAndADuration) {
    // ASTRA-sim's roofline divides by num_ops (0 never finishes) and its replay mode runs duration_micros.
    sc::System sys = LoadSystem("dgx-h100-superpod");
    for (auto [model, spec] : {std::pair{"llama3-8b.json", "tp=2,pp=2,dp=2,batch=8,zero=1"},
                               {"mixtral-8x7b.json", "tp=2,sp=1,ep=2,dp=2,batch=4,zero=3"},
                               {"deepseek-v3.json", "tp=2,sp=1,ep=4,dp=4,pp=4,batch=16"}}) {
        sc::ModelConfig m = Preset(model);
        m.seq = 1024;
        m.layers = 8, m.moe.dense_layers = std::min(m.moe.dense_layers, 1);
        sc::Job job = MakeJob(m, spec);
        sc::TrainingOptions opt;
        sc::RankTraceWriter w(job,
                              [&](const sc::StageProgram& p) { return sc::NodeSeconds(job, p, sys, nullptr, opt); });
        sc::EtFile f = sc::ReadEt(std::string(w.RankFile(0)));
        std::vector<double> secs = sc::NodeSeconds(job, w.Program(0), sys, nullptr, opt);
        int comp = 0;
        for (const sc::EtNode& n : f.nodes) {
            if (n.type != EtNodeType::comp) continue;
            ++comp;
            EXPECT_GE(n.num_ops, 1) << model << " " << n.name;
            EXPECT_GE(n.duration_micros, 1u) << model << " " << n.name;
            EXPECT_EQ(n.duration_micros, std::max<uint64_t>(1, std::llround(secs[n.id] * 1e6))) << n.name;
        }
        EXPECT_GT(comp, 0);
    }
}

// Every stage's program of `job` (into `progs`) replayed together on `sys`.
std::vector<std::vector<sc::TimedNode>> ReplayEveryStage(const sc::Job& job, const sc::System& sys,
                                                         const sc::TrainingOptions& opt,
                                                         std::vector<sc::StageProgram>& progs) {
    for (int s = 0; s < job.par.pp; ++s) progs.push_back(sc::BuildStageProgram(job, s));
    std::vector<const sc::StageProgram*> ptrs;
    for (const auto& pr : progs) ptrs.push_back(&pr);
    return sc::ReplayJob(job, ptrs, sys, nullptr, opt);
}

TEST(TraceMegatron, OneRankViewShowsTheOneFOneBBubble) {
    // Receives wait for their senders: rank 0 of a 1F1B pipeline idles (p-1)/(m+p-1) of the step.
    sc::System sys = LoadSystem("dgx-a100-superpod");
    sc::TrainingOptions opt;
    // (dp = 1: no gradient reduction after the last backward, which rank 0 would also wait for.)
    for (auto [spec, p, mb] : {std::tuple{"tp=8,pp=8,microbatch=1,batch=16", 8.0, 16.0},
                               {"tp=8,pp=4,microbatch=1,batch=8", 4.0, 8.0},
                               {"tp=8,pp=8,microbatch=1,batch=64", 8.0, 64.0}}) {
        sc::Job job = MakeJob(Preset("gpt3-175b.json"), spec);
        std::vector<sc::StageProgram> progs;
        auto tl = ReplayEveryStage(job, sys, opt, progs);
        const double idle = sc::IdleFraction(progs[0], tl[0]), expect = (p - 1) / (mb + p - 1);
        EXPECT_NEAR(idle, expect, 0.03) << spec;
        std::printf("%s: rank 0 idle %.3f, (p-1)/(m+p-1) = %.3f\n", spec, idle, expect);
        // Stages finish their last backward in reverse order: stage 0 last.
        auto end = [&](int s) {
            double e = 0;
            for (const auto& t : tl[s]) e = std::max(e, t.start_us + t.dur_us);
            return e;
        };
        EXPECT_GE(end(0), end(static_cast<int>(p) - 1)) << spec;
    }
}

}  // namespace

namespace {

// ZB-H1 (Qi et al. 2024): every microbatch gets F, B and W once per stage, in dependency order; stage s runs a
// W s steps after its B; no stage holds more than pp microbatches (1F1B's first-stage peak).
TEST(TraceMegatron, ZeroBubbleScheduleOrder) {
    sc::ParallelConfig p = sc::ParseParallelSpec("pp=4,microbatch=1,batch=8,schedule=zbh1");
    const int M = p.microbatches();
    for (int s = 0; s < p.pp; ++s) {
        std::vector<int> f(M, -1), b(M, -1), w(M, -1);
        int i = 0, alive = 0, peak = 0;
        for (const sc::PipelineStep& st : sc::PipelineSchedule(p, s)) {
            int& slot = st.forward ? f[st.microbatch] : st.weight ? w[st.microbatch] : b[st.microbatch];
            EXPECT_EQ(slot, -1) << "stage " << s << " runs a step twice";
            slot = i++;
            alive += st.forward ? 1 : st.weight ? -1 : 0;
            peak = std::max(peak, alive);
        }
        EXPECT_LE(peak, p.pp) << "stage " << s;
        for (int m = 0; m < M; ++m) {
            EXPECT_TRUE(f[m] >= 0 && f[m] < b[m] && b[m] < w[m]) << "stage " << s << " microbatch " << m;
            if (m + s < M) {
                EXPECT_GT(w[m], b[m + s]) << "stage " << s << " runs W(" << m << ") before B(" << m + s << ")";
            }
        }
    }
    // One stage: no split, the plain 1F1B loop.
    sc::ParallelConfig one = sc::ParseParallelSpec("pp=1,microbatch=1,batch=8,schedule=zbh1");
    for (const sc::PipelineStep& st : sc::PipelineSchedule(one, 0)) EXPECT_FALSE(st.weight);
}

// The trace of a ZB-H1 pipeline replays with less idle time than 1F1B's, carries each weight-gradient GEMM once,
// and the estimate's bubble shrinks by about what the replay shows.
TEST(TraceMegatron, ZeroBubbleShrinksTheBubbleInTraceAndEstimate) {
    sc::System sys = LoadSystem("dgx-a100-superpod");
    sc::TrainingOptions opt;
    auto replay = [&](const char* spec, double* makespan, int* wgrads) {
        sc::Job job = MakeJob(Preset("gpt3-175b.json"), spec);
        std::vector<sc::StageProgram> progs;
        auto tl = ReplayEveryStage(job, sys, opt, progs);
        *makespan = 0;
        for (const auto& stage : tl)
            for (const auto& t : stage) *makespan = std::max(*makespan, t.start_us + t.dur_us);
        *wgrads = 0;
        for (const auto& n : progs[0].nodes) *wgrads += progs[0].names[n.name].find(".wgrad") != std::string::npos;
        return sc::EstimateTraining(job, sys, nullptr, opt);
    };
    double t1 = 0, tz = 0;
    int w1 = 0, wz = 0;
    sc::TrainingEstimate e1 = replay("tp=8,pp=8,microbatch=1,batch=16", &t1, &w1);
    sc::TrainingEstimate ez = replay("tp=8,pp=8,microbatch=1,batch=16,schedule=zbh1", &tz, &wz);
    EXPECT_EQ(w1, wz);
    EXPECT_GT(w1, 0);
    EXPECT_LT(tz, t1);
    EXPECT_LT(ez.step.bubble, e1.step.bubble);
    EXPECT_DOUBLE_EQ(ez.step.compute, e1.step.compute);  // the same work, reordered
    const double replay_gain = (t1 - tz) * 1e-6, estimate_gain = e1.step_seconds - ez.step_seconds;
    EXPECT_NEAR(replay_gain, estimate_gain, 0.35 * estimate_gain);
    std::printf("zbh1 vs 1f1b, gpt3-175b tp8 pp8 m16: replay %.3f -> %.3f s, estimate %.3f -> %.3f s\n", t1 * 1e-6,
                tz * 1e-6, e1.step_seconds, ez.step_seconds);
}

}  // namespace
