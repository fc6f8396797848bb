// Per-request timelines of a serving run (issue 14's Results: "per-request timelines"): where each of a
// bounded sample of requests spent its time, span by span, from arrival to its last token.
//
// The spans of one request tile [arrival, completion] without gaps or overlaps, so their durations sum to its
// end-to-end latency, and the spans that end by its first token sum to its TTFT. Consecutive decode
// iterations (and consecutive iterations in which a running request was left out of the batch) on the same
// replica merge into one span, so a request holds a handful of spans, not one per token.
//
// Bounded memory: the engine keeps the timelines of the first ServingConfig::timelines requests by arrival
// order (request ids 0..N-1), a deterministic sample that does not grow with the run.
#pragma once
#include <cstddef>
#include <vector>

namespace sc {

enum class SpanKind {
    queued,       // in a replica's wait queue before its first admission (or, disaggregated, at the decode pool)
    prefill,      // one prefill chunk's iteration (after a recompute preemption: the prompt and output again)
    decode,       // consecutive decode iterations
    stalled,      // running, but left out of consecutive iterations' batches (the token budget ran out)
    preempted,    // back in the wait queue after a preemption, until readmitted
    kv_transfer,  // disaggregated: the KV cache crossing from the prefill to the decode pool
    retrieval,    // a query on the retrieval service (Workload::retrieval), before the prompt is queued
};
const char* NameOf(SpanKind k);

struct TimelineSpan {
    SpanKind kind = SpanKind::queued;
    double start = 0, end = 0;  // s
    int replica = 0;            // scheduler index: the pool's first, then the decode pool's (pp per replica)
    int tokens = 0;  // tokens the span computed (prefill: the chunk; decode: one a step, 1 + drafts when speculating)
    double swap_in = 0;  // s of a swapped-out cache coming back before this span's iteration (in its time)
};

struct RequestTimeline {
    long long id = 0;  // arrival order
    double arrival = 0;
    int input = 0, output = 0, priority = 0;
    double first_token = -1, completion = -1;  // s; -1 until they happen
    int preemptions = 0;
    std::vector<TimelineSpan> spans;  // in time order, tiling [arrival, completion]
    double ttft() const { return first_token - arrival; }
    double e2e() const { return completion - arrival; }
};

}  // namespace sc

namespace sc {

// Builds the timelines inside the engine. A request in the sample has a slot; every transition reports the
// span that just ended (Run: an iteration it was part of, or left out of; Transfer: the KV trip) or the
// waiting state it enters (Wait), and the time between the last span and the next is that waiting state.
class TimelineRecorder {
public:
    explicit TimelineRecorder(long long keep) : keep_(keep < 0 ? 0 : keep) {}
    // The slot of request `id` (-1 when it is outside the sample); it starts queued at `arrival`.
    int Begin(long long id, double arrival, int input, int output, int priority);
    // It enters a waiting state (queued, preempted) on `replica` from the end of its last span.
    void Wait(int slot, SpanKind kind, int replica);
    // An iteration [start, end) on `replica` in which it ran (prefill, decode) or was left out (stalled).
    void Run(int slot, SpanKind kind, double start, double end, int replica, int tokens, double swap_in = 0);
    void Transfer(int slot, double start, double end, int from_replica);
    void FirstToken(int slot, double t);
    void Complete(int slot, double t);
    std::vector<RequestTimeline> Take() { return std::move(done_); }
    // Whether a sampled request is still in the system (the engine skips its per-iteration walk otherwise).
    bool Recording() const { return done_.size() < open_.size(); }

private:
    struct Open {
        RequestTimeline t;
        double mark = 0;  // where its spans have reached
        SpanKind wait = SpanKind::queued;
        int wait_replica = 0;
    };
    void Push(Open& o, const TimelineSpan& s);
    long long keep_;
    std::vector<Open> open_;             // slot -> the request's timeline while it is in the system
    std::vector<RequestTimeline> done_;  // in completion order
};

}  // namespace sc
