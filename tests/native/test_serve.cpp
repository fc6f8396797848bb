// The serving simulator against closed forms: one request's TTFT and TPOT are the cost model's prefill and
// decode times; at low load latency is the service time; Little's law on the simulated queue; the KV
// capacity is the memory computation done by hand; preemption happens exactly when the cache is full.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "config/error.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/kv_capacity.h"
#include "inference/latency_histogram.h"
#include "inference/serving_parse.h"
#include "parallel/job.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::Model;
using servetest::System;

TEST(Serve, OneRequestTtftAndTpotAreThePrefillAndDecodeTimes) {
    for (int tp : {1, 4}) {
        ServingConfig c = Base("llama3-8b", tp, 700, 33, 1);
        const auto& sys = System("dgx-h100-superpod");
        IterationCost cost(c.model, c.precision, tp, sys, &Calibration(), 700, c.engine.max_tokens);
        ServingResult r = Simulate(c, cost, 100000);
        ASSERT_EQ(r.completed, 1);
        EXPECT_NEAR(r.ttft.mean, cost.PrefillSeconds(700), 1e-12);
        double decode = 0;
        for (int k = 1; k < 33; ++k) decode += cost.DecodeSeconds(700 + k - 1);  // cache holds 700 + k - 1 tokens
        EXPECT_NEAR(r.tpot.mean, decode / 32, 1e-12);
        EXPECT_NEAR(r.e2e.mean, cost.PrefillSeconds(700) + decode, 1e-12);
        EXPECT_EQ(r.iterations, 33);
        EXPECT_EQ(r.preemptions, 0);
        // A decode reads every weight and the cache: at least the weight bytes over the peak bandwidth.
        const double weights = ServingWeightBytesPerRank(c.model, c.precision, tp);
        EXPECT_GT(cost.DecodeSeconds(700), weights / (sys.accelerator.hbm_bandwidth_tbps * 1e12));
    }
}

TEST(Serve, ChunkedPrefillSplitsTheFirstTokenOverIterations) {
    ServingConfig c = Base("llama3-8b", 1, 1000, 2, 1);
    c.engine.max_tokens = 256;  // 1000 = 3 x 256 + 232
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 256, 256);
    ServingResult r = Simulate(c, cost, 100000);
    double ttft = 0;
    for (int done = 0; done < 1000; done += 256) {
        const double ch = std::min(256, 1000 - done);
        BatchShape b;
        b.prefill_tokens = ch;
        b.prefill_pairs = ch * done + ch * (ch + 1) / 2;
        b.prefill_keys = done + ch;
        b.logits = done + ch == 1000 ? 1 : 0;
        ttft += cost.Seconds(b);
    }
    EXPECT_NEAR(r.ttft.mean, ttft, 1e-12);
    EXPECT_EQ(r.iterations, 5);
}

TEST(Serve, LowLoadLatencyIsTheServiceTime) {
    // Poisson arrivals 10,000 s apart on average, each served alone in a quarter of a second: every request's
    // latency is the single-request latency.
    ServingConfig c = Base("llama3-8b", 1, 300, 50, 200);
    c.workload.arrival = ArrivalKind::poisson;
    c.workload.rate = 1e-4;
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 300, c.engine.max_tokens);
    ServingConfig one = c;
    one.workload.arrival = ArrivalKind::offline;
    one.workload.requests = 1;
    const double alone = Simulate(one, cost, 100000).e2e.mean;
    ServingResult r = Simulate(c, cost, 100000);
    EXPECT_EQ(r.completed, 200);
    EXPECT_NEAR(r.e2e.mean, alone, 1e-9 * alone);
    EXPECT_NEAR(r.e2e.max, alone, 1e-9 * alone);
    EXPECT_NEAR(r.e2e.p99 / alone, 1.0, LatencyHistogram::kRelativeWidth);
    EXPECT_EQ(r.mean_waiting, 0);
}

