// Bad input a user can type, load or link: every case is one clear error naming the field, flag or file, with a
// non-zero exit; nothing crashes, hangs or prints nonsense (issue 12).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "config/calibration.h"
#include "config/error.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "config/numbers.h"
#include "config/overrides.h"
#include "parallel/parallel_config.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using sctest::CliResult;
using sctest::RunCli;

std::string Source(const std::string& rel) { return sctest::ReadFile(std::string(SC_SOURCE_DIR) + "/" + rel); }

// `text` with its first `from` replaced by `to` (the test fails when `from` is absent).
std::string Replaced(std::string text, const std::string& from, const std::string& to) {
    size_t p = text.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    return p == std::string::npos ? text : text.replace(p, from.size(), to);
}

// A model preset with "layers" set to `value` (JSON text).
std::string Layers(const std::string& model, const std::string& value) {
    return Replaced(model, "\"layers\": 96", "\"layers\": " + value);
}

using sctest::ErrorOf;

// A scratch folder laid out like presets/ (systems, hardware, calibration), removed afterwards.
struct Scratch {
    fs::path dir = fs::temp_directory_path() / ("sc_bad_input_" + std::to_string(getpid()));
    Scratch() {
        fs::remove_all(dir);
        for (const char* d : {"systems", "hardware", "calibration", "models"}) fs::create_directories(dir / d);
    }
    ~Scratch() { fs::remove_all(dir); }
    std::string Write(const std::string& rel, const std::string& text) const {
        std::ofstream(dir / rel, std::ios::binary) << text;
        return (dir / rel).string();
    }
};

const std::string kGpt3 = "presets/models/gpt3-175b.json";

// The parse or validation error of a parallel spec on GPT-3 175B.
std::string SpecErrorOrValidate(const std::string& spec) {
    static const sc::ModelConfig m = sc::ParseModelConfig(Source("presets/models/gpt3-175b.json"));
    return ErrorOf([&] { sc::ValidateParallel(m, sc::ParseParallelSpec(spec)); });
}

// ---- 1. Crashes ----

TEST(BadInput, NumberBeyondDoubleInEveryFileIsAnErrorNamingTheField) {
    const std::string model = Source(kGpt3), acc = Source("presets/hardware/h100-sxm.json"),
                      sys = Source("presets/systems/dgx-h100-superpod.json"),
                      cal = Source("presets/calibration/measured.json");
    EXPECT_EQ(ErrorOf([&] { sc::ParseModelConfig(Layers(model, "1e999")); }),
              "layers: model preset: number overflow parsing '1e999' (numbers must be finite doubles)");
    EXPECT_NE(ErrorOf([&] { sc::ParseAccelerator(Replaced(acc, "494.5", "-1e999")); }).find("number overflow"),
              std::string::npos);
    EXPECT_NE(ErrorOf([&] { sc::ParseSystem(Replaced(sys, "450", "1E+400"), acc); }).find("number overflow"),
              std::string::npos);
    std::string e = ErrorOf([&] { sc::ParseCalibration(Replaced(cal, "\"n_ranks\": 8", "\"n_ranks\": 8e9999")); });
    EXPECT_NE(e.find("collectives[].n_ranks: calibration table: number overflow"), std::string::npos) << e;
    // --set takes the same path: a number beyond double is text, then not an integer.
    EXPECT_EQ(ErrorOf([&] { sc::ParseModelConfig(sc::ApplyOverrides(model, {"layers=1e999"}, "m")); }),
              "layers: expected an integer, got \"1e999\"");
}

TEST(BadInput, NumberBeyondDoubleFromTheCommandLineNamesTheFile) {
    Scratch s;
    const std::string m = s.Write("models/m.json", Layers(Source(kGpt3), "1e999"));
    CliResult r = RunCli("estimate --model " + m);
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "stagecraft estimate: error: " + m +
                         ": layers: model preset: number overflow parsing '1e999' (numbers must be finite doubles)\n");
    // Hardware and calibration files beside a system file; each error names its file.
    s.Write("systems/s.json", Source("presets/systems/dgx-h100-superpod.json"));
    s.Write("hardware/h100-sxm.json", Replaced(Source("presets/hardware/h100-sxm.json"), "494.5", "1e999"));
    s.Write("calibration/measured.json", Source("presets/calibration/measured.json"));
    const std::string job = "estimate --model " + kGpt3 + " --parallel tp=8,pp=8,dp=16,batch=1024 --system " +
                            (s.dir / "systems/s.json").string();
    r = RunCli(job);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("number overflow parsing '1e999'"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("s.json"), std::string::npos) << r.out;
    s.Write("hardware/h100-sxm.json", Source("presets/hardware/h100-sxm.json"));
    s.Write("calibration/measured.json",
            Replaced(Source("presets/calibration/measured.json"), "\"n_ranks\": 8", "\"n_ranks\": 1e999"));
    r = RunCli(job);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("calibration/measured.json: collectives[].n_ranks: calibration table: number overflow"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("--no-calibration"), std::string::npos) << r.out;
}

