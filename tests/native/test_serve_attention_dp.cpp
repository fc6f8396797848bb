// Data-parallel attention (pool.attention_dp) against closed forms: each GPU holds every weight but 1/ep of the routed
// experts and caches only its own sequences; the group computes exactly the FLOPs one GPU would for the whole batch;
// the experts' all-to-all is two CommModel all-to-alls per MoE layer; the engine's limits are each GPU's; a request
// must fit one GPU's cache; invalid splits name their field.
#include <gtest/gtest.h>

#include "graph/moe_spread.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/kv_capacity.h"
#include "parallel/layout.h"
#include "serve_test_util.h"
#include "training/comm_model.h"

namespace {

using namespace sc;
using servetest::Base;
using servetest::Calibration;
using servetest::System;

// Mixtral 8x7B (8 experts, top-2, every layer MoE) on one DGX H100: attention data parallel over the node's 8 GPUs.
ServingConfig Mixtral(int input, int output, long long requests) {
    ServingConfig c = Base("mixtral-8x7b", 8, input, output, requests);
    c.pool.ep = 8;
    c.pool.attention_dp = true;
    return c;
}

// DeepSeek-V3 in FP8 as DeepSeek's prefill unit: DP32 attention over 4 H800 nodes, its 256 experts and 32 copies over
// EP32 (the all-to-all crosses InfiniBand).
ServingConfig DeepSeekPrefillUnit() {
    ServingConfig c = Base("deepseek-v3", 32, 10, 10, 1);
    c.precision.weights = c.precision.compute = Precision::fp8;
    c.pool.ep = 32;
    c.pool.attention_dp = true;
    c.pool.redundant_experts = 32;
    return c;
}

// `n` decodes, each with `context` tokens cached.
// `model` on a data-parallel attention group of `gpus` GPUs, the routed experts split over them.
ServingConfig DpGroup(const std::string& model, int gpus) {
    ServingConfig c = Base(model, gpus, 10, 10, 1);
    c.pool.ep = gpus;
    c.pool.attention_dp = true;
    return c;
}

// The error of Mixtral under TP8 (no attention_dp) with a data-parallel attention's `flag` set.
std::string ErrorUnderTp(bool PoolConfig::*flag) {
    ServingConfig tp = Base("mixtral-8x7b", 8, 10, 10, 1);
    tp.pool.*flag = true;
    return sctest::ErrorOf([&] { ValidateServingConfig(tp); });
}

BatchShape Decodes(int n, double context) {
    BatchShape b;
    for (int i = 0; i < n; ++i) b.AddDecode(context, 0);
    b.logits = n;
    return b;
}

TEST(ServeAttentionDp, EachGpuHoldsTheNonExpertWeightsWholeAndAnEpShareOfTheExperts) {
    const ServingConfig c = Mixtral(512, 2, 1);
    const ModelConfig& m = c.model;
    // SwiGLU experts: three h x expert_ffn matrices each, in every MoE layer, at the weights' 2 bytes.
    const double experts = static_cast<double>(m.moe_layers()) * m.moe.experts * 3 * m.hidden * m.moe.expert_ffn * 2;
    const double whole = ServingWeightBytesPerRank(m, c.precision, 1);
    EXPECT_NEAR(DpAttentionWeightBytesPerRank(m, c.precision, 8), whole - experts * 7 / 8, 1e-9 * whole);
    EXPECT_NEAR(DpAttentionWeightBytesPerRank(m, c.precision, 1), whole, 1e-9 * whole);
    const KvCapacity k = ComputeKvCapacity(m, c.precision, c.pool, System("dgx-h100-superpod").accelerator, c.engine);
    EXPECT_EQ(k.weight_bytes, DpAttentionWeightBytesPerRank(m, c.precision, 8));
    // Every KV head of every layer on the GPU that holds the sequence (tp 1), in bf16.
    EXPECT_EQ(k.kv_bytes_per_token, m.layers * 2.0 * m.kv_heads * m.head_dim * 2);
    EXPECT_EQ(ReplicaKvBlocks(k, c.pool), 8 * k.blocks);
    PoolConfig tp = c.pool;
    tp.attention_dp = false;
    EXPECT_EQ(ReplicaKvBlocks(k, tp), k.blocks);
}

TEST(ServeAttentionDp, TheGroupComputesWhatOneGpuComputesForTheWholeBatch) {
    const ServingConfig c = Mixtral(512, 2, 1);
    const sc::System& sys = System("dgx-h100-superpod");
    IterationCost dp(c.model, c.precision, c.pool, sys, &Calibration(), 512, 8192);
    IterationCost one(c.model, c.precision, PoolConfig{1, 1, 1, 1}, sys, &Calibration(), 512, 8192);
    EXPECT_EQ(dp.attention_dp(), 8);
    EXPECT_EQ(dp.KvBytesPerToken(), one.KvBytesPerToken());
    for (int n : {8, 64, 512}) {
        const BatchShape group = Decodes(n, 1000);
        const BatchShape mine = Decodes(n / 8, 1000);  // the sequences spread evenly
        // Eight GPUs, each its eighth of the sequences and 1/8 of the experts, compute the batch's FLOPs once.
        EXPECT_NEAR(8 * dp.Work(group).linear_flops, one.Work(group).linear_flops,
                    1e-12 * one.Work(group).linear_flops);
        EXPECT_NEAR(8 * dp.Work(group).attention_flops, one.Work(group).attention_flops,
                    1e-12 * one.Work(group).attention_flops);
        // Attention and the LM head are one GPU's on its own sequences; no TP all-reduce, no logits gather.
        const IterationBreakdown d = dp.Breakdown(group), o = one.Breakdown(mine);
        EXPECT_EQ(d.attention, o.attention);
        EXPECT_EQ(d.head, o.head);
        EXPECT_EQ(d.tp_comm, 0);
        // The all-to-all: each of a GPU's n/8 tokens' k copies dispatched (bf16 GEMM inputs) and combined, every layer.
        ParallelConfig p;
        p.dp = p.ep = 8;  // the expert group folded over the data-parallel GPUs
        const Layout layout(p);
        const CommModel net(sys, layout, TrainingOptions{}.in_network_reduction, &Calibration());
        const double copies = n / 8.0 * c.model.moe.top_k, bytes = copies * c.model.hidden * 2;
        EXPECT_NEAR(d.ep_comm, c.model.moe_layers() * 2 * net.Seconds(CollectiveType::all_to_all, GroupKind::ep, bytes),
                    1e-15);
        EXPECT_GT(d.ep_comm, 0);
    }
    // An uneven batch: the busiest GPU holds ceil(9 / 8) = 2 of the 9 sequences, so 2/9 of every sum.
    const BatchShape nine = Decodes(9, 1000);
    const double two = one.Breakdown(Decodes(2, 1000)).attention;
    EXPECT_NEAR(dp.Breakdown(nine).attention, two, 1e-12 * two);
}

TEST(ServeAttentionDp, OneRequestAloneIsOneGpusPrefillAndDecodes) {
    const ServingConfig c = Mixtral(512, 5, 1);
    const sc::System& sys = System("dgx-h100-superpod");
    const ServingRun run = SimulateServing(c, sys, &Calibration());
    IterationCost cost(c.model, c.precision, c.pool, sys, &Calibration(), 512, c.engine.max_tokens);
    ASSERT_EQ(run.result.completed, 1);
    EXPECT_NEAR(run.result.ttft.mean, cost.PrefillSeconds(512), 1e-12);
    double decode = 0;
    for (int k = 1; k < 5; ++k) decode += cost.DecodeSeconds(512 + k - 1);
    EXPECT_NEAR(run.result.tpot.mean, decode / 4, 1e-12);
    // Alone on its GPU the request's experts see its tokens only: one decode reads one expert of a GPU's one, where
    // one GPU holding all eight would read the two its token is routed to.
    IterationCost whole(c.model, c.precision, PoolConfig{1, 1, 1, 1}, sys, &Calibration(), 512, c.engine.max_tokens);
    EXPECT_LT(cost.DecodeSeconds(512), whole.DecodeSeconds(512));
}

TEST(ServeAttentionDp, EveryGpuKeepsTheEnginesLimits) {
    // 64 equal requests at 4 sequences a GPU: two waves of 32 on the eight GPUs (4 at a time under TP8).
    ServingConfig c = Mixtral(256, 8, 64);
    c.workload.arrival = ArrivalKind::offline;
    c.engine.max_seqs = 4;
    c.engine.max_tokens = 2048;
    const sc::System& sys = System("dgx-h100-superpod");
    ServingRun run = SimulateServing(c, sys, &Calibration());
    EXPECT_EQ(run.result.completed, 64);
    EXPECT_EQ(run.result.mean_running, 32);
    EXPECT_EQ(run.result.iterations, 2 * 8);
    c.pool.attention_dp = false;
    EXPECT_EQ(SimulateServing(c, sys, &Calibration()).result.mean_running, 4);
    // A prompt longer than one GPU's token budget runs in chunks of it, though the group's budget is 8 times larger:
    // 5,000 tokens are 2,048 + 2,048 + 904, then 7 decodes.
    ServingConfig l = Mixtral(5000, 8, 1);
    l.engine.max_tokens = 2048;
    EXPECT_EQ(SimulateServing(l, sys, &Calibration()).result.iterations, 3 + 7);
}

TEST(ServeAttentionDp, ARequestMustFitOneGpusCache) {
    ServingConfig c = Mixtral(100, 100, 1);
    c.engine.kv_blocks_override = 10;  // per GPU: 80 in the replica, but a sequence's cache is on one GPU
    EXPECT_EQ(sctest::ErrorOf([&] { SimulateServing(c, System("dgx-h100-superpod"), &Calibration()); }),
              "engine.kv_blocks: a request of 100 + 100 tokens needs 13 KV blocks but the cache holds 10 (one GPU's, "
              "attention_dp); use more memory, more GPUs per replica or shorter requests");
    c.engine.kv_blocks_override = 13;
    EXPECT_EQ(SimulateServing(c, System("dgx-h100-superpod"), &Calibration()).result.completed, 1);
}

TEST(ServeAttentionDp, InvalidSplitsNameTheField) {
    ServingConfig dense = Base("llama3-70b", 8, 10, 10, 1);
    dense.pool.attention_dp = true;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(dense); }),
              "pool.attention_dp: data-parallel attention splits the routed experts over the group, but Llama-3 70B "
              "has no mixture-of-experts layers (its data parallelism is replicas); valid: false");
    ServingConfig c = Mixtral(10, 10, 1);
    c.pool.ep = 4;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }),
              "pool.ep: ep=4 with attention_dp must equal tp=8 (every GPU holds experts/ep whole routed experts) and "
              "divide the 8 experts; valid: tp in 1, 2, 4, 8, ep = tp");
    c.pool.ep = 8;
    c.pool.pp = 33;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }),
              "pool.pp: pp=33 pipeline stages for 32 layers; valid: 1..32 (every stage holds at least one layer)");
    c.pool.pp = 1;
    c.decode_pool = c.pool;
    c.decode_pool->tp = c.decode_pool->ep = 16;  // more GPUs than experts
    EXPECT_NE(sctest::ErrorOf([&] { ValidateServingConfig(c); }).find("decode_pool.ep: ep=16 with attention_dp"),
              std::string::npos);
    c.decode_pool.reset();
    c.engine.speculation.tokens = 1;
    EXPECT_NE(sctest::ErrorOf([&] { ValidateServingConfig(c); }).find("engine.speculation: a draft head beside"),
              std::string::npos);
    c.engine.speculation.tokens = 0;
    EXPECT_NO_THROW(ValidateServingConfig(c));
}

