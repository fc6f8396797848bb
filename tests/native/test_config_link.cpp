// The page's configuration as a link (src/link/config_link.h): every field survives the text, and a damaged
// link is one clear error naming the field, the value and what is valid.
#include <gtest/gtest.h>

#include <string>

#include "config/error.h"
#include "link/config_link.h"
#include "test_util.h"

namespace {

using sc::ConfigLink;
using sc::DecodeConfigLink;
using sc::EncodeConfigLink;
using sctest::ErrorOf;

// A link with every field set to something other than its default.
ConfigLink Full() {
    ConfigLink l;
    l.model = "mixtral-8x7b";
    l.layers = 48, l.hidden = 6144, l.heads = 48, l.kv_heads = 8, l.ffn = 16384, l.vocab = 50000, l.seq = 8192;
    l.experts = 16, l.top_k = 4, l.expert_ffn = 7168, l.load_imbalance = 1.35, l.contiguous_routing = true;
    l.window = 4096, l.full_every = 6, l.mtp_layers = 2;
    l.precision = sc::Precision::fp8;
    l.system = "dgx-h100-superpod";
    l.levels = {{0, 450.5, 0.25, 0.8, false, std::nullopt}, {2, std::nullopt, 12.0, std::nullopt, true, true}};
    l.parallel = "tp=8,pp=2,dp=4,ep=4,sp=1,batch=64,schedule=interleaved,vstages=2,recompute=selective,zero=1";
    l.overlap_dp = false, l.overlap_pp = false, l.overlap_tp = true, l.in_network_reduction = false;
    l.tokens = 3e11;
    l.flash_attention = false, l.dropout = true, l.grad_accumulation_fusion = false, l.pp_scatter_gather = false;
    l.fused_elementwise = false, l.deepep_dispatch = true, l.fp8_dispatch = true;
    l.attention_kernel = sc::AttentionKernel::flash2;
    l.search_gpus = 1024, l.search_uneven = true;
    return l;
}

// The minimal valid link: a model and a split; L() ends a link.
const std::string kHead = "v1;model=llama3-8b;parallel=tp=8,dp=4";
std::string L(const std::string& entries) { return entries + ";end"; }
const std::string kMinimal = L(kHead);

TEST(ConfigLink, EveryFieldRoundTrips) {
    const ConfigLink full = Full();
    const std::string text = EncodeConfigLink(full);
    EXPECT_EQ(text.rfind("v1;model=mixtral-8x7b;layers=48;", 0), 0u) << text;
    EXPECT_EQ(DecodeConfigLink(text), full) << text;
    // One field at a time, so a field the encoder forgets cannot hide behind another.
    const ConfigLink base = DecodeConfigLink(kMinimal);
    for (auto set : std::initializer_list<void (*)(ConfigLink&)>{
             [](ConfigLink& l) { l.layers = 1; },
             [](ConfigLink& l) { l.hidden = 1 << 24; },
             [](ConfigLink& l) { l.heads = 7; },
             [](ConfigLink& l) { l.kv_heads = 2; },
             [](ConfigLink& l) { l.ffn = 11008; },
             [](ConfigLink& l) { l.vocab = 32000; },
             [](ConfigLink& l) { l.seq = 2048; },
             [](ConfigLink& l) { l.experts = 64; },
             [](ConfigLink& l) { l.top_k = 2; },
             [](ConfigLink& l) { l.expert_ffn = 1408; },
             [](ConfigLink& l) { l.load_imbalance = 2.5; },
             [](ConfigLink& l) { l.window = 0; },
             [](ConfigLink& l) { l.window = 128; },
             [](ConfigLink& l) { l.full_every = 0; },
             [](ConfigLink& l) { l.full_every = 2; },
             [](ConfigLink& l) { l.mtp_layers = 0; },
             [](ConfigLink& l) { l.mtp_layers = 1; },
             [](ConfigLink& l) { l.contiguous_routing = true; },
             [](ConfigLink& l) { l.contiguous_routing = false; },
             [](ConfigLink& l) { l.precision = sc::Precision::fp4; },
             [](ConfigLink& l) { l.scaling = sc::Scaling::mx; },
             [](ConfigLink& l) { l.system = "h100-fullflat"; },
             [](ConfigLink& l) {
                 l.system = "s", l.levels = {{15, 0.001, std::nullopt, std::nullopt, std::nullopt, std::nullopt}};
             },
             [](ConfigLink& l) {
                 l.system = "s", l.levels = {{1, std::nullopt, 1e6, std::nullopt, std::nullopt, std::nullopt}};
             },
             [](ConfigLink& l) {
                 l.system = "s", l.levels = {{1, std::nullopt, std::nullopt, 0.05, std::nullopt, std::nullopt}};
             },
             [](ConfigLink& l) {
                 l.system = "s", l.levels = {{1, std::nullopt, std::nullopt, std::nullopt, false, std::nullopt}};
             },
             [](ConfigLink& l) {
                 l.system = "s", l.levels = {{0, std::nullopt, std::nullopt, std::nullopt, std::nullopt, false}};
             },
             [](ConfigLink& l) { l.parallel = "pp=4,microbatch=2,bucket_mb=12.5"; },
             [](ConfigLink& l) { l.parallel = "pp=4,recompute=full,recompute_layers=3"; },
             [](ConfigLink& l) { l.parallel = "ep=4,dp=4,a2a_overlap=1"; },
             [](ConfigLink& l) { l.parallel = "dp=8,offload_layers=12"; },
             [](ConfigLink& l) { l.host_link_gbps = 62.5; },
             [](ConfigLink& l) { l.overlap_dp = false; },
             [](ConfigLink& l) { l.overlap_pp = false; },
             [](ConfigLink& l) { l.overlap_tp = true; },
             [](ConfigLink& l) { l.in_network_reduction = false; },
             [](ConfigLink& l) { l.tokens = 0.1; },
             [](ConfigLink& l) { l.tokens = 1e18; },
             [](ConfigLink& l) { l.flash_attention = false; },
             [](ConfigLink& l) { l.dropout = true; },
             [](ConfigLink& l) { l.grad_accumulation_fusion = false; },
             [](ConfigLink& l) { l.pp_scatter_gather = false; },
             [](ConfigLink& l) { l.fused_elementwise = false; },
             [](ConfigLink& l) { l.deepep_dispatch = true; },
             [](ConfigLink& l) { l.fp8_dispatch = true; },
             [](ConfigLink& l) { l.attention_kernel = sc::AttentionKernel::flash3; },
             [](ConfigLink& l) { l.attention_kernel = sc::AttentionKernel::flash2; },
             [](ConfigLink& l) { l.search_gpus = 1 << 24; },
             [](ConfigLink& l) { l.search_uneven = true; },
             [](ConfigLink& l) { l.serve = "llama3-8b-h100-poisson"; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.tp = 8; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.replicas = 1 << 24; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.decode = false; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.decode = true, l.serve_edits.decode_tp = 4; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.decode_replicas = 3; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.max_seqs = 1; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.max_tokens = 2048; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.chunked = false; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.window_eviction = false; },
             [](ConfigLink& l) {
                 l.serve = "x", l.serve_edits.cuda_graphs = std::vector<int>{1, 2, 4, 8192};
             },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.cuda_graphs = std::vector<int>{}; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.preemption = "swap"; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.weights = sc::Precision::fp8; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.kv = sc::Precision::bf16; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.int4_group = 128; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.int4_group = 0; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.mxfp4 = true; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.mxfp4 = false; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.fp8_block = true; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.fp8_block = false; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.arrivals = "closed_loop"; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.rate = 0.1 + 0.2; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.cv = 0; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.clients = 64; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.requests = 2147483647; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.ttft_s = 0.25; },
             [](ConfigLink& l) { l.serve = "x", l.serve_edits.tpot_s = 1.0 / 3; },
             [](ConfigLink& l) { l.view = "search"; },
             [](ConfigLink& l) { l.view = "serving"; },
             [](ConfigLink& l) { l.sweeps = true; },
             [](ConfigLink& l) { l.sweep_axis1 = "hbm_bw=0.5,1,2"; },
             [](ConfigLink& l) { l.sweep_axis2 = "topology=two_tier,fullflat"; },
             [](ConfigLink& l) { l.sweep_fixed = true; }}) {
        ConfigLink l = base;
        set(l);
        ASSERT_NE(l, base);
        const std::string t = EncodeConfigLink(l);
        EXPECT_EQ(DecodeConfigLink(t), l) << t;
    }
}

