// BatchShape's sums (inference/iteration_cost.h): one scheduled request's share of an iteration under the model's
// local window, and a share of a batch.
#include <algorithm>
#include <cmath>

#include "inference/iteration_cost.h"

namespace sc {

void BatchShape::AddPrefillChunk(double p, double c, const SlidingWindow& w) {
    sequences += 1;
    prefill_tokens += c;
    prefill_pairs += c * p + c * (c + 1) / 2;
    prefill_keys += p + c;
    if (w.size <= 0) return;
    window_prefill_pairs += LocalCausalPairs(p + c, w) - LocalCausalPairs(p, w);
    // The keys the chunk's queries see: from its first query's chunk start (chunked) or window start (sliding) on.
    const double W = w.size;
    window_prefill_keys += w.chunked ? p + c - W * std::floor(p / W) : std::min(p + c, W - 1 + c);
}

BatchShape BatchShape::Scaled(double f) const {
    BatchShape r = *this;
    for (double* x : {&r.prefill_tokens, &r.prefill_pairs, &r.prefill_keys, &r.decodes, &r.decode_keys, &r.logits,
                      &r.window_prefill_pairs, &r.window_prefill_keys, &r.window_decode_keys, &r.sequences})
        *x *= f;
    return r;
}

void BatchShape::Add(const BatchShape& o, double times) {
    prefill_tokens += times * o.prefill_tokens, prefill_pairs += times * o.prefill_pairs;
    prefill_keys += times * o.prefill_keys, decodes += times * o.decodes, decode_keys += times * o.decode_keys;
    logits += times * o.logits, window_prefill_pairs += times * o.window_prefill_pairs;
    window_prefill_keys += times * o.window_prefill_keys, window_decode_keys += times * o.window_decode_keys;
    sequences += times * o.sequences;
}

}  // namespace sc
