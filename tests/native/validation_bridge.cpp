// Megatron-Bridge 25.11 records (data/training_measured_bridge.json) -> what their performance recipes run beyond
// the table's columns. The table gives the model, the GPUs, the precision's name and the parallel sizes; the
// recipes that produced it give the rest: NVIDIA-NeMo/Megatron-Bridge scripts/performance at v0.2.0 (2025-11-26,
// the release of the 25.11 container; Megatron-Core 0d8e0714 pinned in 3rdparty/Megatron-LM). Paths below are at
// v0.2.0 ("perf/" = scripts/performance/, "recipes/" = src/megatron/bridge/recipes/) unless a branch is named.
//
// The table was revised on 2025-12-09 (1804c076f, docs only) for the GB300 and GB200 rows of Llama 3 70B, Llama 3.1
// 405B, DeepSeek-V3, GPT-OSS and Qwen3-235B, with shapes no tag holds. Where the unmerged branch gaod/r0.2.0_test
// (2025-12-05/06) holds them (DeepSeek-V3 without MTP at GBS 4096, GPT-OSS at seq 8192), its settings are used and
// named; where nothing does, the same family's recipe for the same GPU at v0.2.0 is, and the row says so.
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

void SetSelective(Row& row, const char* modules, const std::string& why) {
    row.par.recompute = sc::Recompute::selective;
    row.par.recompute_modules = sc::ParseRecomputeModules("recompute_modules", modules);
    row.assumptions.push_back(std::string("selective recomputation of ") + modules + " (" + why + ")");
}

}  // namespace

