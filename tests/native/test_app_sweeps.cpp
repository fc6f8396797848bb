// The Sweeps view's driver (src/app/sweep_driver.cpp): a search sweep on the page's thread in frame slices, a pool
// sweep's shards merged in any order into the engine's rows, how many pool tasks a sweep becomes, and the view's
// axes in the link.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/app.h"
#include "app/app_state.h"
#include "app/pool_jobs.h"
#include "engine/sweep.h"
#include "page_driver.h"
#include "report/search_report.h"
#include "test_util.h"

namespace {

using pagetest::Page;

// A sweep started on an open page: `workers` in its pool (0: frame slices on the page's thread), the two axes as
// `stagecraft sweep --axis` takes them, and a fixed layout or a search at every point.
void StartSweepOn(Page& p, int workers, const std::string& axis1, const std::string& axis2, bool fixed_layout) {
    p.Frames(2);
    sc::app::SetPoolWorkers(*p.app, workers);
    sc::app::SetSweepAxes(*p.app, axis1, axis2);
    p.app->sweep.fixed_layout = fixed_layout;
    sc::app::StartSweep(*p.app);
}

// Without web workers the page's thread runs a search sweep in frame slices: one point's layout search (0.1 s
// or more) is split into kSweepSearchPieces pieces, so a slice never has to run a whole search. With no time
// budget every slice runs exactly one piece; the rows equal the engine's unsharded sweep.
TEST(AppPanels, ASearchSweepOnThePagesThreadRunsEachPointsSearchInPieces) {
    Page p;
    StartSweepOn(p, 0, "flops=1,2", "", false);
    ASSERT_EQ(p.app->sweep.error, "");
    ASSERT_NE(p.app->sweep.slices, nullptr) << "runs in frame slices";
    int slices = 0;
    while (!p.app->sweep.has_result && slices < 1000) {
        sc::app::StepSweep(*p.app, 0.0);
        ++slices;
        if (slices < sc::app::kSweepSearchPieces) {
            EXPECT_TRUE(p.app->sweep.cells.empty()) << "slice " << slices;
        }
        ASSERT_EQ(p.app->sweep.error, "");
    }
    ASSERT_TRUE(p.app->sweep.has_result);
    EXPECT_EQ(slices, 2 * sc::app::kSweepSearchPieces) << "two points, one model";

    sc::engine::Request r = sc::app::CurrentRequest(*p.app);
    sc::ParseSweepAxis("flops=1,2", r.sweep.axes);
    const sc::engine::SweepSnapshot snap = sc::engine::SnapshotSweep(r);
    const std::vector<sc::SweepRow> rows = sc::engine::RunSweepShard(snap, 0, 1);
    ASSERT_EQ(rows.size(), p.app->sweep.cells.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        ASSERT_TRUE(rows[i].found);
        EXPECT_EQ(
            sc::SweepRowText(rows[i], snap.request, sc::SweepFormat::csv),
            sc::SweepRowText(sc::app::RowOf(p.app->sweep.cells[i], rows[i].model), snap.request, sc::SweepFormat::csv))
            << "point " << i;
    }
}

}  // namespace

namespace {

// With workers, a sweep's shards come back in whatever order the workers finish them, each holding every
// count-th point. However they arrive, the page's cells end in the engine's order, equal to its unsharded rows.
TEST(AppPanels, APoolSweepsShardsInAnyOrderMergeIntoTheUnshardedRows) {
    Page p;
    StartSweepOn(p, 2, "flops=0.5,1,2,4,8", "hbm_bw=1,2,3", true);
    ASSERT_EQ(p.app->sweep.error, "");
    const sc::app::PoolJob job = sc::app::TakePoolJob(*p.app);
    ASSERT_EQ(job.kind, "sweep");
    ASSERT_EQ(job.shards, 15) << "one shard a point";

    sc::engine::Request r = sc::app::CurrentRequest(*p.app);
    for (const std::string& a : job.axes) sc::ParseSweepAxis(a, r.sweep.axes);
    r.sweep.fixed_layout = true;
    const sc::engine::SweepSnapshot snap = sc::engine::SnapshotSweep(r);
    // 15 shards in an order that is neither theirs nor its reverse: every cell is off its place on arrival.
    for (int shard : {7, 3, 14, 0, 9, 12, 1, 5, 11, 2, 13, 6, 10, 4, 8}) {
        std::vector<sc::app::SweepCell> cells;
        for (const sc::SweepRow& row : sc::engine::RunSweepShard(snap, shard, job.shards))
            cells.push_back(sc::app::CellOf(row));
        ASSERT_EQ(sc::app::AddPoolShard(*p.app, job.id, sc::app::EncodeSweepShard(cells)), "");
    }
    ASSERT_TRUE(p.app->sweep.has_result);
    const std::vector<sc::SweepRow> rows = sc::engine::RunSweepShard(snap, 0, 1);
    ASSERT_EQ(rows.size(), p.app->sweep.cells.size());
    for (size_t i = 0; i < rows.size(); ++i)
        EXPECT_EQ(sc::SweepRowText(rows[i], snap.request, sc::SweepFormat::csv),
                  sc::SweepRowText(sc::app::RowOf(sc::app::SweepCellInKeyOrder(p.app->sweep, i), rows[i].model),
                                   snap.request, sc::SweepFormat::csv))
            << "row " << i;
    // And so is the CSV the page exports.
    std::vector<std::string> texts;
    for (const sc::SweepRow& row : rows) texts.push_back(sc::SweepRowText(row, snap.request, sc::SweepFormat::csv));
    EXPECT_EQ(sc::app::SweepCsv(*p.app), sc::AssembleSweep(texts, sc::SweepFormat::csv));
}

}  // namespace