TEST(Serve, LittlesLawHoldsOnTheSimulatedQueue) {
    for (ArrivalKind a :
         {ArrivalKind::poisson, ArrivalKind::offline, ArrivalKind::closed_loop, ArrivalKind::fixed_rate}) {
        ServingConfig c = Base("llama3-8b", 2, 200, 100, 3000);
        c.workload.input = LengthDist::Uniform(50, 800);
        c.workload.output = LengthDist::Uniform(1, 300);
        c.workload.arrival = a;
        c.workload.rate = 40;  // above what 2 GPUs serve: the queue grows
        c.workload.concurrency = 64;
        c.engine.max_seqs = 128;
        c.engine.max_tokens = 2048;
        IterationCost cost(c.model, c.precision, 2, System("dgx-h100-superpod"), &Calibration(), 400, 2048);
        ServingResult r = Simulate(c, cost, 1200);  // 19,200 tokens of cache: every run preempts
        SCOPED_TRACE(NameOf(a));
        ASSERT_EQ(r.completed, 3000);
        // L = lambda W on the sample path: time-average in system = completions / duration x mean latency.
        EXPECT_NEAR(r.mean_in_system, r.requests_per_s * r.e2e.mean, 1e-9 * r.mean_in_system);
        EXPECT_NEAR(r.mean_in_system * r.duration, r.sum_e2e, 1e-9 * r.sum_e2e);
        EXPECT_LE(r.mean_waiting, r.mean_in_system);
        EXPECT_LE(r.kv_occupancy_peak, 1.0);
        EXPECT_GT(r.preemptions, 0);  // the identity holds through recompute preemptions too
        if (a == ArrivalKind::closed_loop) {
            EXPECT_LE(r.mean_in_system, 64 + 1e-9);
        }
    }
}

TEST(Serve, KvCapacityIsTheMemoryComputation) {
    // Llama 3 70B, fp8 weights and cache, TP8 on H100: by hand from the shapes.
    ServingConfig c = Base("llama3-70b", 8, 128, 128, 1);
    c.precision.weights = c.precision.compute = c.precision.kv_cache = Precision::fp8;
    const double h = 8192, a = 64, kv = 8, d = 128, f = 28672, V = 128256, L = 80, tp = 8;
    const double layer = (h * (a + 2 * kv) * d + a * d * h + 3 * h * f) / tp + 2 * h;  // + two RMSNorm weights
    const double weights = L * layer * 1 + (2 * V / tp * h + h) * 2;  // fp8 layers; 16-bit embedding, head, final norm
    EXPECT_NEAR(ServingWeightBytesPerRank(c.model, c.precision, 8), weights, 1e-9 * weights);
    const double T = c.engine.max_tokens;
    const double workspace =
        T * (2 * h + 3 * f / tp) * 2 + std::min(c.engine.max_seqs, c.engine.max_tokens) * V / tp * 4;
    EXPECT_NEAR(ActivationWorkspaceBytes(c.model, c.precision, 8, T, c.engine.max_seqs), workspace, 1e-9 * workspace);
    const auto& acc = System("dgx-h100-superpod").accelerator;
    const double per_token = L * 2 * (kv / tp) * d * 1;
    for (KvMemoryPolicy pol : {KvMemoryPolicy::total_fraction, KvMemoryPolicy::free_fraction}) {
        c.engine.memory_policy = pol;
        KvCapacity k = ComputeKvCapacity(c.model, c.precision, 8, acc, c.engine);
        const double mem = acc.MemoryBytes();
        // The runtime's own memory (inference/runtime_memory.h): the context as each policy counts it, vLLM's 0.25
        // GiB of non-torch memory or the 0.77 GiB TensorRT-LLM's log leaves unattributed, and at TP8 the 1.84 GiB
        // of collective buffers.
        const double runtime = ((pol == KvMemoryPolicy::total_fraction ? 0.25 : 0.77) + 1.84) * 1073741824.0;
        EXPECT_DOUBLE_EQ(k.runtime_bytes, runtime);
        const double kv_bytes = pol == KvMemoryPolicy::total_fraction ? 0.9 * mem - weights - workspace - runtime
                                                                      : 0.9 * (mem - weights - workspace - runtime);
        EXPECT_EQ(k.kv_bytes_per_token, per_token);
        EXPECT_EQ(k.blocks, static_cast<long long>(std::floor(kv_bytes / (per_token * 16))));
        EXPECT_EQ(k.tokens(), k.blocks * 16);
        IterationCost cost(c.model, c.precision, 8, System("dgx-h100-superpod"), &Calibration(), 128, 8192);
        EXPECT_EQ(cost.KvBytesPerToken(), per_token);
    }
    // Nothing left: 70B in bf16 on one GPU.
    c.precision = ServingPrecision{};
    EXPECT_NE(sctest::ErrorOf([&] {
                  ComputeKvCapacity(c.model, c.precision, 1, acc, c.engine);
              }).find("engine.kv_memory_fraction: no memory left for the KV cache"),
              std::string::npos);
}