TEST(ServeAttentionDp, RedundantExpertsAreSlotsThatAddWeightsAndReadsNotFlops) {
    ServingConfig c = Mixtral(512, 2, 1);
    const ModelConfig& m = c.model;
    const sc::System& sys = System("dgx-h100-superpod");
    const double experts = static_cast<double>(m.moe_layers()) * m.moe.experts * 3 * m.hidden * m.moe.expert_ffn * 2;
    const double whole = ServingWeightBytesPerRank(m, c.precision, 1);
    // 8 experts and 8 copies: 16 slots, 2 a GPU, a quarter of the experts' bytes.
    EXPECT_NEAR(DpAttentionWeightBytesPerRank(m, c.precision, 8, 8), whole - experts * 3 / 4, 1e-9 * whole);
    PoolConfig copies = c.pool;
    copies.redundant_experts = 8;
    IterationCost plain(m, c.precision, c.pool, sys, &Calibration(), 512, 8192);
    IterationCost spread(m, c.precision, copies, sys, &Calibration(), 512, 8192);
    // One token reads one expert on its GPU either way; 64 tokens hit about 2 of a GPU's 2 slots against 1 of its 1.
    EXPECT_EQ(spread.Breakdown(Decodes(1, 100)).linear, plain.Breakdown(Decodes(1, 100)).linear);
    EXPECT_GT(spread.Breakdown(Decodes(64, 100)).linear, plain.Breakdown(Decodes(64, 100)).linear);
    EXPECT_EQ(spread.Work(Decodes(64, 100)).linear_flops, plain.Work(Decodes(64, 100)).linear_flops);
    // Under TP with expert groups the copies are slots too: tp 8, ep 8, 8 copies hold 2/8 of the experts a rank.
    ServingConfig tp = Base("mixtral-8x7b", 8, 512, 2, 1);
    tp.pool.ep = 8;
    const double base = SimulateServing(tp, sys, &Calibration()).kv.weight_bytes;
    tp.pool.redundant_experts = 8;
    EXPECT_NEAR(SimulateServing(tp, sys, &Calibration()).kv.weight_bytes, base + experts / 8, 1e-9 * base);
}

