// The sweep shard's text (worker -> page, src/app/sweep_shard_text.cpp): every cell comes back exactly (every
// bit of every double, any byte in the strings), and damaged text is a clear error, never a partial result.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "app/pool_jobs.h"
#include "config/error.h"

namespace {

using sc::app::SweepCell;

std::vector<SweepCell> Cells() {
    SweepCell a;
    a.key = {99999, 3};
    a.point = {0.1 + 0.2, 1.0 / 3, 1e-6, 72, 4e6, sc::Topology::fullflat, false, true, 16777216};
    a.found = true;
    a.step_seconds = std::nextafter(2.5, 3.0);
    a.mfu = 5e-324;  // the smallest subnormal
    a.best = "tp=8,dp=8,batch=64";
    a.valid = 18446744073709551615u;
    a.csv = "name with\ttab,\"quoted, comma\"\nand a newline: 12:34";
    SweepCell b;  // not found: zeros and empty strings
    b.key = {0, 0};
    b.point.topology = sc::Topology::two_tier;
    b.point.overlap = true;
    b.point.inr = false;
    b.csv = "";
    return {a, b};
}

void ExpectSame(const SweepCell& x, const SweepCell& y) {
    EXPECT_EQ(x.key, y.key);
    EXPECT_EQ(std::bit_cast<uint64_t>(x.point.flops), std::bit_cast<uint64_t>(y.point.flops));
    EXPECT_EQ(x.point.hbm_bw, y.point.hbm_bw);
    EXPECT_EQ(x.point.hbm_capacity, y.point.hbm_capacity);
    EXPECT_EQ(x.point.domain, y.point.domain);
    EXPECT_EQ(x.point.net_bw, y.point.net_bw);
    EXPECT_EQ(x.point.topology, y.point.topology);
    EXPECT_EQ(x.point.overlap, y.point.overlap);
    EXPECT_EQ(x.point.inr, y.point.inr);
    EXPECT_EQ(x.point.gpus, y.point.gpus);
    EXPECT_EQ(x.found, y.found);
    EXPECT_EQ(std::bit_cast<uint64_t>(x.step_seconds), std::bit_cast<uint64_t>(y.step_seconds));
    EXPECT_EQ(std::bit_cast<uint64_t>(x.mfu), std::bit_cast<uint64_t>(y.mfu));
    EXPECT_EQ(x.best, y.best);
    EXPECT_EQ(x.valid, y.valid);
    EXPECT_EQ(x.csv, y.csv);
}

TEST(SweepShardText, EveryCellComesBackExactly) {
    const std::vector<SweepCell> cells = Cells();
    const std::vector<SweepCell> back = sc::app::DecodeSweepShard(sc::app::EncodeSweepShard(cells));
    ASSERT_EQ(back.size(), cells.size());
    for (size_t i = 0; i < cells.size(); ++i) ExpectSame(cells[i], back[i]);
    EXPECT_TRUE(sc::app::DecodeSweepShard(sc::app::EncodeSweepShard({})).empty());
}

TEST(SweepShardText, DamagedTextIsAClearError) {
    const std::string good = sc::app::EncodeSweepShard(Cells());
    auto error = [](const std::string& text) {
        try {
            sc::app::DecodeSweepShard(text);
        } catch (const sc::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error("{\"stats\": 1}").rfind("sweep shard: malformed result from a worker: it does not start", 0), 0u);
    // Every cut short of the whole text is refused (a partial result never reads as a complete one).
    for (size_t n = 0; n < good.size(); ++n)
        EXPECT_EQ(error(good.substr(0, n)).rfind("sweep shard: malformed", 0), 0u) << "cut at " << n;
    EXPECT_NE(error(good + "x").find("text after the last cell"), std::string::npos);
    std::string many_gpus = good;  // a GPU count past 2^24 (the first cell's 16777216)
    many_gpus.replace(many_gpus.find(" 16777216 "), 10, " 99999999 ");
    EXPECT_NE(error(many_gpus).find("a GPU count of 99999999"), std::string::npos) << error(many_gpus);
    std::string bad_hex = good;
    bad_hex[bad_hex.find(' ', bad_hex.find('\n') + 1) + 3] = 'g';  // inside the model field: not a number
    EXPECT_EQ(error(bad_hex).rfind("sweep shard: malformed", 0), 0u) << error(bad_hex);
    EXPECT_NE(error("sweep-shard 1 99999999999\n").find("claims"), std::string::npos);
}

}  // namespace
