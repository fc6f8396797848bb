#include "inference/kv_capacity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "config/error.h"
#include "parallel/job.h"

namespace sc {

double ServingWeightBytesPerRank(const ModelConfig& m, const ServingPrecision& prec, int tp) {
    ParallelConfig p;
    p.tp = tp;
    const Job job = MakeJob(m, p);  // validates tp against the model
    auto params = [&](BlockKind k) {
        const BlockSums& s = job.sums[static_cast<int>(k)];
        return s.dense + s.expert + s.tied_dense + s.tied_expert;
    };
    // A tied LM head shares the embedding's table: counted once (BlockSums keeps the tied copy apart).
    const double head = m.tied_embeddings ? 0 : params(BlockKind::head);
    const double emb = job.sums[static_cast<int>(BlockKind::embedding)].dense;
    return (emb + head) * BytesOf(prec.embeddings) +
           (m.dense_layers() * params(BlockKind::dense_layer) + m.moe_layers() * params(BlockKind::moe_layer)) *
               BytesOf(prec.weights);
}

double ActivationWorkspaceBytes(const ModelConfig& m, const ServingPrecision& prec, int tp, double tokens,
                                double seqs) {
    const double a = BytesOf(prec.activations), h = m.hidden;
    const double kv_rank = std::max(1.0, std::ceil(static_cast<double>(m.kv_heads) / tp));
    const double qkv = (static_cast<double>(m.heads) / tp + 2 * kv_rank) * m.head_dim;
    const double ff =
        m.is_moe() ? static_cast<double>(m.moe.expert_ffn) * m.moe.top_k / tp : static_cast<double>(m.ffn) / tp;
    const double mlp = (m.mlp == MlpKind::swiglu ? 3 : 2) * ff;  // up projection output and the activation
    const double per_token = 2 * h + std::max(qkv, mlp);
    const double vocab_rank = std::ceil(static_cast<double>(m.vocab) / tp);
    return tokens * per_token * a + seqs * vocab_rank * 4;
}

KvCapacity ComputeKvCapacity(const ModelConfig& m, const ServingPrecision& prec, int tp, const Accelerator& acc,
                             const EngineConfig& e) {
    KvCapacity c;
    c.block_size = e.block_size;
    c.memory_bytes = acc.MemoryBytes();
    c.weight_bytes = ServingWeightBytesPerRank(m, prec, tp);
    c.workspace_bytes = ActivationWorkspaceBytes(m, prec, tp, e.max_tokens, std::min(e.max_seqs, e.max_tokens));
    const double kv_rank = std::max(1.0, std::ceil(static_cast<double>(m.kv_heads) / tp));
    c.kv_bytes_per_token = m.layers * 2.0 * kv_rank * m.head_dim * BytesOf(prec.kv_cache);
    const double left = c.memory_bytes - c.weight_bytes - c.workspace_bytes;
    c.kv_bytes = e.memory_policy == KvMemoryPolicy::free_fraction
                     ? left * e.kv_memory_fraction
                     : c.memory_bytes * e.kv_memory_fraction - c.weight_bytes - c.workspace_bytes;
    if (e.kv_blocks_override > 0) {
        c.blocks = e.kv_blocks_override;
        return c;
    }
    const double block_bytes = c.kv_bytes_per_token * e.block_size;
    if (c.kv_bytes < block_bytes) {
        char buf[400];
        std::snprintf(buf, sizeof buf,
                      "no memory left for the KV cache at %g: %.2f GiB per GPU, weights %.2f GiB, activation "
                      "workspace %.2f GiB (tp=%d); use more GPUs, a narrower weight format or a smaller token budget",
                      e.kv_memory_fraction, c.memory_bytes / 1073741824.0, c.weight_bytes / 1073741824.0,
                      c.workspace_bytes / 1073741824.0, tp);
        throw Error("engine.kv_memory_fraction", buf);
    }
    c.blocks = static_cast<long long>(std::floor(c.kv_bytes / block_bytes));
    return c;
}

}  // namespace sc
