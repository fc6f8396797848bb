#include "inference/kv_capacity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "config/error.h"
#include "inference/runtime_memory.h"
#include "parallel/job.h"

namespace sc {

namespace {

// `expert_share`: the routed experts' parameters a rank holds against 1/tp of them: (experts + redundant copies) /
// experts, over ep under data-parallel attention (tp 1 there).
std::vector<double> StageWeights(const ModelConfig& m, const ServingPrecision& prec, int tp, int pp,
                                 double expert_share) {
    ParallelConfig p;
    p.tp = tp;
    // Training's rule that MoE under TP needs sequence parallelism (Megatron-Core) is no serving rule; SP moves
    // activations, not weights, so the graph is built with it to count the same parameters.
    p.sp = tp > 1 && m.is_moe();
    // Every expert split over the TP group (vLLM's and TensorRT-LLM's default for MoE under TP); under ep the
    // rank holds whole experts instead, the same bytes: experts x expert size / tp either way.
    p.etp = m.is_moe() ? tp : 1;
    // Without speculative decoding (not modelled) an engine loads no MTP module: vLLM reads DeepSeek's MTP layer
    // only as the draft model of its "deepseek_mtp" speculative method.
    ModelConfig served = KvReplicatedModel(m, tp);
    served.mtp_layers = 0;
    const Job job = MakeJob(served, p);  // validates tp against the model
    auto params = [&](BlockKind k) {
        const BlockSums& s = job.sums[static_cast<int>(k)];
        return s.dense + s.tied_dense + (s.expert + s.tied_expert) * expert_share;
    };
    // Bytes of a block of decoder layers: its routed experts at their format (MXFP4 stores only these), the rest at
    // the linear weights'.
    const double wb = WeightBytesPerElement(prec), wx = ExpertWeightBytesPerElement(prec);
    auto bytes = [&](BlockKind k) {
        const BlockSums& s = job.sums[static_cast<int>(k)];
        return (s.dense + s.tied_dense) * wb + (s.expert + s.tied_expert) * expert_share * wx;
    };
    const double emb = job.sums[static_cast<int>(BlockKind::embedding)].dense;
    // A tied LM head shares the embedding's table: counted once on one stage (BlockSums keeps the tied copy
    // apart); a last stage without the embedding loads its own copy.
    const double head = !m.tied_embeddings ? params(BlockKind::head) : pp > 1 ? emb : 0;
    std::vector<double> out;
    int first = 0;
    for (int n : StageLayers(m.layers, pp)) {
        double b = 0;
        if (m.is_hybrid()) {  // a hybrid model's one-symbol layers, each kind's weights
            const ModelConfig::LayerKinds k = m.layer_kinds(first, n, false);
            b = k.mamba * bytes(BlockKind::mamba_layer) + k.attention * bytes(BlockKind::attention_layer) +
                k.mlp * bytes(BlockKind::mlp_layer) + k.moe_mlp * bytes(BlockKind::moe_mlp_layer);
        } else {
            const int dense = n - m.moe_layers_in(first, n);
            b = dense * bytes(BlockKind::dense_layer) + (n - dense) * bytes(BlockKind::moe_layer);
        }
        if (first == 0) b += emb * BytesOf(prec.embeddings);
        first += n;
        if (first == m.layers) b += head * BytesOf(prec.embeddings);
        out.push_back(b);
    }
    return out;
}

}  // namespace

std::vector<double> StageWeightBytesPerRank(const ModelConfig& m, const ServingPrecision& prec, int tp, int pp) {
    return StageWeights(m, prec, tp, pp, 1);
}

namespace {
// (experts + redundant) / experts: the routed expert slots against the experts (1 without experts).
double SlotShare(const ModelConfig& m, int redundant) {
    return m.is_moe() ? static_cast<double>(m.moe.experts + redundant) / m.moe.experts : 1.0;
}
}  // namespace

double DpAttentionWeightBytesPerRank(const ModelConfig& m, const ServingPrecision& prec, int ep, int redundant) {
    return StageWeights(m, prec, 1, 1, SlotShare(m, redundant) / ep).front();
}

double ServingWeightBytesPerRank(const ModelConfig& m, const ServingPrecision& prec, int tp) {
    return StageWeightBytesPerRank(m, prec, tp, 1).front();
}

namespace {

long long CeilDiv(long long a, long long b) { return (a + b - 1) / b; }

// Blocks of the whole stage for `full` blocks of every full layer and `win` of every windowed one.
long long StageBlocks(const KvLayout& k, long long full, long long win) {
    const long long layers = k.full_layers + k.window_layers;
    return CeilDiv(k.full_layers * full + k.window_layers * win, layers);
}

}  // namespace

long long KvLayout::Blocks(long long tokens) const { return CeilDiv(tokens, block_size); }

long long KvLayout::Held(long long computed, long long scheduled) const {
    const long long n = Blocks(computed + scheduled);
    if (!windowed()) return n;
    const long long first_useful = computed - window + 1;  // the earliest token a query of this iteration sees
    const long long skipped = first_useful > 0 ? first_useful / block_size : 0;
    return StageBlocks(*this, n, n - skipped);
}

long long KvLayout::Reserved(long long total) const {
    const long long n = Blocks(total);
    if (!windowed()) return n;
    return StageBlocks(*this, n, Blocks(std::min(total, window)));
}

long long KvLayout::MostHeld(long long total, long long chunk) const {
    const long long n = Blocks(total);
    if (!windowed()) return n;
    return StageBlocks(*this, n, std::min(n, Blocks(window - 1 + chunk) + 1));
}

KvLayout KvLayoutOf(const ModelConfig& m, int pp, int block_size, bool window_eviction) {
    KvLayout k;
    k.block_size = block_size;
    // A chunked layer holds at most its chunk so far: bounded here as a sliding window of the chunk's size.
    k.window = m.window.size;
    int first = 0, most = -1;
    for (int n : StageLayers(m.layers, pp)) {
        const int kv = KvLayersIn(m, first, n);
        if (kv > most) {
            most = kv;
            k.window_layers = window_eviction ? m.windowed_layers(first, n) : 0;
            k.full_layers = kv - k.window_layers;
        }
        first += n;
    }
    return k;
}

int KvLayersIn(const ModelConfig& m, int first, int count) {
    return m.is_hybrid() ? m.layer_kinds(first, count, false).attention : count;
}

double MambaStateBytesPerSeqLayer(const ModelConfig& m, int tp, double bytes) {
    if (!m.is_hybrid()) return 0;
    const double inner = static_cast<double>(m.mamba.inner()), state = m.mamba.state;
    const double conv = (m.mamba.conv_kernel - 1.0) * (inner + 2.0 * m.mamba.groups * state) / tp;
    const double ssm = static_cast<double>(m.mamba.heads) / tp * m.mamba.head_dim * state;
    return (conv + ssm) * bytes;
}

double KvHeadsPerRank(const ModelConfig& m, int tp) {
    return std::max(1.0, std::ceil(static_cast<double>(m.kv_heads) / tp));
}

ModelConfig KvReplicatedModel(const ModelConfig& m, int tp) {
    ModelConfig r = m;
    if (!m.is_mla() && tp > m.kv_heads && tp % m.kv_heads == 0) r.kv_heads = tp;  // KvHeadsPerRank 1 each
    return r;
}

double KvElementsPerTokenLayer(const ModelConfig& m, int tp) {
    if (m.is_mla()) return static_cast<double>(m.mla.kv_lora_rank) + m.mla.qk_rope_head_dim;
    return 2.0 * KvHeadsPerRank(m, tp) * m.head_dim;
}

double ActivationWorkspaceBytes(const ModelConfig& m, const ServingPrecision& prec, int tp, double tokens,
                                double seqs) {
    const double a = BytesOf(prec.activations), h = m.hidden;
    const double kv_rank = KvHeadsPerRank(m, tp);
    // MLA: the queries and the up-projected keys and values of a prefill.
    const double qkv = m.is_mla() ? static_cast<double>(m.heads) / tp *
                                        (2.0 * m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim + m.mla.v_head_dim)
                                  : (static_cast<double>(m.heads) / tp + 2 * kv_rank) * m.head_dim;
    const double ff =
        m.is_moe() ? static_cast<double>(m.moe.expert_ffn) * m.moe.top_k / tp : static_cast<double>(m.ffn) / tp;
    const double mlp = (m.mlp == MlpKind::swiglu ? 3 : 2) * ff;  // up projection output and the activation
    // A Mamba layer's input projection: z, x, B, C and dt of the rank's heads and groups.
    const double in_proj =
        m.is_hybrid() ? (2.0 * m.mamba.inner() + 2.0 * m.mamba.groups * m.mamba.state + m.mamba.heads) / tp : 0;
    const double per_token = 2 * h + std::max({qkv, mlp, in_proj});
    const double vocab_rank = std::ceil(static_cast<double>(m.vocab) / tp);
    return tokens * per_token * a + seqs * vocab_rank * 4;
}

namespace {

// One stage's ranks: `layers` layers' cache and `weights` bytes of weights.
// `kv_layers` of them caching keys and values, `mamba_layers` keeping a state per sequence, `runtime` bytes held by
// the process beside them (RuntimeMemoryBytes).
KvCapacity StageCapacity(const ModelConfig& m, const ServingPrecision& prec, int tp, int kv_layers, int mamba_layers,
                         double weights, double runtime, const Accelerator& acc, const EngineConfig& e) {
    KvCapacity c;
    c.block_size = e.block_size;
    c.memory_bytes = acc.MemoryBytes();
    c.weight_bytes = weights;
    c.workspace_bytes = ActivationWorkspaceBytes(m, prec, tp, e.max_tokens, std::min(e.max_seqs, e.max_tokens));
    // The Mamba states of max_seqs sequences, held apart from the KV blocks (vLLM's MambaCacheManager allocates a
    // state slot for each of max_num_seqs up front; its V1 hybrid allocator gives a running request one state block
    // from the same pool, the same bytes once the batch is full).
    c.state_bytes = mamba_layers * MambaStateBytesPerSeqLayer(m, tp, BytesOf(prec.activations)) * e.max_seqs;
    c.kv_bytes_per_token = kv_layers * KvElementsPerTokenLayer(m, tp) * StoredBytes(prec.kv_cache);
    c.runtime_bytes = runtime;
    const double held = c.weight_bytes + c.workspace_bytes + c.state_bytes + c.runtime_bytes;
    const double left = c.memory_bytes - held;
    c.kv_bytes = e.memory_policy == KvMemoryPolicy::free_fraction ? left * e.kv_memory_fraction
                                                                  : c.memory_bytes * e.kv_memory_fraction - held;
    if (e.kv_blocks_override > 0) {
        c.blocks = e.kv_blocks_override;
        return c;
    }
    // A stage of a hybrid model holding no attention layer caches nothing: it bounds no sequence (-1), if its
    // weights and states fit.
    const double block_bytes = c.kv_bytes_per_token > 0 ? c.kv_bytes_per_token * e.block_size : 1;
    if (c.kv_bytes < block_bytes) {
        char buf[400];
        std::snprintf(buf, sizeof buf,
                      "no memory left for the KV cache at %g: %.2f GiB per GPU, weights %.2f GiB, activation "
                      "workspace %.2f GiB, Mamba states %.2f GiB, runtime %.2f GiB (tp=%d); use more GPUs, a "
                      "narrower weight format, a smaller token budget or fewer sequences",
                      e.kv_memory_fraction, c.memory_bytes / 1073741824.0, c.weight_bytes / 1073741824.0,
                      c.workspace_bytes / 1073741824.0, c.state_bytes / 1073741824.0, c.runtime_bytes / 1073741824.0,
                      tp);
        throw Error("engine.kv_memory_fraction", buf);
    }
    c.blocks = c.kv_bytes_per_token > 0 ? static_cast<long long>(std::floor(c.kv_bytes / block_bytes)) : -1;
    return c;
}

}  // namespace

KvCapacity ComputeKvCapacity(const ModelConfig& m, const ServingPrecision& prec, int tp, const Accelerator& acc,
                             const EngineConfig& e) {
    return ComputeKvCapacity(m, prec, PoolConfig{tp, 1}, acc, e);
}

KvCapacity ComputeKvCapacity(const ModelConfig& m, const ServingPrecision& prec, const PoolConfig& split,
                             const Accelerator& acc, const EngineConfig& e) {
    const double runtime = RuntimeMemoryBytes(e, split);
    // Data-parallel attention: one GPU's own sequences at tp 1, attention whole, 1/ep of the routed experts, on each
    // stage its own layers.
    const bool dp = split.attention_dp;
    const int tp = dp ? 1 : split.tp;
    const std::vector<double> weights =
        StageWeights(m, prec, tp, split.pp, SlotShare(m, split.redundant_experts) / (dp ? split.ep : 1));
    const std::vector<int> layers = StageLayers(m.layers, split.pp);
    KvCapacity fewest;
    int first = 0;
    for (size_t i = 0; i < layers.size(); ++i) {
        const int mamba = m.is_hybrid() ? m.layer_kinds(first, layers[i], false).mamba : 0;
        const KvCapacity c =
            StageCapacity(m, prec, tp, KvLayersIn(m, first, layers[i]), mamba, weights[i], runtime, acc, e);
        if (i == 0 || fewest.blocks < 0 || (c.blocks >= 0 && c.blocks < fewest.blocks)) fewest = c;
        first += layers[i];
    }
    if (fewest.blocks < 0)
        throw Error("model.hybrid_pattern", "\"" + m.hybrid +
                                                "\" has no attention layer '*': no layer caches keys and values, which "
                                                "the serving model's scheduler needs; serve a pattern with one");
    return fewest;
}

long long ReplicaKvBlocks(const KvCapacity& k, const PoolConfig& split) {
    return split.attention_dp ? k.blocks * split.tp : k.blocks;
}

}  // namespace sc
