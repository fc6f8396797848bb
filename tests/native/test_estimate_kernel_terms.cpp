// The named kernel terms of the training breakdown (training/estimate.h): the measured per-kernel fixed cost
// (training/kernel_floor.h), Transformer Engine's fp8 weight quantization (training/fp8_overheads.h) beside the
// graph's fp8 casts, and the MoE routing ops. Closed forms: kernel count x floor, weights x bytes / bandwidth.
#include <gtest/gtest.h>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "parallel/job.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace/summary.h"
#include "trace_test_util.h"
#include "training/compute_model.h"
#include "training/estimate.h"
#include "training/fp8_overheads.h"
#include "training/kernel_floor.h"
#include "training/timeline.h"

namespace {

const std::string kRoot = SC_SOURCE_DIR;

sc::System LoadSystem(const std::string& id) { return sctest::LoadSystemPreset(id); }
const sc::CalibrationTable& Cal() { return sctest::MeasuredCalibration(); }

sc::ModelConfig Model(const std::string& file) {
    return sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/" + file));
}

// A Llama-shaped model so small that every kernel's roofline is under 1% of H100's measured floor (5.07 us):
// its largest GEMM, the LM head, is 2 x 16 x 256 x 32 = 262k FLOPs, 27 ns even at the 1% efficiency floor of
// the GEMM curve.
sc::ModelConfig TinyModel() {
    sc::ModelConfig m = Model("llama3-8b.json");
    m.layers = 2, m.hidden = 32, m.heads = 1, m.kv_heads = 1, m.head_dim = 32, m.ffn = 64, m.vocab = 256;
    m.seq = 16;
    return m;
}

// Kernels one microbatch runs on a one-stage job: every non-collective op of the graph that moves or computes
// something (fp8 casts are absent at bf16), forward and backward, per block.
int KernelsPerMicrobatch(const sc::Job& job) {
    int n = 0;
    for (const sc::Block& b : job.graph.blocks) {
        int per = 0;
        for (const auto* ops : {&b.forward, &b.backward})
            for (const sc::Op& op : *ops)
                per += op.kind != sc::OpKind::collective && (job.V(op.flops) > 0 || job.V(op.bytes) > 0);
        n += per * (b.kind == sc::BlockKind::dense_layer ? job.model.layers : 1);
    }
    return n;
}

TEST(EstimateKernelTerms, FixedCostIsKernelCountTimesTheMeasuredFloor) {
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    const sc::Job job = sc::MakeJob(TinyModel(), sc::ParseParallelSpec("tp=1,pp=1,dp=1,microbatch=1,batch=4"));
    const sc::TrainingOptions opt;
    const sc::KernelFloor floor = sc::TrainingKernelFloor(&Cal(), sys.accelerator);
    ASSERT_GT(floor.alpha_s, 5e-6);  // the XLA sm_90 256^3 GEMM (TrainingFloorIsTheWholeTinyGemm)
    const sc::TrainingEstimate e = sc::EstimateTraining(job, sys, &Cal(), opt);
    const int kernels = 4 * KernelsPerMicrobatch(job);  // 4 microbatches
    ASSERT_GT(kernels, 60);
    // Each kernel pays alpha + bytes / bandwidth - roofline, between alpha - 1% and alpha.
    EXPECT_LE(e.step.kernel_fixed, kernels * floor.alpha_s * (1 + 1e-12));
    EXPECT_GE(e.step.kernel_fixed, kernels * floor.alpha_s * 0.99);
}

// The training floor is the whole measured time of the smallest overhead-dominated GEMM (compute roof under a
// tenth of its time): H100 the XLA sm_90 table's 256^3 bf16 GEMM at 6.45 TFLOPS; GB200 the Azure cuBLASLt fp8
// 1024^3 GEMM at 489.2 TFLOPS (0.43 us at the 5,000 TFLOPS fp8 peak: 9.8% of its 4.39 us), shorter than the XLA
// sm_100 table's 256^3 bf16 GEMM (4.96 us), which serving's rule picks at the achieved bandwidth (there the fp8
// operands take 11% of the 1024^3 GEMM); B200 that 256^3 bf16 GEMM at 6.77 TFLOPS (4.96 us).
TEST(EstimateKernelTerms, TrainingFloorIsTheWholeTinyGemm) {
    const sc::KernelFloor h100 = sc::TrainingKernelFloor(&Cal(), LoadSystem("dgx-h100-superpod").accelerator);
    EXPECT_EQ(h100.series, "xla-sm90-bf16");
    EXPECT_NEAR(h100.alpha_s, 2.0 * 256 * 256 * 256 / 6.45e12, 1e-15);
    const sc::Accelerator gb200 = LoadSystem("gb200-nvl72").accelerator;
    const sc::KernelFloor f = sc::TrainingKernelFloor(&Cal(), gb200);
    EXPECT_EQ(f.series, "azure-ndgb200v6-cublaslt-fp8");
    EXPECT_NEAR(f.alpha_s, 2.0 * 1024 * 1024 * 1024 / 489.2e12, 1e-15);
    const sc::KernelFloor serving = sc::MeasuredKernelFloor(&Cal(), gb200, 6.4e12);
    EXPECT_EQ(serving.series, "xla-sm100-bf16");
    EXPECT_NEAR(serving.alpha_s, 2.0 * 256 * 256 * 256 / 6.77e12 - 3.0 * 256 * 256 * 2 / 6.4e12, 1e-15);
    const sc::KernelFloor b200 = sc::TrainingKernelFloor(&Cal(), LoadSystem("dgx-b200-superpod").accelerator);
    EXPECT_EQ(b200.series, "xla-sm100-bf16");
    EXPECT_NEAR(b200.alpha_s, 2.0 * 256 * 256 * 256 / 6.77e12, 1e-15);
}

// The closed form of one kernel: max(roofline, alpha + bytes / bandwidth) - roofline; nothing for an absent op.
TEST(EstimateKernelTerms, FloorExcessClosedForm) {
    sc::KernelFloor f;
    f.alpha_s = 5e-6;
    EXPECT_DOUBLE_EQ(sc::KernelFloorExcess(f, 1e-6, 1, 3e6, 3e12), 5e-6 + 1e-6 - 1e-6);
    EXPECT_DOUBLE_EQ(sc::KernelFloorExcess(f, 1e-3, 1, 3e6, 3e12), 0);  // a long kernel hides its start
    EXPECT_DOUBLE_EQ(sc::KernelFloorExcess(f, 0, 0, 0, 3e12), 0);       // q8 = 0: no kernel at all
    EXPECT_DOUBLE_EQ(sc::KernelFloorExcess(sc::KernelFloor{}, 1e-9, 1, 1, 3e12), 0);
}

// A100's GEMM calibration has no floor point (its curve starts at 1024^3): without the weight-read floor Vidur's
// profile gives it (calibration "weight_read_floor") the term is zero, as it is without a calibration table; with
// it, the term is there.
TEST(EstimateKernelTerms, NoFloorMeasurementNoTerm) {
    const sc::Job job = sc::MakeJob(TinyModel(), sc::ParseParallelSpec("tp=1,pp=1,dp=1,microbatch=1,batch=4"));
    const sc::TrainingOptions opt;
    sc::CalibrationTable no_profile = Cal();
    no_profile.weight_read_floor.clear();
    EXPECT_EQ(sc::EstimateTraining(job, LoadSystem("dgx-a100-superpod"), &no_profile, opt).step.kernel_fixed, 0);
    EXPECT_GT(sc::EstimateTraining(job, LoadSystem("dgx-a100-superpod"), &Cal(), opt).step.kernel_fixed, 0);
    EXPECT_EQ(sc::EstimateTraining(job, LoadSystem("dgx-h100-superpod"), nullptr, opt).step.kernel_fixed, 0);
}

TEST(EstimateKernelTerms, Fp8WeightCastClosedForm) {
    EXPECT_EQ(sc::Fp8WeightCastsPerStep(1, 8), 1);  // cached across microbatches (is_first_microbatch)
    EXPECT_EQ(sc::Fp8WeightCastsPerStep(3, 8), 8);  // ZeRO-3 / FSDP: gathered, so quantized, per microbatch
    // The fp8 GEMM weights of one Llama 3 8B layer at tp=2: QKV, output and the SwiGLU MLP, halved; none in bf16,
    // none in the embedding or the 16-bit LM head.
    sc::ModelConfig m = Model("llama3-8b.json");
    m.precision.compute = sc::Precision::fp8;
    const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,dp=4,batch=8"));
    EXPECT_EQ(sc::Fp8WeightCastBytesPerParam(job), 4);  // delayed: read bf16 (2), write fp8 (1) and its transpose (1)
    const double h = 4096, a = 32, kv = 8, d = 128, f = 14336;
    EXPECT_EQ(sc::Fp8GemmWeightParams(job, *job.graph.Find(sc::BlockKind::dense_layer)),
              (h * (a + 2 * kv) * d + a * d * h + 3 * h * f) / 2);
    EXPECT_EQ(sc::Fp8GemmWeightParams(job, *job.graph.Find(sc::BlockKind::embedding)), 0);
    EXPECT_EQ(sc::Fp8GemmWeightParams(job, *job.graph.Find(sc::BlockKind::head)), 0);
    m.precision.compute = sc::Precision::bf16;
    const sc::Job bf16 = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,dp=4,batch=8"));
    EXPECT_EQ(sc::Fp8GemmWeightParams(bf16, *bf16.graph.Find(sc::BlockKind::dense_layer)), 0);
}

// Llama 3 8B in fp8 on 8 H100s, 4 microbatches: ZeRO-3 quantizes the weights 4 times a step, ZeRO-1 once, so
// the fp8 term differs by 3 quantizations of the fp8 GEMM weights (QKV, output, SwiGLU MLP of 32 layers; not
// the embedding, the norms or the 16-bit LM head), 4 bytes each at the achieved HBM bandwidth. A bf16 model
// has no fp8 term at all.
TEST(EstimateKernelTerms, Fp8WeightsQuantizedOncePerStepOrPerMicrobatch) {
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    sc::ModelConfig m = Model("llama3-8b.json");
    const sc::TrainingOptions opt;
    auto fp8_part = [&](sc::Precision p, int zero) {
        m.precision.compute = p;
        const std::string spec = "tp=1,pp=1,dp=8,microbatch=1,batch=32,zero=" + std::to_string(zero);
        return sc::EstimateTraining(sc::MakeJob(m, sc::ParseParallelSpec(spec)), sys, &Cal(), opt).step.fp8_cast;
    };
    EXPECT_EQ(fp8_part(sc::Precision::bf16, 1), 0);
    EXPECT_EQ(fp8_part(sc::Precision::bf16, 3), 0);
    const double h = 4096, a = 32, kv = 8, d = 128, f = 14336, L = 32;
    const double weights = L * (h * (a + 2 * kv) * d + a * d * h + 3 * h * f);
    const sc::ComputeModel cm(sys.accelerator, sc::Precision::fp8, &Cal(), opt);
    const double expected = 3 * weights * 4 / cm.memory_bytes_per_s();
    const double z1 = fp8_part(sc::Precision::fp8, 1), z3 = fp8_part(sc::Precision::fp8, 3);
    EXPECT_NEAR(z3 - z1, expected, 1e-9 * expected);
    EXPECT_GT(z1, weights * 4 / cm.memory_bytes_per_s());  // the graph's activation casts come on top
}

// Transformer Engine keeps an fp8 GEMM's input for the weight gradient as its fp8 copy: per token and layer the
// QKV, gate/up and down projections keep h, h and f bytes instead of twice that, and the output projection keeps
// its own 1-byte copy of O beside the attention core's 16-bit O (which its backward reads): (h + f) bytes fewer a
// token and layer than the same model in bf16. Activations precision (bf16) and everything else stay.
TEST(EstimateKernelTerms, Fp8GemmsKeepTheirInputsInFp8) {
    sc::ModelConfig m = Model("llama3-8b.json");
    const auto saved = [&](sc::Precision p) {
        m.precision.compute = p;
        const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=1,pp=1,dp=1,microbatch=1,batch=1"));
        return job.sums[static_cast<int>(sc::BlockKind::dense_layer)].saved[0];
    };
    const double h = 4096, f = 14336, tokens = 8192;
    const double bf16 = saved(sc::Precision::bf16), fp8 = saved(sc::Precision::fp8);
    EXPECT_DOUBLE_EQ(bf16 - fp8, tokens * (h + f));
}

// The MoE router, top-k, permute / sort / unsort and combine are their own part; a dense model has none.
TEST(EstimateKernelTerms, MoeRoutingIsAPartOnlyForMoe) {
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    const sc::TrainingOptions opt;
    const sc::TrainingEstimate moe = sc::EstimateTraining(
        sc::MakeJob(Model("mixtral-8x7b.json"), sc::ParseParallelSpec("tp=2,pp=4,dp=16,ep=8,sp=1,batch=256")), sys,
        &Cal(), opt);
    const sc::TrainingEstimate dense = sc::EstimateTraining(
        sc::MakeJob(Model("llama3-8b.json"), sc::ParseParallelSpec("tp=1,dp=8,batch=32")), sys, &Cal(), opt);
    EXPECT_GT(moe.step.moe_routing, 0);
    EXPECT_LT(moe.step.moe_routing, moe.step.compute);
    EXPECT_EQ(dense.step.moe_routing, 0);
}

}  // namespace

