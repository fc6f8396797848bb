// Vidur's profile of every linear layer of Llama 2 7B and 70B (data/vidur_h100_linear_ms.csv,
// data/vidur_a100_linear_ms.csv; microsoft/vidur@7d475133): the QKV, output, MLP up and down projections at TP 1, 2,
// 4 and 8 and 1-4,096 tokens, median milliseconds, in fp16. Read by the GEMM-profile table (test_gemm_profile.cpp)
// and by the framework-GEMM curve's derivation (test_framework_gemm.cpp).
#pragma once
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "config/gemm_grid.h"
#include "inference/serving_config.h"
#include "serve_test_util.h"

namespace vidur {

struct ProfileRow {
    std::string model;
    int tp = 0;
    double tokens = 0;
    double ms[4] = {0, 0, 0, 0};  // QKV, output, MLP up, MLP down
};

inline std::vector<ProfileRow> ReadProfile(const std::string& file) {
    std::istringstream in(sctest::ReadFile(servetest::kRoot + "/data/" + file));
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "model,tp,num_tokens,attn_pre_proj_ms,attn_post_proj_ms,mlp_up_proj_ms,mlp_down_proj_ms");
    std::vector<ProfileRow> rows;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string cell;
        ProfileRow r;
        std::getline(f, r.model, ',');
        std::getline(f, cell, ',');
        r.tp = std::stoi(cell);
        std::getline(f, cell, ',');
        r.tokens = std::stod(cell);
        for (double& ms : r.ms) {
            std::getline(f, cell, ',');
            ms = std::stod(cell);
        }
        rows.push_back(r);
    }
    return rows;
}

// Llama 2 7B and 70B as released (config.json): 70B is the Llama 3 70B shape with a 32,000-token vocabulary; 7B has
// 32 layers, 4,096 hidden, 32 heads with as many KV heads, FFN 11,008.
inline sc::ModelConfig Llama2(const std::string& name) {
    if (name == "Llama-2-70B") {
        sc::ModelConfig m = servetest::Model("llama3-70b");
        m.vocab = 32000;
        return m;
    }
    EXPECT_EQ(name, "Llama-2-7B");
    sc::ModelConfig m = servetest::Model("llama3-8b");
    m.kv_heads = 32;
    m.ffn = 11008;
    m.vocab = 32000;
    return m;
}

// The four GEMMs of one profile row on one TP rank, in the CSV's order (m = the row's tokens): QKV (n = the rank's
// query and KV heads), output (k = its query heads), MLP up (SwiGLU's gate and up, merged) and down.
inline void RowGemms(const ProfileRow& r, sc::GemmDims out[4]) {
    const sc::ModelConfig m = Llama2(r.model);
    const double h = m.hidden, d = m.head_dim, f = m.ffn, T = r.tokens;
    const double q = static_cast<double>(m.heads) / r.tp, kv = static_cast<double>(m.kv_heads) / r.tp;
    out[0] = {T, (q + 2 * kv) * d, h};
    out[1] = {T, h, q * d};
    out[2] = {T, 2 * f / r.tp, h};
    out[3] = {T, h, f / r.tp};
}

// Vidur profiled fp16 (its profiling dtype), as records 126-133 are read.
inline sc::ServingPrecision Fp16() {
    sc::ServingPrecision s;
    s.weights = s.compute = s.kv_cache = s.activations = s.embeddings = sc::Precision::fp16;
    return s;
}

}  // namespace vidur