TEST(Serve, PreemptionHappensExactlyWhenTheCacheIsFull) {
    // Two requests of 16 + 64 tokens in blocks of 16: each ends holding ceil(79 / 16) = 5 blocks (the last
    // sampled token is never fed), so 10 blocks run both without preemption and 9 cannot.
    ServingConfig c = Base("llama3-8b", 1, 16, 64, 2);
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 16, c.engine.max_tokens);
    ServingResult fits = Simulate(c, cost, 10);
    EXPECT_EQ(fits.preemptions, 0);
    EXPECT_EQ(fits.used_blocks_at_first_preemption, -1);
    EXPECT_EQ(fits.kv_occupancy_peak, 1.0);
    ServingResult full = Simulate(c, cost, 9);
    EXPECT_GE(full.preemptions, 1);
    EXPECT_EQ(full.used_blocks_at_first_preemption, 9);  // the cache was full, not merely busy
    EXPECT_EQ(full.completed, 2);
    // Recompute costs time: the preempted request finishes later than without preemption.
    EXPECT_GT(full.duration, fits.duration);
    // Reserved admission never preempts: the second request waits for the first one's blocks.
    c.engine.admission = KvAdmission::reserve_full;
    ServingResult reserved = Simulate(c, cost, 9);
    EXPECT_EQ(reserved.preemptions, 0);
    EXPECT_GT(reserved.ttft.max, reserved.e2e.min);  // the second one's first token came after the first finished
}

TEST(Serve, StaticBatchingWaitsForTheWholeBatch) {
    ServingConfig c = Base("llama3-8b", 1, 64, 32, 8);
    c.workload.output = LengthDist::Uniform(2, 64);
    c.engine.static_batching = true;
    c.engine.max_seqs = 4;
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 64, 8192);
    ServingResult st = Simulate(c, cost, 100000);
    c.engine.static_batching = false;
    ServingResult cont = Simulate(c, cost, 100000);
    EXPECT_EQ(st.completed, 8);
    EXPECT_GT(st.duration, cont.duration);  // continuous batching fills the slots a finished request leaves
}

TEST(Serve, SameSeedSameRun) {
    ServingConfig c = Base("llama3-8b", 1, 100, 100, 500);
    c.workload.arrival = ArrivalKind::poisson;
    c.workload.rate = 20;
    c.workload.input = LengthDist::Uniform(10, 1000);
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 500, 8192);
    ServingResult a = Simulate(c, cost, 20000), b = Simulate(c, cost, 20000);
    EXPECT_EQ(a.duration, b.duration);
    EXPECT_EQ(a.ttft.p99, b.ttft.p99);
    c.workload.seed = 2;
    EXPECT_NE(Simulate(c, cost, 20000).duration, a.duration);
}

