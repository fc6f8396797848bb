// stagecraft: the command-line face of the core. Each subcommand lives in its own cmd_*.cpp.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "config/error.h"

static const char* kUsage =
    "usage: stagecraft <command> [flags]\n"
    "commands:\n"
    "  estimate --model FILE [--precision P] [--set key=value]... [--json]\n"
    "      parameters, training FLOPs per token and training-state bytes of a model preset\n"
    "  summary --model FILE --parallel SPEC [--json]\n"
    "      per-class summary of the job's per-rank traces (FLOPs, collectives, memory)\n"
    "  trace --model FILE --parallel SPEC --out DIR [--format et|json]\n"
    "      every rank's Chakra ET file and the communicator groups (or one rank's Chrome trace)\n"
    "  search --model FILE --system S --gpus N --batch B [--top 10] [--json]\n"
    "      every valid layout, ranked by step time among those that fit in memory\n"
    "  sweep --model M [--model M2] --system S --gpus N --batch B --axis flops=1,2 ... [--csv FILE|--json]\n"
    "      best layout and MFU of each model over a grid of hardware variants (co-design study)\n"
    "  serve --preset FILE [--set key=value]... [--rate-sweep R1,R2,...] [--json]\n"
    "      a served model's latency percentiles, throughput and goodput (discrete-event serving simulation)\n"
    "a preset (--model, --system, --preset) is a file, or an id (llama3-8b, dgx-h100-superpod) looked up in\n"
    "presets/ under the working directory, then beside the program, then in its source tree\n"
    "run `stagecraft <command> --help` for a command's flags\n";

static int Run(const std::string& cmd, int argc, char** argv) {
    if (cmd == "estimate") return sc::cli::Estimate(argc, argv);
    if (cmd == "summary") return sc::cli::Summary(argc, argv);
    if (cmd == "trace") return sc::cli::Trace(argc, argv);
    if (cmd == "search") return sc::cli::Search(argc, argv);
    if (cmd == "sweep") return sc::cli::Sweep(argc, argv);
    if (cmd == "serve") return sc::cli::Serve(argc, argv);
    std::fprintf(stderr, "stagecraft: unknown command \"%s\"\n%s", cmd.c_str(), kUsage);
    return 2;
}

// Output that could not be written (a full disk, `> /dev/full`, a closed pipe) is a failure, never exit 0.
static int CheckedStdout(const std::string& cmd, int status) {
    if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return status;
    std::fprintf(stderr, "stagecraft %s: error: could not write the output to stdout: %s\n", cmd.c_str(),
                 std::strerror(errno));
    return status != 0 ? status : 1;
}

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return CheckedStdout("--help", argc < 2 ? 2 : 0);
    }
    std::string cmd = argv[1];
    int status = 1;
    try {
        status = Run(cmd, argc, argv);
    } catch (const sc::Error& e) {
        std::fprintf(stderr, "stagecraft %s: error: %s\n", cmd.c_str(), e.what());
    } catch (const std::exception& e) {
        // Not a bad input we know of: a bug, or out of memory. Say so plainly rather than abort.
        std::fprintf(stderr, "stagecraft %s: internal error: %s\n", cmd.c_str(), e.what());
    } catch (...) {
        std::fprintf(stderr, "stagecraft %s: internal error: unknown exception\n", cmd.c_str());
    }
    return CheckedStdout(cmd, status);
}
