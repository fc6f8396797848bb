#include "parallel/parallel_config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "config/error.h"
#include "config/numbers.h"
#include "config/split_list.h"
#include "parallel/pipeline_layout.h"

namespace sc {

const char* NameOf(Schedule s) {
    switch (s) {
        case Schedule::gpipe: return "gpipe";
        case Schedule::one_f_one_b: return "1f1b";
        case Schedule::interleaved: return "interleaved";
        case Schedule::zbh1: return "zbh1";
        case Schedule::dualpipe: return "dualpipe";
        case Schedule::zbv: return "zbv";
        case Schedule::dualpipev: return "dualpipev";
        case Schedule::interleaved_zb: return "interleaved_zb";
    }
    return "?";
}

const char* NameOf(Recompute r) {
    switch (r) {
        case Recompute::none: return "none";
        case Recompute::selective: return "selective";
        case Recompute::full: return "full";
        case Recompute::op: return "op";
    }
    return "?";
}

// Degrees and counts: at most `hi`; zero and negative values pass to ValidateParallel, which names the constraint.
static int ToInt(const std::string& key, const std::string& v, long long hi) {
    return static_cast<int>(ParseIntegerIn(key, v, -hi, hi));
}

static bool ToBool(const std::string& key, const std::string& v) {
    if (v == "1" || v == "true" || v == "on") return true;
    if (v == "0" || v == "false" || v == "off") return false;
    throw Error(key, "expected true or false, got \"" + v + "\"");
}

Schedule ParseSchedule(const std::string& field, const std::string& v) {
    if (v == "gpipe") return Schedule::gpipe;
    if (v == "1f1b") return Schedule::one_f_one_b;
    if (v == "interleaved") return Schedule::interleaved;
    if (v == "zbh1") return Schedule::zbh1;
    if (v == "dualpipe") return Schedule::dualpipe;
    if (v == "zbv") return Schedule::zbv;
    if (v == "dualpipev") return Schedule::dualpipev;
    if (v == "interleaved_zb") return Schedule::interleaved_zb;
    throw Error(field,
                "\"" + v + "\" is not one of gpipe, 1f1b, interleaved, zbh1, dualpipe, zbv, dualpipev, interleaved_zb");
}

Recompute ParseRecompute(const std::string& field, const std::string& v) {
    if (v == "none") return Recompute::none;
    if (v == "selective") return Recompute::selective;
    if (v == "full") return Recompute::full;
    if (v == "op") return Recompute::op;
    throw Error(field, "\"" + v + "\" is not one of none, selective, full, op");
}

// Megatron's module names joined by '+' ("mla_up_proj+layernorm+moe_act"; the spec's items are split at commas).
uint8_t ParseRecomputeModules(const std::string& field, const std::string& v) {
    uint8_t mask = 0;
    for (const std::string& name : SplitList(v, '+')) {
        int i = 0;
        while (i < kRecomputeModuleCount && name != kRecomputeModuleNames[i]) ++i;
        if (name.empty()) throw Error(field, "an empty module name in \"" + Clip(v) + "\" (names joined by '+')");
        if (i == kRecomputeModuleCount)
            throw Error(field,
                        "\"" + Clip(name) +
                            "\" is not one of core_attn, layernorm, mla_up_proj, moe_act, mlp, moe, shared_experts "
                            "(Megatron-Core's recompute_modules, joined by '+')");
        mask |= static_cast<uint8_t>(1u << i);
    }
    if (mask == 0) throw Error(field, "names no module (e.g. recompute_modules=mla_up_proj+layernorm+moe_act)");
    return mask;
}

std::string RecomputeModulesString(uint8_t mask) {
    std::string s;
    for (int i = 0; i < kRecomputeModuleCount; ++i)
        if (mask & (1u << i)) {
            if (!s.empty()) s.push_back('+');
            s.append(kRecomputeModuleNames[i]);
        }
    return s;
}

// The key a spec item sets ("mb" is "microbatch", "vp" is "vstages" as NeMo's and DGX Cloud's tables name it,
// "fsdp" is "zero"), to refuse one given twice.
static std::string CanonicalKey(const std::string& k) {
    if (k == "mb") return "microbatch";
    if (k == "vp") return "vstages";
    if (k == "fsdp") return "zero";
    return k;
}

static void SetKey(ParallelConfig& p, const std::string& k, const std::string& v, bool* vstages_given) {
    if (k == "tp") p.tp = ToInt(k, v, kMaxRanks);
    else if (k == "pp") p.pp = ToInt(k, v, kMaxRanks);
    else if (k == "dp") p.dp = ToInt(k, v, kMaxRanks);
    else if (k == "cp") p.cp = ToInt(k, v, kMaxRanks);
    else if (k == "ep") p.ep = ToInt(k, v, kMaxRanks);
    else if (k == "etp") p.etp = ToInt(k, v, kMaxRanks);
    else if (k == "sp") p.sp = ToBool(k, v);
    else if (k == "microbatch" || k == "mb") p.microbatch = ToInt(k, v, kMaxModelDim);
    else if (k == "batch")
        p.batch = static_cast<int>(ParseIntegerIn(k, v, 1, kMaxBatch));  // 0 would mean "the default"
    else if (k == "vstages" || k == "vp") p.vstages = ToInt(k, v, kMaxModelDim), *vstages_given = true;
    else if (k == "zero") p.zero = ToInt(k, v, 3);
    else if (k == "gpus") p.gpus = static_cast<int>(ParseIntegerIn(k, v, 1, kMaxRanks));  // 0 would mean "unchecked"
    else if (k == "uneven") p.uneven = ToBool(k, v);
    else if (k == "layout") {
        const PipelineLayout l = ParsePipelineLayout(v);
        p.layout = l.layers, p.layout_mtp = l.mtp;
    } else if (k == "order") p.order = v;
    else if (k == "bucket_mb") p.bucket_mb = ParseNumberIn(k, v, 1, kMaxBucketMb);
    else if (k == "schedule") p.schedule = ParseSchedule(k, v);
    else if (k == "recompute") p.recompute = ParseRecompute(k, v);
    else if (k == "recompute_modules") p.recompute_modules = ParseRecomputeModules(k, v);
    else if (k == "recompute_layers")
        p.recompute_layers = static_cast<int>(ParseIntegerIn(k, v, 1, kMaxModelDim));  // 0 would mean "all"
    else if (k == "fsdp") p.zero = ToBool(k, v) ? 3 : 0;
    else if (k == "a2a_overlap") p.a2a_overlap = ToBool(k, v);
    else if (k == "offload_layers") p.offload_layers = static_cast<int>(ParseIntegerIn(k, v, 0, kMaxModelDim));
    else
        throw Error(
            Clip(k),
            "unknown parallel key; valid: tp pp dp cp ep etp sp microbatch (mb) batch schedule vstages (vp) "
            "recompute recompute_modules recompute_layers a2a_overlap offload_layers zero fsdp order gpus uneven layout "
            "bucket_mb");
}

ParallelConfig ParseParallelSpec(std::string_view spec) {
    ParallelConfig p;
    bool vstages_given = false, etp_is_tp = false;
    std::vector<std::string> seen, items;
    // Megatron's layout strings may hold cosmetic commas ("Et*3|(tt|)*29,m|L"): a piece without '=' right after a
    // layout item continues it.
    for (const std::string& item : SplitList(spec)) {
        if (item.empty()) continue;
        if (item.find('=') == std::string::npos && !items.empty() && items.back().rfind("layout=", 0) == 0)
            items.back() += item;
        else items.push_back(item);
    }
    for (const std::string& item : items) {
        size_t eq = item.find('=');
        if (eq == std::string::npos) throw Error(Clip(item), "expected key=value in the parallel spec");
        std::string k = item.substr(0, eq), v = item.substr(eq + 1);
        const std::string key = CanonicalKey(k);
        if (std::find(seen.begin(), seen.end(), key) != seen.end())
            throw Error(Clip(k),
                        "given twice in the parallel spec" + std::string(key == "microbatch" || key == "zero"
                                                                             ? " (mb is microbatch, fsdp=1 is zero=3)"
                                                                         : key == "vstages" ? " (vp is vstages)"
                                                                                            : ""));
        seen.push_back(key);
        if (key == "etp" && v == "tp") etp_is_tp = true;  // experts split like the dense layers, whatever tp is
        else SetKey(p, k, v, &vstages_given);
    }
    if (etp_is_tp) p.etp = p.tp;
    // Megatron's modules are a kind of selective recomputation: naming them is enough.
    if (p.recompute_modules != 0 && std::find(seen.begin(), seen.end(), "recompute") == seen.end())
        p.recompute = Recompute::selective;
    // Likewise the block method's layer count is a kind of full recomputation.
    if (p.recompute_layers != 0 && std::find(seen.begin(), seen.end(), "recompute") == seen.end())
        p.recompute = Recompute::full;
    if (p.interleaved() && !vstages_given) p.vstages = 2;
    return p;
}

std::string ParallelSpecString(const ParallelConfig& p) {
    std::string s = "tp=" + std::to_string(p.tp) + ",pp=" + std::to_string(p.pp) + ",dp=" + std::to_string(p.dp) +
                    ",cp=" + std::to_string(p.cp) + ",ep=" + std::to_string(p.ep) +
                    (p.etp > 1 ? ",etp=" + std::to_string(p.etp) : std::string()) + ",sp=" + (p.sp ? "1" : "0") +
                    ",microbatch=" + std::to_string(p.microbatch) + ",batch=" + std::to_string(p.global_batch()) +
                    ",schedule=" + NameOf(p.schedule) + ",vstages=" + std::to_string(p.vstages) +
                    ",recompute=" + NameOf(p.recompute) + ",zero=" + std::to_string(p.zero) + ",order=" + p.order;
    if (p.uneven) s += ",uneven=1";
    if (p.recompute_modules) s.append(",recompute_modules=").append(RecomputeModulesString(p.recompute_modules));
    if (p.recompute_layers) s += ",recompute_layers=" + std::to_string(p.recompute_layers);
    if (p.a2a_overlap) s += ",a2a_overlap=1";
    if (p.offload_layers) s += ",offload_layers=" + std::to_string(p.offload_layers);
    if (!p.layout.empty()) s += ",layout=" + PipelineLayoutString(p.layout, p.layout_mtp);
    // Only when set, so the usual split reads as before; a page link carries the split in this form.
    if (p.bucket_mb != ParallelConfig{}.bucket_mb) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", p.bucket_mb);
        s += ",bucket_mb=" + std::string(buf);
    }
    return s;
}

