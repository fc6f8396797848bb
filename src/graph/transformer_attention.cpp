// Attention of one transformer layer (TransformerBuilder, transformer_builder.h): norm, Q/K/V projections or MLA's
// (DeepSeek-V3, arXiv 2412.19437), rotary, context-parallel K/V, the fused or materialized causal core, output
// projection and residual.
#include <string>

#include "graph/transformer_builder.h"

namespace sc::transformer {

// ---- attention of one layer: norm, Q/K/V projections (or MLA's), rotary, context-parallel K/V, the
// causal core, output projection, residual ----
void TransformerBuilder::Attention(const std::string& pre) {
    ModuleScope module(B, kBf16Attention);
    {
        RerunScope layernorm(B, kRecomputeLayernorm);
        Norm(pre + "attn.norm", Tn);
    }
    B.TpEnter(pre + "attn", T * h);
    SymExpr dqk = d, dv = d;
    size_t qkv_op = 0;  // the forward op producing Q, K, V (they are kept: selective recomputation needs them)
    if (m.is_mla()) {
        // DeepSeek-V3 MLA: low-rank compressed q and kv; the down-projections are replicated across
        // TP ranks (they are small), the up-projections and the output are split by heads.
        SymExpr ql = S(Sym::ql), kvl = S(Sym::kvl), dn = S(Sym::dn), dr = S(Sym::dr);
        dqk = dn + dr;
        dv = S(Sym::dv);
        if (m.mla.q_lora_rank > 0) {
            B.Weight(pre + "attn.q_down", h * ql, h * ql);
            B.Weight(pre + "attn.q_norm", ql, ql);
            B.Weight(pre + "attn.q_up", ql * a * dqk, ql * a / tp * dqk);
            B.Matmul(pre + "attn.q_down", T, ql, h, &Tn);
            B.DropInput(kRecomputeLayernorm);
            B.Elementwise(pre + "attn.q_norm", T * ql, 5, 1, T * ql);
            RerunScope up(B, kRecomputeMlaUpProj);
            B.Matmul(pre + "attn.q_up", T, a / tp * dqk, ql);
        } else {
            B.Weight(pre + "attn.q", h * a * dqk, h * a / tp * dqk);
            B.Matmul(pre + "attn.q", T, a / tp * dqk, h, &Tn);
            B.DropInput(kRecomputeLayernorm);
        }
        B.Weight(pre + "attn.kv_down", h * (kvl + dr), h * (kvl + dr));
        B.Weight(pre + "attn.kv_norm", kvl, kvl);
        B.Weight(pre + "attn.kv_up", kvl * a * (dn + dv), kvl * a / tp * (dn + dv));
        B.input_kept_already = true;  // the normed hidden state, which the q projection keeps
        B.Matmul(pre + "attn.kv_down", T, kvl + dr, h, &Tn);
        B.DropInput(kRecomputeLayernorm);
        B.Elementwise(pre + "attn.kv_norm", T * kvl, 5, 1, T * kvl);
        {
            RerunScope up(B, kRecomputeMlaUpProj);
            B.Matmul(pre + "attn.kv_up", T, a / tp * (dn + dv), kvl);
        }
        qkv_op = g.blocks.back().forward.size() - 1;
    } else {
        SymExpr qkv_out = (a + 2.0 * kv) * d;
        B.Weight(pre + "attn.qkv", h * qkv_out + (m.bias ? qkv_out : B.C(0)),
                 h * qkv_out / tp + (m.bias ? qkv_out / tp : B.C(0)));
        B.Matmul(pre + "attn.qkv", T, qkv_out / tp, h, &Tn, nullptr, Builder::Fp8Input::fused,
                 {a * d / tp, kv * d / tp, kv * d / tp});  // wq, wk, wv
        B.DropInput(kRecomputeLayernorm);
        qkv_op = g.blocks.back().forward.size() - 1;
    }
    if (m.position == PositionKind::rotary) {
        RerunScope up(B, m.is_mla() ? kRecomputeMlaUpProj : 0);  // MLA's "up projection and RoPE applying"
        if (m.is_mla()) B.Elementwise(pre + "attn.rotary", T * (a + kv) / tp * S(Sym::dr), 3, 1, B.Zero());
        else Rotary(pre + "attn.rotary", T * a / tp * d, T * kv / tp * d);
    }
    if (!m.is_mla()) RepeatKv(pre, T * a / tp * d, T * kv / tp * d);
    // Context parallelism: every rank needs all keys and values of the sequence (ring attention
    // moves the same bytes as an all-gather; the backward returns dK, dV).
    SymExpr kv_heads_eff = m.is_mla() ? a : kv;
    SymExpr kv_bytes = b * s * kv_heads_eff / tp * (dqk + dv) * w;
    if (options.kernels.flash_attention) {
        // A fused core runs the ring itself (Transformer Engine's AttnFuncWithCP): each step's K/V, and in the
        // backward its dK/dV, travel beside the attention of the step before, so the exchange runs beside the core
        // (async) and only what the core does not cover is exposed. The backward's exchange is issued with the core's
        // backward, whose steps produce it.
        Op fwd = B.Comm(pre + "attn.cp_kv", Pass::forward, Group::cp, Collective::all_gather, kv_bytes);
        fwd.async = true;
        g.blocks.back().forward.push_back(fwd);
        Op bwd = B.Comm(pre + "attn.cp_kv.grad", Pass::backward, Group::cp, Collective::reduce_scatter, kv_bytes);
        bwd.async = true;
        AttentionCore(pre, dqk, dv, kv_heads_eff, qkv_op, bwd);
    } else {
        B.CommBoth(pre + "attn.cp_kv", Group::cp, Collective::all_gather, Collective::reduce_scatter, kv_bytes);
        MaterializedAttentionCore(pre, dqk, dv, kv_heads_eff, qkv_op);
    }
    B.Weight(pre + "attn.out", a * dv * h + (m.bias ? h : B.C(0)), a / tp * dv * h + (m.bias ? h : B.C(0)));
    B.Matmul(pre + "attn.out", T, h, a / tp * dv, nullptr, nullptr, Builder::Fp8Input::cast);
    B.TpLeave(pre + "attn", T * h);
    Residual(pre + "attn.residual", Tn * h);
    B.Weight(pre + "attn.norm", norm_params, norm_params);
}

// Q and this rank's share of K and V, inputs of the attention core, are kept with the projection that produced
// them (recomputing the core needs them). MLA's up-projections make them, so recomputing those (mla_up_proj)
// drops them; the projection's own input stays.
void TransformerBuilder::KeepQkv(size_t qkv_op, SymExpr dqk, SymExpr dv, SymExpr kv_heads_eff) {
    SymExpr q = T * a / tp * dqk, k_ = b * s * kv_heads_eff / tp * dqk, v_ = b * s * kv_heads_eff / tp * dv;
    Op& qkv = g.blocks.back().forward[qkv_op];
    const SymExpr kept = (q + k_ / cp + v_ / cp) * w;
    qkv.saved_bytes = (SymExpr{&g.pool, qkv.saved_bytes} + kept).e;
    if (m.is_mla()) qkv.drop_part_modules |= kRecomputeMlaUpProj, qkv.part_bytes = kept.e;
}

// The fused causal attention core; adds what it keeps for the backward to the Q/K/V projection `qkv_op`.
void TransformerBuilder::AttentionCore(const std::string& pre, SymExpr dqk, SymExpr dv, SymExpr kv_heads_eff,
                                       size_t qkv_op, const Op& cp_grad) {
    // Causal: s(s+1)/2 pairs per head per sequence; CP ranks share them evenly (load-balanced chunks). A windowed
    // core (FlashAttention's window_size, FlexAttention's sliding-window mask) skips the keys outside the window:
    // W s - W(W-1)/2 pairs for a window of W < s keys (WindowedCausalPairs). A chunked layer (Llama 4's local
    // attention) sees its chunk of C: s(C+1)/2 + r(r-C)/2 pairs with r = s mod C (LocalCausalPairs; r from the
    // model's sequence, which decides that a layer is windowed at all).
    SymExpr per_seq = s * (s + 1) / 2.0;
    if (window > 0 && m.window.chunked) {
        const double C = window, r = m.seq % window;
        per_seq = (C + 1) / 2.0 * s + r * (r - C) / 2.0;
    } else if (window > 0) {
        per_seq = double(window) * s + (-double(window) * (window - 1) / 2.0);
    }
    SymExpr pairs = b * a / tp * per_seq / cp;
    SymExpr flops = 2.0 * pairs * (dqk + dv);
    SymExpr q = T * a / tp * dqk, k_ = b * s * kv_heads_eff / tp * dqk, v_ = b * s * kv_heads_eff / tp * dv;
    SymExpr o = T * a / tp * dv;
    Op fwd = B.MakeOp(pre + "attn.core", OpKind::attention, Pass::forward, flops, (q + k_ + v_ + o) * w);
    // Saved for backward: Q, K, V (KeepQkv), O (the output projection's saved input, counted there) and one
    // fp32 log-sum-exp per query row, what selective recomputation drops. Under fp8 the projection keeps its
    // own fp8 copy of O, so the core's 16-bit O (its backward reads it) is counted here too.
    KeepQkv(qkv_op, dqk, dv, kv_heads_eff);
    fwd.saved_bytes = (T * a / tp * 4.0 + B.Q8() * o * w).e;
    fwd.rerun_modules |= kRecomputeCoreAttn;
    fwd.drop_all_modules |= kRecomputeCoreAttn;
    fwd.sac_rerun = B.Zero().e;  // SDPA is on op-level checkpointing's save list: its output and log-sum-exp
    fwd.sac_saved_bytes = (o * w + T * a / tp * 4.0).e;
    g.blocks.back().forward.push_back(fwd);
    B.pending.push_back({cp_grad, B.MakeOp(pre + "attn.core.grad", OpKind::attention, Pass::backward, 2.0 * flops,
                                           (2.0 * (q + k_ + v_) + 2.0 * o) * w)});
}

// Megatron-LM's unfused core attention (KernelChoices::flash_attention = false; CoreAttention with
// FusedScaleMaskSoftmax, as Narayanan et al. 2021 and Korthikanti et al. 2022 ran it): batched GEMMs over every
// query-key pair (the causal mask is applied by the softmax, nothing is skipped; K and V expanded to the query
// heads), the softmax and dropout as passes over the s/cp x s scores in HBM. Per score element the GEMMs read
// or write the scores once each:
//   forward:  QK^T writes S (w); softmax reads S, writes P (2w); dropout reads P, writes P' and a one-byte
//             mask (2w + 1); P'V reads P' (w)                                      -> 4w (+ 2w + 1 dropout)
//   backward: dO V^T writes dP' (w); P'^T dO reads P' (w); dropout-backward reads dP' and the mask, writes dP
//             (2w + 1); softmax-backward reads dP and P, writes dS (3w); dS K and dS^T Q read dS (2w)
//                                                                                 -> 7w (+ 2w + 1 dropout)
// Kept for the backward (Korthikanti et al. 2022 Sec. 4.1): the softmax output (2 a s^2 b), with dropout its
// mask and output (a s^2 b + 2 a s^2 b); Q, K, V with the projection that produced them. Every op here is what
// selective recomputation drops. The GEMMs run in 16 bits (high_precision) as attention does under fp8.
void TransformerBuilder::MaterializedAttentionCore(const std::string& pre, SymExpr dqk, SymExpr dv,
                                                   SymExpr kv_heads_eff, size_t qkv_op) {
    const bool dropout = options.kernels.dropout;
    SymExpr heads = b * a / tp;  // batched GEMMs: one per sequence and local head
    SymExpr scores = heads * (s / cp) * s;
    SymExpr S_ = scores * w;  // one pass over the scores
    SymExpr q = heads * (s / cp) * dqk * w, k_ = heads * s * dqk * w, v_ = heads * s * dv * w;
    SymExpr o = heads * (s / cp) * dv * w;
    SymExpr qk = 2.0 * scores * dqk, pv = 2.0 * scores * dv;
    auto gemm = [&](const std::string& name, Pass pass, SymExpr flops, SymExpr bytes) {
        Op op = B.MakeOp(pre + name, OpKind::matmul, pass, flops, bytes);
        op.high_precision = true;
        if (pass == Pass::forward) op.rerun_modules |= kRecomputeCoreAttn, op.drop_all_modules |= kRecomputeCoreAttn;
        return op;
    };
    auto pass = [&](const std::string& name, Pass ps, SymExpr flops, SymExpr bytes, SymExpr saved) {
        Op op = B.MakeOp(pre + name, OpKind::elementwise, ps, flops, bytes);
        op.saved_bytes = saved.e;
        if (ps == Pass::forward) op.rerun_modules |= kRecomputeCoreAttn, op.drop_all_modules |= kRecomputeCoreAttn;
        return op;
    };
    KeepQkv(qkv_op, dqk, dv, kv_heads_eff);
    std::vector<Op>& fwd = g.blocks.back().forward;
    fwd.push_back(gemm("attn.scores", Pass::forward, qk, q + k_ + S_));
    fwd.push_back(pass("attn.softmax", Pass::forward, 5.0 * scores, 2.0 * S_, S_));
    if (dropout) fwd.push_back(pass("attn.dropout", Pass::forward, 2.0 * scores, 2.0 * S_ + scores, S_ + scores));
    fwd.push_back(gemm("attn.context", Pass::forward, pv, S_ + v_ + o));
    std::vector<Op> back;
    back.push_back(gemm("attn.context.dgrad", Pass::backward, pv, o + v_ + S_));
    back.push_back(gemm("attn.context.dv", Pass::backward, pv, S_ + o + v_));
    if (dropout) back.push_back(pass("attn.dropout.grad", Pass::backward, scores, 2.0 * S_ + scores, B.Zero()));
    back.push_back(pass("attn.softmax.grad", Pass::backward, 4.0 * scores, 3.0 * S_, B.Zero()));
    back.push_back(gemm("attn.scores.dq", Pass::backward, qk, S_ + k_ + q));
    back.push_back(gemm("attn.scores.dk", Pass::backward, qk, S_ + q + k_));
    B.pending.push_back(std::move(back));
}

}  // namespace sc::transformer