TEST(ServeAttentionDp, RedundantExpertsMustFillTheGroupsEvenly) {
    ServingConfig c = Mixtral(10, 10, 1);
    c.pool.redundant_experts = 4;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }),
              "pool.ep: ep=8 with attention_dp must equal tp=8 (every GPU holds experts/ep whole routed experts) and "
              "divide the 8 experts and 4 redundant copies (12 slots); valid: tp in 1, 2, 3, 4, 6, 12, ep = tp");
    ServingConfig one = Base("mixtral-8x7b", 8, 10, 10, 1);
    one.pool.redundant_experts = 8;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(one); }),
              "pool.redundant_experts: redundant_experts=8 adds copies of routed experts to the ep groups, but ep=1 "
              "makes one group; valid: 0, or with ep > 1 any count that with the experts divides by ep");
    one.pool.ep = 4;
    one.pool.redundant_experts = 2;
    EXPECT_NE(
        sctest::ErrorOf([&] { ValidateServingConfig(one); }).find("the 8 experts and 2 redundant copies (10 slots)"),
        std::string::npos);
    // DeepSeek's decode unit: 256 experts and 32 copies over EP144, two slots a GPU.
    ServingConfig ds = Base("deepseek-v3", 144, 10, 10, 1);
    ds.pool.ep = 144;
    ds.pool.attention_dp = true;
    ds.pool.redundant_experts = 32;
    EXPECT_NO_THROW(ValidateServingConfig(ds));
    ds.pool.redundant_experts = 0;
    EXPECT_NE(sctest::ErrorOf([&] { ValidateServingConfig(ds); }).find("valid: tp in 1, 2, 4, 8, 16, 32, 64, 128, 256"),
              std::string::npos);
}

