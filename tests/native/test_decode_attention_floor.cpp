// The fixed cost of a decode-attention call (presets/calibration/measured.json "decode_attention_floor"): derived
// here again from the published paged-decode timings in data/calibration.json ("decode_attention"), so a change to
// either shows as a stale preset; then the serving model is checked to charge it to every decode-attention call
// where, and only where, it was measured.
//   ./build/stagecraft_tests --gtest_filter='DecodeAttentionFloor.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "inference/iteration_cost.h"
#include "serve_test_util.h"
#include "test_util.h"
#include "training/compute_model.h"

namespace {

using namespace sc;
using json = nlohmann::json;

// Per series (one kernel at one shape, the cache growing), the intercept of the least-squares line through its
// (read + written bytes, GPU time in us) points; the median over the series whose hardware names `gpu`.
struct Derived {
    double alpha_us = 0;
    int series = 0;
};

Derived Derive(const std::string& gpu) {
    const json data = json::parse(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/data/calibration.json"));
    std::map<std::string, std::vector<std::pair<double, double>>> by_series;
    for (const json& r : data.at("decode_attention")) {
        if (r.at("hardware").get<std::string>().rfind(gpu, 0) != 0) continue;
        const json& m = r.at("measured");
        by_series[r.at("series")].push_back(
            {m.at("read_bytes").get<double>() + m.at("write_bytes").get<double>(), m.at("time_us").get<double>()});
    }
    std::vector<double> alphas;
    for (const auto& [series, pts] : by_series) {
        double mx = 0, my = 0;
        for (const auto& [x, y] : pts) mx += x, my += y;
        mx /= pts.size(), my /= pts.size();
        double sxy = 0, sxx = 0;
        for (const auto& [x, y] : pts) sxy += (x - mx) * (y - my), sxx += (x - mx) * (x - mx);
        alphas.push_back(my - sxy / sxx * mx);
    }
    Derived d;
    d.series = static_cast<int>(alphas.size());
    if (alphas.empty()) return d;
    std::sort(alphas.begin(), alphas.end());
    const size_t n = alphas.size();
    const double median = n % 2 ? alphas[n / 2] : (alphas[n / 2 - 1] + alphas[n / 2]) / 2;
    d.alpha_us = std::round(median * 100) / 100;
    return d;
}

TEST(DecodeAttentionFloor, IsTheMedianInterceptOfThePublishedSeries) {
    for (const auto& [gpu, part] : {std::pair{"H100", "h100-sxm"}, std::pair{"A100", "a100-80gb"},
                                    std::pair{"B200", "b200"}, std::pair{"GB200", "gb200"}, std::pair{"B300", "b300"},
                                    std::pair{"GB300", "gb300"}, std::pair{"RTX PRO 6000", "rtx-pro-6000-server"}}) {
        SCOPED_TRACE(gpu);
        const Derived d = Derive(gpu);
        const DecodeAttentionFloor* f = FindDecodeAttentionFloor(servetest::Calibration(), part);
        ASSERT_NE(f, nullptr) << part << " has no decode_attention_floor entry; it would be alpha_us " << d.alpha_us;
        EXPECT_EQ(f->alpha_us, d.alpha_us) << "presets/calibration/measured.json decode_attention_floor \"" << f->id
                                           << "\" is stale: alpha_us is now " << d.alpha_us;
        EXPECT_EQ(f->series_count, d.series);
    }
    // Ten series of three kernels on H100 (ONNX Runtime's, FlashAttention-2's and -3's), two of one on A100; on
    // each Blackwell part TensorRT-LLM's attention op at Llama 3 70B's TP8 shape, one series a batch of 1-2,048.
    EXPECT_EQ(Derive("H100").series, 10);
    EXPECT_EQ(Derive("A100").series, 2);
    for (const char* gpu : {"B200", "GB200", "B300", "GB300", "RTX PRO 6000"}) EXPECT_EQ(Derive(gpu).series, 12) << gpu;
    // The 40 GB A100 and the other sm_90 parts read the same entries; a part with no measurement has none.
    EXPECT_EQ(FindDecodeAttentionFloor(servetest::Calibration(), "a100-40gb"),
              FindDecodeAttentionFloor(servetest::Calibration(), "a100-80gb"));
    EXPECT_EQ(FindDecodeAttentionFloor(servetest::Calibration(), "h200"),
              FindDecodeAttentionFloor(servetest::Calibration(), "h100-sxm"));
    EXPECT_EQ(FindDecodeAttentionFloor(servetest::Calibration(), "l40s"), nullptr);
    EXPECT_EQ(FindDecodeAttentionFloor(servetest::Calibration(), "mi300x"), nullptr);
}

// A fixed cost given in milliseconds, or none, or a count that is no count, is refused naming the field.
TEST(DecodeAttentionFloor, BadEntriesAreRefusedNamingTheField) {
    auto broken = [](const std::string& from, const std::string& to) {
        return servetest::CalibrationErrorWith("decode_attention_floor", from, to);
    };
    EXPECT_NE(broken("\"alpha_us\": 15.39", "\"alpha_us\": 15390").find("decode_attention_floor[0].alpha_us"),
              std::string::npos);
    EXPECT_NE(broken("\"alpha_us\": 15.39", "\"alpha_us\": 0").find("decode_attention_floor[0].alpha_us"),
              std::string::npos);
    EXPECT_NE(broken("\"series_count\": 10", "\"series_count\": -1").find("decode_attention_floor[0].series_count"),
              std::string::npos);
    EXPECT_NE(broken("\"series_count\": 10", "\"kernels\": 10").find("decode_attention_floor[0]"), std::string::npos);
    // A block's cost in microseconds, or none, is a unit slip.
    for (const char* bad : {"\"sequence_kv_head_ns\": 7040", "\"sequence_kv_head_ns\": 0"})
        EXPECT_NE(broken("\"sequence_kv_head_ns\": 7.04", bad).find("decode_attention_floor[2].sequence_kv_head_ns"),
                  std::string::npos)
            << bad;
}

// One decode step of one short sequence: every layer's attention is the fixed cost plus its bytes at the
// STREAM-copy bandwidth, the same sum whatever the GEMMs' floor; a part without the entry pays the kernel floor.
TEST(DecodeAttentionFloor, EveryDecodeAttentionCallPaysIt) {
    const ModelConfig m = servetest::Model("llama3-70b");
    ServingPrecision p;
    BatchShape b;
    b.AddDecode(100, 0);
    const double kv = 2.0 * 1 * 128 * 2;  // K and V of one token, one KV head per rank at TP8
    // Q and O of 8 heads; the 100 cached keys and the new one read, the new one written.
    const double bytes = 64.0 / 8 * 128 * 2 * 2 + 101 * kv + kv;
    for (const char* sys : {"dgx-h100-superpod", "dgx-a100-superpod", "dgx-b200-superpod", "mi300x-cluster"}) {
        SCOPED_TRACE(sys);
        const IterationCost cost(m, p, 8, servetest::System(sys), &servetest::Calibration(), 128, 64);
        const double bw = cost.compute_model().memory_bytes_per_s();
        const IterationBreakdown d = cost.Breakdown(b);
        if (const DecodeAttentionFloor* f = cost.decode_attention_floor()) {  // one block: 1 sequence x 1 KV head
            EXPECT_NEAR(d.attention, 80 * (f->alpha_us * 1e-6 + bytes / bw + f->sequence_kv_head_ns * 1e-9), 1e-12);
        } else {
            EXPECT_NEAR(d.attention, 80 * (cost.kernel_floor().alpha_s + bytes / bw), 1e-12);
        }
    }
    const IterationCost h100(m, p, 8, servetest::System("dgx-h100-superpod"), &servetest::Calibration(), 128, 64);
    ASSERT_NE(h100.decode_attention_floor(), nullptr);
    EXPECT_EQ(h100.decode_attention_floor()->alpha_us, 15.39);
    EXPECT_GT(h100.decode_attention_floor()->alpha_us * 1e-6, h100.kernel_floor().alpha_s);
}

// A block's cost (sequence_kv_head_ns), derived again from TensorRT-LLM's own generation-attention op
// (data/decode_attention_trtllm_blocks.json: every shape of aiconfigurator's table at the batches where batch x KV
// heads fills the SMs, so XQA runs one block a sequence and KV head): the median over the part's rows of the op's
// time beyond the model's call without it (alpha_us and the bytes at the part's streaming rate), a block. Then the
// term is measured against the op: the model's call with it, over every row, against without it.
struct BlockRow {
    double heads, kv_heads, head_dim, window, kv_bytes, batch, kv_len, us;
};

std::vector<BlockRow> BlockRows(const std::string& part, int* sms) {
    static const json data =
        json::parse(sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/data/decode_attention_trtllm_blocks.json"));
    const json& p = data.at("parts").at(part);
    *sms = p.at("sms");
    std::vector<BlockRow> rows;
    for (const json& r : p.at("rows")) rows.push_back({r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]});
    return rows;
}

// The serving model's decode call (IterationCost::AttentionPerLayer) on a batch of equal sequences, in us, from
// the floor and the bytes it reads; `per_block_ns` 0 leaves the block term out.
double ModelCallUs(const BlockRow& r, double alpha_us, double bytes_per_s, double per_block_ns) {
    const double keys = r.batch * (r.window > 0 ? std::min(r.kv_len, r.window) : r.kv_len);
    const double kv = 2 * r.kv_heads * r.head_dim * r.kv_bytes;  // K and V of one token
    const double bytes = r.batch * r.heads * r.head_dim * 2 * 2 + keys * kv + r.batch * kv;
    return alpha_us + bytes / bytes_per_s * 1e6 + per_block_ns * 1e-3 * r.batch * r.kv_heads;
}

TEST(DecodeAttentionFloor, ABlocksCostIsTheMedianOfTheOpsTimeBeyondItsBytes) {
    for (const char* part : {"b200", "gb200", "b300", "gb300", "rtx-pro-6000-server"}) {
        SCOPED_TRACE(part);
        int sms = 0;
        const std::vector<BlockRow> rows = BlockRows(part, &sms);
        const Accelerator& acc = servetest::Part(part);
        EXPECT_EQ(sms, acc.sm_count);
        const DecodeAttentionFloor* f = FindDecodeAttentionFloor(servetest::Calibration(), part);
        ASSERT_NE(f, nullptr);
        const double bw =
            ComputeModel(acc, Precision::bf16, &servetest::Calibration(), TrainingOptions{}).memory_bytes_per_s();
        std::vector<double> per_block;
        for (const BlockRow& r : rows) {
            ASSERT_GE(r.batch * r.kv_heads, sms);  // one block a sequence and KV head
            per_block.push_back((r.us - ModelCallUs(r, f->alpha_us, bw, 0)) * 1e3 / (r.batch * r.kv_heads));
        }
        std::sort(per_block.begin(), per_block.end());
        const size_t n = per_block.size();
        const double median = n % 2 ? per_block[n / 2] : (per_block[n / 2 - 1] + per_block[n / 2]) / 2;
        EXPECT_NEAR(f->sequence_kv_head_ns, std::round(median * 100) / 100, 1e-9)
            << "presets/calibration/measured.json decode_attention_floor \"" << f->id
            << "\" is stale: sequence_kv_head_ns is now " << std::round(median * 100) / 100;
        double without = 0, with = 0;
        for (const BlockRow& r : rows) {
            without += std::fabs(ModelCallUs(r, f->alpha_us, bw, 0) / r.us - 1);
            with += std::fabs(ModelCallUs(r, f->alpha_us, bw, f->sequence_kv_head_ns) / r.us - 1);
        }
        std::printf(
            "%s: %zu rows of the op, mean |error| of the model's call %.1f%% without the block term, %.1f%% "
            "with %.2f ns a block\n",
            part, n, 100 * without / n, 100 * with / n, f->sequence_kv_head_ns);
        EXPECT_LT(with, without);
    }
    // Hopper's floor comes from other kernels' timings, not this op's: no block term is derived against it.
    EXPECT_EQ(FindDecodeAttentionFloor(servetest::Calibration(), "h100-sxm")->sequence_kv_head_ns, 0);
}

// The serving model charges the block term to every decode call, by the rank's KV heads: GPT-OSS-120B (64 query
// heads, 8 KV heads of 64) on B200 at TP1 and TP2 (4 KV heads a rank), 1,024 sequences of 1,000 keys: against the same
// calibration without the term, every layer (windowed or not) takes a block a sequence and KV head longer.
TEST(DecodeAttentionFloor, EveryDecodeCallPaysABlockASequenceAndKvHead) {
    const ModelConfig m = servetest::Model("gpt-oss-120b");
    ASSERT_EQ(m.kv_heads, 8);
    const sc::System& sys = servetest::System("dgx-b200-superpod");
    ServingPrecision p;
    BatchShape b;
    for (int i = 0; i < 1024; ++i) b.AddDecode(999, 0);
    for (const int tp : {1, 2}) {
        SCOPED_TRACE(tp);
        const IterationCost cost(m, p, tp, sys, &servetest::Calibration(), 128, 64);
        const DecodeAttentionFloor* f = cost.decode_attention_floor();
        ASSERT_NE(f, nullptr);
        ASSERT_GT(f->sequence_kv_head_ns, 0);
        CalibrationTable no_blocks = servetest::Calibration();
        for (DecodeAttentionFloor& d : no_blocks.decode_attention_floor) d.sequence_kv_head_ns = 0;
        const IterationCost without(m, p, tp, sys, &no_blocks, 128, 64);
        EXPECT_NEAR(cost.Breakdown(b).attention - without.Breakdown(b).attention,
                    m.layers * f->sequence_kv_head_ns * 1e-9 * 1024 * (8 / tp), 1e-12);
    }
}

}  // namespace
