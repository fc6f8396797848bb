// Malformed presets get one clear error naming the field and the problem.
#include <gtest/gtest.h>

#include "config/error.h"
#include "config/model_config.h"
#include "config/overrides.h"

namespace {

const char* kGood = R"({"name":"t","layers":2,"hidden":64,"heads":4,"ffn":256,"vocab":100,"seq":16})";

std::string ErrorOf(const std::string& json) {
    try {
        sc::ParseModelConfig(json);
    } catch (const sc::Error& e) {
        return e.what();
    }
    return "";
}

std::string With(const std::string& set) { return sc::ApplyOverrides(kGood, {set}, "test"); }

TEST(ModelConfig, GoodPresetParses) {
    sc::ModelConfig m = sc::ParseModelConfig(kGood);
    EXPECT_EQ(m.head_dim, 16);
    EXPECT_EQ(m.kv_heads, 4);
}

TEST(ModelConfig, NotJson) {
    EXPECT_NE(ErrorOf("{layers: 2").find("not valid JSON"), std::string::npos);
    EXPECT_NE(ErrorOf("").find("not valid JSON"), std::string::npos);
}

TEST(ModelConfig, MissingField) {
    EXPECT_EQ(ErrorOf(R"({"name":"t","layers":2,"hidden":64,"heads":4,"ffn":256,"vocab":100})"),
              "seq: missing required field");
}

TEST(ModelConfig, MisspelledFieldSuggestsTheRightOne) {
    std::string e = ErrorOf(With("hiden=64"));
    EXPECT_EQ(e, "hiden: unknown field (did you mean \"hidden\"?)");
    EXPECT_EQ(ErrorOf(With("moe.topk=2")).rfind("moe.", 0), 0u);  // nested paths are named in full
}

TEST(ModelConfig, ZeroOrNegativeSizes) {
    EXPECT_EQ(ErrorOf(With("layers=0")), "layers: must be a positive integer, got 0");
    EXPECT_EQ(ErrorOf(With("hidden=-64")), "hidden: must be a positive integer, got -64");
    EXPECT_EQ(ErrorOf(With("vocab=1.5")), "vocab: expected an integer, got 1.5");
    EXPECT_EQ(ErrorOf(With("seq=\"long\"")), "seq: expected an integer, got \"long\"");
}

TEST(ModelConfig, HeadsMustDivideHidden) {
    EXPECT_EQ(ErrorOf(With("heads=5")),
              "heads: 5 attention heads do not divide hidden size 64 (give head_dim explicitly, or pick heads "
              "dividing 64)");
    EXPECT_EQ(ErrorOf(With("kv_heads=3")), "kv_heads: 3 key/value heads do not divide 4 attention heads");
}

TEST(ModelConfig, BadChoices) {
    EXPECT_EQ(ErrorOf(With("mlp=relu")), "mlp: \"relu\" is not one of \"gelu\", \"swiglu\", \"relu2\"");
    EXPECT_EQ(ErrorOf(With("precision.compute=fp6")).rfind("precision.compute:", 0), 0u);
}

TEST(ModelConfig, MoeValidation) {
    std::string moe = sc::ApplyOverrides(kGood, {"moe.experts=4", "moe.top_k=8"}, "t");
    EXPECT_EQ(ErrorOf(moe), "moe.top_k: top_k=8 exceeds 4 experts");
    auto imbalance = [&](std::vector<std::string> sets) {
        sets.insert(sets.begin(), {"moe.experts=8", "moe.top_k=2"});
        return ErrorOf(sc::ApplyOverrides(kGood, sets, "t"));
    };
    EXPECT_EQ(imbalance({"moe.load_imbalance=4"}), "");  // every token routed to one expert: 8 / 2
    EXPECT_EQ(imbalance({"moe.load_imbalance=0.5"}),
              "moe.load_imbalance: must be from 1 (balanced) to experts / top_k = 4.0 (every token routed to the "
              "hottest expert), got 0.5");
    EXPECT_EQ(imbalance({"moe.load_imbalance=4.5"}).rfind("moe.load_imbalance: must be from 1", 0), 0u);
    EXPECT_EQ(imbalance({"moe.load_imbalance=1.5", "moe.capacity_factor=1.25"}),
              "moe.load_imbalance: applies to dropless routing; with capacity_factor 1.25 every expert computes its "
              "padded capacity whatever its load (set one of the two)");
    // Group-limited routing (moe.router_groups / router_group_topk) and the routing pattern.
    EXPECT_EQ(imbalance({"moe.router_groups=4", "moe.router_group_topk=2"}), "");
    EXPECT_EQ(imbalance({"moe.router_groups=4"}),
              "moe.router_group_topk: group-limited routing needs both router_groups and router_group_topk (or "
              "neither), got 4 and 0");
    EXPECT_EQ(imbalance({"moe.router_groups=3", "moe.router_group_topk=1"}),
              "moe.router_groups: 3 groups do not divide 8 experts");
    EXPECT_EQ(imbalance({"moe.router_groups=4", "moe.router_group_topk=5"}),
              "moe.router_group_topk: must be at most router_groups = 4, got 5");
    EXPECT_EQ(imbalance({"moe.router_groups=8", "moe.router_group_topk=1"}),
              "moe.router_group_topk: 1 groups of 1 experts hold fewer than top_k = 2");
    EXPECT_EQ(imbalance({"moe.routing=contiguous"}), "");
    EXPECT_EQ(imbalance({"moe.routing=sticky"}), "moe.routing: \"sticky\" is not one of \"uniform\", \"contiguous\"");
}

TEST(ModelConfig, RoundTripsThroughJson) {
    sc::ModelConfig m = sc::ParseModelConfig(
        sc::ApplyOverrides(kGood,
                           {"moe.experts=4", "moe.top_k=2", "moe.load_imbalance=1.25", "moe.routing=contiguous",
                            "moe.router_groups=2", "moe.router_group_topk=1"},
                           "t"));
    sc::ModelConfig r = sc::ParseModelConfig(sc::ModelConfigToJson(m));
    EXPECT_EQ(r.moe.experts, 4);
    EXPECT_EQ(r.moe.load_imbalance, 1.25);
    EXPECT_EQ(r.moe.routing, sc::MoeRouting::contiguous);
    EXPECT_EQ(r.moe.router_groups, 2);
    EXPECT_EQ(r.moe.router_group_topk, 1);
    EXPECT_EQ(r.head_dim, m.head_dim);
    EXPECT_EQ(sc::ModelConfigToJson(r), sc::ModelConfigToJson(m));
}

TEST(ModelConfig, Fp8ComputeKeepsBf16Gradients) {
    sc::ModelConfig m = sc::ParseModelConfig(With("precision.compute=fp8"));
    EXPECT_EQ(m.precision.grad, sc::Precision::bf16);
}

}  // namespace
