// The per-op pieces the transformer blocks share (TransformerBuilder, transformer_builder.h): the residual add, the
// norm, rotary embedding, eager repeat_kv, SwiGLU and the TP-split MLP, each fused or as eager PyTorch runs it.
#include <string>

#include "graph/transformer_builder.h"

namespace sc::transformer {

// The residual add after attention or the MLP over `elems` elements. With dropout (KernelChoices) it is
// Megatron-LM's fused bias-dropout-add: one more FLOP per element (the mask's scale) and a one-byte mask
// written and kept for the backward, which reads it.
void TransformerBuilder::Residual(const std::string& name, SymExpr elems) {
    if (!options.kernels.dropout) return B.Elementwise(name, elems, 1, 2, B.Zero());
    B.Custom(name, OpKind::elementwise, 2.0 * elems, 3.0 * elems * w + elems, elems, 4.0 * elems,
             4.0 * elems * w + elems);
}

// A norm over `rows` tokens of h: one kernel, or torchtitan's RMSNorm in eager PyTorch (models/norms.py:
// `self._norm(x.float()).type_as(x) * self.weight`, `_norm` = `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) +
// eps)`): eight kernels through fp32 copies, 4w + 28 bytes per element against the fused 2w. Autograd keeps the
// fp32 input and the output (4 + w), and its backward runs fourteen (8w + 76 bytes): the weight's mul
// (grad * weight; grad * output summed over tokens), the casts back, x * rsqrt's two products and the sum for
// rsqrt, the mean's expanded gradient, pow's `grad * (2 * x.pow(1))` (PyTorch's pow_backward: a copy, a scale,
// a product) and the sum of x's two gradients.
void TransformerBuilder::Norm(const std::string& name, SymExpr rows) {
    SymExpr E = rows * h;
    if (!Eager() || m.norm != NormKind::rmsnorm) return B.Elementwise(name, E, norm_fpe, 1, E);
    SymExpr R = rows;
    B.Eager(name,
            {{"to_fp32", E, w + 4.0},
             {"pow", E, B.C(8)},
             {"mean", E, B.C(4)},
             {"add_eps", R, B.C(8)},
             {"rsqrt", R, B.C(8)},
             {"mul_rstd", E, B.C(8)},
             {"to_act", E, w + 4.0},
             {"mul_weight", E, 2.0 * w}},
            (w + 4.0) * E,
            {{"mul_weight.grad", E, 2.0 * w},
             {"mul_weight.wgrad", E, 3.0 * w},
             {"mul_weight.wgrad_sum", E, w},
             {"to_act.grad", E, w + 4.0},
             {"mul_rstd.grad", E, B.C(8)},
             {"mul_rstd.rgrad", E, B.C(12)},
             {"mul_rstd.rgrad_sum", E, B.C(4)},
             {"rsqrt.grad", R, B.C(12)},
             {"mean.grad", E, B.C(4)},
             {"pow.grad.copy", E, B.C(8)},
             {"pow.grad.scale", E, B.C(8)},
             {"pow.grad.mul", E, B.C(12)},
             {"accumulate", E, B.C(12)},
             {"to_fp32.grad", E, w + 4.0}});
}

// Rotary embedding of `q` query and `k` key elements: one kernel, or torchtitan's apply_rotary_emb in eager
// (`view_as_complex(x.float())`, a complex multiply by freqs_cis, `.type_as(x)`): three kernels each way per
// tensor, 2w + 16 bytes per element against the fused 2w forward and 3w backward.
void TransformerBuilder::Rotary(const std::string& name, SymExpr q, SymExpr k) {
    if (!Eager()) return B.Elementwise(name, q + k, 3, 1, B.Zero());
    B.Eager(name,
            {{"q.to_fp32", q, w + 4.0},
             {"k.to_fp32", k, w + 4.0},
             {"q.mul_freqs", q, B.C(8)},
             {"k.mul_freqs", k, B.C(8)},
             {"q.to_act", q, w + 4.0},
             {"k.to_act", k, w + 4.0}},
            B.Zero(),
            {{"q.to_act.grad", q, w + 4.0},
             {"q.mul_freqs.grad", q, B.C(8)},
             {"q.to_fp32.grad", q, w + 4.0},
             {"k.to_act.grad", k, w + 4.0},
             {"k.mul_freqs.grad", k, B.C(8)},
             {"k.to_fp32.grad", k, w + 4.0}});
}

// Eager grouped-query attention: torchtitan's repeat_kv copies K and V out to every local query head
// (expand + reshape) before SDPA, which keeps the copies; autograd sums them back. Fused kernels read the
// shared heads in place.
void TransformerBuilder::RepeatKv(const std::string& pre, SymExpr heads_elems, SymExpr kv_elems) {
    if (!Eager() || m.kv_heads >= m.heads || m.is_mla()) return;
    for (const char* t : {"k", "v"})
        B.Eager(pre + "attn.repeat_kv." + t, {{"copy", heads_elems, w + w * kv_elems / heads_elems}},
                (heads_elems + -1.0 * kv_elems) * w, {{"copy.grad", heads_elems, w + w * kv_elems / heads_elems}});
}

// SwiGLU over `elems` intermediate elements: one kernel, or eager `F.silu(w1(x)) * w3(x)`: silu, then the
// product (5w against 3w); autograd keeps silu's output beside both GEMM outputs, and its backward runs the
// product's two factors and silu's gradient (9w against 4w).
void TransformerBuilder::Swiglu(const std::string& name, SymExpr elems) {
    if (!Eager()) return B.Elementwise(name, elems, 4, 2, 2.0 * elems);
    B.Eager(name, {{"silu", elems, 2.0 * w}, {"mul", elems, 3.0 * w}}, 3.0 * elems * w,
            {{"mul.grad_silu", elems, 3.0 * w}, {"mul.grad_up", elems, 3.0 * w}, {"silu.grad", elems, 3.0 * w}});
}

void TransformerBuilder::Mlp(const std::string& name, SymExpr tokens, SymExpr ff, const SymExpr* saved_tokens,
                             const SymExpr* groups, Builder::Fp8Input first_input, MlpRecompute rc,
                             const SymExpr* width_or_h) {
    const SymExpr width = width_or_h ? *width_or_h : h;  // input and output width
    if (m.mlp == MlpKind::swiglu)
        B.Matmul(name + ".gate_up", tokens, 2.0 * ff, width, saved_tokens, groups, first_input, {ff, ff});  // w1, w3
    else B.Matmul(name + ".fc1", tokens, ff, width, saved_tokens, groups, first_input);
    B.DropInput(rc.input);
    const size_t act = B.blk->forward.size();
    {
        RerunScope rerun(B, rc.act);
        if (m.mlp == MlpKind::swiglu) Swiglu(name + ".swiglu", tokens * ff);
        else if (m.mlp == MlpKind::relu2) B.Elementwise(name + ".relu2", tokens * ff, 2, 1, tokens * ff);
        else B.Elementwise(name + ".gelu", tokens * ff, 8, 1, tokens * ff);
    }
    for (size_t i = act; i < B.blk->forward.size(); ++i) B.blk->forward[i].drop_all_modules |= rc.inside;
    // Megatron-Core's activation (bias_swiglu_impl and the like, megatron/core/transformer/mlp.py) writes 16
    // bits and its fc2, a TERowParallelLinear or TEGroupedLinear, quantizes that input: a cast. (Only TE's own
    // LayerNormMLP fuses the activation with the quantization, and Megatron-Core builds its MLP from separate
    // linears unless use_te_activation_func is set.)
    B.Matmul(name + ".fc2", tokens, width, ff, nullptr, groups, Builder::Fp8Input::cast);
    B.DropAll(rc.inside | rc.act);
}

}  // namespace sc::transformer
