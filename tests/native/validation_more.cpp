// Records of data/training_measured_more.json -> validation rows. Unlike the first set (one hand-written
// family per paper), these come from eight public sources with one schema, so one builder reads them all:
// the model from the record's dimensions, the layout from its parallel columns, the cluster from the GPU
// named and counted, and the measurement in the source's own convention:
//   - a published iteration time (DGX Cloud benchmarks, NeMo AutoModel, llm-foundry) is compared as it is;
//   - tokens/s/GPU (torchtitan) becomes seconds with the step's tokens, which needs no FLOP formula;
//   - TFLOP/s/GPU (NeMo long-sequence tables, the Megatron-LM README) becomes seconds with that source's own
//     FLOP formula, which counts every query-key pair (non-causal attention; see NeMoFlops, MegatronFlops).
// A record that cannot be expressed says why (its layout was not published, its GPU is unknown, ...).
#include <algorithm>
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "config/hardware_config.h"
#include "graph/flop_conventions.h"
#include "test_util.h"
#include "validation_rows.h"

namespace validation {

using nlohmann::json;

const json& MoreRecords() {
    static const json j = json::parse(sctest::ReadFile(kRoot + "/data/training_measured_more.json"));
    return j;
}

const json& BridgeRecords() {
    static const json j = json::parse(sctest::ReadFile(kRoot + "/data/training_measured_bridge.json"));
    return j;
}

namespace {

bool Starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool Has(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }
int IntOr(const json& v, int fallback) { return v.is_number() ? v.get<int>() : fallback; }
// A record's field, null when the record has none. nlohmann's operator[] on a const json reads past the end of the
// object for a missing key (undefined behaviour; most records have no "techniques" or "kernels"): it crashed
// TrainingValidation.WritesTheTable once, in get<std::string>, in a clean clone's suite.
const json& At(const json& o, const char* key) {
    static const json null;
    if (!o.is_object()) return null;
    const auto it = o.find(key);
    return it == o.end() ? null : *it;
}

sc::ModelConfig FromPreset(const std::string& file) {
    return sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/" + file));
}

// ------------------------------------------------------------------------------------ published formulas

// The sources' own FLOP formulas are the product's (graph/flop_conventions.h), so the CLI prints the TFLOP/s these
// rows are compared in: Megatron-LM's num_floating_point_operations and NeMo's llama formula, both non-causal.
double MegatronFlops(const sc::ModelConfig& m, double B) { return sc::MegatronFlops(m, B, m.vocab); }
double NeMoLlamaFlops(const sc::ModelConfig& m, double B) { return sc::NeMoLlamaFlops(m, B, m.vocab); }

// ------------------------------------------------------------------------------------ models

// Llama-style: RMSNorm, SwiGLU, rotary positions, no biases, untied embeddings.
sc::ModelConfig Llama(const json& m, int vocab) {
    sc::ModelConfig c;
    c.layers = At(m, "layers");
    c.hidden = At(m, "hidden");
    c.heads = At(m, "heads");
    c.kv_heads = IntOr(At(m, "kv_heads"), c.heads);
    c.ffn = IntOr(At(m, "ffn"), 0);
    c.vocab = IntOr(At(m, "vocab"), vocab);
    c.seq = At(m, "seq");
    c.mlp = sc::MlpKind::swiglu;
    c.norm = sc::NormKind::rmsnorm;
    c.position = sc::PositionKind::rotary;
    c.tied_embeddings = false;
    c.bias = false;
    if (m.contains("head_dim") && At(m, "head_dim").is_number()) c.head_dim = At(m, "head_dim");
    else sc::DeriveHeadDim(c);
    return c;
}

struct Built {
    sc::ModelConfig model;
    std::string preset;  // the model preset it starts from, "" for a shape built from the record
    sc::ModelConfig From(const std::string& file) {
        preset = file;
        return FromPreset(file);
    }
    std::vector<std::string> assumptions;
    std::string unexpressible;  // why the record cannot be expressed, "" when it can
};

Built ModelOf(const json& r) {
    const json& m = At(r, "model");
    const std::string name = At(m, "name");
    Built b;
    if (Starts(name, "LLAMA3") || Starts(name, "Llama 3")) {
        b.model = Llama(m, 128256);
        if (At(m, "vocab").is_null())
            b.assumptions.push_back("vocabulary 128256 (the Llama 3 tokenizer; NeMo LLM_VOCAB_SIZE_MAP llama3)");
    } else if (Starts(name, "LLAMA2")) {
        b.model = Llama(m, 32000);
        b.assumptions.push_back("vocabulary 32000 (the Llama 2 tokenizer; NeMo LLM_VOCAB_SIZE_MAP llama2)");
    } else if (Starts(name, "GPT-style") || Starts(name, "GPT-3") || Starts(name, "MPT")) {
        // Megatron-LM's GPT benchmark models (the README's GPT-3 175B among them) and MosaicML's MPT: LayerNorm,
        // 4h GeLU MLP, multi-head attention, tied embeddings; MPT has no biases and ALiBi (no position
        // parameters, modelled as rotary).
        b.model = Llama(m, 0);
        b.model.kv_heads = b.model.heads;
        b.model.ffn = IntOr(At(m, "ffn"), 4 * b.model.hidden);
        b.model.mlp = sc::MlpKind::gelu;
        b.model.norm = sc::NormKind::layernorm;
        b.model.tied_embeddings = true;
        const bool gpt = !Starts(name, "MPT");
        b.model.bias = gpt;
        b.model.position = gpt ? sc::PositionKind::learned : sc::PositionKind::rotary;
        if (At(m, "ffn").is_null())
            b.assumptions.push_back("FFN 4h, GeLU, multi-head attention (Megatron-LM GPT defaults; not in the table)");
        if (Starts(name, "MPT"))
            b.assumptions.push_back("MPT: no biases, ALiBi modelled as rotary (neither has position parameters)");
    } else if (Starts(name, "Nemotron-4 340B")) {
        // The preset: 96 heads, 8 KV groups, squared-ReLU MLP as a non-gated one, LayerNorm, RoPE, untied.
        b.model = b.From("nemotron4-340b.json");
        b.assumptions.push_back(
            "96 heads, 8 KV groups, squared-ReLU MLP as a non-gated one (NeMo Nemotron4Config340B)");
    } else if (Starts(name, "Grok-1")) {
        // The preset (xai-org/grok-1 README: 8 experts, 2 per token, 48 query and 8 KV heads; the DGXC README's
        // "mlp flops = 18 ..." is a gated expert MLP) with the record's vocabulary.
        b.model = b.From("grok-1.json");
        b.model.moe.expert_ffn = At(m, "expert_ffn");
        b.assumptions.push_back(
            "8 experts, top-2, gated expert MLPs (xai-org/grok-1 README; the record leaves the count out)");
    } else if (Starts(name, "DeepSeek V3")) {
        b.model = b.From("deepseek-v3.json");
        // NeMo 25.04's DeepSeekV3Config leaves mtp_num_layers None (nemo/collections/llm/gpt/model/deepseek.py at
        // NVIDIA/NeMo@7a8f1cc7, which the DGX Cloud recipe checks out) and its performance script sets none.
        const std::string key = At(r, "key");
        if (Starts(key, "bridge2604")) {
            b.assumptions.push_back(
                "one MTP module (v0.4.2's recipe, mtp_num_layers=1; the table's TFLOP/s counts it)");
        } else if (Starts(key, "bridge") && Has(name, "w/ MTP")) {
            b.assumptions.push_back(
                "one MTP module (the table's 'DeepSeekV3 (w/ MTP)'; the preset's, from config.json)");
            // keeps the preset's one module
        } else if (Starts(key, "bridge")) {
            b.model.mtp_layers = 0;
            b.assumptions.push_back("no MTP module (the table's 'DeepSeekV3 (w/o MTP)')");
        } else {
            b.model.mtp_layers = 0;
        }
        if (!Starts(key, "bridge"))
            b.assumptions.push_back(
                Starts(key, "dgxc_") ? "no MTP module: NeMo 25.04's DeepSeekV3Config leaves mtp_num_layers unset and "
                                       "its performance script sets none"
                                     : "no MTP module (UNVERIFIED: the record names none; AutoModel's model code was "
                                       "not read for it)");
    } else if (Starts(name, "Mixtral 8x7B")) {
        b.model = b.From("mixtral-8x7b.json");
    } else if (Starts(name, "Qwen3 MoE 30B")) {
        b.model = b.From("qwen3-30b-a3b.json");
    } else if (Starts(name, "Qwen3 MoE 235B")) {
        b.model = b.From("qwen3-235b-a22b.json");
    } else if (Starts(name, "Kimi K2")) {
        b.model = b.From("kimi-k2.json");  // no MTP module, as Megatron-Bridge's Kimi recipe runs it
    } else if (Starts(name, "Nemotron 3 Nano")) {
        b.model = b.From("nemotron-3-nano.json");
    } else if (Starts(name, "Nemotron 3 Super")) {
        // The preset's two MTP depths of one shared "*E" block: Megatron-Bridge's recipe (mtp_num_layers 2,
        // mtp_use_repeated_layer), which the table's TFLOP/s counts.
        b.model = b.From("nemotron-3-super.json");
    } else if (Starts(name, "GPT-OSS")) {
        b.model = b.From(Has(name, "120B") ? "gpt-oss-120b.json" : "gpt-oss-20b.json");
        b.assumptions.push_back(
            "GPT-OSS: the preset's sliding window (128 keys on every other layer, config.json) at cuDNN's measured causal "
            "curve at the window's length; biases and attention sinks left out");
    } else {
        b.unexpressible = "model dimensions not published in the record (" + name + ")";
        return b;
    }
    b.model.name = At(r, "key");
    b.model.source = Starts(At(r, "key").get<std::string>(), "bridge") ? "data/training_measured_bridge.json"
                                                                       : "data/training_measured_more.json";
    if (At(m, "seq").is_number()) b.model.seq = At(m, "seq");
    if (At(m, "vocab").is_number()) b.model.vocab = At(m, "vocab");  // the record's tokenizer where it names one
    return b;
}

// ------------------------------------------------------------------------------------ clusters

struct ClusterChoice {
    std::string system;       // preset id, "" when unknown
    std::string accelerator;  // replacement accelerator preset, "" to keep the system's
    std::string note;
};

ClusterChoice ClusterOf(const json& r) {
    const std::string gpu = At(At(r, "system"), "gpu").is_string() ? At(At(r, "system"), "gpu").get<std::string>() : "";
    if (Starts(gpu, "GB300")) return {"gb300-nvl72", "", ""};
    if (Starts(gpu, "GB200")) return {"gb200-nvl72", "", ""};
    if (Starts(gpu, "B200")) return {"dgx-b200-superpod", "", ""};
    if (Starts(gpu, "B300")) return {"dgx-b300-superpod", "", ""};
    if (Has(gpu, "A100-SXM4-40GB"))
        return {"dgx-a100-40gb-superpod", "", "DGX A100 SuperPOD network with 40 GB A100s (dgx-a100-40gb-superpod)"};
    if (Starts(gpu, "A100")) return {"dgx-a100-superpod", "", ""};
    if (Has(gpu, "Grand Teton"))
        return {
            "dgx-h100-superpod", "",
            "Meta Grand Teton H100 (96 GB HBM2e, 2.4 TB/s, 500 W): HBM, capacity and the 500 W power limit from the "
            "record (compute at 0.894 of the 700 W clock, training/power_cap.h); NVLink 8-GPU hosts and 400 Gb/s per "
            "GPU as a DGX H100 pod"};
    if (Starts(gpu, "H100")) return {"dgx-h100-superpod", "", ""};
    return {"", "", ""};
}

// ------------------------------------------------------------------------------------ layout

// NeMo AutoModel's performance summary names its benchmark configurations ("All benchmark configurations are
// available in examples/benchmark/configs/"); read at NVIDIA-NeMo/Automodel@8d9bfb90e (2025-10-08), the commit
// that last changed the table's MoE rows (the Qwen3 row, with its config). They give what the table leaves out:
// the expert-parallel size where its EP column is '-', and `parallelizer.activation_checkpointing`, which wraps
// every decoder block in checkpoint_wrapper (nemo_automodel/components/moe/parallelizer.py apply_ac: full
// recomputation of the block).
struct AutoModelConfig {
    const char* key;
    const char* file;  // examples/benchmark/configs/<file>
    int ep;
    bool full_recompute;
    int global_batch, local_batch;  // as the config sets them: checked against the table's GBS and LBS
};
constexpr AutoModelConfig kAutoModelConfigs[] = {
    {"automodel_deepseekv3-671b_1024gpu", "deepseek_v3_te_deepep_1024.yaml", 64, true, 8192, 8},
    {"automodel_deepseekv3-671b_256gpu", "deepseek_v3_te_deepep.yaml", 64, true, 512, 8},
    {"automodel_qwen3moe-30b_8gpu", "qwen3_moe_30b_te_deepep.yaml", 8, true, 512, 4},
    {"automodel_gptoss-20b_8gpu", "gptoss_20b_te_deepep.yaml", 8, true, 256, 2},
    {"automodel_gptoss-120b_64gpu", "gptoss_120b_te_deepep.yaml", 64, false, 512, 2},
};

const AutoModelConfig* AutoModelConfigOf(const std::string& key) {
    for (const AutoModelConfig& c : kAutoModelConfigs)
        if (key == c.key) return &c;
    return nullptr;
}

// The layout as the record gives it, with the framework defaults of its source where it is silent.
void LayoutOf(const json& r, Row& row, std::vector<std::string>& why_not) {
    const json& p = At(r, "parallel");
    const std::string key = At(r, "key");
    const int gpus = At(At(r, "system"), "count");
    sc::ParallelConfig& q = row.par;
    if (!At(p, "tp").is_number() || !At(p, "pp").is_number() || !At(p, "dp").is_number()) {
        why_not.push_back("tensor/pipeline/data-parallel sizes not published");
        return;
    }
    q.tp = At(p, "tp"), q.pp = At(p, "pp"), q.dp = At(p, "dp"), q.cp = IntOr(At(p, "cp"), 1),
    q.ep = IntOr(At(p, "ep"), 1);
    q.etp = IntOr(At(p, "etp"), 1);
    const AutoModelConfig* automodel = AutoModelConfigOf(key);
    if (automodel) {  // the config is the table's run: the sizes both give agree
        EXPECT_EQ(IntOr(At(p, "global_batch"), 0), automodel->global_batch) << key;
        EXPECT_EQ(IntOr(At(p, "local_batch"), 0), automodel->local_batch) << key;
        if (At(p, "ep").is_number()) {
            EXPECT_EQ(At(p, "ep").get<int>(), automodel->ep) << key;
        }
    }
    if (automodel && !At(p, "ep").is_number()) {
        q.ep = automodel->ep;
        row.assumptions.push_back("ep=" + std::to_string(q.ep) + " (the table's EP is '-'; ep_size of its " +
                                  automodel->file + ", AutoModel@8d9bfb90e)");
    }
    // A Megatron-family MoE record that does not give the expert-tensor size ran Megatron-Core's default: experts
    // split over the TP group (megatron/core/parallel_state.py: "if expert_tensor_parallel_size is None:
    // expert_tensor_parallel_size = tensor_model_parallel_size"; before MCore 0.10 experts were always TP-split).
    const bool megatron_family = Starts(key, "dgxc_") || Starts(key, "megatronlm_") || Starts(key, "nemolongseq_") ||
                                 Starts(key, "mcore_") || Starts(key, "bridge");
    if (q.ep > 1 && q.tp > 1 && !At(p, "etp").is_number() && megatron_family) {
        q.etp = q.tp;
        row.assumptions.push_back("etp=tp (Megatron-Core's default when expert_tensor_parallel_size is not given)");
    }
    const bool scale_dp = q.world() != gpus && Starts(key, "nemolongseq_");
    q.microbatch = IntOr(At(p, "microbatch"), 1);
    if (!At(p, "microbatch").is_number()) row.assumptions.push_back("microbatch 1 (not published)");
    const std::string prec = At(p, "precision").is_string() ? At(p, "precision").get<std::string>() : "";
    const bool fsdp =
        At(p, "zero").is_string() && (Has(At(p, "zero"), "FSDP2") || Has(At(p, "zero"), "FULL_SHARD") ||
                                      Has(At(p, "zero"), "Fully Sharded") || Has(At(p, "zero"), "Megatron-FSDP"));
    const bool torchtitan = Starts(key, "torchtitan_");
    if (torchtitan && q.pp > 1) {
        // torchtitan splits the local batch into one microbatch per pipeline stage (pipeline_parallel_microbatches
        // defaults to the stage count), two stages per rank when interleaved.
        const int local = q.microbatch;
        q.microbatch = std::max(1, local / q.pp);
        row.assumptions.push_back("local batch " + std::to_string(local) + " in " + std::to_string(q.pp) +
                                  " pipeline microbatches (torchtitan's default: one per stage)");
    }
    q.batch = At(p, "global_batch").is_number() ? At(p, "global_batch").get<int>()
                                                : q.microbatch * q.dp * (torchtitan && q.pp > 1 ? q.pp : 1);
    if (!At(p, "global_batch").is_number())
        row.assumptions.push_back("global batch = local batch x dp (one step of the table)");
    if (scale_dp) {
        // The B200 long-sequence table's TPxPPxDPxCP is a quarter of its GPU count in every row. dp is taken
        // from the GPU count where the batch divides over it; where it does not (batch 8 or 4 over dp 16), the
        // layout runs as printed, on its own product of GPUs, and the per-GPU rate is compared there.
        const int dp = gpus / (q.tp * q.pp * q.cp);
        if (q.batch % (q.microbatch * dp) == 0) {
            q.dp = dp;
            row.assumptions.push_back("dp=" + std::to_string(q.dp) +
                                      " from the GPU count (the table's TPxPPxDPxCP does not multiply to its GPUs)");
        } else {
            row.gpus = q.world();
            row.assumptions.push_back("the table's TPxPPxDPxCP as printed, on its " + std::to_string(q.world()) +
                                      " GPUs, not the " + std::to_string(gpus) + " it lists: dp=" + std::to_string(dp) +
                                      " from the GPU count would not divide its batch of " + std::to_string(q.batch) +
                                      "; TFLOP/s per GPU compared on " + std::to_string(q.world()));
        }
    }
    const std::string sched =
        At(p, "pipeline_schedule").is_string() ? At(p, "pipeline_schedule").get<std::string>() : "";
    const int vp = IntOr(At(p, "vp"), 1);
    if (q.pp > 1 && (vp > 1 || Has(sched, "nterleaved"))) {
        q.schedule = sc::Schedule::interleaved;
        q.vstages = vp > 1 ? vp : 2;
        if (vp <= 1) row.assumptions.push_back("2 model chunks per pipeline rank (torchtitan's interleaved default)");
    }
    if (q.pp > 1 && row.model.layers % (q.pp * q.active_vstages()) != 0) {
        q.uneven = true;
        row.assumptions.push_back(
            "layers not divisible by the pipeline's chunks: uneven stages, as Megatron's account-for-embedding/loss split");
    }
    const std::string rc = At(p, "recompute").is_string() ? At(p, "recompute").get<std::string>() : "";
    q.recompute = Starts(rc, "full")        ? sc::Recompute::full
                  : Starts(rc, "selective") ? sc::Recompute::selective
                                            : sc::Recompute::none;
    row.recompute_stated = !rc.empty();
    if (automodel && row.model.is_moe()) {
        // The table's note "Fake balanced gate is enabled to simulate ideal expert routing" (fake_balanced_gate:
        // true in every config): token i takes experts ik .. ik+k-1.
        row.model.moe.routing = sc::MoeRouting::contiguous;
        row.assumptions.push_back(
            "contiguous routing (AutoModel's FakeBalancedGate: token i takes experts ik..ik+k-1)");
    }
    if (automodel && rc.empty()) {
        row.recompute_stated = true;
        if (automodel->full_recompute) q.recompute = sc::Recompute::full;
        row.assumptions.push_back(std::string(automodel->full_recompute ? "full recomputation" : "no recomputation") +
                                  " (activation_checkpointing: " + (automodel->full_recompute ? "true" : "false") +
                                  " in its " + automodel->file + ", AutoModel@8d9bfb90e)");
    }
    if (torchtitan && q.recompute == sc::Recompute::selective) {
        // torchtitan's "selective" is PyTorch's op-level checkpointing (its train_configs/llama3_8b.toml:
        // selective_ac_option = 'op', read at pytorch/torchtitan@0011fb9), not Megatron's attention-core recomputation.
        q.recompute = sc::Recompute::op;
        row.assumptions.push_back("selective = torchtitan's op-level checkpointing (every second torch.mm re-run)");
    }
    q.sp = q.tp > 1;  // Megatron/NeMo recipes and torchtitan's TP plan shard the norms' sequence when tp > 1
    if (fsdp) {
        q.zero = At(p, "zero").is_string() && Has(At(p, "zero"), "SHARD_GRAD_OP") ? 2 : 3;
    } else if (At(p, "zero").is_string() && Has(At(p, "zero"), "SHARD_GRAD_OP")) {
        q.zero = 2;
    } else {
        q.zero = 1;  // Megatron-Core's distributed optimizer (NeMo's and the Megatron-LM README's default)
        row.assumptions.push_back("distributed optimizer (ZeRO-1), the NeMo / Megatron-Core default");
    }
    // Precision: FP8 runs keep gradients and activations in bf16 (Transformer Engine, torchao).
    sc::PrecisionConfig& pc = row.model.precision;
    pc = sc::PrecisionConfig{};
    if (Has(prec, "FP8") || Has(prec, "fp8") || Has(prec, "Float8")) pc.compute = sc::Precision::fp8;
    // Megatron-LM accumulates and reduces gradients in fp32 under bf16 (arguments.py: "bfloat16 requires
    // gradient accumulation and all-reduce to be performed in fp32"); FSDP's mixed precision (torchtitan,
    // llm-foundry, AutoModel) reduces in fp32 too (torchtitan mixed_precision_reduce = float32; FSDP
    // MixedPrecision reduce_dtype float32 in llm-foundry's DEFAULT mode).
    if (pc.compute == sc::Precision::bf16) pc.grad = sc::Precision::fp32;
    if (pc.compute == sc::Precision::bf16 && !Has(prec, "BF16") && !Has(prec, "bf16"))
        row.assumptions.push_back("bf16 (precision not stated; the MFU column matches the bf16 peak)");
}

// Why the NeMo 24.03.01 runs take FlashAttention-2: the launcher that pinned that container exported
// NVTE_FUSED_ATTN=0 to every job (its global env_vars), and Transformer Engine 1.x then runs flash-attn, with
// context parallelism too (AttnFuncWithCP without use_fused_attention). Not proof that these runs used the launcher:
// the table names only the container.
const char* const kNeMo2403AttentionNote =
    "attention_kernel=flash2: NVIDIA/NeMo-Framework-Launcher at its tags 24.05 and 24.07 (container "
    "nvcr.io/nvidia/nemo:24.03.01.framework at 24.05) sets NVTE_FUSED_ATTN: 0 ('Disable cudnn FA until we've tested "
    "it more', launcher_scripts/conf/config.yaml; added 562dcb45, February 2024, removed a6490ffe and 04b8d098, "
    "July-August 2024) and exports it to every job (nemo_launcher/core/stages.py), so Transformer Engine ran "
    "FlashAttention-2 (TE 1.4 DotProductAttention: cuDNN is preferred on sm90 only when NVTE_FUSED_ATTN allows it); the "
    "table names the container, not the launcher (ASSUMED that its runs kept the launcher's environment)";

sc::TrainingOptions OptionsOf(const json& r, const sc::ParallelConfig& q) {
    const std::string key = At(r, "key");
    sc::TrainingOptions o;
    // Megatron-Core / NeMo recipes overlap TP communication with GEMMs (--tp-comm-overlap; the Megatron-LM
    // README names it); torchtitan only with AsyncTP.
    const bool megatron = Starts(key, "dgxc_") || Starts(key, "megatronlm_") || Starts(key, "nemolongseq_") ||
                          Starts(key, "mcore_") || Starts(key, "bridge");
    o.overlap_tp = q.tp > 1 && (megatron || Has(key, "asynctp"));
    // Attention kernels: Transformer Engine's cuDNN attention in Megatron-Core, NeMo and AutoModel ("TE"); PyTorch
    // SDPA's FlashAttention-2 backend in torchtitan; llm-foundry's attn_impl "flash" (FlashAttention-2).
    if (Starts(key, "torchtitan_") || Starts(key, "llmfoundry_")) o.attention_kernel = sc::AttentionKernel::flash2;
    // NeMo's long-sequence H100 table ran the NeMo 24.03.01 container, which NVIDIA's NeMo-Framework-Launcher of that
    // time (tags 24.05 and 24.07) launched with Transformer Engine's cuDNN attention switched off, so TE ran
    // FlashAttention-2, under context parallelism too (kNeMo2403AttentionNote).
    if (Starts(key, "nemolongseq_") && Has(At(r, "source").get<std::string>(), "NeMo24.03"))
        o.attention_kernel = sc::AttentionKernel::flash2;
    // torchtitan without torch.compile ("FSDP (eager)"): PyTorch eager's RMSNorm, rotary and SwiGLU kernels.
    const json& tech = At(At(r, "parallel"), "techniques");
    if (Starts(key, "torchtitan_") && tech.is_string() && Has(tech.get<std::string>(), "eager"))
        o.kernels.fused_elementwise = false;
    // "TE + DeepEP" (AutoModel's enable_deepep): tokens dispatched once per expert rank and node.
    const json& kernels = At(At(r, "parallel"), "kernels");
    if (kernels.is_string() && Has(kernels.get<std::string>(), "DeepEP")) o.kernels.deepep_dispatch = true;
    return o;
}

// ------------------------------------------------------------------------------------ measurement

// Sets the row's measurement in the source's convention; "" or why it cannot be compared.
std::string MeasurementOf(const json& r, Row& row) {
    const json& me = At(r, "measured");
    const std::string key = At(r, "key");
    const int gpus = row.gpus > 0 ? row.gpus : At(At(r, "system"), "count").get<int>();
    const double tokens = 1.0 * row.par.global_batch() * row.model.seq;
    if (At(me, "iter_time_s").is_number()) {
        row.measured_what = "iteration time (s)";
        row.measured_value = At(me, "iter_time_s");
        row.measured_seconds = row.measured_value;
        row.to_unit = [](double t) { return t; };
        // The time agrees with the record's other numbers: its token rate (batch x seq / time / GPUs) and, for
        // llm-foundry, its "Model TFLOP" by the README's own formula, 3 (2 N s + 4 l h s^2) per sequence (every
        // query-key pair: non-causal), which checks that convention too.
        if (At(me, "tokens_per_s_per_gpu").is_number()) {
            EXPECT_NEAR(tokens / (row.measured_seconds * gpus), At(me, "tokens_per_s_per_gpu").get<double>(),
                        0.005 * At(me, "tokens_per_s_per_gpu").get<double>())
                << key;
        }
        if (Starts(key, "llmfoundry_")) {
            const json& m = At(r, "model");
            const double N = At(m, "params"), s = At(m, "seq"), l = At(m, "layers"), h = At(m, "hidden");
            const double F = 3 * (2 * N * s + 4 * l * h * s * s) * row.par.global_batch();
            EXPECT_NEAR(F / (row.measured_seconds * gpus) / 1e12, At(me, "tflops_per_gpu").get<double>(),
                        0.01 * At(me, "tflops_per_gpu").get<double>())
                << key << ": llm-foundry's FLOP formula does not reproduce its TFLOP/s";
        }
        return "";
    }
    if (At(me, "tokens_per_s_per_gpu").is_number()) {
        const double tps = At(me, "tokens_per_s_per_gpu");
        row.measured_what = "tokens/s/GPU";
        row.measured_value = tps;
        row.measured_seconds = tokens / (tps * gpus);
        row.to_unit = [tokens, gpus](double t) { return tokens / (t * gpus); };
        return "";
    }
    if (At(me, "tflops_per_gpu").is_number()) {
        double F = 0;
        if (Starts(key, "nemolongseq_")) {
            F = NeMoLlamaFlops(row.model, row.par.global_batch());
            row.measured_what = "TFLOP/s/GPU (NeMo formula, non-causal)";
        } else if (Starts(key, "megatronlm_") || Starts(key, "mcore_")) {
            F = MegatronFlops(row.model, row.par.global_batch());
            row.measured_what = "TFLOP/s/GPU (Megatron formula, non-causal)";
        } else {
            return "TFLOP/s with an unpublished FLOP formula and no time or token rate";
        }
        const double tf = At(me, "tflops_per_gpu");
        row.measured_value = tf;
        row.measured_seconds = F / (tf * 1e12 * gpus);
        row.to_unit = [F, gpus](double t) { return F / (t * gpus) / 1e12; };
        return "";
    }
    return "only an MFU whose layout and formula were not published";
}

// ------------------------------------------------------------------------------------ causes

// What the model leaves out, for rows that land outside the target. Each names its evidence in the data.
const char* const kGenerationCause =
    "H100/B200/GB200 runs come out faster in the model than measured, while Megatron-LM's runs on A100 "
    "are close (their rows above), so the gap follows the GPU generation "
    "rather than the layout or the precision: the model runs GEMMs at the single-GPU microbenchmark curve (0.79 of "
    "the bf16 peak on H100, 0.70 of fp8) where these runs imply about 0.6-0.65 in place. Since 2026-11-26 the 16-bit "
    "GEMMs of H100 and A100 take the framework GEMM profile (Vidur's PyTorch linear layers on a server node over the "
    "same curves: 1.03-1.30x the time on H100 by the GEMM's narrowest side, 0.71 of the peak for the largest), "
    "which moved the H100 BF16 rows 4-9 points; since 2026-11-27 the FP8 GEMMs take the same ratio (none has a "
    "profile of its own), which moved the H100 FP8 rows 1-7 points: an H100 FP8 row now comes out within 4 points "
    "of its DGX Cloud BF16 twin or up to 9 slower in 6 of 10 pairs, and 6-12 points faster for Grok-1 (2,048 and "
    "512 GPUs) and Nemotron-4 at 2,048 (27 at Nemotron-4's 128, whose BF16 twin is 12% slow). On GB200 the BF16 rows, whose GEMMs read XLA's sm_100 table, come out close, while their FP8 twins, on "
    "the cuBLASLt FP8 curve measured on GB200, stay fast: the runs' own FP8/BF16 step-time ratio is about 1.5, the "
    "model's larger, and the per-block (MX) scaling of Blackwell FP8 recipes is modelled only as per-tensor casts. "
    "The GEMM curves are not where they part: the model's largest GEMMs run FP8 about 2x BF16 on Blackwell, as "
    "Stas Bekman's maximum achievable matmul FLOPS in data/ do on the same parts (GB200 3,616 against 1,822 "
    "TFLOPS, B200 3,433 against 1,745). "
    "The SMs that "
    "Transformer Engine's TP-overlap kernels take from the GEMMs are modelled (1-5 points on the rows with TP "
    "overlap). So are the SMs that NCCL's overlapped data-parallel collectives hold on H100 (one CTA per channel, "
    "24 as profiled on an H100: 0.5-10 points on the rows with large DP or FSDP traffic, a point or less on the "
    "DGX Cloud rows); no other part has a measured CTA count. B200 and GB200 have no framework profile. Not "
    "modelled: clocks under the power limit with eight GPUs, NVLink and NICs busy (data/ holds no clock "
    "measurement)";
const char* const kLongSequenceH100Cause =
    "NeMo 24.03 long-sequence runs on H100, at FlashAttention-2's measured rates (the launcher of that container "
    "switched cuDNN's attention off: the row's assumptions) with the context-parallel ring beside the attention core "
    "(only what the core does not cover exposed): what is left is not attributed";
const char* const kSmallModelCause =
    "small models on H100: beyond the generation gap, the error grows as the model shrinks (Megatron-LM weak scaling "
    "from 32B down to 1.7B, llm-foundry from 70B down to 1B: compare their rows). Two small-kernel terms are "
    "modelled and move these rows by about a point each: every kernel's measured fixed cost (5.2 us, XLA's sm_90 "
    "256^3 GEMM) and every GEMM's rate by its shape on the same table (since 2026-11-26; before, by FLOP count on "
    "its square shapes, these rows were 1-2 points further off). Host-side launch and synchronisation "
    "gaps between kernels, whose share grows as kernels shrink, have no measurement in data/ and are not modelled";
const char* const kFsdpA100Cause =
    "llm-foundry (PyTorch FSDP with ZeRO-3) on A100 runs slower than predicted while Megatron-LM's A100 runs are "
    "close (narayanan2021 and korthikanti2022 rows above), and among the llm-foundry A100 runs the model is close "
    "only for the 30B one: FSDP's per-layer all-gathers and reduce-scatters are timed as hidden behind compute "
    "(the DP column), and the SMs and HBM bandwidth their NCCL kernels hold meanwhile are not modelled; no "
    "measurement in data/ separates these. The A100 40 GB run's GEMMs read the 80 GB part's measured cuBLASLt "
    "curve (the same GA100 SMs at the same 312 TFLOPS peak; presets/calibration extraction rule)";
const char* const kTorchtitanCause =
    "torchtitan: 500 W Grand Teton H100s, modelled as a power limit (compute at 0.894 of the 700 W part's clock by "
    "P ~ f^3, training/power_cap.h, which moved these rows 5-7 points; NVIDIA's parts of one die at two rated powers "
    "put the exponent between 0.31 and 0.58, i.e. 0.82-0.90 of the clock, and torchtitan's docs say only that the "
    "peak is 'between SXM and NVL'), FSDP2 without the per-layer prefetch tuning of Megatron (modelled: its op-level "
    "checkpointing, every second torch.mm re-run, and on the two eager bf16 rows PyTorch eager's RMSNorm, rotary, "
    "repeat_kv and SwiGLU kernels), and TPS read at one "
    "iteration (the 90th); the async-TP row's TP overlap is modelled as fully hidden behind the GEMMs, its SM use as "
    "Transformer Engine's userbuffers defaults (PyTorch symmetric memory's kernels were not read)";
const char* const kMoeCause =
    "MoE: the dispatcher's permute and regrouping passes and the grouped expert GEMM (at the efficiency of one "
    "expert's GEMM) are modelled; the router's auxiliary losses, load imbalance (describable as "
    "moe.load_imbalance, but DGX Cloud and the Megatron-Core Mixtral figure do not say, so the rows keep 1), "
    "DeepEP's SM use and the memory of routed activations are not";
const char* const kAutoModelMoeCause =
    "AutoModel MoE, run as its benchmark configuration sets it (the expert-parallel size, full recomputation, the "
    "fake balanced gate as contiguous routing, DeepEP's dispatch): DeepEP sends a token once per destination GPU "
    "and once per destination node over InfiniBand, and the gate puts a token's experts on one or two GPUs of one "
    "node, so the EP all-to-all is a small part of the step and the rows come out fast, as the other H100 rows "
    "do; not modelled: the host synchronisation of each DeepEP dispatch (its README: 'the CPU will wait for GPU's "
    "signal to arrive', to size the receive buffer), DeepEP's SMs, and the GPT-OSS runs' FlexAttention kernel "
    "(its windowed layers are timed at cuDNN's measured causal curve at the window's length, no kernel with a "
    "window having a measured curve; its attention sinks are left out). DeepEP's own intranode kernels, as NVIDIA "
    "aiconfigurator measured them on eight H100s (SGLang 0.5.12's table, FP8 dispatch and 16-bit combine at 20 SMs, "
    "random routing), take 1.2-3.2x the model's time for the same copies (hidden 2,048: 2.2-3.2x the dispatch, "
    "1.3-2.1x the combine; hidden 7,168: 1.3-1.7x and 1.2-1.7x, at 1,024-65,536 tokens a GPU; docs/validation.md, "
    "'Measured, not yet read: DeepEP's kernels'), which would lengthen these rows' EP all-to-all, 3-18% of their "
    "step; not yet read";

const char* const kFoldedDeepSeekCause =
    "DeepSeek-V3 on DGX Cloud (NeMo 25.04), expert groups folded over TP and DP ranks as Megatron-Core does (ep=64 "
    "over tp=2 x dp=32 on H100, ep=32 and ep=64 over a whole 32- or 64-rank stage on GB200): on H100 the MoE "
    "all-to-all, not overlapped with compute by this release, is most of the predicted step (EP all-to-all "
    "column): a 64-rank group spans 8 nodes and 7/8 of its traffic crosses InfiniBand. On GB200 the job runs in "
    "segments of 16 trays (64 GPUs) a rack, as NeMo's launcher asks Slurm for (config/job_segments.h), so every "
    "expert group stays on NVLink and the model predicts under a third of the measured step. The same model on the "
    "same racks ran 3.6x faster in later releases of the same recipes: NVIDIA's Megatron-Bridge performance tables "
    "(NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md) give DeepSeek-V3 on 256 GB200 3,454 "
    "tokens/s/GPU in 25.09 (token-dropping) and 3,955 in 26.02 (dropless, MXFP8), against 959 for the 128-GPU row "
    "here (1,024 x 4,096 tokens in 34.17 s); the model's 3,241 for that row is where those releases ran. So the gap "
    "is this release's software, which no term models";

// A cause that adds to the generation gap names it rather than repeating it: the gap's whole text is given once,
// for the rows it alone explains.
const char* const kAndGenerationGap =
    "; and the GPU generation gap given for the H100/B200/GB200 DGX Cloud rows (the cause that begins 'H100/B200/GB200 "
    "runs come out faster in the model than measured')";

std::string CauseOf(const std::string& key, const Row& row) {
    if (Starts(key, "bridge"))
        if (std::string c = BridgeCauseOf(row); !c.empty()) return c;
    if (Starts(key, "automodel_") && row.model.is_moe()) return std::string(kAutoModelMoeCause) + kAndGenerationGap;
    if (Starts(key, "dgxc_") && Has(key, "deepseek")) return std::string(kFoldedDeepSeekCause) + "; " + kMoeCause;
    if (Starts(key, "torchtitan_")) return kTorchtitanCause;
    if (Starts(key, "nemolongseq_") && Has(key, "_h100_")) return kLongSequenceH100Cause;
    if (row.model.is_moe() && (Has(key, "deepseek") || Has(key, "qwen3") || Has(key, "gptoss") || Has(key, "mixtral")))
        return std::string(kMoeCause) + kAndGenerationGap;
    if (Starts(key, "llmfoundry_") && Has(key, "a100")) return kFsdpA100Cause;
    const bool small = row.model.hidden <= 4096 && row.par.tp <= 2;
    if (small && (Starts(key, "megatronlm_") || Starts(key, "llmfoundry_") || Starts(key, "automodel_")))
        return kSmallModelCause;
    return kGenerationCause;
}

}  // namespace

bool IsGenerationGapCause(const std::string& cause) { return cause == kGenerationCause; }

std::vector<Row> MoreRowsOfRecord(const json& r);

std::vector<Row> MoreRowsOf(const json& r) {
    try {
        return MoreRowsOfRecord(r);
    } catch (const std::exception& e) {
        Row row;
        row.key = At(r, "key");
        row.set = Starts(row.key, "bridge") ? "bridge" : "more";
        row.comparable = false;
        row.not_comparable_reason = std::string("record incomplete: ") + e.what();
        return {row};
    }
}

std::vector<Row> MoreRowsOfRecord(const json& r) {
    Row row;
    row.key = At(r, "key");
    row.set = Starts(row.key, "bridge") ? "bridge" : "more";
    std::string src = At(r, "source");
    row.source = src.substr(0, src.find(','));
    std::vector<std::string> why_not;
    Built b = ModelOf(r);
    if (!b.unexpressible.empty()) why_not.push_back(b.unexpressible);
    row.model = b.model;
    row.preset = b.preset;
    row.assumptions = b.assumptions;
    const ClusterChoice cluster = ClusterOf(r);
    if (cluster.system.empty()) why_not.push_back("GPU not identified");
    if (why_not.empty()) LayoutOf(r, row, why_not);
    if (why_not.empty()) {
        std::string m = MeasurementOf(r, row);
        if (!m.empty()) why_not.push_back(m);
    }
    if (!why_not.empty()) {
        row.comparable = false;
        row.not_comparable_reason = why_not[0];
        for (size_t i = 1; i < why_not.size(); ++i) row.not_comparable_reason += "; " + why_not[i];
        return {row};
    }
    row.system = cluster.system;
    row.accelerator = cluster.accelerator;
    if (!cluster.note.empty()) row.assumptions.push_back(cluster.note);
    if (Has(At(At(r, "system"), "gpu").get<std::string>(), "Grand Teton")) {
        row.hbm_tbps = 2.4;  // record: "96GB HBM2e with 2.4 TB/sec"
        row.hbm_gb = 96;
        row.power_limit_w = 500;  // record: "default 500W power limit"
    }
    row.opt = OptionsOf(r, row.par);
    if (Starts(At(r, "key").get<std::string>(), "nemolongseq_") &&
        row.opt.attention_kernel == sc::AttentionKernel::flash2)
        row.assumptions.push_back(kNeMo2403AttentionNote);
    if (row.set == "bridge") ApplyBridgeRecipe(r, row);
    row.cause = CauseOf(row.key, row);
    return {row};
}

}  // namespace validation
