// Expert-parallel serving's parts of the iteration cost (iteration_cost.h): the routed experts of one MoE layer,
// the busiest GPU's share of a batch under data-parallel attention, and the two-batch overlap that hides the
// experts' all-to-all. docs/serving.md, "Data-parallel attention" and "Redundant experts, DeepEP's dispatch and the
// two-batch overlap".
#include <algorithm>
#include <cmath>

#include "inference/iteration_cost.h"
#include "training/comm_sms.h"

namespace sc {

const IterationCost::Routed& IterationCost::RoutedExperts(double Tm) const {
    const bool cacheable = dp_ > 1 && Tm == std::floor(Tm) && Tm >= 0 && Tm < static_cast<double>(routed_cache_.size());
    Routed& r = cacheable ? routed_cache_[static_cast<size_t>(Tm)] : routed_scratch_;
    if (cacheable && r.linear >= 0) return r;
    r = Routed{};
    // With redundant copies (PoolConfig::redundant_experts) the ep groups hold slots_ slots, a hot expert's tokens
    // split over its copies: with the load balanced, as EPLB places the copies to make it, each slot is chosen by a
    // token with probability k / slots.
    const double k = m_.moe.top_k, ep = ep_;
    const double routed = Tm * k / ep * MoeRankLoad(m_.moe, ep_);
    const double hit = std::max(1.0, ExpectedExpertsHit(slots_, k, Tm) / ep);
    const double dm = m_.moe.routed_width(m_.hidden);  // a latent MoE routes its latent
    // Each expert over the tp/ep ranks of its group (ep = 1: every rank holds 1/tp of every expert, vLLM's and
    // TensorRT-LLM's default under TP); whole under data-parallel attention (ep = the group, tp_ = 1).
    const double ff = static_cast<double>(m_.moe.expert_ffn) * ep / (tp_ * dp_);
    const bool swiglu = m_.mlp == MlpKind::swiglu;
    r.permute = VecSeconds(routed * dm, 2, 2);
    r.linear = GemmSeconds(routed, (swiglu ? 2 : 1) * ff, dm, hit, hit, false, &r.flops, ff) +
               GemmSeconds(routed, dm, ff, hit, hit, false, &r.flops, ff);
    r.activation = swiglu ? VecSeconds(routed * ff, 4, 2) : VecSeconds(routed * ff, 8, 1);
    return r;
}

BatchShape IterationCost::RankShare(const BatchShape& b) const {
    if (dp_ <= 1 || b.sequences <= 1) return b;
    const double mine = std::ceil(b.sequences / dp_);
    BatchShape r = b.Scaled(mine / b.sequences);
    r.sequences = mine;
    return r;
}

// Under data-parallel attention the busiest GPU's share of the batch (RankShare), its tokens rounded up to a whole
// one for TokenCosts's cache, and the routed experts at the whole group's tokens; otherwise b as it is.
double IterationCost::RankTokens(const BatchShape& rank) const {
    return dp_ > 1 ? std::ceil(rank.tokens()) : rank.tokens();
}

// Two-batch overlap (DeepSeek's inference system, deepseek-ai/open-infra-index day 6: "splitting a batch of requests
// into two microbatches ... the communication cost of one microbatch is hide behind the computation of the other";
// SGLang's --enable-two-batch-overlap): the batch runs as two halves, each reading the weights and paying the
// kernels again. In every MoE layer one half's all-to-all (a) runs beside the other's compute (c), 2 max(c, a) a
// layer, and the first compute or the last all-to-all, min(c, a), stands alone; the dense layers, the embedding and
// the head do not overlap. So the iteration is both halves' compute plus the exposed all-to-all,
// 2 L max(0, a - c) + min(c, a), the breakdown's ep_comm. A batch of one sequence is not split.
// The all-to-all is not free while hidden: its kernels hold SMs the compute beside it loses for the (2 L - 1)
// min(c, a) seconds they overlap (training/comm_sms.h, without a margin). DeepEP's high-throughput kernels, which a
// batch with prefill tokens runs, hold Buffer.num_sms = 20 (deepseek-ai/DeepEP deep_ep/buffer.py); its low-latency
// kernels of a decode-only batch receive through hooks that "do not occupy any SM resource" (its README); NCCL's
// all-to-all holds the accelerator's measured CTA count (Accelerator::collective_ctas).
constexpr int kDeepEpHighThroughputSms = 20;

IterationBreakdown IterationCost::Breakdown(const BatchShape& group) const { return Breakdown(group, nullptr); }

IterationBreakdown IterationCost::Breakdown(const BatchShape& group, const BatchShape* rank) const {
    if (!tbo_ || group.sequences < 2 || m_.moe_layers() == 0) return OneBatch(group, rank);
    const BatchShape half = group.Scaled(0.5), rank_half = rank ? rank->Scaled(0.5) : BatchShape{};
    const BatchShape* mine = rank ? &rank_half : nullptr;
    const IterationBreakdown h = OneBatch(half, mine);
    const double L = m_.moe_layers(), a = h.ep_comm / L, c = MoeLayerComputeSeconds(half, mine);
    IterationBreakdown r;
    r.linear = 2 * h.linear, r.attention = 2 * h.attention, r.elementwise = 2 * h.elementwise;
    r.tp_comm = 2 * h.tp_comm, r.head = 2 * h.head, r.pp_comm = 2 * h.pp_comm, r.draft = 2 * h.draft;
    r.ep_comm = 2 * L * std::max(0.0, a - c) + std::min(c, a);
    const double compute = 2 * (h.total() - h.ep_comm), hidden = (2 * L - 1) * std::min(c, a);
    const Accelerator& acc = sys_.accelerator;
    if (!deepep_) r.ep_comm += CollectiveSmSeconds(compute, hidden, acc);
    else if (group.prefill_tokens > 0)
        r.ep_comm += CommSmSeconds(compute, hidden, UserbufferOverlap{kDeepEpHighThroughputSms, false}, acc.sm_count);
    return r;
}

double IterationCost::MoeLayerComputeSeconds(const BatchShape& group, const BatchShape* rank) const {
    if (m_.moe_layers() == 0) return 0;
    const BatchShape b = rank ? *rank : RankShare(group);
    const PerT& c = TokenCosts(RankTokens(b));
    double t = c.moe_layer - c.a2a / m_.moe_layers() + AttentionOfLayers(b).full;
    double up_flops = 0;
    t += MlaUpSeconds(b, &up_flops);
    if (dp_ > 1) {
        const Routed& x = RoutedExperts(group.tokens());
        t += x.linear + x.permute + x.activation;
    }
    return t;
}

}  // namespace sc
