// Invariants of the training-time model (EstimateTraining): properties that must hold for every job and
// cluster, checked over a spread of layouts (dense and MoE, TP/PP/DP/CP/EP, interleaving, recomputation,
// ZeRO) with and without the measured calibration curves.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "config/calibration.h"
#include "config/error.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "graph/model_stats.h"
#include "parallel/job.h"
#include "parallel/layout.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace/stage_program.h"
#include "training/comm_model.h"
#include "training/compute_model.h"
#include "training/estimate.h"

namespace {

using nlohmann::json;
const std::string kRoot = SC_SOURCE_DIR;

sc::System LoadSystem(const std::string& id) { return sctest::LoadSystemPreset(id); }
const sc::CalibrationTable& Cal() { return sctest::MeasuredCalibration(); }

sc::ModelConfig Model(const std::string& file) {
    return sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/" + file));
}

struct Case {
    std::string name, model, system, spec;
};

// Layouts that exercise every term of the breakdown.
const std::vector<Case>& Cases() {
    static const std::vector<Case> cases = {
        {"gpt3 interleaved full-rc", "gpt3-175b.json", "dgx-a100-superpod",
         "tp=8,pp=8,dp=24,batch=1536,schedule=interleaved,vstages=3,recompute=full"},
        {"gpt3 1f1b selective sp zero1", "gpt3-175b.json", "dgx-h100-superpod",
         "tp=8,pp=8,dp=8,sp=1,batch=512,recompute=selective,zero=1"},
        {"llama70b cp", "llama3-70b.json", "dgx-h100-superpod",
         "tp=8,pp=4,dp=4,cp=2,sp=1,batch=128,schedule=interleaved,vstages=5"},
        {"llama8b dp zero3", "llama3-8b.json", "dgx-h100-superpod", "tp=1,pp=1,dp=64,microbatch=1,batch=256,zero=3"},
        {"llama8b dp only", "llama3-8b.json", "dgx-a100-superpod", "tp=1,pp=1,dp=64,microbatch=1,batch=64"},
        {"mixtral ep", "mixtral-8x7b.json", "dgx-h100-superpod", "tp=2,pp=4,dp=16,ep=8,sp=1,batch=256,recompute=full"},
        {"gpt3 gpipe", "gpt3-175b.json", "gb200-nvl72", "tp=4,pp=16,dp=8,batch=512,schedule=gpipe,recompute=full"},
    };
    return cases;
}

sc::TrainingEstimate Estimate(const Case& c, const sc::System& sys, const sc::TrainingOptions& opt,
                              bool calibrated = true) {
    sc::Job job = sc::MakeJob(Model(c.model), sc::ParseParallelSpec(c.spec), opt.kernels);
    return sc::EstimateTraining(job, sys, calibrated ? &Cal() : nullptr, opt);
}

// Every TrainingOptions variant the validation uses, plus the defaults.
std::vector<sc::TrainingOptions> OptionSets() {
    sc::TrainingOptions def;
    sc::TrainingOptions legacy;
    legacy.kernels.flash_attention = false;
    legacy.kernels.dropout = true;
    legacy.overlap_pp = false;
    legacy.overlap_dp = false;
    legacy.kernels.grad_accumulation_fusion = false;
    sc::TrainingOptions tp;
    tp.overlap_tp = true;
    return {def, legacy, tp};
}

TEST(TrainingModel, BreakdownSumsToTheStepTime) {
    for (const Case& c : Cases())
        for (const sc::TrainingOptions& opt : OptionSets())
            for (bool cal : {true, false}) {
                SCOPED_TRACE(c.name + (cal ? " calibrated" : " alpha-beta"));
                sc::TrainingEstimate e = Estimate(c, LoadSystem(c.system), opt, cal);
                const sc::StepBreakdown& b = e.step;
                double sum = 0;
                for (const sc::BreakdownPart& p : sc::kBreakdownParts) {
                    EXPECT_GE(b.*p.seconds, 0) << p.key;
                    sum += b.*p.seconds;
                }
                EXPECT_GT(b.compute, 0);
                EXPECT_NEAR(b.compute + b.recompute + b.kernel_fixed + b.fp8_cast + b.moe_routing + b.tp_comm +
                                b.cp_comm + b.ep_comm + b.pp_comm + b.bubble + b.dp_comm + b.optimizer,
                            e.step_seconds, 1e-12 * e.step_seconds);
                EXPECT_NEAR(sum, e.step_seconds, 1e-12 * e.step_seconds);
            }
}

// Scale every network level's bandwidth by `f` (effective bandwidth follows).
sc::System WithBandwidth(sc::System s, double f) {
    for (sc::NetworkLevel& l : s.levels) l.bandwidth_gbps *= f;
    return s;
}

TEST(TrainingModel, MoreBandwidthNeverSlowsAStep) {
    int strictly_faster = 0;
    for (const Case& c : Cases())
        for (const sc::TrainingOptions& opt : OptionSets())
            for (bool cal : {true, false}) {
                SCOPED_TRACE(c.name + (cal ? " calibrated" : " alpha-beta"));
                sc::System sys = LoadSystem(c.system);
                double base = Estimate(c, sys, opt, cal).step_seconds;
                double faster = Estimate(c, WithBandwidth(sys, 2), opt, cal).step_seconds;
                EXPECT_LE(faster, base * (1 + 1e-12));
                strictly_faster += faster < base * (1 - 1e-3);
            }
    EXPECT_GT(strictly_faster, 10);  // not vacuous: communication costs time in most layouts
}

TEST(TrainingModel, InNetworkReductionHelpsAllReduceBoundLayouts) {
    // Plain data parallelism over 64 H100s with the gradient all-reduce not overlapped: all-reduce bound.
    Case c{"dp all-reduce", "llama3-8b.json", "dgx-h100-superpod", "tp=1,pp=1,dp=64,microbatch=1,batch=64"};
    sc::TrainingOptions on, off;
    on.overlap_dp = off.overlap_dp = false;
    off.in_network_reduction = false;
    for (bool cal : {true, false}) {
        sc::TrainingEstimate a = Estimate(c, LoadSystem(c.system), on, cal),
                             b = Estimate(c, LoadSystem(c.system), off, cal);
        EXPECT_GT(b.step.dp_comm, 0.05 * b.step_seconds);  // the layout is all-reduce heavy
        EXPECT_LT(a.step.dp_comm, 0.8 * b.step.dp_comm);   // SHARP sends the buffer once instead of 2(k-1)/k
        EXPECT_LT(a.step_seconds, b.step_seconds);
    }
    // And it never hurts any layout.
    for (const Case& k : Cases())
        for (const sc::TrainingOptions& opt : OptionSets()) {
            sc::TrainingOptions no = opt;
            no.in_network_reduction = false;
            EXPECT_LE(Estimate(k, LoadSystem(k.system), opt).step_seconds,
                      Estimate(k, LoadSystem(k.system), no).step_seconds * (1 + 1e-12))
                << k.name;
        }
}

TEST(TrainingModel, OverlapOnIsNeverSlowerThanOff) {
    using Setter = std::function<void(sc::TrainingOptions&, bool)>;
    const std::vector<std::pair<std::string, Setter>> knobs = {
        {"overlap_dp", [](sc::TrainingOptions& o, bool v) { o.overlap_dp = v; }},
        {"overlap_pp", [](sc::TrainingOptions& o, bool v) { o.overlap_pp = v; }},
        {"overlap_tp", [](sc::TrainingOptions& o, bool v) { o.overlap_tp = v; }},
        {"grad_accumulation_fusion", [](sc::TrainingOptions& o, bool v) { o.kernels.grad_accumulation_fusion = v; }},
        {"flash_attention", [](sc::TrainingOptions& o, bool v) { o.kernels.flash_attention = v; }},
    };
    for (const auto& [name, set] : knobs) {
        int strictly = 0;
        for (const Case& c : Cases())
            for (sc::TrainingOptions opt : OptionSets()) {
                SCOPED_TRACE(name + " " + c.name);
                sc::System sys = LoadSystem(c.system);
                set(opt, true);
                double on = Estimate(c, sys, opt).step_seconds;
                set(opt, false);
                double off = Estimate(c, sys, opt).step_seconds;
                EXPECT_LE(on, off * (1 + 1e-12));
                strictly += on < off * (1 - 1e-4);
            }
        EXPECT_GT(strictly, 0) << name << " never changes anything";
    }
}

TEST(TrainingModel, DoesNotFitMessageNamesNeedCapacityAndStage) {
    // GPT-3 175B on one 8-GPU node without recomputation: far beyond 80 GB.
    sc::Job job = sc::MakeJob(Model("gpt3-175b.json"), sc::ParseParallelSpec("tp=8,pp=1,dp=1,microbatch=1"));
    sc::System sys = LoadSystem("dgx-a100-superpod");
    sc::TrainingEstimate e = sc::EstimateTraining(job, sys, &Cal(), {});
    ASSERT_FALSE(e.fits);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(e.memory_message, m,
                                 std::regex(R"(does not fit: needs ([0-9.]+) GiB of ([0-9.]+) GiB on stage ([0-9]+))")))
        << e.memory_message;
    const double gib = 1024.0 * 1024 * 1024;
    EXPECT_NEAR(std::stod(m[1]), e.memory_peak / gib, 0.05);
    EXPECT_NEAR(std::stod(m[2]), sys.accelerator.MemoryBytes() / gib, 0.05);
    EXPECT_EQ(std::stoi(m[3]), 0);
    EXPECT_GT(e.memory_peak, e.memory_capacity);

