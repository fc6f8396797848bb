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

#include <string>
#include <utility>
#include <vector>

#include "graph/transformer_builder.h"

namespace sc {

namespace transformer {

// ---- embedding: vocab-parallel lookup (Megatron VocabParallelEmbedding) ----
void TransformerBuilder::Embedding() {
    B.Begin(BlockKind::embedding, B.C(0));
    B.Weight("embedding.word", V * h, V / tp * h);
    if (m.position == PositionKind::learned) B.Weight("embedding.position", s * h, s * h);
    // A pure copy, counted as one operation per element written (T*h): ASTRA-sim's roofline divides by
    // num_ops, and a compute node with none never finishes (README "Conventions").
    Op fwd = B.MakeOp("embedding.lookup", OpKind::gather, Pass::forward, T * h, (T * h + T) * w);
    g.blocks.back().forward.push_back(fwd);
    // Backward: scatter-add of the output gradient into the local vocabulary shard's gradient rows.
    B.pending.push_back({B.MakeOp("embedding.scatter_add", OpKind::gather, Pass::backward, T * h, 3.0 * T * h * w)});
    if (m.position == PositionKind::learned) B.Elementwise("embedding.add_position", T * h, 1, 2, B.Zero());
    B.TpLeave("embedding", T * h);
    B.End();
}

// ---- a hybrid model's one-symbol layers (ModelConfig::hybrid), each its own norm and residual ----
void TransformerBuilder::HybridLayer(BlockKind kind) {
    B.Begin(kind, boundary);
    window = 0;
    const char symbol = kind == BlockKind::mamba_layer       ? 'M'
                        : kind == BlockKind::attention_layer ? '*'
                        : kind == BlockKind::mlp_layer       ? '-'
                                                             : 'E';
    HybridSublayer("", symbol);
    B.End();
}

void TransformerBuilder::HybridSublayer(const std::string& pre, char symbol) {
    switch (symbol) {
        case 'M': Mamba(pre); break;
        case '*': Attention(pre); break;
        case '-': DenseMlp(pre); break;
        default: Moe(pre); break;
    }
}

// ---- the layer blocks: attention then a dense MLP or an MoE ----
// `kind` is one of dense_layer, moe_layer and their window kinds, the same layer with a windowed attention core
// (ModelConfig::window).
void TransformerBuilder::Layer(BlockKind kind) {
    const bool windowed = kind == BlockKind::dense_window_layer || kind == BlockKind::moe_window_layer;
    B.Begin(kind, boundary);
    window = windowed ? m.window.size : 0;
    Attention("");
    if (kind == BlockKind::moe_layer || kind == BlockKind::moe_window_layer) Moe("");
    else DenseMlp("");
    B.End();
}

// A BF16 twin of every layer kind built so far (Block::bf16), for the layers an fp8 or fp4 model keeps in BF16.
void TransformerBuilder::Bf16Twins() {
    std::vector<BlockKind> kinds;
    for (const Block& blk : g.blocks)
        if (IsLayer(blk.kind)) kinds.push_back(blk.kind);
    B.bf16_twin = true;
    for (BlockKind k : kinds) switch (k) {
            case BlockKind::dense_layer:
            case BlockKind::dense_window_layer:
            case BlockKind::moe_layer:
            case BlockKind::moe_window_layer: Layer(k); break;
            default: HybridLayer(k); break;
        }
    B.bf16_twin = false;
}

// ---- head: final norm, vocab-parallel LM head and cross-entropy (Megatron), then the MTP modules ----
void TransformerBuilder::Head() {
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
void TransformerBuilder::LogitsGemm(const std::string& pre) {
    B.TpEnter(pre, T * h);
    B.Matmul(pre + ".logits", T, V / tp, h, &Tn, nullptr, Builder::Fp8Input::high_precision);
}

void TransformerBuilder::CrossEntropy(const std::string& pre) {
    // Cross-entropy over the local vocabulary shard in fp32 (about 5 FLOPs per logit), as Megatron-Core's
    // vocab-parallel cross entropy runs it (tensor_parallel/cross_entropy.py, unfused), one pass per line:
    // forward .float() (w in, 4 out), max (4), in-place subtract of the max (4 + 4), exp in place (4 + 4),
    // sum (4), in-place divide into the softmax it keeps for backward (4 + 4): w + 36 bytes per logit;
    // backward the in-place scale by the loss gradient (4 + 4) and the cast back to the LM head's width
    // (4 + w): w + 12. Two all-reduces of one fp32 per token (max and sum of exponentials) across the TP group.
    const SymExpr logits = T * V / tp;
    B.Custom(pre + ".cross_entropy", OpKind::elementwise, 5 * logits, (w + 36.0) * logits, 4.0 * logits, 10 * logits,
             (w + 12.0) * logits);
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
void TransformerBuilder::MtpModule(const std::string& pre) {
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

}  // namespace transformer

Graph BuildTransformerGraph(const ModelConfig& m, const GraphOptions& options) {
    Graph g;
    g.sequence_parallel = options.sequence_parallel;
    g.kernels = options.kernels;
    const ModelConfig::LayerKinds kinds = m.graph_layer_kinds(0, m.layers);
    g.dense_layers = kinds.dense;
    g.moe_layers = kinds.moe;
    g.dense_window_layers = kinds.dense_window;
    g.moe_window_layers = kinds.moe_window;
    transformer::TransformerBuilder builder(m, options, g);
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
    builder.Layer(BlockKind::dense_layer);
    if (m.is_moe()) builder.Layer(BlockKind::moe_layer);
    builder.Head();
    // After the head, so the blocks of a model without a window keep their order and every expression its id.
    if (m.graph_windowed_layers(0, m.layers) > 0) {
        builder.Layer(BlockKind::dense_window_layer);
        if (m.is_moe()) builder.Layer(BlockKind::moe_window_layer);
    }
    // Last, so the blocks and expressions of a model without BF16 layers stay as they were.
    if (m.has_bf16_layers()) builder.Bf16Twins();
    return g;
}

}  // namespace sc
