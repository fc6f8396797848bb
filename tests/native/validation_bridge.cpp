// Megatron-Bridge records (data/training_measured_bridge.json: its 25.11 and 26.04.01 tables) -> what their
// performance recipes run beyond the tables' columns. A table gives the model, the GPUs, the precision's name and
// the parallel sizes; the recipes that produced it give the rest, each setting below with its file:
//   25.11: scripts/performance at v0.2.0 (2025-11-26; Megatron-Core 0d8e0714 in 3rdparty/Megatron-LM). Its GB300
//     and GB200 rows of Llama 3 70B, Llama 3.1 405B, DeepSeek-V3, GPT-OSS and Qwen3-235B were revised on 2025-12-09
//     (1804c076f, docs only) with shapes no tag holds. Where the unmerged branch gaod/r0.2.0_test (2025-12-05/06)
//     holds them (DeepSeek-V3 without MTP at GBS 4096, GPT-OSS at seq 8192), its settings are used and named; where
//     nothing does, the same family's recipe for the same GPU at v0.2.0 is, and the row says so.
//   26.04.01: v0.4.2 (2026-05-28; docs/versions1.json maps 0.4.2 to 26.04.01; Megatron-Core 2edffadb): every row's
//     shape is its preset's.
// "perf/" = scripts/performance/, "recipes/" = src/megatron/bridge/recipes/.
#include <algorithm>
#include <string>

#include "parallel/pipeline_layout.h"
#include "validation_rows.h"

