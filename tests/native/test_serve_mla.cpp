// Multi-head latent attention (DeepSeek-V2/V3) in the serving model against closed forms: the cache holds
// (kv_lora_rank + qk_rope_head_dim) elements per token and layer on every TP rank; a decode's attention reads
// exactly that latent per cached token; a prefill counts the training graph's forward FLOPs; DeepSeek-V3 serves.
#include <gtest/gtest.h>

#include <cmath>

#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/kv_capacity.h"
#include "inference/serving_parse.h"
#include "parallel/job.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::Model;
using servetest::System;

TEST(ServeMla, KvBytesPerTokenAreTheLatentAndTheRotaryKey) {
    const ModelConfig m = Model("deepseek-v3");
    ASSERT_TRUE(m.is_mla());
    const double latent = 512 + 64, layers = 61;  // kv_lora_rank + qk_rope_head_dim, DeepSeek-V3's config
    const auto& sys = System("dgx-h100-superpod");
    for (Precision kv : {Precision::bf16, Precision::fp8}) {
        ServingPrecision prec;
        prec.weights = prec.compute = Precision::fp8;
        prec.kv_cache = kv;
        for (int tp : {1, 8}) {  // the latent is not split by heads: every TP rank caches all of it
            IterationCost cost(m, prec, tp, sys, &Calibration(), 512, 8192);
            EXPECT_EQ(cost.KvBytesPerToken(), latent * layers * BytesOf(kv)) << tp;
            EXPECT_EQ(KvElementsPerTokenLayer(m, tp), latent);
        }
        // Two stages of 31 and 30 layers: a rank caches its stage's layers, the larger stage counts.
        IterationCost two(m, prec, PoolConfig{8, 1, 2, 1}, sys, &Calibration(), 512, 8192);
        EXPECT_EQ(two.KvBytesPerToken(), latent * 31 * BytesOf(kv));
        // The replica's blocks are those of the stage with fewer: each stage's by hand from its weights and
        // its layers' latent.
        EngineConfig e;
        const KvCapacity k = ComputeKvCapacity(m, prec, PoolConfig{8, 1, 2, 1}, sys.accelerator, e);
        const std::vector<double> w = StageWeightBytesPerRank(m, prec, 8, 2);
        long long fewest = -1;
        double per_token = 0;
        for (int s = 0; s < 2; ++s) {
            const double tok = latent * (s == 0 ? 31 : 30) * BytesOf(kv);
            // The runtime's memory at TP8: vLLM's non-torch 0.25 GiB and 1.84 GiB of collective buffers.
            const double bytes = 0.9 * sys.accelerator.MemoryBytes() - w[static_cast<size_t>(s)] - k.workspace_bytes -
                                 (0.25 + 1.84) * 1073741824.0;
            const long long blocks = static_cast<long long>(std::floor(bytes / (tok * 16)));
            if (fewest < 0 || blocks < fewest) fewest = blocks, per_token = tok;
        }
        EXPECT_EQ(k.blocks, fewest);
        EXPECT_EQ(k.kv_bytes_per_token, per_token);
    }
    // Grouped-query attention is unchanged: K and V of the rank's KV heads.
    EXPECT_EQ(KvElementsPerTokenLayer(Model("llama3-70b"), 8), 2 * 1 * 128);
}

