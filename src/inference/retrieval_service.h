// The retrieval stage in front of the schedulers (Workload::retrieval; docs/serving.md, "Retrieval before the
// prompt"): `servers` queries at once, each `seconds` long, the others waiting first come, first served, and (offline)
// the requests not made yet waiting as a count. Queries of one length started in clock order end in that order, so
// those in service are a deque. The engine routes what ends and records the timelines; this keeps the queue.
#pragma once
#include <deque>
#include <limits>
#include <utility>

#include "inference/serving_config.h"
#include "inference/wait_queue.h"

namespace sc {

class RetrievalService {
public:
    RetrievalService(const Retrieval& r, int samples) : r_(r), samples_(samples) {}

    // A request (or a turn) arrives: it starts now if a server is free (`started(q, end)` sees it first), else waits.
    template <class Started>
    void Arrive(ServedRequest q, double now, Started&& started) {
        if (busy_ < r_.servers) return Start(std::move(q), now, started);
        queue_.push_back(std::move(q));
    }
    // Offline: `n` requests arrived at time 0, made by the engine when a server takes them.
    void AddUnmade(long long n) { unmade_ += n; }
    double NextEnd() const {
        return serving_.empty() ? std::numeric_limits<double>::infinity() : serving_.front().first;
    }
    // Hands each query ended by `now` to `route`, then fills the free servers: the queue's first, then requests `make`
    // creates while unmade ones are left.
    template <class Route, class Make, class Started>
    void Advance(double now, Route&& route, Make&& make, Started&& started) {
        while (!serving_.empty() && serving_.front().first <= now) {
            ServedRequest q = std::move(serving_.front().second);
            serving_.pop_front();
            --busy_;
            route(std::move(q));
        }
        while (busy_ < r_.servers && !queue_.empty()) {
            Start(std::move(queue_.front()), now, started);
            queue_.pop_front();
        }
        for (; busy_ < r_.servers && unmade_ > 0; --unmade_) Start(make(), now, started);
    }
    // Sequences in the stage (a request of several samples counts each: Little's law counts sequences).
    long long InSystem() const {
        return (static_cast<long long>(queue_.size() + serving_.size()) + unmade_) * samples_;
    }
    long long queries() const { return queries_; }
    double mean_wait() const { return queries_ > 0 ? wait_sum_ / queries_ : 0; }
    // The servers' busy share of a run of `duration` seconds.
    double Utilization(double duration) const {
        return duration > 0 ? queries_ * r_.seconds / (r_.servers * duration) : 0;
    }

private:
    template <class Started>
    void Start(ServedRequest q, double now, Started& started) {
        const double end = now + r_.seconds;
        wait_sum_ += now - q.arrival;
        ++queries_, ++busy_;
        started(q, end);
        serving_.push_back({end, std::move(q)});
    }

    Retrieval r_;
    int samples_ = 1;
    std::deque<ServedRequest> queue_;
    std::deque<std::pair<double, ServedRequest>> serving_;  // (end, request), ends in order
    long long unmade_ = 0, queries_ = 0;
    int busy_ = 0;
    double wait_sum_ = 0;
};

}  // namespace sc