namespace validation {

namespace {

bool Has(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }

// Megatron-Core's account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split (set by the
// Llama 3.1 405B and Qwen3-235B recipes, recipes/llama/llama3.py and recipes/qwen/qwen3_moe.py): the embedding and
// the loss each take a layer's slot, and the layers + 2 slots are split evenly over the pp x vp virtual stages.
// "" when they do not divide evenly.
std::string EmbeddingLossLayout(int layers, int stages) {
    const int slots = layers + 2;
    if (stages < 2 || slots % stages != 0) return "";
    const int per = slots / stages;
    auto run = [](int n) { return n == 1 ? std::string("t") : "t*" + std::to_string(n); };
    std::string s = "E" + (per > 1 ? run(per - 1) : "") + "|";
    if (stages > 2) s += "(" + run(per) + "|)*" + std::to_string(stages - 2);
    return s + (per > 1 ? run(per - 1) : "") + "L";
}

void SetLayout(Row& row, const std::string& text, const std::string& why) {
    const sc::PipelineLayout l = sc::ParsePipelineLayout(text);
    row.par.layout = l.layers;
    row.par.layout_mtp = l.mtp;
    row.par.uneven = false;
    row.assumptions.push_back("pipeline layout " + text + " (" + why + ")");
}

bool Starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// The Llama 3.1 405B and Qwen3-235B recipes' account_for_embedding/loss_in_pipeline_split, in both releases.
void SetEmbeddingLossLayout(Row& row) {
    const int stages = row.par.pp * row.par.active_vstages();
    const std::string layout = EmbeddingLossLayout(row.model.layers, stages);
    if (!layout.empty())
        SetLayout(row, layout,
                  "account_for_embedding/loss_in_pipeline_split: " + std::to_string(row.model.layers + 2) +
                      " slots evenly over " + std::to_string(stages) + " stages");
}

// Llama 3 70B on GB300 and GB200 (Megatron-FSDP, FP8): the recipes offload activations to the Grace CPU's memory,
// 20 layers on GB300 and 40 on GB200 (cpu_offloading_num_layers in `preset`), in both releases: the model's
// offload_layers over the part's host link (GB200's nvbandwidth measurement, which GB300's Grace trays share).
void SetOffload(Row& row, bool gb300, const char* preset) {
    row.par.offload_layers = gb300 ? 20 : 40;
    std::string a = "no recomputation; the recipe offloads the activations of ";
    a += gb300 ? "20" : "40";
    a += " layers to the Grace CPU's memory (";
    a += preset;
    a += " cpu_offloading_num_layers; cpu_offloading_weights False): the model's offload_layers on Transformer "
         "Engine's schedule, over NVLink-C2C at GB200's measured 193/201 GB/s";
    row.assumptions.push_back(a);
}

void SetDispatch(Row& row, const char* backend) {
    // The flex dispatcher (src/megatron/bridge/training/flex_dispatcher_backend.py) with HybridEP or DeepEP sends a
    // token once per destination GPU: the model's deepep_dispatch.
    row.opt.kernels.deepep_dispatch = true;
    row.assumptions.push_back(std::string(backend) + " dispatch (the flex dispatcher, moe_flex_dispatcher_backend)");
}

// Megatron-Core's overlap_moe_expert_parallel_comm (moe_a2a_overlap in the perf presets, with delay_wgrad_compute):
// the model's a2a_overlap, the combined 1F1B order with each pair's all-to-all behind the other half's compute.
// Megatron-Bridge sets delay_wgrad_compute with it (scripts/performance/utils/overrides.py), which the overlap's
// windows take (training/estimate.cpp, PairWindows).
void SetA2aOverlap(Row& row) {
    row.par.a2a_overlap = true;
    row.assumptions.push_back(
        "the EP all-to-all overlapped with another microbatch's compute (moe_a2a_overlap: Megatron-Core's "
        "overlap_moe_expert_parallel_comm with delay_wgrad_compute, the model's a2a_overlap=1)");
}

void SetSelective(Row& row, const char* modules, const std::string& why) {
    row.par.recompute = sc::Recompute::selective;
    row.par.recompute_modules = sc::ParseRecomputeModules("recompute_modules", modules);
    row.assumptions.push_back(std::string("selective recomputation of ") + modules + " (" + why + ")");
}

}  // namespace

namespace {

struct Part {
    bool gb300 = false, gb200 = false, b300 = false, b200 = false, h100 = false;
    bool nvl72() const { return gb300 || gb200; }
};

// 25.11 (v0.2.0, 2025-11-26; rows revised on 2025-12-09, see above): what its recipes set beyond the table.
// Returns whether the run has Megatron-Bridge's CommOverlapConfig (its 128M-parameter buckets).
bool Apply2511(const std::string& key, Part g, Row& row) {
    sc::ParallelConfig& q = row.par;
    if (Has(key, "llama31-405b")) {
        SetEmbeddingLossLayout(row);
    } else if (Has(key, "llama3-70b") && g.nvl72()) {
        SetOffload(row, g.gb300, "perf/configs/llama3/workload_base_configs.py LLAMA3_70B_*_FP8_CS");
    } else if (Has(key, "llama3-8b") && g.h100) {
        // LLAMA3_8B_H100_FP8_CS: recompute_num_layers=5 -> full recomputation, block method, 5 layers a stage
        // (perf/utils/helpers.py sets granularity "full" and method "block" with it).
        q.recompute = sc::Recompute::full;
        q.recompute_layers = 5;
        row.assumptions.push_back(
            "full recomputation of the first 5 of the 32 layers (recompute_num_layers=5, the "
            "block method: LLAMA3_8B_H100_FP8_CS)");
    } else if (Has(key, "deepseekv3")) {
        if (g.b200) {
            // DEEPSEEK_V3_B200 (PP16, no VP): recipes/deepseek/deepseek_v3.py layout_map[(16, 1)], one MTP module.
            SetLayout(row, "Et*4|(t*4|)*14tmL", "recipes/deepseek/deepseek_v3.py layout_map[(16, 1)]");
            SetSelective(row, "mla_up_proj", "DEEPSEEK_V3_B200 recompute_modules");
        } else if (q.pp * q.active_vstages() == 16 || (g.gb300 && q.pp == 2)) {
            // gaod/r0.2.0_test's configs/deepseek/deepseek_llm_pretrain.py for GB300 and GB200: no MTP and
            // layout "Et*3|(t*4|)*14ttL" (16 virtual stages). Megatron-Core requires vp = stages / pp
            // (transformer_config.py), so on GB300's PP2 the layout runs at VP8, not the table's VP4.
            if (q.pp == 2 && q.vstages != 8) {
                row.assumptions.push_back(
                    "VP8, not the table's VP4: the only layout found for this run has 16 "
                    "virtual stages, and Megatron-Core needs vp = 16 / pp");
                q.vstages = 8;
            }
            SetLayout(row, "Et*3|(t*4|)*14ttL", "gaod/r0.2.0_test configs/deepseek/deepseek_llm_pretrain.py");
            if (g.gb300) SetSelective(row, "mlp+moe_act", "gaod/r0.2.0_test DEEPSEEK_V3_GB300 recompute_modules");
            else SetSelective(row, "mla_up_proj", "DEEPSEEK_V3_GB200 recompute_modules");
        } else {
            // GB200 FP8-MX on PP8 x VP4: no layout in any revision found; 61 layers do not divide over 32 stages.
            q.uneven = true;
            row.assumptions.push_back("uneven stages: no layout for PP8 x VP4 was found in any revision");
            SetSelective(row, "mla_up_proj", "DEEPSEEK_V3_GB200 recompute_modules, the GB200 recipe");
        }
    } else if (Has(key, "qwen3-235b")) {
        SetEmbeddingLossLayout(row);
        if (g.h100) {
            row.opt.overlap_tp = false;  // QWEN3_235B_A22B_H100: comm_overlap tp_comm_overlap False
            row.assumptions.push_back("no TP communication overlap (the H100 235B config turns it off)");
        }
    }
    // The flex dispatcher with the HybridEP backend on NVL72 racks (perf configs' moe_flex_dispatcher_backend
    // "hybridep"; src/megatron/bridge/training/flex_dispatcher_backend.py): a token sent once per destination GPU,
    // the model's deepep_dispatch. DeepSeek-V3 and both Qwen3 models on GB300 and GB200, GPT-OSS on GB200 (gaod/
    // r0.2.0_test); every other row uses the all-to-all dispatcher.
    if (g.nvl72() && (Has(key, "deepseekv3") || Has(key, "qwen3") || (Has(key, "gpt-oss") && g.gb200)))
        SetDispatch(row, "HybridEP");
    if (Has(key, "qwen3") && (g.h100 || (g.b200 && Has(key, "235b")))) SetA2aOverlap(row);
    // GPT-OSS's recipe has no CommOverlapConfig (recipes/gpt_oss/gpt_oss.py comm_overlap_config=None).
    return !Has(key, "gpt-oss");
}

// 26.04.01 (v0.4.2, 2026-05-28: docs/versions1.json maps 0.4.2 to 26.04.01; Megatron-Core 2edffadb). Every row's
// shape is its preset's (perf/configs/<family>/*_workload_base_configs.py, the "V2" presets where they exist).
bool Apply2604(const std::string& key, const std::string& prec, Part g, Row& row) {
    sc::ParallelConfig& q = row.par;
    sc::PrecisionConfig& pc = row.model.precision;
    const bool nvfp4 = prec == "NVFP4";
    bool comm_overlap_config = true;
    if (Has(key, "llama3-70b") && g.nvl72() && q.zero == 3) {
        SetOffload(row, g.gb300, "LLAMA3_70B_PRETRAIN_CONFIG_*_FP8_CS_V2");
    } else if (Has(key, "llama31-405b") || Has(key, "qwen3-235b")) {
        SetEmbeddingLossLayout(row);
    }
    // NVFP4 rows run without TP communication overlap (the llama builders turn it off for nvfp4), and so does
    // Qwen3-235B on H100 (qwen3_llm_pretrain.py: tp_comm_overlap False).
    if ((nvfp4 && Has(key, "llama")) || (Has(key, "qwen3-235b") && g.h100)) {
        if (row.opt.overlap_tp) row.assumptions.push_back("no TP communication overlap (the recipe turns it off)");
        row.opt.overlap_tp = false;
    }
    if (Has(key, "deepseekv3")) {
        // recipes/deepseek/deepseek_v3.py's layout map, with the preset's MTP module on the last stage.
        if (g.b300) SetLayout(row, "Et*8|(t*8|)*6t*5mL", "deepseek_v3.py layout map (8, 1)");
        else SetLayout(row, "Et*4|(t*4|)*14tmL", "deepseek_v3.py layout map, 16 virtual stages");
        SetSelective(row,
                     g.gb200  ? "mlp"
                     : g.b200 ? "mla_up_proj+mlp"
                              : "mla_up_proj",
                     "the DEEPSEEK_V3 preset's recompute_modules");
        SetDispatch(row, g.b200 ? "DeepEP" : "HybridEP");
        if (g.b200) SetA2aOverlap(row);
    } else if (Has(key, "kimi-k2")) {
        SetLayout(row, "Et*4|(t*4|)*14tL", "recipes/kimi/kimi_k2.py layout map (4, 4), no MTP");
        SetSelective(row, "mla_up_proj", "the KIMI_K2 preset's recompute_modules");
        SetDispatch(row, "HybridEP");
        // dist_muon without Megatron's distributed optimizer (recipes/kimi/kimi_k2.py): every DP rank holds the
        // optimizer state. Muon keeps one momentum buffer where the model counts Adam's two (memory and the
        // optimizer step only).
        q.zero = 0;
        row.assumptions.push_back(
            "Muon (the table's note) as Adam without the distributed optimizer (zero=0, as the "
            "recipe runs Muon): one momentum buffer counted as two");
        comm_overlap_config = false;
    } else if (Has(key, "gpt-oss")) {
        if (g.b300) SetDispatch(row, "HybridEP");
        if (g.gb200 || g.b200 || g.h100)
            SetSelective(row, "layernorm+moe_act", "the GPT_OSS preset's recompute_modules");
        if (g.gb200) SetA2aOverlap(row);
        comm_overlap_config = g.gb200;  // only the GB200 builder creates one
    } else if (Has(key, "qwen3-30b")) {
        SetDispatch(row, "HybridEP");
    } else if (Has(key, "qwen3-235b")) {
        if (!g.b200 && !g.h100) SetDispatch(row, "HybridEP");
        if (g.h100) SetA2aOverlap(row);
    } else if (Has(key, "nemotron-3-nano")) {
        SetDispatch(row, "HybridEP");
        if (g.h100) SetSelective(row, "moe+layernorm+core_attn+moe_act", "NEMOTRON_3_NANO H100 recompute_modules");
    } else if (Has(key, "nemotron-3-super")) {
        SetDispatch(row, "HybridEP");
        if ((g.b300 && nvfp4) || (g.b200 && !nvfp4))
            SetSelective(row, "moe_act+layernorm", "the NEMOTRON_3_SUPER preset's recompute_modules");
        if (nvfp4) {
            // nemotron_3_super_bf16_with_nvfp4_mixed (training/mixed_precision.py): the last 14 layers in BF16, and
            // cfg/nemotronh/te_quant.cfg keeps attention, the latent projections and the MTP block in BF16.
            pc.bf16_last_layers = 14;
            pc.bf16_modules = sc::kBf16Attention | sc::kBf16Latent | sc::kBf16Mtp;
            row.assumptions.push_back(
                "NVFP4 with the last 14 layers and attention, latent projections and MTP in BF16 "
                "(nemotron_3_super_bf16_with_nvfp4_mixed, te_quant.cfg); its Mamba out_proj in "
                "MXFP8 is modelled in NVFP4 with the rest");
        }
        // No CommOverlapConfig: no TP overlap on the TP2 rows, Megatron-Core's default buckets.
        if (row.opt.overlap_tp) row.assumptions.push_back("no TP communication overlap (no CommOverlapConfig)");
        row.opt.overlap_tp = false;
        comm_overlap_config = false;
    }
    return comm_overlap_config;
}

}  // namespace

void ApplyBridgeRecipe(const nlohmann::json& record, Row& row) {
    const std::string key = record["key"];
    const std::string prec = record["parallel"]["precision"];
    const std::string gpu = record["system"]["gpu"];
    Part g;
    g.gb300 = Has(gpu, "GB300"), g.gb200 = Has(gpu, "GB200");
    g.b300 = !g.gb300 && Has(gpu, "B300"), g.b200 = !g.gb200 && Has(gpu, "B200"), g.h100 = Has(gpu, "H100");
    sc::ParallelConfig& q = row.par;
    sc::PrecisionConfig& pc = row.model.precision;
    row.recompute_stated = true;  // every recipe sets its recomputation (none unless named)

    // Precision (perf/utils/helpers.py get_precision_config at v0.2.0, perf/utils/precision.py at v0.4.2;
    // src/megatron/bridge/training/mixed_precision.py): "FP8-CS" and 26.04.01's "FP8" are
    // bf16_with_fp8_current_scaling_mixed (per-tensor current scaling) with first_last_layers_bf16=False (the perf
    // override: every layer in fp8); "FP8-MX" and "MXFP8" bf16_with_mxfp8_mixed (E8M0 scale per 32 elements);
    // "NVFP4" bf16_with_nvfp4_mixed.
    if (prec == "FP8-CS" || prec == "FP8") pc.scaling = sc::Scaling::current;
    if (prec == "FP8-MX" || prec == "MXFP8") pc.scaling = sc::Scaling::mx;
    if (prec == "NVFP4") pc.compute = sc::Precision::fp4, pc.scaling = sc::Scaling::nvfp4;
    pc.bf16_first_layers = pc.bf16_last_layers = 0;
    // Gradients reduced in bf16: every family's perf config sets grad_reduce_in_fp32 False, where Megatron-LM's own
    // default reduces in fp32.
    pc.grad = sc::Precision::bf16;
    if (row.model.is_moe()) {
        // expert_tensor_parallel_size=1 in every MoE base config, not Megatron-Core's etp=tp default.
        q.etp = 1;
        row.assumptions.push_back("etp=1 (expert_tensor_parallel_size in the MoE base configs)");
        // moe_router_force_load_balancing (random router logits; the tables' footnote "we force-balance the token
        // distribution") is the model's uniform routing, its default.
    }
    // The DeepSeek recipe keeps Adam's moments in bf16 (recipes/deepseek/deepseek_v3.py: precision-aware optimizer,
    // exp_avg_dtype / exp_avg_sq_dtype bf16).
    if (Has(key, "deepseekv3")) pc.optimizer = sc::Precision::bf16;

    const bool overlap_config = Starts(key, "bridge2511") ? Apply2511(key, g, row) : Apply2604(key, prec, g, row);
    // Data-parallel buckets: 128M parameters with Megatron-Bridge's CommOverlapConfig (comm_overlap.py setup, DP > 1),
    // else Megatron-Core's default max(40M, 1M x dp) (distributed_data_parallel.py); the model's bucket_mb is bytes of
    // gradients.
    const double params = overlap_config ? 128.0 * 1024 * 1024 : std::max(40e6, 1e6 * q.dp);
    q.bucket_mb = params * sc::BytesOf(pc.grad) / (1024.0 * 1024);
    row.assumptions.push_back("gradients reduced in bf16 (grad_reduce_in_fp32 False in the perf configs), buckets of " +
                              std::string(overlap_config ? "128M parameters (CommOverlapConfig)"
                                                         : "max(40M, 1M x dp) parameters (Megatron-Core's default)"));
}

}  // namespace validation

