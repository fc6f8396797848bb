// Speculative decoding's rules (EngineConfig::speculation; docs/serving.md, "Speculative decoding with a draft
// head"): how many drafts a decoding sequence verifies, what the draft head's steps that proposed them cost, and how
// many the model accepts, drawn from a stream of their own so that the workload's draws do not move; the counts.
#pragma once
#include <algorithm>
#include <cstdint>

#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/serving_config.h"
#include "inference/wait_queue.h"
#include "inference/workload_gen.h"

namespace sc {

class Speculator {
public:
    Speculator(const Speculation& s, uint64_t seed) : s_(s), rng_(seed ^ 0x9E3779B97F4A7C15ULL) {}

    // Drafts a decoding sequence verifies this iteration: the draft head's k, fewer when fewer tokens are left to
    // generate (the model's own next token is always one) or the token budget has no room for them.
    int Drafts(const ServedRequest& q, long long budget) const {
        const long long left = static_cast<long long>(q.output) - q.generated - 1;
        return static_cast<int>(std::max(0LL, std::min({static_cast<long long>(s_.tokens), left, budget - 1})));
    }
    // The draft head's steps that proposed the tokens an iteration verifies: step s runs every sequence with more
    // than s drafts, one token each at its context (the steady state: the steps after an iteration propose for the
    // next). `each(add)` calls add(context, drafts) for every sequence of the batch.
    template <class Each>
    double DraftSeconds(const IterationCost& cost, const SlidingWindow& window, Each&& each) const {
        double t = 0;
        for (int step = 0; step < s_.tokens; ++step) {
            BatchShape d;
            each([&](double ctx, int drafts) {
                if (drafts > step) d.AddDecode(ctx + step, window);
            });
            if (d.decodes == 0) break;
            d.logits = d.decodes;
            t += cost.DraftSeconds(d);
        }
        return t;
    }
    // Drafts the model accepts of `drafts`: each with probability `acceptance` while the ones before it were.
    int Accepted(int drafts) {
        int a = 0;
        while (a < drafts && rng_.Uniform() < s_.acceptance) ++a;
        ++steps_, drafted_ += drafts, accepted_ += a;
        return a;
    }
    void Fill(ServingResult& r) const { r.spec_steps = steps_, r.spec_drafted = drafted_, r.spec_accepted = accepted_; }

private:
    Speculation s_;
    Rng rng_;
    long long steps_ = 0, drafted_ = 0, accepted_ = 0;
};

}  // namespace sc