    // The same model split over 64 GPUs with recomputation fits, and says nothing.
    sc::Job ok = sc::MakeJob(Model("gpt3-175b.json"), sc::ParseParallelSpec("tp=8,pp=8,dp=1,batch=64,recompute=full"));
    sc::TrainingEstimate f = sc::EstimateTraining(ok, sys, &Cal(), {});
    EXPECT_TRUE(f.fits);
    EXPECT_TRUE(f.memory_message.empty());
}

TEST(TrainingModel, Zero3DividesTheModelStateByDp) {
    const int dp = 16;
    sc::System sys = LoadSystem("dgx-h100-superpod");
    sc::ModelConfig m = Model("llama3-8b.json");
    auto state = [&](int zero, double* largest_block_w) {
        sc::Job job = sc::MakeJob(
            m, sc::ParseParallelSpec("tp=1,pp=1,dp=" + std::to_string(dp) + ",zero=" + std::to_string(zero)));
        const sc::StageMemory s = sc::EstimateTraining(job, sys, &Cal(), {}).memory[0];
        if (largest_block_w) *largest_block_w = s.weights - s.params * 2 / dp;  // ZeRO-3's gathered blocks
        return s.weights + s.gradients + s.optimizer;
    };
    double gathered = 0;
    const double s0 = state(0, nullptr), s3 = state(3, &gathered);
    // Everything sharded over dp, plus the two gathered blocks (current + prefetch) ZeRO-3 keeps whole.
    EXPECT_NEAR(s3 - gathered, s0 / dp, 1e-6 * s0);
    EXPECT_GT(gathered, 0);
    EXPECT_GT(s0 / s3, 0.6 * dp);  // ~dp: the gathered blocks are small next to the sharded state
    EXPECT_LT(s0 / s3, dp);
    // Stages 1 and 2 shard less.
    const double s1 = state(1, nullptr), s2 = state(2, nullptr);
    EXPECT_LT(s1, s0);
    EXPECT_LT(s2, s1);
    EXPECT_LT(s3, s2);
}

