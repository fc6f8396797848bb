// The per-layer decomposition follows Megatron-LM (Shoeybi et al. 2019; Narayanan et al. 2021) for
// tensor parallelism, Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
// Models") for sequence parallelism and saved activations, Megatron-Core's MoE layer for expert
// parallelism, and DeepSeek-V3 (arXiv 2412.19437) for multi-head latent attention.
//
// FLOP conventions: a GEMM of m x k by k x n is 2mnk; its backward is a data-gradient GEMM and a
// weight-gradient GEMM of the same size. Causal attention computes only the lower triangle of the
// score matrix including the diagonal: s(s+1)/2 query-key pairs per head and sequence, each costing
// 2*d_qk FLOPs for QK^T and 2*d_v for AV; its backward costs twice its forward (dQ, dK from dS; dV, dP).
#include "graph/transformer_graph.h"

#include <algorithm>
#include <optional>

#include "graph/op_builder.h"

namespace sc {

namespace {

using Builder = OpBuilder;

// The symbols and sizes every block uses, and one builder per block kind (as llama.cpp builds each
// architecture's graph from per-block functions): embedding, attention, dense MLP, MoE, head.
struct TransformerBuilder {
    const ModelConfig& m;
    const GraphOptions& options;
    Graph& g;
    Builder B;
    SymExpr b, s, h, a, kv, d, tp, cp, ep, w, V;
    SymExpr T;            // tokens of one microbatch on one rank
    SymExpr Tn;           // tokens seen by norms / residuals (SP splits them)
    SymExpr boundary;     // bytes of the hidden state one layer hands the next
    double norm_fpe;      // mean/var/normalize/scale(/shift): vector FLOPs per element
    SymExpr norm_params;  // weights of one norm
    int window = 0;       // keys a query of the layer being built sees; 0: full causal attention

    // Symbols are interned in the order the graph has always created them (pool ids stay as they were).
    TransformerBuilder(const ModelConfig& model, const GraphOptions& opts, Graph& graph)
        : m(model),
          options(opts),
          g(graph),
          B{graph, graph.pool, nullptr, {}, {}},
          b(B.S(Sym::b)),
          s(B.S(Sym::s)),
          h(B.S(Sym::h)),
          a(B.S(Sym::a)),
          kv(B.S(Sym::kv)),
          d(B.S(Sym::d)),
          tp(B.S(Sym::tp)),
          cp(B.S(Sym::cp)),
          ep(B.S(Sym::ep)),
          w(B.S(Sym::w)),
          V(B.S(Sym::V)),
          T(b * s / cp),
          Tn(options.sequence_parallel ? T / tp : T),
          boundary(Tn * h * w),
          norm_fpe(m.norm == NormKind::layernorm ? 8 : 5),
          norm_params(m.norm == NormKind::layernorm ? 2.0 * h : h) {}

    SymExpr S(Sym sym) { return B.S(sym); }

    // Forward ops made while it lives are re-run by recomputing `modules` too (nested scopes add up).
    struct RerunScope {
        Builder& b;
        uint8_t was;
        RerunScope(Builder& builder, uint8_t modules) : b(builder), was(builder.rerun_scope) {
            b.rerun_scope |= modules;
        }
        ~RerunScope() { b.rerun_scope = was; }
    };

    // Ops made while it lives belong to `module` too (PrecisionConfig::bf16_modules; nested scopes add up).
    struct ModuleScope {
        Builder& b;
        uint8_t was;
        ModuleScope(Builder& builder, uint8_t module) : b(builder), was(builder.module) { b.module |= module; }
        ~ModuleScope() { b.module = was; }
    };

    // The residual add after attention or the MLP over `elems` elements. With dropout (KernelChoices) it is
    // Megatron-LM's fused bias-dropout-add: one more FLOP per element (the mask's scale) and a one-byte mask
    // written and kept for the backward, which reads it.
    void Residual(const std::string& name, SymExpr elems) {
        if (!options.kernels.dropout) return B.Elementwise(name, elems, 1, 2, B.Zero());
        B.Custom(name, OpKind::elementwise, 2.0 * elems, 3.0 * elems * w + elems, elems, 4.0 * elems,
                 4.0 * elems * w + elems);
    }

