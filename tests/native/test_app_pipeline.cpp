// The page's pipeline schedule (app/panel_pipeline.cpp) against the CLI's `estimate --timeline-json` file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "app/app_state.h"
#include "page_driver.h"
#include "test_util.h"

namespace {

using pagetest::Page;
using pagetest::ShowLayout;

// A split with a pipeline: the Training panel lays its schedule out in time under the estimate, the same boxes as
// the CLI's `estimate --timeline-json` events.
TEST(AppPanels, APipelineShowsItsScheduleInTimeAsTheCliWritesIt) {
    Page p;
    p.height = 1400;  // room under the estimate
    ASSERT_NO_FATAL_FAILURE(ShowLayout(p, "tp=2,pp=4,batch=64,schedule=dualpipe"));
    ASSERT_TRUE(p.app->estimate.pipeline);
    const sc::PipelineTimeline& t = *p.app->estimate.pipeline;
    size_t boxes = 0;
    for (const auto& rank : t.ranks) boxes += rank.size();
    const std::string path = (std::filesystem::temp_directory_path() / "sc-page-timeline.json").string();
    const sctest::CliResult r = sctest::RunCli(
        "estimate --model llama3-8b --system dgx-h100-superpod --parallel tp=2,pp=4,batch=64,schedule=dualpipe "
        "--timeline-json " +
        path);
    ASSERT_EQ(r.status, 0) << r.out;
    size_t events = 0;
    double last = 0;
    const nlohmann::json written = nlohmann::json::parse(sctest::ReadFile(path));
    for (const nlohmann::json& e : written.at("traceEvents")) {
        if (e.at("ph") != "X") continue;
        ++events;
        last = std::max(last, e.at("ts").get<double>() + e.at("dur").get<double>());
    }
    EXPECT_EQ(events, boxes);
    EXPECT_NEAR(last, t.end * 1e6, 1e-3);  // microseconds, written to the nanosecond
    // Opened, the schedule is drawn across the panel, and hovering a box is fine.
    p.Click("Training on a cluster", "pipeline schedule");
    const sc::app::Rect g = p.Find("Training on a cluster", "##pipeline");
    ASSERT_TRUE(g.found);
    EXPECT_GT(g.w, 200);
    EXPECT_GT(g.h, 4 * 10);
    p.ui.MousePos(g.x + g.w * 0.5f, g.y + g.h * 0.1f);
    p.Frames(2);
}

}  // namespace
