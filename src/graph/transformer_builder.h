// The builder behind BuildTransformerGraph (transformer_graph.h), internal to src/graph: the symbols and sizes
// every block uses, and one function per block kind, as llama.cpp builds each architecture's graph from per-block
// functions. The blocks live by kind: transformer_graph.cpp (embedding, layers, head, MTP, and the entry point),
// transformer_attention.cpp, transformer_ffn.cpp (dense MLP, MoE), transformer_mamba.cpp, and the per-op pieces
// they share in transformer_ops.cpp. Sources and FLOP conventions: transformer_graph.cpp's opening comment.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/op_builder.h"
#include "graph/transformer_graph.h"

namespace sc::transformer {

using Builder = OpBuilder;

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

    // ---- the per-op pieces every block uses (transformer_ops.cpp) ----
    void Residual(const std::string& name, SymExpr elems);

    // An MLP's weights: its input and output width is h, or `width` (a latent MoE's experts).
    SymExpr MlpParams(SymExpr ff) const { return MlpParams(ff, h); }
    SymExpr MlpParams(SymExpr ff, SymExpr width) const { return (m.mlp == MlpKind::swiglu ? 3.0 : 2.0) * width * ff; }

    bool Eager() const { return !options.kernels.fused_elementwise; }

    void Norm(const std::string& name, SymExpr rows);
    void Rotary(const std::string& name, SymExpr q, SymExpr k);
    void RepeatKv(const std::string& pre, SymExpr heads_elems, SymExpr kv_elems);
    void Swiglu(const std::string& name, SymExpr elems);

    // ---- attention of one layer (transformer_attention.cpp) ----
    void Attention(const std::string& pre);
    void KeepQkv(size_t qkv_op, SymExpr dqk, SymExpr dv, SymExpr kv_heads_eff);
    // `cp_grad`: the ring's backward exchange, issued beside the core's backward (async).
    void AttentionCore(const std::string& pre, SymExpr dqk, SymExpr dv, SymExpr kv_heads_eff, size_t qkv_op,
                       const Op& cp_grad);
    void MaterializedAttentionCore(const std::string& pre, SymExpr dqk, SymExpr dv, SymExpr kv_heads_eff,
                                   size_t qkv_op);

    // ---- MLPs: dense, MoE (transformer_ffn.cpp; Mlp itself: transformer_ops.cpp) ----
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
             MlpRecompute rc = {0, 0, 0}, const SymExpr* width_or_h = nullptr);

    void DenseMlp(const std::string& pre);
    void Moe(const std::string& pre);

    // ---- a hybrid model's Mamba-2 mixer (transformer_mamba.cpp) ----
    void Mamba(const std::string& pre);

    // ---- the blocks: embedding, layers, head with its MTP modules (transformer_graph.cpp) ----
    void Embedding();
    void HybridLayer(BlockKind kind);
    void HybridSublayer(const std::string& pre, char symbol);

    void Layer(BlockKind kind);  // a dense or MoE layer, windowed or not
    void Bf16Twins();
    void Head();
    void LogitsGemm(const std::string& pre);
    void CrossEntropy(const std::string& pre);
    void MtpModule(const std::string& pre);
};

}  // namespace sc::transformer
