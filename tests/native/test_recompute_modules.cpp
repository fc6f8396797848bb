// Megatron-Core's selective recomputation by module (`recompute_modules=`, graph/recompute_modules.h): the key's
// rules, what each module stops keeping in closed form on small dense, MoE and MLA layers, that the backward re-runs
// what it drops (the MoE layer's all-to-alls too), and the trace charging what the estimate charges.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/error.h"
#include "parallel/job.h"
#include "parallel/memory.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace_test_util.h"
#include "training/estimate.h"

namespace {

// Bytes a layer of `kind` keeps for its backward under selective recomputation of `modules` (none: no recomputation).
double Kept(const sc::ModelConfig& m, sc::BlockKind kind, const std::string& modules) {
    const std::string spec = "tp=1,dp=1,batch=1" + (modules.empty() ? "" : ",recompute_modules=" + modules);
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec(spec));
    return job.sums[static_cast<int>(kind)].saved[static_cast<int>(job.par.recompute)];
}

std::string SpecError(const std::string& spec) {
    return sctest::ErrorOf([&] { sc::MakeJob(sctest::SmallMoe(), sc::ParseParallelSpec(spec)); });
}

TEST(RecomputeModules, KeyIsStrictAndRoundTrips) {
    const sc::ParallelConfig p = sc::ParseParallelSpec("tp=1,dp=8,recompute_modules=moe_act+mla_up_proj+layernorm");
    EXPECT_EQ(p.recompute, sc::Recompute::selective);  // naming modules is enough
    EXPECT_EQ(p.recompute_modules, sc::kRecomputeMoeAct | sc::kRecomputeMlaUpProj | sc::kRecomputeLayernorm);
    const std::string spec = sc::ParallelSpecString(p);
    EXPECT_NE(spec.find(",recompute_modules=layernorm+mla_up_proj+moe_act"), std::string::npos) << spec;
    EXPECT_EQ(sc::ParseParallelSpec(spec).recompute_modules, p.recompute_modules);
    EXPECT_EQ(sc::ParseParallelSpec("recompute=selective").selective_modules(), sc::kRecomputeCoreAttn);
    EXPECT_EQ(SpecError("tp=2,sp=1,ep=2,recompute=selective,recompute_modules=moe+shared_experts"), "");
    std::string e = SpecError("recompute_modules=mhc");
    EXPECT_NE(e.find("recompute_modules: \"mhc\" is not one of core_attn, layernorm"), std::string::npos) << e;
    e = SpecError("recompute_modules=moe++mlp");
    EXPECT_NE(e.find("an empty module name"), std::string::npos) << e;
    e = SpecError("recompute=full,recompute_modules=moe");
    EXPECT_NE(e.find("recompute_modules: recompute_modules=moe are Megatron's selective recomputation; recompute=full"),
              std::string::npos)
        << e;
}

// SmallGpt made Llama-like (SwiGLU, RMSNorm, rotary, GQA) and SmallMoe: one microbatch of 128 tokens, h 256, bf16.
sc::ModelConfig Dense() {
    sc::ModelConfig m = sctest::SmallMoe();
    m.moe = {};
    return m;
}
constexpr double T = 128, h = 256, w = 2, a = 8;

TEST(RecomputeModules, EachModuleDropsWhatItsRecomputationRebuilds) {
    const sc::ModelConfig dense = Dense(), moe = sctest::SmallMoe();
    const double f = 1024, k = 2, fe = 512, ffs = 512;  // ffn, top_k, expert_ffn, one shared expert
    const auto dense_dropped = [&](const std::string& mods) {
        return Kept(dense, sc::BlockKind::dense_layer, "") - Kept(dense, sc::BlockKind::dense_layer, mods);
    };
    const auto moe_dropped = [&](const std::string& mods) {
        return Kept(moe, sc::BlockKind::moe_layer, "") - Kept(moe, sc::BlockKind::moe_layer, mods);
    };
    // core_attn (selective's default): the core's fp32 log-sum-exp per query row and head; Q, K, V stay.
    EXPECT_DOUBLE_EQ(dense_dropped("core_attn"), T * a * 4);
    // layernorm: the two norms' outputs, kept as the QKV and gate/up GEMMs' inputs (in an MoE layer the router's,
    // which the shared experts' GEMM shares: one tensor, kept once).
    EXPECT_DOUBLE_EQ(dense_dropped("layernorm"), 2 * T * h * w);
    EXPECT_DOUBLE_EQ(moe_dropped("layernorm"), 2 * T * h * w);
    // mlp: SwiGLU's two inputs and its output (the down-projection's input); the MLP's input stays.
    EXPECT_DOUBLE_EQ(dense_dropped("mlp"), 3 * T * f * w);
    EXPECT_DOUBLE_EQ(moe_dropped("mlp"), 0);
    // moe_act: the experts' SwiGLU output, the input of their down-projection, for every routed copy.
    EXPECT_DOUBLE_EQ(moe_dropped("moe_act"), T * k * fe * w);
    // shared_experts: their SwiGLU's inputs and output.
    EXPECT_DOUBLE_EQ(moe_dropped("shared_experts"), 3 * T * ffs * w);
    // moe: all after the router's input: the top-k scores, the routed copies the experts take in, their SwiGLU's
    // inputs and output, and the shared experts'.
    EXPECT_DOUBLE_EQ(moe_dropped("moe"), T * k * w + T * k * h * w + 3 * T * k * fe * w + 3 * T * ffs * w);
    // Modules add up.
    EXPECT_DOUBLE_EQ(moe_dropped("layernorm+moe_act+core_attn"),
                     moe_dropped("layernorm") + moe_dropped("moe_act") + moe_dropped("core_attn"));
}