TEST(BadInput, DeepNestingIsAnErrorNotACrash) {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    std::string e = ErrorOf([&] { sc::ParseModelConfig(Layers(Source(kGpt3), deep)); });
    EXPECT_NE(e.find("model preset nests deeper than 64 levels"), std::string::npos) << e.substr(0, 300);
    EXPECT_LT(e.size(), 300u);
    e = ErrorOf([&] { sc::ApplyOverrides(Source(kGpt3), {"layers=" + deep}, "m"); });
    EXPECT_NE(e.find("nests deeper than 64 levels"), std::string::npos) << e.substr(0, 300);
    e = ErrorOf(
        [&] { sc::ApplyOverrides(Source(kGpt3), {std::string(100000, 'a') + std::string(100000, '.') + "=1"}, "m"); });
    EXPECT_NE(e.find("dotted parts"), std::string::npos) << e.substr(0, 300);
    EXPECT_LT(e.size(), 300u);
    // 64 levels are fine for the parser (the field is then of the wrong type, shown clipped).
    e = ErrorOf([&] { sc::ParseModelConfig(Layers(Source(kGpt3), std::string(63, '[') + std::string(63, ']'))); });
    EXPECT_EQ(e.rfind("layers: expected an integer, got [[[[", 0), 0u) << e;
    EXPECT_LT(e.size(), 150u);

    Scratch s;
    CliResult r =
        RunCli("estimate --model " + s.Write("models/deep.json", "{\"name\": \"x\", \"layers\": " + deep + "}"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("nests deeper than 64 levels"), std::string::npos) << r.out.substr(0, 300);
}

TEST(BadInput, HugeValuesAndKeysAreClippedInMessages) {
    const std::string big(1 << 20, 'x');
    std::string e =
        ErrorOf([&] { sc::ParseModelConfig(Replaced(Source(kGpt3), "\"layers\"", "\"" + big + "\": 1, \"layers\"")); });
    EXPECT_NE(e.find("unknown field"), std::string::npos) << e.substr(0, 300);
    EXPECT_LT(e.size(), 300u);
    e = ErrorOf([&] { sc::ParseModelConfig(Layers(Source(kGpt3), "\"" + big + "\"")); });
    EXPECT_NE(e.find("layers: expected an integer, got \"xxxx"), std::string::npos) << e.substr(0, 300);
    EXPECT_LT(e.size(), 300u);
}

TEST(BadInput, NoErrorMessageEchoesAHugeValueWhole) {
    const std::string big(1 << 20, 's');
    for (const std::string& spec : {"schedule=" + big, "order=" + big, "recompute=" + big, big + "=1", big}) {
        std::string e = SpecErrorOrValidate(spec);
        EXPECT_FALSE(e.empty());
        EXPECT_LT(e.size(), 2100u) << e.substr(0, 200);
    }
}

TEST(BadInput, LongSystemPathIsAClearError) {
    CliResult r = RunCli("estimate --model " + kGpt3 + " --parallel tp=8 --system " + std::string(5000, 'a'));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("stagecraft estimate: error: --system: "), std::string::npos) << r.out.substr(0, 300);
    EXPECT_NE(r.out.find("File name too long"), std::string::npos) << r.out.substr(0, 300);
    EXPECT_LT(r.out.size(), 300u);
    r = RunCli("estimate --model " + std::string(5000, 'b') + ".json");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--model: "), std::string::npos) << r.out.substr(0, 300);
    EXPECT_LT(r.out.size(), 300u);
}

TEST(BadInput, AcceleratorIdMustBeAStringNamingAPresetFile) {
    Scratch s;
    const std::string sys = Source("presets/systems/dgx-h100-superpod.json");
    const std::string path =
        s.Write("systems/s.json", Replaced(sys, "\"accelerator\": \"h100-sxm\"", "\"accelerator\": 5"));
    CliResult r = RunCli("estimate --model " + kGpt3 + " --parallel tp=8 --system " + path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("accelerator: expected an accelerator id (a string), got 5\n"), std::string::npos) << r.out;
    s.Write("systems/s.json", Replaced(sys, "\"h100-sxm\"", "\"../../../../etc/passwd\""));
    r = RunCli("estimate --model " + kGpt3 + " --parallel tp=8 --system " + path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("is not an accelerator id"), std::string::npos) << r.out;
}