TEST(ConfigLink, NumbersKeepEveryBit) {
    ConfigLink l = DecodeConfigLink(kMinimal);
    l.system = "s";
    l.levels = {{0, 0.1 + 0.2, 1.0 / 3, 0.7000000000000001, std::nullopt, std::nullopt}};
    l.tokens = 123456789012345678.0;
    const ConfigLink back = DecodeConfigLink(EncodeConfigLink(l));
    EXPECT_EQ(*back.levels[0].bandwidth_gbps, 0.1 + 0.2);
    EXPECT_EQ(*back.levels[0].latency_us, 1.0 / 3);
    EXPECT_EQ(*back.levels[0].efficiency, 0.7000000000000001);
    EXPECT_EQ(back.tokens, 123456789012345678.0);
    // Short numbers stay short.
    l.levels[0].bandwidth_gbps = 400;
    EXPECT_NE(EncodeConfigLink(l).find("net.0.bandwidth=400;"), std::string::npos) << EncodeConfigLink(l);
}

TEST(ConfigLink, KeysMayComeInAnyOrderAndDefaultsFillTheRest) {
    const ConfigLink l =
        DecodeConfigLink(L("v1;parallel=dp=2;search_gpus=64;model=gpt3-175b;net.1.latency=2;system=x"));
    EXPECT_EQ(l.model, "gpt3-175b");
    EXPECT_EQ(l.parallel, "dp=2");
    EXPECT_EQ(l.search_gpus, 64);
    ASSERT_EQ(l.levels.size(), 1u);
    EXPECT_EQ(l.levels[0].level, 1);
    EXPECT_EQ(*l.levels[0].latency_us, 2);
    EXPECT_FALSE(l.layers || l.precision || l.levels[0].bandwidth_gbps);
    EXPECT_TRUE(l.overlap_dp && l.overlap_pp && !l.overlap_tp && l.in_network_reduction);
    EXPECT_EQ(l.tokens, 0);
    EXPECT_TRUE(l.flash_attention && !l.dropout && l.grad_accumulation_fusion && l.pp_scatter_gather &&
                l.fused_elementwise && !l.deepep_dispatch && !l.fp8_dispatch && !l.contiguous_routing && !l.window);
    EXPECT_EQ(l.attention_kernel, sc::TrainingOptions{}.attention_kernel);
    // The framework's kernels are written only when not the defaults, so links made before those keys existed
    // read and write as they did.
    const std::string text = EncodeConfigLink(DecodeConfigLink(kMinimal));
    for (const char* key : {"flash=", "dropout=", "gaf=", "scatter_gather=", "fused_ew=", "deepep=", "fp8_dispatch=",
                            "attn_kernel=", "routing=", "window=", "full_every=", "mtp_layers=", "search_uneven="})
        EXPECT_EQ(text.find(key), std::string::npos) << key << " in " << text;
}