static std::string S(int v) { return std::to_string(v); }

// What Megatron-Core asserts before it runs the EP all-to-all overlap (megatron/core/transformer/
// transformer_config.py, __post_init__ under overlap_moe_expert_parallel_comm).
static void ValidateA2aOverlap(const ModelConfig& m, const ParallelConfig& p) {
    const std::string what = "a2a_overlap=1 (Megatron-Core's --overlap-moe-expert-parallel-comm) ";
    if (!m.is_moe()) throw Error("a2a_overlap", what + "overlaps the expert all-to-all; " + m.name + " is dense");
    if (p.ep <= 1) throw Error("a2a_overlap", what + "needs expert parallelism (ep > 1); ep=" + S(p.ep) + " was given");
    if (p.recompute == Recompute::full)
        throw Error("a2a_overlap", what +
                                       "runs without full recomputation; recompute=full was given (use "
                                       "recompute=selective or none)");
    const bool order = p.schedule == Schedule::one_f_one_b || p.schedule == Schedule::interleaved;
    if (!order || (p.pp > 1 && p.schedule != Schedule::interleaved))
        throw Error("a2a_overlap",
                    what + "pairs the forwards and backwards of 1F1B, interleaved when pp > 1; pp=" + S(p.pp) +
                        " schedule=" + NameOf(p.schedule) + " was given (use schedule=interleaved, or pp=1)");
}