// ---- 2. Hangs: inputs that are not regular files, or too large ----

TEST(BadInput, InputMustBeARegularFileOfAtMost16MiB) {
    CliResult r = RunCli("estimate --model /dev/zero");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "stagecraft estimate: error: --model: /dev/zero: not a regular file (a device, FIFO or socket)\n");
    r = RunCli("estimate --model presets");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "stagecraft estimate: error: --model: presets: is a directory, not a regular file\n");
    r = RunCli("estimate --model ''");
    EXPECT_EQ(r.out, "stagecraft estimate: error: --model: the file name is empty\n");

    Scratch s;
    const std::string fifo = (s.dir / "fifo").string();
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    r = RunCli("estimate --model " + fifo);  // would block forever opening it if opened
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("fifo: not a regular file"), std::string::npos) << r.out;
    r = RunCli("estimate --model " + kGpt3 + " --parallel tp=8 --system " + fifo);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--system: " + fifo + ": not a regular file"), std::string::npos) << r.out;

    const std::string big = s.Write("models/big.json", std::string((16 << 20) + 1, ' '));
    r = RunCli("estimate --model " + big);
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "stagecraft estimate: error: --model: " + big +
                         ": is 16777217 bytes; input files are limited to 16 MiB\n");
}

// ---- 3. Nonsense that exited 0: every number in a spec or flag is checked by the same rule ----

std::string SpecError(const std::string& spec) {
    return ErrorOf([&] { sc::ParseParallelSpec(spec); });
}

TEST(BadInput, ParallelSpecRefusesDuplicatesZeroAndOutOfRangeValues) {
    EXPECT_EQ(SpecError("tp=8,tp=2"), "tp: given twice in the parallel spec");
    EXPECT_EQ(SpecError("mb=2,microbatch=4"),
              "microbatch: given twice in the parallel spec (mb is microbatch, fsdp=1 is zero=3)");
    EXPECT_EQ(SpecError("vp=2,vstages=4"), "vstages: given twice in the parallel spec (vp is vstages)");
    EXPECT_EQ(SpecError("batch=0"), "batch: must be a positive integer, got \"0\"");
    EXPECT_EQ(SpecError("gpus=0"), "gpus: must be a positive integer, got \"0\"");
    EXPECT_EQ(SpecError("gpus=-8"), "gpus: must be a positive integer, got \"-8\"");
    EXPECT_EQ(SpecError("gpus=1e9"), "gpus: expected an integer, got \"1e9\"");
    EXPECT_EQ(SpecError("bucket_mb=inf"), "bucket_mb: must be a finite number, got \"inf\"");
    EXPECT_EQ(SpecError("bucket_mb=0.5"), "bucket_mb: must be at least 1, got \"0.5\"");
    EXPECT_EQ(SpecError("bucket_mb=2000000"), "bucket_mb: must be at most 1048576, got \"2000000\"");
    EXPECT_EQ(SpecError("bucket_mb=0x10"), "bucket_mb: expected a number, got \"0x10\"");
    EXPECT_EQ(SpecError("tp=3000000000"), "tp: must be at most 16777216, got \"3000000000\"");
    EXPECT_EQ(SpecError("batch=99999999999999999999999"),
              "batch: must be at most 2147483647, got \"99999999999999999999999\"");
    EXPECT_EQ(SpecError("zero=5"), "zero: must be at most 3, got \"5\"");
    EXPECT_EQ(SpecError("tp=8,bucket_mb=1,bucket_mb=1024"), "bucket_mb: given twice in the parallel spec");
    EXPECT_EQ(SpecError("tp=8,pp=16,dp=4,microbatch=2,batch=1024,bucket_mb=1048576"), "");
}

TEST(BadInput, FlagsAreFiniteIntegersInRange) {
    CliResult r = RunCli("estimate --model " + kGpt3 +
                         " --system dgx-h100-superpod --parallel tp=8,pp=8,dp=16,batch=1024 --tokens inf");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "stagecraft estimate: error: --tokens: must be a finite number, got \"inf\"\n");
    r = RunCli("estimate --model " + kGpt3 +
               " --system dgx-h100-superpod --parallel tp=8,pp=8,dp=16,batch=1024 --tokens 0");
    EXPECT_EQ(r.out, "stagecraft estimate: error: --tokens: must be greater than 0, got \"0\"\n");
    r = RunCli(
        "trace --model presets/models/llama3-8b.json --parallel tp=2,pp=2,dp=2,batch=8 --out /tmp --format json "
        "--rank 1e9 --system dgx-h100-superpod");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "stagecraft trace: error: --rank: expected an integer, got \"1e9\"\n");
    r = RunCli("trace --model presets/models/llama3-8b.json --parallel tp=2 --out ''");
    EXPECT_EQ(r.out,
              "stagecraft trace: error: --out: missing or empty; give the folder to write into, e.g. --out traces/\n");
    r = RunCli("search --model " + kGpt3 + " --system dgx-h100-superpod --gpus 1000000000 --batch 1536");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "stagecraft search: error: --gpus: must be at most 16777216, got \"1000000000\"\n");
    r = RunCli(
        "sweep --model presets/models/llama3-8b.json --system dgx-h100-superpod --gpus 64 --batch 64 --axis flops=1e308");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "stagecraft sweep: error: flops: must be at most 1000000, got 1e308\n");
}