TEST(ServeAttentionDp, DeepEpSendsATokenOnceAGpuAndOnceANodeAsTheTrainingModelDoes) {
    const ServingConfig c = DeepSeekPrefillUnit();
    const sc::System& sys = System("h800-cluster");
    PoolConfig deepep = c.pool;
    deepep.deepep_dispatch = true;
    IterationCost plain(c.model, c.precision, c.pool, sys, &Calibration(), 512, 8192);
    IterationCost sent(c.model, c.precision, deepep, sys, &Calibration(), 512, 8192);
    MoeConfig slots = c.model.moe;
    slots.experts = 288;
    ParallelConfig p;
    p.dp = p.ep = 32;
    const Layout layout(p);
    const bool inr = TrainingOptions{}.in_network_reduction;
    const CommModel megatron(sys, layout, inr, &Calibration()), deep(sys, layout, inr, &Calibration(), true, &slots);
    ASSERT_GT(deep.DeepEpScaleOutShare(), 0);
    // DeepEP's FP8 dispatch has a scale per 128; the all-to-all sends the per-tensor FP8 GEMMs' input, a byte; both
    // combine in bf16. Both send a token once to each GPU holding one of its experts; DeepEP also once per node.
    const double h = c.model.hidden, deepep_fp8 = 1 + 4.0 / 128, fp8 = 1;
    auto a2a = [&](const CommModel& net, double copies, double in) {
        return c.model.moe_layers() * (net.Seconds(CollectiveType::all_to_all, GroupKind::ep, copies * h * in) +
                                       net.Seconds(CollectiveType::all_to_all, GroupKind::ep, copies * h * 2));
    };
    for (int n : {32, 1024}) {
        const double mine = n / 32.0;
        EXPECT_NEAR(plain.Breakdown(Decodes(n, 2000)).ep_comm, a2a(megatron, mine * MoeDistinctGroups(slots, 32), fp8),
                    1e-15);
        EXPECT_NEAR(sent.Breakdown(Decodes(n, 2000)).ep_comm,
                    a2a(deep, mine * MoeDistinctGroups(slots, 32), deepep_fp8), 1e-15);
        EXPECT_LT(sent.Breakdown(Decodes(n, 2000)).ep_comm, plain.Breakdown(Decodes(n, 2000)).ep_comm);
    }
    EXPECT_EQ(ErrorUnderTp(&PoolConfig::deepep_dispatch),
              "pool.deepep_dispatch: DeepEP dispatches the tokens of data-parallel attention to the experts, but "
              "attention_dp is false (under TP a rank picks its experts' rows locally); valid: false, or attention_dp "
              "true");
}

