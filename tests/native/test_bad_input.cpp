// Bad input a user can type, load or link: every case is one clear error naming the field, flag or file, with a
// non-zero exit; nothing crashes, hangs or prints nonsense (issue 12).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

// The message of the sc::Error `f` throws; "" when it throws none. Any other exception fails the test.
std::string ErrorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const sc::Error& e) {
        return e.what();
    }
    return "";
}

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
    e = ErrorOf([&] { sc::ApplyOverrides(Source(kGpt3), {std::string(100000, 'a') + std::string(100000, '.') + "=1"}, "m"); });
    EXPECT_NE(e.find("dotted parts"), std::string::npos) << e.substr(0, 300);
    EXPECT_LT(e.size(), 300u);
    // 64 levels are fine for the parser (the field is then of the wrong type, shown clipped).
    e = ErrorOf([&] { sc::ParseModelConfig(Layers(Source(kGpt3), std::string(63, '[') + std::string(63, ']'))); });
    EXPECT_EQ(e.rfind("layers: expected an integer, got [[[[", 0), 0u) << e;
    EXPECT_LT(e.size(), 150u);

    Scratch s;
    CliResult r = RunCli("estimate --model " + s.Write("models/deep.json", "{\"name\": \"x\", \"layers\": " + deep + "}"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("nests deeper than 64 levels"), std::string::npos) << r.out.substr(0, 300);
}

TEST(BadInput, HugeValuesAndKeysAreClippedInMessages) {
    const std::string big(1 << 20, 'x');
    std::string e = ErrorOf([&] { sc::ParseModelConfig(Replaced(Source(kGpt3), "\"layers\"", "\"" + big + "\": 1, \"layers\"")); });
    EXPECT_NE(e.find("unknown field"), std::string::npos) << e.substr(0, 300);
    EXPECT_LT(e.size(), 300u);
    e = ErrorOf([&] { sc::ParseModelConfig(Layers(Source(kGpt3), "\"" + big + "\"")); });
    EXPECT_NE(e.find("layers: expected an integer, got \"xxxx"), std::string::npos) << e.substr(0, 300);
    EXPECT_LT(e.size(), 300u);
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
    const std::string path = s.Write("systems/s.json", Replaced(sys, "\"accelerator\": \"h100-sxm\"", "\"accelerator\": 5"));
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
    EXPECT_EQ(r.out, "stagecraft estimate: error: --model: " + big + ": is 16777217 bytes; input files are limited to 16 MiB\n");
}

// ---- The CLI's last resorts ----

// `stagecraft <args>` with stdout on /dev/full; stderr is kept apart in `err`.
int RunToFullStdout(const std::string& args, std::string* err) {
    const fs::path log = fs::temp_directory_path() / ("sc_bad_input_err_" + std::to_string(getpid()));
    const std::string cmd = std::string("cd ") + SC_SOURCE_DIR + " && " + SC_CLI_PATH + " " + args + " >/dev/full 2>" + log.string();
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

}  // namespace