namespace validation {

namespace {

// The published rates below are the table's own and its later releases' (docs/performance-summary-archive.md and
// docs/performance-summary.md at NVIDIA-NeMo/Megatron-Bridge@067f987), tokens/s/GPU.
const char* const kGbPairCause =
    "GB300 against GB200: the published runs of this table go faster on GB300 than on GB200 by more than the model "
    "sees. On the same layout the model gives both parts the same time (GB300 runs GB200's measured GEMM and NVLink "
    "curves, since MAMF's best shapes on B300 and B200 agree within 3% at the same peaks: docs/validation.md, 'Parts "
    "without their own measurements'), while the published rates differ by 1.19x (Llama 3 8B FP8-CS: 37,556 "
    "against 31,508), 1.21x (FP8-MX), 1.05x (Llama 3 70B, FSDP) and 1.22x (Qwen3-30B-A3B, both EP8 at micro-batch "
    "4); the rows on different layouts differ by 1.23-1.25x (Llama 3.1 405B, DeepSeek-V3 BF16, Qwen3-235B). So "
    "GB200 rows come out fast and GB300 rows slow. What the parts differ in is their power (1,400 W against 1,200 W "
    "a GPU) and the clock each holds under it: NVIDIA's per-op tables time TensorRT-LLM's same Linear op 1.10-1.15x "
    "faster on GB300 than on GB200 at the same shapes (median; H200 against H100, one die at one power, 1.01-1.03). "
    "Run at that ratio the GB300 rows come out as fast as the GB200 ones (12 of 23 within 10% either way, mean "
    "|error| 9.9% -> 12.8%), so it is measured but not kept until the gap of cause (e) is found (docs/validation.md, "
    "'Measured, not kept: GB300's GEMMs against GB200's')";
const char* const kGptOssCause =
    "GPT-OSS 120B in BF16: fast on every part alike (GB300, GB200, B300, B200, H100) in both releases, so the gap "
    "follows the recipe rather than a part. Its BF16 recipes run it with the all-to-all dispatcher on most parts and "
    "without CUDA graphs on GB200, B200 and H100; the same model in MXFP8 on the same 64 GB300 ran 33,166 "
    "tokens/s/GPU in 26.06 with full-iteration CUDA graphs, the HybridEP dispatcher and EP16, where the model is "
    "within 5% (docs/validation.md, 'Scaling recipes'). Per-kernel launch and synchronisation work, which CUDA graphs "
    "remove and which grows with 128 small experts a layer, has no measurement in data/ and is not modelled; nor are "
    "the model's attention sinks, biases and clamped activation (presets/models/gpt-oss-120b.json)";
const char* const kHybridCause =
    "Nemotron 3 Nano and Super (hybrid Mamba-2/attention/MoE): fast on the Blackwell parts, Super more than Nano. "
    "The Mamba-2 mixer's chunked scan runs at its measured forward (TensorRT-LLM's mamba_chunk_scan_combined on B200, "
    "NVIDIA aiconfigurator's table: 1.9-3.7% of the bf16 peak at these runs' 64-256 sequences x heads, where cuDNN "
    "attention's curve timed it before), which moved these rows 6-19 points (docs/validation.md, 'The SSD scan at "
    "its measured rate'); its backward, which no source measured, at the forward's fraction on twice the FLOPs. "
    "Super's 512 latent experts top-22 add the small-expert grouped GEMMs of the MoE rows. Not modelled: the "
    "recipes' Mamba CUDA graphs, HybridEP's SMs (16 on Nano by the order the perf scripts apply settings, 32 "
    "elsewhere), Super's Mamba out_proj in MXFP8 inside its NVFP4 rows";
const char* const kNvfp4Cause =
    "NVFP4 (Llama 3 70B): fast, more on GB200 than on GB300. GB300 has no measured fp4 GEMM curve, so its fp4 GEMMs "
    "run at the bf16 curve's fraction of the 15 PF fp4 peak; GB200's measured cuBLASLt fp4 curve reaches 75% of its "
    "peak at 8192^3 against 58% for fp8, a ratio the published NVFP4/MXFP8 speed-ups of this table (1.31x on GB200, "
    "1.50x on GB300 for Llama 3 70B) do not show (docs/validation.md, 'Scaling recipes'). The Llama 3.1 405B NVFP4 "
    "rows, at smaller GEMMs per GPU, are within 10%";
const char* const kA2aOverlapCause =
    "faster in the model than measured where the recipe overlaps the MoE all-to-all with another microbatch's "
    "compute (moe_a2a_overlap, the model's a2a_overlap=1): each all-to-all hides behind the compute piece of its "
    "window (Megatron-Core's combined 1F1B: the combine's gradient beside the attention's forward, the dispatch "
    "beside the experts, the combine beside the attention's backward) at the compute's full rate less the SMs of the "
    "communication kernels. Without the overlap the same rows came out 16.6% (DeepSeek-V3 on B200) and 20.1% "
    "(Qwen3-235B on H100) slow, so these runs hid 45% and 64% of what the windows allow; what keeps the rest exposed "
    "(the all-to-all and the GEMMs beside it sharing HBM and NVLink, the launch order of the two streams) has no "
    "measurement in data/";
const char* const kReleaseCause =
    "the same model on the same part ran much faster in later releases of the same recipes, and the model, which "
    "has no software release in it, predicts near where those ran: DeepSeek-V3 on 256 GB300 3,848 (BF16) and 4,357 "
    "(MXFP8) here, 4,992 in 26.04.01 (MXFP8, micro-batch 2) and 6,288 in 26.08; on 256 GB200 3,139 and 4,018 here, "
    "4,256 in 26.04.01 and 4,912 in 26.08; on 256 B200 2,139 here (PP16 EP8 with MTP), 3,328 in 26.04.01 (PP8 VP2 "
    "EP32). Qwen3-30B-A3B on 8 B200 9,299 here (micro-batch 1), 27,136 in 26.04.01 (micro-batch 4), on 16 H100 "
    "5,275 here (PP2 VP24 EP8), 8,960 in 26.04.01 (EP16); Qwen3-235B-A22B on B200 3,269 here (64 GPUs), 3,776 in "
    "26.04.01 (256 GPUs, PP8 EP8). The MoE kernels, dispatchers and overlaps of these releases changed between "
    "them (grouped GEMMs, HybridEP, CUDA graphs of the MoE router and preprocessing); none is a measured term";

}  // namespace

std::string BridgeCauseOf(const Row& row) {
    const std::string& k = row.key;
    const bool r2604 = Starts(k, "bridge2604");
    if (Has(k, "gpt-oss")) return kGptOssCause;
    if (Has(k, "nemotron-3")) return kHybridCause;
    if (r2604 && Has(k, "llama") && Has(k, "_nvfp4_")) return kNvfp4Cause;
    // The rows whose recipes overlap the all-to-all, 26.04.01's (25.11's Qwen3 rows take the release cause).
    if (r2604 && ((Has(k, "deepseekv3") && Has(k, "xb200")) || (Has(k, "qwen3-235b") && Has(k, "xh100"))))
        return kA2aOverlapCause;
    if (!r2604 &&
        (Has(k, "deepseekv3") || (Has(k, "qwen3") && (Has(k, "xb200") || Has(k, "xh100")) && !Has(k, "235b_fp8cs"))))
        return kReleaseCause;
    if (Has(k, "xgb200") || Has(k, "xgb300")) return kGbPairCause;
    return "";  // dense B200 and H100 rows, MoE rows on B200, B300 and H100: the causes the other sets name
}

}  // namespace validation