// What Megatron-Core asserts before it offloads activations (megatron/core/transformer/transformer_config.py,
// __post_init__ under cpu_offloading), and what Transformer Engine's default schedule needs (cpu_offload.py
// get_cpu_offload_context: "Cannot offload all layers ... last layer is not offloaded"). The EP all-to-all overlap is
// refused too: TE's synchronizer counts one forward through the layers, then one backward, which the combined 1F1B's
// interleaved layers of two microbatches are not (our reading; Megatron-Core does not assert it).
static void ValidateOffload(const ModelConfig& m, const ParallelConfig& p) {
    const std::string what =
        "offload_layers=" + S(p.offload_layers) + " (Megatron-Core's --cpu-offloading-num-layers) ";
    if (p.offload_layers >= m.layers)
        throw Error("offload_layers", what + "must be below the layer count (" + S(m.layers) +
                                          "): the last layer's activations are used as soon as the backward starts");
    if (p.pp > 1)
        throw Error("offload_layers", what + "runs without pipeline parallelism, as Megatron-Core requires; pp=" +
                                          S(p.pp) + " was given");
    if (p.schedule != Schedule::one_f_one_b)
        throw Error("offload_layers", what +
                                          "runs each microbatch's forward and then its backward (Megatron-Core's "
                                          "forward_backward_no_pipelining), schedule=1f1b; schedule=" +
                                          NameOf(p.schedule) + " was given");
    if (p.recompute != Recompute::none)
        throw Error("offload_layers", what + "runs without recomputation, as Megatron-Core requires; recompute=" +
                                          NameOf(p.recompute) + " was given");
    if (p.a2a_overlap)
        throw Error("offload_layers", what +
                                          "runs one microbatch's forward, then its backward; a2a_overlap=1 pairs "
                                          "the layers of two microbatches");
}

