// A request inside the serving engine, and the queue it waits in: arrival order (FCFS) or by priority class
// then arrival (SchedulingPolicy::priority). A preempted request goes back to the front of its class.
#pragma once
#include <deque>
#include <map>
#include <utility>

namespace sc {

struct ServedRequest {
    long long id = 0;    // arrival order
    double arrival = 0;  // s
    int input = 0, output = 0;
    int priority = 0;   // lower first under SchedulingPolicy::priority
    int ctx = 0;        // tokens whose K and V are in the cache (or, swapped, on the host)
    int generated = 0;  // output tokens sampled so far
    double first_token = -1;
    double prefill_done = 0;      // s, when a prefill replica finished it (disaggregated)
    long long blocks = 0;         // KV blocks held
    int client = -1;              // closed-loop client that sent it
    bool swapped = false;         // its cache is on the host (swap preemption)
    int timeline = -1;            // its TimelineRecorder slot; -1: outside the sample
    long long scheduled_in = -1;  // the last iteration (engine count) it ran in
    double swap_in = 0;           // s its cache takes to come back, this iteration
    int prefix = -1;              // its shared prefix (Workload::prefixes); -1: none
    long long conversation = -1;  // Workload::turns > 1: its conversation
    int turn = 0;                 // its turn in it, from 0
    int home = -1;                // the scheduler its conversation's turns go to (-1: not yet dealt)
    long long group = -1;         // Workload::samples > 1: the request it is a sample of (its first sample's id)
    int gpu = 0;                  // data-parallel attention: the GPU of its replica that holds it and its cache
    // The cached prefix it uses on its scheduler (a PrefixCache key; -1: none) and that prefix's blocks with its
    // parent's, which are not in `blocks`.
    long long cache_key = -1, shared_blocks = 0;
    int feed() const { return input + generated - ctx; }  // tokens to run through the model before the next sample
    bool decoding() const { return generated > 0 && feed() == 1; }
};

class WaitQueue {
public:
    explicit WaitQueue(bool prioritized = false) : prioritized_(prioritized) {}
    bool Prioritized() const { return prioritized_; }
    bool Empty() const { return prioritized_ ? by_priority_.empty() : fifo_.empty(); }
    size_t Size() const { return prioritized_ ? by_priority_.size() : fifo_.size(); }
    void PushBack(ServedRequest q) {
        if (!prioritized_) return fifo_.push_back(std::move(q));
        const Key k{q.priority, q.id};
        by_priority_.emplace(k, std::move(q));
    }
    void PushFront(ServedRequest q) {  // a preempted request: ahead of everything queued in its class
        if (!prioritized_) return fifo_.push_front(std::move(q));
        const Key k{q.priority, -(++fronts_)};
        by_priority_.emplace(k, std::move(q));
    }
    ServedRequest& Front() { return prioritized_ ? by_priority_.begin()->second : fifo_.front(); }
    ServedRequest PopFront() {
        if (!prioritized_) {
            ServedRequest q = std::move(fifo_.front());
            fifo_.pop_front();
            return q;
        }
        ServedRequest q = std::move(by_priority_.begin()->second);
        by_priority_.erase(by_priority_.begin());
        return q;
    }

private:
    using Key = std::pair<int, long long>;  // (priority, order): preempted ones have negative orders
    bool prioritized_;
    std::deque<ServedRequest> fifo_;
    std::map<Key, ServedRequest> by_priority_;
    long long fronts_ = 0;
};

}  // namespace sc
