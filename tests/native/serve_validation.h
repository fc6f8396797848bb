// What the serving validations share: a row of predicted against measured, trtllm-bench's engine settings and
// request counts, the cause read back from a throughput row that misses, and the table the docs show.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/hardware_config.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/kv_capacity.h"
#include "inference/published_serving_runs.h"
#include "serve_test_util.h"

namespace servevalidation {

using namespace sc;
using servetest::Calibration;

inline constexpr double kTarget = 0.10;

struct Row {
    int index = 0;      // record index in the file
    std::string what;   // the measured quantity
    std::string setup;  // model / hardware / split / workload, short
    double measured = 0, predicted = 0;
    bool expressible = true;
    std::string reason;  // not expressible: why; outside 10%: the named cause
    // An offline throughput row (a trtllm-bench run at full load): its accelerator preset and GEMM precision class,
    // what the published-runs table groups it by (inference/published_serving_runs.h). "" for other rows.
    std::string accelerator, precision_class;
    double error() const { return predicted / measured - 1; }
};

inline Row Make(int index, const std::string& what, const std::string& setup, double measured, double predicted) {
    Row r;
    r.index = index, r.what = what, r.setup = setup, r.measured = measured, r.predicted = predicted;
    return r;
}
inline Row NotPredicted(int index, const std::string& what, const std::string& setup, double measured,
                        const std::string& why) {
    Row r = Make(index, what, setup, measured, 0);
    r.expressible = false;
    r.reason = why;
    return r;
}

// trtllm-bench build's engine settings (tensorrt_llm/bench/build/tuning.py, calc_engine_setting and
// finetune_setting): KV requests that fit 95% of (device memory x GPUs - parameters x bytes), at ISL + OSL
// tokens each, capped at 4096, rounded up; max_num_tokens = that batch x (1 + ISL/OSL), capped at 32768, at
// least 2048, rounded up. The tool's own arithmetic, reproduced, not fitted.
inline std::pair<int, int> TrtllmBenchSettings(const ModelConfig& m, const ServingPrecision& prec, int tp,
                                               const Accelerator& acc, int isl, int osl) {
    ServingPrecision ones;
    ones.weights = ones.embeddings = Precision::fp8;  // 1 byte each: bytes = parameters
    const double params_g = ServingWeightBytesPerRank(m, ones, 1) / 1e9;
    const double bpe = BytesOf(prec.weights) < 2 ? 1 : 2, kv_bpe = BytesOf(prec.kv_cache) < 2 ? 1 : 2;
    const double per_token_g = 2.0 * m.layers * std::max(tp, m.kv_heads) * m.head_dim * kv_bpe / (1024.0 * 1024 * 1024);
    const double available = acc.MemoryBytes() / (1024.0 * 1024 * 1024) * tp - params_g * bpe;
    const double requests = available * 0.95 / per_token_g / (isl + osl);
    const double raw_bs = std::min(requests, 4096.0);
    const double raw_token = std::min(raw_bs * (1 + static_cast<double>(isl) / osl), 32768.0);
    int bs = raw_bs < 256    ? std::max(64, 32 * static_cast<int>(std::ceil(raw_bs / 32)))
             : raw_bs < 1024 ? 128 * static_cast<int>(std::ceil(raw_bs / 128))
                             : 256 * static_cast<int>(std::ceil(raw_bs / 256));
    int tok = raw_token < 4096   ? std::max(2048, 256 * static_cast<int>(std::ceil(raw_token / 256)))
              : raw_token < 8192 ? 512 * static_cast<int>(std::ceil(raw_token / 512))
                                 : 1024 * static_cast<int>(std::ceil(raw_token / 1024));
    return {bs, tok};
}

// perf-overview v0.14 "Preparing a Dataset": requests per ISL/OSL pair.
inline long long TrtllmRequests(int isl, int osl) {
    static const std::map<std::pair<int, int>, long long> n = {
        {{128, 128}, 30000}, {{128, 2048}, 3000},  {{128, 4096}, 1500}, {{2048, 128}, 3000},  {{2048, 2048}, 1500},
        {{5000, 500}, 1500}, {{1000, 1000}, 3000}, {{500, 2000}, 3000}, {{20000, 2000}, 1000}};
    auto it = n.find({isl, osl});
    return it == n.end() ? 1000 : it->second;
}

inline std::string Pct(double x) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * x);
    return buf;
}

