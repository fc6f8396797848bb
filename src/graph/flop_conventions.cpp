#include "graph/flop_conventions.h"

#include <cmath>

namespace sc {

// Megatron-Bridge's hybrid_flops (training/utils/flop_utils.py): per layer symbol, forward, times 3; causal
// attention (2 b s h p s); the Mamba mixer's input width taken as 2 h (d_in = 2 * hidden_size, as the file has it,
// exact for an expand-2 mixer such as Nemotron-H's; not the heads x head_dim the mixer builds); every MTP depth's
// layers and logits.
static double HybridFlops(const ModelConfig& m, double sequences, double vocab) {
    const double T = sequences * m.seq, s = m.seq, h = m.hidden;
    double attn = 0, mamba = 0, mlp = 0, moe = 0;
    // Megatron-Core's get_hybrid_layer_counts: the main pattern, and the MTP pattern once per depth.
    auto count = [&](const std::string& pattern, double times) {
        for (char c : pattern) (c == '*' ? attn : c == 'M' ? mamba : c == '-' ? mlp : moe) += times;
    };
    count(m.hybrid, 1);
    count(m.mtp_pattern, m.mtp_layers);
    const double gated = m.mlp == MlpKind::swiglu ? 1.5 : 1.0;
    const double p = 1.0 * m.head_dim * m.heads / h, g = m.kv_heads;
    const double attn_f = 4 * T * h * p * (h + h * g / m.heads) + 2 * T * h * p * s;
    const double mlp_f = 4 * T * h * m.ffn * gated;
    const double d_in = 2 * h, N = m.mamba.state;
    const double mamba_f =
        2 * T * h * (2 * d_in + 2.0 * m.mamba.groups * N + m.mamba.heads) + 7 * T * d_in * N + 2 * T * d_in * h;
    // A latent MoE's routed experts run on the latent width, plus its two h x latent projections (moe_layer_flops).
    const double routed_width = m.moe.routed_width(m.hidden), fe = m.moe.expert_ffn;
    const double moe_f = !m.is_moe() ? 0
                                     : 4 * T * routed_width * fe * m.moe.top_k * gated +
                                           4 * T * h * fe * m.moe.shared_experts * gated +
                                           (m.moe.latent > 0 ? 4 * T * h * m.moe.latent : 0);
    // Each MTP depth adds its layers (counted above) and its logits (the file's "(1 + mtp_num_layers)").
    return 3 * (attn * attn_f + mamba * mamba_f + mlp * mlp_f + moe * moe_f + 2 * T * h * vocab * (1 + m.mtp_layers));
}

double MegatronFlops(const ModelConfig& m, double sequences, double vocab) {
    if (m.is_hybrid()) return HybridFlops(m, sequences, vocab);
    const double s = m.seq, l = m.layers + m.mtp_layers, h = m.hidden, heads = 1.0 + m.mtp_layers;
    const double q = 1.0 * m.heads * m.head_dim / h;
    const double gated = m.mlp == MlpKind::swiglu ? 1.5 : 1.0;
    const double f = m.is_moe() ? m.moe.expert_ffn : m.ffn;
    const double k = m.is_moe() ? m.moe.top_k : 1;
    const double shared = m.is_moe() ? 1.0 * m.moe.shared_experts * m.moe.expert_ffn / h : 0;
    return 12 * sequences * s * l * h * h *
           ((1 + 1.0 * m.kv_heads / m.heads + s / h) * q + f / h * k * gated + shared + heads * vocab / (2 * l * h));
}

double MegatronBridgeFlops(const ModelConfig& m, double sequences, int tp) {
    const double multiple = 128.0 * tp;
    const double vocab = std::ceil(m.vocab / multiple) * multiple;
    if (m.is_hybrid()) return HybridFlops(m, sequences, vocab);
    const double s = m.seq, h = m.hidden, a = m.heads, mtp = m.mtp_layers;
    const double layers = m.layers + mtp;
    // MoE layers: every layer after the first dense ones; the MTP modules take the last layer's kind.
    double moe = m.is_moe() ? m.layers - m.moe.dense_layers : 0, dense = m.layers - moe;
    (m.is_moe() ? moe : dense) += mtp;
    const double gated = m.mlp == MlpKind::swiglu ? 1.5 : 1.0;
    const double expert_ffn = m.is_moe() ? m.moe.expert_ffn : 0, top_k = m.is_moe() ? m.moe.top_k : 0;
    const double shared_ffn = m.is_moe() ? 1.0 * m.moe.shared_experts * m.moe.expert_ffn : 0;
    const double mlp = 12 * h * gated * (m.ffn * dense + (expert_ffn * top_k + shared_ffn) * moe);
    double attn = 0;
    if (m.is_mla()) {
        const MlaConfig& l = m.mla;
        const double qk = l.qk_nope_head_dim + l.qk_rope_head_dim;
        const double q = l.q_lora_rank > 0 ? l.q_lora_rank * (h + a * qk + 1) : h * a * qk;
        attn = 6 * layers *
               (q + l.kv_lora_rank * (h + a * (l.qk_nope_head_dim + l.v_head_dim) + 1) + h * l.qk_rope_head_dim +
                a * l.v_head_dim * h + s * a * qk / 2 + s * a * l.v_head_dim / 2);
    } else {
        const double q = a * m.head_dim / h;
        attn = 12 * layers * h * h * ((1 + m.kv_heads / a + s / h / 2) * q);
    }
    const double mtp_extra = 6 * mtp * (3 * h + 2 * h * h);
    const double logits = 6 * h * vocab * (mtp + 1);
    return sequences * s * (mlp + attn + mtp_extra + logits);
}

double NeMoLlamaFlops(const ModelConfig& m, double sequences, double vocab) {
    const double s = m.seq, l = m.layers, h = m.hidden;
    return sequences * s * l * h * h *
           (12 + 12.0 * m.kv_heads / m.heads + 18.0 * m.ffn / h + 12 * s / h + 6 * vocab / (l * h));
}

}  // namespace sc
