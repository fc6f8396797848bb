// Parameter counts against published sizes, and FLOPs per token against closed forms.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config/model_config.h"
#include "graph/model_stats.h"

namespace {

sc::ModelConfig Preset(const std::string& name) {
    const std::string root = SC_SOURCE_DIR;
    std::ifstream f(root + "/presets/models/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    return sc::ParseModelConfig(ss.str());
}

// Published totals: GPT-3 "175B" is 174.6e9 when counted (Brown et al. 2020; e.g. Narayanan et al. 2021
// Table 1 uses 174.6B); Llama-3 8.03e9 and 70.6e9 (the released checkpoints' parameter counts).
TEST(ModelStats, Gpt3ParameterCountIsExact) {
    sc::ModelStats st = sc::ComputeModelStats(Preset("gpt3-175b.json"));
    // 96 layers of 12h^2 + 13h, word embedding V*h, positions s*h, final LayerNorm 2h.
    const double h = 12288, V = 50257, s = 2048;
    EXPECT_DOUBLE_EQ(st.params, 96 * (12 * h * h + 13 * h) + V * h + s * h + 2 * h);
    EXPECT_NEAR(st.params / 1e9, 174.6, 0.05);
}

TEST(ModelStats, Llama3ParameterCountsMatchPublished) {
    EXPECT_NEAR(sc::ComputeModelStats(Preset("llama3-8b.json")).params / 1e9, 8.03, 0.005);
    EXPECT_NEAR(sc::ComputeModelStats(Preset("llama3-70b.json")).params / 1e9, 70.55, 0.05);
    EXPECT_NEAR(sc::ComputeModelStats(Preset("llama3-405b.json")).params / 1e9, 405.8, 0.5);
}

TEST(ModelStats, MoeParameterCountsMatchPublished) {
    // Mixtral: 46.7B total, 12.9B active (Jiang et al. 2024, sec. 2).
    sc::ModelStats mx = sc::ComputeModelStats(Preset("mixtral-8x7b.json"));
    EXPECT_NEAR(mx.params / 1e9, 46.7, 0.1);
    EXPECT_NEAR(mx.active_params / 1e9, 12.9, 0.1);
    // DeepSeek-V3: 671B total, 37B activated (arXiv 2412.19437, abstract), without the MTP module.
    sc::ModelConfig main_model = Preset("deepseek-v3.json");
    main_model.mtp_layers = 0;
    sc::ModelStats ds = sc::ComputeModelStats(main_model);
    EXPECT_NEAR(ds.params / 1e9, 671, 1.5);
    EXPECT_NEAR(ds.active_params / 1e9, 37.5, 1.0);
    // Its MTP module (sec. 2.2): one MoE layer, the 2h -> h projection and three RMSNorms (embedding, hidden state,
    // output); the embedding and the output head are shared, no parameters of their own. The report's "685B
    // including 14B of MTP" counts the checkpoint's copies of both tables too (2 V h = 1.85B; with them 684.5B).
    const double h = 7168, a = 128, ql = 1536, kvl = 512, dn = 128, dr = 64, dv = 128, E = 256, fe = 2048;
    const double mla = h * ql + ql + ql * a * (dn + dr) + h * (kvl + dr) + kvl + kvl * a * (dn + dv) + a * dv * h;
    const double moe_layer = mla + h * E + E * 3 * h * fe + 3 * h * fe + 2 * h;
    EXPECT_DOUBLE_EQ(sc::ComputeModelStats(Preset("deepseek-v3.json")).params - ds.params,
                     moe_layer + 2 * h * h + 3 * h);
    EXPECT_NEAR(sc::ComputeModelStats(Preset("gpt4-1.8t-moe.json")).params / 1e12, 1.83, 0.02);
}

TEST(ModelStats, NewerModelPresetsMatchPublishedSizes) {
    // Qwen3-30B-A3B: 30.5B total, 3.3B activated (Qwen3 Technical Report, Table 2).
    sc::ModelStats qw = sc::ComputeModelStats(Preset("qwen3-30b-a3b.json"));
    EXPECT_NEAR(qw.params / 1e9, 30.5, 0.05);
    EXPECT_NEAR(qw.active_params / 1e9, 3.3, 0.06);
    // gpt-oss model card, Table 1: 116.83B and 20.91B total, 5.13B and 3.61B active, where "active" counts the
    // unembedding but not the embedding (2880 x 201088 = 0.579B each). The biases and attention sinks the presets
    // leave out are the 0.04B short of 120B's total.
    const double table = 2880.0 * 201088;
    sc::ModelStats big = sc::ComputeModelStats(Preset("gpt-oss-120b.json"));
    EXPECT_NEAR(big.params / 1e9, 116.83, 0.06);
    EXPECT_NEAR((big.active_params - table) / 1e9, 5.13, 0.02);
    sc::ModelStats small = sc::ComputeModelStats(Preset("gpt-oss-20b.json"));
    EXPECT_NEAR(small.params / 1e9, 20.91, 0.02);
    EXPECT_NEAR((small.active_params - table) / 1e9, 3.61, 0.02);
    // Grok-1: "314B parameters" (xai-org/grok-1 README), a rounded figure: its 64 layers of 8 gated experts
    // (3 x 6144 x 32768 each) and attention alone hold 314.8B, the two 131072 x 6144 tables 1.6B more. Within 1%.
    EXPECT_NEAR(sc::ComputeModelStats(Preset("grok-1.json")).params / 1e9, 314, 3.2);
    // Nemotron-4 340B: 9.4B embedding and 331.6B non-embedding parameters (technical report, Sec. 2.2).
    sc::ModelStats nm = sc::ComputeModelStats(Preset("nemotron4-340b.json"));
    EXPECT_NEAR(nm.params / 1e9, 9.4 + 331.6, 0.1);
}

// Closed form for a dense GPT: matmul FLOPs per token = 6 * (per-layer GEMM weights * L + V*h) and

// The dense models serving benchmarks run most, against the totals their model cards print (Hugging Face's count
// of the released weights): Llama 2 7B/13B/70B 6.74B, 13.0B, 69.0B; Llama 3.2 1B/3B 1.24B, 3.21B (tied
// embeddings: one 128256 x h table); Qwen3 8B/14B/32B 8.2B, 14.8B, 32.8B and their non-embedding 6.95B, 13.2B,
// 31.2B (Qwen3 model cards); Qwen2.5 7B/72B 7.61B, 72.7B and 7B's non-embedding 6.53B (Qwen2.5 model cards; the
// QKV biases the presets leave out are 0.13M and 0.8M in all). The 72B card's non-embedding 70.0B is not checked:
// its own total less the two 152064 x 8192 tables is 70.2B.
TEST(ModelStats, CommonDenseModelPresetsMatchPublishedSizes) {
    struct Case {
        const char* file;
        double total_b, tolerance_b;
    };
    for (const Case& c :
         {Case{"llama2-7b.json", 6.74, 0.005}, Case{"llama2-13b.json", 13.0, 0.05}, Case{"llama2-70b.json", 69.0, 0.05},
          Case{"llama3.2-1b.json", 1.24, 0.005}, Case{"llama3.2-3b.json", 3.21, 0.005},
          Case{"qwen3-8b.json", 8.2, 0.05}, Case{"qwen3-14b.json", 14.8, 0.05}, Case{"qwen3-32b.json", 32.8, 0.05},
          Case{"qwen2.5-7b.json", 7.61, 0.01}, Case{"qwen2.5-72b.json", 72.7, 0.05}})
        EXPECT_NEAR(sc::ComputeModelStats(Preset(c.file)).params / 1e9, c.total_b, c.tolerance_b) << c.file;
    // Non-embedding: the two untied tables (vocab x hidden each) off the total.
    auto body = [](const char* file) {
        const sc::ModelConfig m = Preset(file);
        return (sc::ComputeModelStats(m).params - 2.0 * m.vocab * m.hidden) / 1e9;
    };
    EXPECT_NEAR(body("qwen3-8b.json"), 6.95, 0.005);
    EXPECT_NEAR(body("qwen3-14b.json"), 13.2, 0.05);
    EXPECT_NEAR(body("qwen3-32b.json"), 31.2, 0.05);
    EXPECT_NEAR(body("qwen2.5-7b.json"), 6.53, 0.005);
}
// causal attention = 3 (fwd + 2x bwd) * 2 * L * h * (s+1) (QK^T and AV over s(s+1)/2 pairs per sequence).
TEST(ModelStats, Gpt3FlopsPerTokenEqualClosedForm) {
    sc::ModelStats st = sc::ComputeModelStats(Preset("gpt3-175b.json"));
    const double h = 12288, V = 50257, s = 2048, L = 96;
    EXPECT_DOUBLE_EQ(st.matmul_flops_per_token, 6 * (L * 12 * h * h + V * h));
    EXPECT_DOUBLE_EQ(st.attention_flops_per_token, 3 * 2 * L * h * (s + 1));
    // The dense part stays within 0.1% of 6N (N includes biases, norms and positions).
    EXPECT_NEAR(st.matmul_flops_per_token / st.six_n_flops_per_token(), 1.0, 1e-3);
}

TEST(ModelStats, GqaFlopsUseKvHeads) {
    sc::ModelConfig m = Preset("llama3-8b.json");
    sc::ModelStats st = sc::ComputeModelStats(m);
    const double h = 4096, kvd = 8 * 128, f = 14336, V = 128256, L = 32, s = 8192;
    double layer = 2 * h * h + 2 * h * kvd + 3 * h * f;
    EXPECT_DOUBLE_EQ(st.matmul_flops_per_token, 6 * (L * layer + V * h));  // untied: LM head GEMM, lookup free
    EXPECT_DOUBLE_EQ(st.attention_flops_per_token, 6 * L * h * (s + 1));
}

TEST(ModelStats, StateBytesFollowZeroConvention) {
    sc::ModelConfig m = Preset("llama3-8b.json");
    sc::ModelStats st = sc::ComputeModelStats(m);
    EXPECT_DOUBLE_EQ(st.weight_bytes, 2 * st.params);
    EXPECT_DOUBLE_EQ(st.gradient_bytes, 2 * st.params);
    EXPECT_DOUBLE_EQ(st.optimizer_bytes, 12 * st.params);  // fp32 master + m + v
    m.precision.compute = sc::Precision::fp32;
    m.precision.grad = sc::Precision::fp32;
    st = sc::ComputeModelStats(m);
    EXPECT_DOUBLE_EQ(st.optimizer_bytes, 8 * st.params);  // no separate master copy
}

TEST(ModelStats, EditingAFieldChangesTheResult) {
    sc::ModelConfig m = Preset("gpt3-175b.json");
    double before = sc::ComputeModelStats(m).params;
    m.layers = 48;
    EXPECT_LT(sc::ComputeModelStats(m).params, before * 0.51);
}

}  // namespace

namespace {

// Mixtral (MoE, GQA, SwiGLU): each token runs attention, the router and top_k of the experts.
TEST(ModelStats, MoeFlopsPerTokenEqualClosedForm) {
    sc::ModelStats st = sc::ComputeModelStats(Preset("mixtral-8x7b.json"));
    const double L = 32, h = 4096, a = 32, kv = 8, d = 128, V = 32000, E = 8, k = 2, fe = 14336, s = 32768;
    double layer = h * (a + 2 * kv) * d + a * d * h + h * E + k * 3 * h * fe;
    EXPECT_DOUBLE_EQ(st.matmul_flops_per_token, 6 * (L * layer + V * h));
    EXPECT_DOUBLE_EQ(st.attention_flops_per_token, 3 * L * a * (d + d) * (s + 1));
}

// DeepSeek-V3 (MLA, 3 dense layers then 1 shared + top-8 of 256 routed experts), and its MTP module: one more MoE
// layer, the 2h -> h projection and one more LM head (the graph's other ops are elementwise).
TEST(ModelStats, MlaFlopsPerTokenEqualClosedForm) {
    sc::ModelStats st = sc::ComputeModelStats(Preset("deepseek-v3.json"));
    const double h = 7168, a = 128, ql = 1536, kvl = 512, dn = 128, dr = 64, dv = 128, V = 129280, s = 4096;
    const double f = 18432, E = 256, k = 8, fe = 2048, dense = 3, moe = 58;
    double mla = h * ql + ql * a * (dn + dr) + h * (kvl + dr) + kvl * a * (dn + dv) + a * dv * h;
    const double moe_layer = mla + h * E + k * 3 * h * fe + 3 * h * fe, mtp = 1;
    double per_token = dense * (mla + 3 * h * f) + moe * moe_layer + V * h;
    per_token += mtp * (2 * h * h + moe_layer + V * h);
    EXPECT_DOUBLE_EQ(st.matmul_flops_per_token, 6 * per_token);
    EXPECT_DOUBLE_EQ(st.attention_flops_per_token, 3 * (dense + moe + mtp) * a * (dn + dr + dv) * (s + 1));
}

}  // namespace