// A 16-bit tensor two GEMMs take in is one tensor to autograd, kept once: the shared experts add only their own
// activations to an MoE layer in bf16, and in fp8 their GEMM's own quantized copy of the input (1 byte an element)
// beside its fp8 down-projection input and the 16-bit SwiGLU inputs.
TEST(RecomputeModules, ATensorTwoGemmsKeepIsKeptOnce) {
    for (sc::Precision p : {sc::Precision::bf16, sc::Precision::fp8}) {
        sc::ModelConfig with = sctest::SmallMoe(), without = with;
        with.precision.compute = without.precision.compute = p;
        without.moe.shared_experts = 0;
        const double ffs = 512, fp8 = p == sc::Precision::fp8 ? 1 : 0, down_input = fp8 ? 1 : w;
        EXPECT_DOUBLE_EQ(Kept(with, sc::BlockKind::moe_layer, "") - Kept(without, sc::BlockKind::moe_layer, ""),
                         T * h * fp8 + 2 * T * ffs * w + T * ffs * down_input)
            << sc::NameOf(p);
    }
}

// MLA (DeepSeek-V3's attention, small): the up-projections make Q, K and V, which the core needs; recomputing them
// drops those, while the up-projections' own inputs (the compressed latents) stay.
TEST(RecomputeModules, MlaUpProjectionsDropQKV) {
    sc::ModelConfig m = Dense();
    m.mla = {64, 32, 16, 8, 16};  // q_lora, kv_lora, nope, rope, v head dims
    const double dqk = 16 + 8, dv = 16;
    EXPECT_DOUBLE_EQ(Kept(m, sc::BlockKind::dense_layer, "") - Kept(m, sc::BlockKind::dense_layer, "mla_up_proj"),
                     (T * a * dqk + T * a * dqk + T * a * dv) * w);
}

// What a module drops the backward rebuilds: recomputation costs time where none was charged, the MoE layer re-runs
// its all-to-alls (its activation alone does not), and the trace's nodes carry what the estimate charges.
TEST(RecomputeModules, TheBackwardRerunsWhatWasDroppedAndTheTraceAgrees) {
    const sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    const sc::TrainingOptions opt;
    const auto estimate = [&](const std::string& spec) {
        const sc::Job job = sc::MakeJob(sctest::SmallMoe(), sc::ParseParallelSpec(spec));
        const sc::TrainingEstimate e = sc::EstimateTraining(job, sys, &sctest::MeasuredCalibration(), opt);
        const double charged = sctest::ChargedComputeSeconds(e);
        EXPECT_NEAR(sctest::TraceComputeSeconds(job, sys, &sctest::MeasuredCalibration(), opt), charged, 1e-9 * charged)
            << spec;
        return e.step;
    };
    const std::string base = "tp=2,sp=1,ep=2,dp=2,batch=4";
    const sc::StepBreakdown none = estimate(base), act = estimate(base + ",recompute_modules=moe_act+layernorm"),
                            moe = estimate(base + ",recompute_modules=moe");
    EXPECT_EQ(none.recompute, 0);
    EXPECT_GT(act.recompute, 0);
    EXPECT_GT(moe.recompute, act.recompute);
    EXPECT_DOUBLE_EQ(act.ep_comm, none.ep_comm);
    EXPECT_GT(moe.ep_comm, none.ep_comm);
}

// The recompute nodes of whole modules (the MoE layer's all-to-alls among them) keep ASTRA-sim's rules (our reader)
// and the independent checker's.
TEST(RecomputeModules, TracesKeepAstraSimsRules) {
    const sc::Job job = sc::MakeJob(sctest::SmallMoe(), sc::ParseParallelSpec("tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,zero=1,"
                                                                              "recompute_modules=moe+layernorm+mlp"));
    sctest::ExpectTracesKeepAstraSimsRules(job, "recompute-modules");
}

}  // namespace