// The number of sequences at once that, through this cost model, gives the measured output rate: requests of
// `isl`/`osl` tokens, each prefilled alone and decoded `osl` steps in a batch of n at the mean context, so n
// requests take n x prefill + osl x step(n) and yield n x osl tokens. Found by bisection on n in [1, upper].
inline double ImpliedConcurrency(const ServingConfig& c, const sc::System& sys, int isl, int osl, double measured,
                                 double upper) {
    IterationCost cost(c.model, c.precision, c.pool.tp, sys, &Calibration(), isl, 1);
    const double prefill = cost.PrefillSeconds(isl), context = isl + osl / 2.0;
    auto rate = [&](double n) {
        BatchShape d;
        d.decodes = d.logits = n;
        d.decode_keys = n * (context + 1);
        return n * osl / (n * prefill + osl * cost.Seconds(d));
    };
    double lo = 1, hi = std::max(1.0, upper);
    if (rate(hi) <= measured) return hi;
    if (rate(lo) >= measured) return lo;
    for (int i = 0; i < 60; ++i) {
        const double mid = (lo + hi) / 2;
        (rate(mid) < measured ? lo : hi) = mid;
    }
    return lo;
}

// Why a simulated throughput row misses, from where its predicted time went and what memory it had; the
// measured rate read back as sequences at once (ImpliedConcurrency) is the evidence.
inline std::string ThroughputCause(const Row& row, const ServingRun& run, int concurrent, const ServingConfig& c,
                                   const sc::System& sys, int isl, int osl) {
    const IterationBreakdown& b = run.result.busy;
    const double t = b.total(), kv_gib = run.kv.kv_bytes / 1073741824.0;
    const double implied = ImpliedConcurrency(c, sys, isl, osl, row.measured, concurrent);
    char buf[900];
    if (kv_gib < 16 && row.error() > 0) {
        // What the omitted allocations would have to be for only `implied` sequences to fit (the cache is the
        // free fraction of what they leave).
        const double missing = (concurrent - implied) * (isl + osl) * run.kv.kv_bytes_per_token /
                               c.engine.kv_memory_fraction / 1073741824.0;
        std::snprintf(
            buf, sizeof buf,
            "KV cache of only %.1f GiB/GPU beside %.1f GiB of weights and %.1f GiB of runtime memory (%d sequences "
            "fit): the measured rate is what %.0f at once give in this model, as if ~%.1f GiB/GPU more were taken "
            "before the cache; what the memory model still omits (TensorRT's activations beyond the workspace, "
            "runtime and decoder buffers sized by the engine's max batch and vocabulary) has no source giving its "
            "size for this engine",
            kv_gib, run.kv.weight_bytes / 1073741824.0, run.kv.runtime_bytes / 1073741824.0, concurrent, implied,
            missing);
    } else if (row.error() > 0) {
        // Published paged decode kernels reach STREAM-copy bandwidth at 64 sequences on H100 (DecodeAttentionFloor's
        // series); where the part has them the call's fixed cost is charged too.
        const bool measured_decode = run.rates.decode_attention.rfind("no fixed cost", 0) != 0;
        std::snprintf(buf, sizeof buf,
                      "over: %s of the predicted time is attention over the caches (at STREAM-copy bandwidth%s), %s "
                      "GEMMs, %s TP all-reduce at %d sequences at once; the measured rate is what %.0f give in this "
                      "model, or the %d at %.2fx the step time. Per-iteration host work (no measured source) is not "
                      "modelled",
                      Pct(b.attention / t).c_str(),
                      measured_decode ? ", and a measured fixed cost per decode call"
                                      : "; no decode-attention timing "
                                        "for this part",
                      Pct(b.linear / t).c_str(), Pct(b.tp_comm / t).c_str(), concurrent, implied, concurrent,
                      row.predicted / row.measured);
        // Where the all-reduce is most of the step, the rate it was timed at and where that rate came from.
        const sc::NetworkLevel& tp_level = sys.levels.front();
        auto eff = tp_level.provenance.find("efficiency");
        if (b.tp_comm > 0.5 * t && eff != tp_level.provenance.end()) {
            char more[300];
            std::snprintf(more, sizeof more,
                          "; the all-reduce runs over %s at %.0f GB/s per direction, an efficiency %s",
                          tp_level.name.c_str(), tp_level.EffectiveGBps(),
                          eff->second.status == "ASSUMED" ? "assumed (no collective measured on this part)"
                                                          : "derived from a measured collective");
            return std::string(buf) + more;
        }
    } else {
        std::snprintf(buf, sizeof buf, "under: %s of the predicted time is GEMMs, %s attention, %s TP all-reduce",
                      Pct(b.linear / t).c_str(), Pct(b.attention / t).c_str(), Pct(b.tp_comm / t).c_str());
    }
    return buf;
}