TEST(TrainingModel, MfuIsModelFlopsOverTimeGpusAndPeak) {
    for (const Case& c : Cases()) {
        SCOPED_TRACE(c.name);
        sc::ModelConfig m = Model(c.model);
        sc::ParallelConfig p = sc::ParseParallelSpec(c.spec);
        sc::System sys = LoadSystem(c.system);
        sc::TrainingEstimate e = sc::EstimateTraining(sc::MakeJob(m, p), sys, &Cal(), {});
        // Independently: model FLOPs from the model's own statistics, the peak from the datasheet.
        const double tokens = 1.0 * p.global_batch() * m.seq;
        const double flops = tokens * sc::ComputeModelStats(m).model_flops_per_token();
        const double peak = sc::PeakFlops(sys.accelerator, m.precision.compute);
        EXPECT_NEAR(e.model_flops_per_step, flops, 1e-9 * flops);
        EXPECT_DOUBLE_EQ(e.peak_flops_per_gpu, peak);
        EXPECT_NEAR(e.mfu, flops / (e.step_seconds * p.world() * peak), 1e-12);
        EXPECT_GT(e.mfu, 0.02);
        EXPECT_LT(e.mfu, 1.0);
        EXPECT_GE(e.hfu, e.mfu * (1 - 1e-9));  // recomputation only adds executed FLOPs
        EXPECT_NEAR(e.tokens_per_second, tokens / e.step_seconds, 1e-9 * e.tokens_per_second);
    }
}

TEST(TrainingModel, FullFlatIsNeverSlowerThanTwoTier) {
    // The same 1024 H100s, either as DGX nodes on NVLink + NDR InfiniBand or all on one NVLink-class fabric.
    sc::System two = LoadSystem("dgx-h100-superpod"), flat = LoadSystem("h100-fullflat");
    ASSERT_EQ(two.TotalAccelerators(), flat.TotalAccelerators());
    const std::vector<std::string> specs = {
        "tp=8,pp=8,dp=16,batch=1024,recompute=full",
        "tp=8,pp=4,dp=32,sp=1,batch=1024,schedule=interleaved,vstages=4",
        "tp=4,pp=8,dp=32,batch=512,zero=1",
        "tp=1,pp=1,dp=1024,batch=1024",
        "tp=2,pp=1,dp=512,batch=512,zero=3",
        "tp=8,pp=2,dp=64,cp=1,sp=1,batch=256,order=dp-tp-cp-pp",  // TP across nodes on the two-tier system
    };
    int strictly = 0;
    for (const std::string& spec : specs)
        for (const sc::TrainingOptions& opt : OptionSets())
            for (bool cal : {true, false}) {
                SCOPED_TRACE(spec + (cal ? " calibrated" : " alpha-beta"));
                sc::Job job = sc::MakeJob(Model("llama3-70b.json"), sc::ParseParallelSpec(spec), opt.kernels);
                double t2 = sc::EstimateTraining(job, two, cal ? &Cal() : nullptr, opt).step_seconds;
                double tf = sc::EstimateTraining(job, flat, cal ? &Cal() : nullptr, opt).step_seconds;
                EXPECT_LE(tf, t2 * (1 + 1e-12));
                strictly += tf < t2 * 0.99;
            }
    EXPECT_GT(strictly, 10);
}

