// The serving simulator: a discrete-event engine with one clock. Requests arrive (Poisson with a seed, at a
// fixed rate, from closed-loop clients, or all queued at time 0), wait in a FCFS queue, are admitted by the
// scheduler into the running set of a replica, and run in iterations (continuous, iteration-level batching,
// Yu et al. 2022 "Orca"): every iteration each running sequence feeds its next tokens, a decode one token, a
// prompt a chunk that fills what is left of the token budget (chunked prefill, Agrawal et al. 2024
// "Sarathi-Serve"), up to max_seqs sequences. KV blocks come from a paged cache (Kwon et al. 2023, "vLLM"):
// taken on demand, with preemption by recompute when none is free, or reserved whole at admission
// (TensorRT-LLM's GUARANTEED_NO_EVICT). One iteration lasts what IterationCost says for its batch.
//
// Bounded memory: only requests in the system are held (a request's state is freed when it completes; the
// requests of an offline run are created when admitted, not all at time 0); latencies go into fixed-size
// histograms (latency_histogram.h).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "inference/iteration_cost.h"
#include "inference/kv_capacity.h"
#include "inference/request_timeline.h"
#include "inference/serving_config.h"
#include "inference/time_series.h"
#include "training/rate_sources.h"

namespace sc {

struct LatencySummary {
    double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;
};

struct ServingResult {
    long long completed = 0;
    int gpus = 0;
    double duration = 0;             // s, from time 0 to the last completion
    LatencySummary ttft, tpot, e2e;  // s; tpot per request: (e2e - ttft) / (output - 1), requests with output > 1
    double requests_per_s = 0, input_tokens_per_s = 0, output_tokens_per_s = 0;
    double output_tokens_per_s_per_gpu = 0;
    double requests_per_s_per_gpu = 0;
    // SLO (ServingConfig::slo): the share of completed requests whose TTFT and TPOT both met their targets
    // (a target of 0 is met by every request), and goodput, those requests per second of the run.
    double slo_attainment = 0, goodput_requests_per_s = 0;
    // KV cache: blocks per replica, occupancy (blocks requests hold / blocks) averaged over time and its peak. Cached
    // prefixes no request uses are free to evict and count as free, as vLLM's KV cache usage counts them (its free
    // block queue holds them); their share, averaged over time, is kv_cached_idle_mean.
    long long kv_blocks = 0;         // per replica of the (prefill) pool
    long long decode_kv_blocks = 0;  // per replica of the decode pool (disaggregated; else 0)
    double kv_occupancy_mean = 0, kv_occupancy_peak = 0;
    double kv_cached_idle_mean = 0;
    long long preemptions = 0;
    double swapped_bytes = 0;  // per rank, out and back in (Preemption::swap), the mean over every replica
    // Used KV blocks of the replica at its first preemption (-1: none happened); equals kv_blocks when the
    // engine preempts only because the cache is full.
    long long used_blocks_at_first_preemption = -1;
    long long iterations = 0;
    double mean_batch_tokens = 0, mean_running = 0;  // per iteration
    // Decode CUDA graphs (EngineConfig::cuda_graph_batch_sizes): iterations that replayed a captured graph, the dummy
    // rows they computed and the real decode rows beside them (per GPU under data-parallel attention, summed).
    long long graph_iterations = 0;
    double graph_dummy_rows = 0, graph_real_rows = 0;
    // Little's law, L = lambda W, on the sample path: the time average of sequences in the system (arrived, not
    // completed) times the duration equals the sum of their latencies (a run starts and ends empty). A sequence is a
    // request, or with Workload::samples one of its samples, from the request's arrival to its own completion.
    double mean_in_system = 0, mean_waiting = 0;
    double sum_e2e = 0;
    // Cached prefixes under engine.prefix_caching: admissions of a request that could reuse one (it has a shared
    // prefix or earlier turns), how many found it on the GPU, in the host tier or in the remote store, and the prompt
    // tokens those hits did not compute.
    long long prefix_requests = 0, prefix_gpu_hits = 0, prefix_host_hits = 0, prefix_remote_hits = 0;
    long long prefix_turn_hits = 0;    // of the hits, those on a conversation's earlier turns (Workload::turns)
    long long prefix_sample_hits = 0;  // of the hits, those on the prompt of a request's other samples (samples)
    double prefix_tokens_reused = 0;
    // Bytes per GPU each tier copied: the host tier over the host link, back to the GPU and out of it; the remote
    // store over the network, back (to the GPU) and out (from the GPU, or from the host copy with both tiers).
    double host_tier_loaded_bytes = 0, host_tier_stored_bytes = 0;
    double remote_tier_loaded_bytes = 0, remote_tier_stored_bytes = 0;
    // Speculative decoding (EngineConfig::speculation): decode steps that verified drafts, the drafts they verified and
    // those accepted (tokens a verifying step yields: 1 + accepted / steps).
    long long spec_steps = 0, spec_drafted = 0, spec_accepted = 0;
    // The retrieval service (Workload::retrieval): queries served, their mean wait for a server (s), and the share of
    // the servers' time busy over the run.
    long long retrievals = 0;
    double retrieval_wait_mean = 0, retrieval_utilization = 0;
    // Disaggregated pools: KV caches moved from the prefill to the decode pool, and their mean time in flight.
    long long kv_transfers = 0;
    double kv_transfer_mean = 0;  // s
    // KV occupancy (every pool's blocks), running sequences, waiting requests over time: bounded (time_series.h).
    std::vector<SeriesPoint> series;
    // Where the replicas' busy time went, summed over every iteration (s).
    IterationBreakdown busy;
    // The first ServingConfig::timelines requests by arrival, span by span (request_timeline.h), in id order.
    std::vector<RequestTimeline> timelines;
};

// The host link a swap or a host prefix tier's copy crosses, GB/s per direction per GPU: the description's
// engine.swap_gbps when it states one (both directions), else the part's measured copies (the calibration's
// host_link rows: nvbandwidth, TransferBench), else none (0).
struct HostLink {
    double in_gbps = 0, out_gbps = 0;  // host to device, device to host
    bool measured = false;             // from the calibration, not the description
};
HostLink HostLinkOf(const EngineConfig& e, const Accelerator& acc, const CalibrationTable* cal);

// One pool's replicas: their iteration time and the KV blocks each holds.
struct PoolModel {
    const IterationCost* cost = nullptr;
    long long kv_blocks = 0;
    // engine.remote_cache_gib: the link to the remote store, the pool's cluster's scale-out level (ScaleOutLevel):
    // its effective GB/s per GPU and its hop latency, which every copy pays.
    double remote_gbps = 0, remote_latency = 0;
    double host_in_gbps = 0, host_out_gbps = 0;  // its host link (HostLinkOf); 0: EngineConfig::swap_gbps
    // GPUs sharing a replica's scheduler under data-parallel attention (PoolConfig::attention_dp: the pool's tp;
    // else 1): the engine's max_seqs and max_tokens are each GPU's, so the replica's are this many times them,
    // a sequence's chunk stays within one GPU's budget and its cache within one GPU's share of kv_blocks.
    int attention_dp = 1;
};

// The KV cache's trip from a prefill replica to a decode replica: every prefill rank sends its shard to a
// decode rank at once, so a prompt of n tokens takes latency + n * max(bytes per token on a prefill rank,
// on a decode rank) / bandwidth (the point-to-point alpha-beta line of CommModel::P2PSeconds).
// A model with windowed layers sends what the prefill pool's cache still holds (KvLayout): a windowed layer's last
// `window` tokens, so the `window_share` of the bytes per token that windowed layers hold stops growing past them.
struct KvTransferModel {
    double latency = 0;            // s
    double seconds_per_token = 0;  // s
    double window = 0, window_share = 0;
    double Seconds(double tokens) const {
        const double beyond = window_share > 0 && tokens > window ? tokens - window : 0;
        return latency + (tokens - window_share * beyond) * seconds_per_token;
    }
};

// Runs the workload of `c` on replicas whose iteration time is `cost` and whose cache holds `kv_blocks`
// blocks each. Throws sc::Error when a request can never fit (its prompt and output need more blocks than
// the cache has, or, without chunked prefill, its prompt exceeds the token budget).
ServingResult Simulate(const ServingConfig& c, const IterationCost& cost, long long kv_blocks);
// The same with the pools given: `decode` must be set exactly when c.decode_pool is.
ServingResult Simulate(const ServingConfig& c, PoolModel pool, std::optional<PoolModel> decode,
                       KvTransferModel transfer);

// Simulate, one instant at a time: the engine itself (engine.cpp), what Simulate and ServingSimulation run.
// `c` must be valid (ValidateServingConfig: its callers have checked it once); the pools are checked against it.
// `c` and the pools' costs must outlive it. Step returns false once nothing is left to
// happen (every request has completed); Results then gives what Simulate gives.
class EngineSteps {
public:
    EngineSteps(const ServingConfig& c, PoolModel pool, std::optional<PoolModel> decode, KvTransferModel transfer);
    ~EngineSteps();
    EngineSteps(const EngineSteps&) = delete;
    EngineSteps& operator=(const EngineSteps&) = delete;
    bool Step();
    long long completed() const;
    ServingResult Results();

private:
    struct State;
    std::unique_ptr<State> s_;
};

// The KV transfer between the pools on `sys`: both pools placed side by side (prefill GPUs then decode GPUs),
// the link is the innermost network level spanning them all (System::LevelForSpan), at its effective
// per-direction bandwidth and per-hop latency.
KvTransferModel KvTransferOn(const System& sys, const PoolConfig& prefill, const PoolConfig& decode,
                             double prefill_kv_bytes_per_token, double decode_kv_bytes_per_token);

// A cluster's scale-out level: the first that is neither its scale-up domain nor a torus of the chips' own links
// (the NICs a KV cache leaves a cluster by). Throws sc::Error naming `field` when it has none (a TPU pod's torus).
const NetworkLevel& ScaleOutLevel(const System& sys, const std::string& field);
// The KV transfer between pools on two clusters (Splitwise-HA's H100 prompt machines and A100 token machines): each
// prefill rank's shard leaves by its cluster's scale-out level and enters the decode cluster by that one's, so the
// slower of the two per-GPU bandwidths paces it (splitwise-sim's Splitwise-HA scheduler sends at the A100 machines'
// 8 x 200 Gb/s: configs/orchestrator_repo/schedulers/kv_round_robin.yaml, transfer_bandwidth 200 GB/s a machine),
// after the larger of their per-hop latencies (one network step, as KvTransferOn takes one).
KvTransferModel KvTransferBetween(const System& prefill, const System& decode, double prefill_kv_bytes_per_token,
                                  double decode_kv_bytes_per_token);

// Everything from the description: the iteration cost on `sys` (its accelerator and scale-up network), the KV
// capacity from the memory model, then Simulate. `cal` must outlive the call.
struct ServingRun {
    KvCapacity kv;                        // the pool's (the prefill pool's when disaggregated)
    std::optional<KvCapacity> decode_kv;  // the decode pool's
    std::optional<KvTransferModel> transfer;
    ServingResult result;
    RateSources rates;        // what the iteration cost's rates rest on (the prefill pool's when disaggregated)
    std::string system_name;  // the cluster the pools ran on (engine::RunServe may have extended the request's)
    // A decode pool on a cluster of its own (SimulateServing's decode_sys): its name, accelerator and rates; empty
    // when the decode pool shares the prefill pool's cluster.
    std::string decode_system_name, decode_accelerator;
    RateSources decode_rates;
    HostLink host_link, decode_host_link;  // each pool's (HostLinkOf)
};
// `decode_sys`, when set, is the decode pool's own cluster (c.decode_pool must be set): its accelerator, memory and
// scale-up network serve the decode pool, and the KV cache crosses both clusters' scale-out levels
// (KvTransferBetween). Null: both pools on `sys` (KvTransferOn).
ServingRun SimulateServing(const ServingConfig& c, const System& sys, const CalibrationTable* cal,
                           const System* decode_sys = nullptr);

// The same simulation in steps, so that a caller with a frame to draw (the page) runs it a slice at a time and a
// long run never stops its interface: Step(n) runs up to n events (instants of the clock) and says whether the run
// is over; Finish then gives what SimulateServing gives, bit for bit (SimulateServing is this, run to its end).
// Copies the description; borrows `sys` (and `decode_sys`) only while constructing, `cal` for its whole life (the iteration costs
// read its curves).
class ServingSimulation {
public:
    ServingSimulation(const ServingConfig& c, const System& sys, const CalibrationTable* cal,
                      const System* decode_sys = nullptr);
    ~ServingSimulation();
    ServingSimulation(const ServingSimulation&) = delete;
    ServingSimulation& operator=(const ServingSimulation&) = delete;
    bool Step(long long events);
    long long completed() const;  // requests completed so far
    long long requests() const;   // in the run
    ServingRun Finish();          // once Step returned true; throws sc::Error before
private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace sc
