#include "app/serve_link.h"

#include <string>

namespace sc::app {

namespace {

template <typename T>
std::optional<T> IfChanged(const T& now, const T& was) {
    return now == was ? std::nullopt : std::optional<T>(now);
}

// The decode pool a link's decode_tp/decode_replicas are relative to: the preset's, or the prefill pool the tab
// copies when "disaggregated" is ticked.
PoolConfig DecodeBase(const ServingConfig& base, const PoolConfig& pool) { return base.decode_pool.value_or(pool); }

}  // namespace

LinkServeEdits ServeEditsOf(const ServingConfig& base, const ServingConfig& now) {
    LinkServeEdits e;
    e.tp = IfChanged(now.pool.tp, base.pool.tp);
    e.replicas = IfChanged(now.pool.replicas, base.pool.replicas);
    e.pp = IfChanged(now.pool.pp, base.pool.pp);
    e.ep = IfChanged(now.pool.ep, base.pool.ep);
    e.attention_dp = IfChanged(now.pool.attention_dp, base.pool.attention_dp);
    e.redundant_experts = IfChanged(now.pool.redundant_experts, base.pool.redundant_experts);
    e.deepep = IfChanged(now.pool.deepep_dispatch, base.pool.deepep_dispatch);
    e.allgather = IfChanged(now.pool.allgather_dispatch, base.pool.allgather_dispatch);
    e.two_batch_overlap = IfChanged(now.pool.two_batch_overlap, base.pool.two_batch_overlap);
    if (now.pool.all_reduce != base.pool.all_reduce) e.all_reduce = NameOf(now.pool.all_reduce);
    e.decode = IfChanged(now.decode_pool.has_value(), base.decode_pool.has_value());
    if (now.decode_pool) {
        const PoolConfig ref = DecodeBase(base, now.pool);
        e.decode_tp = IfChanged(now.decode_pool->tp, ref.tp);
        e.decode_replicas = IfChanged(now.decode_pool->replicas, ref.replicas);
        e.decode_pp = IfChanged(now.decode_pool->pp, ref.pp);
        e.decode_ep = IfChanged(now.decode_pool->ep, ref.ep);
        e.decode_attention_dp = IfChanged(now.decode_pool->attention_dp, ref.attention_dp);
        e.decode_redundant_experts = IfChanged(now.decode_pool->redundant_experts, ref.redundant_experts);
        e.decode_deepep = IfChanged(now.decode_pool->deepep_dispatch, ref.deepep_dispatch);
        e.decode_allgather = IfChanged(now.decode_pool->allgather_dispatch, ref.allgather_dispatch);
        e.decode_two_batch_overlap = IfChanged(now.decode_pool->two_batch_overlap, ref.two_batch_overlap);
        if (now.decode_pool->all_reduce != ref.all_reduce) e.decode_all_reduce = NameOf(now.decode_pool->all_reduce);
    }
    e.max_seqs = IfChanged(now.engine.max_seqs, base.engine.max_seqs);
    e.max_tokens = IfChanged(now.engine.max_tokens, base.engine.max_tokens);
    e.chunked = IfChanged(now.engine.chunked_prefill, base.engine.chunked_prefill);
    e.window_eviction = IfChanged(now.engine.window_eviction, base.engine.window_eviction);
    if (now.engine.cuda_graph_batch_sizes != base.engine.cuda_graph_batch_sizes)
        e.cuda_graphs = now.engine.cuda_graph_batch_sizes;
    if (now.engine.preemption != base.engine.preemption) e.preemption = NameOf(now.engine.preemption);
    e.weights = IfChanged(now.precision.weights, base.precision.weights);
    e.kv = IfChanged(now.precision.kv_cache, base.precision.kv_cache);
    // MXFP4 is int4's layout with its own block; it travels as serve.mxfp4, not as a group.
    auto mx = [](const ServingConfig& x) { return x.precision.int4 && x.precision.int4->mxfp4(); };
    auto group = [&](const ServingConfig& x) { return x.precision.int4 && !mx(x) ? x.precision.int4->group_size : 0; };
    e.int4_group = IfChanged(group(now), group(base));
    e.mxfp4 = IfChanged(mx(now), mx(base));
    auto block = [](const ServingConfig& x) { return x.precision.fp8_scaling == Fp8Scaling::block; };
    e.fp8_block = IfChanged(block(now), block(base));
    if (now.workload.arrival != base.workload.arrival) e.arrivals = NameOf(now.workload.arrival);
    e.rate = IfChanged(now.workload.rate, base.workload.rate);
    e.cv = IfChanged(now.workload.cv, base.workload.cv);
    e.clients = IfChanged(now.workload.concurrency, base.workload.concurrency);
    if (now.workload.requests != base.workload.requests) e.requests = static_cast<int>(now.workload.requests);
    e.ttft_s = IfChanged(now.slo.ttft, base.slo.ttft);
    e.tpot_s = IfChanged(now.slo.tpot, base.slo.tpot);
    e.timelines = IfChanged(now.timelines, base.timelines);
    e.prefixes = IfChanged(now.workload.prefixes.count, base.workload.prefixes.count);
    e.prefix_tokens = IfChanged(now.workload.prefixes.tokens, base.workload.prefixes.tokens);
    e.prefix_caching = IfChanged(now.engine.prefix_caching, base.engine.prefix_caching);
    e.host_cache_gib = IfChanged(now.engine.host_cache_gib, base.engine.host_cache_gib);
    e.remote_cache_gib = IfChanged(now.engine.remote_cache_gib, base.engine.remote_cache_gib);
    e.swap_gbps = IfChanged(now.engine.swap_gbps, base.engine.swap_gbps);
    if (now.engine.frontend_s != base.engine.frontend_s) e.frontend_ms = now.engine.frontend_s * 1e3;
    e.turns = IfChanged(now.workload.turns, base.workload.turns);
    e.samples = IfChanged(now.workload.samples, base.workload.samples);
    e.draft_tokens = IfChanged(now.engine.speculation.tokens, base.engine.speculation.tokens);
    e.acceptance = IfChanged(now.engine.speculation.acceptance, base.engine.speculation.acceptance);
    const Retrieval &rn = now.workload.retrieval, &rb = base.workload.retrieval;
    e.passages = IfChanged(rn.documents, rb.documents);
    e.passage_tokens = IfChanged(rn.tokens, rb.tokens);
    e.retrieval_s = IfChanged(rn.seconds, rb.seconds);
    e.retrieval_servers = IfChanged(rn.servers, rb.servers);
    return e;
}

void ApplyServeEdits(const LinkServeEdits& e, ServingConfig& c) {
    if (e.tp) c.pool.tp = *e.tp;
    if (e.replicas) c.pool.replicas = *e.replicas;
    if (e.pp) c.pool.pp = *e.pp;
    if (e.ep) c.pool.ep = *e.ep;
    if (e.attention_dp) c.pool.attention_dp = *e.attention_dp;
    if (e.redundant_experts) c.pool.redundant_experts = *e.redundant_experts;
    if (e.deepep) c.pool.deepep_dispatch = *e.deepep;
    if (e.allgather) c.pool.allgather_dispatch = *e.allgather;
    if (e.two_batch_overlap) c.pool.two_batch_overlap = *e.two_batch_overlap;
    if (e.all_reduce) c.pool.all_reduce = EngineAllReduceNamed(*e.all_reduce).value_or(c.pool.all_reduce);
    if (e.decode) {
        if (!*e.decode) c.decode_pool.reset();
        else if (!c.decode_pool) c.decode_pool = c.pool;
    }
    if (c.decode_pool && e.decode_tp) c.decode_pool->tp = *e.decode_tp;
    if (c.decode_pool && e.decode_replicas) c.decode_pool->replicas = *e.decode_replicas;
    if (c.decode_pool && e.decode_pp) c.decode_pool->pp = *e.decode_pp;
    if (c.decode_pool && e.decode_ep) c.decode_pool->ep = *e.decode_ep;
    if (c.decode_pool && e.decode_attention_dp) c.decode_pool->attention_dp = *e.decode_attention_dp;
    if (c.decode_pool && e.decode_redundant_experts) c.decode_pool->redundant_experts = *e.decode_redundant_experts;
    if (c.decode_pool && e.decode_deepep) c.decode_pool->deepep_dispatch = *e.decode_deepep;
    if (c.decode_pool && e.decode_allgather) c.decode_pool->allgather_dispatch = *e.decode_allgather;
    if (c.decode_pool && e.decode_two_batch_overlap) c.decode_pool->two_batch_overlap = *e.decode_two_batch_overlap;
    if (c.decode_pool && e.decode_all_reduce)
        c.decode_pool->all_reduce = EngineAllReduceNamed(*e.decode_all_reduce).value_or(c.decode_pool->all_reduce);
    if (e.max_seqs) c.engine.max_seqs = *e.max_seqs;
    if (e.max_tokens) c.engine.max_tokens = *e.max_tokens;
    if (e.chunked) c.engine.chunked_prefill = *e.chunked;
    if (e.window_eviction) c.engine.window_eviction = *e.window_eviction;
    if (e.cuda_graphs) c.engine.cuda_graph_batch_sizes = *e.cuda_graphs;
    if (e.prefixes) c.workload.prefixes.count = *e.prefixes;
    if (e.prefix_tokens) c.workload.prefixes.tokens = *e.prefix_tokens;
    if (e.prefix_caching) SetPrefixCaching(c, *e.prefix_caching, EngineConfig(c.engine));
    if (e.host_cache_gib) c.engine.host_cache_gib = *e.host_cache_gib;  // after the switch: it restores the preset's
    if (e.remote_cache_gib) c.engine.remote_cache_gib = *e.remote_cache_gib;
    if (e.swap_gbps) c.engine.swap_gbps = *e.swap_gbps;
    if (e.frontend_ms) c.engine.frontend_s = *e.frontend_ms / 1e3;
    if (e.turns) c.workload.turns = *e.turns;
    if (e.samples) c.workload.samples = *e.samples;
    if (e.draft_tokens) c.engine.speculation.tokens = *e.draft_tokens;
    if (e.acceptance) c.engine.speculation.acceptance = *e.acceptance;
    if (e.passages) c.workload.retrieval.documents = *e.passages;
    if (e.passage_tokens) c.workload.retrieval.tokens = *e.passage_tokens;
    if (e.retrieval_s) c.workload.retrieval.seconds = *e.retrieval_s;
    if (e.retrieval_servers) c.workload.retrieval.servers = *e.retrieval_servers;
    if (e.preemption) c.engine.preemption = *e.preemption == "swap" ? Preemption::swap : Preemption::recompute;
    if (e.weights) c.precision.weights = c.precision.compute = *e.weights;  // the tab's rule: compute follows
    if (e.kv) c.precision.kv_cache = *e.kv;
    if (e.int4_group && *e.int4_group == 0) c.precision.int4.reset();
    if (e.int4_group && *e.int4_group > 0) {  // W4A16: the GEMMs run at the activations' precision
        Int4Weights w = c.precision.int4 && !c.precision.int4->mxfp4() ? *c.precision.int4 : Int4Weights{};
        w.group_size = *e.int4_group;
        c.precision.int4 = w;
        c.precision.weights = c.precision.compute = c.precision.activations;
    }
    if (e.mxfp4 && *e.mxfp4) {  // W4A16 too
        c.precision.int4 = kMxfp4;
        c.precision.weights = c.precision.compute = c.precision.activations;
    } else if (e.mxfp4 && c.precision.int4 && c.precision.int4->mxfp4()) {
        c.precision.int4.reset();
    }
    if (e.fp8_block) c.precision.fp8_scaling = *e.fp8_block ? Fp8Scaling::block : Fp8Scaling::tensor;
    if (e.arrivals) {
        for (ArrivalKind k : {ArrivalKind::poisson, ArrivalKind::gamma, ArrivalKind::fixed_rate,
                              ArrivalKind::closed_loop, ArrivalKind::offline})
            if (*e.arrivals == NameOf(k)) c.workload.arrival = k;
    }
    if (e.rate) c.workload.rate = *e.rate;
    if (e.cv) c.workload.cv = *e.cv;
    if (e.clients) c.workload.concurrency = *e.clients;
    if (e.requests) c.workload.requests = *e.requests;
    if (e.ttft_s) c.slo.ttft = *e.ttft_s;
    if (e.tpot_s) c.slo.tpot = *e.tpot_s;
    if (e.timelines) c.timelines = *e.timelines;
}

}  // namespace sc::app
