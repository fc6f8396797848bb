// DeepEP's dispatch (KernelChoices::deepep_dispatch) against Megatron-Core's all-to-all: the distinct ranks and
// nodes a token's experts reach (graph/moe_spread.h) checked by enumeration, the graph's dispatch bytes, the
// communication model's per-node sends (training/comm_model.h) in closed form, and the options and model field
// through the CLI.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/model_config.h"
#include "graph/moe_spread.h"
#include "parallel/job.h"
#include "parallel/layout.h"
#include "preset_files.h"
#include "test_util.h"
#include "trace/summary.h"
#include "training/comm_model.h"
#include "training/estimate.h"

namespace {

sc::MoeConfig Moe(int experts, int top_k, sc::MoeRouting routing) {
    sc::MoeConfig m;
    m.experts = experts, m.top_k = top_k, m.expert_ffn = 1, m.routing = routing;
    return m;
}

// Mean, over every k-subset of `experts` (each equally likely), of the count of groups of n consecutive expert
// ids it touches.
double MeanGroupsOverSubsets(const std::vector<int>& experts, int k, int n) {
    const int N = static_cast<int>(experts.size());
    double sum = 0, count = 0;
    std::vector<int> pick(k);
    for (int i = 0; i < k; ++i) pick[i] = i;
    while (true) {
        std::set<int> hit;
        for (int i : pick) hit.insert(experts[i] / n);
        sum += hit.size(), count += 1;
        int i = k - 1;
        while (i >= 0 && pick[i] == N - k + i) --i;
        if (i < 0) break;
        ++pick[i];
        for (int j = i + 1; j < k; ++j) pick[j] = pick[j - 1] + 1;
    }
    return sum / count;
}

// Every k-subset of E experts, equally likely: the mean count of groups it touches.
double EnumeratedUniform(int E, int k, int groups) {
    std::vector<int> all(E);
    for (int e = 0; e < E; ++e) all[e] = e;
    return MeanGroupsOverSubsets(all, k, E / groups);
}

// AutoModel's FakeBalancedGate over one period of tokens: token i takes experts ik .. ik+k-1 (mod E).
double EnumeratedContiguous(int E, int k, int groups) {
    const int n = E / groups;
    double sum = 0;
    for (int i = 0; i < E; ++i) {
        std::set<int> hit;
        for (int j = 0; j < k; ++j) hit.insert((i * k + j) % E / n);
        sum += hit.size();
    }
    return sum / E;
}

TEST(MoeSpread, UniformRoutingMatchesEnumeration) {
    for (auto [E, k, groups] : std::vector<std::tuple<int, int, int>>{{16, 4, 4}, {16, 4, 8}, {12, 5, 3}, {8, 2, 8}})
        EXPECT_NEAR(sc::MoeDistinctGroups(Moe(E, k, sc::MoeRouting::uniform), groups), EnumeratedUniform(E, k, groups),
                    1e-12)
            << E << " " << k << " " << groups;
    // One expert a rank: every pick is its own rank, so DeepEP sends what the all-to-all dispatcher sends.
    EXPECT_NEAR(sc::MoeDistinctGroups(Moe(8, 2, sc::MoeRouting::uniform), 8), 2, 1e-12);
}

// Group-limited routing enumerated: every choice of t of G router groups (each equally likely), then every
// k-subset of their experts.
double EnumeratedGroupLimited(int E, int k, int G, int t, int groups) {
    const int g = E / G;
    double sum = 0, count = 0;
    for (int mask = 0; mask < (1 << G); ++mask) {
        if (__builtin_popcount(mask) != t) continue;
        std::vector<int> experts;
        for (int e = 0; e < E; ++e)
            if (mask >> (e / g) & 1) experts.push_back(e);
        sum += MeanGroupsOverSubsets(experts, k, E / groups), count += 1;
    }
    return sum / count;
}

TEST(MoeSpread, GroupLimitedRoutingMatchesEnumeration) {
    // Parts inside one router group (groups a multiple of G) and parts holding whole router groups.
    for (auto [E, k, G, t, groups] : std::vector<std::tuple<int, int, int, int, int>>{
             {16, 3, 4, 2, 8}, {16, 3, 4, 2, 4}, {16, 3, 4, 2, 2}, {24, 4, 6, 3, 3}, {24, 4, 6, 2, 12}}) {
        sc::MoeConfig m = Moe(E, k, sc::MoeRouting::uniform);
        m.router_groups = G, m.router_group_topk = t;
        EXPECT_NEAR(sc::MoeDistinctGroups(m, groups), EnumeratedGroupLimited(E, k, G, t, groups), 1e-12)
            << E << " " << k << " " << G << " " << t << " " << groups;
    }
    // DeepSeek-V3's top-4 of 8 groups on eight nodes of 32 experts: a token reaches at most 4 nodes.
    sc::MoeConfig v3 = Moe(256, 8, sc::MoeRouting::uniform);
    v3.router_groups = 8, v3.router_group_topk = 4;
    EXPECT_LT(sc::MoeDistinctGroups(v3, 8), 4);
    EXPECT_LT(sc::MoeDistinctGroups(v3, 8), sc::MoeDistinctGroups(Moe(256, 8, sc::MoeRouting::uniform), 8));
}

TEST(MoeSpread, ContiguousRoutingMatchesEnumeration) {
    for (auto [E, k, groups] : std::vector<std::tuple<int, int, int>>{
             {256, 8, 64}, {256, 8, 8}, {128, 4, 64}, {12, 5, 4}, {12, 5, 6}, {32, 4, 8}})
        EXPECT_NEAR(sc::MoeDistinctGroups(Moe(E, k, sc::MoeRouting::contiguous), groups),
                    EnumeratedContiguous(E, k, groups), 1e-12)
            << E << " " << k << " " << groups;
    // At the limits (2^24 experts, as many groups or top_k): a count, at once, between 1 and min(k, groups).
    for (int k : {1, 3, 1 << 20, 1 << 24})
        for (int groups : {2, 1 << 12, 1 << 24})
            for (sc::MoeRouting routing : {sc::MoeRouting::contiguous, sc::MoeRouting::uniform}) {
                const double d = sc::MoeDistinctGroups(Moe(1 << 24, k, routing), groups);
                EXPECT_GE(d, 1 - 1e-9) << k << " " << groups;
                EXPECT_LE(d, std::min(k, groups) + 1e-9) << k << " " << groups;
            }
    // DeepSeek-V3 on 64 EP ranks: a token's eight experts are two ranks of one 8-GPU node.
    EXPECT_EQ(sc::MoeDistinctGroups(Moe(256, 8, sc::MoeRouting::contiguous), 64), 2);
    EXPECT_EQ(sc::MoeDistinctGroups(Moe(256, 8, sc::MoeRouting::contiguous), 8), 1);
}

double DispatchBytes(const sc::Job& job) {
    for (const sc::Block& b : job.graph.blocks)
        for (const sc::Op& op : b.forward)
            if (op.name == "moe.dispatch") return job.V(op.comm_bytes);
    return -1;
}

sc::ModelConfig DeepSeek() {
    return sc::ParseModelConfig(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/presets/models/deepseek-v3.json"));
}

// DeepSeek-V3 under AutoModel's contiguous gate on 64 EP ranks (eight nodes), and DeepEP's kernel choice.
sc::ModelConfig ContiguousDeepSeek() {
    sc::ModelConfig m = DeepSeek();
    m.moe.routing = sc::MoeRouting::contiguous;
    return m;
}
const sc::ParallelConfig kEp64 = sc::ParseParallelSpec("dp=64,ep=64,microbatch=1");
sc::KernelChoices DeepEp() {
    sc::KernelChoices k;
    k.deepep_dispatch = true;
    return k;
}

// Bytes of every expert all-to-all of a step in the trace summary, over all ranks, on 64 EP ranks.
double EpAllToAllBytes(const sc::ModelConfig& m, const sc::KernelChoices& k) {
    double bytes = 0;
    for (const sc::RankClass& c : sc::SummarizeJob(sc::MakeJob(m, kEp64, k)).classes)
        for (const sc::CollectiveTotal& t : c.collectives)
            if (t.group == sc::GroupKind::ep && t.type == sc::CollectiveType::all_to_all) bytes += t.bytes * c.ranks;
    return bytes;
}

TEST(MoeDispatch, TheGraphSendsOneCopyPerDestinationRankWithDeepEp) {
    sc::ModelConfig m = ContiguousDeepSeek();
    const sc::ParallelConfig& p = kEp64;
    const sc::KernelChoices deepep = DeepEp();
    const double token = 1.0 * m.seq * m.hidden * 2;  // one microbatch's tokens, bf16
    EXPECT_DOUBLE_EQ(DispatchBytes(sc::MakeJob(m, p)), token * m.moe.top_k);
    EXPECT_DOUBLE_EQ(DispatchBytes(sc::MakeJob(m, p, deepep)), token * 2);
    // The hottest expert's rank still receives its load over the mean (moe.load_imbalance).
    m.moe.load_imbalance = 2;
    EXPECT_DOUBLE_EQ(DispatchBytes(sc::MakeJob(m, p, deepep)), token * 2 * sc::MoeRankLoad(m.moe, 64));
}

// One source of truth: the traces' expert all-to-alls carry the graph's bytes, a quarter of the all-copies ones for
// DeepSeek-V3's contiguous routing on 64 EP ranks (two destination ranks a token where the all-to-all dispatcher
// sends eight copies).
TEST(MoeDispatch, TheTracesCarryTheSameCopies) {
    const sc::ModelConfig m = ContiguousDeepSeek();
    const double all_copies = EpAllToAllBytes(m, {});
    ASSERT_GT(all_copies, 0);
    EXPECT_DOUBLE_EQ(EpAllToAllBytes(m, DeepEp()), all_copies / 4);
}

// FP8 dispatch (KernelChoices::fp8_dispatch): the token-to-expert direction (the dispatch, the combine's gradient)
// carries 1 + 4/128 bytes an element, FP8 values and one fp32 scale per 128; the other direction stays bf16.
TEST(MoeDispatch, Fp8DispatchSendsTokensToExpertsInFp8AndBringsThemBackAtTheActivationWidth) {
    const sc::ModelConfig m = DeepSeek();
    const double copies = 1.0 * m.seq * m.hidden * m.moe.top_k;  // one microbatch's routed elements
    for (bool deepep : {false, true}) {
        sc::KernelChoices k;
        k.fp8_dispatch = true, k.deepep_dispatch = deepep;
        const sc::Job job = sc::MakeJob(m, kEp64, k);
        const double xr = deepep ? sc::MoeDistinctGroups(m.moe, 64) / m.moe.top_k : 1.0;
        std::map<std::string, double> bytes;
        for (const sc::Block& b : job.graph.blocks)
            for (const auto* ops : {&b.forward, &b.backward})
                for (const sc::Op& op : *ops)
                    if (op.name.rfind("moe.dispatch", 0) == 0 || op.name.rfind("moe.combine", 0) == 0)
                        bytes[op.name] = job.V(op.comm_bytes);
        ASSERT_EQ(bytes.size(), 4u);
        EXPECT_DOUBLE_EQ(bytes["moe.dispatch"], copies * xr * (1 + 4.0 / 128));
        EXPECT_DOUBLE_EQ(bytes["moe.combine.grad"], copies * xr * (1 + 4.0 / 128));
        EXPECT_DOUBLE_EQ(bytes["moe.combine"], copies * xr * 2);
        EXPECT_DOUBLE_EQ(bytes["moe.dispatch.grad"], copies * xr * 2);
    }
    // The traces carry it: the EP all-to-alls of a step shrink from 4 bf16 transfers to 2 bf16 and 2 FP8 ones.
    sc::KernelChoices fp8;
    fp8.fp8_dispatch = true;
    EXPECT_DOUBLE_EQ(EpAllToAllBytes(m, fp8), EpAllToAllBytes(m, {}) * (2 + (1 + 4.0 / 128)) / 4);
}

// Two 8-GPU nodes, ep=16, one expert a rank, top-2 contiguous: a token's two experts are two ranks of one node;
// DeepEP sends it over the scale-out link at most once, to the node, where the all-to-all dispatcher sends every
// copy bound for the other node.
TEST(MoeDispatch, DeepEpSendsOneCopyPerRemoteNodeInClosedForm) {
    sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    const sc::ParallelConfig p = sc::ParseParallelSpec("dp=16,ep=16");
    const sc::Layout layout(p);
    const sc::MoeConfig moe = Moe(16, 2, sc::MoeRouting::contiguous);
    const sc::CommModel plain(sys, layout, true, nullptr, true);
    const sc::CommModel deepep(sys, layout, true, nullptr, true, &moe);
    // Per byte of the buffer (two distinct ranks a token): the other node is reached by half the tokens, once.
    EXPECT_DOUBLE_EQ(deepep.DeepEpScaleOutShare(), 0.5 * 1 / 2);
    const double B = 64e6;
    const sc::NetworkLevel &up = sys.levels[0], &out = sys.levels[1];
    const double scale_up = 7.0 / 8 * B / (up.EffectiveGBps() * 1e9) + up.latency_us * 1e-6;
    const double scale_out = B * 0.25 / (out.EffectiveGBps() * 1e9) + out.latency_us * 1e-6;
    EXPECT_NEAR(deepep.Seconds(sc::CollectiveType::all_to_all, sc::GroupKind::ep, B), std::max(scale_up, scale_out),
                1e-12);
    const double all_copies = 7.0 / 16 * B / (up.EffectiveGBps() * 1e9) + up.latency_us * 1e-6 +
                              8.0 / 16 * B / (out.EffectiveGBps() * 1e9) + out.latency_us * 1e-6;
    EXPECT_NEAR(plain.Seconds(sc::CollectiveType::all_to_all, sc::GroupKind::ep, B), all_copies, 1e-12);
    // Other collectives, and other groups, are as before.
    EXPECT_EQ(deepep.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::dp, B),
              plain.Seconds(sc::CollectiveType::all_reduce, sc::GroupKind::dp, B));
}

TEST(MoeDispatch, InsideOneNodeDeepEpIsTheAllToAllOfItsCopies) {
    sc::System sys = sctest::LoadSystemPreset("dgx-h100-superpod");
    const sc::Layout layout(sc::ParseParallelSpec("dp=8,ep=8"));
    const sc::MoeConfig moe = Moe(64, 8, sc::MoeRouting::uniform);
    const sc::CommModel plain(sys, layout, true, nullptr, true);
    const sc::CommModel deepep(sys, layout, true, nullptr, true, &moe);
    for (double B : {1e5, 1e8})
        EXPECT_NEAR(deepep.Seconds(sc::CollectiveType::all_to_all, sc::GroupKind::ep, B),
                    plain.Seconds(sc::CollectiveType::all_to_all, sc::GroupKind::ep, B), 1e-15);
}

TEST(MoeDispatch, TheEstimateAndTheCliTakeTheOption) {
    // DeepSeek-V3 with ep=64 over eight nodes: DeepEP's EP all-to-all is below the all-to-all dispatcher's, and
    // contiguous routing (a token's experts on two ranks of one node) below uniform routing's.
    const std::string base =
        "estimate --json --allow-oom --model presets/models/deepseek-v3.json --system "
        "dgx-h100-superpod --parallel pp=4,dp=64,ep=64,batch=512,zero=1,recompute=full,uneven=1";
    auto ep_comm = [&](const std::string& extra) {
        const sctest::CliResult r = sctest::RunCli(base + extra, false);
        EXPECT_EQ(r.status, 0) << r.out;
        return nlohmann::json::parse(r.out)["training"]["breakdown"]["ep_comm"].get<double>();
    };
    const double all_to_all = ep_comm(""), uniform = ep_comm(" --options deepep_dispatch=on");
    const double contiguous = ep_comm(" --options deepep_dispatch=on --set moe.routing=contiguous");
    EXPECT_LT(uniform, all_to_all);
    // FP8 dispatch: less EP time with either dispatcher.
    EXPECT_LT(ep_comm(" --options fp8_dispatch=on"), all_to_all);
    EXPECT_LT(ep_comm(" --options deepep_dispatch=on,fp8_dispatch=on"), uniform);
    const sctest::CliResult bad_fp8 = sctest::RunCli(base + " --options fp8_dispatch=maybe");
    EXPECT_NE(bad_fp8.status, 0);
    EXPECT_NE(bad_fp8.out.find("fp8_dispatch"), std::string::npos) << bad_fp8.out;
    EXPECT_LT(contiguous, uniform);
    EXPECT_EQ(ep_comm(" --set moe.routing=contiguous"), all_to_all);  // every copy is sent either way
    const sctest::CliResult bad = sctest::RunCli(base + " --set moe.routing=random");
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.out.find("moe.routing"), std::string::npos) << bad.out;
    EXPECT_NE(bad.out.find("uniform"), std::string::npos) << bad.out;
}

}  // namespace