TEST(Serve, HistogramQuantilesWithinTheirBucket) {
    LatencyHistogram h;
    for (int i = 1; i <= 1000; ++i) h.Add(i * 1e-3);
    EXPECT_NEAR(h.Quantile(0.5) / 0.5, 1, LatencyHistogram::kRelativeWidth);
    EXPECT_NEAR(h.Quantile(0.99) / 0.99, 1, LatencyHistogram::kRelativeWidth);
    EXPECT_NEAR(h.mean(), 0.5005, 1e-12);
    EXPECT_EQ(h.max(), 1.0);
    EXPECT_EQ(LatencyHistogram().Quantile(0.5), 0);
}

TEST(Serve, ExpectedExpertsHit) {
    EXPECT_NEAR(ExpectedExpertsHit(8, 2, 1), 2, 1e-12);
    EXPECT_NEAR(ExpectedExpertsHit(8, 2, 1000), 8, 1e-9);
    EXPECT_EQ(ExpectedExpertsHit(8, 2, 0), 0);
    // Mixtral serves: decode of one token reads 2 of 8 experts' weights, a long prefill all of them.
    ServingConfig c = Base("mixtral-8x7b", 1, 1000, 2, 1);
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 1000, 8192);
    EXPECT_LT(cost.DecodeSeconds(10), cost.PrefillSeconds(1000));
}

TEST(Serve, BadInputNamesTheField) {
    ServingConfig c = Base("llama3-70b", 3, 10, 10, 1);
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }), "pool.tp: tp=3 does not divide 64 attention heads");
    c.pool.tp = 8;
    c.workload.arrival = ArrivalKind::poisson;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }),
              "workload.rate: must be in (0, 1e9] requests/s for poisson arrivals, got 0");
    c.workload.arrival = ArrivalKind::fixed_rate;  // the value as typed, not six fixed decimals ("-2.500000")
    c.workload.rate = -2.5;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }),
              "workload.rate: must be in (0, 1e9] requests/s for fixed_rate arrivals, got -2.5");
    c.workload.rate = 1;
    c.engine.kv_memory_fraction = 1.5;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }),
              "engine.kv_memory_fraction: must be in (0, 1], got 1.5");
    c.engine.kv_memory_fraction = 0.9;
    c.workload.arrival = ArrivalKind::offline;
    c.workload.output.max = 0;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }),
              "workload.output.max: must be at least min (10), got 0");
    // A request longer than the cache can ever hold.
    ServingConfig d = Base("llama3-8b", 1, 100, 100, 1);
    IterationCost cost(d.model, d.precision, 1, System("dgx-h100-superpod"), &Calibration(), 100, 8192);
    EXPECT_EQ(sctest::ErrorOf([&] { Simulate(d, cost, 12); }),
              "engine.kv_blocks: a request of 100 + 100 tokens needs 13 KV blocks but the cache holds 12; use more "
              "memory, more GPUs per replica or shorter requests");
    EXPECT_NE(sctest::ErrorOf([&] {
                  ParseServingDescription(R"({"model":"x","system":"y","workload":{"requests":1,
        "input":{"tokens":5},"output":{"tokens":5}},"engin":{}})");
              }).find("engin"),
              std::string::npos);
    EXPECT_NE(sctest::ErrorOf([&] {
                  ParseServingDescription(R"({"model":"x","system":"y","workload":{"requests":1,
        "arrival":"burst","input":{"tokens":5},"output":{"tokens":5}}})");
              }).find("workload.arrival"),
              std::string::npos);
    // How many requests to simulate is required (once, left out, it was 2^31 - 1 of them: a hang).
    EXPECT_NE(sctest::ErrorOf([&] {
                  ParseServingDescription(R"({"model":"x","system":"y","workload":{
        "input":{"tokens":5},"output":{"tokens":5}}})");
              }).find("workload.requests"),
              std::string::npos);
}

}  // namespace