// The all-to-all dispatch carries the experts' GEMM input, quantized before it is sent (TensorRT-LLM's post-quant
// all-to-all: NVFP4 half a byte and a scale per 16 values, per-tensor FP8 a byte); DeepEP sends FP8 with a scale per
// 128 whatever the GEMMs compute in; the combine is 16-bit in every case. A token goes once to each GPU holding one
// of its experts, not once an expert (TensorRT-LLM's dispatch kernel skips a rank it has copied the token to).
TEST(ServeAttentionDp, TheAllToAllSendsTheExpertsGemmInputFormat) {
    const ServingConfig c = DpGroup("qwen3-235b-a22b", 4);
    const sc::System& sys = System("dgx-b200-superpod");
    ParallelConfig p;
    p.dp = p.ep = 4;
    const CommModel plain(sys, Layout(p), TrainingOptions{}.in_network_reduction, &Calibration());
    const double h = c.model.hidden;
    struct Case {
        Precision compute;
        bool deepep;
        double in;  // bytes a dispatched element
    };
    for (const Case& x : {Case{Precision::fp4, false, 0.5 + 1.0 / 16}, Case{Precision::fp8, false, 1.0},
                          Case{Precision::fp4, true, 1 + 4.0 / 128}, Case{Precision::bf16, false, 2.0}}) {
        SCOPED_TRACE(std::string(NameOf(x.compute)) + (x.deepep ? " deepep" : ""));
        ServingConfig v = c;
        v.precision.weights = v.precision.compute = x.compute;
        v.pool.deepep_dispatch = x.deepep;
        IterationCost cost(v.model, v.precision, v.pool, sys, &Calibration(), 512, 8192);
        // Inside one node DeepEP's per-node sends change nothing (its own test above has several nodes).
        const CommModel deep(sys, Layout(p), TrainingOptions{}.in_network_reduction, &Calibration(), true,
                             &v.model.moe);
        const CommModel& net = x.deepep ? deep : plain;
        const double copies = MoeDistinctGroups(v.model.moe, 4);
        ASSERT_LT(copies, v.model.moe.top_k);  // 8 experts of 128 over 4 GPUs reach fewer than 8 of them
        for (int n : {64, 2048}) {
            const double mine = n / 4.0, bytes = mine * copies * h;
            const double want =
                v.model.moe_layers() * (net.Seconds(CollectiveType::all_to_all, GroupKind::ep, bytes * x.in) +
                                        net.Seconds(CollectiveType::all_to_all, GroupKind::ep, bytes * 2));
            EXPECT_NEAR(cost.Breakdown(Decodes(n, 2000)).ep_comm, want, 1e-15) << n;
        }
    }
}

