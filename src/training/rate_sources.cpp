#include "training/rate_sources.h"

#include <algorithm>
#include <cstdio>

#include "training/power_cap.h"

namespace sc {

namespace {

std::string Printf(const char* format, double a, double b = 0, double c = 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, format, a, b, c);
    return buf;
}

std::string GemmText(const ComputeModel& cm, const Accelerator& acc, Precision compute, const TrainingOptions& opt) {
    const std::string prec = NameOf(compute);
    if (opt.matmul_efficiency > 0) return Printf("%.2f of the ", opt.matmul_efficiency) + prec + " peak, set by hand";
    if (const GemmCurve* c = cm.gemm_curve()) {
        std::string s = "measured curve " + c->series + " on " + c->hardware + " (" +
                        Printf("%.4g-%.4g TFLOPS", c->tflops.y.front(), c->tflops.y.back()) + ")";
        if (!c->grid.empty())
            s += Printf(", by shape on its %.0f-shape grid (m, n, k %.0f-", static_cast<double>(c->grid.tflops.size()),
                        c->grid.m.front()) +
                 Printf("%.0f; wider m x n at equal area, beyond it the edge)", c->grid.m.back());
        if (const GemmCurve* g = cm.shape_curve())
            s += ", by shape as " + g->series + "'s grid (measured in " + NameOf(g->dtype) +
                 ") over its square curve at equal FLOPs";
        if (c->dtype != compute)
            s += std::string(", measured in ") + NameOf(c->dtype) + ": " + prec + " GEMMs at its fraction of peak";
        // An edited part (--system-set, the page, a sweep point) reads the curve scaled by edited / preset peak.
        if (const double scale = CalibrationScale(acc, c->dtype); scale != 1)
            s += Printf("; x%.3g for the edited peak", scale);
        const FrameworkGemmCurve *out = cm.framework_gemm(false), *k = cm.framework_gemm(true);
        if (out) {
            s += "; in a framework, x" + Printf("%.2f-%.2f", out->time_ratio.y.back(), out->time_ratio.y.front()) +
                 " the time by the narrowest side (" + out->series +
                 (BytesOf(compute) == 2 ? ")" : ", measured in 16 bits)");
            if (k) s += Printf(", x%.2f-%.2f when it is k", k->time_ratio.y.front(), k->time_ratio.y.back());
        }
        if (const GemmCurve* e = cm.engine_gemm_curve())
            s += "; dense GEMMs at the serving engine's own measured " + e->id + " (" + e->engine +
                 ", by shape on its " + std::to_string(e->grid.tflops.size()) + "-shape grid)";
        if (const std::vector<const GroupedGemmCurve*>& gs = cm.grouped_gemms(); !gs.empty()) {
            double lo = gs[0]->tflops.y.front(), hi = lo;
            std::string series, curves;
            for (const GroupedGemmCurve* g : gs) {
                for (double y : g->tflops.y) lo = std::min(lo, y), hi = std::max(hi, y);
                if (series.find(g->series) == std::string::npos) series += (series.empty() ? "" : ", ") + g->series;
                curves += (curves.empty() ? "" : ", ") + Printf("%.0f x %.0f", g->expert_width, g->experts);
            }
            s += "; grouped (MoE expert) GEMMs at most " + series +
                 "'s measured MoE op by rows per expert, the curve nearest in expert width and experts a rank (" +
                 curves + Printf("; %.4g-%.4g TFLOPS)", lo, hi);
        }
        return s;
    }
    const double flat = cm.flat_matmul_efficiency(), best = cm.max_matmul_efficiency();
    if (best < flat)
        return "no GEMM curve for " + acc.id +
               Printf(": its best measured shape (MAMF), %.2f of peak, for every GEMM ", best) +
               Printf("(the %.2f fallback would exceed it)", flat);
    return "no GEMM curve for " + acc.id + Printf(": %.2f of peak for every GEMM (fallback)", flat);
}

std::string AttentionText(const ComputeModel& cm, const Accelerator& acc, const TrainingOptions& opt, bool backward) {
    if (!opt.kernels.flash_attention)
        return "unfused (flash_attention=off): score and context GEMMs at the GEMM rate, softmax and masks at HBM "
               "bandwidth";
    if (opt.attention_efficiency > 0) return Printf("%.2f of the 16-bit peak, set by hand", opt.attention_efficiency);
    const AttentionCurve *f = cm.attention_curve(true), *b = backward ? cm.attention_curve(false) : f;
    // The kernel the curves are of (a serving engine picks its own: IterationCost), else the one asked for.
    const std::string kernel = NameOf(f ? f->kernel : opt.attention_kernel);
    auto pass = [&](const char* name, const AttentionCurve* c, bool forward) {
        const double e = cm.AttentionEfficiency(forward);
        const std::string dtype = c && BytesOf(c->dtype) < 2 ? std::string(", ") + NameOf(c->dtype) : "";
        std::string t = std::string(name) +
                        (c ? " measured (" + c->series + ", " + NameOf(c->kernel) + dtype + ")" : " fallback") +
                        Printf(" %.2f of peak", e);
        // The curve counts the kernel's recomputed scores; the graph charges attention's model FLOPs.
        if (c && !forward)
            t += Printf(" on the graph's FLOPs (%.2f on the kernel's 5 matmuls)", e * kKernelBackwardWork);
        return t;
    };
    if (!f && !b)
        return "no measured " + kernel + " curve for " + acc.id +
               Printf(": %.2f of the 16-bit peak (fallback)", cm.AttentionEfficiency(true));
    std::string s = kernel + " at this sequence length: " + pass("forward", f, true);
    return backward ? s + "; " + pass("backward", b, false) : s;
}

std::string HbmText(const ComputeModel& cm, const Accelerator& acc, const TrainingOptions& opt) {
    const double achieved = cm.memory_bytes_per_s() / 1e12, nominal = acc.hbm_bandwidth_tbps;
    if (opt.memory_efficiency > 0) return Printf("%.3g of %.3g TB/s, set by hand", achieved, nominal);
    if (cm.hbm_measured() && cm.hbm_kernel() == "Copy")
        return Printf("STREAM copy measured: %.3g of %.3g TB/s", achieved, nominal);
    if (cm.hbm_measured())
        return Printf("TensorRT-LLM's fp8 quantize measured (no STREAM run of the part): %.3g of %.3g TB/s", achieved,
                      nominal);
    return "no measurement for " + acc.id + Printf(": %.3g of %.3g TB/s (fallback)", achieved, nominal);
}

std::string FloorText(const KernelFloor& f, const Accelerator& acc) {
    if (f.alpha_s <= 0) return "none measured for " + acc.id + ": no fixed cost per kernel beyond its roofline";
    if (f.profile_gemms > 0)
        return Printf("%.2f us per kernel: the median of ", f.alpha_s * 1e6) + f.series +
               Printf("'s %.0f weight-read GEMMs beyond their bytes at STREAM-copy bandwidth", f.profile_gemms);
    return Printf("%.2f us per kernel: the ", f.alpha_s * 1e6) + f.series +
           Printf(" GEMM of %.3g MFLOP, measured at %.2f us", f.gemm_flops / 1e6, f.gemm_seconds * 1e6);
}

std::string ScanText(const ComputeModel& cm, const Accelerator& acc, const AttentionShape& a) {
    const ScanCurve* c = cm.scan_curve();
    if (!c)
        return "no scan measured for " + acc.id + ": timed as an attention kernel (" +
               Printf("%.2f of the 16-bit peak forward)", cm.AttentionEfficiency(true));
    return "measured (" + c->id + ") " +
           Printf("at %.0f sequences x %.0f heads, %.0f tokens a sequence: ", c->batch, c->heads, a.sq) +
           Printf("%.4f of the 16-bit peak for %.0f x %.0f here; ", cm.scan_efficiency(), a.microbatch, a.scan_heads) +
           "the backward at the same fraction";
}

}  // namespace

