// What `stagecraft serve` reports beside its rate (inference/published_serving_runs.h) is the serving validation,
// not a number of its own: the table in src/inference/published_serving_runs.cpp must be what the offline
// throughput rows of the three validation sets give, and the report must print it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "inference/published_serving_runs.h"
#include "published_runs_rows.h"
#include "serve_validation.h"
#include "test_util.h"

namespace {

using namespace servevalidation;

// The table as the rows give it: measured / predicted output rate per accelerator and precision.
std::string TableSource() {
    sctest::RatiosByPart ratios;
    for (const std::vector<Row>* set : {&FirstSetRows(), &SecondSetRows(), &ThirdSetRows()})
        for (const Row& r : *set)
            if (r.expressible && !r.accelerator.empty())
                ratios[{r.accelerator, r.precision_class}].push_back(r.measured / r.predicted);
    return sctest::PublishedRunsRows(ratios);
}

TEST(PublishedServingRuns, TableIsCurrent) {
    const std::string table = sctest::PublishedRunsRows(sc::PublishedServingRunsTable());
    const std::string expected = TableSource();
    EXPECT_EQ(table, expected) << "src/inference/published_serving_runs.cpp's kTable is stale; its rows are now:\n"
                               << expected;
}

TEST(PublishedServingRuns, ALinePerPartAndPrecision) {
    const sc::PublishedRuns* h100 = sc::PublishedServingRunsFor("h100-sxm", sc::Precision::fp8);
    ASSERT_NE(h100, nullptr);
    EXPECT_STREQ(h100->precision, "fp8");
    EXPECT_EQ(sc::PublishedServingRunsLine(*h100, sc::Precision::fp8).rfind("on h100-sxm in fp8: measured ", 0), 0u);
    // A100 ran only 16-bit engines: an fp8 plan reads them, and says so.
    const sc::PublishedRuns* a100 = sc::PublishedServingRunsFor("a100-80gb", sc::Precision::fp8);
    ASSERT_NE(a100, nullptr);
    EXPECT_NE(sc::PublishedServingRunsLine(*a100, sc::Precision::fp8).find("(none in fp8)"), std::string::npos);
    EXPECT_EQ(sc::PublishedServingRunsFor("no-such-accelerator", sc::Precision::bf16), nullptr);
}

// The report prints the part's spread under the throughput, in text and JSON, and nothing for a part without rows.
TEST(PublishedServingRuns, ServePrintsThePartsSpread) {
    const std::string run = "serve --preset mixtral-8x7b-h100x2-fp8-offline --set workload.requests=50";
    const sctest::CliResult text = sctest::RunCli(run);
    ASSERT_EQ(text.status, 0) << text.out;
    const sc::PublishedRuns* h100 = sc::PublishedServingRunsFor("h100-sxm", sc::Precision::fp8);
    ASSERT_NE(h100, nullptr);
    EXPECT_NE(text.out.find("published runs " + sc::PublishedServingRunsLine(*h100, sc::Precision::fp8) +
                            " [docs/serving.md]\n"),
              std::string::npos)
        << text.out;
    const sctest::CliResult json = sctest::RunCli(run + " --json", false);
    ASSERT_EQ(json.status, 0) << json.out;
    const nlohmann::json j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["published_runs"]["runs"], h100->runs);
    EXPECT_DOUBLE_EQ(j["published_runs"]["measured_over_predicted_output_rate"]["median"].get<double>(), h100->median);
    // B200 has the third set's rows; no offline throughput row ran on a B300.
    const sctest::CliResult b200 = sctest::RunCli(run + " --set system=dgx-b200-superpod");
    ASSERT_EQ(b200.status, 0) << b200.out;
    EXPECT_NE(b200.out.find("published runs on b200 in fp8: measured "), std::string::npos) << b200.out;
    const sctest::CliResult b300 = sctest::RunCli(run + " --set system=dgx-b300-superpod");
    ASSERT_EQ(b300.status, 0) << b300.out;
    EXPECT_EQ(b300.out.find("published runs"), std::string::npos) << b300.out;
}

}  // namespace
