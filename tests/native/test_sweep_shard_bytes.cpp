// The sweep shard's bytes (worker -> page, src/app/sweep_shard_bytes.cpp): every cell comes back exactly (every
// bit of every double, the layout and its rank order), the CSV the page makes from cells equals the CLI's rows,
// and damaged bytes are a clear error, never a partial result.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "app/pool_jobs.h"
#include "config/error.h"
#include "report/search_report.h"

namespace {

using sc::app::SweepCell;

std::vector<SweepCell> Cells() {
    SweepCell a;
    a.key = {99999, 3};
    a.point = {0.1 + 0.2, 1.0 / 3, 1e-6, 72, 4e6, sc::Topology::fullflat, false, true, 16777216, 612.5 + 1e-12};
    a.found = true;
    a.step_seconds = std::nextafter(2.5, 3.0);
    a.mfu = 5e-324;  // the smallest subnormal
    a.tokens_per_second = 1e300, a.memory_peak = 80.5 * (1ull << 30), a.energy_joules = 0.1 + 0.7;
    a.step.compute = 1.25, a.step.dp_comm = std::numeric_limits<double>::min(), a.step.optimizer = 3e-9;
    a.best = sc::ParseParallelSpec(
        "tp=8,pp=4,dp=16,cp=2,sp=1,microbatch=2,batch=1024,schedule=interleaved,vstages=3,"
        "recompute=selective,zero=1,order=tp-dp-cp-pp,layout=Et*5|(t*6|)*10tmL,recompute_modules=moe_act+layernorm");
    a.stats = {18446744073709551615u, 7, 5, 3};
    SweepCell b;  // not found: zeros and the default layout
    b.key = {0, 0};
    b.point.topology = sc::Topology::torus;             // a row on a torus system
    b.point.overlap = sc::kOverlapDp | sc::kOverlapTp;  // a row holds the kinds it overlapped
    b.point.inr = 0;
    SweepCell c = b;  // full recomputation's block method
    c.key = {7, 1};
    c.best = sc::ParseParallelSpec("pp=2,dp=4,recompute_layers=5");
    SweepCell d = b;  // the EP all-to-all overlap
    d.key = {8, 1};
    d.best = sc::ParseParallelSpec("dp=4,ep=4,a2a_overlap=1");
    SweepCell e = b;  // CPU activation offloading, and its step term
    e.key = {9, 1};
    e.best = sc::ParseParallelSpec("dp=8,offload_layers=12");
    e.step.offload = 0.125;
    return {a, b, c, d, e};
}

uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

void ExpectSame(const SweepCell& x, const SweepCell& y) {
    EXPECT_EQ(x.key, y.key);
    EXPECT_EQ(Bits(x.point.flops), Bits(y.point.flops));
    EXPECT_EQ(Bits(x.point.hbm_bw), Bits(y.point.hbm_bw));
    EXPECT_EQ(Bits(x.point.hbm_capacity), Bits(y.point.hbm_capacity));
    EXPECT_EQ(x.point.domain, y.point.domain);
    EXPECT_EQ(Bits(x.point.net_bw), Bits(y.point.net_bw));
    EXPECT_EQ(x.point.topology, y.point.topology);
    EXPECT_EQ(x.point.overlap, y.point.overlap);
    EXPECT_EQ(x.point.inr, y.point.inr);
    EXPECT_EQ(x.point.gpus, y.point.gpus);
    EXPECT_EQ(Bits(x.point.power_w), Bits(y.point.power_w));
    EXPECT_EQ(x.found, y.found);
    for (auto m : {&SweepCell::step_seconds, &SweepCell::mfu, &SweepCell::tokens_per_second, &SweepCell::memory_peak,
                   &SweepCell::energy_joules})
        EXPECT_EQ(Bits(x.*m), Bits(y.*m));
    for (const sc::BreakdownPart& p : sc::kBreakdownParts) EXPECT_EQ(Bits(x.step.*p.seconds), Bits(y.step.*p.seconds));
    EXPECT_EQ(sc::ParallelSpecString(x.best), sc::ParallelSpecString(y.best));
    EXPECT_EQ(x.best.etp, y.best.etp);
    EXPECT_EQ(x.best.uneven, y.best.uneven);
    EXPECT_EQ(x.best.layout, y.best.layout);  // also in the spec string above
    EXPECT_EQ(x.best.layout_mtp, y.best.layout_mtp);
    EXPECT_EQ(x.best.recompute_modules, y.best.recompute_modules);
    EXPECT_EQ(x.best.recompute_layers, y.best.recompute_layers);
    EXPECT_EQ(x.best.a2a_overlap, y.best.a2a_overlap);
    EXPECT_EQ(x.best.offload_layers, y.best.offload_layers);
    EXPECT_EQ(Bits(x.best.bucket_mb), Bits(y.best.bucket_mb));
    EXPECT_EQ(x.best.gpus, y.best.gpus);
    for (auto m : {&sc::SearchStats::candidates, &sc::SearchStats::valid, &sc::SearchStats::fitting,
                   &sc::SearchStats::estimated})
        EXPECT_EQ(x.stats.*m, y.stats.*m);
}

TEST(SweepShardBytes, EveryCellComesBackExactly) {
    const std::vector<SweepCell> cells = Cells();
    const std::vector<SweepCell> back = sc::app::DecodeSweepShard(sc::app::EncodeSweepShard(cells));
    ASSERT_EQ(back.size(), cells.size());
    for (size_t i = 0; i < cells.size(); ++i) ExpectSame(cells[i], back[i]);
    EXPECT_TRUE(sc::app::DecodeSweepShard(sc::app::EncodeSweepShard({})).empty());
}

TEST(SweepShardBytes, TheCsvFromACellIsTheRowsCsv) {
    // The page prints its CSV from cells (RowOf), the CLI from rows: the same text for every field the CSV has.
    sc::SweepRow row;
    row.point_index = 12, row.model_index = 1, row.model = "Llama \"3\", 8B";
    row.point = Cells()[0].point;
    row.found = true;
    row.best = Cells()[0].best;
    row.estimate.step_seconds = 1.5, row.estimate.mfu = 0.41, row.estimate.tokens_per_second = 123456.789;
    row.estimate.memory_peak = 70e9, row.estimate.energy_joules_per_step = 4321.5;
    row.estimate.step.compute = 1.0, row.estimate.step.bubble = 0.25, row.estimate.step.tp_comm = 0.25;
    row.estimate.memory.resize(3);  // not in a cell, not in the CSV
    row.stats = {10, 9, 8, 7};
    sc::SweepRequest req;
    req.gpus = 512, req.batch = 1024;
    const SweepCell cell = sc::app::DecodeSweepShard(sc::app::EncodeSweepShard({sc::app::CellOf(row)}))[0];
    EXPECT_EQ(sc::SweepRowText(sc::app::RowOf(cell, row.model), req, sc::SweepFormat::csv),
              sc::SweepRowText(row, req, sc::SweepFormat::csv));
    row.found = false;
    const SweepCell none = sc::app::CellOf(row);
    EXPECT_EQ(sc::SweepRowText(sc::app::RowOf(none, row.model), req, sc::SweepFormat::csv),
              sc::SweepRowText(row, req, sc::SweepFormat::csv));
}

TEST(SweepShardBytes, DamagedBytesAreAClearError) {
    const std::string good = sc::app::EncodeSweepShard(Cells());
    auto error = [](const std::string& bytes) {
        try {
            sc::app::DecodeSweepShard(bytes);
        } catch (const sc::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error("{\"stats\": 1}"),
              "sweep shard: malformed result from a worker: it does not start with \"sweep-shard 8\"");
    // A shard of an older page's format (7: no activation offloading) is refused by its version, not misread.
    std::string older = good;
    older.replace(0, std::strlen("sweep-shard 8"), "sweep-shard 7");
    EXPECT_EQ(error(older), "sweep shard: malformed result from a worker: it does not start with \"sweep-shard 8\"");
    EXPECT_EQ(error("sweep-shard 1 2\n").rfind("sweep shard: malformed", 0), 0u);  // the earlier text form
    // Every cut short of the whole is refused (a partial result never reads as a complete one).
    for (size_t n = 0; n < good.size(); ++n)
        EXPECT_EQ(error(good.substr(0, n)).rfind("sweep shard: malformed", 0), 0u) << "cut at " << n;
    EXPECT_NE(error(good + "x").find("bytes after the last cell"), std::string::npos);
    // A GPU count past 2^24 in the first cell (its 16777216, a little-endian u32 after the magic, the count, the
    // key, found, five results, the breakdown, four point factors and the power limit, and the domain).
    std::string many_gpus = good;
    const size_t at = std::strlen("sweep-shard 8\n") + 8 + 8 + 4 + 1 + 8 * (5 + sc::kBreakdownPartCount + 5) + 4;
    uint32_t was = 0;
    std::memcpy(&was, many_gpus.data() + at, 4);
    ASSERT_EQ(was, 16777216u);
    const uint32_t more = 99999999;
    std::memcpy(many_gpus.data() + at, &more, 4);
    EXPECT_NE(error(many_gpus).find("of 99999999"), std::string::npos) << error(many_gpus);
    // A topology past torus (the byte after the GPU count).
    std::string topology = good;
    ASSERT_EQ(topology[at + 4], 1);  // the first cell's fullflat
    topology[at + 4] = 3;
    EXPECT_NE(error(topology).find("no topology 3"), std::string::npos) << error(topology);
    // A count of cells no shard could hold.
    std::string claims = good;
    const uint64_t huge = 1ull << 40;
    std::memcpy(claims.data() + std::strlen("sweep-shard 4\n"), &huge, 8);
    EXPECT_NE(error(claims).find("claims"), std::string::npos);
}

}  // namespace