TEST(ServeMla, DecodeAttentionReadsTheCompressedCache) {
    // Without the engine's measured op (ServeMlaDecode.*): each more cached token costs a decode step its latent in
    // every layer at the achieved HBM bandwidth (the absorbed attention at 16 heads a rank is memory-bound): the
    // step's slope over the context is layers x 576 x bytes / bandwidth, so an fp8 cache halves it.
    const ModelConfig m = Model("deepseek-v3");
    const auto& sys = System("dgx-h100-superpod");
    CalibrationTable no_op = Calibration();
    no_op.mla_decode_attention.clear();
    ServingPrecision prec;
    prec.weights = prec.compute = Precision::fp8;
    double slope[2];
    for (int i = 0; i < 2; ++i) {
        prec.kv_cache = i == 0 ? Precision::bf16 : Precision::fp8;
        IterationCost cost(m, prec, 8, sys, &no_op, 512, 8192);
        ASSERT_EQ(cost.mla_decode(), nullptr);
        BatchShape a, b;
        a.decodes = b.decodes = 64;
        a.decode_keys = 64 * 4000.0;
        b.decode_keys = 64 * 8000.0;
        slope[i] = (cost.Breakdown(b).attention - cost.Breakdown(a).attention) / (b.decode_keys - a.decode_keys);
    }
    EXPECT_NEAR(slope[0] / slope[1], 2.0, 1e-9);
    // The same slope from the bytes: the latent of one token in 61 layers, at the bandwidth a 16-bit cache of
    // the same model would read it (the kernel's memory side, bytes / bandwidth).
    const double bytes_per_token = 61 * 576 * 2.0;
    const double bandwidth = bytes_per_token / slope[0];
    EXPECT_GT(bandwidth, 0.5 * sys.accelerator.hbm_bandwidth_tbps * 1e12);
    EXPECT_LE(bandwidth, sys.accelerator.hbm_bandwidth_tbps * 1e12);
}

TEST(ServeMla, PrefillFlopsEqualTheTrainingGraphsForwardFlops) {
    // DeepSeek-V3's attention with a dense MLP (its first layers' kind) so the graph's layer is the served one.
    ModelConfig m = Model("deepseek-v3");
    m.moe = MoeConfig{};
    m.seq = 2048;
    for (int tp : {1, 8}) {
        ParallelConfig p;
        p.tp = tp;
        const Job job = MakeJob(m, p);
        double gemm = 0, attn = 0;
        for (const Op& op : job.graph.Find(BlockKind::dense_layer)->forward) {
            if (op.kind == OpKind::matmul) gemm += job.V(op.flops);
            if (op.kind == OpKind::attention) attn += job.V(op.flops);
        }
        IterationCost cost(m, ServingPrecision{}, tp, System("dgx-h100-superpod"), &Calibration(), 2048, 2048);
        BatchShape b;
        b.prefill_tokens = b.prefill_keys = 2048;
        b.prefill_pairs = 2048 * 2049 / 2.0;
        const IterationWork w = cost.Work(b);
        EXPECT_NEAR(w.linear_flops, m.layers * gemm, 1e-12 * w.linear_flops) << tp;
        EXPECT_NEAR(w.attention_flops, m.layers * attn, 1e-12 * w.attention_flops) << tp;
    }
}

TEST(ServeMla, DeepSeekV3Serves) {
    const std::string file = servetest::kRoot + "/presets/inference/deepseek-v3-h100x16-fp8.json";
    ServingDescription d = ParseServingDescription(sctest::ReadFile(file));
    d.config.model = Model(d.model_id);
    d.config.workload.requests = 40;
    const ServingRun run = SimulateServing(d.config, System(d.system_id), &Calibration());
    EXPECT_EQ(run.result.completed, 40);
    // TP8 x PP2: the second stage (30 layers, all MoE, and the LM head) has the fewer blocks; its latent, 16-bit.
    EXPECT_EQ(run.kv.kv_bytes_per_token, 30 * 576 * 2.0);
    EXPECT_EQ(run.result.gpus, 16);
    // One request alone: its TTFT is the batch through both stages and the send.
    ServingConfig one = d.config;
    one.workload.arrival = ArrivalKind::offline;
    one.workload.requests = 1;
    one.workload.input = LengthDist::Fixed(1000);
    one.workload.output = LengthDist::Fixed(2);
    IterationCost cost(one.model, one.precision, one.pool, System(d.system_id), &Calibration(), 1000, 8192);
    BatchShape b;
    b.prefill_tokens = b.prefill_keys = 1000;
    b.prefill_pairs = 1000 * 1001 / 2.0;
    b.logits = 1;
    const PipelineTimes p = cost.Pipeline(b);
    const ServingResult r = Simulate(one, cost, 100000);
    EXPECT_NEAR(r.ttft.mean, p.stage[0] + p.send[0] + p.stage[1], 1e-12);
}

}  // namespace
