// Time of one op on one accelerator: a roofline whose compute roof is the measured efficiency for the
// op's kind and size (GEMM table by shape where measured, else by FLOP count; FlashAttention throughput; vector
// units for the rest)
// and whose memory roof is the achieved HBM bandwidth.
#pragma once
#include <optional>
#include <string>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "graph/graph.h"
#include "training/training_options.h"

namespace sc {

// The score matrices of one attention call on one rank: `batch` = microbatch x heads on the rank, each
// `sq` queries by `sk` keys, head dimensions dqk (Q, K) and dv (V), elements of `w` bytes.
// `window`: keys a query of a windowed layer sees (0: the model has no windowed layer in its graph).
// `scan_heads`: a hybrid model's Mamba-2 heads on the rank (0: no scan); its scan runs microbatch x scan_heads
// (sequence, head) pairs of `sq` tokens each.
struct AttentionShape {
    double batch = 0, sq = 0, sk = 0, dqk = 0, dv = 0, w = 2, window = 0;
    double scan_heads = 0, microbatch = 1;
};

class Job;
// The attention call of one layer on one rank (microbatch, the rank's heads, s/cp queries, all s keys).
AttentionShape AttentionShapeOf(const Job& job);

// The work a fused attention kernel's backward does over the graph's backward op's FLOPs (5 matmuls / 4): the factor
// between a measured backward curve's efficiency and the efficiency on the graph's FLOPs (compute_model.cpp).
extern const double kKernelBackwardWork;

class ComputeModel {
public:
    // `attn`: the attention call the fused-attention efficiency is looked up for (its sequence length and head
    // dimension); default: no shape, the fallback efficiency.
    ComputeModel(const Accelerator& acc, Precision compute, const CalibrationTable* cal, const TrainingOptions& opt,
                 const AttentionShape& attn = {});
    // `forward`: the forward (or recomputed) pass; false for the backward, which attention kernels run at a
    // different efficiency.
    // `groups`: a matmul that is that many equal GEMMs (a grouped expert GEMM) runs at the efficiency of one.
    // `high_precision`: a matmul kept in 16 bits in an fp8 model (the LM head, the MoE router).
    // `windowed`: an attention core of a windowed layer, timed at the windowed efficiency.
    // `dims`: a matmul's shape, one GEMM of the group (GemmDimsOf); unknown: its efficiency by FLOP count.
    double Seconds(OpKind kind, double flops, double bytes, bool forward = true, double groups = 1,
                   bool high_precision = false, bool windowed = false, const GemmDims& dims = {}) const;
    // Fraction of the 16-bit peak an attention op reaches on the FLOPs the graph gives it (a measured backward curve
    // is read at 1 / kKernelBackwardWork of its own figure: see there).
    double AttentionEfficiency(bool forward) const { return forward ? attn_eff_fwd_ : attn_eff_bwd_; }
    // A windowed core's efficiency: the measured curve at the window's length (no sliding-window kernel has a
    // measured curve; a windowed core does per query the work of a causal call that long, in the same tiles).
    double WindowedAttentionEfficiency(bool forward) const { return forward ? win_eff_fwd_ : win_eff_bwd_; }
    // The forward efficiency at another query length than the call's: the forward curve read at `seqlen` (times the
    // causal ratio the call's length gave a curve measured without the mask); AttentionEfficiency(true) without a
    // curve. A serving decode does per query the work of a causal row `seqlen` (its context) long.
    double ForwardAttentionEfficiencyAt(double seqlen) const;
    // A forward attention call of `flops` and `bytes` at ForwardAttentionEfficiencyAt(seqlen): Seconds's roofline.
    double ForwardAttentionSecondsAt(double flops, double bytes, double seqlen) const;
    // Fraction of the 16-bit peak a chunked SSD scan reaches over `parallel_heads` (sequence, head) pairs of `heads`
    // heads each, `seq_len` tokens a sequence: the part's measured scan curve nearest them (config/calibration.h
    // ScanCurve), read at that length; its backward at the same fraction on the graph's twice the FLOPs (no backward
    // was measured). 0 when the part reads no scan curve (the op then runs at the attention efficiency).
    double ScanEfficiency(double parallel_heads, double heads, double seq_len) const;
    // One scan call of that shape: its FLOPs at ScanEfficiency, or at the attention efficiency where that is 0, and
    // its bytes at the HBM rate (the roofline of Seconds).
    double ScanSeconds(double flops, double bytes, double parallel_heads, double heads, double seq_len) const;
    // The curve the job's scan reads (nullptr: none, or no scan in the model) and its efficiency there.
    const ScanCurve* scan_curve() const { return scan_curve_; }
    double scan_efficiency() const { return scan_eff_; }
    // Fraction of this precision's peak of one GEMM of `flops` FLOPs, by its shape `dims` where the curve has a
    // measured grid (config/gemm_grid.h) and `dims` is known.
    double MatmulEfficiency(double flops, const GemmDims& dims = {}) const;
    double MatmulEfficiency16(double flops, const GemmDims& dims = {}) const;  // of the 16-bit peak (high precision)
    double peak_flops() const { return peak_; }  // rated (datasheet): what MFU is against, a power limit or not
    // Fraction of its rated clock the part's compute runs at under its power limit (training/power_cap.h): every
    // compute roof below is the measured rate times this.
    double clock_scale() const { return clock_; }
    double memory_bytes_per_s() const { return hbm_; }
    int sm_count() const { return sms_; }  // 0: the preset publishes none
    // What the rates above rest on (training/rate_sources.h says it in words): the GEMM curve (nullptr: the
    // efficiency is set by hand or the fallback), the attention curves per pass (nullptr: the fallback or a
    // hand-set value), whether the HBM bandwidth is a measured STREAM copy, and the part's measured GEMM ceiling.
    const GemmCurve* gemm_curve() const { return gemm_; }
    // A serving engine's own GEMM its dense GEMMs run at (TrainingOptions::engine_gemms); nullptr: none.
    const GemmCurve* engine_gemm_curve() const { return engine_gemm_; }
    double flat_matmul_efficiency() const { return fixed_matmul_eff_; }  // when gemm_curve() is nullptr
    double max_matmul_efficiency() const { return max_eff_; }            // 1: none measured
    // The framework profile (measured on 16-bit GEMMs, applied at every precision) GEMMs narrowest in k
    // (`contraction`) or in m or n are slowed by (TrainingOptions::framework_gemm); nullptr: none applies.
    const FrameworkGemmCurve* framework_gemm(bool contraction = false) const {
        return contraction ? framework_k_ : framework_;
    }
    // Measured / curve time of a GEMM of shape `dims` in the framework profile; 1 without one or a shape.
    double FrameworkGemmRatio(const GemmDims& dims) const;
    // An fp8 GEMM read on a square-shape curve, by FLOP count, runs at that rate times this: the part's 16-bit grid
    // at its shape over the 16-bit square curve at its FLOPs, at most 1. 1 without a shape, or when the fp8 curve has
    // its own grid or the part has no 16-bit grid.
    double ShapeFactor(double flops, const GemmDims& dims) const;
    // The 16-bit curve whose grid gives ShapeFactor its shape; nullptr when ShapeFactor is 1.
    const GemmCurve* shape_curve() const { return shape_grid_; }
    const AttentionCurve* attention_curve(bool forward) const { return forward ? attn_curve_fwd_ : attn_curve_bwd_; }
    // The measured MoE-op rates a grouped GEMM of a stated expert width is held to on this part, one per width
    // (empty: none, GEMMs set by hand, or not a serving engine's: TrainingOptions::engine_moe_op).
    const std::vector<const GroupedGemmCurve*>& grouped_gemms() const { return grouped_; }
    bool hbm_measured() const { return hbm_measured_; }
    // The streaming kernel the achieved HBM rate was measured with ("Copy": STREAM's copy; "Quantize": TensorRT-LLM's
    // static fp8 quantize where the part has no STREAM run); "" when not measured.
    const std::string& hbm_kernel() const { return hbm_kernel_; }

private:
    double Roofline(double flops, double peak, double efficiency, double bytes) const;
    Precision compute_ = Precision::bf16;
    double peak_ = 0;       // dense matrix FLOP/s at the compute precision
    double attn_peak_ = 0;  // attention runs in 16-bit even when GEMMs run in fp8/fp4 (Transformer Engine)
    double vector_ = 0;     // vector FLOP/s
    double hbm_ = 0;        // achieved bytes/s
    double clock_ = 1;      // PowerCapClockScale: compute under a power limit
    int sms_ = 0;
    double attn_eff_fwd_ = 0, attn_eff_bwd_ = 0;
    double attn_causal_ratio_fwd_ = 1;  // what the forward curve's efficiency was multiplied by (non-causal curves)
    double win_eff_fwd_ = 0, win_eff_bwd_ = 0;
    double fixed_matmul_eff_ = 0;
    const GemmCurve* gemm_ = nullptr;
    const GemmCurve* gemm16_ = nullptr;             // bf16 (or fp16) curve, for matmuls kept in 16 bits
    const GemmCurve* engine_gemm_ = nullptr;        // a serving engine's own GEMM for its dense GEMMs
    double engine_peak_ = 0;                        // the peak engine_gemm_'s TFLOPS are a fraction of
    const GemmCurve* shape_grid_ = nullptr;         // gemm16_, when it lends its grid to a square-only fp8 curve
    std::vector<const GroupedGemmCurve*> grouped_;  // a grouped GEMM's ceilings by rows per group (Seconds)
    double grouped_peak_ = 0;                       // the peak grouped_'s TFLOPS are a fraction of (one dtype)
    double gemm16_peak_ = 0;
    double gemm_peak_ = 0;  // peak of the curve's own precision, to turn TFLOPS into an efficiency
    // The best GEMM measured on the part (MAMF) as a fraction of the peak, at the compute precision and in 16
    // bits: no matmul efficiency exceeds it. 1 where nothing was measured or the efficiency is set by hand.
    double max_eff_ = 1, max_eff16_ = 1;
    const FrameworkGemmCurve* framework_ = nullptr;    // GEMMs narrowest in m or n
    const FrameworkGemmCurve* framework_k_ = nullptr;  // GEMMs narrowest in k
    const AttentionCurve* attn_curve_fwd_ = nullptr;
    const AttentionCurve* attn_curve_bwd_ = nullptr;
    std::vector<const ScanCurve*> scan_curves_;  // the part's (ScanEfficiency)
    const ScanCurve* scan_curve_ = nullptr;      // the job's scan: its curve and efficiency (0: attention's)
    double scan_eff_ = 0;
    bool hbm_measured_ = false;
    std::string hbm_kernel_;
};

// Where a caller running many estimates of one model on one part (the layout search) keeps the last compute
// model: it depends on the layout only through the attention call's length (s/cp; AttentionShape::batch is not
// read) and, for a hybrid model, its scan's heads and microbatch, so consecutive layouts share it. Keyed on the addresses of the accelerator, calibration and options,
// not their contents: they must stay unchanged while the cache lives. The result is the same as a fresh model.
class ComputeModelCache {
public:
    const ComputeModel& For(const Accelerator& acc, Precision compute, const CalibrationTable* cal,
                            const TrainingOptions& opt, const AttentionShape& attn);

private:
    struct Key {
        const Accelerator* acc = nullptr;
        const CalibrationTable* cal = nullptr;
        const TrainingOptions* opt = nullptr;
        Precision compute = Precision::bf16;
        double sq = 0, sk = 0, dqk = 0, dv = 0, w = 0, window = 0, scan_heads = 0, microbatch = 0;
        bool operator==(const Key&) const = default;
    };
    Key key_;
    std::optional<ComputeModel> model_;
};

}  // namespace sc