TEST(TrainingModel, ACommModelWithoutExpertGroupsTimesTheRestAlikeAndRefusesThem) {
    // A dense model's estimate builds its communication model without placing the expert groups (its tp*cp*dp-rank
    // edp groups were most of a layout search's time): every other group times the same, and a collective on an
    // unplaced group is an error, not a silent zero.
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    const sc::Layout layout(sc::ParseParallelSpec("tp=4,pp=2,dp=16,cp=2"));
    const sc::CommModel all(sys, layout, true, &Cal()), dense(sys, layout, true, &Cal(), false);
    for (sc::GroupKind k : {sc::GroupKind::tp, sc::GroupKind::cp, sc::GroupKind::dp})
        for (sc::CollectiveType t : {sc::CollectiveType::all_reduce, sc::CollectiveType::all_gather})
            EXPECT_EQ(dense.Seconds(t, k, 1e8), all.Seconds(t, k, 1e8)) << sc::NameOf(k);
    EXPECT_EQ(dense.P2PSeconds(1e8), all.P2PSeconds(1e8));
    EXPECT_GT(all.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::edp, 1e8), 0);
    EXPECT_THROW(dense.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::edp, 1e8), sc::Error);
    EXPECT_EQ(dense.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::edp, 0), 0);  // nothing to move
}

TEST(TrainingModel, ScaleUpCollectivesFollowTheMeasuredCurve) {
    // 8-way TP on a DGX A100: an all-reduce of a size nccl-tests measured takes exactly
    // size * 2(n-1)/n / busbw there (Azure ND A100 v4: 134217728 B at 174.18 GB/s busbw).
    sc::System sys = LoadSystem("dgx-a100-superpod");
    sc::Layout layout(sc::ParseParallelSpec("tp=8,dp=4"));
    sc::CommModel net(sys, layout, true, &Cal());
    const sc::CollectiveCurve* curve = net.ScaleUpCurve(sc::CollectiveType::all_reduce);
    ASSERT_NE(curve, nullptr);
    EXPECT_EQ(curve->n_ranks, 8);
    const double size = 134217728;
    const double busbw = sc::BusBandwidthGBps(*curve, size);
    EXPECT_NEAR(net.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::tp, size), size * 2 * 7 / 8 / (busbw * 1e9),
                1e-12);
    // Smaller messages reach a lower bus bandwidth than the plateau the alpha-beta fit uses.
    sc::CommModel fit(sys, layout, true, nullptr);
    EXPECT_GT(net.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::tp, 16 << 20),
              fit.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::tp, 16 << 20));
    // Data parallelism across nodes still crosses the InfiniBand level.
    EXPECT_GT(net.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::dp, size), 0);
}

TEST(TrainingModel, UnfusedAttentionCostsTimeAndScoreMemory) {
    // GPT-3 175B, TP8, no recomputation, no SP: Korthikanti et al. 2022 Eq. 2 gives s b h (34 + 5 a s / h)
    // bytes per layer over t; the unfused, dropout-era kernels must add exactly the 5 a s^2 b / t score terms
    // and the 2 s b h dropout masks to the fused, dropout-free accounting, less the fused kernel's
    // log-sum-exp (4 bytes per query row and head).
    sc::ModelConfig m = Model("gpt3-175b.json");
    const sc::ParallelConfig par = sc::ParseParallelSpec("tp=8,pp=1,dp=1,microbatch=1");
    sc::System sys = LoadSystem("dgx-a100-superpod");
    sc::TrainingOptions fused, legacy;
    legacy.kernels.flash_attention = false;
    legacy.kernels.dropout = true;
    sc::TrainingEstimate a = sc::EstimateTraining(sc::MakeJob(m, par, fused.kernels), sys, &Cal(), fused),
                         b = sc::EstimateTraining(sc::MakeJob(m, par, legacy.kernels), sys, &Cal(), legacy);
    const double s = m.seq, h = m.hidden, heads = m.heads / 8.0;
    const double per_layer = 5 * heads * s * s + 2 * s * h - 4 * s * heads;
    EXPECT_NEAR(b.memory[0].activations - a.memory[0].activations, m.layers * per_layer, 1e-6 * m.layers * per_layer);
    EXPECT_GT(b.step.compute, a.step.compute);
    // A job built with other kernel choices than the options is refused, naming the field.
    try {
        sc::EstimateTraining(sc::MakeJob(m, par), sys, &Cal(), legacy);
        ADD_FAILURE() << "a fused job was estimated with unfused options";
    } catch (const sc::Error& e) {
        EXPECT_NE(std::string(e.what()).find("options"), std::string::npos) << e.what();
    }
}

