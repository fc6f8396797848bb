// Traces against closed forms (FLOPs, every parallelism's communication volume), the independent
// Chakra checker on several layouts, and the compact summary against totals read back from the files.
#include <gtest/gtest.h>

#include "astra_rules.h"
#include "config/error.h"
#include "graph/model_stats.h"
#include "parallel/job.h"
#include "test_util.h"
#include "trace/chakra_et.h"
#include "trace/summary.h"
#include "trace_test_util.h"

namespace {

using sc::CollectiveType;
using sc::GroupKind;

sc::Job MakeJob(const sc::ModelConfig& m, const std::string& spec) {
    return sc::MakeJob(m, sc::ParseParallelSpec(spec));
}

// Sum over every rank of the summary's model FLOPs (matmul + attention).
double ModelFlopsAllRanks(const sc::TraceSummary& s) {
    double f = 0;
    for (const sc::RankClass& c : s.classes) f += (c.matmul_flops + c.attention_flops) * c.ranks;
    return f;
}

double RecomputeFlopsAllRanks(const sc::TraceSummary& s) {
    double f = 0;
    for (const sc::RankClass& c : s.classes) f += c.recompute_flops * c.ranks;
    return f;
}

const sc::CollectiveTotal* Find(const sc::RankClass& c, CollectiveType t, GroupKind g) {
    for (const sc::CollectiveTotal& x : c.collectives)
        if (x.type == t && x.group == g) return &x;
    return nullptr;
}

// GPT closed form: per token 6*(L*12h^2 + V*h) GEMM FLOPs and 6*L*h*(s+1) causal attention FLOPs.
TEST(Traces, StepFlopsEqualClosedFormAcrossLayouts) {
    sc::ModelConfig m = sctest::SmallGpt();
    const double L = 4, h = 256, V = 1000, s = 128, tokens = 8 * s;
    const double fwd = 2 * (L * 12 * h * h + V * h) + 2 * L * h * (s + 1);
    for (const char* spec : {"tp=2,pp=2,dp=2,microbatch=2,batch=8", "tp=1,pp=4,dp=1,batch=8,schedule=gpipe",
                             "tp=2,pp=2,dp=1,batch=8,schedule=interleaved,vstages=2", "cp=2,dp=2,batch=8,sp=1",
                             "tp=4,sp=1,batch=8,zero=3,dp=2"}) {
        sc::TraceSummary sum = sc::SummarizeJob(MakeJob(m, spec));
        EXPECT_DOUBLE_EQ(ModelFlopsAllRanks(sum), 3 * fwd * tokens) << spec;
        EXPECT_EQ(RecomputeFlopsAllRanks(sum), 0) << spec;
    }
    // Full recomputation adds one forward of every layer (not embedding or head); selective adds the attention core.
    sc::TraceSummary full = sc::SummarizeJob(MakeJob(m, "tp=2,pp=2,batch=8,recompute=full"));
    EXPECT_DOUBLE_EQ(ModelFlopsAllRanks(full), (3 * fwd + 2 * L * 12 * h * h + 2 * L * h * (s + 1)) * tokens);
    sc::TraceSummary sel = sc::SummarizeJob(MakeJob(m, "tp=2,pp=2,batch=8,recompute=selective"));
    EXPECT_DOUBLE_EQ(ModelFlopsAllRanks(sel), (3 * fwd + 2 * L * h * (s + 1)) * tokens);
    EXPECT_DOUBLE_EQ(RecomputeFlopsAllRanks(sel), 2 * L * h * (s + 1) * tokens);
}

TEST(Traces, StepFlopsMatchTheModelStatsOfEveryPreset) {
    // The same graph feeds both: per-token FLOPs times tokens equals the traces' total (dense presets,
    // where nothing is replicated across TP ranks).
    // GPT-3's vocabulary (50257) is padded to a multiple of tp in the traces, so it runs with tp=1.
    for (auto [preset, spec] :
         {std::pair{"gpt3-175b.json", "pp=4,dp=2,batch=16"}, {"llama3-8b.json", "tp=8,pp=4,dp=2,batch=16"}}) {
        sc::ModelConfig m = sc::ParseModelConfig(sctest::Preset(preset));
        sc::ModelStats st = sc::ComputeModelStats(m);
        sc::TraceSummary sum = sc::SummarizeJob(MakeJob(m, spec));
        EXPECT_NEAR(ModelFlopsAllRanks(sum) / (st.model_flops_per_token() * 16.0 * m.seq), 1.0, 1e-12) << preset;
    }
}

TEST(Traces, TensorParallelCommunicationEqualsClosedForm) {
    sc::ModelConfig m = sctest::SmallGpt();
    const double L = 4, bsh = 128 * 256 * 2.0 /* bf16 */;
    // Without SP: per layer two all-reduces forward and two backward, plus the embedding's (fwd), the
    // head input's (bwd) and the cross-entropy's two fp32 per token.
    sc::RankClass c = sc::SummarizeJob(MakeJob(m, "tp=2")).classes[0];
    const sc::CollectiveTotal* ar = Find(c, CollectiveType::all_reduce, GroupKind::tp);
    ASSERT_TRUE(ar);
    EXPECT_EQ(ar->count, 4 * L + 3);
    EXPECT_DOUBLE_EQ(ar->bytes, (4 * L + 2) * bsh + 8 * 128);
    // With SP: all-gathers and reduce-scatters of b*s*h replace them, 4L+2 of each, plus the backward's
    // all-gather of the s/tp input kept for the QKV, fc1 and LM-head weight gradients (Korthikanti et al.
    // 2022 Sec. 4.2.2): 6 all-gathers and 4 reduce-scatters per layer. An all-gather's comm_size is one
    // rank's shard (ASTRA-sim's meaning), b*s*h/tp.
    c = sc::SummarizeJob(MakeJob(m, "tp=2,sp=1")).classes[0];
    const sc::CollectiveTotal* ag = Find(c, CollectiveType::all_gather, GroupKind::tp);
    const sc::CollectiveTotal* rs = Find(c, CollectiveType::reduce_scatter, GroupKind::tp);
    ASSERT_TRUE(ag && rs);
    EXPECT_EQ(ag->count, 6 * L + 3);
    EXPECT_EQ(rs->count, 4 * L + 2);
    EXPECT_DOUBLE_EQ(ag->bytes, (6 * L + 3) * bsh / 2);
    EXPECT_DOUBLE_EQ(rs->bytes, (4 * L + 2) * bsh);
}

TEST(Traces, DataParallelSynchronizesGradientsOncePerStep) {
    sc::ModelConfig m = sctest::SmallGpt();
    const double params = sc::ComputeModelStats(m).params;
    // Four microbatches, one gradient reduction: all-reduce of every gradient (bf16), in buckets.
    sc::RankClass c = sc::SummarizeJob(MakeJob(m, "dp=2,batch=8")).classes[0];
    const sc::CollectiveTotal* ar = Find(c, CollectiveType::all_reduce, GroupKind::dp);
    ASSERT_TRUE(ar);
    EXPECT_DOUBLE_EQ(ar->bytes, 2 * params);
    // ZeRO-1: reduce-scatter the gradients once, all-gather the updated bf16 weights (comm_size: the shard).
    c = sc::SummarizeJob(MakeJob(m, "dp=2,batch=8,zero=1")).classes[0];
    EXPECT_DOUBLE_EQ(Find(c, CollectiveType::reduce_scatter, GroupKind::dp)->bytes, 2 * params);
    EXPECT_DOUBLE_EQ(Find(c, CollectiveType::all_gather, GroupKind::dp)->bytes, 2 * params / 2);
    const double M = 4;
    // ZeRO-2 keeps only its gradient shard, so it reduce-scatters after every microbatch's backward.
    c = sc::SummarizeJob(MakeJob(m, "dp=2,batch=8,zero=2")).classes[0];
    EXPECT_DOUBLE_EQ(Find(c, CollectiveType::reduce_scatter, GroupKind::dp)->bytes, M * 2 * params);
    EXPECT_GE(Find(c, CollectiveType::reduce_scatter, GroupKind::dp)->count, M);
    EXPECT_DOUBLE_EQ(Find(c, CollectiveType::all_gather, GroupKind::dp)->bytes, 2 * params / 2);
    // ZeRO-3: every microbatch gathers the weights twice (forward, backward) and scatters the gradients once.
    c = sc::SummarizeJob(MakeJob(m, "dp=2,batch=8,zero=3")).classes[0];
    // (The tied LM head shares the embedding's shard, gathered with the embedding block.)
    EXPECT_DOUBLE_EQ(Find(c, CollectiveType::all_gather, GroupKind::dp)->bytes, M * 2 * 2 * params / 2);
    EXPECT_DOUBLE_EQ(Find(c, CollectiveType::reduce_scatter, GroupKind::dp)->bytes, M * 2 * params);
}

TEST(Traces, ExpertParallelAllToAllEqualsRoutedTokens) {
    sc::ModelConfig m = sctest::SmallMoe();  // 4 layers, first dense, 8 experts top-2
    sc::RankClass c = sc::SummarizeJob(MakeJob(m, "ep=2,dp=2,batch=4")).classes[0];
    const sc::CollectiveTotal* a2a = Find(c, CollectiveType::all_to_all, GroupKind::ep);
    ASSERT_TRUE(a2a);
    const double moe_layers = 3, M = 2, T = 128, k = 2, h = 256;
    EXPECT_EQ(a2a->count, 4 * moe_layers * M);  // dispatch and combine, forward and backward
    EXPECT_DOUBLE_EQ(a2a->bytes, 4 * moe_layers * M * T * k * h * 2);
    // Total expert GEMM work over the EP group equals tokens x top_k (balanced routing).
    sc::Job job = MakeJob(m, "ep=2,dp=2,batch=4");
    sc::Job one = MakeJob(m, "batch=4");
    EXPECT_DOUBLE_EQ(sc::SummarizeJob(job).classes[0].matmul_flops * 2, sc::SummarizeJob(one).classes[0].matmul_flops);
    // Expert gradients reduce over the expert-data-parallel group (dp/ep = 1 here: none), the rest over dp.
    EXPECT_EQ(Find(c, CollectiveType::all_reduce, GroupKind::edp), nullptr);
    ASSERT_TRUE(Find(c, CollectiveType::all_reduce, GroupKind::dp));
}

TEST(Traces, LoadImbalanceSizesTheMostLoadedExpertRank) {
    // Dropless routing with the hottest expert at r = 2x the mean of 8: the rank holding it, its n = 8/ep experts
    // sharing the rest evenly, gets (r + (n-1)(8-r)/7)/n of a balanced rank's pairs; one rank of all experts gets
    // them all whatever the routing, one expert a rank gets r.
    sc::ModelConfig m = sctest::SmallMoe();  // 4 layers, first dense, 8 experts top-2, expert_ffn 512, 1 shared
    m.moe.load_imbalance = 2;
    EXPECT_DOUBLE_EQ(sc::MoeRankLoad(m.moe, 1), 1);
    EXPECT_DOUBLE_EQ(sc::MoeRankLoad(m.moe, 2), 8.0 / 7);
    EXPECT_DOUBLE_EQ(sc::MoeRankLoad(m.moe, 4), 10.0 / 7);
    EXPECT_DOUBLE_EQ(sc::MoeRankLoad(m.moe, 8), 2);
    sc::ModelConfig balanced = sctest::SmallMoe();
    const sc::RankClass hot = sc::SummarizeJob(MakeJob(m, "ep=2,dp=2,batch=4")).classes[0];
    const sc::RankClass even = sc::SummarizeJob(MakeJob(balanced, "ep=2,dp=2,batch=4")).classes[0];
    const double moe_layers = 3, M = 2, T = 128, k = 2, h = 256, fe = 512, load = 8.0 / 7;
    // Dispatch and combine carry the hot rank's pairs; its expert GEMMs (SwiGLU: 3 h x fe matrices, 6 h fe
    // FLOPs a pair forward, twice that backward) grow by the extra pairs; attention and shared experts do not.
    // (Trace nodes carry whole bytes and FLOPs: each of the 24 all-to-all nodes and the GEMM nodes rounds.)
    const sc::CollectiveTotal* a2a = Find(hot, CollectiveType::all_to_all, GroupKind::ep);
    EXPECT_NEAR(a2a->bytes, load * Find(even, CollectiveType::all_to_all, GroupKind::ep)->bytes, a2a->count);
    EXPECT_NEAR(hot.matmul_flops - even.matmul_flops, (load - 1) * moe_layers * M * T * k * 18 * h * fe, 1000);
    EXPECT_DOUBLE_EQ(hot.attention_flops, even.attention_flops);
    EXPECT_GT(hot.memory.activations, even.memory.activations);
    // With every expert on one rank the imbalance changes nothing.
    EXPECT_DOUBLE_EQ(sc::SummarizeJob(MakeJob(m, "dp=2,batch=4")).classes[0].matmul_flops,
                     sc::SummarizeJob(MakeJob(balanced, "dp=2,batch=4")).classes[0].matmul_flops);
}

TEST(Traces, ExpertTensorParallelSplitsExpertsOverTp) {
    sc::ModelConfig m = sctest::SmallMoe();
    // Same total work with experts split over TP (etp=2) as with whole experts: only who computes changes.
    sc::TraceSummary whole = sc::SummarizeJob(MakeJob(m, "tp=2,sp=1,ep=2,dp=2,batch=4"));
    sc::TraceSummary split = sc::SummarizeJob(MakeJob(m, "tp=2,sp=1,etp=2,ep=2,dp=2,batch=4"));
    EXPECT_DOUBLE_EQ(ModelFlopsAllRanks(split), ModelFlopsAllRanks(whole));
    // The TP group gathers its routed tokens before the experts and scatters after: 2 AG + 2 RS per MoE
    // layer and microbatch (forward and backward) of T*k*h bytes over the TP group (an all-gather's
    // comm_size: one rank's T*k*h/2).
    const double T = 128, k = 2, h = 256, moe_layers = 3, M = 2;
    const sc::CollectiveTotal* ag_split = Find(split.classes[0], CollectiveType::all_gather, GroupKind::tp);
    const sc::CollectiveTotal* ag_whole = Find(whole.classes[0], CollectiveType::all_gather, GroupKind::tp);
    ASSERT_TRUE(ag_split && ag_whole);
    EXPECT_DOUBLE_EQ(ag_split->bytes - ag_whole->bytes, 2 * moe_layers * M * T * k * h * 2 / 2);
    EXPECT_LT(split.classes[0].memory.weights, whole.classes[0].memory.weights);
}

TEST(Traces, PipelineSendsOneActivationPerMicrobatch) {
    sc::ModelConfig m = sctest::SmallGpt();
    sc::TraceSummary s = sc::SummarizeJob(MakeJob(m, "pp=2,microbatch=2,batch=6"));
    const double act = 2 * 128 * 256 * 2.0, M = 3;
    EXPECT_EQ(s.classes[0].sends, M);  // activations forward
    EXPECT_EQ(s.classes[0].recvs, M);  // gradients back
    EXPECT_DOUBLE_EQ(s.classes[0].send_bytes, M * act);
    EXPECT_DOUBLE_EQ(s.classes[1].recv_bytes, M * act);
    // Sequence parallelism sends the TP rank's share only.
    s = sc::SummarizeJob(MakeJob(m, "pp=2,tp=2,sp=1,microbatch=2,batch=6"));
    EXPECT_DOUBLE_EQ(s.classes[0].send_bytes, M * act / 2);
    // Without SP, Megatron's scatter/gather: each TP rank sends its 1/tp share and the receiving TP group
    // all-gathers the boundary, once per received activation (stage 1) or gradient (stage 0); an all-gather's
    // comm_size is one rank's share.
    const sc::ParallelConfig par = sc::ParseParallelSpec("pp=2,tp=2,microbatch=2,batch=6");
    s = sc::SummarizeJob(sc::MakeJob(m, par));
    for (int stage : {0, 1}) {
        SCOPED_TRACE(stage);
        EXPECT_DOUBLE_EQ(stage == 0 ? s.classes[0].send_bytes : s.classes[1].recv_bytes, M * act / 2);
        const sc::CollectiveTotal* ag = Find(s.classes[stage], CollectiveType::all_gather, GroupKind::tp);
        ASSERT_NE(ag, nullptr);
        EXPECT_EQ(ag->count, M);
        EXPECT_DOUBLE_EQ(ag->bytes, M * act / 2);
    }
    // Off (DeepSpeed's engine without partitioned activations): the whole boundary from every TP rank, no gather.
    sc::KernelChoices whole;
    whole.pp_scatter_gather = false;
    s = sc::SummarizeJob(sc::MakeJob(m, par, whole));
    EXPECT_DOUBLE_EQ(s.classes[0].send_bytes, M * act);
    EXPECT_EQ(Find(s.classes[1], CollectiveType::all_gather, GroupKind::tp), nullptr);
}

TEST(Traces, ContextParallelGathersKeysAndValues) {
    sc::ModelConfig m = sctest::SmallGpt();
    sc::RankClass c = sc::SummarizeJob(MakeJob(m, "cp=2,tp=2")).classes[0];
    // Per layer: forward all-gather of K and V (b*s*kv/tp*2d), backward reduce-scatter of dK, dV.
    const double kv = 128 * (8 / 2) * (32 + 32) * 2.0;
    EXPECT_DOUBLE_EQ(Find(c, CollectiveType::all_gather, GroupKind::cp)->bytes, 4 * kv / 2);  // shard: kv / cp
    EXPECT_DOUBLE_EQ(Find(c, CollectiveType::reduce_scatter, GroupKind::cp)->bytes, 4 * kv);
}

struct Layout {
    const char* name;
    bool moe;
    const char* spec;
};
// How GoogleTest names a layout in listings and failures (otherwise a byte dump).
void PrintTo(const Layout& l, std::ostream* os) { *os << (l.moe ? "moe " : "") << l.spec; }

class CheckerTest : public ::testing::TestWithParam<Layout> {};

TEST_P(CheckerTest, TracesObeyAstraSimRulesAndMatchTheSummary) {
    const Layout& l = GetParam();
    sc::Job job = MakeJob(l.moe ? sctest::SmallMoe() : sctest::SmallGpt(), l.spec);
    std::string dir = sctest::WriteTraces(job, l.name);

    // ASTRA-sim's rules, checked with our own reader (docs/chakra_et.md).
    EXPECT_EQ(sctest::AstraRuleBreaches(job, dir), "");

    // Totals read back from every file equal the class summary the ranks belong to.
    sc::TraceSummary sum = sc::SummarizeJob(job);
    sc::Layout layout(job.par);
    for (int r = 0; r < job.par.world(); ++r) {
        sc::EtFile f = sc::ReadEt(sctest::ReadFile(dir + "/trace." + std::to_string(r) + ".et"));
        EXPECT_EQ(f.version, "1.0.0");
        const sc::RankClass& c = sum.classes[layout.Stage(r)];
        double flops = 0, coll = 0, send = 0;
        for (const sc::EtNode& n : f.nodes) {
            if (n.type == sc::EtNodeType::comp) flops += n.num_ops;
            if (n.type == sc::EtNodeType::comm_coll) coll += n.comm_size;
            if (n.type == sc::EtNodeType::comm_send) send += n.comm_size;
        }
        double coll_sum = 0;
        for (const sc::CollectiveTotal& t : c.collectives) coll_sum += t.bytes;
        ASSERT_EQ(f.nodes.size(), c.total_nodes) << "rank " << r;
        EXPECT_DOUBLE_EQ(flops, c.flops) << "rank " << r;
        EXPECT_DOUBLE_EQ(coll, coll_sum) << "rank " << r;
        EXPECT_DOUBLE_EQ(send, c.send_bytes) << "rank " << r;
    }
}

TEST_P(CheckerTest, TracesPassTheIndependentChecker) {
    if (sctest::ChakraCheckerPath().empty()) GTEST_SKIP() << sctest::NoCheckerReason();
    const Layout& l = GetParam();
    sc::Job job = MakeJob(l.moe ? sctest::SmallMoe() : sctest::SmallGpt(), l.spec);
    std::string dir = sctest::WriteTraces(job, std::string(l.name) + "-checker");
    EXPECT_EQ(sctest::RunChecker(dir), 0) << sctest::ReadFile(dir + ".check.log");
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, CheckerTest,
    ::testing::Values(Layout{"tp2_pp2_dp2_1f1b", false, "tp=2,pp=2,dp=2,batch=8"},
                      Layout{"interleaved", false, "tp=2,pp=2,dp=2,schedule=interleaved,vstages=2,batch=8,zero=1"},
                      Layout{"gpipe_zero3_full", false, "pp=4,dp=2,schedule=gpipe,batch=8,zero=3,recompute=full"},
                      Layout{"cp_sp_selective", false,
                             "tp=2,cp=2,dp=2,sp=1,batch=4,recompute=selective,order=dp-tp-cp-pp"},
                      Layout{"moe_ep", true, "tp=2,sp=1,ep=2,dp=4,pp=2,batch=8,zero=2"},
                      Layout{"uneven", false, "pp=3,dp=2,batch=6,uneven=1"},
                      Layout{"moe_expert_tp", true, "tp=2,sp=1,etp=2,ep=2,dp=2,batch=4,zero=1"},
                      Layout{"moe_etp1_tp2_zero1", true, "tp=2,sp=1,ep=2,dp=4,batch=8,zero=1"},
                      // Expert parallelism folded over TP and DP ranks (ep=4 > dp=2), and with pp inside the
                      // rank order and context parallelism among the folded ranks.
                      Layout{"moe_folded", true, "tp=2,sp=1,ep=4,dp=2,pp=2,batch=8,zero=1"},
                      Layout{"dualpipe", false, "tp=2,pp=4,dp=1,batch=8,schedule=dualpipe,zero=1"},
                      Layout{"moe_dualpipe_zero2", true, "tp=2,sp=1,ep=4,dp=2,pp=2,batch=8,schedule=dualpipe,zero=2"},
                      // ZB-V: the V's turn on rank pp-1 sends nothing; rank 0 runs the embedding and the loss.
                      Layout{"zbv_zero2", false, "tp=2,pp=2,dp=2,batch=6,schedule=zbv,zero=2"},
                      // DualPipeV: ZB-V's V with DualPipe's order, MoE experts folded over the TP and DP ranks.
                      Layout{"moe_dualpipev_zero2", true, "tp=2,sp=1,ep=4,dp=2,pp=2,batch=8,schedule=dualpipev,zero=2"},
                      // PyTorch's interleaved zero bubble: two chunks a rank, every backward split.
                      Layout{"interleaved_zb", false, "tp=2,pp=2,dp=2,schedule=interleaved_zb,batch=8,zero=1"},
                      Layout{"moe_folded_cp_pp_mid", true, "tp=2,cp=2,sp=1,ep=8,dp=2,pp=2,batch=4,order=tp-pp-dp-cp"},
                      Layout{"zero2_tp2", false, "tp=2,pp=2,dp=2,batch=8,zero=2"},
                      Layout{"zero3_cp", false, "cp=2,dp=2,batch=4,zero=3,recompute=selective"}),
    [](const ::testing::TestParamInfo<Layout>& i) { return std::string(i.param.name); });

TEST(Traces, RankOutsideTheJobIsAClearError) {
    sc::Job job = MakeJob(sctest::SmallGpt(), "tp=2,pp=2,dp=2,batch=8");
    sc::RankTraceWriter w(job);
    for (int r : {-1, 8}) {
        try {
            w.RankFile(r);
            ADD_FAILURE() << "rank " << r << " was accepted";
        } catch (const sc::Error& e) {
            EXPECT_EQ(e.field, "rank");
            EXPECT_NE(std::string(e.what()).find("outside 0..7"), std::string::npos) << e.what();
        }
    }
    EXPECT_FALSE(w.RankFile(7).empty());
}

TEST(Traces, OutputIsDeterministic) {
    sc::Job job = MakeJob(sctest::SmallMoe(), "tp=2,sp=1,ep=2,dp=2,pp=2,batch=8");
    sc::RankTraceWriter a(job), b(job);
    for (int r : {0, 5}) {
        sc::StringSink x, y;
        a.WriteRank(r, x);
        b.WriteRank(r, y);
        EXPECT_EQ(x.bytes, y.bytes);
    }
}

TEST(Traces, EveryRankFileIsItsOwnNodesEncodedByWriteNode) {
    // RankTraceWriter encodes a stage's rank-invariant nodes once and passes them through for every rank of
    // the stage; each file must still be exactly what writing its decoded nodes one by one gives, with the
    // rank's own group ids and peers in the rank-dependent ones.
    sc::Job job = MakeJob(sctest::SmallMoe(), "tp=2,sp=1,ep=2,dp=2,pp=2,batch=8,order=dp-tp-cp-pp");
    sc::RankTraceWriter w(job);
    sc::Layout layout(job.par);
    for (int r = 0; r < w.world(); ++r) {
        sc::StringSink file;
        w.WriteRank(r, file);
        sc::EtFile et = sc::ReadEt(file.bytes);
        sc::StringSink again;
        sc::EtWriter re(again, r);
        re.WriteMetadata(et.version);
        int colls = 0, p2p = 0;
        ASSERT_EQ(et.nodes.size(), w.Program(layout.Stage(r)).nodes.size());
        for (size_t i = 0; i < et.nodes.size(); ++i) {
            const sc::EtNode& n = et.nodes[i];
            EXPECT_EQ(n.id, i);  // in program order: the cached runs sit where their nodes belong
            EXPECT_EQ(n.type, w.Program(layout.Stage(r)).nodes[i].type);
            re.WriteNode(n);
            if (n.type == sc::EtNodeType::comm_coll) {
                ++colls;
                EXPECT_TRUE(n.pg == layout.GroupId(GroupKind::tp, r) || n.pg == layout.GroupId(GroupKind::dp, r) ||
                            n.pg == layout.GroupId(GroupKind::ep, r) || n.pg == layout.GroupId(GroupKind::edp, r))
                    << "rank " << r << " node " << n.id << " pg " << n.pg;
            } else if (n.type == sc::EtNodeType::comm_send || n.type == sc::EtNodeType::comm_recv) {
                ++p2p;
                EXPECT_EQ(n.type == sc::EtNodeType::comm_send ? n.comm_src : n.comm_dst, r);
                EXPECT_EQ(n.type == sc::EtNodeType::comm_send ? n.comm_dst : n.comm_src, layout.PipelinePeer(r, 1));
            }
        }
        EXPECT_GT(colls, 0);
        EXPECT_GT(p2p, 0);
        EXPECT_EQ(again.bytes, file.bytes) << "rank " << r;
    }
}

TEST(Traces, CheckerCatchesABrokenTrace) {
    // Both checkers are real gates: a trace whose recv size is altered must fail our own reader's rules and the
    // independent checker.
    sc::Job job = MakeJob(sctest::SmallGpt(), "pp=2,batch=2");
    std::string dir = sctest::WriteTraces(job, "broken");
    std::string path = dir + "/trace.1.et";
    sc::EtFile f = sc::ReadEt(sctest::ReadFile(path));
    for (sc::EtNode& n : f.nodes)
        if (n.type == sc::EtNodeType::comm_recv) n.comm_size += 2;
    {
        sctest::FileSink s(path);
        sc::EtWriter w(s, 1);
        w.WriteMetadata("1.0.0");
        for (const sc::EtNode& n : f.nodes) w.WriteNode(n);
    }
    std::vector<sc::EtFile> files;
    for (int r = 0; r < 2; ++r)
        files.push_back(sc::ReadEt(sctest::ReadFile(dir + "/trace." + std::to_string(r) + ".et")));
    const std::string own =
        sctest::AstraRules::Check(files, sctest::AstraRules::ParseGroups(sctest::ReadFile(dir + "/trace.json")));
    EXPECT_NE(own.find("no matching recv"), std::string::npos) << own;
    EXPECT_NE(own.find("no matching send"), std::string::npos) << own;
    if (sctest::ChakraCheckerPath().empty()) GTEST_SKIP() << sctest::NoCheckerReason();
    EXPECT_EQ(sctest::RunChecker(dir), 1);
}

}  // namespace

