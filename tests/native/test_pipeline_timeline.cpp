// The pipeline schedule laid out in time (TimePipeline, training/estimate.h: the page's "pipeline schedule" and
// `stagecraft estimate --timeline-json`): every step of every rank once, in the schedule's order, none before its
// input; the bottleneck rank idles the estimate's bubble where the estimate replays the steps, and the papers'
// bubble on equal stages where it charges their closed form.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/estimate.h"
#include "parallel/job.h"
#include "parallel/schedule.h"
#include "preset_files.h"
#include "test_util.h"
#include "training/estimate.h"

namespace {

sc::ModelConfig SmallLlama() {
    sc::ModelConfig m = sctest::LoadModelPreset("llama3-8b.json");
    m.vocab = 256, m.seq = 2048, m.layers = 32;  // a tiny vocabulary: equal stages
    return m;
}

// The steps of every rank in the schedule's order for the replayed microbatches, back to back or apart, never
// overlapping; a forward after the forward of the position before it, a backward (or its input half) after its own
// forward and after the backward of the position after it, a weight half after its input half.
void CheckSpans(const sc::Job& job, const sc::PipelineTimeline& t) {
    sc::ParallelConfig part = job.par;
    part.batch = t.microbatches * part.microbatch * part.dp;
    ASSERT_EQ(static_cast<int>(t.ranks.size()), part.pp);
    const int S = part.pipeline_positions();
    std::map<std::pair<int, int>, double> forward_end, input_end;  // (position, microbatch)
    for (int s = 0; s < part.pp; ++s) {
        const std::vector<sc::PipelineStep> steps = sc::PipelineSchedule(part, s);
        ASSERT_EQ(steps.size(), t.ranks[s].size()) << "stage " << s;
        double prev = 0;
        for (size_t i = 0; i < steps.size(); ++i) {
            const sc::PipelineStep& st = steps[i];
            const sc::PipelineSpan& sp = t.ranks[s][i];
            const char pass = st.forward ? 'F' : st.weight ? 'W' : st.split ? 'I' : 'B';
            EXPECT_EQ(sp.pass, pass) << "stage " << s << " step " << i;
            EXPECT_EQ(sp.microbatch, st.microbatch);
            EXPECT_EQ(sp.chunk, st.chunk);
            EXPECT_GE(sp.start, prev - 1e-12) << "stage " << s << " step " << i;
            EXPECT_GT(sp.end, sp.start);
            EXPECT_LE(sp.end, t.end + 1e-12);
            prev = sp.end;
            const std::pair<int, int> at{sc::PositionOf(part, st.chunk, s), st.microbatch};
            if (st.forward) forward_end[at] = sp.end;
            else if (!st.weight) input_end[at] = sp.end;
        }
    }
    for (int s = 0; s < part.pp; ++s)
        for (size_t i = 0; i < t.ranks[s].size(); ++i) {
            const sc::PipelineSpan& sp = t.ranks[s][i];
            const int g = sc::PositionOf(part, sp.chunk, s), m = sp.microbatch;
            if (sp.pass == 'F') {
                if (g > 0) {
                    EXPECT_GE(sp.start, forward_end.at({g - 1, m}) - 1e-12);
                }
            } else if (sp.pass == 'W') {
                EXPECT_GE(sp.start, input_end.at({g, m}) - 1e-12);
            } else {
                EXPECT_GE(sp.start, forward_end.at({g, m}) - 1e-12);
                if (g < S - 1) {
                    EXPECT_GE(sp.start, input_end.at({g + 1, m}) - 1e-12);
                }
            }
        }
}

TEST(PipelineTimeline, EveryStepOnceInOrderNoneBeforeItsInput) {
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    for (const char* schedule : {"1f1b", "gpipe", "interleaved", "zbh1", "zbv", "dualpipe", "dualpipev"})
        for (int M : {8, 64}) {
            const std::string spec = "pp=4,batch=" + std::to_string(M) + ",schedule=" + schedule;
            const sc::Job job = sc::MakeJob(SmallLlama(), sc::ParseParallelSpec(spec));
            const sc::PipelineTimeline t = sc::TimePipeline(job, sys, nullptr, {});
            EXPECT_EQ(t.step_microbatches, M);
            EXPECT_EQ(t.microbatches, std::min(M, 16)) << spec;  // 4 pp: fill, steady state and drain
            CheckSpans(job, t);
        }
}

TEST(PipelineTimeline, TheBottleneckIdlesTheEstimatesBubble) {
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    // ZB-V, DualPipe and DualPipeV: the estimate's bubble is this replay's, on a dense model and on an MoE one whose
    // pairs hide the all-to-all.
    sc::ModelConfig moe = sctest::LoadModelPreset("deepseek-v3.json");
    moe.layers = 16, moe.moe.dense_layers = 1;
    const std::pair<sc::ModelConfig, std::string> replayed[] = {
        {SmallLlama(), "pp=4,batch=32,schedule=zbv"},         {SmallLlama(), "pp=4,batch=32,schedule=dualpipe"},
        {SmallLlama(), "pp=4,batch=32,schedule=dualpipev"},   {moe, "pp=4,dp=8,ep=8,batch=256,schedule=dualpipe"},
        {moe, "pp=4,dp=8,ep=8,batch=256,schedule=dualpipev"},
    };
    for (const auto& [model, spec] : replayed) {
        const sc::Job job = sc::MakeJob(model, sc::ParseParallelSpec(spec));
        const sc::TrainingEstimate e = sc::EstimateTraining(job, sys, nullptr, {});
        const sc::PipelineTimeline t = sc::TimePipeline(job, sys, nullptr, {});
        EXPECT_EQ(t.bottleneck_stage, e.bottleneck_stage);
        EXPECT_GT(e.step.bubble, 0) << spec;
        EXPECT_NEAR(t.Idle(t.bottleneck_stage), e.step.bubble, 1e-9 * e.step_seconds) << model.name << " " << spec;
    }
    // 1F1B, GPipe, interleaved and ZB-H1 charge the papers' closed forms, which the replay gives for equal stages:
    // the estimate's bubble and the replayed idle time agree to the part the unequal ends (embedding, LM head) add.
    for (const char* spec : {"pp=4,batch=32", "pp=4,batch=32,schedule=gpipe", "pp=4,batch=32,schedule=interleaved",
                             "pp=4,batch=32,schedule=zbh1"}) {
        const sc::Job job = sc::MakeJob(SmallLlama(), sc::ParseParallelSpec(spec));
        const sc::TrainingEstimate e = sc::EstimateTraining(job, sys, nullptr, {});
        const sc::PipelineTimeline t = sc::TimePipeline(job, sys, nullptr, {});
        std::printf("%s: estimate's bubble %.3f ms, replayed idle of stage %d %.3f ms\n", spec, e.step.bubble * 1e3,
                    t.bottleneck_stage, t.Idle(t.bottleneck_stage) * 1e3);
        EXPECT_NEAR(t.Idle(t.bottleneck_stage), e.step.bubble, 0.02 * e.step.bubble) << spec;
    }
}

TEST(PipelineTimeline, TheEngineLaysOutAPipelineOnly) {
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    sc::engine::Request r;
    r.model = SmallLlama();
    r.system = &sys;
    r.parallel = sc::ParseParallelSpec("tp=2,dp=4,batch=16");
    EXPECT_FALSE(sc::engine::RunEstimate(r).training->pipeline);
    r.parallel = sc::ParseParallelSpec("tp=2,pp=4,batch=16,schedule=zbv");
    const sc::engine::EstimateResult out = sc::engine::RunEstimate(r);
    ASSERT_TRUE(out.training->pipeline);
    const sc::PipelineTimeline direct = sc::TimePipeline(*out.job, sys, nullptr, {});
    EXPECT_EQ(out.training->pipeline->end, direct.end);
    EXPECT_EQ(out.training->pipeline->ranks.size(), 4u);
}

}  // namespace
