// Records of data/training_measured.json -> validation rows: the model, layout, options and cluster
// of each published run, its measurement converted to an iteration time, and the prediction.
//
// What is compared: the iteration time. When a source published a throughput instead (TFLOP/s per GPU,
// tokens/s per GPU, MFU), it is converted to seconds with that source's own FLOP formula, and the
// conversion is checked against the other numbers of the record (so it is exact). Memory is compared where a
// source published it (Korthikanti et al. 2022 Fig. 1, BLOOM).
#include "validation_rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "parallel/job.h"
#include "test_util.h"
#include "training/sweep.h"

namespace validation {

using nlohmann::json;

const json& Records() {
    static const json j = json::parse(sctest::ReadFile(kRoot + "/data/training_measured.json"));
    return j;
}

const sc::System& PresetSystem(const std::string& id, const std::string& accelerator) {
    static std::map<std::string, sc::System> cache;
    const std::string key = id + "/" + accelerator;
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    std::string text = sctest::ReadFile(kRoot + "/presets/systems/" + id + ".json");
    std::string acc = json::parse(text)["accelerator"];
    sc::System s = sc::ParseSystem(text, sctest::ReadFile(kRoot + "/presets/hardware/" + acc + ".json"));
    if (!accelerator.empty())
        s.accelerator = sc::ParseAccelerator(sctest::ReadFile(kRoot + "/presets/hardware/" + accelerator + ".json"));
    return cache[key] = s;
}

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

const sc::CalibrationTable& Calibration() {
    static const sc::CalibrationTable t =
        sc::ParseCalibration(sctest::ReadFile(kRoot + "/presets/calibration/measured.json"));
    return t;
}

// ------------------------------------------------------------------------------------ published formulas

// Narayanan et al. 2021 Eq. 3: FLOPs per iteration with full activation recomputation (4 forward passes),
// 96 B s l h^2 (1 + s/6h + V/16lh). Megatron-LM, MT-NLG and Megatron-DeepSpeed (BLOOM) report "TFLOP/s per
// GPU" as this over the iteration time.
double Eq3Flops(double B, double s, double l, double h, double V) {
    return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}
// Korthikanti et al. 2022: model FLOPs (no recomputation) 72 B s l h^2 (1 + s/6h + V/12lh), the numerator
// of their MFU (reproduces the MFUs of the record to 0.1%, checked below).
double ModelFlops72(double B, double s, double l, double h, double V) {
    return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

// What every family sets alike: the record's key, the citation, the cluster preset, and tp, pp, dp as the
// record gives them.
Row StartRow(const json& r, const char* source, const char* system) {
    Row row;
    row.key = r["key"];
    row.source = source;
    row.system = system;
    const json& p = r["parallel"];
    row.par.tp = p["tp"];
    row.par.pp = p["pp"];
    row.par.dp = p["dp"];
    return row;
}

// GPT-3-style (Megatron GPT): learned positions, LayerNorm, GeLU MLP, biases, tied embeddings.
sc::ModelConfig GptModel(const std::string& name, const json& m) {
    sc::ModelConfig c;
    c.name = name;
    c.source = "data/training_measured.json";
    c.layers = m["layers"];
    c.hidden = m["hidden"];
    c.heads = m["heads"];
    c.kv_heads = c.heads;
    c.ffn = m["ffn"];
    c.vocab = m["vocab"];
    c.seq = m["seq"];
    c.mlp = sc::MlpKind::gelu;
    c.norm = sc::NormKind::layernorm;
    c.position = sc::PositionKind::learned;
    c.tied_embeddings = true;
    c.bias = true;
    sc::DeriveHeadDim(c);
    return c;
}

// Llama-style: rotary positions, RMSNorm, SwiGLU, no biases, untied embeddings, grouped-query attention.
sc::ModelConfig LlamaModel(const std::string& name, const json& m) {
    sc::ModelConfig c = GptModel(name, m);
    c.kv_heads = m["kv_heads"];
    c.mlp = sc::MlpKind::swiglu;
    c.norm = sc::NormKind::rmsnorm;
    c.position = sc::PositionKind::rotary;
    c.tied_embeddings = false;
    c.bias = false;
    return c;
}

// Megatron-LM 2021-22 mixed precision: fp16 weights and activations, fp32 main gradients, fp32 master
// weights and Adam moments = 18 bytes per parameter. Korthikanti et al. 2022 Fig. 1 gives exactly that:
// 45.5625 GiB of "parameters and optimizer state" for 22B on 8 GPUs (checked against the model below).
void MegatronFp16(sc::ModelConfig& m) {
    m.precision.compute = sc::Precision::fp16;
    m.precision.grad = sc::Precision::fp32;
}

// The kernels and framework of Megatron-LM before 2023, used by the 2021-22 runs (Megatron-LM, MT-NLG,
// BLOOM): no fused attention, GPT-3 dropout, blocking pipeline sends, no NCCL CollNet/SHARP (NCCL uses it
// only with NCCL_COLLNET_ENABLE=1; none of the papers mentions it).
sc::TrainingOptions Megatron2021Options() {
    sc::TrainingOptions o;
    o.kernels.flash_attention = false;
    o.kernels.dropout = true;
    o.overlap_pp = false;
    o.overlap_tp = false;
    o.in_network_reduction = false;
    o.kernels.pp_scatter_gather = true;
    o.kernels.grad_accumulation_fusion = false;  // Megatron-LM added it mid-2022 (NeMo PR #4494, July 2022)
    return o;
}

void ConvertTflops(Row& r, double tflops, double eq3_flops, int gpus) {
    r.measured_what = "TFLOP/s/GPU (Eq. 3)";
    r.measured_value = tflops;
    r.measured_seconds = eq3_flops / (tflops * 1e12 * gpus);
    r.to_unit = [eq3_flops, gpus](double t) { return eq3_flops / (t * gpus) / 1e12; };
}

// ------------------------------------------------------------------------------------ families of records

// Narayanan et al. 2021 Table 1. Microbatch, interleaving and DDP from the paper's own scripts,
// NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (MBS; --num-layers-per-virtual-pipeline-stage; DDP=torch
// for the PP=1 rows, DDP=local above).
struct Table1Config {
    int mbs, layers_per_virtual_stage;  // 0: no interleaving
    bool torch_ddp;
};
const std::map<int, Table1Config> kTable1 = {
    {24, {16, 0, true}}, {30, {16, 0, true}}, {36, {16, 0, true}}, {40, {8, 0, true}},   {48, {4, 0, false}},
    {60, {2, 5, false}}, {80, {2, 5, false}}, {96, {1, 3, false}}, {105, {1, 1, false}}, {128, {1, 0, false}},
};

Row Narayanan(const json& r) {
    Row row = StartRow(r, "Narayanan et al. 2021, Table 1", "dgx-a100-superpod");
    const json& m = r["model"];
    const json& p = r["parallel"];
    row.model = GptModel(row.key, m);
    MegatronFp16(row.model);
    const Table1Config& c = kTable1.at(m["layers"].get<int>());
    row.par.microbatch = c.mbs;
    row.par.batch = p["global_batch"];
    row.par.recompute = sc::Recompute::full;
    if (c.layers_per_virtual_stage > 0) {
        row.par.schedule = sc::Schedule::interleaved;
        row.par.vstages = row.model.layers / row.par.pp / c.layers_per_virtual_stage;
    }
    row.opt = Megatron2021Options();
    row.opt.overlap_dp = c.torch_ddp;
    if (c.torch_ddp) {
        // PyTorch DDP reduces the model's own fp16 .grad, which autograd accumulates in place; Megatron's fp32
        // main gradients and their per-microbatch add belong to its local DDP.
        row.model.precision.grad = sc::Precision::fp16;
        row.opt.kernels.grad_accumulation_fusion = true;
    }
    row.assumptions.push_back(
        "microbatch " + std::to_string(c.mbs) +
        (c.layers_per_virtual_stage ? ", " + std::to_string(row.par.vstages) + " model chunks per stage"
                                    : std::string(", no interleaving")) +
        " and " + (c.torch_ddp ? "PyTorch DDP (overlapped)" : "Megatron local DDP (not overlapped)") +
        " from Megatron-LM examples/sc21/run_table_1.sh");
    row.assumptions.push_back(
        c.torch_ddp ? "fp16 weights and gradients (PyTorch DDP)"
                    : "fp16 with fp32 main gradients (18 B/param, as Korthikanti et al. 2022 Fig. 1 of the same code)");
    const double B = row.par.batch, s = m["seq"], l = m["layers"], h = m["hidden"], V = m["vocab"];
    ConvertTflops(row, r["measured"]["tflops_per_gpu"], Eq3Flops(B, s, l, h, V), r["system"]["count"]);
    const char* const pp1_cause =
        "the Table 1 runs without pipelining (PP1, PyTorch DDP, microbatch 8-16, s/h = 0.3-0.9) run slower than "
        "predicted while the other Megatron-LM rows of the same code and cluster are close (their rows above); in the model "
        "the unfused s x s attention passes are 25-37% of the three smallest runs' layer time, far more than for the "
        "larger models, and whatever these runs lose (the unfused softmax/dropout kernels below the STREAM-copy "
        "bandwidth assumed, or per-kernel overheads of PyTorch DDP at microbatch 16) is not modelled";
    // The target stays 10%: a row outside it names its cause (the smallest rows are 14-16% fast).
    if (row.par.pp == 1) row.cause = pp1_cause;
    return row;
}

// Korthikanti et al. 2022 Table 5 (configs: paper Table 3, as in calculon validation/seqsel/tab5/*.json).
Row KorthikantiTable5(const json& r) {
    Row row = StartRow(r, "Korthikanti et al. 2022, Table 5", "dgx-a100-superpod");
    const json& m = r["model"];
    const json& p = r["parallel"];
    row.model = GptModel(row.key, m);
    MegatronFp16(row.model);
    const int gpus = r["system"]["count"];
    if (row.par.tp * row.par.pp * row.par.dp != gpus) {
        // The 22B rows say tp=1 on 8 GPUs; the paper's Table 3 and calculon's tab5 config (tensor_par 8,
        // num_procs 8) run it with 8-way tensor parallelism.
        row.par.tp = gpus / (row.par.pp * row.par.dp);
        row.assumptions.push_back("record's tp=1 contradicts its 8 GPUs; tp=" + std::to_string(row.par.tp) +
                                  " per the paper's Table 3 (calculon validation/seqsel/tab5: tensor_par 8)");
    }
    row.par.microbatch = p["microbatch"];
    row.par.batch = p["global_batch"];
    int v = p["pipeline_interleaving"];
    if (v > 1) {
        row.par.schedule = sc::Schedule::interleaved;
        row.par.vstages = v;
    }
    std::string rc = p["recompute"];
    row.par.recompute = rc.rfind("full", 0) == 0 ? sc::Recompute::full : sc::Recompute::selective;
    row.par.sp = p["seq_parallel"];
    row.opt = Megatron2021Options();
    row.opt.overlap_dp = false;  // dp = 1 in every row
    row.measured_what = "iteration time (s)";
    row.measured_value = r["measured"]["iter_time_s"];
    row.measured_seconds = row.measured_value;
    row.to_unit = [](double t) { return t; };
    // Fig. 1 memory (the same configs): parameters + gradients + optimizer state, and the activations of
    // the first pipeline stage without recomputation and without SP (none) / with SP + selective.
    const json& mem = r["measured"]["memory_gb"];
    row.memory.push_back(
        {"params + grads + optimizer (Fig. 1)", mem["params_grads_optimizer_GiB_fig1"], 0, 0.05, "", false, ""});
    if (row.par.recompute == sc::Recompute::full)
        row.memory.push_back({"activations, no recompute, no SP (Fig. 1)",
                              mem["activations_GiB_fig1_no_recompute_no_sp"], 0, 0.10, "", false, ""});
    else
        row.memory.push_back(
            {"activations, SP + selective (Fig. 1)", mem["activations_GiB_fig1_sp_plus_selective"], 0, 0.10, "", false,
             "with no pipeline the first stage holds the LM head too, and Megatron-Core's cross entropy keeps its "
             "softmax in fp32 (4 bytes per logit, tensor_parallel/cross_entropy.py; Korthikanti et al. 2022 Sec. "
             "4.3 count the same 4sbv/t): 0.20 GiB for the 22B's 51,200-word vocabulary, beside the attention core "
             "of the one layer being recomputed, which the figure omits; the deeper-pipelined rows hold no head on "
             "stage 0 and are within 3%"});
    // The MFU of the record is this formula over the published time: checks the formula.
    const double F = ModelFlops72(row.par.batch, m["seq"], m["layers"], m["hidden"], m["vocab"]);
    EXPECT_NEAR(F / (row.measured_seconds * gpus * 312e12), r["measured"]["mfu"].get<double>(), 1e-3) << row.key;
    return row;
}

// Korthikanti et al. 2022 abstract: 530B on 2240 GPUs, MFU 54.2% (SP + selective) vs 42.1% (full).
std::vector<Row> KorthikantiAbstract(const json& r) {
    std::vector<Row> rows;
    for (bool selective : {true, false}) {
        Row row = StartRow(r, "Korthikanti et al. 2022, abstract", "dgx-a100-superpod");
        row.key += (selective ? " (SP+selective)" : " (full recompute)");
        const json& m = r["model"];
        row.model = GptModel(row.key, m);
        MegatronFp16(row.model);
        row.par.microbatch = 1;
        row.par.batch = 280 * row.par.dp;
        row.par.schedule = sc::Schedule::interleaved;
        row.par.vstages = 3;
        row.par.recompute = selective ? sc::Recompute::selective : sc::Recompute::full;
        row.par.sp = selective;
        row.opt = Megatron2021Options();
        row.opt.overlap_dp = false;
        row.assumptions.push_back(
            "global batch not stated: 2240 = 8 replicas x the 280-sequence batch of the paper's "
            "530B config (Table 3: microbatch 1, 3 model chunks per stage), which the record's "
            "TP8/PP35/DP8 split also takes from Table 3");
        const double mfu =
            selective ? r["measured"]["mfu"].get<double>() : r["measured"]["mfu_full_recompute"].get<double>();
        const double F = ModelFlops72(row.par.batch, m["seq"], m["layers"], m["hidden"], m["vocab"]);
        const int gpus = r["system"]["count"];
        row.measured_what = "MFU (72-factor model FLOPs)";
        row.measured_value = mfu;
        row.measured_seconds = F / (mfu * gpus * 312e12);
        row.to_unit = [F, gpus](double t) { return F / (t * gpus * 312e12); };
        rows.push_back(row);
    }
    return rows;
}

// The model reproduces the Megatron-LM runs of 530B on the same cluster and layout within 7% (Narayanan
// et al. 2021: 54.08 s for 280 microbatches per replica = 193 ms each; Korthikanti et al. 2022: 49.05 s /
// 280) but MT-NLG's DeepSpeed run takes 60.1 s / 240 = 250 ms per microbatch (219 ms without its larger
// bubble), and BLOOM's Megatron-DeepSpeed run is 18% slower than predicted too.
const char* const kDeepSpeedReason =
    "DeepSpeed pipeline-engine runs (MT-NLG, BLOOM) are slower than predicted, while Megatron-LM runs of the same "
    "model size on the same cluster (narayanan2021_t1_529.6B, korthikanti2022_t5_turing-530B) are close: "
    "the engine's own costs (blocking p2p over broadcast groups, per-microbatch Python scheduling, the BF16 "
    "optimizer's fp32 gradient handling beyond its accumulation) are not modelled";

// Smith et al. 2022 (MT-NLG 530B) Sec. 2.4: 1920-sequence batches on 280/350/420 DGX A100 nodes.
Row MtNlg(const json& r) {
    Row row = StartRow(r, "Smith et al. 2022 (MT-NLG), Sec. 2.4", "dgx-a100-superpod");
    const json& m = r["model"];
    const json& p = r["parallel"];
    row.model = GptModel(row.key, m);
    row.model.precision.compute = sc::Precision::bf16;
    row.model.precision.grad = sc::Precision::fp32;
    row.par.microbatch = 1;
    row.par.batch = p["global_batch"];
    row.par.schedule = sc::Schedule::one_f_one_b;
    row.par.recompute = sc::Recompute::full;
    row.par.zero = 1;
    row.opt = Megatron2021Options();
    row.opt.overlap_dp = false;
    row.assumptions.push_back("microbatch 1 (not stated)");
    row.assumptions.push_back(
        "full recomputation: the published TFLOP/s equal Eq. 3 (4 passes) over the published times");
    row.assumptions.push_back(
        "ZeRO stage 1 data parallelism (DeepSpeed's pipeline engine supports no higher stage), "
        "gradient reduction after the pipeline flush, non-interleaved 1F1B");
    row.assumptions.push_back("bf16 (paper) with fp32 gradient accumulation (as DeepSpeed's BF16 optimizer)");
    row.measured_what = "iteration time (s)";
    row.measured_value = r["measured"]["iter_time_s"];
    row.measured_seconds = row.measured_value;
    row.to_unit = [](double t) { return t; };
    const int gpus = r["system"]["count"];
    const double F = Eq3Flops(row.par.batch, m["seq"], m["layers"], m["hidden"], m["vocab"]);
    EXPECT_NEAR(F / (row.measured_seconds * gpus) / 1e12, r["measured"]["tflops_per_gpu"].get<double>(), 2.0)
        << row.key << ": Eq. 3 does not reproduce the published TFLOP/s";
    row.cause = kDeepSpeedReason;  // the target stays 10%
    return row;
}

// BLOOM-176B (BigScience), configuration from bigscience-workshop/bigscience train/tr11-176B-ml/tr11-176B-ml.slurm
// and its README.
Row Bloom(const json& r) {
    Row row = StartRow(r, "BigScience BLOOM-176B (tr11-176B-ml)", "jean-zay-a100");
    const json& m = r["model"];
    const json& p = r["parallel"];
    row.model = GptModel(row.key, m);
    row.model.vocab = 250880;  // --pad-vocab-size-to 250880
    row.model.precision.compute = sc::Precision::bf16;
    row.model.precision.grad = sc::Precision::fp32;  // README: "The new BF16_Optimizer accumulates grads in fp32"
    row.par.microbatch = 2;
    row.par.batch = p["global_batch"];
    row.par.recompute = sc::Recompute::full;
    row.par.zero = 1;
    row.par.uneven = true;  // README: pp rank 0 [embed | 5 blocks], 1..10 [6 blocks], 11 [5 blocks | embed]
    row.opt = Megatron2021Options();
    row.opt.overlap_dp = false;
    row.assumptions.push_back(
        "TP4/PP12/DP8, microbatch 2, --checkpoint-activations, bf16, ZeRO-1 (BF16_Optimizer) "
        "from tr11-176B-ml.slurm / README");
    row.assumptions.push_back(
        "ALiBi modelled as learned positions (+29M parameters, one add); embedding LayerNorm not modelled");
    row.assumptions.push_back("vocabulary padded to 250880 (--pad-vocab-size-to)");
    const double B = row.par.batch, s = m["seq"], l = m["layers"], h = m["hidden"];
    const double F = Eq3Flops(B, s, l, h, 250880);
    const int gpus = r["system"]["count"];
    // README log line at GBS 2048: "elapsed time per iteration (s): 104.70 | ... | TFLOPs: 149.77".
    EXPECT_NEAR(F / (104.70 * gpus) / 1e12, 149.77, 0.5) << "Eq. 3 does not reproduce BLOOM's logged TFLOPs";
    ConvertTflops(row, r["measured"]["tflops_per_gpu"], F, gpus);
    row.cause = kDeepSpeedReason;  // the target stays 10%
    row.memory.push_back({"peak per GPU", r["measured"]["memory_gb"], 0, 0.40,
                          "\"using 60 GB of memory on each GPU\" (README) is a device-level reading: it includes the "
                          "PyTorch allocator's cache and fragmentation, the CUDA context, NCCL and DeepSpeed buffers "
                          "(p2p buffers, the BF16 optimizer's bf16 gradients before fp32 accumulation), none of which "
                          "the model counts, so the check is one-sided: predicted <= 60 GB and within 40% of it",
                          true, ""});
    return row;
}

// NVIDIA NeMo 24.07 performance summary (FP8, DGX H100).
Row Nemo(const json& r) {
    Row row = StartRow(r, "NVIDIA NeMo 24.07 performance summary", "dgx-h100-superpod");
    const json& m = r["model"];
    const json& p = r["parallel"];
    std::string name = m["name"];
    row.model = name.rfind("LLAMA", 0) == 0 ? LlamaModel(row.key, m) : GptModel(row.key, m);
    row.model.precision.compute = sc::Precision::fp8;
    row.model.precision.grad = sc::Precision::bf16;
    row.par.cp = p["cp"];
    row.par.microbatch = p["microbatch"];
    row.par.batch = p["global_batch"];
    row.par.sp = p["seq_parallel"];
    int vp = p["vp"];
    if (vp > 1) {
        row.par.schedule = sc::Schedule::interleaved;
        row.par.vstages = vp;
    }
    row.par.zero = 1;  // distributed optimizer
    row.opt = sc::TrainingOptions{};
    row.opt.overlap_tp = row.par.tp > 1;
    row.assumptions.push_back("no activation recomputation (record: null)");
    row.assumptions.push_back(
        "Megatron-Core defaults of the NeMo recipes: fused attention, distributed optimizer, "
        "overlapped gradient reduction, p2p and TP communication");
    const int gpus = r["system"]["count"];
    const double tokens = 1.0 * row.par.batch * row.model.seq;
    const double tok = r["measured"]["tokens_per_s_per_gpu"];
    row.measured_what = "tokens/s/GPU";
    row.measured_value = tok;
    row.measured_seconds = tokens / (tok * gpus);
    row.to_unit = [tokens, gpus](double t) { return tokens / (t * gpus); };
    EXPECT_NEAR(row.measured_seconds, r["measured"]["iter_time_s"].get<double>(), 0.01 * row.measured_seconds)
        << row.key;
    row.cause =
        "FP8 on H100: the model runs the GEMMs at the cuBLASLt FP8 microbenchmark rate (0.6-0.7 of the FP8 peak) "
        "with the 16-bit table's shape, slowed by the framework GEMM profile measured in 16 bits, keeps activations and their traffic in bf16 and "
        "charges Transformer Engine's cast and transpose passes, the 16-bit LM head and the SMs its TP-overlap "
        "kernels take, and is still fast, more than the BF16 rows of the same release: whether FP8 GEMMs lose more "
        "to the framework than 16-bit ones (a fixed time per kernel would make them) is not measured";
    return row;
}

std::vector<Row> RowsOf(const json& r) {
    const std::string key = r["key"];
    auto starts = [&](const char* p) { return key.rfind(p, 0) == 0; };
    if (starts("narayanan2021_t1_")) return {Narayanan(r)};
    if (starts("korthikanti2022_t5_")) return {KorthikantiTable5(r)};
    if (starts("korthikanti2022_abstract_")) return KorthikantiAbstract(r);
    if (starts("mtnlg530b_")) return {MtNlg(r)};
    if (starts("bloom176b_")) return {Bloom(r)};
    if (starts("nemo2407_")) return {Nemo(r)};
    Row row;
    row.key = key;
    row.comparable = false;
    row.not_comparable_reason = "no mapping in test_training_validation.cpp";
    return {row};
}

// A row the framework GEMM profile pushes past the target on the slow side: its GEMMs ran nearer the single-GPU
// curve than the profile's median GEMM of the same narrowest side. This replaces a cause written for rows that are
// too fast (the generation gap): it would not describe a row that is too slow.
const char* const kFrameworkOvershootCause =
    "slower than measured because of the framework GEMM profile (presets/calibration/measured.json framework_gemm): "
    "its ratio is the median over Vidur's profiled GEMMs of one narrowest side, and between shapes of one side "
    "those ratios spread widely (p10-p90 of the compute-bound GEMMs narrow in m or n: H100 1.06-1.41 at 1,024, "
    "1.03-1.30 at 2,048, 1.03-1.19 at 4,096; A100 0.97-1.19 at 1,024, 0.96-1.14 at 2,048): this run's GEMMs ran "
    "nearer the single-GPU curve than the median. With the profile off (--options framework_gemm=off) the row is "
    "within 10%; its assumptions give the number";

// A row too slow with the profile off as well. Its assumptions give the shares of the step the overlap terms
// decide (the exposed data-parallel traffic, the SMs the overlapped collectives hold).
const char* const kSlowBeyondProfileCause =
    "slower than measured, and outside 10% with the framework GEMM profile off as well (its assumptions give that "
    "error and the step's shares): the model exposes the data-parallel gradient reduction that does not fit behind "
    "the last microbatch's backward and charges the SMs of the overlapped part; the run hid more of it, or reduced "
    "faster than the model's ring over its data-parallel ranks, and no measurement in data/ separates the two";

void NameSlowSide(Row& row) {
    if (row.error <= row.tolerance) return;
    char buf[192];
    if (row.error_without_framework <= row.tolerance) {
        row.cause = kFrameworkOvershootCause;
        std::snprintf(buf, sizeof buf, "with framework_gemm=off: %+.1f%%", 100 * row.error_without_framework);
    } else if (IsGenerationGapCause(row.cause)) {
        row.cause = kSlowBeyondProfileCause;
        const sc::StepBreakdown& b = row.est.step;
        std::snprintf(buf, sizeof buf,
                      "with framework_gemm=off: %+.1f%%; exposed DP communication %.1f%% of the step, DP comm SMs "
                      "%.1f%%",
                      100 * row.error_without_framework, 100 * b.dp_comm / row.est.step_seconds,
                      100 * b.dp_comm_sms / row.est.step_seconds);
    } else {
        return;  // its cause names what makes it slow
    }
    row.assumptions.push_back(buf);
}

void Evaluate(Row& row) {
    if (!row.comparable) return;
    try {
        sc::Job job = sc::MakeJob(row.model, row.par, row.opt.kernels);
        sc::System sys = PresetSystem(row.system, row.accelerator);
        if (row.set != "first") sys = sc::ExtendSystem(sys, row.par.world());
        if (row.hbm_tbps > 0) {
            // Same chip at a different memory (Meta's H100 96 GB HBM2e): the STREAM efficiency measured on the
            // preset's HBM applied to the record's bandwidth.
            const double measured = sc::AchievedHbmTBps(Calibration(), sys.accelerator.id, "Copy");
            row.opt.memory_efficiency = measured / sys.accelerator.hbm_bandwidth_tbps;
            sys.accelerator.hbm_bandwidth_tbps = row.hbm_tbps;
            sys.accelerator.hbm_capacity_gb_marketing = row.hbm_gb;
            sys.accelerator.capacity_uses_marketing = true;
        }
        if (row.power_limit_w > 0) sys.accelerator.power_limit_w = row.power_limit_w;  // training/power_cap.h
        row.est = sc::EstimateTraining(job, sys, &Calibration(), row.opt);
        if (!row.est.fits && !row.recompute_stated && row.par.recompute == sc::Recompute::none && !row.model.is_moe()) {
            // The run happened, so it fit: a dense record that does not say whether it recomputed activations,
            // and cannot fit without, did (full recomputation; the attention-only selective kind frees nothing
            // under fused attention). Dense only: the activation memory of dense layers is checked against
            // Korthikanti et al. 2022 Fig. 1 (within 3%), that of MoE layers is not checked against anything.
            const std::string without = row.est.memory_message;
            row.par.recompute = sc::Recompute::full;
            job = sc::MakeJob(row.model, row.par, row.opt.kernels);
            row.est = sc::EstimateTraining(job, sys, &Calibration(), row.opt);
            row.assumptions.push_back("full activation recomputation (not stated; without it the layout " +
                                      without.substr(without.find("needs")) + ")");
        }
        row.predicted_seconds = row.est.step_seconds;
        row.error = row.predicted_seconds / row.measured_seconds - 1;
        sc::TrainingOptions bare = row.opt;
        bare.framework_gemm = false;
        row.error_without_framework =
            sc::EstimateTraining(job, sys, &Calibration(), bare).step_seconds / row.measured_seconds - 1;
        NameSlowSide(row);
        for (MemoryCheck& mc : row.memory) {
            if (mc.what.rfind("params", 0) == 0) {
                // Fig. 1 divides the model state evenly over the GPUs: the mean over stages (stage 0 alone
                // also holds the embedding table).
                double sum = 0;
                for (const sc::StageMemory& sm : row.est.memory) sum += sm.weights + sm.gradients + sm.optimizer;
                mc.predicted_gib = sum / row.est.memory.size() / kGiB;
            } else if (mc.what.rfind("activations", 0) == 0) {
                // The figure's configuration: the same layout without recomputation and SP, or with both.
                sc::ParallelConfig q = row.par;
                bool none = mc.what.find("no recompute") != std::string::npos;
                q.recompute = none ? sc::Recompute::none : sc::Recompute::selective;
                q.sp = !none;
                sc::Job j2 = sc::MakeJob(row.model, q, row.opt.kernels);
                mc.predicted_gib = sc::EstimateTraining(j2, sys, &Calibration(), row.opt).memory[0].activations / kGiB;
            } else {
                mc.predicted_gib = row.est.memory_peak / 1e9;  // "60 GB": decimal, as nvidia-smi-style readings
            }
        }
    } catch (const std::exception& e) {
        row.evaluation_error = e.what();
    }
}

}  // namespace

std::vector<Row>& AllRows() {
    static std::vector<Row> rows = [] {
        std::vector<Row> out;
        for (const json& r : Records())
            for (Row& row : RowsOf(r)) {
                Evaluate(row);
                out.push_back(std::move(row));
            }
        for (const json& r : MoreRecords())
            for (Row& row : MoreRowsOf(r)) {
                Evaluate(row);
                out.push_back(std::move(row));
            }
        for (const json& r : BridgeRecords())
            for (Row& row : MoreRowsOf(r)) {
                Evaluate(row);
                out.push_back(std::move(row));
            }
        return out;
    }();
    return rows;
}

}  // namespace validation