TEST(BadInput, ModelNumbersHaveStatedRanges) {
    const std::string mixtral = Source("presets/models/mixtral-8x7b.json");
    EXPECT_EQ(ErrorOf([&] { sc::ParseModelConfig(sc::ApplyOverrides(mixtral, {"moe.capacity_factor=1e308"}, "m")); }),
              "moe.capacity_factor: must be at most 100, got 1e+308");
    EXPECT_EQ(ErrorOf([&] { sc::ParseModelConfig(sc::ApplyOverrides(Source(kGpt3), {"seq=2000000000"}, "m")); }),
              "seq: must be at most 16777216, got 2000000000");
    EXPECT_EQ(ErrorOf([&] { sc::ParseModelConfig(sc::ApplyOverrides(Source(kGpt3), {"vocab=3000000000"}, "m")); }),
              "vocab: must be at most 16777216, got 3000000000");
}

// ---- 4. Products beyond 2^31, and costs that grow with the microbatch count ----

TEST(BadInput, HugeMicrobatchesAndSequencesAreRefusedNotNegative) {
    CliResult r = RunCli("summary --model " + kGpt3 + " --parallel tp=8,pp=16,microbatch=1000000000");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "stagecraft summary: error: microbatch: must be at most 16777216, got \"1000000000\"\n");
    r = RunCli("summary --model " + kGpt3 + " --parallel tp=8,pp=16,microbatch=1000000");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out,
              "stagecraft summary: error: microbatch: one microbatch of 1000000 x 2048 tokens of GPT-3 175B is "
              "2.17e+21 training FLOPs; at most 2^61 = 2.31e+18 (use a smaller microbatch or seq)\n");
    r = RunCli("summary --model presets/models/llama3-8b.json --set seq=16777216");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("seq: one microbatch of 1 x 16777216 tokens"), std::string::npos) << r.out;
    r = RunCli("summary --model " + kGpt3 + " --set seq=2000000000");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("seq: must be at most 16777216, got 2000000000\n"), std::string::npos) << r.out;
    // Below the limit every number printed is positive.
    r = RunCli("summary --model presets/models/llama3-8b.json --parallel microbatch=500");
    EXPECT_EQ(r.status, 0) << r.out;
    for (size_t p = r.out.find(" -"); p != std::string::npos; p = r.out.find(" -", p + 1))
        EXPECT_FALSE(p + 2 < r.out.size() && std::isdigit(static_cast<unsigned char>(r.out[p + 2]))) << r.out;
}

TEST(BadInput, MicrobatchesPerStepAndRanksHaveALimit) {
    CliResult r = RunCli("summary --model " + kGpt3 + " --parallel batch=1000000000");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out,
              "stagecraft summary: error: batch: batch=1000000000 is 1000000000 microbatches of microbatch*dp = 1 "
              "per step; at most 65536 (raise microbatch)\n");
    sc::ModelConfig m = sc::ParseModelConfig(Source(kGpt3));
    EXPECT_EQ(ErrorOf([&] { sc::ValidateParallel(m, sc::ParseParallelSpec("tp=8,pp=32,dp=131072")); }),
              "gpus: tp*cp*pp*dp = 33554432 ranks; at most 16777216 (2^24)");
    EXPECT_EQ(ErrorOf([&] { sc::ValidateParallel(m, sc::ParseParallelSpec("tp=8,dp=16777216,microbatch=16777216")); }),
              "gpus: tp*cp*pp*dp = 134217728 ranks; at most 16777216 (2^24)");
    EXPECT_EQ(ErrorOf([&] { sc::ValidateParallel(m, sc::ParseParallelSpec("dp=16384,microbatch=16777216")); }),
              "microbatch: microbatch*dp = 16777216*16384 = 274877906944 sequences per step; at most 2147483647");
    EXPECT_EQ(ErrorOf([&] { sc::ValidateParallel(m, sc::ParseParallelSpec("batch=65536")); }), "");
}

