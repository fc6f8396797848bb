#include "inference/request_timeline.h"

namespace sc {

const char* NameOf(SpanKind k) {
    switch (k) {
        case SpanKind::queued: return "queued";
        case SpanKind::prefill: return "prefill";
        case SpanKind::decode: return "decode";
        case SpanKind::stalled: return "stalled";
        case SpanKind::preempted: return "preempted";
        case SpanKind::kv_transfer: return "kv_transfer";
        case SpanKind::retrieval: return "retrieval";
    }
    return "?";
}

int TimelineRecorder::Begin(long long id, double arrival, int input, int output, int priority) {
    if (id < 0 || id >= keep_) return -1;
    Open o;
    o.t.id = id, o.t.arrival = arrival, o.t.input = input, o.t.output = output, o.t.priority = priority;
    o.mark = arrival;
    open_.push_back(std::move(o));
    return static_cast<int>(open_.size()) - 1;
}

void TimelineRecorder::Wait(int slot, SpanKind kind, int replica) {
    if (slot < 0) return;
    Open& o = open_[static_cast<std::size_t>(slot)];
    o.wait = kind;
    o.wait_replica = replica;
    if (kind == SpanKind::preempted) ++o.t.preemptions;
}

// Consecutive decode (or stalled) iterations on one replica are one span: the request did the same thing
// throughout, and a timeline of a 2,000-token answer stays a few spans long.
void TimelineRecorder::Push(Open& o, const TimelineSpan& s) {
    if (s.end <= s.start && s.kind != SpanKind::prefill && s.kind != SpanKind::decode) return;
    std::vector<TimelineSpan>& v = o.t.spans;
    const bool merges = (s.kind == SpanKind::decode || s.kind == SpanKind::stalled) && !v.empty() &&
                        v.back().kind == s.kind && v.back().replica == s.replica && v.back().end == s.start &&
                        s.swap_in == 0;
    if (merges) {
        v.back().end = s.end;
        v.back().tokens += s.tokens;
    } else {
        v.push_back(s);
    }
    o.mark = s.end;
}

void TimelineRecorder::Run(int slot, SpanKind kind, double start, double end, int replica, int tokens, double swap_in) {
    if (slot < 0) return;
    Open& o = open_[static_cast<std::size_t>(slot)];
    if (start > o.mark) Push(o, {o.wait, o.mark, start, o.wait_replica, 0, 0});
    Push(o, {kind, start, end, replica, tokens, swap_in});
}

void TimelineRecorder::Transfer(int slot, double start, double end, int from_replica) {
    if (slot < 0) return;
    Open& o = open_[static_cast<std::size_t>(slot)];
    Push(o, {SpanKind::kv_transfer, start, end, from_replica, 0, 0});
}

void TimelineRecorder::FirstToken(int slot, double t) {
    if (slot >= 0) open_[static_cast<std::size_t>(slot)].t.first_token = t;
}

void TimelineRecorder::Complete(int slot, double t) {
    if (slot < 0) return;
    Open& o = open_[static_cast<std::size_t>(slot)];
    o.t.completion = t;
    done_.push_back(std::move(o.t));
    o.t = RequestTimeline{};  // the slot is never reused (ids are unique); its spans are freed
}

}  // namespace sc