namespace {}  // namespace

TEST(EstimateKernelTerms, TraceDurationsChargeWhatTheEstimateCharges) {
    // One source of truth: the ET files' duration_micros come from NodeSeconds, so the trace must carry the
    // per-kernel fixed cost, fp8's weight quantization, the SMs userbuffers' TP overlap takes from the layer GEMMs
    // and every kernel choice's ops (unfused attention's s x s passes, dropout masks, unfused gradient
    // accumulation) exactly as the estimate's parts do: compute (TP-overlap SMs included) + recompute + kernel
    // fixed + MoE routing + fp8 casts is every compute node of a one-stage program.
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    ASSERT_GT(sc::TrainingKernelFloor(&Cal(), sys.accelerator).alpha_s, 0);
    sc::ModelConfig m = Model("llama3-8b.json");
    m.layers = 2, m.seq = 1024;
    std::vector<sc::KernelChoices> choices(5);
    choices[1].flash_attention = false;
    choices[2].flash_attention = false, choices[2].dropout = true, choices[2].grad_accumulation_fusion = false;
    choices[3].dropout = true, choices[3].grad_accumulation_fusion = false;
    choices[4].fused_elementwise = false;
    for (const char* spec :
         {"tp=1,pp=1,dp=1,microbatch=1,batch=2", "tp=1,pp=1,dp=1,batch=2,recompute=full",
          "tp=1,pp=1,dp=1,batch=2,recompute=selective", "tp=1,pp=1,dp=1,batch=2,recompute=op",
          "tp=2,sp=1,pp=1,dp=1,batch=2,recompute=op", "tp=1,pp=1,dp=2,microbatch=1,batch=8,zero=1",
          "tp=1,pp=1,dp=2,microbatch=1,batch=8,zero=3", "tp=2,sp=1,pp=1,dp=1,batch=2,recompute=full"}) {
        for (sc::Precision p : {sc::Precision::bf16, sc::Precision::fp8}) {
            for (size_t c = 0; c < choices.size(); ++c) {
                const sc::KernelChoices& k = choices[c];
                SCOPED_TRACE(std::string(spec) + " " + sc::NameOf(p) + (k.flash_attention ? " fused" : " unfused") +
                             (k.dropout ? " dropout" : "") + (k.grad_accumulation_fusion ? "" : " unfused-accum") +
                             (k.fused_elementwise ? "" : " eager"));
                m.precision.compute = p;
                sc::TrainingOptions opt;
                opt.kernels = k;
                opt.overlap_tp = true;  // userbuffers: its SMs count under TP > 1 with SP
                const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec(spec), k);
                const sc::TrainingEstimate e = sc::EstimateTraining(job, sys, &Cal(), opt);
                ASSERT_GT(e.step.kernel_fixed, 0);
                EXPECT_EQ(e.step.comm_sms > 0, job.par.tp > 1);
                EXPECT_EQ(e.step.fp8_cast > 0, p == sc::Precision::fp8);
                const double charged = sctest::ChargedComputeSeconds(e);
                EXPECT_NEAR(sctest::TraceComputeSeconds(job, sys, &Cal(), opt), charged, 1e-9 * charged);
            }
        }
    }
}