TEST(BadInput, ProgrammaticConfigsMeetTheSameRanges) {
    // The page and the Embind API fill ParallelConfig directly; ValidateParallel applies the spec's ranges.
    sc::ModelConfig m = sc::ParseModelConfig(Source(kGpt3));
    sc::ParallelConfig p;
    p.bucket_mb = 0.5;
    EXPECT_EQ(ErrorOf([&] { sc::ValidateParallel(m, p); }),
              "bucket_mb: bucket_mb=0.500000 must be from 1 to 1048576 MiB");
    p.bucket_mb = 25;
    p.gpus = -8;
    EXPECT_EQ(ErrorOf([&] { sc::ValidateParallel(m, p); }), "gpus: gpus=-8 must be a positive integer");
}

// ---- The CLI's last resorts ----

// `stagecraft <args>` with stdout on /dev/full; stderr is kept apart in `err`.
int RunToFullStdout(const std::string& args, std::string* err) {
    const fs::path log = fs::temp_directory_path() / ("sc_bad_input_err_" + std::to_string(getpid()));
    const std::string cmd =
        std::string("cd ") + SC_SOURCE_DIR + " && " + SC_CLI_PATH + " " + args + " >/dev/full 2>" + log.string();
    const int status = std::system(cmd.c_str());
    *err = sctest::ReadFile(log.string());
    fs::remove(log);
    return WEXITSTATUS(status);
}

TEST(BadInput, FullStdoutExitsNonZero) {
    std::string err;
    EXPECT_EQ(RunToFullStdout("estimate --model " + kGpt3, &err), 1);
    EXPECT_EQ(err, "stagecraft estimate: error: could not write the output to stdout: No space left on device\n");
    EXPECT_EQ(RunToFullStdout("--help", &err), 1);
}

TEST(BadInput, SweepTooLargeIsRefusedBeforeItStarts) {
    // 200,000 rows would run for hours and hold every row: refused at once, naming the axes and the limit.
    CliResult r = RunCli(
        "sweep --model presets/models/gpt3-175b.json --system dgx-h100-superpod --gpus 1024 --batch 1024 "
        "--axis flops=1,2,3,4,5,6,7,8,9,10 --axis hbm_bw=1,2,3,4,5,6,7,8,9,10 --axis net_bw=1,2,3,4,5,6,7,8,9,10 "
        "--axis hbm_capacity=1,2,3,4,5,6,7,8,9,10 --axis domain=8,16,32,64,72,128,256,512,1024,4 --axis inr=on,off");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out,
              "stagecraft sweep: error: --axis: 200000 points x 1 model(s) = 200000 rows; at most 100000 per run: "
              "narrow the axes or split the sweep into several runs\n");
}

}  // namespace

namespace {

// NeMo's and DGX Cloud's tables call the interleaved schedule's chunks per stage "VP": the spec takes vp for vstages.
TEST(BadInput, VpIsVstages) {
    const sc::ParallelConfig a = sc::ParseParallelSpec("pp=4,schedule=interleaved,vp=3");
    const sc::ParallelConfig b = sc::ParseParallelSpec("pp=4,schedule=interleaved,vstages=3");
    EXPECT_EQ(a.vstages, 3);
    EXPECT_EQ(sc::ParallelSpecString(a), sc::ParallelSpecString(b));
}

// `etp=tp` (the estimate's --help writes "etp=1|tp") is the TP size, given before or after it; any other word is
// refused naming the key.
TEST(BadInput, EtpTpIsTheTpSize) {
    EXPECT_EQ(sc::ParseParallelSpec("tp=4,ep=8,etp=tp").etp, 4);
    EXPECT_EQ(sc::ParseParallelSpec("etp=tp,ep=8,tp=4").etp, 4);
    EXPECT_EQ(sc::ParseParallelSpec("etp=tp").etp, 1);
    EXPECT_EQ(sc::ParallelSpecString(sc::ParseParallelSpec("tp=4,ep=8,etp=tp")),
              sc::ParallelSpecString(sc::ParseParallelSpec("tp=4,ep=8,etp=4")));
    try {
        sc::ParseParallelSpec("tp=4,etp=dp");
        FAIL() << "etp=dp accepted";
    } catch (const sc::Error& e) {
        EXPECT_NE(std::string(e.what()).find("etp"), std::string::npos) << e.what();
    }
    EXPECT_THROW(sc::ParseParallelSpec("tp=4,etp=tp,etp=4"), sc::Error);  // given twice
}

}  // namespace
