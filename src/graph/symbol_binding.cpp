// The numbers a graph's symbols stand for (transformer_graph.h, BindSymbols): the model's shape, the parallel
// split, the formats, and the MoE factors the dispatcher and routing set.
#include "config/quantization.h"
#include "graph/moe_spread.h"
#include "graph/transformer_graph.h"

namespace sc {

Binding BindSymbols(const ModelConfig& m, const SymbolValues& v) {
    Binding x{};
    auto set = [&](Sym s, double val) { x[static_cast<size_t>(s)] = val; };
    set(Sym::b, v.microbatch);
    set(Sym::s, m.seq);
    set(Sym::h, m.hidden);
    set(Sym::a, m.heads);
    set(Sym::kv, m.kv_heads);
    set(Sym::d, m.head_dim);
    set(Sym::f, m.ffn);
    set(Sym::V, m.vocab);
    set(Sym::E, m.moe.experts);
    set(Sym::k, m.moe.top_k);
    set(Sym::fe, m.moe.expert_ffn);
    set(Sym::se, m.moe.shared_experts);
    set(Sym::ql, m.mla.q_lora_rank);
    set(Sym::kvl, m.mla.kv_lora_rank);
    set(Sym::dn, m.mla.qk_nope_head_dim);
    set(Sym::dr, m.mla.qk_rope_head_dim);
    set(Sym::dv, m.mla.v_head_dim);
    set(Sym::tp, v.tp);
    set(Sym::cp, v.cp);
    set(Sym::ep, v.ep);
    set(Sym::w, BytesOf(m.precision.activation));
    // Routed pairs per EP rank over the balanced share: padded to capacity, or the most loaded rank's.
    set(Sym::cf, m.moe.capacity_factor > 0 ? m.moe.capacity_factor : MoeRankLoad(m.moe, v.ep));
    set(Sym::q8, BytesOf(m.precision.compute) < 2 ? 1.0 : 0.0);
    set(Sym::mh, m.mamba.heads);
    set(Sym::mp, m.mamba.head_dim);
    set(Sym::mn, m.mamba.state);
    set(Sym::mg, m.mamba.groups);
    set(Sym::mk, m.mamba.conv_kernel);
    set(Sym::dm, m.moe.routed_width(m.hidden));
    const QuantizationBytes q = QuantizationBytesOf(m.precision.compute, m.precision.scaling);
    set(Sym::qn, q.input_after_norm);
    set(Sym::qc, q.input_cast);
    set(Sym::qg, q.output_grad);
    set(Sym::qs, q.saved_input);
    set(Sym::xr, v.deepep_dispatch && m.is_moe() ? MoeDistinctGroups(m.moe, v.ep) : m.moe.top_k);
    return x;
}

}  // namespace sc