namespace {

// How many pool tasks a sweep becomes: a searching sweep one a point up to kMaxSweepShards; a fixed-layout sweep
// kFixedPointsPerShard points a task (its points cost less than a task's messages), never fewer than
// kMinSweepShards tasks while it has that many points, never more than it has points.
TEST(AppPanels, ASweepsTasksHoldEnoughWorkToOutweighTheirMessages) {
    using sc::app::SweepShardCount;
    EXPECT_EQ(SweepShardCount(1, false), 1);
    EXPECT_EQ(SweepShardCount(15, false), 15);
    EXPECT_EQ(SweepShardCount(100000, false), sc::app::kMaxSweepShards);
    EXPECT_EQ(SweepShardCount(1, true), 1);
    EXPECT_EQ(SweepShardCount(15, true), 15);
    EXPECT_EQ(SweepShardCount(20000, true), sc::app::kMinSweepShards) << "9 tasks of 2048 would be too few";
    EXPECT_EQ(SweepShardCount(100000, true), 48) << "100000 / 2048, rounded down";
    EXPECT_EQ(SweepShardCount(1000000, true), sc::app::kMaxSweepShards);

    // The job the page raises carries that count.
    const auto evenly = [](const std::string& name, int n) {  // n values from 1 to about 2
        std::string a = name + "=";
        for (int i = 0; i < n; ++i) a += (i ? "," : "") + std::to_string(1 + i / static_cast<double>(n));
        return a;
    };
    Page p;
    StartSweepOn(p, 2, evenly("flops", 250), evenly("hbm_bw", 400), true);
    ASSERT_EQ(p.app->sweep.error, "");
    EXPECT_EQ(sc::app::TakePoolJob(*p.app).shards, 48);
}

// The Sweeps view's axes and its "only the current layout" switch travel in the link; the defaults write
// nothing, and a half-typed value is left out rather than making a link that cannot be opened.
TEST(AppPanels, TheSweepsAxesAndFixedLayoutAreInTheLink) {
    Page p;
    p.Frames(2);
    EXPECT_EQ(sc::app::LinkState(*p.app).find("sweep."), std::string::npos) << sc::app::LinkState(*p.app);
    sc::app::SetSweepAxes(*p.app, "net_bw=0.5,1,4", "domain=8,72");
    p.app->sweep.fixed_layout = true;
    const std::string link = sc::app::LinkState(*p.app);
    EXPECT_NE(link.find(";sweep.axis1=net_bw=0.5,1,4;sweep.axis2=domain=8,72;sweep.fixed=1;"), std::string::npos)
        << link;

    Page q;
    q.Frames(2);
    ASSERT_EQ(sc::app::ApplyLink(*q.app, link), "");
    EXPECT_EQ(sc::app::SweepAxisArgs(*q.app), (std::vector<std::string>{"net_bw=0.5,1,4", "domain=8,72"}));
    EXPECT_TRUE(q.app->sweep.fixed_layout);
    EXPECT_EQ(sc::app::LinkState(*q.app), link);

    p.app->sweep.values[1] = "8,7";  // being typed: "8,72"
    p.app->sweep.values[0] = "0.5,1,";
    const std::string typing = sc::app::LinkState(*p.app);
    EXPECT_EQ(typing.find("sweep.axis1"), std::string::npos) << typing;
    EXPECT_NE(typing.find(";sweep.axis2=domain=8,7;"), std::string::npos) << typing;
    Page r;
    r.Frames(2);
    EXPECT_EQ(sc::app::ApplyLink(*r.app, typing), "");
}

}  // namespace
