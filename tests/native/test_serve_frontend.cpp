// The serving front end outside the engine (EngineConfig::frontend_s, description "engine.frontend_ms"): Triton's
// ensemble around TensorRT-LLM tokenizes before the engine and detokenizes and streams after it, which the client's
// TTFT and end-to-end latency hold and the engine's iterations do not.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/serve.h"
#include "inference/engine.h"
#include "inference/serving_parse.h"
#include "report/serve_report.h"
#include "serve_test_util.h"
#include "test_util.h"

namespace {

using namespace sc;

ServingRun Simulate(double frontend_s, double ttft_slo = 0, long long requests = 50) {
    ServingConfig c = servetest::Base("llama3-8b", 1, 512, 64, requests);
    c.workload.arrival = ArrivalKind::poisson;
    c.workload.rate = 2;  // light load: requests rarely meet
    c.engine.frontend_s = frontend_s;
    c.slo.ttft = ttft_slo;
    return SimulateServing(c, servetest::System("dgx-h100-superpod"), &servetest::Calibration());
}

// Every request's TTFT and end-to-end latency carry the front end once; its TPOT and the engine's schedule do not.
TEST(ServeFrontend, AddsToEveryRequestsTtftAndLatencyOnly) {
    const ServingRun bare = Simulate(0), front = Simulate(3.18e-3);
    EXPECT_NEAR(front.result.ttft.mean - bare.result.ttft.mean, 3.18e-3, 1e-9);
    EXPECT_NEAR(front.result.ttft.max - bare.result.ttft.max, 3.18e-3, 1e-9);
    EXPECT_NEAR(front.result.e2e.mean - bare.result.e2e.mean, 3.18e-3, 1e-9);
    EXPECT_DOUBLE_EQ(front.result.tpot.mean, bare.result.tpot.mean);
    EXPECT_DOUBLE_EQ(front.result.duration, bare.result.duration);
    EXPECT_DOUBLE_EQ(front.result.output_tokens_per_s, bare.result.output_tokens_per_s);
    // An SLO on TTFT is judged on what the client sees: one request's lone prefill plus half the front end passes
    // without it and fails with it.
    const ServingRun one = Simulate(0, 0, 1);
    const double target = one.result.ttft.max + 1.59e-3;
    EXPECT_DOUBLE_EQ(Simulate(0, target, 1).result.slo_attainment, 1.0);
    EXPECT_DOUBLE_EQ(Simulate(3.18e-3, target, 1).result.slo_attainment, 0.0);
}

TEST(ServeFrontend, DescriptionsStateItInMillisecondsAndBadValuesAreRefused) {
    const std::string head = R"({"model":"llama3-8b","system":"dgx-h100-superpod","engine":{"frontend_ms":)";
    const std::string tail = R"(},"workload":{"requests":10,"input":{"distribution":"fixed","tokens":100},
        "output":{"distribution":"fixed","tokens":10}}})";
    EXPECT_DOUBLE_EQ(ParseServingDescription(head + "3.18" + tail).config.engine.frontend_s, 3.18e-3);
    EXPECT_NE(sctest::ErrorOf([&] { ParseServingDescription(head + "-1" + tail); }).find("engine.frontend_ms"),
              std::string::npos);
    ServingConfig c = servetest::Base("llama3-8b", 1, 100, 10, 10);
    c.engine.frontend_s = std::numeric_limits<double>::infinity();
    EXPECT_EQ(sctest::ErrorOf([&] { ValidateServingConfig(c); }).rfind("engine.frontend_ms: ", 0), 0u);
}

TEST(ServeFrontend, TheReportSaysItIsThere) {
    engine::ServeRequest req;
    req.config = servetest::Base("llama3-8b", 1, 512, 64, 5);
    req.config.engine.frontend_s = 3.18e-3;
    req.system = &servetest::System("dgx-h100-superpod");
    req.calibration = &servetest::Calibration();
    const std::string text = ServeReportText(req, engine::RunServe(req));
    EXPECT_NE(text.find(", a front end of 3.180 ms a request outside the engine"), std::string::npos) << text;
}

}  // namespace
