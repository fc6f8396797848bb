// A serving run from its description (SimulateServing, ServingSimulation): the pools' iteration costs on the
// cluster, their KV capacity from the memory model, the link between disaggregated pools, then the discrete-event
// engine (engine.cpp) over them, in one go or an instant at a time.
#include <algorithm>
#include <string>

#include "config/error.h"
#include "inference/engine.h"

namespace sc {

ServingResult Simulate(const ServingConfig& c, const IterationCost& cost, long long kv_blocks) {
    if (c.decode_pool)
        throw Error("decode_pool",
                    "a disaggregated description needs both pools' costs (the Simulate overload with pools)");
    return Simulate(c, PoolModel{&cost, kv_blocks}, std::nullopt, {});
}

ServingResult Simulate(const ServingConfig& c, PoolModel pool, std::optional<PoolModel> decode,
                       KvTransferModel transfer) {
    ValidateServingConfig(c);
    EngineSteps engine(c, pool, decode, transfer);
    while (engine.Step()) {}
    return engine.Results();
}

KvTransferModel KvTransferOn(const System& sys, const PoolConfig& prefill, const PoolConfig& decode,
                             double prefill_bytes, double decode_bytes) {
    const int span = prefill.gpus() + decode.gpus();
    if (span > sys.TotalAccelerators())
        throw Error("decode_pool.replicas", "the two pools need " + std::to_string(span) + " GPUs; " + sys.name +
                                                " has " + std::to_string(sys.TotalAccelerators()));
    const NetworkLevel& link = sys.levels[static_cast<size_t>(sys.LevelForSpan(span))];
    KvTransferModel t;
    t.latency = link.latency_us * 1e-6;
    t.seconds_per_token = std::max(prefill_bytes, decode_bytes) / (link.EffectiveGBps() * 1e9);
    return t;
}

const NetworkLevel& ScaleOutLevel(const System& sys, const std::string& field) {
    for (const NetworkLevel& l : sys.levels)
        if (l.kind != LevelKind::scale_up && l.kind != LevelKind::torus) return l;
    throw Error(field,
                sys.name + " has no network beyond its " +
                    (sys.levels.empty() ? std::string("accelerators") : sys.levels.front().name) +
                    " for a KV cache to leave it by (a decode pool on a cluster of its own and a remote prefix store "
                    "are reached over the scale-out network); choose a cluster that has one");
}

KvTransferModel KvTransferBetween(const System& prefill, const System& decode, double prefill_bytes,
                                  double decode_bytes) {
    const NetworkLevel& out = ScaleOutLevel(prefill, "system");
    const NetworkLevel& in = ScaleOutLevel(decode, "decode_pool.system");
    KvTransferModel t;
    t.latency = std::max(out.latency_us, in.latency_us) * 1e-6;
    t.seconds_per_token =
        std::max(prefill_bytes, decode_bytes) / (std::min(out.EffectiveGBps(), in.EffectiveGBps()) * 1e9);
    return t;
}

namespace {
// The middle of a length distribution (its mean for a normal).
double Middle(const LengthDist& d) { return d.kind == LengthDist::Kind::normal ? d.mean : (d.min + d.max) / 2.0; }

// The prompt length the context-attention kernel's efficiency is looked up at: the middle input, after its shared
// prefix, and in a conversation after the middle turn's earlier turns (inputs and outputs); a trace's mean prompt;
// at most a chunk under chunked prefill.
double TypicalPrompt(const ServingConfig& c) {
    const Workload& w = c.workload;
    double p = Middle(w.input) + (w.prefixes.count > 0 ? w.prefixes.tokens : 0) +
               (w.turns - 1) / 2.0 * (Middle(w.input) + Middle(w.output));
    if (c.workload.arrival == ArrivalKind::trace) {
        double sum = 0;
        for (const TraceRequest& t : c.workload.trace) sum += t.input;
        p = sum / static_cast<double>(c.workload.trace.size());
    }
    if (c.engine.chunked_prefill && !c.engine.static_batching) p = std::min<double>(p, c.engine.max_tokens);
    return p;
}
}  // namespace

HostLink HostLinkOf(const EngineConfig& e, const Accelerator& acc, const CalibrationTable* cal) {
    HostLink h;
    if (e.swap_gbps > 0) {
        h.in_gbps = h.out_gbps = e.swap_gbps;
        return h;
    }
    if (!cal) return h;
    h.in_gbps = HostLinkGBps(*cal, acc.id, HostLinkOp::host_to_device);
    h.out_gbps = HostLinkGBps(*cal, acc.id, HostLinkOp::device_to_host);
    h.measured = h.in_gbps > 0 && h.out_gbps > 0;
    if (!h.measured) h = HostLink{};
    return h;
}

// What a simulation owns: its description (the engine reads it by reference), the pools' iteration costs (the
// engine reads them by pointer) and the run's other results, then the engine itself.
struct ServingSimulation::Impl {
    ServingConfig c;
    std::optional<IterationCost> cost, decode_cost;
    ServingRun run;
    std::optional<EngineSteps> engine;
    bool done = false;
};

ServingSimulation::ServingSimulation(const ServingConfig& config, const System& sys, const CalibrationTable* cal,
                                     const System* decode_sys)
    : impl_(std::make_unique<Impl>()) {
    ValidateServingConfig(config);
    if (decode_sys && !config.decode_pool)
        throw Error("decode_pool.system", "names the decode pool's cluster (" + decode_sys->name +
                                              "), but the description has no decode_pool");
    impl_->c = config;
    const ServingConfig& c = impl_->c;
    ServingRun& run = impl_->run;
    run.system_name = sys.name;
    // The context-attention kernel's efficiency is looked up at the mean prompt (a chunk when prompts are chunked).
    const double typical_prompt = TypicalPrompt(c);
    run.kv = ComputeKvCapacity(c.model, c.precision, c.pool, sys.accelerator, c.engine);
    const IterationCost& cost =
        impl_->cost.emplace(c.model, c.precision, c.pool, sys, cal, typical_prompt, c.engine.max_tokens);
    run.rates =
        DescribeRates(cost.compute_model(), cost.kernel_floor(), sys.accelerator, c.precision.compute, {}, false);
    run.rates.decode_attention =
        DecodeAttentionText(cost.decode_attention_floor(), sys.accelerator) + MlaDecodeText(cost.mla_decode());
    run.rates.all_reduce = cost.AllReduceText();
    PoolModel pool{&cost, ReplicaKvBlocks(run.kv, c.pool)};
    pool.attention_dp = cost.attention_dp();
    run.host_link = HostLinkOf(c.engine, sys.accelerator, cal);
    pool.host_in_gbps = run.host_link.in_gbps, pool.host_out_gbps = run.host_link.out_gbps;
    if (c.engine.remote_cache_gib > 0) {  // the remote store sits across the prefill cluster's scale-out network
        const NetworkLevel& nic = ScaleOutLevel(sys, "engine.remote_cache_gib");
        pool.remote_gbps = nic.EffectiveGBps(), pool.remote_latency = nic.latency_us * 1e-6;
    }
    if (!c.decode_pool) {
        impl_->engine.emplace(c, pool, std::nullopt, KvTransferModel{});
        return;
    }
    // A decode pool on a cluster of its own (Splitwise-HA: H100 prompt machines, A100 token machines) has that
    // cluster's accelerator, memory and scale-up network; without one it sits beside the prefill pool.
    const System& dsys = decode_sys ? *decode_sys : sys;
    run.decode_kv = ComputeKvCapacity(c.model, c.precision, *c.decode_pool, dsys.accelerator, c.engine);
    const IterationCost& decode_cost = impl_->decode_cost.emplace(c.model, c.precision, *c.decode_pool, dsys, cal,
                                                                  typical_prompt, c.engine.max_tokens);
    if (decode_sys) {
        run.decode_system_name = decode_sys->name;
        run.decode_accelerator = decode_sys->accelerator.name;
        run.decode_rates = DescribeRates(decode_cost.compute_model(), decode_cost.kernel_floor(),
                                         decode_sys->accelerator, c.precision.compute, {}, false);
        run.decode_rates.decode_attention =
            DecodeAttentionText(decode_cost.decode_attention_floor(), decode_sys->accelerator) +
            MlaDecodeText(decode_cost.mla_decode());
        run.decode_rates.all_reduce = decode_cost.AllReduceText();
        run.transfer = KvTransferBetween(sys, *decode_sys, cost.KvBytesPerToken(), decode_cost.KvBytesPerToken());
    } else {
        run.transfer = KvTransferOn(sys, c.pool, *c.decode_pool, cost.KvBytesPerToken(), decode_cost.KvBytesPerToken());
    }
    if (const KvLayout k = KvLayoutOf(c.model, c.pool.pp, c.engine.block_size, c.engine.window_eviction);
        k.windowed()) {
        run.transfer->window = static_cast<double>(k.window);
        run.transfer->window_share = static_cast<double>(k.window_layers) / (k.full_layers + k.window_layers);
    }
    PoolModel decode{&decode_cost, ReplicaKvBlocks(*run.decode_kv, *c.decode_pool)};
    decode.attention_dp = decode_cost.attention_dp();
    run.decode_host_link = HostLinkOf(c.engine, dsys.accelerator, cal);
    decode.host_in_gbps = run.decode_host_link.in_gbps, decode.host_out_gbps = run.decode_host_link.out_gbps;
    impl_->engine.emplace(c, pool, decode, *run.transfer);
}

ServingSimulation::~ServingSimulation() = default;

bool ServingSimulation::Step(long long events) {
    for (long long k = 0; k < events && !impl_->done; ++k) impl_->done = !impl_->engine->Step();
    return impl_->done;
}

long long ServingSimulation::completed() const { return impl_->engine->completed(); }
long long ServingSimulation::requests() const { return impl_->c.workload.requests; }

ServingRun ServingSimulation::Finish() {
    if (!impl_->done) throw Error("serving", "the simulation has not finished (Step until it returns true)");
    impl_->run.result = impl_->engine->Results();
    return std::move(impl_->run);
}

ServingRun SimulateServing(const ServingConfig& c, const System& sys, const CalibrationTable* cal,
                           const System* decode_sys) {
    ServingSimulation sim(c, sys, cal, decode_sys);
    while (!sim.Step(1 << 20)) {}
    return sim.Finish();
}

}  // namespace sc
