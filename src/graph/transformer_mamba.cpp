// A hybrid model's Mamba-2 mixer (TransformerBuilder, transformer_builder.h), as Megatron-Core's MambaLayer runs it.
#include <string>

#include "graph/transformer_builder.h"

namespace sc::transformer {

// ---- the Mamba-2 mixer of a hybrid model's M layer (Megatron-Core MambaLayer and MambaMixer, its TP split by
// heads and groups): norm; the input projection h -> z, x, B, C, dt (column-parallel, 2 d_inner + 2 groups
// state + heads); the depthwise causal convolution and SiLU over x, B, C; the chunked state-space scan (SSD,
// Dao & Gu 2024); the gated RMSNorm norm(y) * silu(z); the output projection d_inner -> h (row-parallel);
// residual. The scan's FLOPs are Megatron-Bridge's convention, 7 d_inner state a token (training/utils/
// flop_utils.py mamba_layer_flops, "scan"); its kernel is an op of its own kind (OpKind::scan), timed on the
// measured scan curves (training/compute_model.cpp ScanEfficiency). What it keeps is what Megatron-Core's memory-efficient
// path keeps (use_mamba_mem_eff_path, its default: mamba_ssm's mamba_split_conv1d_scan_combined saves the input
// projection's whole output zxbcdt, z included, and re-runs the convolution in its backward): zxbcdt, the scan's
// output and its fp32 dt and dA; the gated norm reads y and z from those.
void TransformerBuilder::Mamba(const std::string& pre) {
    ModuleScope module(B, kBf16Mamba);
    SymExpr heads = S(Sym::mh), hd = S(Sym::mp), N = S(Sym::mn), groups = S(Sym::mg), taps = S(Sym::mk);
    SymExpr inner = heads * hd, bc = 2.0 * groups * N;
    SymExpr conv = (inner + bc) / tp, in_proj = (2.0 * inner + bc + heads) / tp;
    {
        RerunScope layernorm(B, kRecomputeLayernorm);
        Norm(pre + "mamba.norm", Tn);
    }
    B.TpEnter(pre + "mamba", T * h);
    B.Weight(pre + "mamba.in_proj", h * (2.0 * inner + bc + heads), h * (2.0 * inner + bc + heads) / tp);
    B.Matmul(pre + "mamba.in_proj", T, in_proj, h, &Tn, nullptr, Builder::Fp8Input::fused,
             {inner / tp, conv, heads / tp});  // z, xBC, dt
    B.DropInput(kRecomputeLayernorm);
    B.Weight(pre + "mamba.conv1d", (inner + bc) * (taps + 1.0), conv * (taps + 1.0));  // taps and a bias
    B.Elementwise(pre + "mamba.conv1d", T * conv, 2.0 * m.mamba.conv_kernel + 4, 1, T * in_proj);
    SymExpr y = T * inner / tp;
    SymExpr scan_flops = 7.0 * T * inner / tp * N;
    B.Custom(pre + "mamba.ssd_scan", OpKind::scan, scan_flops, (T * conv + y) * w + T * heads / tp * w,
             y * w + T * heads / tp * 8.0, 2.0 * scan_flops, (2.0 * T * conv + 3.0 * y) * w + T * heads / tp * 8.0);
    B.Weight(pre + "mamba.ssm_params", 3.0 * heads, 3.0 * heads / tp);  // A_log, D, dt_bias
    B.Elementwise(pre + "mamba.gated_norm", y, 9, 2, B.Zero());
    B.Weight(pre + "mamba.gated_norm", inner, inner / tp);
    B.Weight(pre + "mamba.out_proj", inner * h, inner / tp * h);
    B.Matmul(pre + "mamba.out_proj", T, h, inner / tp, nullptr, nullptr, Builder::Fp8Input::cast);
    B.TpLeave(pre + "mamba", T * h);
    Residual(pre + "mamba.residual", Tn * h);
    B.Weight(pre + "mamba.norm", norm_params, norm_params);
}

}  // namespace sc::transformer
