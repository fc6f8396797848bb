// What a serving simulation describes: the model and its number formats, one replica's split (TP), the
// engine's scheduler knobs (vLLM / SGLang / TensorRT-LLM in-flight batching) and the workload.
// presets/inference/*.json hold descriptions; ParseServingDescription (serving_parse.cpp) reads them strictly.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/model_config.h"
#include "config/precision.h"

namespace sc {

// Number formats of a served model. A ModelOpt FP8 checkpoint (what TensorRT-LLM's FP8 tables ran) quantizes
// the decoder layers' linear weights and their GEMM inputs to fp8 and, in trtllm-bench, the KV cache too
// ("If you specify FP8 quantization, the KV cache will automatically be set to FP8 as well",
// TensorRT-LLM v0.14 docs/source/performance/perf-overview.md); the embedding and the LM head stay 16-bit
// (ModelOpt's default quantization config disables "*lm_head*"; the embedding is not a linear layer).
//
// int4 weights (W4A16, or W4A8 with fp8 GEMM inputs) as AWQ (Lin et al. 2023, arXiv:2306.00978) and GPTQ
// (Frantar et al. 2022, arXiv:2210.17323) checkpoints are served: each decoder-layer linear weight is stored at
// 4 bits with an fp16 scale, and in asymmetric checkpoints a 4-bit zero point, per group of `group_size`
// consecutive weights along the input dimension (g = 128 in AWQ and GPTQ's common setting). The GEMM kernels
// dequantize on the fly, so the math runs at `compute` (the activations' 16 bits, or fp8) while the weights are
// read at 0.5 + 2/g (+ 0.5/g) bytes each. Not a `Precision`: it is a storage layout whose size depends on g, and
// no GEMM runs in it (training has no use for it either).
//
// MXFP4 (OCP Microscaling Formats v1.0, 2023: E2M1 elements with one E8M0 scale, a byte, per block of 32) is the
// same layout with a one-byte scale and no zeros: 0.5 + 1/32 bytes a weight. It is how gpt-oss was released (its
// model card: the MoE weights in MXFP4, so that gpt-oss-120b fits one 80 GB GPU) and how vLLM, SGLang and
// TensorRT-LLM serve it, its GEMMs in 16 bits on Hopper (or fp8 inputs, W4A8, on Blackwell). The description's
// "weights": "mxfp4" stores the routed experts so and leaves every other linear weight (attention, router, dense and
// shared MLPs) at the GEMMs' 16 bits, as gpt-oss's checkpoint does and vLLM's Mxfp4Config serves it (its FusedMoE
// layers quantized, its linear layers unquantized); a model without routed experts is refused.
struct Int4Weights {
    int group_size = 128;     // weights per scale along the input dimension
    bool zero_points = true;  // AutoAWQ's GEMM layout and GPTQ store 4-bit zeros; symmetric schemes do not
    double scale_bytes = 2;   // an fp16 scale (AWQ, GPTQ); MXFP4's E8M0 scale is 1
    bool mxfp4() const { return group_size == 32 && !zero_points && scale_bytes == 1; }
};
inline constexpr Int4Weights kMxfp4{32, false, 1};

// How fp8 weights and GEMM inputs carry their scales.
//   tensor: one fp32 scale a tensor (ModelOpt's FP8 checkpoints; TensorRT-LLM's per-tensor FP8 GEMMs).
//   block:  DeepSeek-V3's fine-grained FP8 (its technical report, 2024, sec. 3.3.2; the FP8 checkpoints of
//           DeepSeek-V3 and -R1 carry "weight_block_size": [128, 128]): one fp32 scale a 128x128 block of weights
//           and a 1x128 tile of activations, quantized before each GEMM. Its GEMMs are other kernels (TensorRT-LLM's
//           fp8_block_scaling_gemm on Hopper, DeepGEMM on Blackwell): the serving model reads the engine's own
//           curves measured so where the part has them (calibration "scaling": "block"), and says which it read.
// Not config/precision.h's Scaling: that is a training recipe (delayed or current amax, block, MX, NVFP4); a served
// checkpoint's scales are fixed, so serving states only how they are laid out.
enum class Fp8Scaling { tensor, block };

struct ServingPrecision {
    Precision weights = Precision::bf16;          // decoder-layer linear weights (with int4: the format they are
                                                  // dequantized into, = compute)
    Precision compute = Precision::bf16;          // GEMM math and GEMM inputs (fp8: 1 byte per input element)
    Precision kv_cache = Precision::bf16;         // K and V per token
    Precision activations = Precision::bf16;      // between kernels, in the TP all-reduces
    Precision embeddings = Precision::bf16;       // embedding table and LM head weights
    std::optional<Int4Weights> int4;              // set: decoder-layer linear weights stored as int4 groups
    Fp8Scaling fp8_scaling = Fp8Scaling::tensor;  // with fp8 weights and compute: how they are scaled
};

// Bytes one element of a served tensor takes where it is stored (a weight, a GEMM input, the KV cache): BytesOf,
// but fp4 is NVFP4, the 4-bit format TensorRT-LLM, vLLM and SGLang serve on Blackwell (NVIDIA ModelOpt's
// NVFP4 checkpoints, TensorRT-LLM's NVFP4 KV cache): E2M1 values with one E4M3 scale per 16 and an fp32 scale
// per tensor (NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025), 0.5 + 1/16
// bytes an element, as the training model counts NVFP4 weights (config/quantization.h).
double StoredBytes(Precision p);
// Bytes one decoder-layer linear weight takes in memory and in a GEMM's weight read: StoredBytes(weights), or
// with int4 0.5 + 2/g for the fp16 scale (+ 0.5/g for the 4-bit zero point), with block-scaled fp8 1 + 4/128^2 for
// each block's fp32 scale. MXFP4 leaves these at 16 bits.
double WeightBytesPerElement(const ServingPrecision& p);
// The same for a routed expert's weights: as above, but MXFP4's 0.5 + 1/32.
double ExpertWeightBytesPerElement(const ServingPrecision& p);
// "bf16", "fp8", "int4 g128" (with ", no zeros" for a symmetric checkpoint), "mxfp4".
std::string WeightFormatName(const ServingPrecision& p);

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

// Which waiting request is admitted first. fcfs: arrival order. priority: the lowest priority value first
// (vLLM's --scheduling-policy priority), arrival order among equals; running requests are not preempted for it.
enum class SchedulingPolicy { fcfs, priority };
const char* NameOf(SchedulingPolicy p);

// What preemption does to a running request's KV cache (vLLM's two modes, Kwon et al. 2023 section 4.5).
//   recompute: its blocks are freed; on readmission its prompt and generated tokens are prefilled again.
//   swap:      its blocks are copied to host memory over the host link (the replica waits for the copy) and
//              copied back when it is readmitted, after which it resumes decoding.
enum class Preemption { recompute, swap };
const char* NameOf(Preemption p);

// Speculative decoding with a draft head (DeepSeek-V3's multi-token-prediction module, EAGLE's draft layer; vLLM's
// speculative_config methods "mtp" and "eagle", SGLang's EAGLE, TensorRT-LLM's MTP and EAGLE): one decoder layer of
// the model's shape, an input projection of 2h -> h and the model's LM head propose `tokens` tokens per decoding
// sequence, one step after another, and the model checks them all in its next iteration (Leviathan et al. 2023,
// "Fast Inference from Transformers via Speculative Decoding"): the sequence feeds its last token and the drafts,
// k + 1 tokens with their logits, and keeps the drafts up to the first one rejected plus the model's own next token.
// A draft is accepted with probability `acceptance` when the ones before it were (the i.i.d. acceptance of Leviathan
// et al.; the expected tokens per step are (1 - a^(k+1)) / (1 - a)), a property of the model, its draft head and the
// workload, so the description states it with its source.
struct Speculation {
    int tokens = 0;         // draft tokens per step (vLLM num_speculative_tokens); 0: no speculative decoding
    double acceptance = 0;  // probability a draft is accepted given the drafts before it were, in [0, 1]
};
constexpr int kMaxDraftTokens = 64;

struct EngineConfig {
    int max_seqs = 256;     // sequences in one iteration (vLLM max_num_seqs, TRT-LLM max_batch_size)
    int max_tokens = 8192;  // tokens computed in one iteration (vLLM max_num_batched_tokens, TRT-LLM max_num_tokens)
    int block_size = 16;    // tokens per KV block (vLLM default 16; TRT-LLM tokens_per_block 64)
    bool chunked_prefill = true;   // a prompt may be split over iterations to fill the token budget (Sarathi-Serve)
    bool static_batching = false;  // no request joins until the whole batch has finished (pre-in-flight batching)
    // A windowed layer's blocks are freed once they leave every window (vLLM V1's SlidingWindowManager; TensorRT-LLM's
    // KV cache manager when it is given the layers' windows, KvCacheConfig.max_attention_window). false: a windowed
    // layer holds its whole context, though its attention reads only the window: TensorRT-LLM's PyTorch backend for a
    // model whose config lists its layer types (gpt-oss) until it derived the windows from them
    // (NVIDIA/TensorRT-LLM#18767, 2026-09). docs/serving.md, "Sliding windows".
    bool window_eviction = true;
    KvAdmission admission = KvAdmission::on_demand;
    KvMemoryPolicy memory_policy = KvMemoryPolicy::total_fraction;
    double kv_memory_fraction = 0.9;
    long long kv_blocks_override = 0;  // > 0: this many KV blocks instead of the memory model's (tests, what-ifs)
    // GiB per GPU the process holds beyond weights, workspace, states and KV (CUDA context, libraries, collective
    // buffers), as the engine's own log gives it; unset: the measured terms of inference/runtime_memory.h.
    std::optional<double> runtime_memory_gib;
    // Seconds each request spends in the serving front end outside the engine (Triton's ensemble around
    // TensorRT-LLM: tokenizing the prompt before, detokenizing and streaming the first token after, the client's
    // protocol): added to its TTFT and end-to-end latency as its client sees them, not to TPOT, and not moving the
    // engine's schedule. 0: the engine's own latencies.
    double frontend_s = 0;
    SchedulingPolicy scheduling = SchedulingPolicy::fcfs;
    Preemption preemption = Preemption::recompute;
    // Host link a swapped-out KV cache crosses, GB/s per direction per GPU (each TP rank swaps its own shard).
    // Read under Preemption::swap and by the host prefix tier. 0: the part's measured copies in each direction
    // (the calibration's host_link rows, nvbandwidth on H100, H800, H200 and GB200, TransferBench on MI300X;
    // HostLinkOf); a part without them needs it stated.
    double swap_gbps = 0;
    // Automatic prefix caching (vLLM's enable_prefix_caching, SGLang's radix cache): once a prompt's shared prefix
    // (Workload::prefixes) is computed, its full blocks stay in the replica's cache, and a later prompt with that
    // prefix takes them instead of computing them. Blocks no running request uses stay cached until blocks are
    // needed, then go least recently used first (vLLM's free block queue), before anything is preempted.
    bool prefix_caching = false;
    // A tier for prefixes in host memory (GiB per GPU; LMCache's CPU offload, vLLM's KV offloading): a prefix evicted
    // from the GPU is copied there, and a prompt whose prefix is there copies it back instead of computing it; both
    // copies cross the host link at swap_gbps and the replica waits for them, as for a swap. 0: no host tier. Needs
    // prefix_caching.
    double host_cache_gib = 0;
    // A tier in a remote store (GiB per GPU, every prefill GPU's share of one store the replicas share: RemoteStore;
    // Mooncake's distributed KV store, LMCache's remote backend, HERMES's remote KV-cache retrieval): a read crosses
    // the prefill cluster's scale-out network (the NICs: ScaleOutLevel's effective bandwidth, plus its hop latency a
    // copy); an evicted prefix is staged in host memory over the host link (swap_gbps or the measured one), the
    // replica waiting for that copy only, and uploaded beside it. 0: none. Needs prefix_caching. With a host tier
    // too the three tiers are LMCache's hierarchy (PrefixCache): an evicted prefix is written to both, a lookup
    // takes the host's copy first, a copy read from the store is kept in the host tier as well.
    double remote_cache_gib = 0;
    Speculation speculation;
    // Batch sizes of the decode CUDA graphs captured with padding on (TensorRT-LLM's cuda_graph_config batch_sizes
    // with enable_padding). An iteration of decodes only runs the graph of the smallest size at or above its
    // sequences (under data-parallel attention every GPU the graph of the busiest GPU's count), its empty rows
    // filled with a dummy request of one cached token; an iteration with prompt tokens, or more sequences than the
    // largest size, runs eagerly at its own size. Empty: no padding (sizes ascending).
    std::vector<int> cuda_graph_batch_sizes;
};

// The decode graphs TensorRT-LLM's perf overview captures with padding on (NVIDIA/TensorRT-LLM
// docs/source/developer-guide/perf-overview.md, every model's llm_options.yml: cuda_graph_config enable_padding true,
// batch_sizes as here); the page's "padded CUDA graphs" switch sets them.
inline const std::vector<int> kTrtllmBenchGraphSizes = {1,   2,   4,   8,    16,   32,   64,  128,
                                                        256, 384, 512, 1024, 2048, 4096, 8192};

// The largest CUDA graph batch size a description may list (TensorRT-LLM's perf overview captures up to 8,192).
inline constexpr int kMaxCudaGraphBatchSize = 1 << 20;

// The graphs an engine captures from the sizes it is given (TensorRT-LLM's PyTorchModelEngine,
// _filter_cuda_graph_batch_sizes in tensorrt_llm/_torch/pyexecutor/model_engine.py): those at or below the largest
// batch of decodes an iteration can hold, min(max_seqs, max_tokens / (1 + draft tokens)); with padding, that largest
// batch too when the next size listed is above it. Each GPU's limits under data-parallel attention.
std::vector<int> CapturedGraphSizes(const EngineConfig& e);

// Throws naming engine.cuda_graph_batch_sizes[i] unless every size is a whole number from 1 to
// kMaxCudaGraphBatchSize and each is larger than the one before.
void CheckCudaGraphSizes(const std::vector<int>& sizes);

// The TP all-reduce an engine runs inside a scale-up domain.
//   nccl          NCCL's all-reduce (an engine with its custom all-reduce off: vLLM's and SGLang's
//                 --disable-custom-all-reduce, TensorRT-LLM's NCCL strategy), timed on the part's nccl-tests curves
//                 (CommModel's).
//   tensorrt_llm  TensorRT-LLM's AllReduce under AllReduceStrategy.AUTO, its default: its one-shot and two-shot
//                 kernels over NVLink peer memory for buffers within the workspace, NCCL above
//                 (AllreducePlugin::selectImplementation).
//   vllm, sglang  their tensor_model_parallel_all_reduce as a CUDA-graph step runs it (vLLM's decode and V1's
//                 piecewise graphs, SGLang's decode graphs): their custom all-reduce for the buffers it takes, NCCL
//                 above.
// An engine's own is timed on its measured curve where the part has one for the group's GPU count (calibration
// engine_all_reduce), else on NCCL's.
enum class EngineAllReduce { nccl, tensorrt_llm, vllm, sglang };
const char* NameOf(EngineAllReduce a);
std::optional<EngineAllReduce> EngineAllReduceNamed(std::string_view name);  // NameOf's inverse

// One pool's replicas. A replica is pp pipeline stages of tp GPUs each (tp x pp GPUs).
//   pp: the layers split into consecutive stages as vLLM's get_pp_indices splits them (StageLayers). The
//       replica runs pp batches in flight, one per scheduler ("virtual engine", vLLM's V0 LLMEngine builds
//       pipeline_parallel_size Schedulers), each with 1/pp of the KV blocks (vllm/core/scheduler.py:
//       num_gpu_blocks //= pipeline_parallel_size); a batch passes the stages in turn.
//   ep: MoE layers split the experts over ep groups of a stage's tp ranks, each expert sharded over the tp/ep
//       ranks of its group (TensorRT-LLM's moe_ep_size x moe_tp_size = tp_size, docs/source/advanced/
//       expert-parallelism.md). Attention stays tensor parallel.
// Fields after tp keep the order {tp, replicas} of older code that builds a PoolConfig by position.
struct PoolConfig {
    int tp = 1;        // tensor parallel ranks of one pipeline stage (one scale-up domain)
    int replicas = 1;  // independent copies; requests are dealt round-robin
    int pp = 1;        // pipeline stages of one replica
    int ep = 1;        // expert-parallel groups among a stage's tp ranks (MoE layers only)
    // Data-parallel attention (DeepSeek's inference system, SGLang's --enable-dp-attention, TensorRT-LLM's
    // enable_attention_dp): each of the tp GPUs runs attention, the dense layers, the shared experts and the LM
    // head whole on its own sequences and caches only their KV; the routed experts are split over the group (ep = tp)
    // and reached by an all-to-all dispatch and combine. docs/serving.md, "Data-parallel attention".
    bool attention_dp = false;
    // Copies of the most loaded routed experts added to the experts the ep groups hold (DeepSeek's "32 redundant
    // routed experts", EPLB; SGLang's --ep-num-redundant-experts, vLLM's num_redundant_experts): experts + this many
    // slots, each group holding an equal share. docs/serving.md, "Redundant experts".
    int redundant_experts = 0;
    // Data-parallel attention's dispatcher: DeepEP (deepseek-ai/DeepEP, DeepSeek's and SGLang's large-EP serving),
    // which sends a token once to each GPU holding one of its experts and once over the scale-out network to each
    // node, as the training model's KernelChoices::deepep_dispatch; false: every (token, expert) pair is sent.
    bool deepep_dispatch = false;
    // Data-parallel attention's expert traffic as an all-gather of every GPU's tokens, quantized to the GEMMs'
    // precision first, and a reduce-scatter of the expert outputs in 16 bits: TensorRT-LLM's AllGatherReduceScatter
    // (tensorrt_llm/_torch/modules/fused_moe/communication), which its CommunicationFactory falls back to where the
    // NVLink all-to-alls and DeepEP cannot run (GPUs joined only by PCIe). docs/serving.md, "The RTX PRO 6000".
    bool allgather_dispatch = false;
    // Data-parallel attention's two-batch overlap (DeepSeek's dual micro-batch overlap, SGLang's
    // --enable-two-batch-overlap): each iteration runs as two micro-batches, one's all-to-all behind the other's
    // compute. docs/serving.md, "Two-batch overlap".
    bool two_batch_overlap = false;
    // The replica's TP all-reduce (EngineAllReduce): "all_reduce" in a description.
    EngineAllReduce all_reduce = EngineAllReduce::nccl;
    // Routed expert slots of an MoE model under this split: its experts and their redundant copies.
    int ExpertSlots(const ModelConfig& m) const { return m.moe.experts + redundant_experts; }
    int gpus() const { return tp * pp * replicas; }
};

// Layers of each of `pp` stages: vLLM's get_pp_indices (vllm/distributed/utils.py): layers / pp each, the
// remainder one apiece to the stages before the last, from the second-to-last backwards (the last stage also
// runs the final norm and the LM head).
std::vector<int> StageLayers(int layers, int pp);

// poisson: exponential gaps at `rate`. gamma: gamma-distributed gaps at mean 1/rate with coefficient of
// variation `cv` (cv = 1 is Poisson; cv > 1 bursty, as in the DistServe and Vidur workload generators).
// fixed_rate: 1/rate apart. closed_loop: `concurrency` clients, each sending its next request when the
// previous completes. offline: all queued at time 0. trace: the arrivals and lengths of `trace`.
enum class ArrivalKind { poisson, gamma, fixed_rate, closed_loop, offline, trace };
const char* NameOf(ArrivalKind k);

// fixed: min (== max). uniform: integers in [min, max]. normal: mean, stddev, redrawn until in [min, max]
// (a truncated normal). empirical: one of `values` with probability proportional to `weights`.
struct LengthDist {
    enum class Kind { fixed, uniform, normal, empirical } kind = Kind::fixed;
    int min = 1, max = 1;         // fixed: min == max; the bounds of every kind (the largest request checks the cache)
    double mean = 0, stddev = 0;  // normal
    std::vector<int> values;      // empirical
    std::vector<double> weights;  // empirical, same length, > 0
    static LengthDist Fixed(int tokens) { return Between(Kind::fixed, tokens, tokens); }
    static LengthDist Uniform(int lo, int hi) { return Between(Kind::uniform, lo, hi); }

private:
    static LengthDist Between(Kind k, int lo, int hi) {
        LengthDist d;
        d.kind = k, d.min = lo, d.max = hi;
        return d;
    }
};
const char* NameOf(LengthDist::Kind k);

// One request of a replayed trace (the core takes the list; the CLI reads it from a file).
struct TraceRequest {
    double arrival = 0;  // s, non-decreasing along the trace
    int input = 1, output = 1;
    int priority = 0;
};

// Prompts that begin with one of `count` shared prefixes of `tokens` tokens each (a system prompt, a document
// several questions are asked about), as SGLang's bench_serving "generated-shared-prefix" dataset builds them
// (gsp_num_groups prefixes of gsp_system_prompt_len tokens; its zipf mode draws prefix k, 1-based, with weight
// 1/k^alpha). A request's prompt is its prefix followed by its own Workload::input tokens.
struct SharedPrefixes {
    int count = 0;  // 0: no shared prefixes
    int tokens = 0;
    double zipf = 0;  // 0: every prefix equally likely
};
// Retrieval before the prompt (retrieval-augmented generation, Lewis et al. 2020; HERMES's RAG stage): every request,
// and every turn of a conversation, first queries a retrieval service, which serves `servers` queries at once,
// each in `seconds` (first come, first served), and its prompt gets the `documents` passages found, of `tokens`
// tokens each, after its shared prefix and before its own input. The service's time is the description's, stated
// with its source (an index's search time, and the query's embedding if the source's time includes it).
struct Retrieval {
    int documents = 0;   // passages a query returns into the prompt; 0: no retrieval stage
    int tokens = 0;      // tokens of one passage
    double seconds = 0;  // one query's time on a server
    int servers = 1;     // queries served at once
    bool on() const { return documents > 0; }
    long long prompt_tokens() const { return static_cast<long long>(documents) * tokens; }
};

constexpr int kMaxSharedPrefixes = 1 << 20;
constexpr int kMaxTurns = 1000;
constexpr int kMaxSamples = 1024;

struct Workload {
    ArrivalKind arrival = ArrivalKind::offline;
    double rate = 0;           // requests/s (poisson, fixed_rate)
    int concurrency = 1;       // clients, each sending its next request when the previous one completes (closed_loop)
    double cv = 1;             // gamma: coefficient of variation of the gaps
    long long requests = 1;    // requests in the run (trace: the trace's length)
    LengthDist input, output;  // prompt tokens, generated tokens (the first one comes from the prefill)
    SharedPrefixes prefixes;   // set: each prompt is a shared prefix, then `input` tokens of its own
    // Conversations (SGLang bench_serving's gsp_num_turns): each of the `requests` arrivals starts a conversation of
    // `turns` requests; turn k + 1 is sent `think` seconds after turn k completes, to the same scheduler, its prompt
    // turn k's prompt and output followed by new `input` tokens. Results count every turn as a request.
    int turns = 1;
    double think = 0;  // s
    // Parallel sampling (vLLM's SamplingParams.n, SGLang's n; best-of-N and self-consistency reasoning): each request
    // asks for `samples` completions of its prompt. As vLLM's V1 engine does (vllm/v1/engine/parallel_sampling.py),
    // the request becomes `samples` sequences queued together, each with the prompt and an output length of its own;
    // with prefix caching the first to be scheduled caches the prompt's full blocks and the others take them. A
    // request completes when its last sample does; its TTFT is its first sample's first token.
    int samples = 1;
    Retrieval retrieval;  // on: each request (each turn) queries a retrieval service first
    // Priority classes: a request draws class i with probability priority_weights[i] and gets priority i
    // (0 first). Empty: everyone has priority 0. Only read under SchedulingPolicy::priority.
    std::vector<double> priority_weights;
    std::vector<TraceRequest> trace;  // ArrivalKind::trace
    uint64_t seed = 1;
};

// The longest prompt a generated workload can send: its shared prefix, its retrieved passages and the longest input,
// and in a conversation every earlier turn's passages, input and output before its last turn's.
long long LongestPrompt(const Workload& w);

// Service-level objectives a request meets when its TTFT and its TPOT are both within them (0: no target).
// Goodput is the rate of requests that meet them (DistServe, Zhong et al. 2024).
struct SloTargets {
    double ttft = 0, tpot = 0;  // s
};

struct ServingConfig {
    ModelConfig model;
    ServingPrecision precision;
    // Without decode_pool: one pool of replicas that prefill and decode. With it: `pool` prefills only and
    // decode_pool decodes only (disaggregated, Splitwise / DistServe); a request's KV cache crosses the network
    // between them when its prefill ends.
    PoolConfig pool;
    std::optional<PoolConfig> decode_pool;
    EngineConfig engine;
    Workload workload;
    SloTargets slo;
    // Requests whose per-request timelines the result keeps: the first N by arrival (request_timeline.h).
    // A bounded, deterministic sample: memory does not grow with the run. 0 keeps none.
    int timelines = 8;
};

constexpr int kMaxTimelines = 100000;  // timelines one result may keep (each holds a few spans)

// The engine's clock is a double of seconds. Past 1e9 s (31.7 years) it resolves no better than 0.12 us, and
// beyond that latencies of microseconds vanish: 5000 requests at 1e-300 requests/s reported every TTFT and TPOT
// as 0 us. A run's arrivals (a trace's times, or requests / rate) must fall within it.
constexpr double kMaxClockSeconds = 1e9;

// `field` errs unless `requests` arrivals at `rate` per second span at most kMaxClockSeconds on average.
void CheckArrivalSpan(const std::string& field, long long requests, double rate);

// Checks every field (sc::Error naming the field, the value and what is valid). The model is checked by
// ValidateModelConfig; tp must divide the attention heads.
void ValidateServingConfig(const ServingConfig& c);

}  // namespace sc