TEST(ConfigLink, DamagedLinksNameTheFieldTheValueAndWhatIsValid) {
    const std::string full = EncodeConfigLink(Full());
    struct Case {
        std::string text, error;
    };
    const Case cases[] = {
        {"", "link: must start with the version \"v1;\", got \"\""},
        {"model=llama3-8b;parallel=tp=8;end",
         "link: must start with the version \"v1;\", got \"model=llama3-8b;parallel=tp=8;end\""},
        {"v2;model=x;parallel=tp=1;end", "link: unknown version \"v2\"; this page reads v1"},
        {"v1;end", "model: missing from the link (the model preset id, \"model=llama3-8b\")"},
        {"v1;model=llama3-8b;end", "parallel: missing from the link (the split, \"parallel=tp=8,dp=4\")"},
        {kMinimal + ";", "link: \"end\" must be the last entry, got \";\" after it"},
        {kHead, "link: does not end with \";end\": it was cut short (copy the whole link)"},
        {L(kHead + ";"), "link: empty entry 3 (two ';' in a row, or one at the end)"},
        {L(kHead + ";;layers=4"), "link: empty entry 3 (two ';' in a row, or one at the end)"},
        {L(kHead + ";layers"), "link: entry 3 is not key=value: \"layers\""},
        {L(kHead + ";=4"), "link: entry 3 is not key=value: \"=4\""},
        {L(kHead + ";layer=4"), "layer: unknown key in the link (did you mean \"layers\"?); valid keys: model layers"},
        {L(kHead + ";colour=red"), "colour: unknown key in the link; valid keys: model layers"},
        {L(kHead + ";layers=4;layers=5"), "layers: given twice in the link"},
        {L(kHead + ";layers=4x"), "layers: expected an integer, got \"4x\""},
        {L(kHead + ";sweep.axis1=speed=2"), "sweep.axis1: "},
        {L(kHead + ";sweep.axis2=flops=-1"), "sweep.axis2: flops"},
        {L(kHead + ";sweep.fixed=maybe"), "sweep.fixed: "},
        {L(kHead + ";layers=1e3"), "layers: expected an integer, got \"1e3\""},
        {L(kHead + ";layers=0"), "layers: must be a positive integer, got \"0\""},
        {L(kHead + ";hidden=16777217"), "hidden: must be at most 16777216, got \"16777217\""},
        {L(kHead + ";heads=99999999999999999999999"),
         "heads: must be at most 16777216, got \"99999999999999999999999\""},
        {L(kHead + ";precision=fp7"), "precision: \"fp7\" is not one of fp32, bf16, fp16, fp8, fp4"},
        {L(kHead + ";attn_kernel=flash4"), "attn_kernel: \"flash4\" is not one of cudnn, flash3, flash2"},
        {L(kHead + ";flash=no"), "flash: expected 0 or 1, got \"no\""},
        {L(kHead + ";routing=random"), "routing: \"random\" is not one of uniform, contiguous"},
        {L(kHead + ";deepep=2"), "deepep: expected 0 or 1, got \"2\""},
        {L(kHead + ";host_gbps=-1"), "host_gbps: must be"},
        {L(kHead + ";host_gbps=nan"), "host_gbps: must be a finite number, got \"nan\""},
        {"v1;model=llama3-8b;parallel=tp=8,offload_layers=x;end", "parallel: offload_layers: "},
        {L(kHead + ";gaf=1;gaf=0"), "gaf: given twice in the link"},
        {L(kHead + ";system=../etc"),
         "system: a preset id holds only letters, digits, '.', '_' and '-', got \"../etc\""},
        {L(kHead + ";system="), "system: must not be empty"},
        {"v1;model=a b;parallel=tp=1;end",
         "model: a preset id holds only letters, digits, '.', '_' and '-', got \"a b\""},
        {"v1;model=llama3-8b;parallel=tp=x;end", "parallel: tp: expected an integer, got \"x\""},
        {"v1;model=llama3-8b;parallel=tp=8,colour=1;end", "parallel: colour: unknown parallel key"},
        {"v1;model=llama3-8b;parallel=;end", "parallel: must not be empty"},
        {L(kHead + ";system=s;net.0.bandwidth=0"), "net.0.bandwidth: must be at least 0.001, got \"0\""},
        {L(kHead + ";system=s;net.0.bandwidth=nan"), "net.0.bandwidth: must be a finite number, got \"nan\""},
        {L(kHead + ";system=s;net.0.bandwidth=inf"), "net.0.bandwidth: must be a finite number, got \"inf\""},
        {L(kHead + ";system=s;net.0.bandwidth=0x10"), "net.0.bandwidth: expected a number, got \"0x10\""},
        {L(kHead + ";system=s;net.0.bandwidth=1e999"), "net.0.bandwidth: must be a finite number, got \"1e999\""},
        {L(kHead + ";system=s;net.0.latency=-1"), "net.0.latency: must be at least 0, got \"-1\""},
        {L(kHead + ";system=s;net.0.efficiency=1.5"), "net.0.efficiency: must be at most 1, got \"1.5\""},
        {L(kHead + ";system=s;net.0.efficiency=0.01"), "net.0.efficiency: must be at least 0.05, got \"0.01\""},
        {L(kHead + ";system=s;net.0.inr=yes"), "net.0.inr: expected 0 or 1, got \"yes\""},
        {L(kHead + ";system=s;net.16.inr=1"), "net.16.inr: must be at most 15, got \"16\""},
        {L(kHead + ";system=s;net.x.inr=1"), "net.x.inr: expected an integer, got \"x\""},
        {L(kHead + ";system=s;net.0.speed=1"),
         "net.0.speed: unknown level field \"speed\"; valid: bandwidth latency efficiency inr wrap"},
        {L(kHead + ";system=s;net.0=1"), "net.0: a level edit is net.<level>.<field>"},
        {L(kHead + ";system=s;net.0.inr=1;net.00.inr=0"), "net.00.inr: given twice in the link (as net.0.inr)"},
        {L(kHead + ";net.1.latency=2"), "net.1: a network-level edit needs a system (\"system=...\")"},
        {L(kHead + ";overlap_dp=true"), "overlap_dp: expected 0 or 1, got \"true\""},
        {L(kHead + ";tokens=-5"), "tokens: must be at least 0, got \"-5\""},
        {L(kHead + ";load_imbalance=0.9"), "load_imbalance: must be at least 1, got \"0.9\""},
        {L(kHead + ";tokens=2e18"), "tokens: must be at most 1e+18, got \"2e18\""},
        {L(kHead + ";search_gpus=16777217"), "search_gpus: must be at most 16777216, got \"16777217\""},
        {L(kHead + ";search_gpus=-1"), "search_gpus: must be zero or a positive integer, got \"-1\""},
        {L(kHead + ";serve.tp=4"), "serve: serving edits (serve.<field>) need the serving preset they edit"},
        {L(kHead + ";serve=x;serve.tp=0"), "serve.tp: must be a positive integer, got \"0\""},
        {L(kHead + ";serve=x;serve.rate=-1"), "serve.rate: must be at least 0, got \"-1\""},
        {L(kHead + ";serve=x;serve.preemption=evict"), "serve.preemption: \"evict\" is not one of recompute, swap"},
        {L(kHead + ";serve=x;serve.weights=fp6"), "serve.weights: \"fp6\" is not one of bf16, fp8, fp4"},
        {L(kHead + ";serve=x;serve.int4_group=65537"), "serve.int4_group: must be at most 65536, got \"65537\""},
        {L(kHead + ";serve=x;serve.cuda_graphs=1,4,2"),
         "serve.cuda_graphs: sizes go up, smallest first: got 2 after 4"},
        {L(kHead + ";serve=x;serve.cuda_graphs=1,,2"), "serve.cuda_graphs: expected an integer, got \"\""},
        {L(kHead + ";serve=x;serve.cuda_graphs=0"), "serve.cuda_graphs: must be a positive integer, got \"0\""},
        {L(kHead + ";serve=x;serve.arrivals=trace"),
         "serve.arrivals: \"trace\" is not one of poisson, gamma, fixed_rate, closed_loop, offline"},
        {L(kHead + ";serve=x;serve.colour=1"), "serve.colour: unknown serving field; valid: serve.tp serve.replicas"},
        {L(kHead + ";serve=../x"), "serve: a preset id holds only letters, digits"},
        {L(kHead + ";serve=x;serve.decode_system=../x"), "serve.decode_system: a preset id holds only letters"},
        {L(kHead + ";serve=x;serve.decode_system="), "serve.decode_system: must not be empty"},
        {L(kHead + ";view=plot"), "view: \"plot\" is not one of estimate, search, serving"},
        {L(kHead + ";sweeps=2"), "sweeps: expected 0 or 1, got \"2\""},
        {L(kHead + ";search_uneven=on"), "search_uneven: expected 0 or 1, got \"on\""},
        {full.substr(0, full.find("search_gpus=1024") + 14), "link: does not end with \";end\""},  // cut inside it
        {std::string(sc::kMaxLinkBytes + 1, 'v'), "link: is 65537 bytes, at most 65536 are read"},
    };
    for (const Case& c : cases) {
        const std::string e = ErrorOf([&] { DecodeConfigLink(c.text); });
        EXPECT_EQ(e.substr(0, c.error.size()), c.error) << "link: " << c.text.substr(0, 100);
    }
    // Every cut of a whole link, even one inside a number, fails with a message naming a field.
    for (size_t n = 0; n < full.size(); ++n) {
        const std::string e = ErrorOf([&] { DecodeConfigLink(full.substr(0, n)); });
        EXPECT_NE(e.find(": "), std::string::npos)
            << "a link cut to " << n << " bytes was accepted: " << full.substr(0, n);
    }
    // A huge value is echoed clipped, never whole.
    const std::string huge = L("v1;layers=" + std::string(60000, '9'));
    const std::string e = ErrorOf([&] { DecodeConfigLink(huge); });
    EXPECT_LT(e.size(), 300u) << e.substr(0, 300);
    EXPECT_EQ(e.rfind("layers: ", 0), 0u) << e.substr(0, 300);
}

