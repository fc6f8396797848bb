// What a serving simulation describes: the model and its number formats, one replica's split (TP), the
// engine's scheduler knobs (vLLM / SGLang / TensorRT-LLM in-flight batching) and the workload.
// presets/inference/*.json hold descriptions; ParseServingDescription (serving_parse.cpp) reads them strictly.
#pragma once
#include <cstdint>
#include <string>

#include "config/model_config.h"
#include "config/precision.h"

namespace sc {

// Number formats of a served model. A ModelOpt FP8 checkpoint (what TensorRT-LLM's FP8 tables ran) quantizes
// the decoder layers' linear weights and their GEMM inputs to fp8 and, in trtllm-bench, the KV cache too
// ("If you specify FP8 quantization, the KV cache will automatically be set to FP8 as well",
// TensorRT-LLM v0.14 docs/source/performance/perf-overview.md); the embedding and the LM head stay 16-bit
// (ModelOpt's default quantization config disables "*lm_head*"; the embedding is not a linear layer).
struct ServingPrecision {
    Precision weights = Precision::bf16;     // decoder-layer linear weights
    Precision compute = Precision::bf16;     // GEMM math and GEMM inputs (fp8: 1 byte per input element)
    Precision kv_cache = Precision::bf16;    // K and V per token
    Precision activations = Precision::bf16; // between kernels, in the TP all-reduces
    Precision embeddings = Precision::bf16;  // embedding table and LM head weights
};

// How the KV cache's share of memory is set.
//   free_fraction  (TensorRT-LLM KvCacheConfig.free_gpu_memory_fraction, default 0.9): that fraction of the
//                  memory left after the weights and the activation workspace are allocated.
//   total_fraction (vLLM gpu_memory_utilization, default 0.9): that fraction of the whole device memory,
//                  minus the weights and the activation peak of a profiling forward pass.
enum class KvMemoryPolicy { free_fraction, total_fraction };

// How a request gets its KV blocks.
//   on_demand     (vLLM, SGLang): blocks are taken as tokens are computed; when none is free the most recently
//                 admitted running request is preempted by recompute (its blocks freed, its prompt and the
//                 tokens it generated recomputed as a prefill when it is readmitted), vLLM's default.
//   reserve_full  (TensorRT-LLM CapacitySchedulerPolicy GUARANTEED_NO_EVICT, trtllm-bench's default): a
//                 request is admitted only when blocks for its whole length (prompt + output) are free;
//                 they are reserved then, so nothing is ever preempted.
enum class KvAdmission { on_demand, reserve_full };

struct EngineConfig {
    int max_seqs = 256;          // sequences in one iteration (vLLM max_num_seqs, TRT-LLM max_batch_size)
    int max_tokens = 8192;       // tokens computed in one iteration (vLLM max_num_batched_tokens, TRT-LLM max_num_tokens)
    int block_size = 16;         // tokens per KV block (vLLM default 16; TRT-LLM tokens_per_block 64)
    bool chunked_prefill = true; // a prompt may be split over iterations to fill the token budget (Sarathi-Serve)
    bool static_batching = false;  // no request joins until the whole batch has finished (pre-in-flight batching)
    KvAdmission admission = KvAdmission::on_demand;
    KvMemoryPolicy memory_policy = KvMemoryPolicy::total_fraction;
    double kv_memory_fraction = 0.9;
    long long kv_blocks_override = 0;  // > 0: this many KV blocks instead of the memory model's (tests, what-ifs)
};

struct PoolConfig {
    int tp = 1;        // tensor parallel ranks of one replica (one scale-up domain)
    int replicas = 1;  // independent copies; requests are dealt round-robin
};

enum class ArrivalKind { poisson, fixed_rate, closed_loop, offline };
const char* NameOf(ArrivalKind k);

struct LengthDist {
    enum class Kind { fixed, uniform } kind = Kind::fixed;
    int min = 1, max = 1;  // fixed: min == max
};

struct Workload {
    ArrivalKind arrival = ArrivalKind::offline;
    double rate = 0;        // requests/s (poisson, fixed_rate)
    int concurrency = 1;    // clients, each sending its next request when the previous one completes (closed_loop)
    long long requests = 1; // requests in the run
    LengthDist input, output;  // prompt tokens, generated tokens (the first one comes from the prefill)
    uint64_t seed = 1;
};

struct ServingConfig {
    ModelConfig model;
    ServingPrecision precision;
    PoolConfig pool;
    EngineConfig engine;
    Workload workload;
};

// Checks every field (sc::Error naming the field, the value and what is valid). The model is checked by
// ValidateModelConfig; tp must divide the attention heads.
void ValidateServingConfig(const ServingConfig& c);

}  // namespace sc