    // An MLP's weights: its input and output width is h, or `width` (a latent MoE's experts).
    SymExpr MlpParams(SymExpr ff) const { return MlpParams(ff, h); }
    SymExpr MlpParams(SymExpr ff, SymExpr width) const { return (m.mlp == MlpKind::swiglu ? 3.0 : 2.0) * width * ff; }

    bool Eager() const { return !options.kernels.fused_elementwise; }

    // A norm over `rows` tokens of h: one kernel, or torchtitan's RMSNorm in eager PyTorch (models/norms.py:
    // `self._norm(x.float()).type_as(x) * self.weight`, `_norm` = `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) +
    // eps)`): eight kernels through fp32 copies, 4w + 28 bytes per element against the fused 2w. Autograd keeps the
    // fp32 input and the output (4 + w), and its backward runs fourteen (8w + 76 bytes): the weight's mul
    // (grad * weight; grad * output summed over tokens), the casts back, x * rsqrt's two products and the sum for
    // rsqrt, the mean's expanded gradient, pow's `grad * (2 * x.pow(1))` (PyTorch's pow_backward: a copy, a scale,
    // a product) and the sum of x's two gradients.
    void Norm(const std::string& name, SymExpr rows) {
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
    void Rotary(const std::string& name, SymExpr q, SymExpr k) {
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
    void RepeatKv(const std::string& pre, SymExpr heads_elems, SymExpr kv_elems) {
        if (!Eager() || m.kv_heads >= m.heads || m.is_mla()) return;
        for (const char* t : {"k", "v"})
            B.Eager(pre + "attn.repeat_kv." + t, {{"copy", heads_elems, w + w * kv_elems / heads_elems}},
                    (heads_elems + -1.0 * kv_elems) * w, {{"copy.grad", heads_elems, w + w * kv_elems / heads_elems}});
    }

    // SwiGLU over `elems` intermediate elements: one kernel, or eager `F.silu(w1(x)) * w3(x)`: silu, then the
    // product (5w against 3w); autograd keeps silu's output beside both GEMM outputs, and its backward runs the
    // product's two factors and silu's gradient (9w against 4w).
    void Swiglu(const std::string& name, SymExpr elems) {
        if (!Eager()) return B.Elementwise(name, elems, 4, 2, 2.0 * elems);
        B.Eager(name, {{"silu", elems, 2.0 * w}, {"mul", elems, 3.0 * w}}, 3.0 * elems * w,
                {{"mul.grad_silu", elems, 3.0 * w}, {"mul.grad_up", elems, 3.0 * w}, {"silu.grad", elems, 3.0 * w}});
    }

    // ---- embedding: vocab-parallel lookup (Megatron VocabParallelEmbedding) ----
    void Embedding() {
        B.Begin(BlockKind::embedding, B.C(0));
        B.Weight("embedding.word", V * h, V / tp * h);
        if (m.position == PositionKind::learned) B.Weight("embedding.position", s * h, s * h);
        // A pure copy, counted as one operation per element written (T*h): ASTRA-sim's roofline divides by
        // num_ops, and a compute node with none never finishes (README "Conventions").
        Op fwd = B.MakeOp("embedding.lookup", OpKind::gather, Pass::forward, T * h, (T * h + T) * w);
        g.blocks.back().forward.push_back(fwd);
        // Backward: scatter-add of the output gradient into the local vocabulary shard's gradient rows.
        B.pending.push_back(
            {B.MakeOp("embedding.scatter_add", OpKind::gather, Pass::backward, T * h, 3.0 * T * h * w)});
        if (m.position == PositionKind::learned) B.Elementwise("embedding.add_position", T * h, 1, 2, B.Zero());
        B.TpLeave("embedding", T * h);
        B.End();
    }

    // ---- attention of one layer: norm, Q/K/V projections (or MLA's), rotary, context-parallel K/V, the
    // causal core, output projection, residual ----
    void Attention(const std::string& pre) {
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
        B.CommBoth(pre + "attn.cp_kv", Group::cp, Collective::all_gather, Collective::reduce_scatter, kv_bytes);
        if (options.kernels.flash_attention) AttentionCore(pre, dqk, dv, kv_heads_eff, qkv_op);
        else MaterializedAttentionCore(pre, dqk, dv, kv_heads_eff, qkv_op);
        B.Weight(pre + "attn.out", a * dv * h + (m.bias ? h : B.C(0)), a / tp * dv * h + (m.bias ? h : B.C(0)));
        B.Matmul(pre + "attn.out", T, h, a / tp * dv, nullptr, nullptr, Builder::Fp8Input::cast);
        B.TpLeave(pre + "attn", T * h);
        Residual(pre + "attn.residual", Tn * h);
        B.Weight(pre + "attn.norm", norm_params, norm_params);
    }

    // Q and this rank's share of K and V, inputs of the attention core, are kept with the projection that produced
    // them (recomputing the core needs them). MLA's up-projections make them, so recomputing those (mla_up_proj)
    // drops them; the projection's own input stays.
    void KeepQkv(size_t qkv_op, SymExpr dqk, SymExpr dv, SymExpr kv_heads_eff) {
        SymExpr q = T * a / tp * dqk, k_ = b * s * kv_heads_eff / tp * dqk, v_ = b * s * kv_heads_eff / tp * dv;
        Op& qkv = g.blocks.back().forward[qkv_op];
        const SymExpr kept = (q + k_ / cp + v_ / cp) * w;
        qkv.saved_bytes = (SymExpr{&g.pool, qkv.saved_bytes} + kept).e;
        if (m.is_mla()) qkv.drop_part_modules |= kRecomputeMlaUpProj, qkv.part_bytes = kept.e;
    }

    // The fused causal attention core; adds what it keeps for the backward to the Q/K/V projection `qkv_op`.
    void AttentionCore(const std::string& pre, SymExpr dqk, SymExpr dv, SymExpr kv_heads_eff, size_t qkv_op) {
        // Causal: s(s+1)/2 pairs per head per sequence; CP ranks share them evenly (load-balanced chunks). A windowed
        // core (FlashAttention's window_size, FlexAttention's sliding-window mask) skips the keys outside the window:
        // W s - W(W-1)/2 pairs for a window of W < s keys (WindowedCausalPairs).
        SymExpr per_seq = window > 0 ? double(window) * s + (-double(window) * (window - 1) / 2.0) : s * (s + 1) / 2.0;
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
        B.pending.push_back({B.MakeOp(pre + "attn.core.grad", OpKind::attention, Pass::backward, 2.0 * flops,
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
    void MaterializedAttentionCore(const std::string& pre, SymExpr dqk, SymExpr dv, SymExpr kv_heads_eff,
                                   size_t qkv_op) {
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
            if (pass == Pass::forward)
                op.rerun_modules |= kRecomputeCoreAttn, op.drop_all_modules |= kRecomputeCoreAttn;
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

    // A (TP-split) MLP on `tokens` tokens with intermediate size `ff` (already divided as needed).
    // `saved_tokens`: rows of the first GEMM's input it keeps (the SP shard after a TP all-gather).
    // `groups`: the MLP is that many equal GEMMs side by side (a rank's local experts, each with tokens/groups
    // rows): one grouped GEMM whose weights are read once each.
    // `first_input`: how the first GEMM's input arrives under fp8 (after a norm: fused; routed tokens: cast).
    // `rc`: which of Megatron's recompute modules drop what it keeps (graph/recompute_modules.h).
    struct MlpRecompute {
        uint8_t input;   // drop the first GEMM's input (a norm's output, or tokens made inside the module)
        uint8_t inside;  // drop what the activation keeps and the second GEMM's input
        uint8_t act;     // re-run only the activation, dropping its output (the second GEMM's input)
    };
    void Mlp(const std::string& name, SymExpr tokens, SymExpr ff, const SymExpr* saved_tokens = nullptr,
             const SymExpr* groups = nullptr, Builder::Fp8Input first_input = Builder::Fp8Input::fused,
             MlpRecompute rc = {0, 0, 0}, const SymExpr* width_or_h = nullptr) {
        const SymExpr width = width_or_h ? *width_or_h : h;  // input and output width
        if (m.mlp == MlpKind::swiglu)
            B.Matmul(name + ".gate_up", tokens, 2.0 * ff, width, saved_tokens, groups, first_input,
                     {ff, ff});  // w1, w3
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

    // ---- the dense MLP of one layer: norm, TP-split MLP, residual ----
    void DenseMlp(const std::string& pre) {
        ModuleScope module(B, kBf16Mlp);
        SymExpr f = S(Sym::f);
        {
            RerunScope layernorm(B, kRecomputeLayernorm);
            Norm(pre + "mlp.norm", Tn);
        }
        {
            RerunScope mlp(B, kRecomputeMlp);  // the module after its norm, its TP collectives included
            B.TpEnter(pre + "mlp", T * h);
            Mlp(pre + "mlp", T, f / tp, &Tn, nullptr, Builder::Fp8Input::fused,
                {kRecomputeLayernorm, kRecomputeMlp, 0});
            B.TpLeave(pre + "mlp", T * h);
        }
        Residual(pre + "mlp.residual", Tn * h);
        SymExpr bias = m.bias ? f + h : B.C(0);
        SymExpr bias_rank = m.bias ? f / tp + h : B.C(0);
        B.Weight(pre + "mlp", MlpParams(S(Sym::f)) + bias, MlpParams(S(Sym::f)) / tp + bias_rank);
        B.Weight(pre + "mlp.norm", norm_params, norm_params);
    }

    // ---- the MoE of one layer: router, dispatch, experts, combine, shared experts ----
    void Moe(const std::string& pre) {
        // Megatron-Core MoE: with TP the layer runs sequence-parallel, so each rank routes its own
        // T/tp tokens (validated: MoE with tp>1 requires sequence_parallel).
        SymExpr experts = S(Sym::E), k = S(Sym::k), fe = S(Sym::fe), cf = S(Sym::cf);
        SymExpr Tm = T / tp;
        {
            RerunScope layernorm(B, kRecomputeLayernorm);
            Norm(pre + "moe.norm", Tm);
        }
        const uint8_t outer = B.rerun_scope;
        B.rerun_scope |= kRecomputeMoe;  // the layer after its norm, its all-to-alls included, to the residual
        B.Weight(pre + "moe.router", h * experts, h * experts);
        B.Matmul(pre + "moe.router", Tm, experts, h, nullptr, nullptr, Builder::Fp8Input::high_precision);
        B.DropInput(kRecomputeLayernorm);
        B.Elementwise(pre + "moe.topk", Tm * experts, 3, 1, Tm * k);
        // A latent MoE projects its tokens h -> d before the dispatch (Megatron-Core MoELayer: fc1_latent_proj, a
        // TELinear in parallel_mode "duplicated", on this rank's tokens); everything routed below is d wide.
        SymExpr d = S(Sym::dm);
        const bool latent = m.moe.latent > 0;
        if (latent) {
            ModuleScope module(B, kBf16Latent);
            B.Weight(pre + "moe.fc1_latent_proj", h * d, h * d);
            B.input_kept_already = true;  // the normed tokens, which the router keeps
            B.Matmul(pre + "moe.fc1_latent_proj", Tm, d, h, nullptr, nullptr, Builder::Fp8Input::cast);
        }
        B.DropAll(kRecomputeMoe);
        // Each rank sends every (token, expert) pair to the expert's owner; balanced routing gives every
        // EP rank Tm*k pairs to compute, times the capacity factor when experts are padded to capacity, or times
        // the most loaded rank's share under dropless routing (MoeRankLoad): the all-to-all and the expert GEMMs
        // wait for that rank, and the graph, which describes every rank alike, describes it.
        SymExpr routed = Tm * k * cf;
        SymExpr local_experts = experts / ep;
        // Megatron-Core's all-to-all token dispatcher (megatron/core/transformer/moe/token_dispatcher.py,
        // MoEAlltoAllTokenDispatcher): `permute` copies each token once per chosen expert into expert order
        // before the all-to-all, and `sort_chunks_by_idxs` regroups the received tokens by local expert after
        // it (and back before the return all-to-all). Memory passes over every routed token: read and write
        // (one op per element moved, the convention of the embedding lookup).
        B.Elementwise(pre + "moe.permute", routed * d, 1, 1, B.Zero());
        // What the dispatch and combine move: top_k copies of each token (xr = k), or with DeepEP one per EP rank
        // its experts are on (xr, graph/moe_spread.h); the load factor cf applies to either.
        SymExpr sent = Tm * S(Sym::xr) * cf;
        // Token-to-expert bytes: FP8 with its per-128 scales under KernelChoices::fp8_dispatch (the dispatch's
        // forward, the combine's gradient), else the activation precision; expert-to-token stays at the latter.
        SymExpr to_experts = options.kernels.fp8_dispatch ? sent * d * (1.0 + 4.0 / 128) : sent * d * w;
        B.CommBoth(pre + "moe.dispatch", Group::ep, Collective::all_to_all, Collective::all_to_all, to_experts,
                   sent * d * w);
        B.Elementwise(pre + "moe.sort_chunks", routed * d, 1, 1, B.Zero());
        // The experts' input is made inside the layer; moe_act re-runs only their activation.
        const MlpRecompute expert_rc{kRecomputeMoe, kRecomputeMoe, kRecomputeMoeAct};
        {  // the routed experts (PrecisionConfig::bf16_modules' "experts")
            ModuleScope module(B, kBf16Experts);
            if (options.expert_tp) {
                // Expert tensor parallelism (Megatron-Core expert_tensor_parallel_size = tp): each expert's
                // intermediate is split over the TP group, which first gathers all its routed tokens and
                // afterwards reduce-scatters the partial outputs back.
                SymExpr all_routed = routed * tp;
                B.CommBoth(pre + "moe.etp_gather", Group::tp, Collective::all_gather, Collective::reduce_scatter,
                           all_routed * d * w);
                Mlp(pre + "moe.experts", all_routed, fe / tp, nullptr, &local_experts, Builder::Fp8Input::cast,
                    expert_rc, &d);
                B.CommBoth(pre + "moe.etp_scatter", Group::tp, Collective::reduce_scatter, Collective::all_gather,
                           all_routed * d * w);
                B.Weight(pre + "moe.experts", experts * MlpParams(fe, d), experts / ep * MlpParams(fe, d) / tp,
                         /*expert=*/true);
            } else {
                Mlp(pre + "moe.experts", routed, fe, nullptr, &local_experts, Builder::Fp8Input::cast, expert_rc, &d);
                B.Weight(pre + "moe.experts", experts * MlpParams(fe, d), experts / ep * MlpParams(fe, d),
                         /*expert=*/true);
            }
        }
        B.Elementwise(pre + "moe.unsort_chunks", routed * d, 1, 1, B.Zero());
        B.CommBoth(pre + "moe.combine", Group::ep, Collective::all_to_all, Collective::all_to_all, sent * d * w,
                   to_experts);
        if (m.moe.shared_experts > 0) {
            SymExpr ffs = S(Sym::se) * fe;
            RerunScope shared(B, kRecomputeSharedExperts);
            ModuleScope module(B, kBf16SharedExperts);
            B.input_kept_already = true;  // the normed tokens, which the router keeps
            Mlp(pre + "moe.shared", Tm, ffs, nullptr, nullptr, Builder::Fp8Input::fused,
                {kRecomputeLayernorm, kRecomputeSharedExperts | kRecomputeMoe, 0});
            B.Weight(pre + "moe.shared", MlpParams(ffs), MlpParams(ffs));
        }
        B.Elementwise(pre + "moe.weighted_sum", Tm * k * d, 2, 2, B.Zero());
        if (latent) {  // fc2_latent_proj, duplicated as the first: the combined tokens back to h
            ModuleScope module(B, kBf16Latent);
            B.Weight(pre + "moe.fc2_latent_proj", d * h, d * h);
            B.Matmul(pre + "moe.fc2_latent_proj", Tm, h, d, nullptr, nullptr, Builder::Fp8Input::cast);
        }
        B.rerun_scope = outer;
        Residual(pre + "moe.residual", Tm * h);
        B.Weight(pre + "moe.norm", norm_params, norm_params);
    }

    // ---- the Mamba-2 mixer of a hybrid model's M layer (Megatron-Core MambaLayer and MambaMixer, its TP split by
    // heads and groups): norm; the input projection h -> z, x, B, C, dt (column-parallel, 2 d_inner + 2 groups
    // state + heads); the depthwise causal convolution and SiLU over x, B, C; the chunked state-space scan (SSD,
    // Dao & Gu 2024); the gated RMSNorm norm(y) * silu(z); the output projection d_inner -> h (row-parallel);
    // residual. The scan's FLOPs are Megatron-Bridge's convention, 7 d_inner state a token (training/utils/
    // flop_utils.py mamba_layer_flops, "scan"); its kernel is timed as an attention kernel, the fused kernel the
    // Mamba-2 paper measures SSD against (FlashAttention-2). What it keeps is what Megatron-Core's memory-efficient
    // path keeps (use_mamba_mem_eff_path, its default: mamba_ssm's mamba_split_conv1d_scan_combined saves the input
    // projection's whole output zxbcdt, z included, and re-runs the convolution in its backward): zxbcdt, the scan's
    // output and its fp32 dt and dA; the gated norm reads y and z from those.
    void Mamba(const std::string& pre) {
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
        B.Custom(pre + "mamba.ssd_scan", OpKind::attention, scan_flops, (T * conv + y) * w + T * heads / tp * w,
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

    // ---- a hybrid model's one-symbol layers (ModelConfig::hybrid), each its own norm and residual ----
    void HybridLayer(BlockKind kind) {
        B.Begin(kind, boundary);
        window = 0;
        const char symbol = kind == BlockKind::mamba_layer       ? 'M'
                            : kind == BlockKind::attention_layer ? '*'
                            : kind == BlockKind::mlp_layer       ? '-'
                                                                 : 'E';
        HybridSublayer("", symbol);
        B.End();
    }
    void HybridSublayer(const std::string& pre, char symbol) {
        switch (symbol) {
            case 'M': Mamba(pre); break;
            case '*': Attention(pre); break;
            case '-': DenseMlp(pre); break;
            default: Moe(pre); break;
        }
    }

    // ---- the layer blocks: attention then a dense MLP or an MoE ----
    // A window kind is the same layer with a windowed attention core (ModelConfig::window).
    void DenseLayer(bool windowed) {
        B.Begin(windowed ? BlockKind::dense_window_layer : BlockKind::dense_layer, boundary);
        window = windowed ? m.window.size : 0;
        Attention("");
        DenseMlp("");
        B.End();
    }
    void MoeLayer(bool windowed) {
        B.Begin(windowed ? BlockKind::moe_window_layer : BlockKind::moe_layer, boundary);
        window = windowed ? m.window.size : 0;
        Attention("");
        Moe("");
        B.End();
    }

    // A BF16 twin of every layer kind built so far (Block::bf16), for the layers an fp8 or fp4 model keeps in BF16.
    void Bf16Twins() {
        std::vector<BlockKind> kinds;
        for (const Block& blk : g.blocks)
            if (IsLayer(blk.kind)) kinds.push_back(blk.kind);
        B.bf16_twin = true;
        for (BlockKind k : kinds) switch (k) {
                case BlockKind::dense_layer: DenseLayer(false); break;
                case BlockKind::dense_window_layer: DenseLayer(true); break;
                case BlockKind::moe_layer: MoeLayer(false); break;
                case BlockKind::moe_window_layer: MoeLayer(true); break;
                default: HybridLayer(k); break;
            }
        B.bf16_twin = false;
    }

    // ---- head: final norm, vocab-parallel LM head and cross-entropy (Megatron), then the MTP modules ----
    void Head() {
        B.Begin(BlockKind::head, boundary);
        Norm("head.norm", Tn);
        B.Weight("head.norm", norm_params, norm_params);
        LogitsGemm("head");
        if (m.tied_embeddings)  // counted once, in the embedding
            B.Weight("head.logits (tied to embedding)", B.C(0), V / tp * h, false, /*tied=*/true);
        else B.Weight("head.logits", V * h, V / tp * h);
        CrossEntropy("head");
        // The MTP modules look tokens up in the embedding's table: on another pipeline stage its copy here, kept
        // in step by the embedding group's gradient all-reduce (Megatron-Core GPTModel builds an embedding on the
        // stage with mtp_process). A tied head's copy above already is that table.
        if (m.mtp_layers > 0 && !m.tied_embeddings)
            B.Weight("mtp.embedding (copy of the embedding)", B.C(0), V / tp * h, false, /*tied=*/true);
        for (int k = 1; k <= m.mtp_layers; ++k) {
            // Repeated: every depth runs the first depth's module, whose weights are counted once.
            B.weights_held_elsewhere = m.mtp_repeated && k > 1;
            MtpModule("mtp" + std::to_string(k) + ".");
        }
        B.weights_held_elsewhere = false;
        B.End();
    }

    // The vocab-parallel LM head on this rank's tokens. Its weight is the model's output layer (the caller's Weight
    // entry): the MTP modules share it.
    void LogitsGemm(const std::string& pre) {
        B.TpEnter(pre, T * h);
        B.Matmul(pre + ".logits", T, V / tp, h, &Tn, nullptr, Builder::Fp8Input::high_precision);
    }
    void CrossEntropy(const std::string& pre) {
        // Cross-entropy over the local vocabulary shard in fp32 (about 5 FLOPs per logit), as Megatron-Core's
        // vocab-parallel cross entropy runs it (tensor_parallel/cross_entropy.py, unfused), one pass per line:
        // forward .float() (w in, 4 out), max (4), in-place subtract of the max (4 + 4), exp in place (4 + 4),
        // sum (4), in-place divide into the softmax it keeps for backward (4 + 4): w + 36 bytes per logit;
        // backward the in-place scale by the loss gradient (4 + 4) and the cast back to the LM head's width
        // (4 + w): w + 12. Two all-reduces of one fp32 per token (max and sum of exponentials) across the TP group.
        const SymExpr logits = T * V / tp;
        B.Custom(pre + ".cross_entropy", OpKind::elementwise, 5 * logits, (w + 36.0) * logits, 4.0 * logits,
                 10 * logits, (w + 12.0) * logits);
        g.blocks.back().forward.push_back(
            B.Comm(pre + ".cross_entropy.tp_all_reduce", Pass::forward, Group::tp, Collective::all_reduce, 8.0 * T));
        B.pending.push_back({});
    }

    // One multi-token prediction module (DeepSeek-V3 report Sec. 2.2, as Megatron-Core's MultiTokenPredictionLayer
    // runs it): the next token's embedding (a vocab-parallel lookup of the shared table) and the previous depth's
    // hidden state, each RMS-normed, concatenated and projected 2h -> h by a column-parallel linear whose output is
    // gathered over the TP group; one transformer layer of the main model's last layer kind (Megatron-Core builds
    // the MTP block from the last layer's spec) with full attention; its own final norm; the shared output head
    // and a cross-entropy of its own.
    void MtpModule(const std::string& pre) {
        ModuleScope module(B, kBf16Mtp);
        Op fwd = B.MakeOp(pre + "embedding.lookup", OpKind::gather, Pass::forward, T * h, (T * h + T) * w);
        g.blocks.back().forward.push_back(fwd);
        B.pending.push_back(
            {B.MakeOp(pre + "embedding.scatter_add", OpKind::gather, Pass::backward, T * h, 3.0 * T * h * w)});
        B.TpLeave(pre + "embedding", T * h);
        // Checkpointed whole under full recomputation, from the norms to the module's final norm: it keeps its two
        // inputs, the embedding and the previous depth's hidden state (tensor_parallel.checkpoint's arguments).
        B.mtp_rerun_scope = true;
        B.blk->mtp_rerun_inputs = (SymExpr{&g.pool, B.blk->mtp_rerun_inputs} + 2.0 * Tn * h * w).e;
        Norm(pre + "enorm", Tn);
        Norm(pre + "hnorm", Tn);
        B.Weight(pre + "enorm", norm_params, norm_params);
        B.Weight(pre + "hnorm", norm_params, norm_params);
        B.TpEnter(pre + "eh_proj", 2.0 * T * h);
        B.Weight(pre + "eh_proj", 2.0 * h * h, 2.0 * h * h / tp);
        B.Matmul(pre + "eh_proj", T, h / tp, 2.0 * h, &Tn, nullptr, Builder::Fp8Input::cast);
        B.CommBoth(pre + "eh_proj.tp_gather", Group::tp, Collective::all_gather, Collective::reduce_scatter, T * h * w);
        window = 0;
        if (m.is_hybrid()) {  // its own pattern of hybrid layers (ModelConfig::mtp_pattern)
            for (size_t i = 0; i < m.mtp_pattern.size(); ++i)
                HybridSublayer(pre + std::to_string(i) + ".", m.mtp_pattern[i]);
        } else {
            Attention(pre);
            if (m.moe_layer(m.layers - 1)) Moe(pre);
            else DenseMlp(pre);
        }
        Norm(pre + "head.norm", Tn);
        B.mtp_rerun_scope = false;
        B.Weight(pre + "head.norm", norm_params, norm_params);
        LogitsGemm(pre + "head");
        CrossEntropy(pre + "head");
    }
};

}  // namespace

Graph BuildTransformerGraph(const ModelConfig& m, const GraphOptions& options) {
    Graph g;
    g.sequence_parallel = options.sequence_parallel;
    g.kernels = options.kernels;
    const ModelConfig::LayerKinds kinds = m.graph_layer_kinds(0, m.layers);
    g.dense_layers = kinds.dense;
    g.moe_layers = kinds.moe;
    g.dense_window_layers = kinds.dense_window;
    g.moe_window_layers = kinds.moe_window;
    TransformerBuilder builder(m, options, g);
    builder.B.bf16_modules = BytesOf(m.precision.compute) < 2 ? m.precision.bf16_modules : 0;
    builder.Embedding();
    if (m.is_hybrid()) {
        g.mamba_layers = kinds.mamba, g.attention_layers = kinds.attention;
        g.mlp_layers = kinds.mlp, g.moe_mlp_layers = kinds.moe_mlp;
        g.dense_layers = g.moe_layers = 0;
        builder.Head();
        const std::pair<BlockKind, int> hybrid[] = {{BlockKind::mamba_layer, kinds.mamba},
                                                    {BlockKind::attention_layer, kinds.attention},
                                                    {BlockKind::mlp_layer, kinds.mlp},
                                                    {BlockKind::moe_mlp_layer, kinds.moe_mlp}};
        for (const auto& [kind, n] : hybrid)
            if (n > 0) builder.HybridLayer(kind);
        if (m.has_bf16_layers()) builder.Bf16Twins();
        return g;
    }
    builder.DenseLayer(false);
    if (m.is_moe()) builder.MoeLayer(false);
    builder.Head();
    // After the head, so the blocks of a model without a window keep their order and every expression its id.
    if (m.graph_windowed_layers(0, m.layers) > 0) {
        builder.DenseLayer(true);
        if (m.is_moe()) builder.MoeLayer(true);
    }
    // Last, so the blocks and expressions of a model without BF16 layers stay as they were.
    if (m.has_bf16_layers()) builder.Bf16Twins();
    return g;
}

}  // namespace sc
