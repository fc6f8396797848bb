#include "training/compute_model.h"

#include <algorithm>
#include <cmath>

#include "parallel/job.h"
#include "training/power_cap.h"

namespace sc {

AttentionShape AttentionShapeOf(const Job& job) {
    const ModelConfig& m = job.model;
    const ParallelConfig& p = job.par;
    AttentionShape a;
    a.batch = p.microbatch * static_cast<double>(m.heads) / p.tp;
    a.sq = static_cast<double>(m.seq) / p.cp;
    a.sk = m.seq;
    a.dqk = m.is_mla() ? m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim : m.head_dim;
    a.dv = m.is_mla() ? m.mla.v_head_dim : m.head_dim;
    a.w = std::max(2.0, BytesOf(m.precision.compute));  // attention runs in 16-bit under fp8 GEMMs
    if (m.graph_windowed_layers(0, m.layers) > 0) a.window = m.window.size;
    if (m.is_hybrid() && m.mamba.heads > 0) {  // the microbatch only here: it keys ComputeModelCache
        a.scan_heads = static_cast<double>(m.mamba.heads) / p.tp;
        a.microbatch = p.microbatch;
    }
    return a;
}

namespace {

// The best GEMM measured on the part (MAMF's shape search) as a fraction of its peak at `p`; a part measured only
// in bf16 keeps bf16's fraction at fp16, fp8 and fp4 (the rule the curves follow). 1 when nothing was measured.
double MeasuredMaxEfficiency(const CalibrationTable& cal, const Accelerator& acc, Precision p) {
    const GemmMaxAchievable* g = FindGemmMax(cal, acc.id, p);
    if (!g && p != Precision::bf16) g = FindGemmMax(cal, acc.id, Precision::bf16);
    if (!g) return 1.0;
    return std::min(1.0, g->tflops * 1e12 / (PeakFlops(acc, g->dtype) / CalibrationScale(acc, g->dtype)));
}

}  // namespace

// How much more a fused attention backward computes than the graph's backward op counts: FlashAttention's backward
// recomputes S = QK^T beside dP, dV, dQ and dK, five matmuls against the forward's two, and every backward curve in
// data/calibration.json states its TFLOPS on that count (2.5x the forward's: FlashAttention's
// benchmarks/benchmark_flash_attention.py `flops(mode="bwd")`, which the FlashAttention-3 paper's figures follow;
// NVIDIA/cudnn-frontend's benchmark/sdpa_benchmark_training `flops`, "Backward: 5 BMMs"). The graph's
// `attn.core.grad` carries attention's model FLOPs, 2x the forward's (graph/transformer_attention.cpp).
const double kKernelBackwardWork = 2.5 / 2.0;

ComputeModel::ComputeModel(const Accelerator& acc, Precision compute, const CalibrationTable* cal,
                           const TrainingOptions& opt, const AttentionShape& attn) {
    compute_ = compute;
    peak_ = PeakFlops(acc, compute);
    clock_ = PowerCapClockScale(acc);
    sms_ = acc.sm_count;
    // FP8/FP4 training (Transformer Engine) runs only the GEMMs in the narrow format; attention kernels run
    // in bf16 (Micikevicius et al. 2022, "FP8 Formats for Deep Learning", Sec. 4: softmax and attention kept
    // in higher precision).
    attn_peak_ = BytesOf(compute) < 2 ? PeakFlops(acc, Precision::bf16) : peak_;
    // Vector units: bf16/fp32 non-tensor rate; where a datasheet gives none, 1/16 of the matrix peak
    // (ASSUMED: H100's FP32 vector 67 TF vs 989 TF bf16 matrix is ~1/15).
    vector_ = acc.vector.fp32 ? *acc.vector.fp32 * 1e12 : peak_ / 16;
    double mem_eff = opt.memory_efficiency;
    if (mem_eff <= 0 && cal) {
        // STREAM's copy where the part has a run of it; else another streaming kernel measured on the part, a
        // static fp8 quantize (2 bytes read, 1 written an element; on H100 it streams at 1.03x STREAM's copy, H200
        // 1.07x: data/calibration.json memory_bandwidth, op Quantize).
        for (const char* op : {"Copy", "Quantize"}) {
            const double measured = AchievedHbmTBps(*cal, acc.id, op) * HbmCalibrationScale(acc);
            if (measured <= 0) continue;
            mem_eff = std::min(1.0, measured / acc.hbm_bandwidth_tbps);
            hbm_measured_ = true, hbm_kernel_ = op;
            break;
        }
    }
    if (mem_eff <= 0) mem_eff = opt.fallback_memory_efficiency;
    hbm_ = acc.hbm_bandwidth_tbps * 1e12 * mem_eff;

    fixed_matmul_eff_ = opt.matmul_efficiency;
    if (fixed_matmul_eff_ <= 0 && cal) {
        gemm_ = FindGemmCurve(*cal, acc.id, compute);
        if (!gemm_) gemm_ = FindGemmCurve(*cal, acc.id, Precision::bf16);  // fp8/fp4: same efficiency as bf16
        if (!gemm_ && compute == Precision::bf16) gemm_ = FindGemmCurve(*cal, acc.id, Precision::fp16);
        if (!gemm_ && compute == Precision::fp16) gemm_ = FindGemmCurve(*cal, acc.id, Precision::bf16);
        // The curve measured the preset's part: against its peak (an edited peak scales what it gives).
        if (gemm_) gemm_peak_ = PeakFlops(acc, gemm_->dtype) / CalibrationScale(acc, gemm_->dtype);
        gemm16_ = FindGemmCurve(*cal, acc.id, Precision::bf16);
        if (!gemm16_) gemm16_ = FindGemmCurve(*cal, acc.id, Precision::fp16);
        if (gemm16_) gemm16_peak_ = PeakFlops(acc, gemm16_->dtype) / CalibrationScale(acc, gemm16_->dtype);
    }
    // A serving engine's dense GEMMs at a precision its own op was measured in run at that op (TensorRT-LLM's NVFP4
    // Linear on Blackwell, its FP8 Linear per tensor or block-scaled on Hopper and Blackwell, input quantize
    // included), by shape; training keeps the library curves, and so do grouped expert GEMMs, which one grouped
    // kernel runs (held to the measured MoE op below), not one Linear each.
    if (opt.engine_gemms && fixed_matmul_eff_ <= 0 && cal) {
        engine_gemm_ = FindEngineGemmCurve(*cal, acc.id, compute, opt.engine_fp8_block ? "block" : "");
        if (engine_gemm_)
            engine_peak_ = PeakFlops(acc, engine_gemm_->dtype) / CalibrationScale(acc, engine_gemm_->dtype);
    }
    if (fixed_matmul_eff_ <= 0 && !gemm_) fixed_matmul_eff_ = opt.fallback_matmul_efficiency;
    // A serving engine's grouped expert GEMM runs no faster than the part's measured MoE op at its rows per expert,
    // the curve nearest in expert width and experts a rank (GroupedGemmCurve, NearestGroupedGemm), measured with its
    // experts stored as they are (MXFP4 apart); not when GEMM efficiency is set by hand.
    if (opt.engine_moe_op && opt.matmul_efficiency <= 0 && cal) {
        const char* weights = opt.engine_moe_mxfp4 ? "mxfp4" : "";
        if (opt.engine_fp8_block) grouped_ = FindGroupedGemms(*cal, acc.id, compute, weights, "block");
        if (grouped_.empty()) grouped_ = FindGroupedGemms(*cal, acc.id, compute, weights);
        if (!grouped_.empty())
            grouped_peak_ = PeakFlops(acc, grouped_[0]->dtype) / CalibrationScale(acc, grouped_[0]->dtype);
    }
    // An fp8 curve measured only on square shapes takes its shape from the part's 16-bit grid (ShapeFactor).
    if (gemm_ && gemm_->dtype == Precision::fp8 && gemm_->grid.empty() && gemm16_ && !gemm16_->grid.empty())
        shape_grid_ = gemm16_;
    // The profile is relative to the part's 16-bit curve; an efficiency set by hand, or no curve, has nothing to
    // be relative to.
    if (opt.framework_gemm && fixed_matmul_eff_ <= 0 && gemm16_ && cal) {
        framework_ = FindFrameworkGemm(*cal, acc.id, false);
        framework_k_ = FindFrameworkGemm(*cal, acc.id, true);
    }
    // No GEMM runs faster than the best shape measured on the part (gemm_max_achievable, MAMF's brute-force
    // search). Every curve's plateau sits below it; the cap binds where a part has no curve and the fallback
    // would claim more than was ever measured (MI300X bf16: 0.70 of peak against MAMF's 0.51).
    if (opt.matmul_efficiency <= 0 && cal) {
        max_eff_ = MeasuredMaxEfficiency(*cal, acc, compute);
        max_eff16_ = MeasuredMaxEfficiency(*cal, acc, Precision::bf16);
    }
    attn_eff_fwd_ = attn_eff_bwd_ =
        opt.attention_efficiency > 0 ? opt.attention_efficiency : opt.fallback_attention_efficiency;
    win_eff_fwd_ = attn_eff_fwd_, win_eff_bwd_ = attn_eff_bwd_;
    if (opt.attention_efficiency <= 0 && cal && attn.sq > 0) {
        // The kernel's measured curve at this call's query length (a context-parallel rank runs s/cp-long
        // blocks); the curves sweep 512-16k tokens and are held flat beyond. Decoder attention is causal.
        const int hd = static_cast<int>(std::max(attn.dqk, attn.dv));
        // A kernel measured only without the causal mask runs causal work at what it measured times the causal
        // ratio the figures give for a kernel measured both ways (CausalEfficiencyRatio).
        // A backward curve counts the work its kernel does, not the graph's: a fused backward recomputes the
        // scores, five matmuls to the forward's two (kKernelBackwardWork), where the graph charges attention's
        // model FLOPs, four. Its time is the kernel's, so its efficiency on the graph's FLOPs is 4/5 of the curve's.
        auto eff = [&](bool forward, AttentionKernel k, double len) {
            const AttentionCurve* c = FindAttentionCurve(*cal, acc.id, k, forward, true, hd, opt.attention_dtype);
            if (!c) return 0.0;
            (forward ? attn_curve_fwd_ : attn_curve_bwd_) = c;
            const double e = Interpolate(c->efficiency, len) / (forward ? 1.0 : kKernelBackwardWork);
            const double ratio = c->causal ? 1.0 : CausalEfficiencyRatio(*cal, acc.id, k, forward, hd, len);
            if (forward && len == attn.sq) attn_causal_ratio_fwd_ = ratio;
            return e * ratio;
        };
        auto set = [&](double len, double& fwd, double& bwd) {
            const AttentionKernel k = opt.attention_kernel;
            double f = eff(true, k, len), b = eff(false, k, len);
            if (b <= 0 && k == AttentionKernel::cudnn) b = eff(false, AttentionKernel::flash3, len);  // see options
            if (f > 0) fwd = f;
            if (b > 0) bwd = b;
        };
        set(attn.sq, attn_eff_fwd_, attn_eff_bwd_);
        win_eff_fwd_ = attn_eff_fwd_, win_eff_bwd_ = attn_eff_bwd_;
        if (attn.window > 0) set(std::min(attn.sq, attn.window), win_eff_fwd_, win_eff_bwd_);
    }
    // The SSD scan: the measured curve nearest the job's (sequence, head) pairs, at its sequence's length. Not when
    // attention's efficiency is set by hand (the scan was timed at it before it had a curve, and a hand-set run
    // means every rate by hand).
    if (opt.attention_efficiency <= 0 && cal) scan_curves_ = FindScanCurves(*cal, acc.id);
    if (attn.scan_heads > 0 && attn.sq > 0) {
        scan_curve_ = NearestScanCurve(scan_curves_, attn.microbatch * attn.scan_heads, attn.scan_heads);
        if (scan_curve_) scan_eff_ = Interpolate(scan_curve_->efficiency, attn.sq);  // ScanEfficiency, found once
    }
}

double ComputeModel::ForwardAttentionEfficiencyAt(double seqlen) const {
    if (!attn_curve_fwd_) return attn_eff_fwd_;
    return Interpolate(attn_curve_fwd_->efficiency, std::max(seqlen, 1.0)) * attn_causal_ratio_fwd_;
}

double ComputeModel::ForwardAttentionSecondsAt(double flops, double bytes, double seqlen) const {
    return std::max(flops / (attn_peak_ * clock_ * ForwardAttentionEfficiencyAt(seqlen)), bytes / hbm_);
}

double ComputeModel::ScanEfficiency(double parallel_heads, double heads, double seq_len) const {
    const ScanCurve* c = NearestScanCurve(scan_curves_, parallel_heads, heads);
    return c ? Interpolate(c->efficiency, std::max(seq_len, 1.0)) : 0.0;
}

double ComputeModel::ScanSeconds(double flops, double bytes, double parallel_heads, double heads,
                                 double seq_len) const {
    double eff = ScanEfficiency(parallel_heads, heads, seq_len);
    if (eff <= 0) eff = AttentionEfficiency(true);
    return std::max(flops / (attn_peak_ * clock_ * eff), bytes / hbm_);
}

// The ratio is read at the GEMM's narrowest side, on the curve of the GEMMs narrowest there: in the profile, a
// GEMM narrow in an output side loses most where that side is a few hundred to a thousand, one narrow in k little
// (H100). Outside a curve's profiled sides its nearest point holds (Interpolate's clamp).
double ComputeModel::FrameworkGemmRatio(const GemmDims& dims) const {
    if (!dims.known()) return 1;
    const double out = std::min(dims.m, dims.n);
    const FrameworkGemmCurve* f = dims.k < out ? framework_k_ : framework_;
    return f ? Interpolate(f->time_ratio, std::min(out, dims.k)) : 1;
}

// A GEMM's shape costs what it costs in tiles and waves over the SMs, which an fp8 GEMM of the same m, n and k shares
// with a 16-bit one. The fp8 curves measured off the square (Azure's cuBLASLt runs, presets/calibration) say so:
// at 802,816 x 192 x 768 the square curve at equal FLOPs reads H100 fp8 1.86x and GB200 fp8 1.95x too fast, this
// factor brings them to 1.48x and 1.33x (n = 192 is below the grid's 256: its edge is an upper bound), and at
// 1,024 x 2,145 x 1,024 GB200 from 1.09x to 1.03x (H100 stays 1.31x) (GemmShapeFactor.MovesFp8TowardItsOffSquareRuns).
// Not applied to fp4: GB200's fp4 run at 802,816 x 192 x 768 measured 1.56x faster than its own square curve.
// At most 1: a shape is charged, never credited. Under the grid's smallest side the grid reads its edge (an upper
// bound) while the square curve reads the GEMM's few FLOPs, and the ratio would be an artefact of the two clamps
// (x14 for a 1 x 8,192 x 8,192 decode GEMM on H100); with every side on the grid the ratios above 1 seen are within
// 1% of it (1.011 at 1,024 x 2,145 x 1,024 on H100).
double ComputeModel::ShapeFactor(double flops, const GemmDims& dims) const {
    if (!shape_grid_ || !dims.known()) return 1;
    return std::min(1.0, GridTflops(shape_grid_->grid, dims) / Interpolate(shape_grid_->tflops, std::max(flops, 1.0)));
}

double ComputeModel::MatmulEfficiency(double flops, const GemmDims& dims) const {
    if (!gemm_) return std::min(fixed_matmul_eff_, max_eff_);
    const double rate = GemmTflopsOf(*gemm_, flops, dims) * ShapeFactor(flops, dims);
    const double e = std::min(std::max(rate * 1e12 / gemm_peak_, 0.01), max_eff_);
    // A ratio under 1 (the framework faster than the curve) still stops at the best shape measured on the part.
    // The profile was measured in 16 bits and is applied at every precision: no fp8 GEMM has a framework profile,
    // and of what a framework adds to an isolated GEMM, fixed time per kernel costs an fp8 GEMM (half the time)
    // twice the share and a slowdown in proportion the same share; none is known to spare fp8 (docs/validation.md
    // "The framework GEMM profile at every precision").
    return std::min(e / FrameworkGemmRatio(dims), max_eff_);
}

double ComputeModel::MatmulEfficiency16(double flops, const GemmDims& dims) const {
    if (BytesOf(compute_) >= 2) return MatmulEfficiency(flops, dims);
    if (!gemm16_) return gemm_ ? MatmulEfficiency(flops, dims) : std::min(fixed_matmul_eff_, max_eff16_);
    const double e = std::min(std::max(GemmTflopsOf(*gemm16_, flops, dims) * 1e12 / gemm16_peak_, 0.01), max_eff16_);
    return std::min(e / FrameworkGemmRatio(dims), max_eff16_);
}

const ComputeModel& ComputeModelCache::For(const Accelerator& acc, Precision compute, const CalibrationTable* cal,
                                           const TrainingOptions& opt, const AttentionShape& attn) {
    const Key k{&acc,     cal,     &opt,   compute,     attn.sq,         attn.sk,
                attn.dqk, attn.dv, attn.w, attn.window, attn.scan_heads, attn.microbatch};
    if (!model_ || !(k == key_)) {
        model_.reset();  // a failed build leaves no model behind
        model_.emplace(acc, compute, cal, opt, attn);
        key_ = k;
    }
    return *model_;
}

double ComputeModel::Roofline(double flops, double peak, double efficiency, double bytes) const {
    return std::max(flops / (peak * clock_ * efficiency), bytes / hbm_);
}

double ComputeModel::Seconds(OpKind kind, double flops, double bytes, bool forward, double groups, bool high_precision,
                             bool windowed, const GemmDims& dims) const {
    double mem = bytes / hbm_;
    switch (kind) {
        case OpKind::matmul: {
            const double one = flops / std::max(1.0, groups);
            if (high_precision && BytesOf(compute_) < 2)
                return Roofline(flops, attn_peak_, MatmulEfficiency16(one, dims), bytes);
            const bool grouped = groups > 1 && dims.group_width > 0;
            if (engine_gemm_ && !grouped) {
                // The op was timed at this shape, reading its weights: a one-token GEMM's 1-2% of peak is its time,
                // not a rate to floor at the library curves' 1% (which would read 8,192 x 8,192 on H100 at 23 us,
                // the weights at STREAM's rate, where the op took 37 us).
                const double rate = GemmTflopsOf(*engine_gemm_, one, dims) * 1e12 / engine_peak_;
                return Roofline(flops, peak_, std::min(std::max(rate, 1e-6), max_eff_), bytes);
            }
            double e = MatmulEfficiency(one, dims);
            if (grouped && dims.known() && !grouped_.empty())
                e = std::min(e, Interpolate(NearestGroupedGemm(grouped_, dims.group_width, dims.group_experts,
                                                               dims.group_hidden, dims.group_hits)
                                                ->tflops,
                                            dims.m) *
                                    1e12 / grouped_peak_);
            return Roofline(flops, peak_, e, bytes);
        }
        case OpKind::attention: {
            const double eff = windowed ? WindowedAttentionEfficiency(forward) : AttentionEfficiency(forward);
            return std::max(flops / (attn_peak_ * clock_ * eff), mem);
        }
        case OpKind::scan: {  // the measured forward's fraction for both passes; attention's where none is measured
            const double eff = scan_eff_ > 0 ? scan_eff_ : AttentionEfficiency(forward);
            return std::max(flops / (attn_peak_ * clock_ * eff), mem);
        }
        case OpKind::elementwise:
        case OpKind::gather: return std::max(flops / (vector_ * clock_), mem);
        case OpKind::collective: return 0;
    }
    return 0;
}

}  // namespace sc
