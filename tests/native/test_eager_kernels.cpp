// KernelChoices::fused_elementwise = false: PyTorch eager's kernels for torchtitan's RMSNorm, rotary embedding,
// repeat_kv and SwiGLU. Each module's bytes against the closed form written from its PyTorch code (kernel by kernel,
// fp32 intermediates at 4 bytes; transformer_ops.cpp), not against the builder's own sums.
#include <gtest/gtest.h>

#include <string>

#include "config/model_config.h"
#include "parallel/job.h"
#include "parallel/parallel_config.h"
#include "test_util.h"

namespace {

sc::ModelConfig Model(const std::string& file) {
    const std::string root = SC_SOURCE_DIR;
    return sc::ParseModelConfig(sctest::ReadFile(root + "/presets/models/" + file));
}

sc::Job LlamaJob(bool fused) {
    sc::KernelChoices k;
    k.fused_elementwise = fused;
    return sc::MakeJob(Model("llama3-8b.json"), sc::ParseParallelSpec("tp=1,dp=1,microbatch=2,batch=2"), k);
}

const sc::Block& DenseLayer(const sc::Job& job) {
    for (const sc::Block& b : job.graph.blocks)
        if (b.kind == sc::BlockKind::dense_layer) return b;
    throw std::runtime_error("no dense layer");
}

struct Sums {
    int kernels = 0;
    double bytes = 0, saved = 0;
};
// The ops of one module (named `module` or `module.<kernel>`) in one pass of the dense layer.
Sums Module(const sc::Job& job, const std::string& module, sc::Pass pass) {
    Sums s;
    const sc::Block& b = DenseLayer(job);
    for (const auto* ops : {&b.forward, &b.backward})
        for (const sc::Op& op : *ops)
            if (op.pass == pass && (op.name == module || op.name.rfind(module + ".", 0) == 0))
                ++s.kernels, s.bytes += job.V(op.bytes), s.saved += job.V(op.saved_bytes);
    return s;
}

TEST(EagerKernels, RmsNormIsEightKernelsThroughFp32AndFourteenBack) {
    const sc::Job eager = LlamaJob(false), fused = LlamaJob(true);
    const double T = 2.0 * 8192, h = 4096, E = T * h, w = 2;
    const Sums f = Module(eager, "attn.norm", sc::Pass::forward), b = Module(eager, "attn.norm", sc::Pass::backward);
    EXPECT_EQ(f.kernels, 8);
    EXPECT_EQ(b.kernels, 14);
    // x.float() (w+4), pow (8), mean (4), + eps and rsqrt over rows (8 each), x * rstd (8), .type_as(x) (4+w),
    // * weight (2w).
    EXPECT_DOUBLE_EQ(f.bytes, (4 * w + 28) * E + 16 * T);
    EXPECT_DOUBLE_EQ(f.saved, (4 + w) * E);  // the fp32 input and the output
    EXPECT_DOUBLE_EQ(b.bytes, (8 * w + 76) * E + 12 * T);
    const Sums one = Module(fused, "attn.norm", sc::Pass::forward);
    EXPECT_EQ(one.kernels, 1);
    EXPECT_DOUBLE_EQ(one.bytes, 2 * w * E);
}

TEST(EagerKernels, RotaryThroughFp32ComplexViewsAndKvCopiedToEveryHead) {
    const sc::Job eager = LlamaJob(false);
    const double T = 2.0 * 8192, d = 128, Q = T * 32 * d, K = T * 8 * d, w = 2;
    const Sums f = Module(eager, "attn.rotary", sc::Pass::forward),
               b = Module(eager, "attn.rotary", sc::Pass::backward);
    EXPECT_EQ(f.kernels, 6);
    EXPECT_DOUBLE_EQ(f.bytes, (2 * w + 16) * (Q + K));
    EXPECT_DOUBLE_EQ(b.bytes, (2 * w + 16) * (Q + K));
    // repeat_kv: K and V read at 8 heads and written at 32, kept for SDPA's backward; summed back.
    for (const char* t : {"attn.repeat_kv.k", "attn.repeat_kv.v"}) {
        const Sums r = Module(eager, t, sc::Pass::forward);
        EXPECT_DOUBLE_EQ(r.bytes, (Q + K) * w) << t;
        EXPECT_DOUBLE_EQ(r.saved, (Q - K) * w) << t;
        EXPECT_DOUBLE_EQ(Module(eager, t, sc::Pass::backward).bytes, (Q + K) * w) << t;
    }
    EXPECT_EQ(Module(LlamaJob(true), "attn.repeat_kv.k", sc::Pass::forward).kernels, 0);
}

TEST(EagerKernels, SwigluAsSiluThenMultiply) {
    const sc::Job eager = LlamaJob(false);
    const double E = 2.0 * 8192 * 14336, w = 2;
    const Sums f = Module(eager, "mlp.swiglu", sc::Pass::forward), b = Module(eager, "mlp.swiglu", sc::Pass::backward);
    EXPECT_EQ(f.kernels, 2);
    EXPECT_DOUBLE_EQ(f.bytes, 5 * w * E);
    EXPECT_DOUBLE_EQ(f.saved, 3 * w * E);  // w1's and w3's outputs and silu's
    EXPECT_EQ(b.kernels, 3);
    EXPECT_DOUBLE_EQ(b.bytes, 9 * w * E);
}

TEST(EagerKernels, LayerNormAndGeluAreOneKernelInEagerToo) {
    // GPT-3's LayerNorm and GeLU are single ATen kernels in eager PyTorch: the graph does not change.
    sc::KernelChoices eager;
    eager.fused_elementwise = false;
    const sc::ModelConfig m = Model("gpt3-175b.json");
    const sc::Job a = sc::MakeJob(m, sc::ParseParallelSpec("tp=8,pp=8,dp=1,batch=8"), eager);
    const sc::Job b = sc::MakeJob(m, sc::ParseParallelSpec("tp=8,pp=8,dp=1,batch=8"));
    ASSERT_EQ(DenseLayer(a).forward.size(), DenseLayer(b).forward.size());
    ASSERT_EQ(DenseLayer(a).backward.size(), DenseLayer(b).backward.size());
    for (size_t i = 0; i < DenseLayer(a).forward.size(); ++i) {
        EXPECT_EQ(DenseLayer(a).forward[i].name, DenseLayer(b).forward[i].name);
        EXPECT_EQ(a.V(DenseLayer(a).forward[i].bytes), b.V(DenseLayer(b).forward[i].bytes));
    }
}

TEST(EagerKernels, GemmAndAttentionWorkIsUnchanged) {
    const sc::Job eager = LlamaJob(false), fused = LlamaJob(true);
    auto work = [](const sc::Job& job, sc::OpKind kind) {
        double flops = 0;
        for (const sc::Block& b : job.graph.blocks)
            for (const auto* ops : {&b.forward, &b.backward})
                for (const sc::Op& op : *ops)
                    if (op.kind == kind) flops += job.V(op.flops);
        return flops;
    };
    EXPECT_EQ(work(eager, sc::OpKind::matmul), work(fused, sc::OpKind::matmul));
    EXPECT_EQ(work(eager, sc::OpKind::attention), work(fused, sc::OpKind::attention));
}

}  // namespace
