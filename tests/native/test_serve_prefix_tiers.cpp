// The tiers below the GPU for cached prefixes (engine.host_cache_gib, engine.remote_cache_gib): closed forms of the
// time each copy costs over the host link and the network, the host tier and the store alone and together
// (LMCache's hierarchy), one store shared by every replica, and each tier's least-recently-used books.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "config/error.h"
#include "inference/engine.h"
#include "inference/iteration_cost.h"
#include "inference/prefix_cache.h"
#include "inference/remote_store.h"
#include "inference/workload_gen.h"
#include "serve_test_util.h"

namespace {

using namespace sc;
using servetest::Calibration;
using servetest::OnePrefixClient;
using servetest::PrefillSeconds;
using servetest::System;

TEST(ServePrefixCache, EvictsTheLeastRecentlyUsedAndTheHostTierCopiesItBack) {
    const int requests = 40, prefix_blocks = 64, bs = 16;
    for (const char* tier : {"GPU only", "host tier", "remote store"}) {
        SCOPED_TRACE(tier);
        const bool host = tier[0] != 'G', remote = tier[0] == 'r';
        ServingConfig c = OnePrefixClient(requests, 3, prefix_blocks * bs, 64);
        if (host && !remote) c.engine.host_cache_gib = 1;  // the link: the pool's, 30 GB/s in and 20 out
        if (remote) c.engine.remote_cache_gib = 1;
        const IterationCost cost = servetest::H100Cost(c);
        const double latency = remote ? 2.7e-6 : 0;  // NCCL's network hop (the H100 cluster's InfiniBand level)
        const ServingResult r =
            Simulate(c, PoolModel{&cost, prefix_blocks + 68 - 1, remote ? 25.0 : 0, latency, 30, 20}, std::nullopt, {});
        ASSERT_EQ(r.completed, requests);

        // The prefixes the engine draws: the same generator, seed and order (lengths are fixed, so the prefix
        // draw is the only one per request).
        Rng rng(c.workload.seed);
        const PrefixDraw draw(c.workload.prefixes);
        // Out of the GPU at the host link's device-to-host rate, back at its host-to-device one; the store's both ways.
        const double bytes = prefix_blocks * bs * cost.KvBytesPerToken();
        const double out = bytes / 20e9, in = latency + bytes / (remote ? 25e9 : 30e9);
        const double miss = PrefillSeconds(cost, 0, 1088), hit = PrefillSeconds(cost, 1024, 64);
        double expected = 0;
        long long gpu_hits = 0, host_hits = 0, stores = 0;
        std::set<int> in_host;
        int on_gpu = -1;
        for (int i = 0; i < requests; ++i) {
            const int p = draw(rng);
            if (p == on_gpu) {
                ++gpu_hits, expected += hit;
                continue;
            }
            double t = 0;
            if (on_gpu >= 0 && host && in_host.insert(on_gpu).second) ++stores, t += out;  // evicted to the host
            if (host && in_host.count(p)) ++host_hits, t += hit + in;
            else t += miss;
            expected += t;
            on_gpu = p;
        }
        EXPECT_EQ(r.prefix_requests, requests);
        EXPECT_EQ(r.prefix_gpu_hits, gpu_hits);
        EXPECT_EQ(remote ? r.prefix_remote_hits : r.prefix_host_hits, host_hits);
        EXPECT_EQ(remote ? r.prefix_host_hits : r.prefix_remote_hits, 0);
        EXPECT_GT(gpu_hits, 0);
        if (host) {
            EXPECT_GT(host_hits, 0);
        }
        EXPECT_NEAR(remote ? r.remote_tier_stored_bytes : r.host_tier_stored_bytes, stores * bytes, 1e-3);
        EXPECT_NEAR(remote ? r.remote_tier_loaded_bytes : r.host_tier_loaded_bytes, host_hits * bytes, 1e-3);
        EXPECT_NEAR(r.sum_e2e, expected, 1e-9 * expected);
        EXPECT_EQ(r.preemptions, 0);  // a prefix no one uses goes before anything is preempted
    }
}

TEST(ServePrefixCache, ThreeTiersWriteThroughAndTheStoreWritesBackToTheHost) {
    const int requests = 40, prefix_blocks = 64, bs = 16;
    ServingConfig c = OnePrefixClient(requests, 3, prefix_blocks * bs, 64);
    const IterationCost cost = servetest::H100Cost(c);
    const double block = bs * cost.KvBytesPerToken(), bytes = prefix_blocks * block;
    c.engine.swap_gbps = 64;
    c.engine.host_cache_gib = 96.5 * block / 1073741824.0;  // 96 blocks: one prefix
    c.engine.remote_cache_gib = 1;
    const double latency = 2.7e-6, host_copy = bytes / 64e9, remote_copy = latency + bytes / 25e9;
    const ServingResult r = Simulate(c, PoolModel{&cost, prefix_blocks + 68 - 1, 25.0, latency}, std::nullopt, {});
    ASSERT_EQ(r.completed, requests);

    Rng rng(c.workload.seed);
    const PrefixDraw draw(c.workload.prefixes);
    const double miss = PrefillSeconds(cost, 0, 1088), hit = PrefillSeconds(cost, 1024, 64);
    double expected = 0;
    long long gpu_hits = 0, host_hits = 0, remote_hits = 0, host_stores = 0, remote_stores = 0;
    int on_gpu = -1, in_host = -1;  // the host tier's one prefix
    std::set<int> in_remote;
    for (int i = 0; i < requests; ++i) {
        const int p = draw(rng);
        if (p == on_gpu) {
            ++gpu_hits, expected += hit;
            continue;
        }
        // Found before the GPU's prefix is evicted for it: a host copy it takes is held, so the evicted one cannot
        // replace it there.
        const bool from_host = in_host == p, from_remote = !from_host && in_remote.count(p) > 0;
        double t = 0;
        if (on_gpu >= 0) {
            if (in_host != on_gpu && !from_host) in_host = on_gpu, ++host_stores, t += host_copy;
            if (in_remote.insert(on_gpu).second) {
                ++remote_stores;
                if (in_host != on_gpu) t += host_copy;  // no host copy to send it from: staged in host memory
            }
        }
        if (from_host) ++host_hits, t += hit + host_copy;
        else if (from_remote) ++remote_hits, t += hit + remote_copy, in_host = p;  // written back to the host
        else t += miss;
        expected += t;
        on_gpu = p;
    }
    EXPECT_GT(host_hits, 0);
    EXPECT_GT(remote_hits, 0);
    EXPECT_EQ(r.prefix_gpu_hits, gpu_hits);
    EXPECT_EQ(r.prefix_host_hits, host_hits);
    EXPECT_EQ(r.prefix_remote_hits, remote_hits);
    EXPECT_NEAR(r.host_tier_stored_bytes, host_stores * bytes, 1e-3);
    EXPECT_NEAR(r.host_tier_loaded_bytes, host_hits * bytes, 1e-3);
    EXPECT_NEAR(r.remote_tier_stored_bytes, remote_stores * bytes, 1e-3);
    EXPECT_NEAR(r.remote_tier_loaded_bytes, remote_hits * bytes, 1e-3);
    EXPECT_NEAR(r.sum_e2e, expected, 1e-9 * expected);

    // Faster than the one-prefix host tier alone, which recomputes what it dropped.
    ServingConfig host_only = c;
    host_only.engine.remote_cache_gib = 0;
    EXPECT_LT(r.sum_e2e,
              Simulate(host_only, PoolModel{&cost, prefix_blocks + 68 - 1, 25.0, latency}, std::nullopt, {}).sum_e2e);

    // The other way round, a host tier holding all three and a store holding one: the store keeps re-taking prefixes
    // the host already has, and those uploads leave from the host copy, so nothing but the first copy to the host
    // is waited for.
    c.engine.host_cache_gib = 200.5 * block / 1073741824.0;  // 200 blocks: three prefixes
    c.engine.remote_cache_gib = 96.5 * block / 1073741824.0;
    const ServingResult big = Simulate(c, PoolModel{&cost, prefix_blocks + 68 - 1, 25.0, latency}, std::nullopt, {});
    Rng rng2(c.workload.seed);
    double expected2 = 0;
    long long uploads = 0;
    std::set<int> host_has;
    int gpu = -1, store_has = -1;
    for (int i = 0; i < requests; ++i) {
        const int p = draw(rng2);
        if (p == gpu) {
            expected2 += hit;
            continue;
        }
        const bool from_host = host_has.count(p) > 0;
        double t = 0;
        if (gpu >= 0) {
            if (host_has.insert(gpu).second) t += host_copy;   // the only copy the iteration waits for
            if (store_has != gpu) store_has = gpu, ++uploads;  // from the host copy, beside the iteration
        }
        t += from_host ? hit + host_copy : miss;
        expected2 += t;
        gpu = p;
    }
    EXPECT_GT(uploads, 3);  // more uploads than prefixes: the store re-took copies the host had all along
    EXPECT_EQ(big.prefix_remote_hits, 0);
    EXPECT_NEAR(big.remote_tier_stored_bytes, uploads * bytes, 1e-3);
    EXPECT_NEAR(big.sum_e2e, expected2, 1e-9 * expected2);
}

TEST(ServePrefixCache, ReplicasShareTheRemoteStore) {
    const int requests = 40, prefix_blocks = 64, bs = 16;
    ServingConfig c = OnePrefixClient(requests, 3, prefix_blocks * bs, 64);
    c.pool.replicas = 2;
    c.engine.remote_cache_gib = 1;
    const IterationCost cost = servetest::H100Cost(c);
    const double latency = 2.7e-6, bytes = prefix_blocks * bs * cost.KvBytesPerToken();
    const double out = bytes / 52e9, in = latency + bytes / 25e9;  // staged over the host link; back over the network
    const ServingResult r =
        Simulate(c, PoolModel{&cost, prefix_blocks + 68 - 1, 25.0, latency, 51, 52}, std::nullopt, {});
    ASSERT_EQ(r.completed, requests);

    Rng rng(c.workload.seed);
    const PrefixDraw draw(c.workload.prefixes);
    const double miss = PrefillSeconds(cost, 0, 1088), hit = PrefillSeconds(cost, 1024, 64);
    double expected = 0;
    long long gpu_hits = 0, remote_hits = 0, stores = 0, across = 0;
    int on_gpu[2] = {-1, -1};
    std::map<int, int> in_store;  // prefix -> the replica that stored it
    for (int i = 0; i < requests; ++i) {
        const int replica = i % 2, p = draw(rng);  // dealt round-robin
        int& g = on_gpu[replica];
        if (p == g) {
            ++gpu_hits, expected += hit;
            continue;
        }
        const auto found = in_store.find(p);
        double t = 0;
        if (g >= 0 && in_store.emplace(g, replica).second) ++stores, t += out;  // evicted to the store
        if (found != in_store.end()) {
            ++remote_hits, t += hit + in;
            across += found->second != replica;
        } else {
            t += miss;
        }
        expected += t;
        g = p;
    }
    EXPECT_GT(across, 0);  // hits on prefixes the other replica stored
    EXPECT_EQ(r.prefix_gpu_hits, gpu_hits);
    EXPECT_EQ(r.prefix_remote_hits, remote_hits);
    // Per GPU: the two replicas' GPUs moved these bytes between them.
    EXPECT_NEAR(r.remote_tier_stored_bytes, stores * bytes / 2, 1e-3);
    EXPECT_NEAR(r.remote_tier_loaded_bytes, remote_hits * bytes / 2, 1e-3);
    EXPECT_NEAR(r.sum_e2e, expected, 1e-9 * expected);
}

TEST(ServePrefixCache, EachTierKeepsItsOwnLeastRecentlyUsedCopies) {
    using Where = PrefixCache::Where;
    RemoteStore store(12);
    PrefixCache c(4, &store);  // a host tier of 4 blocks (one prefix), a store of 12 (three)
    for (long long k : {1, 2, 3}) {
        c.AddToGpu(k, 4, -1, 0);
        const PrefixCache::Evicted e = c.EvictOne();
        EXPECT_EQ(e.key, k);
        EXPECT_TRUE(e.stored_host);
        EXPECT_TRUE(e.stored_remote);
    }
    EXPECT_EQ(c.Find(3), Where::host);    // the host holds the last one
    EXPECT_EQ(c.Find(1), Where::remote);  // the others only in the store
    EXPECT_EQ(c.Find(2), Where::remote);
    EXPECT_EQ(c.host_blocks(), 4);
    EXPECT_EQ(store.used_blocks(), 12);
    EXPECT_EQ(c.Blocks(1), 4);

    c.Hold(1, Where::remote);  // copied back from the store, as PrefixReuse::Load does it
    c.Unhold(1, Where::remote);
    c.AddToGpu(1, 4, -1, 1);
    EXPECT_TRUE(c.WriteBack(1));  // and kept in the host tier, which drops 3 (still in the store)
    EXPECT_EQ(c.Find(3), Where::remote);
    EXPECT_FALSE(c.WriteBack(1));  // already there
    c.Release(1);
    PrefixCache::Evicted e = c.EvictOne();
    EXPECT_EQ(e.key, 1);
    EXPECT_FALSE(e.stored_host);  // both tiers hold it already
    EXPECT_FALSE(e.stored_remote);
    EXPECT_EQ(c.Find(1), Where::host);

    // A fourth prefix: the store drops its least recently used copy, 2 (1 and 3 were refreshed or are newer), and
    // 2, in no tier now, is gone.
    c.AddToGpu(4, 4, -1, 0);
    e = c.EvictOne();
    EXPECT_TRUE(e.stored_host);
    EXPECT_TRUE(e.stored_remote);
    EXPECT_EQ(c.Find(2), Where::none);
    EXPECT_EQ(c.Find(1), Where::remote);
    EXPECT_EQ(c.Find(4), Where::host);

    // A held copy stays while the store makes room: 3 is its oldest but is being copied back, so 1 goes.
    c.Hold(3, Where::remote);
    c.AddToGpu(5, 4, -1, 0);
    e = c.EvictOne();
    EXPECT_TRUE(e.stored_remote);
    EXPECT_EQ(c.Find(1), Where::none);
    c.Unhold(3, Where::remote);  // not copied after all: the store's most recent now
    EXPECT_EQ(c.Find(3), Where::remote);

    // A prefix larger than the host tier goes to the store only, which drops 4 (gone) and 5 (still in the host).
    c.AddToGpu(6, 8, -1, 0);
    e = c.EvictOne();
    EXPECT_FALSE(e.stored_host);
    EXPECT_TRUE(e.stored_remote);
    EXPECT_EQ(c.Find(6), Where::remote);
    EXPECT_EQ(c.Find(4), Where::none);
    EXPECT_EQ(c.Find(5), Where::host);
    EXPECT_EQ(store.used_blocks(), 12);  // 3's 4 and 6's 8

    // A conversation's next turn grows its copy: the tiers' shorter copies go, from either tier.
    c.Hold(5, Where::host);
    c.AddToGpu(5, 4, -1, 1);
    c.Grow(5, 2);
    EXPECT_EQ(c.Blocks(5), 6);
    EXPECT_EQ(c.host_blocks(), 0);
    c.Hold(3, Where::remote);
    c.Unhold(3, Where::remote);
    c.AddToGpu(3, 4, -1, 1);
    c.Grow(3, 1);
    EXPECT_EQ(store.used_blocks(), 8);
    EXPECT_EQ(store.copies(), 1);
}

TEST(ServePrefixCache, ARemoteStoreSitsAcrossTheScaleOutNetwork) {
    ServingConfig c = OnePrefixClient(40, 3, 1024, 64);
    c.engine.remote_cache_gib = 1;
    c.engine.kv_blocks_override = 64 + 68 - 1;  // one prefix beside a request, as the test above
    const sc::System& sys = System("dgx-h100-superpod");
    const ServingRun run = SimulateServing(c, sys, &Calibration());
    ASSERT_EQ(run.result.completed, 40);
    EXPECT_GT(run.result.prefix_remote_hits, 0);
    // The same run with the link written out: the cost at the run's typical prompt (1,024 + 64 tokens).
    const IterationCost cost(c.model, c.precision, c.pool, sys, &Calibration(), 1088, c.engine.max_tokens);
    const NetworkLevel& ndr = sys.levels[1];
    const ServingResult r = Simulate(
        c, PoolModel{&cost, 64 + 68 - 1, ndr.EffectiveGBps(), ndr.latency_us * 1e-6, 51, 52}, std::nullopt, {});
    EXPECT_EQ(run.result.sum_e2e, r.sum_e2e);
    EXPECT_EQ(run.result.remote_tier_loaded_bytes, r.remote_tier_loaded_bytes);
    // Slower than a host link of 64 GB/s, faster than recomputing every evicted prefix.
    c.engine.remote_cache_gib = 0;
    const double none = SimulateServing(c, sys, &Calibration()).result.sum_e2e;
    c.engine.host_cache_gib = 1, c.engine.swap_gbps = 64;
    const double host = SimulateServing(c, sys, &Calibration()).result.sum_e2e;
    EXPECT_LT(host, r.sum_e2e);
    EXPECT_LT(r.sum_e2e, none);
    c.engine.host_cache_gib = 0, c.engine.remote_cache_gib = 1;
    EXPECT_NE(sctest::ErrorOf([&] {
                  SimulateServing(c, System("tpu-v4-pod"), &Calibration());
              }).find("engine.remote_cache_gib: Google TPU v4 pod"),
              std::string::npos);
    EXPECT_NE(sctest::ErrorOf([&] {
                  Simulate(c, cost, 131);
              }).find("engine.remote_cache_gib: the remote store needs the link"),
              std::string::npos);
    // Its uploads are staged in host memory: a part without a measured host link needs one stated.
    c.engine.swap_gbps = 0;
    EXPECT_NE(sctest::ErrorOf([&] {
                  SimulateServing(c, System("dgx-a100-superpod"), &Calibration());
              }).find("engine.swap_gbps: the remote store (its uploads leave from host memory)"),
              std::string::npos);
}

TEST(ServePrefixCache, TheCacheEvictsLeastRecentlyUsedFirstOnBothTiers) {
    using Where = PrefixCache::Where;
    PrefixCache c(8);  // a host tier of 8 blocks
    for (long long k : {1, 2, 3}) c.AddToGpu(k, 4, -1, 1);
    c.Release(2), c.Release(1), c.Release(3);  // unused now, 2 the least recently used
    c.Use(1);                                  // in use: not evictable
    PrefixCache::Evicted e = c.EvictOne();
    EXPECT_EQ(e.key, 2);
    EXPECT_EQ(e.blocks, 4);
    EXPECT_TRUE(e.stored_host);
    EXPECT_FALSE(e.stored_remote);  // no remote store
    EXPECT_EQ(c.Find(2), Where::host);
    EXPECT_EQ(c.EvictOne().key, 3);
    EXPECT_EQ(c.EvictOne().key, -1);  // 1 is in use
    c.Release(1);
    EXPECT_EQ(c.EvictOne().key, 1);  // the host tier's 8 blocks are full: its oldest (2) leaves it
    EXPECT_EQ(c.Find(2), Where::none);
    EXPECT_EQ(c.Find(3), Where::host);
    EXPECT_EQ(c.Find(1), Where::host);
    c.AddToGpu(3, 4, -1, 1);  // copied back: on the GPU, its host copy kept and now the most recent there
    EXPECT_EQ(c.Find(3), Where::gpu);
    c.Release(3);
    e = c.EvictOne();
    EXPECT_EQ(e.key, 3);
    EXPECT_FALSE(e.stored_host);  // already in the host tier: nothing to copy
    EXPECT_EQ(c.host_blocks(), 8);

    // A conversation's context (key 100, 6 blocks) after shared prefix 1 holds the prefix on the GPU while it is
    // there itself, and lets it go when it leaves.
    c.AddToGpu(1, 4, -1, 0);
    c.AddToGpu(100, 6, 1, 0);
    EXPECT_EQ(c.BlocksWithParent(100), 10);
    e = c.EvictOne();
    EXPECT_EQ(e.key, 100);       // 1 came first but is held by 100
    EXPECT_TRUE(e.stored_host);  // 6 blocks: 3 and then 1 leave the host tier to make room
    EXPECT_EQ(c.Find(3), Where::none);
    EXPECT_EQ(c.EvictOne().key, 1);  // free now; stored again, pushing 100 out
    EXPECT_EQ(c.Find(100), Where::none);
    EXPECT_EQ(c.Find(1), Where::host);
    EXPECT_EQ(c.gpu_copies(), 0);

    // A conversation's next turn grows its copy; the host's shorter copy is dropped.
    c.AddToGpu(1, 4, -1, 1);
    c.Release(1);
    c.Grow(1, 3);
    EXPECT_EQ(c.Blocks(1), 7);
    EXPECT_EQ(c.host_blocks(), 0);
}

}  // namespace
