// The CLI's shard driver: runs shard t of `threads` on its own thread (the engine's shard functions are pure and
// read only their immutable snapshot) and returns the results in shard order; the first error of any shard is
// rethrown once all have stopped. `stagecraft search` and `sweep` both use it, then merge with the engine.
#pragma once
#include <exception>
#include <thread>
#include <vector>

namespace sc::cli {

template <class Result, class Run>  // Run: Result(int shard, int count)
std::vector<Result> RunShardsOnThreads(int threads, Run run) {
    std::vector<Result> parts(threads);
    std::vector<std::exception_ptr> errors(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            try {
                parts[t] = run(t, threads);
            } catch (...) {
                errors[t] = std::current_exception();
            }
        });
    for (std::thread& th : pool) th.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    return parts;
}

}  // namespace sc::cli