std::string DecodeAttentionText(const DecodeAttentionFloor* f, const Accelerator& acc) {
    if (!f) return "no fixed cost measured for " + acc.id + ": a decode call pays the kernel floor";
    const std::string block =
        f->sequence_kv_head_ns > 0
            ? Printf(", and %.2f ns a sequence and KV head (a kernel block)", f->sequence_kv_head_ns)
            : "";
    return Printf("%.2f us a call beyond its bytes: the median of %.0f measured series' fixed times", f->alpha_us,
                  f->series_count) +
           block + " (" + f->id + ")";
}

std::string MlaDecodeText(const MlaDecodeCurve* c) {
    if (!c) return "";
    return "; MLA decode at the engine's measured op, " + std::to_string(c->heads) +
           " heads a rank, by sequences and cached tokens (" + c->id + ")";
}

RateSources DescribeRates(const ComputeModel& cm, const KernelFloor& floor, const Accelerator& acc, Precision compute,
                          const TrainingOptions& opt, bool backward) {
    RateSources r;
    r.gemm = GemmText(cm, acc, compute, opt);
    r.attention = AttentionText(cm, acc, opt, backward);
    r.hbm = HbmText(cm, acc, opt);
    r.floor = FloorText(floor, acc);
    r.clock = PowerCapText(acc);
    const bool attention_measured =
        !opt.kernels.flash_attention || (cm.attention_curve(true) && (!backward || cm.attention_curve(false)));
    r.all_measured = cm.gemm_curve() && attention_measured && cm.hbm_measured() && floor.alpha_s > 0;
    return r;
}

RateSources DescribeRates(const Job& job, const System& sys, const CalibrationTable* cal, const TrainingOptions& opt) {
    const Precision compute = job.model.precision.compute;
    const AttentionShape shape = AttentionShapeOf(job);
    const ComputeModel cm(sys.accelerator, compute, cal, opt, shape);
    RateSources r = DescribeRates(cm, TrainingKernelFloor(cal, sys.accelerator), sys.accelerator, compute, opt);
    if (shape.scan_heads > 0) {
        r.scan = ScanText(cm, sys.accelerator, shape);
        if (!cm.scan_curve()) r.all_measured = false;  // the scan at attention's rate is a stand-in
    }
    return r;
}

}  // namespace sc