// TensorRT-LLM's fallback without NVLink (AllGatherReduceScatter): every GPU's tokens all-gathered in the GEMMs'
// input format with their top-k slots and weights, the experts' 16-bit outputs reduce-scattered back; both buffers
// the whole gathered tensor. On eight PCIe cards it reads their measured all-gather and reduce-scatter.
TEST(ServeAttentionDp, AnAllGatherDispatchGathersEveryGpusTokensAndReduceScattersTheOutputs) {
    ServingConfig c = DpGroup("qwen3-235b-a22b", 8);
    c.precision.weights = c.precision.compute = Precision::fp4;
    const sc::System& sys = System("rtx-pro-6000-pcie-server");
    PoolConfig gather = c.pool;
    gather.allgather_dispatch = true;
    IterationCost a2a(c.model, c.precision, c.pool, sys, &Calibration(), 512, 8192);
    IterationCost ag(c.model, c.precision, gather, sys, &Calibration(), 512, 8192);
    ParallelConfig p;
    p.dp = p.ep = 8;
    const CommModel net(sys, Layout(p), TrainingOptions{}.in_network_reduction, &Calibration());
    const double h = c.model.hidden, k = c.model.moe.top_k, nvfp4 = 0.5 + 1.0 / 16;
    for (int n : {64, 2048}) {
        SCOPED_TRACE(n);
        const double mine = n / 8.0, all = 8 * mine;
        const double want =
            c.model.moe_layers() * (net.Seconds(CollectiveType::all_gather, GroupKind::ep, all * (h * nvfp4 + k * 8)) +
                                    net.Seconds(CollectiveType::reduce_scatter, GroupKind::ep, all * h * 2));
        EXPECT_NEAR(ag.Breakdown(Decodes(n, 2000)).ep_comm, want, 1e-15);
        EXPECT_NE(ag.Breakdown(Decodes(n, 2000)).ep_comm, a2a.Breakdown(Decodes(n, 2000)).ep_comm);
    }
    EXPECT_EQ(ErrorUnderTp(&PoolConfig::allgather_dispatch),
              "pool.allgather_dispatch: the all-gather dispatch gathers data-parallel attention's tokens for the "
              "experts, but attention_dp is false (under TP every rank already holds them); valid: false, or "
              "attention_dp true");
    ServingConfig both = c;
    both.pool.allgather_dispatch = both.pool.deepep_dispatch = true;
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(both); }),
              "pool.allgather_dispatch: the tokens reach the experts either by DeepEP's sends or by an all-gather, "
              "not both; valid: false while deepep_dispatch is true");
}