// Recomputing a layer in the backward brings back what its forward dropped, beside what it kept: one microbatch
// in flight (pp = 1, batch = microbatch) of L layers holds L layers' kept bytes plus one layer's dropped bytes. So
// against no recomputation, selective recomputation (Korthikanti et al. 2022: drops the 5 a s^2 b / t of the
// unfused attention core) saves (L - 1) x 5 a s^2 b / t and full recomputation (keeps each layer's input)
// (L - 1) x (layer - input). Counting a whole layer as the working set counted its kept bytes twice.
TEST(TrainingModel, RecomputeWorkingSetIsWhatTheForwardDropped) {
    const sc::ModelConfig m = Model("gpt3-175b.json");
    sc::TrainingOptions legacy;
    legacy.kernels.flash_attention = false;
    legacy.kernels.dropout = true;
    auto activations = [&](const char* recompute, double* layer_kept, double* layer_all) {
        const sc::Job job =
            sc::MakeJob(m, sc::ParseParallelSpec(std::string("tp=8,pp=1,dp=1,microbatch=1,recompute=") + recompute),
                        legacy.kernels);
        for (const sc::Block& b : job.graph.blocks)
            if (b.kind == sc::BlockKind::dense_layer) {
                *layer_kept = sc::SavedActivationBytes(job, b, job.par.recompute);
                *layer_all = sc::SavedActivationBytes(job, b, sc::Recompute::none);
                break;
            }
        return sc::StageMemoryOf(job, 0).activations;
    };
    double kept_none = 0, all = 0, kept_sel = 0, kept_full = 0;
    const double none = activations("none", &kept_none, &all);
    const double sel = activations("selective", &kept_sel, &all);
    const double full = activations("full", &kept_full, &all);
    const double L = m.layers, s = m.seq, heads = m.heads / 8.0;
    EXPECT_DOUBLE_EQ(kept_none, all);
    EXPECT_NEAR(all - kept_sel, 5 * heads * s * s, 1e-9 * all);  // the dropped core, Korthikanti's 5as^2b/t
    EXPECT_NEAR(none - sel, (L - 1) * (all - kept_sel), 1e-9 * none);
    EXPECT_NEAR(none - full, (L - 1) * (all - kept_full), 1e-9 * none);
    EXPECT_NEAR(kept_full, 2 * s * m.hidden, 1e-9 * all);  // the layer's input, 2 s b h bytes (fp16, no SP)
}

// The unfused core's ops against their closed forms (graph/transformer_attention.cpp MaterializedAttentionCore): per
// score element the passes read and write 4w bytes forward and 7w backward, dropout 2w + 1 more each way; the
// GEMMs read Q, K, V (expanded to the query heads) and O once each forward, twice backward; every query-key pair
// is computed (2 (d_qk + d_v) FLOPs forward, twice that backward), and the forward ops are what selective
// recomputation drops.
TEST(TrainingModel, UnfusedAttentionOpsMatchTheirClosedForms) {
    sc::ModelConfig m = Model("llama3-8b.json");  // GQA: 32 query heads, 8 KV heads
    m.seq = 2048;
    for (bool dropout : {false, true}) {
        SCOPED_TRACE(dropout ? "dropout" : "no dropout");
        sc::KernelChoices k;
        k.flash_attention = false;
        k.dropout = dropout;
        const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,cp=2,dp=1,microbatch=2,batch=2"), k);
        const double w = 2, heads = 2 * 32 / 2.0, sq = 2048 / 2.0, sk = 2048, d = m.head_dim;
        const double scores = heads * sq * sk, q = heads * sq * d * w, kk = heads * sk * d * w, v = kk, o = q;
        double fwd_bytes = 0, bwd_bytes = 0, fwd_flops = 0, bwd_flops = 0, gemm_flops = 0;
        const sc::Block& layer = *job.graph.Find(sc::BlockKind::dense_layer);
        auto core = [](const sc::Op& op) {
            const std::string& n = op.name;
            return n.starts_with("attn.scores") || n.starts_with("attn.softmax") || n.starts_with("attn.dropout") ||
                   n.starts_with("attn.context");
        };
        for (const sc::Op& op : layer.forward) {
            EXPECT_NE(op.kind, sc::OpKind::attention) << op.name;
            if (!core(op)) continue;
            EXPECT_EQ(op.rerun_modules & op.drop_all_modules & sc::kRecomputeCoreAttn, sc::kRecomputeCoreAttn)
                << op.name;
            fwd_bytes += job.V(op.bytes), fwd_flops += job.V(op.flops);
            if (op.kind == sc::OpKind::matmul) gemm_flops += job.V(op.flops);
        }
        for (const sc::Op& op : layer.backward)
            if (core(op)) bwd_bytes += job.V(op.bytes), bwd_flops += job.V(op.flops);
        const double drop = dropout ? (2 * w + 1) * scores : 0;
        EXPECT_DOUBLE_EQ(fwd_bytes, 4 * w * scores + drop + q + kk + v + o);
        EXPECT_DOUBLE_EQ(bwd_bytes, 7 * w * scores + drop + 2 * (q + kk + v + o));
        EXPECT_DOUBLE_EQ(gemm_flops, 2 * scores * (d + d));
        EXPECT_DOUBLE_EQ(fwd_flops, gemm_flops + 5 * scores + (dropout ? 2 * scores : 0));
        EXPECT_DOUBLE_EQ(bwd_flops, 2 * gemm_flops + 4 * scores + (dropout ? scores : 0));
    }
}

}  // namespace

