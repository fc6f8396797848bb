// The Model panel's precision controls against the CLI: the fp8 scaling recipe, and the layers and modules an fp8
// model keeps in BF16, each set in the page (or by a link), computed as the CLI computes them, and carried in links.
#include <gtest/gtest.h>

#include <string>

#include "app/app.h"
#include "app/app_state.h"
#include "config/precision.h"
#include "page_driver.h"

namespace {

using pagetest::App;
using pagetest::Page;
using pagetest::ShowJob;

// Llama 3 8B on a DGX H100 SuperPOD at tp=2, dp=4, opened by a link of the page's state with `keys` before its
// split (";precision=fp8"), estimated; `link` is that link.
void ShowLlama8bWith(Page& p, const std::string& keys, std::string& link) {
    ASSERT_NO_FATAL_FAILURE(ShowJob(p, "llama3-8b.json", "dgx-h100-superpod.json", "tp=2,dp=4,sp=1,batch=8"));
    link = sc::app::LinkState(*p.app);
    link.insert(link.find(";parallel="), keys);
    ASSERT_EQ(sc::app::ApplyLink(*p.app, link), "");
    p.Frames(2);
    ASSERT_TRUE(p.app->has_estimate) << p.app->training_error;
}

// The fp8 recipe (the Model panel's "fp8 scaling" combo once the precision is fp8) in a link: the quantization part
// grows under current scaling as the CLI's does, and a recipe of another format is refused naming the key.
TEST(AppPrecision, Fp8ScalingRecipeInThePageAsInTheCli) {
    Page p;
    std::string link;
    ASSERT_NO_FATAL_FAILURE(ShowLlama8bWith(p, ";precision=fp8", link));
    const double delayed = p.app->estimate.step.fp8_cast;
    link.insert(link.find(";parallel="), ";scaling=current");
    App other = pagetest::OpenPage();
    ASSERT_EQ(sc::app::ApplyLink(*other, link), "");
    ASSERT_TRUE(other->has_estimate) << other->training_error;
    EXPECT_GT(other->estimate.step.fp8_cast, 1.3 * delayed);
    EXPECT_NE(sc::app::LinkState(*other).find(";precision=fp8;scaling=current;"), std::string::npos);
    const double cli_step =
        pagetest::CliStepSeconds("llama3-8b", "dgx-h100-superpod", "--precision fp8 --set precision.scaling=current",
                                 sc::app::CurrentParallelSpec(*other));
    EXPECT_NEAR(other->estimate.step_seconds, cli_step, 1e-9 * cli_step);
    link.replace(link.find("scaling=current"), 15, "scaling=nvfp4");
    EXPECT_EQ(sc::app::ApplyLink(*other, link),
              "link: scaling: \"nvfp4\" scales fp4 GEMMs, but precision.compute is fp8; valid with fp8: auto, delayed, "
              "current, block or mx");
}

// Layers and modules kept in BF16 (PrecisionConfig::bf16_*), edited in the Model panel under an fp8 precision: the
// page computes what the CLI does for the same fields, and the link carries them.
TEST(AppPrecision, Bf16LayersAndModulesInThePageAsInTheCli) {
    Page p;
    std::string link;
    ASSERT_NO_FATAL_FAILURE(ShowLlama8bWith(p, ";precision=fp8;scaling=current", link));
    const double all_fp8 = p.app->estimate.step_seconds;
    p.EnterText("Model", "bf16_last", "2");
    p.Click("Model", "attention");
    p.Frames(2);
    ASSERT_TRUE(p.app->has_estimate) << p.app->training_error;
    EXPECT_EQ(p.app->model.precision.bf16_last_layers, 2);
    EXPECT_EQ(p.app->model.precision.bf16_modules, sc::kBf16Attention);
    EXPECT_GT(p.app->estimate.step_seconds, all_fp8);
    EXPECT_NE(sc::app::LinkState(*p.app).find(";scaling=current;bf16_last=2;bf16_modules=attention;"),
              std::string::npos)
        << sc::app::LinkState(*p.app);
    const double cli_step = pagetest::CliStepSeconds(
        "llama3-8b", "dgx-h100-superpod",
        "--precision fp8 --set precision.scaling=current --set precision.bf16_last_layers=2 --set "
        "precision.bf16_modules=attention",
        sc::app::CurrentParallelSpec(*p.app));
    EXPECT_NEAR(p.app->estimate.step_seconds, cli_step, 1e-9 * cli_step);
    // Delayed scaling cannot keep layers in BF16: the page says so, naming the field.
    link = sc::app::LinkState(*p.app);
    link.replace(link.find("scaling=current"), 15, "scaling=delayed");
    EXPECT_NE(sc::app::ApplyLink(*p.app, link).find("precision.bf16_last_layers"), std::string::npos);
}

}  // namespace