namespace {

TEST(Serve, EveryInferencePresetParsesAndRuns) {
    int n = 0;
    for (const auto& f : std::filesystem::directory_iterator(servetest::kRoot + "/presets/inference")) {
        // index.json lists the presets for the page (a test in test_hardware_config.cpp keeps it complete).
        if (f.path().extension() != ".json" || f.path().filename() == "index.json") continue;
        SCOPED_TRACE(f.path().string());
        sc::ServingDescription d = sc::ParseServingDescription(sctest::ReadFile(f.path().string()));
        d.config.model = Model(d.model_id);
        d.config.workload.requests = std::min<long long>(d.config.workload.requests, 300);
        const sc::System* decode = d.decode_system_id.empty() ? nullptr : &System(d.decode_system_id);
        sc::ServingRun run = sc::SimulateServing(d.config, System(d.system_id), &Calibration(), decode);
        EXPECT_EQ(run.decode_system_name, decode ? decode->name : "");
        EXPECT_EQ(run.result.completed, d.config.workload.requests);
        EXPECT_GT(run.kv.blocks, 0);
        EXPECT_GT(run.result.output_tokens_per_s, 0);
        // One replica is busy at most the whole run (the busy time sums over replicas).
        const int replicas = d.config.pool.replicas + (d.config.decode_pool ? d.config.decode_pool->replicas : 0);
        EXPECT_LE(run.result.busy.total(), run.result.duration * replicas * (1 + 1e-12));
        ++n;
    }
    EXPECT_GE(n, 2);
}

}  // namespace

namespace {

TEST(Serve, WithoutChunkingAPromptMustFitTheBudget) {
    ServingConfig c = Base("llama3-8b", 1, 600, 100, 1);
    c.engine.chunked_prefill = false;
    c.engine.max_tokens = 650;
    IterationCost cost(c.model, c.precision, 1, System("dgx-h100-superpod"), &Calibration(), 600, 650);
    // On-demand blocks: a preempted request recomputes up to 600 + 99 tokens as one prompt.
    EXPECT_EQ(sctest::ErrorOf([&] { Simulate(c, cost, 100000); }),
              "engine.max_tokens: a prompt (with its recomputed output) of up to 699 tokens does not fit the token "
              "budget of 650 without chunked prefill; raise max_tokens or enable chunked_prefill");
    c.engine.admission = KvAdmission::reserve_full;  // never preempted: the prompt alone must fit
    ServingResult r = Simulate(c, cost, 100000);
    EXPECT_EQ(r.completed, 1);
    EXPECT_NEAR(r.ttft.mean, cost.PrefillSeconds(600), 1e-12);
}

}  // namespace

namespace {

// The serving per-op derivation and the training graph count the same FLOPs for the same forward pass: one
// sequence's prefill on one TP rank equals the graph's forward GEMMs and causal attention of one microbatch.
TEST(Serve, PrefillFlopsEqualTheTrainingGraphsForwardFlops) {
    for (const char* id : {"llama3-8b", "llama3-70b", "gpt3-175b"}) {
        for (int tp : {1, 2, 8}) {
            sc::ModelConfig m = Model(id);
            m.seq = 2048;
            sc::ParallelConfig p;
            p.tp = tp;
            const sc::Job job = sc::MakeJob(m, p);
            double gemm = 0, attn = 0;
            for (const sc::Op& op : job.graph.Find(sc::BlockKind::dense_layer)->forward) {
                if (op.kind == sc::OpKind::matmul) gemm += job.V(op.flops);
                if (op.kind == sc::OpKind::attention) attn += job.V(op.flops);
            }
            IterationCost cost(m, sc::ServingPrecision{}, tp, System("dgx-h100-superpod"), &Calibration(), 2048, 2048);
            BatchShape b;
            b.prefill_tokens = b.prefill_keys = 2048;
            b.prefill_pairs = 2048 * 2049 / 2.0;
            const sc::IterationWork w = cost.Work(b);
            SCOPED_TRACE(std::string(id) + " tp=" + std::to_string(tp));
            EXPECT_NEAR(w.linear_flops, m.layers * gemm, 1e-12 * w.linear_flops);
            EXPECT_NEAR(w.attention_flops, m.layers * attn, 1e-12 * w.attention_flops);
        }
    }
}

}  // namespace