TEST(ConfigLink, EncodeRefusesWhatWouldNotReadBack) {
    ConfigLink l = DecodeConfigLink(kMinimal);
    l.layers = 0;
    EXPECT_EQ(ErrorOf([&] { EncodeConfigLink(l); }), "layers: must be a positive integer, got \"0\"");
    l = DecodeConfigLink(kMinimal);
    l.parallel = "tp=8;layers=4";
    EXPECT_EQ(ErrorOf([&] { EncodeConfigLink(l); }), "parallel: must not contain ';', got \"tp=8;layers=4\"");
    l = DecodeConfigLink(kMinimal);
    l.system = "s";
    l.levels = {{2, 1.0, {}, {}, {}, {}}, {1, 1.0, {}, {}, {}, {}}};
    EXPECT_EQ(ErrorOf([&] { EncodeConfigLink(l); }),
              "net.1: level edits must be in ascending level order, each level once");
    l.levels = {{1, {}, {}, {}, {}, {}}};
    EXPECT_EQ(ErrorOf([&] { EncodeConfigLink(l); }), "net.1: a level edit must change at least one field");
    l.levels = {{1, -3.0, {}, {}, {}, {}}};
    EXPECT_EQ(ErrorOf([&] { EncodeConfigLink(l); }), "net.1.bandwidth: must be at least 0.001, got \"-3\"");
    l = DecodeConfigLink(kMinimal);
    l.model.clear();
    EXPECT_EQ(ErrorOf([&] { EncodeConfigLink(l); }), "model: must not be empty");
}

}  // namespace
