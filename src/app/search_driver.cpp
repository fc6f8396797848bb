// The page's driver of the layout search: frame slices over the engine's search snapshot (no ImGui here, so
// the native tests run it). The CLI drives the same shards on threads and merges them the same way.
#include <chrono>

#include "app/app_state.h"
#include "config/error.h"

namespace sc::app {

void CancelSearch(AppState& s) {
    s.search.next_shard = -1;
    s.search.snapshot.reset();
    s.search.parts.clear();
}

void StartSearch(AppState& s) {
    auto& q = s.search;
    CancelSearch(s);
    q.error.clear();
    q.has_result = false;
    q.seconds = 0;
    try {
        q.snapshot = std::make_unique<const engine::SearchSnapshot>(engine::SnapshotSearch(CurrentRequest(s)));
    } catch (const Error& e) {
        q.error = e.what();
        return;
    }
    q.next_shard = 0;
}

void StepSearch(AppState& s, double budget_seconds) {
    auto& q = s.search;
    if (q.next_shard < 0 || !q.snapshot) return;
    const auto t0 = std::chrono::steady_clock::now();
    double spent = 0;
    try {
        do {
            q.parts.push_back(engine::RunSearchShard(*q.snapshot, q.next_shard++, kSearchShards));
            spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        } while (q.next_shard < kSearchShards && spent < budget_seconds);
    } catch (const Error& e) {
        CancelSearch(s);
        q.error = e.what();
        return;
    }
    q.seconds += spent;
    if (q.next_shard == kSearchShards) {
        q.result = engine::MergeSearch(*q.snapshot, std::move(q.parts));
        CancelSearch(s);
        q.has_result = true;
    }
}

}  // namespace sc::app