namespace {

TEST(Traces, OwnAstraRulesCatchWhatAstraSimRejects) {
    // The rules check is a real gate too: each breakage below is reported, naming what is wrong.
    sc::Job job = MakeJob(sctest::SmallGpt(), "tp=2,pp=2,batch=4");
    sc::RankTraceWriter w(job);
    std::vector<sc::EtFile> files;
    for (int r = 0; r < w.world(); ++r) files.push_back(sc::ReadEt(std::string(w.RankFile(r))));
    sc::StringSink json;
    w.WriteCommGroups(json);
    const auto groups = sctest::AstraRules::ParseGroups(json.bytes);
    ASSERT_EQ(sctest::AstraRules::Check(files, groups), "");
    auto broken = [&](auto&& edit) {
        std::vector<sc::EtFile> f = files;
        edit(f);
        return sctest::AstraRules::Check(f, groups);
    };
    auto first = [](sc::EtFile& f, sc::EtNodeType t) -> sc::EtNode& {
        for (sc::EtNode& n : f.nodes)
            if (n.type == t) return n;
        throw std::runtime_error("no such node");
    };
    EXPECT_NE(broken([&](auto& f) { first(f[0], sc::EtNodeType::comp).num_ops = 0; }).find("num_ops 0"),
              std::string::npos);
    EXPECT_NE(broken([&](auto& f) { first(f[1], sc::EtNodeType::comm_recv).comm_size += 2; }).find("no matching"),
              std::string::npos);
    EXPECT_NE(
        broken([&](auto& f) { first(f[0], sc::EtNodeType::comm_coll).comm_size += 2; }).find("different sequence"),
        std::string::npos);
    EXPECT_NE(
        broken([&](auto& f) { first(f[0], sc::EtNodeType::comm_coll).pg = 999; }).find("not in the comm-group file"),
        std::string::npos);
    EXPECT_NE(broken([&](auto& f) { f[0].nodes[3].data_deps = {f[0].nodes[3].id + 1}; }).find("not an earlier node"),
              std::string::npos);
}

}  // namespace