// A kernel measured only without the causal mask runs causal work at its curve times the causal ratio the figures
// give for a kernel measured both ways (FlashAttention-3 forward, hd128: 0.585 causal / 0.645 non-causal at 4k).
TEST(TrainingModel, CausalAttentionRunsAtTheMeasuredCausalRatio) {
    const sc::CalibrationTable& cal = Cal();
    const double fa3 = 0.585 / 0.645, fa2 = 0.323 / 0.372;  // measured.json at 4096 tokens, hd128
    EXPECT_NEAR(sc::CausalEfficiencyRatio(cal, "h100-sxm", sc::AttentionKernel::flash3, true, 128, 4096), fa3, 1e-9);
    EXPECT_NEAR(sc::CausalEfficiencyRatio(cal, "h100-sxm", sc::AttentionKernel::cudnn, true, 128, 4096), fa3, 1e-9);
    EXPECT_NEAR(sc::CausalEfficiencyRatio(cal, "h100-sxm", sc::AttentionKernel::flash2, false, 128, 4096), fa2, 1e-9);
    // Shorter sequences lose more to the masked diagonal blocks.
    EXPECT_LT(sc::CausalEfficiencyRatio(cal, "h100-sxm", sc::AttentionKernel::flash3, true, 128, 1024), fa3);
    // No causal curve anywhere on the accelerator: nothing to scale by.
    EXPECT_EQ(sc::CausalEfficiencyRatio(cal, "mi300x", sc::AttentionKernel::cudnn, true, 128, 4096), 1);
    // The training model: cuDNN's forward (only non-causal measured, 0.616 at 4k) at FA3's ratio; FA3's causal
    // forward at its own causal curve.
    sc::ModelConfig m = Model("llama3-8b.json");
    m.seq = 4096;
    const sc::AttentionShape a = sc::AttentionShapeOf(sc::MakeJob(m, sc::ParseParallelSpec("tp=1,dp=8")));
    const sc::System h100 = LoadSystem("dgx-h100-superpod");
    sc::TrainingOptions cudnn, flash3;
    flash3.attention_kernel = sc::AttentionKernel::flash3;
    EXPECT_NEAR(sc::ComputeModel(h100.accelerator, sc::Precision::bf16, &cal, cudnn, a).AttentionEfficiency(true),
                0.616 * fa3, 1e-9);
    EXPECT_NEAR(sc::ComputeModel(h100.accelerator, sc::Precision::bf16, &cal, flash3, a).AttentionEfficiency(true),
                0.585, 1e-9);
    // cuDNN's backward at its own curve (0.505 at 4k, the FA3 paper's backward panel), not FlashAttention-3's
    // (0.548), at the same causal ratio, and on the graph's FLOPs: the panel counts the kernel's five matmuls, the
    // graph's backward op four (kKernelBackwardWork).
    EXPECT_NEAR(sc::ComputeModel(h100.accelerator, sc::Precision::bf16, &cal, cudnn, a).AttentionEfficiency(false),
                0.505 * fa3 * 4 / 5, 1e-9);
}

