// BatchShape's sums (inference/iteration_cost.h): one scheduled request's share of an iteration under the model's
// local window, and a share of a batch.
#include <algorithm>
#include <cmath>

#include "inference/iteration_cost.h"

namespace sc {

void BatchShape::AddPrefillChunk(double p, double c, const SlidingWindow& w) {
    if (!w.chunked) return AddPrefillChunk(p, c, static_cast<double>(w.size));
    sequences += 1;
    prefill_tokens += c;
    prefill_pairs += c * p + c * (c + 1) / 2;
    prefill_keys += p + c;
    // A chunk of c queries after p reads from the start of its first query's local chunk on.
    window_prefill_pairs += LocalCausalPairs(p + c, w) - LocalCausalPairs(p, w);
    window_prefill_keys += p + c - w.size * std::floor(p / w.size);
}

void BatchShape::AddPrefillChunk(double p, double c, double window) {
    sequences += 1;
    prefill_tokens += c;
    prefill_pairs += c * p + c * (c + 1) / 2;
    prefill_keys += p + c;
    if (window > 0) {
        window_prefill_pairs += WindowedCausalPairs(p + c, window) - WindowedCausalPairs(p, window);
        window_prefill_keys += std::min(p + c, window - 1 + c);
    }
}

BatchShape BatchShape::Scaled(double f) const {
    BatchShape r = *this;
    for (double* x : {&r.prefill_tokens, &r.prefill_pairs, &r.prefill_keys, &r.decodes, &r.decode_keys, &r.logits,
                      &r.window_prefill_pairs, &r.window_prefill_keys, &r.window_decode_keys, &r.sequences})
        *x *= f;
    return r;
}

}  // namespace sc
