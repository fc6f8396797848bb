// A serving engine's MLA decode op measured on one part: DeepSeek's multi-head latent attention in its absorbed
// form, every query head of a rank against the one latent cached per token (DeepSeek-V2, arXiv:2405.04434 sec.
// 2.1.2). At 128 heads a rank the call is compute-bound, far from a bandwidth read of its cache, and its rate is the
// kernel's own: TensorRT-LLM 1.3.0rc20's op on B200 runs 1.6 PFLOPS at 64 sequences of 4,096 cached tokens with an fp8
// cache, where a prefill attention curve would put it at a quarter of that. So the op is timed from its table, by
// sequences and cached tokens, not from an efficiency (docs/serving.md, "MLA's decode attention, measured").
#pragma once
#include <array>
#include <string>
#include <vector>

#include "config/precision.h"

namespace sc {

struct MlaDecodeCurve {
    std::string id;
    std::vector<std::string> accelerators;
    Precision dtype = Precision::bf16;           // the latent cache's precision in the measurement
    int heads = 0;                               // query heads a rank
    int kv_lora_rank = 0, qk_rope_head_dim = 0;  // the latent geometry measured (DeepSeek-V3: 512 + 64)
    // The points by sequences (ascending), each with its cached-token counts (ascending) and times; logs kept for
    // the interpolation, which is on the serving model's per-iteration path.
    struct Row {
        double sequences = 0;
        std::vector<double> cached, seconds, log_cached, log_seconds;
    };
    std::vector<Row> rows;
    std::string series, hardware, setup, source, note;
};

// Groups points [sequences, cached tokens, ms] into rows, checking them (positive, finite, no point twice);
// throws sc::Error naming `field`.
void SetMlaDecodePoints(MlaDecodeCurve* curve, const std::vector<std::array<double, 3>>& points,
                        const std::string& field);

// Seconds of one call: `sequences` sequences of one new token each, after `cached` tokens on average. Piecewise
// linear in log-log between measured points, so a measured point is returned exactly. Beyond the most tokens
// measured for a row its time grows in proportion to the tokens, beyond the most sequences in proportion to them
// (the compute-bound regime the largest points are in); below the fewest, the first point's time (the call's floor).
double MlaDecodeSeconds(const MlaDecodeCurve& curve, double sequences, double cached);

}  // namespace sc