// Fused attention takes its efficiency per pass from the measured kernel curves: the backward runs slower than the
// forward on H100 (FlashAttention-3 paper figures), FlashAttention-2 slower than cuDNN, and an accelerator
// without curves keeps the fallback for both.
TEST(TrainingModel, AttentionEfficiencyFollowsTheMeasuredKernel) {
    const sc::System h100 = LoadSystem("dgx-h100-superpod");
    sc::ModelConfig m = Model("llama3-8b.json");
    sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=1,dp=8"));
    const sc::AttentionShape a = sc::AttentionShapeOf(job);
    sc::TrainingOptions cudnn, fa2;
    fa2.attention_kernel = sc::AttentionKernel::flash2;
    sc::ComputeModel c1(h100.accelerator, sc::Precision::bf16, &Cal(), cudnn, a);
    sc::ComputeModel c2(h100.accelerator, sc::Precision::bf16, &Cal(), fa2, a);
    EXPECT_GT(c1.AttentionEfficiency(true), c1.AttentionEfficiency(false));
    EXPECT_GT(c1.AttentionEfficiency(false), c2.AttentionEfficiency(false));
    EXPECT_GT(c1.AttentionEfficiency(true), c2.AttentionEfficiency(true));
    // Backward time = FLOPs / (bf16 peak x backward efficiency).
    const double flops = 1e12;
    EXPECT_NEAR(c2.Seconds(sc::OpKind::attention, flops, 0, false),
                flops / (sc::PeakFlops(h100.accelerator, sc::Precision::bf16) * c2.AttentionEfficiency(false)), 1e-12);
    const sc::System a100 = LoadSystem("dgx-a100-superpod");
    sc::ComputeModel c3(a100.accelerator, sc::Precision::bf16, &Cal(), cudnn, a);
    EXPECT_EQ(c3.AttentionEfficiency(true), cudnn.fallback_attention_efficiency);
    EXPECT_EQ(c3.AttentionEfficiency(false), cudnn.fallback_attention_efficiency);
    // An explicit efficiency overrides the curves.
    sc::TrainingOptions fixed;
    fixed.attention_efficiency = 0.4;
    sc::ComputeModel c4(h100.accelerator, sc::Precision::bf16, &Cal(), fixed, a);
    EXPECT_EQ(c4.AttentionEfficiency(false), 0.4);
}

// fp8 GEMMs bring Transformer Engine's memory passes into the graph: a transpose of a fused input (1 byte per
// element), a cast_transpose of a 16-bit input (4) and of every output gradient (4); a bf16 model has none
// (they vanish from its traces). The LM head stays 16-bit and costs what it costs in the bf16 model.
TEST(TrainingModel, Fp8CastsAreOpsAndTheHeadStaysSixteenBit) {
    sc::ModelConfig m = Model("llama3-8b.json");
    m.precision.compute = sc::Precision::fp8;
    sc::Job fp8 = sc::MakeJob(m, sc::ParseParallelSpec("tp=1,dp=8"));
    m.precision.compute = sc::Precision::bf16;
    sc::Job bf16 = sc::MakeJob(m, sc::ParseParallelSpec("tp=1,dp=8"));
    const double T = 1.0 * m.seq, h = m.hidden, q = 1.0 * m.heads * m.head_dim;
    auto op = [](const sc::Job& j, sc::BlockKind k, const std::string& name) -> const sc::Op& {
        const sc::Block& b = *j.graph.Find(k);
        for (const sc::Op& o : b.forward)
            if (o.name == name) return o;
        for (const sc::Op& o : b.backward)
            if (o.name == name) return o;
        throw std::runtime_error("no op " + name);
    };
    using sc::BlockKind;
    EXPECT_DOUBLE_EQ(fp8.V(op(fp8, BlockKind::dense_layer, "attn.qkv.fp8_input").bytes), 1 * T * h);
    EXPECT_DOUBLE_EQ(fp8.V(op(fp8, BlockKind::dense_layer, "attn.out.fp8_input").bytes), 4 * T * q);
    EXPECT_DOUBLE_EQ(fp8.V(op(fp8, BlockKind::dense_layer, "attn.out.fp8_grad_cast").bytes), 4 * T * h);
    EXPECT_DOUBLE_EQ(bf16.V(op(bf16, BlockKind::dense_layer, "attn.out.fp8_input").bytes), 0);
    EXPECT_TRUE(op(fp8, BlockKind::head, "head.logits").high_precision);
    EXPECT_FALSE(op(fp8, BlockKind::dense_layer, "attn.qkv").high_precision);
    // The bf16 model's trace has no fp8 node; the fp8 model's has them.
    auto count = [](const sc::Job& j) {
        sc::StageProgram prog = sc::BuildStageProgram(j, 0);
        int n = 0;
        for (const sc::ProgNode& node : prog.nodes) n += prog.names[node.name].find(".fp8_") != std::string::npos;
        return n;
    };
    EXPECT_EQ(count(bf16), 0);
    EXPECT_GT(count(fp8), 0);
    // The head's GEMM in the fp8 model runs at the bf16 model's speed.
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    sc::TrainingOptions opt;
    sc::ComputeModel c8(sys.accelerator, sc::Precision::fp8, &Cal(), opt),
        c16(sys.accelerator, sc::Precision::bf16, &Cal(), opt);
    const sc::Op& head = op(fp8, BlockKind::head, "head.logits");
    EXPECT_DOUBLE_EQ(c8.Seconds(head.kind, fp8.V(head.flops), bf16.V(head.bytes), true, 1, true),
                     c16.Seconds(head.kind, fp8.V(head.flops), bf16.V(head.bytes)));
    EXPECT_LT(c8.Seconds(head.kind, fp8.V(head.flops), bf16.V(head.bytes)),
              c16.Seconds(head.kind, fp8.V(head.flops), bf16.V(head.bytes)));
}