void ApplyBridgeRecipe(const nlohmann::json& record, Row& row) {
    const std::string key = record["key"];
    const std::string prec = record["parallel"]["precision"];
    const std::string gpu = record["system"]["gpu"];
    const bool gb300 = Has(gpu, "GB300"), gb200 = Has(gpu, "GB200"), b200 = !gb300 && !gb200 && Has(gpu, "B200"),
               h100 = Has(gpu, "H100");
    const bool nvl72 = gb300 || gb200;
    sc::ParallelConfig& q = row.par;
    sc::PrecisionConfig& pc = row.model.precision;
    row.recompute_stated = true;  // every recipe sets its recomputation (none unless named below)

    // Precision (perf/utils/helpers.py get_precision_config; src/megatron/bridge/training/mixed_precision.py): FP8-CS
    // is bf16_with_fp8_current_scaling_mixed (per-tensor current scaling) with first_last_layers_bf16=False (the
    // helper's override: every layer in fp8); FP8-MX is bf16_with_mxfp8_mixed (E8M0 scale per 32 elements).
    if (Has(prec, "FP8-CS")) pc.scaling = sc::Scaling::current;
    if (Has(prec, "FP8-MX")) pc.scaling = sc::Scaling::mx;
    pc.bf16_first_layers = pc.bf16_last_layers = 0;
    // Gradients reduced in bf16: every family's perf config sets grad_reduce_in_fp32 False (perf/configs/*/
    // *_llm_pretrain.py), where Megatron-LM's own default reduces in fp32.
    pc.grad = sc::Precision::bf16;
    // Data-parallel buckets of 128 MiB (src/megatron/bridge/training/comm_overlap.py CommOverlapConfig.setup, DP > 1).
    q.bucket_mb = 128;
    row.assumptions.push_back(
        "gradients reduced in bf16 (grad_reduce_in_fp32 False in the perf configs), 128 MiB buckets (comm_overlap.py)");

    if (row.model.is_moe()) {
        // expert_tensor_parallel_size=1 in every MoE base config (perf/configs/{deepseek,qwen3,gpt_oss}/
        // workload_base_configs.py), not Megatron-Core's etp=tp default.
        q.etp = 1;
        row.assumptions.push_back("etp=1 (expert_tensor_parallel_size in the MoE base configs)");
        // moe_router_force_load_balancing (random router logits; the table's footnote "we force-balance the token
        // distribution") is the model's uniform routing, its default.
    }

    const std::string m = row.model.name;
    if (Has(key, "llama31-405b")) {
        const std::string layout = EmbeddingLossLayout(row.model.layers, q.pp * q.active_vstages());
        if (!layout.empty())
            SetLayout(row, layout, "the 405B recipe's account_for_embedding/loss_in_pipeline_split: 128 slots evenly");
    } else if (Has(key, "llama3-70b") && nvl72) {
        // perf/configs/llama3/workload_base_configs.py LLAMA3_70B_{GB300,GB200}_FP8_CS: Megatron-FSDP, no
        // recomputation, cpu_offloading_num_layers 20 (GB300) / 40 (GB200) of activations to the Grace CPU's memory.
        row.assumptions.push_back(std::string("no recomputation; the recipe offloads the activations of ") +
                                  (gb300 ? "20" : "40") +
                                  " layers to the Grace CPU's memory (cpu_offloading_num_layers), which the model "
                                  "does not express: it holds them in HBM and reports the run as not fitting");
    } else if (Has(key, "llama3-8b") && h100) {
        // LLAMA3_8B_H100_FP8_CS: recompute_num_layers=5 -> full recomputation, block method, 5 layers a stage
        // (perf/utils/helpers.py sets granularity "full" and method "block" with it).
        q.recompute = sc::Recompute::full;
        q.recompute_layers = 5;
        row.assumptions.push_back(
            "full recomputation of the first 5 of the 32 layers (recompute_num_layers=5, the "
            "block method: LLAMA3_8B_H100_FP8_CS)");
    } else if (Has(key, "deepseekv3")) {
        if (b200) {
            // DEEPSEEK_V3_B200 (PP16, no VP): recipes/deepseek/deepseek_v3.py layout_map[(16, 1)], one MTP module.
            SetLayout(row, "Et*4|(t*4|)*14tmL", "recipes/deepseek/deepseek_v3.py layout_map[(16, 1)]");
            SetSelective(row, "mla_up_proj", "DEEPSEEK_V3_B200 recompute_modules");
        } else if (q.pp * q.active_vstages() == 16 || (gb300 && q.pp == 2)) {
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
            if (gb300) SetSelective(row, "mlp+moe_act", "gaod/r0.2.0_test DEEPSEEK_V3_GB300 recompute_modules");
            else SetSelective(row, "mla_up_proj", "DEEPSEEK_V3_GB200 recompute_modules");
        } else {
            // GB200 FP8-MX on PP8 x VP4: no layout in any revision found; 61 layers do not divide over 32 stages.
            q.uneven = true;
            row.assumptions.push_back("uneven stages: no layout for PP8 x VP4 was found in any revision");
            SetSelective(row, "mla_up_proj", "DEEPSEEK_V3_GB200 recompute_modules, the GB200 recipe");
        }
        // The DeepSeek recipe keeps Adam's moments in bf16 (recipes/deepseek/deepseek_v3.py: precision-aware
        // optimizer, exp_avg_dtype / exp_avg_sq_dtype bf16).
        pc.optimizer = sc::Precision::bf16;
    } else if (Has(key, "qwen3-235b")) {
        const std::string layout = EmbeddingLossLayout(row.model.layers, q.pp * q.active_vstages());
        if (!layout.empty())
            SetLayout(row, layout, "the 235B recipe's account_for_embedding/loss_in_pipeline_split: 96 slots evenly");
        if (h100) {
            row.opt.overlap_tp = false;  // QWEN3_235B_A22B_H100: comm_overlap tp_comm_overlap False
            row.assumptions.push_back("no TP communication overlap (the H100 235B config turns it off)");
        }
    }
    // The flex dispatcher with the HybridEP backend on NVL72 racks (perf configs' moe_flex_dispatcher_backend
    // "hybridep"; src/megatron/bridge/training/flex_dispatcher_backend.py): a token sent once per destination GPU,
    // the model's deepep_dispatch. DeepSeek-V3 and both Qwen3 models on GB300 and GB200, GPT-OSS on GB200 (gaod/
    // r0.2.0_test); every other row uses the all-to-all dispatcher.
    const bool hybridep = nvl72 && (Has(key, "deepseekv3") || Has(key, "qwen3") || (Has(key, "gpt-oss") && gb200));
    if (hybridep) {
        row.opt.kernels.deepep_dispatch = true;
        row.assumptions.push_back("HybridEP dispatch (flex dispatcher, moe_flex_dispatcher_backend hybridep)");
    }
    // Not modelled, named where a recipe runs it: the EP all-to-all overlapped with another microbatch's compute
    // (moe_a2a_overlap: Qwen3 on H100, Qwen3-235B on B200) and CUDA graphs (most Blackwell recipes).
    if (row.model.is_moe() && (Has(key, "qwen3") && (h100 || (b200 && Has(key, "235b")))))
        row.assumptions.push_back(
            "the recipe overlaps the EP all-to-all with another microbatch (moe_a2a_overlap), "
            "which the model does not: its all-to-all is exposed");
    (void)m;
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
    "GB200 rows come out fast and GB300 rows slow. What the parts differ in beyond the GEMM curves is their power "
    "(1,400 W against 1,200 W a GPU) and the clocks each holds under a training load, which no measurement in data/ "
    "gives";
const char* const kGptOssCause =
    "GPT-OSS 120B in BF16: fast on every part alike (GB300, GB200, B200, H100), so the gap follows the recipe rather "
    "than a part. The 25.11 BF16 recipes run it without CUDA graphs on GB200, B200 and H100 and with the all-to-all "
    "dispatcher on GB300 and B200; the same model in MXFP8 on the same 64 GB300 ran 33,166 tokens/s/GPU in 26.06 "
    "with full-iteration CUDA graphs, the HybridEP dispatcher and EP16, where the model is within 5% "
    "(docs/validation.md, 'Scaling recipes'). Per-kernel launch and synchronisation work, which CUDA graphs remove "
    "and which grows with 128 small experts a layer, has no measurement in data/ and is not modelled; nor are the "
    "model's attention sinks, biases and clamped activation (presets/models/gpt-oss-120b.json)";
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
    if (Has(k, "gpt-oss")) return kGptOssCause;
    // Qwen3-235B on H100 is slow, not fast: its cause is the one every set's slow rows take (NameSlowSide).
    if (Has(k, "deepseekv3") || (Has(k, "qwen3") && (Has(k, "xb200") || Has(k, "xh100")) && !Has(k, "235b_fp8cs")))
        return kReleaseCause;
    if (Has(k, "xgb200") || Has(k, "xgb300")) return kGbPairCause;
    return "";  // dense B200 and H100 rows: the generation gap the other sets name
}

}  // namespace validation