// A rank's file in pieces (how the page hands a file of up to 1.4 GB to JavaScript, and how WriteRank writes): the
// pieces joined are RankFile's bytes at every piece size, down to one byte and below the metadata's size; each is
// full but the last and runs past its size by at most one record, so the writer's buffer stays the piece's size,
// not the file's; starting another rank (or RankFile) midway ends the file under way.
TEST(Traces, ARankFileInPiecesIsTheWholeFile) {
    sc::Job job = MakeJob(sctest::SmallMoe(), "tp=2,sp=1,ep=2,dp=2,pp=2,batch=32");
    sc::RankTraceWriter whole(job);
    std::vector<std::string> expected;
    for (int r = 0; r < whole.world(); ++r) expected.emplace_back(whole.RankFile(r));
    const size_t file = expected[0].size();
    ASSERT_GT(file, size_t{64} << 10);
    constexpr size_t kRecordSlack = 1024;  // a collective's record: name, attributes, group
    for (size_t piece : {size_t{1}, size_t{7}, size_t{100}, size_t{4096}, size_t{65536}, file, 4 * file}) {
        sc::RankTraceWriter w(job);
        for (int r : {0, 3, 7}) {
            w.StartRankFile(r);
            std::string joined;
            std::vector<size_t> sizes;
            for (std::string_view p = w.NextPiece(piece); !p.empty(); p = w.NextPiece(piece)) {
                joined.append(p);
                sizes.push_back(p.size());
            }
            EXPECT_EQ(joined, expected[r]) << "rank " << r << ", pieces of " << piece;
            EXPECT_TRUE(w.NextPiece(piece).empty()) << "a finished file stays finished";
            for (size_t i = 0; i < sizes.size(); ++i) {
                EXPECT_LE(sizes[i], std::max<size_t>(piece, 64) + kRecordSlack) << "piece " << i;
                if (i + 1 < sizes.size()) {
                    EXPECT_GE(sizes[i], piece) << "piece " << i << " of " << sizes.size();
                }
            }
        }
        if (piece == 4096) {
            EXPECT_LE(w.FileBufferBytes(), piece + kRecordSlack) << "the buffer holds a piece, not a file";
            EXPECT_LT(w.FileBufferBytes(), file / 4);
        }
    }
    sc::RankTraceWriter w(job);
    w.StartRankFile(1);
    EXPECT_FALSE(w.NextPiece(4096).empty());
    EXPECT_EQ(std::string(w.RankFile(5)), expected[5]) << "RankFile midway";
    EXPECT_TRUE(w.NextPiece(4096).empty()) << "RankFile ended the file under way";
    w.StartRankFile(2);
    w.NextPiece(1000);
    w.StartRankFile(6);
    std::string joined;
    for (std::string_view p = w.NextPiece(5000); !p.empty(); p = w.NextPiece(5000)) joined.append(p);
    EXPECT_EQ(joined, expected[6]) << "a start midway begins the new rank's file";
    EXPECT_THROW(w.StartRankFile(8), sc::Error);
    EXPECT_TRUE(w.NextPiece(4096).empty()) << "a refused start leaves no file under way";
}