// Pipelined data-parallel attention (TensorRT-LLM's DEPn,PPm): each stage is a data-parallel group of its own layers.
// A batch's stages are the busiest GPU's iteration shared by the layers each holds, the LM head on the last, the
// sends between; each GPU holds its stage's share of the weights and of every sequence's cache.
TEST(ServeAttentionDp, PipelinedStagesAreTheBusiestGpusLayersInTurn) {
    const ServingConfig c = DpGroup("qwen3-30b-a3b", 2);
    PoolConfig piped = c.pool;
    piped.pp = 2;
    EXPECT_NO_THROW(ValidateServingConfig(c));
    const sc::System& sys = System("dgx-h100-superpod");
    IterationCost cost(c.model, c.precision, piped, sys, &Calibration(), 512, 8192);
    ASSERT_EQ(cost.pp(), 2);
    const IterationBreakdown parts = cost.Breakdown(Decodes(64, 1000));
    ASSERT_GT(parts.pp_comm, 0);
    const PipelineTimes p = cost.DpPipeline(parts);
    ASSERT_EQ(p.stage.size(), 2u);
    ASSERT_EQ(p.send.size(), 1u);
    const double layers = parts.total() - parts.head - parts.pp_comm;  // 48 MoE layers, 24 a stage
    EXPECT_NEAR(p.stage[0], layers / 2, 1e-15);
    EXPECT_NEAR(p.stage[1], layers / 2 + parts.head, 1e-15);
    EXPECT_NEAR(p.send[0], parts.pp_comm, 1e-15);
    EXPECT_NEAR(p.stage[0] + p.stage[1] + p.send[0], parts.total(), 1e-15);
    // Half the layers' weights and half of every token's cache on a GPU: more than twice the blocks.
    const Accelerator& acc = sys.accelerator;
    const KvCapacity one = ComputeKvCapacity(c.model, c.precision, c.pool, acc, c.engine);
    const KvCapacity two = ComputeKvCapacity(c.model, c.precision, piped, acc, c.engine);
    EXPECT_NEAR(two.kv_bytes_per_token, one.kv_bytes_per_token / 2, 1e-9);
    EXPECT_GT(two.blocks, 2 * one.blocks);
}

