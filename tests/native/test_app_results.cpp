// The page's results panel (web/main.js's DOM panel): "Copy JSON" is what `stagecraft estimate --json` and
// `summary --json` print for the same request, "Copy Markdown" carries every figure of the text report, and the
// "Perfetto JSON" button's request reaches the page's JS once.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "app/app.h"
#include "app/app_state.h"
#include "page_driver.h"
#include "report/markdown.h"
#include "test_util.h"

namespace {

using Json = nlohmann::ordered_json;

Json CliJson(const std::string& args) {
    const sctest::CliResult r = sctest::RunCli(args, false);
    EXPECT_EQ(r.status, 0) << args;
    return Json::parse(r.out);
}

TEST(AppResults, JsonIsTheCliEstimateAndSummaryJson) {
    pagetest::App s = pagetest::OpenPage();
    ASSERT_TRUE(sc::app::SelectPreset(*s, "mixtral-8x7b"));
    ASSERT_EQ(sc::app::SetParallel(*s, "tp=4,sp=1,ep=4,dp=8,batch=64,zero=2"), "");
    const std::string args = "--model presets/models/mixtral-8x7b.json --parallel " + sc::app::CurrentParallelSpec(*s);
    const Json page = Json::parse(sc::app::ResultJson(*s));
    EXPECT_EQ(page.at("estimate"), CliJson("estimate --json --allow-oom --system dgx-h100-superpod " + args));
    EXPECT_EQ(page.at("summary"), CliJson("summary --json " + args));
    EXPECT_FALSE(page.contains("errors"));
}

TEST(AppResults, JsonNamesTheStageThatFailedAndKeepsWhatCameBefore) {
    pagetest::App s = pagetest::OpenPage();
    const std::string error = sc::app::SetParallel(*s, "pp=7");
    ASSERT_FALSE(error.empty());
    const Json page = Json::parse(sc::app::ResultJson(*s));
    EXPECT_EQ(page.at("estimate"), CliJson("estimate --json --model presets/models/llama3-8b.json"));
    ASSERT_EQ(page.at("errors").size(), 1u);
    EXPECT_EQ(page.at("errors")[0].at("stage"), "parallel");
    EXPECT_EQ(page.at("errors")[0].at("message"), error);
    EXPECT_FALSE(page.contains("summary"));

    EXPECT_NE(sc::app::LoadModelJson(*s, "{\"name\": \"broken\"}"), "");
    const Json broken = Json::parse(sc::app::ResultJson(*s));
    EXPECT_EQ(broken.at("errors")[0].at("stage"), "model");
    EXPECT_FALSE(broken.contains("estimate"));
}

TEST(AppResults, MarkdownOfAKnownTextHasItsTableHeadingsAndList) {
    const std::string text =
        "Model: Tiny | test\n"
        "parameters                    1.00 M (1000000)\n"
        "  embedding tables            10 K\n"
        "Training state (bf16 weights)\n"
        "  weights                     2.00 MiB\n"
        "Traces: Tiny on 2 ranks\n"
        "  nodes 12: 10 compute, 2 collective\n";
    EXPECT_EQ(sc::ReportMarkdown(text),
              "## Model: Tiny \\| test\n"
              "\n| figure | value |\n|---|---|\n"
              "| parameters | 1.00 M (1000000) |\n"
              "| &emsp;embedding tables | 10 K |\n"
              "\n**Training state (bf16 weights)**\n"
              "\n| figure | value |\n|---|---|\n"
              "| &emsp;weights | 2.00 MiB |\n"
              "\n## Traces: Tiny on 2 ranks\n"
              "\n- nodes 12: 10 compute, 2 collective\n");
}

// Every line of the page's text report survives into the Markdown: a "label  value" line as a table row with the
// same value, any other line with its text.
TEST(AppResults, MarkdownCarriesEveryLineOfThePageReport) {
    pagetest::App s = pagetest::OpenPage();
    const std::string text = sc::app::MirrorText(*s);
    const std::string md = sc::app::ResultMarkdown(*s);
    ASSERT_NE(text.find("step time"), std::string::npos);
    std::istringstream lines(text);
    std::string line;
    int rows = 0;
    while (std::getline(lines, line)) {
        if (line.size() > 30 && line[29] == ' ' && line[28] == ' ' && line[30] != ' ') {
            std::string label = line.substr(0, 30);
            label.erase(label.find_last_not_of(' ') + 1);
            label.erase(0, label.find_first_not_of(' '));
            const std::string value = line.substr(30);
            EXPECT_NE(md.find(label + " | " + value + " |\n"), std::string::npos) << line;
            ++rows;
        } else {
            std::string words = line.substr(line.find_first_not_of(' '));
            EXPECT_NE(md.find(words), std::string::npos) << line;
        }
    }
    EXPECT_GT(rows, 20);
}

TEST(AppResults, TheTimelineButtonRaisesItsRankOnce) {
    pagetest::Page p;
    p.Frames(2);
    EXPECT_EQ(sc::app::TakeTimelineRequest(*p.app), -1);
    p.app->download.timeline_rank = 3;
    p.Click("Parallelism and traces", "Perfetto JSON");
    EXPECT_EQ(sc::app::TakeTimelineRequest(*p.app), 3);
    EXPECT_EQ(sc::app::TakeTimelineRequest(*p.app), -1);
}

TEST(AppResults, ARankOutsideTheJobDisablesTheTimelineButton) {
    pagetest::Page p;
    p.Frames(2);
    p.app->download.timeline_rank = p.app->parallel.world();
    p.Click("Parallelism and traces", "Perfetto JSON");
    EXPECT_EQ(sc::app::TakeTimelineRequest(*p.app), -1);
}

}  // namespace
