// The feed-forward half of a transformer layer (TransformerBuilder, transformer_builder.h): the dense MLP and
// Megatron-Core's MoE layer (router, dispatch, experts, combine, shared experts, latent projections).
#include <string>

#include "graph/transformer_builder.h"

namespace sc::transformer {

// ---- the dense MLP of one layer: norm, TP-split MLP, residual ----
void TransformerBuilder::DenseMlp(const std::string& pre) {
    ModuleScope module(B, kBf16Mlp);
    SymExpr f = S(Sym::f);
    {
        RerunScope layernorm(B, kRecomputeLayernorm);
        Norm(pre + "mlp.norm", Tn);
    }
    {
        RerunScope mlp(B, kRecomputeMlp);  // the module after its norm, its TP collectives included
        B.TpEnter(pre + "mlp", T * h);
        Mlp(pre + "mlp", T, f / tp, &Tn, nullptr, Builder::Fp8Input::fused, {kRecomputeLayernorm, kRecomputeMlp, 0});
        B.TpLeave(pre + "mlp", T * h);
    }
    Residual(pre + "mlp.residual", Tn * h);
    SymExpr bias = m.bias ? f + h : B.C(0);
    SymExpr bias_rank = m.bias ? f / tp + h : B.C(0);
    B.Weight(pre + "mlp", MlpParams(S(Sym::f)) + bias, MlpParams(S(Sym::f)) / tp + bias_rank);
    B.Weight(pre + "mlp.norm", norm_params, norm_params);
}

// ---- the MoE of one layer: router, dispatch, experts, combine, shared experts ----
void TransformerBuilder::Moe(const std::string& pre) {
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
            Mlp(pre + "moe.experts", all_routed, fe / tp, nullptr, &local_experts, Builder::Fp8Input::cast, expert_rc,
                &d);
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

}  // namespace sc::transformer
