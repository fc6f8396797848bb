#include "graph/flop_conventions.h"

namespace sc {

double MegatronFlops(const ModelConfig& m, double sequences, double vocab) {
    const double s = m.seq, l = m.layers + m.mtp_layers, h = m.hidden, heads = 1.0 + m.mtp_layers;
    const double q = 1.0 * m.heads * m.head_dim / h;
    const double gated = m.mlp == MlpKind::swiglu ? 1.5 : 1.0;
    const double f = m.is_moe() ? m.moe.expert_ffn : m.ffn;
    const double k = m.is_moe() ? m.moe.top_k : 1;
    const double shared = m.is_moe() ? 1.0 * m.moe.shared_experts * m.moe.expert_ffn / h : 0;
    return 12 * sequences * s * l * h * h *
           ((1 + 1.0 * m.kv_heads / m.heads + s / h) * q + f / h * k * gated + shared + heads * vocab / (2 * l * h));
}

double NeMoLlamaFlops(const ModelConfig& m, double sequences, double vocab) {
    const double s = m.seq, l = m.layers, h = m.hidden;
    return sequences * s * l * h * h *
           (12 + 12.0 * m.kv_heads / m.heads + 18.0 * m.ffn / h + 12 * s / h + 6 * vocab / (l * h));
}

}  // namespace sc