inline std::string Fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : v >= 1 ? "%.2f" : "%.4f", v);
    return buf;
}

// The table of `rows` and its summary, as the docs show it; `generator` names the test that writes it.
inline std::string TableMarkdown(const std::vector<Row>& rows, const std::string& generator) {
    std::string md =
        "<!-- generated by " + generator +
        "; do not edit by hand -->\n\n| record | setup | measured | predicted | error | cause when outside 10% |\n"
        "|---|---|---|---|---|---|\n";
    std::map<std::string, std::vector<double>> by;  // errors per kind of measurement
    std::vector<double> all;
    int within = 0, skipped = 0;
    for (const Row& r : rows) {
        if (!r.expressible) {
            md += "| " + std::to_string(r.index) + " | " + r.setup + " | " + Fmt(r.measured) + " " + r.what +
                  " | — | — | not predicted: " + r.reason + " |\n";
            ++skipped;
            continue;
        }
        const double e = r.error();
        char err[32];
        std::snprintf(err, sizeof err, "%+.1f%%", 100 * e);
        md += "| " + std::to_string(r.index) + " | " + r.setup + " | " + Fmt(r.measured) + " " + r.what + " | " +
              Fmt(r.predicted) + " | " + err + " | " + (std::fabs(e) > kTarget ? r.reason : "") + " |\n";
        all.push_back(std::fabs(e));
        by[r.what].push_back(std::fabs(e));
        within += std::fabs(e) <= kTarget;
    }
    auto line = [](const std::string& name, const std::vector<double>& v) {
        double mean = 0, worst = 0;
        int in = 0;
        for (double x : v) mean += x, worst = std::max(worst, x), in += x <= kTarget;
        char buf[200];
        std::snprintf(buf, sizeof buf, "| %s | %zu | %d | %.1f%% | %.1f%% |\n", name.c_str(), v.size(), in,
                      v.empty() ? 0 : 100 * mean / v.size(), 100 * worst);
        return std::string(buf);
    };
    md += "\n| measurement | rows | within 10% | mean abs error | worst |\n|---|---|---|---|---|\n";
    for (const auto& [k, v] : by) md += line(k, v);
    md += line("all", all);
    md += "\n" + std::to_string(all.size()) + " comparisons, " + std::to_string(within) + " within 10%, " +
          std::to_string(skipped) + " records not predicted.\n";
    return md;
}