TEST(EstimateKernelTerms, TraceChargesTpOverlapSmsOnDenseAndMoeLayers) {
    // A dense layer then an MoE layer whose experts split over TP (expert TP: the MoE block's TP collectives are
    // its token gathers, larger than the attention's): each layer GEMM in the trace loses the SMs of its own
    // block's collectives, as the estimate charges them.
    const sc::System sys = LoadSystem("dgx-h100-superpod");
    sc::ModelConfig m = Model("mixtral-8x7b.json");
    m.layers = 2, m.seq = 1024, m.moe.dense_layers = 1;
    sc::TrainingOptions opt;
    opt.overlap_tp = true;
    for (sc::UserbufferOverlap o : {sc::UserbufferOverlap{16, true}, sc::UserbufferOverlap{16, false}}) {
        sc::TpOverlapKernels k;
        k.userbuffers = {o, o, o, o, o, o};
        const sc::Job job = sc::MakeJob(m, sc::ParseParallelSpec("tp=2,sp=1,etp=2,ep=1,pp=1,dp=1,batch=2"));
        const sc::TrainingEstimate e = sc::EstimateTraining(job, sys, &Cal(), opt, k);
        ASSERT_GT(e.step.comm_sms, 0);
        const sc::StageProgram prog = sc::BuildStageProgram(job, 0);
        const std::vector<double> secs = sc::NodeSeconds(job, prog, sys, &Cal(), opt, k);
        double total = 0;
        for (size_t i = 0; i < prog.nodes.size(); ++i)
            if (prog.nodes[i].type == sc::EtNodeType::comp && prog.nodes[i].role != sc::NodeRole::optimizer)
                total += secs[i];
        const double charged =
            e.step.compute + e.step.recompute + e.step.kernel_fixed + e.step.moe_routing + e.step.fp8_cast;
        EXPECT_NEAR(total, charged, 1e-9 * charged) << (o.sm_margin ? "margin" : "no margin");
    }
}

