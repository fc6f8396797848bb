// Measured calibration tables (presets/calibration/measured.json, extracted from data/calibration.json):
// collective bus bandwidth vs message size, GEMM throughput vs size, best achievable GEMM throughput, and
// achieved HBM bandwidth. The training and serving models interpolate these measured curves instead of
// fitting one latency-bandwidth line (which misses the plateau by 10-30%).
//
// Interpolation (Interpolate): piecewise linear in log(x), linear in y, clamped to the first / last measured
// value outside the measured range (the plateau). It returns the measured value exactly at a measured x and
// is monotone between two neighbouring points.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "config/gemm_grid.h"
#include "config/mla_decode_curve.h"
#include "config/precision.h"

namespace sc {

// x strictly increasing and > 0; y >= 0; at least one point.
struct MeasuredCurve {
    std::vector<double> x;
    std::vector<double> y;
    // std::log of every x, filled by ParseCalibration (and ValidateCurve): Interpolate then takes one log per
    // call instead of three (it is on the training model's hot path). Left empty, Interpolate computes them.
    std::vector<double> log_x;
};

// Throws sc::Error when the curve is empty or x is not strictly increasing and positive, or x <= 0.
double Interpolate(const MeasuredCurve& curve, double x);
void ValidateCurve(const MeasuredCurve& curve, const std::string& field);

enum class CollectiveOp { all_reduce, all_gather, reduce_scatter, all_to_all };
const char* NameOf(CollectiveOp op);

// Bus bandwidth (nccl-tests "busbw", GB/s) vs message size (bytes, nccl-tests "size") for one measured setup.
struct CollectiveCurve {
    std::string id;
    std::vector<std::string> accelerators;  // hardware preset ids the measurement applies to
    std::string scope;                      // "scale_up" (one NVLink/xGMI domain) or "scale_out"
    CollectiveOp op = CollectiveOp::all_reduce;
    std::string algorithm;  // "ring", "nvls", "tree", "default ...", as stated by the source
    int n_ranks = 0;
    int n_nodes = 0;
    MeasuredCurve busbw;  // x = message bytes, y = busbw GB/s
    std::string series, hardware, setup, source, note;
    // "" for NCCL's (the `collectives` table); a serving engine's own all-reduce op for the `engine_all_reduce`
    // table: "tensorrt-llm" (its AllReduce under AllReduceStrategy.AUTO), "vllm" or "sglang" (their
    // tensor_model_parallel_all_reduce in a CUDA graph): custom kernels for small buffers, NCCL above.
    std::string engine;
};

// Achieved TFLOPS vs GEMM size (x = 2*batch*m*n*k FLOPs) over square shapes, and by shape where the source
// measured a whole grid of them (config/gemm_grid.h).
struct GemmCurve {
    std::string id;
    std::vector<std::string> accelerators;
    Precision dtype = Precision::bf16;
    // "": a GEMM library's kernels, which every framework reaches; "tensorrt-llm": a serving engine's own op (its
    // input quantize in the time), which only the serving model reads (FindEngineGemmCurve).
    std::string engine;
    // How an fp8 op's inputs were scaled: "" one scale a tensor, "block" DeepSeek-V3's fine-grained scaling (one
    // scale a 1x128 tile of activations and a 128x128 block of weights; DeepSeek-V3 Technical Report, 2024, sec.
    // 3.3.2). Only an engine's curve states it; only a serving precision of that scaling reads it.
    std::string scaling;
    MeasuredCurve tflops;
    GemmGrid grid;  // empty: only the FLOP-count curve was measured
    std::string series, hardware, setup, source, note;
};

// Best measured GEMM throughput over a shape search (ml-engineering "MAMF").
struct GemmMaxAchievable {
    std::vector<std::string> accelerators;
    Precision dtype = Precision::bf16;
    double tflops = 0;
    double m = 0, n = 0, k = 0, batch = 1;
    std::string series, hardware, source, note;
};

// A grouped (MoE expert) GEMM's measured rate by its rows per group: the achieved TFLOPS of an engine's whole MoE op
// (its grouped GEMMs over the experts a batch hits) at `rows_per_group` = tokens x top-k / experts hit, on the useful
// FLOPs of its expert GEMMs, with each expert's intermediate split to `expert_width` on a rank and the tokens routed
// as `routing` says. Where a part has curves, a serving engine's grouped GEMM of a stated width runs no faster than
// the curve of the nearest width (training/compute_model.cpp): a grouped kernel can fall short of the dense GEMMs of
// the same shapes (TensorRT-LLM's MoE op on A100, and on H100 and H200 for narrow experts).
struct GroupedGemmCurve {
    std::string id;
    std::vector<std::string> accelerators;
    Precision dtype = Precision::bf16;
    double expert_width = 0;  // the expert GEMMs' intermediate size on one rank (moe_tp splits it)
    double experts = 0;       // the whole experts the measured op held on its rank (E / moe_ep)
    double hidden = 0;        // the measured op's hidden size (its up GEMMs' contraction, its down GEMMs' output)
    // The measured model's routing: each token to top_k of model_experts experts (0: not stated). With `experts` it
    // gives the rows a token sends to the measured rank (LocalHits), which sets how the op's per-token work (routing,
    // permute, finalize) weighs against its GEMMs at a given rows per group.
    double top_k = 0, model_experts = 0;
    double LocalHits() const { return model_experts > 0 ? top_k * experts / model_experts : 0; }
    // How the measured op stored its experts: "" as it computed (dtype), "mxfp4" in MXFP4 (W4A16 with a bf16 dtype,
    // W4A8 with fp8). Only experts stored so read an "mxfp4" curve, and they read no other.
    std::string weights;
    std::string scaling;   // as GemmCurve::scaling: "" per tensor, "block" fp8 block-scaled (read only so)
    std::string routing;   // how the measured op's tokens were routed (e.g. "power_law_1.01")
    MeasuredCurve tflops;  // x = rows per group, y = TFLOPS
    std::string series, hardware, setup, source, note;
};

// Achieved HBM bandwidth of one STREAM-style kernel.
struct HbmMeasurement {
    std::vector<std::string> accelerators;
    std::string op;  // "Copy", "Mul", "Add", "Triad", "Dot"
    double tbps = 0;
    std::string series, hardware, source, note;
};

// A measured copy between host memory and one GPU (nvbandwidth, TransferBench), one direction: what a swap or a
// host prefix tier's copy moves at when the serving description does not state its host link.
enum class HostLinkOp { host_to_device, device_to_host };
struct HostLinkMeasurement {
    std::vector<std::string> accelerators;
    HostLinkOp op = HostLinkOp::host_to_device;
    double gbps = 0;  // GB/s
    std::string series, hardware, source, note;
};

// Fraction of the dense 16-bit peak one fused-attention kernel reaches vs sequence length (batch x seqlen
// fixed), one pass (forward or backward), at one head dimension, causal or not. Causal runs count half the
// score pairs, as the graph does.
// tensorrt_llm ("tensorrt-llm"): a serving engine's own context-attention op (TensorRT-LLM's, as NVIDIA's
// aiconfigurator timed it), which only the serving model reads; the training kernels are the other three.
enum class AttentionKernel { flash2, flash3, cudnn, tensorrt_llm };
const char* NameOf(AttentionKernel k);
// A training kernel by name ("flash2", "flash3", "cudnn"); false for any other name, "tensorrt-llm" too.
bool ParseAttentionKernel(std::string_view name, AttentionKernel* out);

struct AttentionCurve {
    std::string id;
    std::vector<std::string> accelerators;
    AttentionKernel kernel = AttentionKernel::flash2;
    bool forward = true;
    bool causal = false;
    int head_dim = 0;
    // The precision its matmuls ran at: bf16 (the file's "dtype" absent, or "bf16"/"fp16") or fp8 (an FP8 fused
    // attention, still a fraction of the 16-bit peak the model times attention against).
    Precision dtype = Precision::bf16;
    MeasuredCurve efficiency;  // x = seqlen, y = fraction of peak
    std::string series, hardware, setup, source, note;
};

// How much longer a GEMM takes inside a framework on a server node than the part's GEMM curve says: measured time /
// the curve's compute-roof time, the median over a profile's compute-bound GEMMs of about that narrowest side. A
// GEMM narrowest in an output side (m or n) and one narrowest in its contraction (k) lose differently (Vidur's H100
// profile: 1.11-1.30 against 1.03-1.08), so each part has a curve for each. Derived from a profile in data/ by a
// test that checks it is current (tests/native/test_framework_gemm.cpp), not copied: the ratio is to the model's
// own GEMM time without it.
struct FrameworkGemmCurve {
    std::string id;
    std::vector<std::string> accelerators;
    Precision dtype = Precision::fp16;  // the profile's precision; it applies to 16-bit GEMMs (bf16 runs as fp16)
    bool contraction = false;           // the GEMMs narrowest in k (true) or in m or n (false)
    MeasuredCurve time_ratio;           // x = that narrowest side, y = measured / curve time (> 0)
    std::string series, hardware, setup, source, note;
};

// The fixed cost of a kernel from a profile's weight reads: the median, over the profile's GEMMs that only read
// their weights (the model's compute roof under a tenth of their bytes at STREAM-copy bandwidth), of measured time
// minus those bytes at that bandwidth. For parts whose GEMM calibration has no floor point (training/kernel_floor.h).
// Derived, as FrameworkGemmCurve is, by tests/native/test_framework_gemm.cpp.
struct WeightReadFloor {
    std::string id;
    std::vector<std::string> accelerators;
    Precision dtype = Precision::fp16;
    double alpha_us = 0;  // > 0
    int gemms = 0;        // the weight-read GEMMs it is the median of
    std::string series, hardware, setup, source, note;
};

// The fixed cost of one decode-attention call (a paged kernel reading a batch's caches, with its split-KV
// reduction) beyond moving its bytes: for each published kernel series, the intercept of the least-squares line
// through its (bytes read and written, GPU time) points; the median over the series. Derived by
// tests/native/test_decode_attention_floor.cpp from data/calibration.json's decode_attention records.
struct DecodeAttentionFloor {
    std::string id;
    std::vector<std::string> accelerators;
    Precision dtype = Precision::fp16;  // the caches' precision in the measurements
    double alpha_us = 0;                // > 0
    // And per block beyond its bytes, where the op's own timings give it (0: not measured): TensorRT-LLM's XQA runs
    // one block a sequence and KV head once they fill the SMs (cpp/kernels/xqa/mha.cu, launchMHA's grid), and each
    // block's Q load, softmax and output write cost GPU time its cache bytes do not count.
    double sequence_kv_head_ns = 0;
    int series_count = 0;  // the series it is the median of
    std::string series, hardware, setup, source, note;
};

// A state-space model's chunked scan (Mamba-2's SSD, Dao & Gu 2024: mamba_ssm's mamba_chunk_scan_combined forward,
// a chain of Triton kernels) measured at one batch of sequences of one shape, by tokens a sequence: the fraction of the
// measured part's dense 16-bit peak it reaches on the graph's FLOPs (7 x d_inner x d_state a token, Megatron-Bridge's
// convention). A part reads a curve as the same fraction of its own peak. The kernel is far from the tensor cores'
// rate (B200: 2-4% of the peak at 128 and more sequences x heads): its chunk states are fp32 and its grid is the
// sequences x heads, so the rate follows how many of those a call runs (`heads` x `batch`) as much as its length.
struct ScanCurve {
    std::string id;
    std::vector<std::string> accelerators;
    int heads = 0, batch = 0;                            // the measured call: `batch` sequences of `heads` heads
    int head_dim = 0, state = 0, groups = 0, chunk = 0;  // its head width, state size, B/C groups, chunk length
    MeasuredCurve efficiency;                            // x = tokens a sequence, y = fraction of the 16-bit peak
    std::string series, hardware, setup, source, note;
    double parallel_heads() const { return static_cast<double>(heads) * batch; }
};

struct CalibrationTable {
    std::vector<CollectiveCurve> collectives;
    std::vector<GemmCurve> gemm;
    std::vector<FrameworkGemmCurve> framework_gemm;
    std::vector<WeightReadFloor> weight_read_floor;
    std::vector<DecodeAttentionFloor> decode_attention_floor;
    std::vector<MlaDecodeCurve> mla_decode_attention;  // a serving engine's MLA decode op, by part, cache and heads
    std::vector<GemmMaxAchievable> gemm_max_achievable;
    std::vector<GroupedGemmCurve> grouped_gemm;
    std::vector<HbmMeasurement> memory_bandwidth;
    std::vector<AttentionCurve> attention;
    std::vector<ScanCurve> ssd_scan;
    std::vector<HostLinkMeasurement> host_link;
    // A serving engine's own TP all-reduce measured on GPUs of one scale-up domain (scope scale_up, op all_reduce,
    // one node): read only by a serving pool whose PoolConfig::all_reduce names that engine, never by NCCL's picks.
    std::vector<CollectiveCurve> engine_all_reduce;
};

// Strict parse of presets/calibration/measured.json (unknown keys, unsorted or non-positive sizes, negative
// bandwidths ... throw sc::Error naming the field).
CalibrationTable ParseCalibration(std::string_view json_text);

// The rows of `table` that apply to `accelerator_id`, in their order: every lookup below answers the same from
// it for that accelerator (each filters by accelerator id and keeps the first of equals).
CalibrationTable CalibrationFor(const CalibrationTable& table, std::string_view accelerator_id);

// busbw in GB/s at `message_bytes` (interpolated, clamped).
double BusBandwidthGBps(const CollectiveCurve& curve, double message_bytes);
// Achieved TFLOPS for an m x n x k GEMM (batch of `batch`), by its FLOP count on the square-shape curve.
double GemmTflops(const GemmCurve& curve, double m, double n, double k, double batch = 1);
// Achieved TFLOPS of a GEMM of `flops` FLOPs: on the curve's grid by shape when it has one and `dims` is known,
// else on the square-shape curve by FLOP count.
double GemmTflopsOf(const GemmCurve& curve, double flops, const GemmDims& dims);

// The curve measured on `accelerator_id` for `op` in `scope`: prefers exactly `n_ranks`, then the nearest
// rank count, then the most points. nullptr when there is none.
const CollectiveCurve* FindCollectiveCurve(const CalibrationTable& table, std::string_view accelerator_id,
                                           CollectiveOp op, std::string_view scope, int n_ranks);
// `engine`'s own all-reduce measured on exactly `n_ranks` GPUs of `accelerator_id` (engine_all_reduce); nullptr
// when there is none.
const CollectiveCurve* FindEngineAllReduce(const CalibrationTable& table, std::string_view accelerator_id,
                                           std::string_view engine, int n_ranks);
// The GEMM curve for `accelerator_id` at `dtype` with the most points; nullptr when there is none.
const GemmCurve* FindGemmCurve(const CalibrationTable& table, std::string_view accelerator_id, Precision dtype);
// A serving engine's own GEMM measured on `accelerator_id` at `dtype` and `scaling` (GemmCurve::engine set); nullptr
// when none.
const GemmCurve* FindEngineGemmCurve(const CalibrationTable& table, std::string_view accelerator_id, Precision dtype,
                                     std::string_view scaling = "");
// The framework profile's time ratio for 16-bit GEMMs on `accelerator_id` narrowest in k (`contraction`) or in m or
// n; nullptr when none was profiled there.
const FrameworkGemmCurve* FindFrameworkGemm(const CalibrationTable& table, std::string_view accelerator_id,
                                            bool contraction);
// The weight-read floor profiled on `accelerator_id`; nullptr when none was.
const WeightReadFloor* FindWeightReadFloor(const CalibrationTable& table, std::string_view accelerator_id);
const DecodeAttentionFloor* FindDecodeAttentionFloor(const CalibrationTable& table, std::string_view accelerator_id);
// The MLA decode op measured on `accelerator_id` with a latent cache of `cache` (bf16 and fp16 read each other's) at
// `heads` query heads a rank and the model's latent geometry; nullptr when there is none.
const MlaDecodeCurve* FindMlaDecodeCurve(const CalibrationTable& table, std::string_view accelerator_id,
                                         Precision cache, int heads, int kv_lora_rank, int qk_rope_head_dim);
// The best GEMM throughput measured on `accelerator_id` at `dtype` (MAMF's shape search; the highest if several);
// nullptr when there is none.
const GemmMaxAchievable* FindGemmMax(const CalibrationTable& table, std::string_view accelerator_id, Precision dtype);
// The grouped-GEMM curves measured on `accelerator_id` at `dtype` (bf16 and fp16 read each other's, as the GEMM
// curves do) with experts stored as `weights` and inputs scaled as `scaling`, every expert width; empty when there
// are none.
std::vector<const GroupedGemmCurve*> FindGroupedGemms(const CalibrationTable& table, std::string_view accelerator_id,
                                                      Precision dtype, std::string_view weights = "",
                                                      std::string_view scaling = "");
// Of `curves`, the one nearest an op of `experts` experts of `width` on a rank at hidden size `hidden`, each token
// sending the rank `hits` rows on average (top-k x experts on the rank / experts): the least |ln(width ratio)| +
// |ln(experts ratio)| + |ln(hidden ratio)| + |ln(hits ratio)| (a term left out when its argument, or the curve's
// LocalHits, is <= 0). An op's fixed costs (routing, permute, finalize) are spread over its experts' work, so a curve
// of 8 experts read for a rank of 64 charges them eight times over (docs/serving.md, "TensorRT-LLM's MoE op on
// Blackwell"); the hidden size is the other side of every expert GEMM; and at one rows per group an op whose tokens
// each send the rank 4 rows routes a quarter of the tokens one sending 1 does (gpt-oss-20b whole on a GPU against
// gpt-oss-120b over 4: docs/serving.md, "An MoE op's tokens per row"). The widest when `width` <= 0; nullptr when
// `curves` is empty.
const GroupedGemmCurve* NearestGroupedGemm(const std::vector<const GroupedGemmCurve*>& curves, double width,
                                           double experts, double hidden = 0, double hits = 0);
// The attention curve for `kernel` in one direction on `accelerator_id`: the causal one when `causal` and one
// was measured, then the one at `dtype` (bf16 and fp16 read each other's) when one was, at the head dimension nearest
// `head_dim`. nullptr when the kernel was not measured there.
const AttentionCurve* FindAttentionCurve(const CalibrationTable& table, std::string_view accelerator_id,
                                         AttentionKernel kernel, bool forward, bool causal, int head_dim,
                                         Precision dtype = Precision::bf16);
// What a causal run keeps of a non-causal curve's efficiency at `seqlen` (achieved / peak with causal FLOPs counted
// as half the pairs): the measured ratio of a kernel that has both curves at the head dimension nearest
// `head_dim` (the FlashAttention-3 paper's forward figures give it for FlashAttention-2 and -3; the masked diagonal
// blocks and their load imbalance cost more the shorter the sequence). Looked up for `kernel` in `direction`
// first, then `kernel` forward, then FlashAttention-3 forward, then any kernel forward; 1 when no kernel has both.
double CausalEfficiencyRatio(const CalibrationTable& table, std::string_view accelerator_id, AttentionKernel kernel,
                             bool forward, int head_dim, double seqlen);
// The scan curves `accelerator_id` reads (empty: none).
std::vector<const ScanCurve*> FindScanCurves(const CalibrationTable& table, std::string_view accelerator_id);
// Of `curves`, the one measured at the sequences x heads nearest `parallel_heads` (by ratio), of those the one whose
// heads are nearest `heads` (a call's grid is its sequences x heads; its heads also set its states' size); the first
// of equals. nullptr when `curves` is empty.
const ScanCurve* NearestScanCurve(const std::vector<const ScanCurve*>& curves, double parallel_heads, double heads);
// Achieved HBM TB/s of kernel `op` (e.g. "Copy", "Triad") on `accelerator_id`; 0 when not measured.
double AchievedHbmTBps(const CalibrationTable& table, std::string_view accelerator_id, std::string_view op);
// Measured host link GB/s of the accelerator in one direction; 0 when there is no measurement.
double HostLinkGBps(const CalibrationTable& table, std::string_view accelerator_id, HostLinkOp op);
// The measurement behind it, or nullptr.
const HostLinkMeasurement* FindHostLink(const CalibrationTable& table, std::string_view accelerator_id, HostLinkOp op);

}  // namespace sc