TEST(ServeAttentionDp, TwoBatchOverlapHidesOneHalfsAllToAllBehindTheOthersCompute) {
    ServingConfig c = DeepSeekPrefillUnit();
    c.pool.deepep_dispatch = true;
    const sc::System& sys = System("h800-cluster");
    PoolConfig overlapped = c.pool;
    overlapped.two_batch_overlap = true;
    IterationCost one(c.model, c.precision, c.pool, sys, &Calibration(), 512, 8192);
    IterationCost two(c.model, c.precision, overlapped, sys, &Calibration(), 512, 8192);
    const double L = c.model.moe_layers();
    for (int n : {64, 4096}) {
        // Each half is 32 or 2,048 decodes: its compute twice, and per MoE layer 2 max(c, a) with one min(c, a) alone.
        const IterationBreakdown h = one.Breakdown(Decodes(n / 2, 3000));
        const double a = h.ep_comm / L, cmp = one.MoeLayerComputeSeconds(Decodes(n / 2, 3000));
        ASSERT_GT(a, 0);
        ASSERT_GT(cmp, 0);
        const IterationBreakdown t = two.Breakdown(Decodes(n, 3000));
        // Decodes run DeepEP's low-latency kernels, whose hooks hold no SMs.
        EXPECT_NEAR(t.total(), 2 * (h.total() - h.ep_comm) + 2 * L * std::max(0.0, a - cmp) + std::min(cmp, a),
                    1e-12 * t.total());
        EXPECT_EQ(t.attention, 2 * h.attention);
        // Never faster than the larger of both halves' compute and both halves' all-to-all.
        EXPECT_GE(t.total(), 2 * std::max(h.total() - h.ep_comm, h.ep_comm) * (1 - 1e-12));
    }
    // 64 prompts of 4,096 tokens, two a GPU: their all-to-all hides behind the other half's compute.
    BatchShape prompts;
    for (int i = 0; i < 64; ++i) prompts.AddPrefillChunk(0, 4096, 0);
    prompts.logits = 64;
    BatchShape half;
    for (int i = 0; i < 32; ++i) half.AddPrefillChunk(0, 4096, 0);
    half.logits = 32;
    const IterationBreakdown h = one.Breakdown(half);
    const double a = h.ep_comm / L, cmp = one.MoeLayerComputeSeconds(half), compute = 2 * (h.total() - h.ep_comm);
    // DeepEP's high-throughput kernels hold 20 of the H800's 132 SMs while they run beside the other half's compute.
    const double held = (2 * L - 1) * std::min(cmp, a) * 20 / 132;
    EXPECT_NEAR(two.Seconds(prompts), compute + 2 * L * std::max(0.0, a - cmp) + std::min(cmp, a) + held,
                1e-12 * two.Seconds(prompts));
    EXPECT_LT(two.Seconds(prompts), one.Seconds(prompts));
    // One sequence is not split.
    EXPECT_EQ(two.Seconds(Decodes(1, 3000)), one.Seconds(Decodes(1, 3000)));
    // The layer's compute: under one GPU's share its routed experts and attention are in it.
    EXPECT_GT(one.MoeLayerComputeSeconds(Decodes(4096, 3000)), one.MoeLayerComputeSeconds(Decodes(64, 3000)));
    ServingConfig tp = Base("mixtral-8x7b", 8, 10, 10, 1);
    tp.pool.two_batch_overlap = true;
    EXPECT_NE(sctest::ErrorOf([&] { ValidateServingConfig(tp); }).find("pool.two_batch_overlap: two micro-batches"),
              std::string::npos);
}

TEST(ServeAttentionDp, TheIterationIsItsBusiestGpusAndASequenceStaysOnItsGpu) {
    // Two requests at once on DP8: a 4,096-token prompt on the first GPU, a 16-token one on the second (a new sequence
    // goes to the GPU running the fewest). Every GPU waits at each MoE layer for the one prefilling 4,096 tokens, whose
    // experts see both prompts' tokens; then both decode, the first GPU reading the longer cache.
    ServingConfig c = Mixtral(1, 1, 2);  // lengths from the trace
    c.workload.arrival = ArrivalKind::trace;
    c.workload.trace = {{0, 4096, 2, 0}, {0, 16, 2, 0}};
    const sc::System& sys = System("dgx-h100-superpod");
    const ServingRun run = SimulateServing(c, sys, &Calibration());
    IterationCost cost(c.model, c.precision, c.pool, sys, &Calibration(), (4096 + 16) / 2.0, c.engine.max_tokens);
    BatchShape prefills, first;
    prefills.AddPrefillChunk(0, 4096, 0);
    prefills.AddPrefillChunk(0, 16, 0);
    prefills.logits = 2;
    first.AddPrefillChunk(0, 4096, 0);
    first.logits = 1;
    const double ttft = cost.Breakdown(prefills, &first).total();
    EXPECT_NEAR(run.result.ttft.min, ttft, 1e-12);
    EXPECT_NEAR(run.result.ttft.max, ttft, 1e-12);
    // Spread evenly (half of each sum on a GPU, RankShare) the iteration would be shorter.
    EXPECT_GT(ttft, cost.Breakdown(prefills).total());
    BatchShape decodes, longer;
    decodes.AddDecode(4096, 0);
    decodes.AddDecode(16, 0);
    decodes.logits = 2;
    longer.AddDecode(4096, 0);
    longer.logits = 1;
    EXPECT_NEAR(run.result.e2e.max, ttft + cost.Breakdown(decodes, &longer).total(), 1e-12);
}

}  // namespace