TEST(EstimateKernelTerms, KernelChoicesAreNodesOfTheTrace) {
    // Each choice shows in the trace as ops of its own name: the unfused core's score GEMMs and softmax in place of
    // the fused core, the dropout mask in the residual adds' bytes, one gradient accumulation per block and
    // backward; and it costs time, the same in the trace as in the estimate (above).
    sc::ModelConfig m = Model("llama3-8b.json");
    m.layers = 2, m.seq = 1024;
    const sc::ParallelConfig par = sc::ParseParallelSpec("tp=1,pp=1,dp=1,microbatch=1,batch=2");
    auto count = [](const sc::StageProgram& prog, const std::string& suffix) {
        int n = 0;
        for (const sc::ProgNode& node : prog.nodes) n += prog.names[node.name].ends_with(suffix);
        return n;
    };
    const sc::StageProgram fused = sc::BuildStageProgram(sc::MakeJob(m, par), 0);
    EXPECT_EQ(count(fused, "attn.core"), 2 * 2);  // 2 layers x 2 microbatches
    EXPECT_EQ(count(fused, "attn.softmax"), 0);
    EXPECT_EQ(count(fused, "grad_accum"), 0);
    sc::KernelChoices legacy;
    legacy.flash_attention = false, legacy.dropout = true, legacy.grad_accumulation_fusion = false;
    const sc::Job job = sc::MakeJob(m, par, legacy);
    const sc::StageProgram old = sc::BuildStageProgram(job, 0);
    EXPECT_EQ(count(old, "attn.core"), 0);
    EXPECT_EQ(count(old, "attn.softmax"), 2 * 2);
    EXPECT_EQ(count(old, "attn.dropout"), 2 * 2);
    EXPECT_EQ(count(old, "grad_accum"), (2 + 2) * 2);  // embedding, 2 layers, head; per microbatch
    // The trace summary counts the unfused core's score GEMMs as attention, not as weight GEMMs: every query-key
    // pair, s^2 against the fused core's causal s (s + 1) / 2 per head and sequence.
    const sc::RankClass a = sc::SummarizeProgram(sc::MakeJob(m, par), fused);
    const sc::RankClass b = sc::SummarizeProgram(job, old);
    EXPECT_DOUBLE_EQ(b.matmul_flops, a.matmul_flops);
    EXPECT_NEAR(b.attention_flops, a.attention_flops * 2 * 1024 / 1025, 1e-9 * b.attention_flops);
    // The residual add carries its one-byte mask: (3w + 1) bytes per element forward instead of 3w.
    const sc::Block& layer = *job.graph.Find(sc::BlockKind::dense_layer);
    for (const sc::Op& op : layer.forward)
        if (op.name == "attn.residual") {
            const double elems = 1024.0 * m.hidden;  // one microbatch of one sequence
            EXPECT_DOUBLE_EQ(job.V(op.bytes), elems * (3 * 2 + 1));
            EXPECT_DOUBLE_EQ(job.V(op.saved_bytes), elems);
        }
}
