// Invalid parallel layouts fail with an error that names the constraint.
#include <gtest/gtest.h>

#include "config/error.h"
#include "parallel/parallel_config.h"
#include "trace_test_util.h"

namespace {

std::string ErrorOf(const sc::ModelConfig& m, const std::string& spec) {
    try {
        sc::ValidateParallel(m, sc::ParseParallelSpec(spec));
    } catch (const sc::Error& e) {
        return e.what();
    }
    return "";
}

sc::ModelConfig Llama70b() { return sc::ParseModelConfig(sctest::Preset("llama3-70b.json")); }

TEST(ParallelConfig, NamesTheConstraint) {
    sc::ModelConfig m = Llama70b();
    EXPECT_EQ(ErrorOf(m, "tp=3"), "tp: tp=3 does not divide 64 attention heads");
    EXPECT_EQ(ErrorOf(m, "tp=16"), "tp: tp=16 does not divide 8 key/value heads");
    EXPECT_EQ(ErrorOf(m, "pp=7"), "pp: pp=7 does not divide 80 layers (or set uneven=1)");
    EXPECT_EQ(ErrorOf(m, "tp=8,pp=8,dp=64,gpus=4000"), "gpus: tp*cp*pp*dp = 4096 but 4000 GPUs were given");
    EXPECT_EQ(ErrorOf(m, "ep=2,dp=2"), "ep: ep=2 needs a mixture-of-experts model; Llama-3 70B is dense");
    EXPECT_EQ(ErrorOf(m, "dp=4,batch=6"), "batch: batch=6 is not a multiple of microbatch*dp = 1*4 = 4");
    EXPECT_EQ(ErrorOf(m, "pp=4,schedule=interleaved,batch=6"),
              "batch: interleaved 1F1B needs the number of microbatches (6) to be a multiple of pp=4");
    EXPECT_EQ(ErrorOf(m, "cp=3"), "cp: cp=3 needs the sequence length 8192 to split into 2*cp=6 equal chunks");
    EXPECT_EQ(
        ErrorOf(m, "order=tp-dp-pp"),
        "order: order=tp-dp-pp must list tp, cp, dp and pp once each, fastest-varying first (e.g. order=tp-cp-dp-pp)");
    EXPECT_EQ(ErrorOf(m, "tp=0"), "tp: tp=0 must be a positive integer");
    EXPECT_EQ(ErrorOf(m, "tp=8,pp=8,dp=64,gpus=4096"), "");
    EXPECT_EQ(ErrorOf(m, "pp=7,uneven=1"), "");
}

TEST(ParallelConfig, MoeConstraints) {
    sc::ModelConfig m = sc::ParseModelConfig(sctest::Preset("mixtral-8x7b.json"));
    EXPECT_EQ(ErrorOf(m, "ep=3,dp=3"), "ep: ep=3 does not divide 8 experts");
    EXPECT_EQ(ErrorOf(m, "ep=4,dp=2"),
              "ep: ep=4 must divide tp*cp*dp = 1*1*2 (expert-parallel groups fold over the ranks of a pipeline stage)");
    // Folding (Megatron-Core): ep may exceed dp when the stage's tp x cp x dp ranks hold it; not with etp=tp.
    EXPECT_EQ(ErrorOf(m, "tp=2,sp=1,ep=4,dp=2"), "");
    EXPECT_EQ(ErrorOf(m, "tp=2,sp=1,cp=2,ep=8,dp=2"), "");
    EXPECT_EQ(ErrorOf(m, "tp=2,sp=1,etp=2,ep=4,dp=2"),
              "ep: ep=4 must divide cp*dp = 1*2 (with etp=tp, expert-parallel groups fold over the cp x dp ranks of a "
              "TP position)");
    EXPECT_EQ(ErrorOf(m, "tp=2"), "sp: MoE with tp=2 needs sequence parallelism (sp=1), as Megatron-Core requires");
    EXPECT_EQ(ErrorOf(m, "tp=2,sp=1,ep=8,dp=8"), "");
}

TEST(ParallelConfig, SpecParsing) {
    EXPECT_THROW(sc::ParseParallelSpec("tp=8,foo=1"), sc::Error);
    EXPECT_THROW(sc::ParseParallelSpec("tp=eight"), sc::Error);
    EXPECT_THROW(sc::ParseParallelSpec("schedule=zigzag"), sc::Error);
    sc::ParallelConfig p =
        sc::ParseParallelSpec("tp=8,pp=16,dp=256,schedule=interleaved,batch=4096,recompute=selective,zero=1");
    EXPECT_EQ(p.vstages, 2);
    EXPECT_EQ(p.world(), 32768);
    EXPECT_EQ(p.microbatches(), 16);
    sc::ParallelConfig q = sc::ParseParallelSpec(sc::ParallelSpecString(p));
    EXPECT_EQ(sc::ParallelSpecString(q), sc::ParallelSpecString(p));
}

// The page's links carry the split as this string: a bucket size other than the default must survive it.
TEST(ParallelConfig, SpecStringKeepsTheBucketSize) {
    EXPECT_EQ(sc::ParallelSpecString(sc::ParseParallelSpec("dp=4")).find("bucket_mb"), std::string::npos);
    for (double mb : {12.5, 1.0, 0.1 + 1, 1048576.0}) {
        sc::ParallelConfig p = sc::ParseParallelSpec("dp=4");
        p.bucket_mb = mb;
        EXPECT_EQ(sc::ParseParallelSpec(sc::ParallelSpecString(p)).bucket_mb, mb) << sc::ParallelSpecString(p);
    }
}

}  // namespace