namespace {

// Meta's 24K-GPU RoCE cluster (Llama 3 paper Sec. 3.3.1): 8-GPU NVLink servers, non-blocking pods of 3,072
// GPUs, 1:7 above them. Llama 3 405B's 16K-GPU layout (TP8 PP16 DP128) with DP outermost crosses pods: its
// data-parallel groups have 24 members in each full pod but only 8 in the sixth, of which the job holds 1,024
// GPUs (16,384 = 5 1/3 pods): the worst-placed member reaches 8 peers in its pod and the rest at 1/7 of the rate.
TEST(MetaRoceCluster, DataParallelGroupsCrossPodsAtOneSeventh) {
    sc::System meta = LoadSystem("meta-h100-roce-24k");
    ASSERT_EQ(meta.levels.size(), 3u);
    EXPECT_EQ(meta.levels[1].size, 3072);
    EXPECT_EQ(meta.TotalAccelerators(), 24576);
    EXPECT_DOUBLE_EQ(meta.levels[2].oversubscription, 7);
    EXPECT_DOUBLE_EQ(meta.levels[2].EffectiveGBps(), meta.levels[1].EffectiveGBps() / 7);
    sc::ParallelConfig p = sc::ParseParallelSpec("tp=8,pp=16,dp=128,order=tp-cp-pp-dp");
    sc::Layout layout(p);
    sc::CommModel net(meta, layout, true);
    EXPECT_EQ(net.MembersPerLevel(sc::GroupKind::dp), (std::vector<int>{1, 8, 128}));
    // The same cluster without the taper: only the outer level's time changes.
    sc::System flat = meta;
    flat.levels[2].oversubscription = 1;
    sc::CommModel flat_net(flat, layout, true);
    const double bytes = 1e9;
    const double tapered = net.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::dp, bytes);
    const double open = flat_net.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::dp, bytes);
    // Outer level: a ring all-reduce over k = 128/8 = 16 shares of bytes/8, 2(k-1)/k of a share per rank, at 1/7
    // of the rate instead of all of it: 6 times the untapered bandwidth term more.
    const double k = 16, share = bytes / 8, bw = meta.levels[2].bandwidth_gbps * 1e9 * meta.levels[2].efficiency;
    EXPECT_NEAR(tapered - open, 2 * (k - 1) / k * share / bw * 6, 1e-6 * tapered);
    // Tensor groups stay inside a server either way.
    EXPECT_EQ(net.MembersPerLevel(sc::GroupKind::tp), (std::vector<int>{8, 8, 8}));
}

}  // namespace

// Context parallelism's ring runs beside a fused attention core (Transformer Engine's AttnFuncWithCP): at 64K tokens
// on CP2 over NVLink the core's work covers the K/V exchange, so none of it is exposed; the unfused core (Megatron
// 2021's, flash_attention=off) exchanges before it, blocking, as the graph did for every core before.
TEST(TrainingModel, ContextParallelRingRunsBesideTheFusedCore) {
    sc::ModelConfig m = Model("llama3-8b.json");
    m.layers = 2;
    m.seq = 65536;
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    const sc::ParallelConfig p = sc::ParseParallelSpec("tp=1,cp=2,dp=1,microbatch=1,batch=1");
    const sc::TrainingOptions fused;
    const sc::TrainingEstimate f = sc::EstimateTraining(sc::MakeJob(m, p, fused.kernels), sys, &Cal(), fused);
    EXPECT_EQ(f.step.cp_comm, 0);
    sc::TrainingOptions unfused;
    unfused.kernels.flash_attention = false;
    const sc::TrainingEstimate u = sc::EstimateTraining(sc::MakeJob(m, p, unfused.kernels), sys, &Cal(), unfused);
    EXPECT_GT(u.step.cp_comm, 0);
    // A slow enough exchange shows past the core: what the core does not cover, and no more than the whole exchange.
    sc::System slow = sys;
    for (auto& level : slow.levels) level.bandwidth_gbps /= 1000;
    const sc::TrainingEstimate s = sc::EstimateTraining(sc::MakeJob(m, p, fused.kernels), slow, &Cal(), fused);
    const sc::TrainingEstimate s_unfused =
        sc::EstimateTraining(sc::MakeJob(m, p, unfused.kernels), slow, &Cal(), unfused);
    EXPECT_GT(s.step.cp_comm, 0);
    EXPECT_LT(s.step.cp_comm, s_unfused.step.cp_comm);
}