// A trtllm-bench throughput run of `c`'s model, precision and TP: the engine as trtllm-bench builds it
// (TrtllmBenchSettings), TensorRT-LLM's runtime (64 tokens a KV block, KvCacheConfig tokens_per_block;
// GUARANTEED_NO_EVICT, trtllm-bench's default policy, printed as "Scheduling Policy: Guaranteed No Evict"; chunked
// context on; its own all-reduce, AllReduceStrategy.AUTO, the strategy its builder gives every TP all-reduce) with
// `kv_fraction` of the free memory for the cache, the page's requests all queued at once. Fills
// the row's prediction, and its cause when it is outside 10%; a run the memory model refuses is not expressible.
inline void PredictTrtllmThroughput(Row& row, ServingConfig c, const sc::System& sys, int isl, int osl,
                                    double kv_fraction) {
    const auto [bs, tok] = TrtllmBenchSettings(c.model, c.precision, c.pool.tp, sys.accelerator, isl, osl);
    c.engine.max_seqs = bs;
    c.engine.max_tokens = tok;
    c.engine.block_size = 64;
    c.engine.memory_policy = KvMemoryPolicy::free_fraction;
    c.engine.kv_memory_fraction = kv_fraction;
    c.engine.admission = KvAdmission::reserve_full;
    c.engine.chunked_prefill = true;
    c.pool.all_reduce = EngineAllReduce::tensorrt_llm;  // the engine builder's AllReduceStrategy.AUTO
    c.workload.arrival = ArrivalKind::offline;
    c.workload.requests = TrtllmRequests(isl, osl);
    c.workload.input.min = c.workload.input.max = isl;
    c.workload.output.min = c.workload.output.max = osl;
    try {
        ServingRun run = SimulateServing(c, sys, &Calibration());
        row.predicted = run.result.output_tokens_per_s;
        row.accelerator = sys.accelerator.id;
        row.precision_class = PublishedPrecisionOf(c.precision.compute);
        const double concurrent = std::min<double>(bs, std::floor(run.kv.blocks / std::ceil((isl + osl) / 64.0)));
        if (std::fabs(row.error()) > kTarget)
            row.reason = ThroughputCause(row, run, static_cast<int>(concurrent), c, sys, isl, osl);
    } catch (const Error& e) {
        row.expressible = false;
        row.reason = std::string("the memory model says it does not fit: ") + e.what();
    }
}

// Every record of `records` has a row; a row not predicted says why, and one outside 10% names its cause.
inline void ExpectEveryRecordMappedOrSaysWhyNot(const std::vector<Row>& rows, size_t records) {
    std::vector<bool> seen(records, false);
    for (const Row& r : rows) {
        seen[r.index] = true;
        if (!r.expressible) {
            EXPECT_FALSE(r.reason.empty()) << r.index;
        } else {
            EXPECT_GT(r.predicted, 0) << r.index << " " << r.setup;
            if (std::fabs(r.error()) > kTarget) {
                EXPECT_FALSE(r.reason.empty()) << r.index << " outside 10% without a cause";
            }
        }
    }
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_TRUE(seen[i]) << "record " << i;
}

// The part of the table `md` from `first` to the end of the line holding `last` ("" when either is missing).
inline std::string Excerpt(const std::string& md, const std::string& first, const std::string& last) {
    const size_t from = md.find(first), to = md.find(last);
    if (from == std::string::npos || to == std::string::npos) return "";
    return md.substr(from, md.find('\n', to) - from);
}

// docs/serving.md holds a set's whole generated table `md` verbatim; `filter` is the set's gtest filter and `file` the
// table's name in the build directory, for the message.
inline void ExpectDocsHoldTheTable(const std::string& md, const std::string& filter, const std::string& file) {
    const std::string docs = sctest::ReadFile(servetest::kRoot + "/docs/serving.md");
    EXPECT_NE(docs.find(md), std::string::npos)
        << "docs/serving.md is stale: run ./build/stagecraft_tests --gtest_filter='" << filter
        << "' and replace the set's generated table with build/" << file;
}

// README.md holds a set's per-measurement summary and count line (from "| measurement | rows |" to "records not
// predicted.").
inline void ExpectReadmeHoldsTheSummary(const std::string& md, const std::string& file) {
    const std::string summary = Excerpt(md, "| measurement | rows |", "records not predicted.");
    ASSERT_FALSE(summary.empty());
    EXPECT_NE(sctest::ReadFile(servetest::kRoot + "/README.md").find(summary), std::string::npos)
        << "README.md's summary is stale: copy it from build/" << file
        << " (from \"| measurement | rows |\" to the \"records not predicted.\" line)";
}

// The comparisons made and those within 10% (the validations' ratchets).
struct Counts {
    int compared = 0, within = 0;
};
inline Counts CountsOf(const std::vector<Row>& rows) {
    Counts c;
    for (const Row& r : rows)
        if (r.expressible) ++c.compared, c.within += std::fabs(r.error()) <= kTarget;
    return c;
}

// The rows of each serving validation set (test_serve_validation.cpp, test_serve_validation_more.cpp,
// test_serve_validation_trtllm_pytorch.cpp).
const std::vector<Row>& FirstSetRows();
const std::vector<Row>& SecondSetRows();
const std::vector<Row>& ThirdSetRows();

}  // namespace servevalidation
