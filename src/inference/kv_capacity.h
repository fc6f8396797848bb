// How many KV-cache blocks one replica holds: the device memory of one TP rank minus the weights it holds
// and the activation workspace of one forward pass over the token budget, the KV share of the rest, divided
// by the KV bytes of one block of tokens.
#pragma once
#include <vector>

#include "config/hardware_config.h"
#include "inference/serving_config.h"

namespace sc {

struct KvCapacity {
    double memory_bytes = 0;     // device memory the model must fit into (Accelerator::MemoryBytes)
    double weight_bytes = 0;     // weights one rank holds
    double workspace_bytes = 0;  // activation peak of one forward pass over the token budget
    double state_bytes = 0;      // the Mamba states of max_seqs sequences (hybrid models; 0 otherwise)
    double runtime_bytes = 0;    // CUDA context, libraries and collective buffers (inference/runtime_memory.h)
    double kv_bytes = 0;         // memory given to the KV cache
    double kv_bytes_per_token = 0;
    long long blocks = 0;  // KV blocks of block_size tokens
    int block_size = 16;
    long long tokens() const { return blocks * block_size; }
};

// How a sequence's tokens take KV blocks (block_size tokens of every layer of a stage) when some of the stage's
// layers have a sliding window (ModelConfig::window). A windowed layer needs only the blocks holding its last
// `window` keys, so a block's windowed share is freed once it falls out of every window; in blocks of the whole
// stage that is the layers' blocks rounded up, (full_layers x blocks + window_layers x window blocks) / layers.
// Without windowed layers every count below is ceil(tokens / block_size).
struct KvLayout {
    int full_layers = 1, window_layers = 0;  // of the stage whose cache sets KvBytesPerToken
    long long window = 0;                    // keys a windowed layer's query sees
    int block_size = 16;
    bool windowed() const { return window_layers > 0; }
    // Every token in every layer: ceil(tokens / block_size).
    long long Blocks(long long tokens) const;
    // vLLM V1 (vllm/v1/core/single_type_kv_cache_manager.py, SlidingWindowManager.remove_skipped_blocks): before an
    // iteration computes `scheduled` tokens after `computed` ones, a windowed layer frees the blocks wholly before
    // token computed - window + 1 and then holds up to block ceil((computed + scheduled) / block_size).
    long long Held(long long computed, long long scheduled) const;
    // TensorRT-LLM's GUARANTEED_NO_EVICT reservation (kvCacheManager.cpp getRemainingBlocksToCompletion): a layer of
    // window w reserves ceil(min(total, w) / block_size) blocks for a request of `total` tokens.
    long long Reserved(long long total) const;
    // The most Held gives a request of `total` tokens computed at most `chunk` tokens an iteration: full layers at
    // the end, windowed ones at ceil((window - 1 + chunk) / block_size) + 1 (what a chunk and the window before it
    // can touch).
    long long MostHeld(long long total, long long chunk) const;
};

// The layout of the stage with the most layers of a `pp`-stage split (KvBytesPerToken's stage).
KvLayout KvLayoutOf(const ModelConfig& m, int pp, int block_size, bool window_eviction = true);

// Cache elements of one token in one layer on one TP rank. Grouped-query attention: K and V of the rank's KV
// heads, 2 x max(1, kv_heads / tp) x head_dim (KV heads are replicated when tp exceeds them). Multi-head latent
// attention: the compressed latent c_KV and the shared rotary key k_R, kv_lora_rank + qk_rope_head_dim
// (DeepSeek-V2, arXiv:2405.04434 sec. 2.1, Table 1: (d_c + d_h^R) l elements per token), on every rank: the
// latent is not split by heads, so each TP rank caches all of it (TPLA, arXiv:2508.15881: under TP "each
// device must load the full cache").
double KvElementsPerTokenLayer(const ModelConfig& m, int tp);

// Layers of [first, first + count) that cache keys and values: every layer of a transformer, the attention ('*')
// layers of a hybrid model (ModelConfig::hybrid); its Mamba layers keep a state per sequence instead.
int KvLayersIn(const ModelConfig& m, int first, int count);

// Bytes of one sequence's Mamba-2 state in one M layer on one of `tp` ranks, at `bytes` an element: the
// convolution's last conv_kernel - 1 inputs of its (d_inner + 2 groups state) / tp channels and the SSM state of
// the rank's heads, heads / tp x head_dim x state (vLLM's MambaStateShapeCalculator.mamba2_state_shape,
// vllm/model_executor/layers/mamba/mamba_utils.py). 0 for a model without Mamba layers.
double MambaStateBytesPerSeqLayer(const ModelConfig& m, int tp, double bytes);

// KV heads one of `tp` ranks holds: kv_heads / tp, or a copy of one when tp exceeds them (KvReplicatedModel).
double KvHeadsPerRank(const ModelConfig& m, int tp);

// `m` as one of `tp` ranks holds its weights: with fewer KV heads than ranks (and tp a multiple of them) each rank
// keeps a copy of one KV head's K and V projections, so the model is counted with kv_heads = tp (vLLM's
// QKVParallelLinear, vllm/model_executor/layers/linear.py: "if tp_size >= self.total_num_kv_heads:
// self.num_kv_heads = 1; self.num_kv_head_replicas = divide(tp_size, self.total_num_kv_heads)"). Otherwise `m`.
ModelConfig KvReplicatedModel(const ModelConfig& m, int tp);

// Parameters one TP rank holds and their bytes: decoder layers at the weight precision, the embedding and the
// LM head at the embedding precision. Counted on the training graph's weights (graph/transformer_graph.h),
// so training and serving agree on the parameters.
double ServingWeightBytesPerRank(const ModelConfig& m, const ServingPrecision& prec, int tp);
// The same for each pipeline stage's ranks (StageLayers): its layers, the embedding on the first stage, the LM
// head (a tied head's copy of the embedding when pp > 1, as vLLM loads it) on the last. pp = 1: one entry equal
// to ServingWeightBytesPerRank. Expert parallelism moves experts between the tp ranks, not bytes.
std::vector<double> StageWeightBytesPerRank(const ModelConfig& m, const ServingPrecision& prec, int tp, int pp);
// One GPU under data-parallel attention (PoolConfig::attention_dp): every parameter whole but the routed experts,
// of which it holds 1/ep of the slots, the experts and `redundant` copies (DeepSeek's "Routed Expert EP,
// MLA/Shared Expert DP", with its 32 redundant experts).
double DpAttentionWeightBytesPerRank(const ModelConfig& m, const ServingPrecision& prec, int ep, int redundant = 0);

// Activation peak of one forward over `tokens` tokens (vLLM's profile_run measures the same thing by running
// one forward of max_num_batched_tokens dummy tokens): the residual stream and the normed input (2 T h), the
// largest intermediate of a layer and its output (the MLP's up projection and activation, or Q K V), and the
// fp32 logits of `seqs` sampled tokens over the rank's vocabulary shard.
double ActivationWorkspaceBytes(const ModelConfig& m, const ServingPrecision& prec, int tp, double tokens, double seqs);

// Throws sc::Error naming engine.kv_memory_fraction when nothing is left for the KV cache (the weights and the
// workspace do not fit), with the numbers.
KvCapacity ComputeKvCapacity(const ModelConfig& m, const ServingPrecision& prec, int tp, const Accelerator& acc,
                             const EngineConfig& e);
// A pipelined replica: every stage's ranks computed as above with their own weights and layers; the replica
// holds the blocks of the stage with the fewest (vLLM takes the minimum over its workers), reported with that
// stage's numbers. The engine gives each of the pp in-flight schedulers 1/pp of them. Under data-parallel
// attention: each stage's GPU at tp 1 with its layers' share of DpAttentionWeightBytesPerRank (StageWeights at
// 1/ep of the routed experts), its workspace for its own token budget; its blocks hold only its own sequences, so
// the replica holds tp times them (ReplicaKvBlocks).
KvCapacity ComputeKvCapacity(const ModelConfig& m, const ServingPrecision& prec, const PoolConfig& split,
                             const Accelerator& acc, const EngineConfig& e);
// The blocks one replica's scheduler holds: the capacity's blocks, times tp under data-parallel attention.
long long ReplicaKvBlocks(const KvCapacity& k, const PoolConfig& split);

}  // namespace sc
