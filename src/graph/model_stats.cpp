#include "graph/model_stats.h"

#include "graph/transformer_graph.h"

namespace sc {

ModelStats ComputeModelStats(const ModelConfig& m) {
    ValidateModelConfig(m);
    Graph g = BuildTransformerGraph(m, GraphOptions{});
    SymbolValues sv;  // one sequence, everything on one rank
    Binding binding = BindSymbols(m, sv);
    std::vector<double> v;
    g.pool.EvalAll(binding, v);
    const double tokens = static_cast<double>(m.seq) * sv.microbatch;

    ModelStats st;
    st.seq = m.seq;
    for (const Block& blk : g.blocks) {
        if (blk.bf16) continue;  // a BF16 twin's weights and FLOPs are its kind's
        const double reps = g.Repeats(blk.kind);
        for (const Weight& wt : blk.weights) {
            double n = v[wt.numel.id] * reps;
            st.params += n;
            if (blk.kind == BlockKind::embedding) st.embedding_params += n;
            // A routed expert weight is touched by top_k of its experts per token.
            st.active_params += wt.expert ? n * m.moe.top_k / m.moe.experts : n;
        }
        auto add = [&](const Op& op, bool forward) {
            double f = v[op.flops.id] * reps / tokens;
            // The SSD scan's FLOPs stand on attention's line, as Megatron-Bridge's count puts them beside it.
            const bool attention_class = op.kind == OpKind::attention || op.kind == OpKind::scan;
            if (op.kind == OpKind::matmul) st.matmul_flops_per_token += f;
            else if (attention_class) st.attention_flops_per_token += f;
            else st.vector_flops_per_token += f;
            if (forward && (op.kind == OpKind::matmul || attention_class)) st.forward_flops_per_token += f;
        };
        for (const Op& op : blk.forward) add(op, true);
        for (const Op& op : blk.backward) add(op, false);
    }
    // Tied embeddings: the head's weight is the embedding's, already counted; active params include it once.
    const PrecisionConfig& p = m.precision;
    st.weight_bytes = st.params * BytesOf(p.compute);
    st.gradient_bytes = st.params * BytesOf(p.grad);
    double master = p.master == p.compute ? 0 : BytesOf(p.master);
    st.optimizer_bytes = st.params * (master + 2 * BytesOf(p.optimizer));
    return st;
}

}  // namespace sc