void ValidateParallel(const ModelConfig& m, const ParallelConfig& p) {
    RequirePositiveCount("tp", p.tp);
    RequirePositiveCount("pp", p.pp);
    RequirePositiveCount("dp", p.dp);
    RequirePositiveCount("cp", p.cp);
    RequirePositiveCount("ep", p.ep);
    RequirePositiveCount("microbatch", p.microbatch);
    RequirePositiveCount("vstages", p.vstages);
    if (p.batch != 0) RequirePositiveCount("batch", p.batch);  // 0: not given, microbatch * dp
    if (!(p.bucket_mb >= 1 && p.bucket_mb <= kMaxBucketMb))
        throw Error("bucket_mb", "bucket_mb=" + std::to_string(p.bucket_mb) + " must be from 1 to 1048576 MiB");
    if (p.recompute_modules != 0 && p.recompute != Recompute::selective)
        throw Error("recompute_modules",
                    "recompute_modules=" + RecomputeModulesString(p.recompute_modules) +
                        " are Megatron's selective recomputation; recompute=" + NameOf(p.recompute) +
                        " was given (use recompute=selective or leave it out)");
    if (p.recompute_layers < 0)
        throw Error("recompute_layers", "recompute_layers=" + S(p.recompute_layers) +
                                            " is negative (0 recomputes every layer; N the first N of each chunk)");
    if (p.recompute_layers > 0 && p.recompute != Recompute::full)
        throw Error("recompute_layers", "recompute_layers=" + S(p.recompute_layers) +
                                            " is Megatron's block method of full recomputation; recompute=" +
                                            NameOf(p.recompute) + " was given (use recompute=full)");
    if (p.zero < 0 || p.zero > 3) throw Error("zero", "zero=" + S(p.zero) + " is not a ZeRO stage (0, 1, 2 or 3)");

    const long long world = 1LL * p.tp * p.cp * p.dp * p.pp;
    if (world > kMaxRanks)
        throw Error("gpus", "tp*cp*pp*dp = " + std::to_string(world) + " ranks; at most " + std::to_string(kMaxRanks) +
                                " (2^24)");
    if (p.gpus != 0) RequirePositiveCount("gpus", p.gpus);  // 0: not given
    if (p.gpus > 0 && world != p.gpus)
        throw Error("gpus", "tp*cp*pp*dp = " + std::to_string(world) + " but " + S(p.gpus) + " GPUs were given");

    // Tensor parallelism splits heads, the MLP and (padded) vocabulary.
    if (m.heads % p.tp) throw Error("tp", "tp=" + S(p.tp) + " does not divide " + S(m.heads) + " attention heads");
    if (!m.is_mla() && m.kv_heads % p.tp)
        throw Error("tp", "tp=" + S(p.tp) + " does not divide " + S(m.kv_heads) + " key/value heads");
    if (m.ffn % p.tp) throw Error("tp", "tp=" + S(p.tp) + " does not divide the MLP size ffn=" + S(m.ffn));
    if (m.is_moe() && m.moe.shared_experts > 0 && (m.moe.shared_experts * m.moe.expert_ffn) % p.tp)
        throw Error("tp", "tp=" + S(p.tp) + " does not divide the shared-expert size " +
                              S(m.moe.shared_experts * m.moe.expert_ffn));

    // A Mamba mixer splits its heads and its groups of B and C over TP (Megatron-Core MambaMixer asserts both);
    // its scan runs over the whole sequence, which context parallelism would split.
    if (m.is_hybrid() && m.hybrid.find('M') != std::string::npos) {
        if (m.mamba.heads % p.tp)
            throw Error("tp", "tp=" + S(p.tp) + " does not divide " + S(m.mamba.heads) + " Mamba heads");
        if (m.mamba.groups % p.tp)
            throw Error("tp", "tp=" + S(p.tp) + " does not divide " + S(m.mamba.groups) + " Mamba groups");
        if (p.cp > 1)
            throw Error("cp", "cp=" + S(p.cp) +
                                  ": context parallelism over Mamba layers (their scan passes state "
                                  "along the sequence) is not modelled; use cp=1");
    }

    // Context parallelism: load-balanced causal attention splits the sequence into 2*cp chunks.
    if (m.seq % (2 * p.cp) && p.cp > 1)
        throw Error("cp", "cp=" + S(p.cp) + " needs the sequence length " + S(m.seq) +
                              " to split into 2*cp=" + S(2 * p.cp) + " equal chunks");
    long long tokens = 1LL * p.microbatch * m.seq / p.cp;
    if (p.sp && tokens % p.tp)
        throw Error("sp", "sequence parallelism splits " + std::to_string(tokens) +
                              " tokens per microbatch over tp=" + S(p.tp) + ", which does not divide them");

    // Expert parallelism: MoE only, whole experts per rank.
    if (p.ep > 1 && !m.is_moe())
        throw Error("ep", "ep=" + S(p.ep) + " needs a mixture-of-experts model; " + m.name + " is dense");
    if (m.is_moe() && m.moe.experts % p.ep)
        throw Error("ep", "ep=" + S(p.ep) + " does not divide " + S(m.moe.experts) + " experts");
    if (p.etp != 1 && p.etp != p.tp)
        throw Error("etp", "etp=" + S(p.etp) + " must be 1 (whole experts) or tp=" + S(p.tp) +
                               " (experts split over the TP group)");
    // Expert parallelism folds over the ranks of a stage (Megatron-Core MoE parallel folding).
    if (ExpertFoldRanks(p) % p.ep) {
        if (p.etp > 1)
            throw Error("ep",
                        "ep=" + S(p.ep) + " must divide cp*dp = " + S(p.cp) + "*" + S(p.dp) +
                            " (with etp=tp, expert-parallel groups fold over the cp x dp ranks of a TP position)");
        throw Error("ep", "ep=" + S(p.ep) + " must divide tp*cp*dp = " + S(p.tp) + "*" + S(p.cp) + "*" + S(p.dp) +
                              " (expert-parallel groups fold over the ranks of a pipeline stage)");
    }
    if (p.etp > 1 && !m.is_moe())
        throw Error("etp", "etp=" + S(p.etp) + " needs a mixture-of-experts model; " + m.name + " is dense");
    if (p.etp > 1 && m.moe.expert_ffn % p.etp)
        throw Error("etp", "etp=" + S(p.etp) + " does not divide the expert size expert_ffn=" + S(m.moe.expert_ffn));
    if (p.a2a_overlap) ValidateA2aOverlap(m, p);
    if (p.offload_layers) ValidateOffload(m, p);
    if (m.is_moe() && p.tp > 1 && !p.sp)
        throw Error("sp", "MoE with tp=" + S(p.tp) + " needs sequence parallelism (sp=1), as Megatron-Core requires");

    // Pipeline: layers per (virtual) stage.
    int stages = p.pipeline_positions();
    // Interleaved 1F1B is named as the papers name it; interleaved_zb by its own name.
    const std::string interleaved_name = p.schedule == Schedule::interleaved_zb ? "interleaved_zb" : "interleaved 1F1B";
    if (!p.interleaved() && p.vstages != 1)
        throw Error("vstages", "vstages=" + S(p.vstages) + " needs schedule=interleaved or interleaved_zb");
    if (p.interleaved() && (p.vstages < 2 || p.pp < 2))
        throw Error("vstages", interleaved_name + " needs pp>=2 and vstages>=2 (got pp=" + S(p.pp) +
                                   ", vstages=" + S(p.vstages) + ")");
    if (p.schedule == Schedule::dualpipe && (p.pp < 2 || p.pp % 2))
        throw Error("pp",
                    "DualPipe needs an even pp >= 2 (each rank holds stages i and pp-1-i; got pp=" + S(p.pp) + ")");
    const char* const schedule_name = NameOf(p.schedule);
    if (p.v_shape() && p.pp < 2)
        throw Error("pp", std::string(schedule_name) +
                              " needs pp >= 2 (rank i holds stages i and 2*pp-1-i of a V; got pp=" + S(p.pp) + ")");
    if (!p.layout.empty()) {
        if (static_cast<int>(p.layout.size()) != stages)
            throw Error("layout", "the layout has " + S(static_cast<int>(p.layout.size())) + " virtual stages; " +
                                      (p.interleaved() ? std::string("pp*vstages = ")
                                       : p.v_shape()   ? "2*pp (" + std::string(schedule_name) + ") = "
                                                       : std::string("pp = ")) +
                                      S(stages));
        long long sum = 0;
        for (int n : p.layout) sum += n;
        if (sum != m.layers)
            throw Error("layout", "the layout places " + std::to_string(sum) + " transformer layers 't'; " + m.name +
                                      " has " + S(m.layers));
        if (p.layout_mtp != 0 && p.layout_mtp != m.mtp_layers)
            throw Error("layout", "the layout places " + S(p.layout_mtp) + " MTP modules 'm'; " + m.name +
                                      " has mtp_layers=" + S(m.mtp_layers));
    } else if (!p.uneven && m.layers % stages) {
        if (p.v_shape())
            throw Error("pp", std::string(schedule_name) + " cuts the layers into 2*pp = " + S(stages) +
                                  " stages, which does not divide " + S(m.layers) + " layers (or set uneven=1)");
        if (!p.interleaved())
            throw Error("pp", "pp=" + S(p.pp) + " does not divide " + S(m.layers) + " layers (or set uneven=1)");
        throw Error("pp", "pp*vstages=" + S(stages) + " does not divide " + S(m.layers) + " layers (or set uneven=1)");
    }
    // A layout may give the embedding and the loss stages of their own; without one every stage needs a layer.
    if (p.layout.empty() && m.layers < stages)
        throw Error("pp", (p.v_shape() ? "2*pp (" + std::string(schedule_name) + ")" : std::string("pp*vstages")) +
                              "=" + S(stages) + " pipeline stages exceed " + S(m.layers) + " layers");

    // Batch: whole microbatches per data-parallel replica, at most kMaxMicrobatches of them (the summary's and
    // the traces' cost grows with the count).
    const long long per_step = 1LL * p.microbatch * p.dp;
    if (per_step > kMaxBatch)
        throw Error("microbatch", "microbatch*dp = " + S(p.microbatch) + "*" + S(p.dp) + " = " +
                                      std::to_string(per_step) + " sequences per step; at most " +
                                      std::to_string(kMaxBatch));
    if (p.global_batch() / per_step > kMaxMicrobatches)
        throw Error("batch", "batch=" + S(p.global_batch()) + " is " + std::to_string(p.global_batch() / per_step) +
                                 " microbatches of microbatch*dp = " + std::to_string(per_step) +
                                 " per step; at most " + std::to_string(kMaxMicrobatches) + " (raise microbatch)");
    if (p.global_batch() % per_step)
        throw Error("batch", "batch=" + S(p.global_batch()) + " is not a multiple of microbatch*dp = " +
                                 S(p.microbatch) + "*" + S(p.dp) + " = " + std::to_string(per_step));
    // DualPipe feeds half the microbatches from each end and its steady phase needs at least pp of them per
    // direction (deepseek-ai/DualPipe asserts num_chunks % 2 == 0 and num_chunks >= num_ranks * 2).
    if (p.schedule == Schedule::dualpipe && (p.microbatches() % 2 || p.microbatches() < 2 * p.pp))
        throw Error("batch", "DualPipe needs an even number of microbatches, at least 2*pp = " + S(2 * p.pp) +
                                 " (half enter from each end); batch=" + S(p.global_batch()) + " gives " +
                                 S(p.microbatches()));
    // DualPipeV's phases need at least 2*pp microbatches (dualpipev.py asserts num_chunks >= num_ranks * 2).
    if (p.schedule == Schedule::dualpipev && p.microbatches() < 2 * p.pp)
        throw Error("batch", "dualpipev needs at least 2*pp = " + S(2 * p.pp) +
                                 " microbatches; batch=" + S(p.global_batch()) + " gives " + S(p.microbatches()));
    if (p.interleaved() && p.microbatches() % p.pp)
        throw Error("batch", interleaved_name + " needs the number of microbatches (" + S(p.microbatches()) +
                                 ") to be a multiple of pp=" + S(p.pp));

    // Rank order: a permutation of tp, cp, dp, pp (checked without allocating: the layout search's hot path).
    {
        const std::string& o = p.order;
        static constexpr std::string_view kDims[] = {"tp", "cp", "dp", "pp"};
        int seen[4] = {0, 0, 0, 0}, parts = 0;
        bool ok = true;
        size_t pos = 0;
        while (ok) {
            size_t c = o.find('-', pos);
            std::string_view d = std::string_view(o).substr(pos, c == std::string::npos ? std::string::npos : c - pos);
            int i = 0;
            while (i < 4 && kDims[i] != d) ++i;
            ok = i < 4 && ++seen[i] == 1;
            ++parts;
            if (c == std::string::npos) break;
            pos = c + 1;
        }
        if (!ok || parts != 4)
            throw Error("order",
                        "order=" + p.order +
                            " must list tp, cp, dp and pp once each, fastest-varying first (e.g. order=tp-cp-dp-pp)");
    }
}

}  // namespace sc
