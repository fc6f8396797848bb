// Shared by the trace tests: small models, writing a job's traces to a directory, running the
// independent checker.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "config/model_config.h"
#include "parallel/job.h"
#include "test_util.h"
#include "trace/rank_traces.h"

namespace sctest {

inline sc::ModelConfig SmallGpt() {
    sc::ModelConfig m;
    m.name = "small-gpt";
    m.layers = 4;
    m.hidden = 256;
    m.heads = 8;
    m.kv_heads = 8;
    m.head_dim = 32;
    m.ffn = 1024;
    m.vocab = 1000;
    m.seq = 128;
    m.bias = true;
    return m;
}

inline sc::ModelConfig SmallMoe() {
    sc::ModelConfig m = SmallGpt();
    m.name = "small-moe";
    m.kv_heads = 4;
    m.mlp = sc::MlpKind::swiglu;
    m.norm = sc::NormKind::rmsnorm;
    m.position = sc::PositionKind::rotary;
    m.tied_embeddings = false;
    m.bias = false;
    m.moe = {8, 2, 1, 512, 1, 0};
    return m;
}

inline std::string Preset(const std::string& name) {
    std::ifstream f(std::string(SC_SOURCE_DIR) + "/presets/models/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct FileSink final : sc::ByteSink {
    std::ofstream f;
    explicit FileSink(const std::string& path) : f(path, std::ios::binary) {}
    void Write(std::string_view b) override { f.write(b.data(), static_cast<std::streamsize>(b.size())); }
};

// Writes <dir>/trace.<rank>.et and <dir>/trace.json; returns dir.
inline std::string WriteTraces(const sc::Job& job, const std::string& name) {
    std::string dir = (std::filesystem::temp_directory_path() / ("sc-trace-" + name)).string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    sc::RankTraceWriter w(job);
    for (int r = 0; r < w.world(); ++r) {
        FileSink s(dir + "/trace." + std::to_string(r) + ".et");
        w.WriteRank(r, s);
    }
    FileSink g(dir + "/trace.json");
    w.WriteCommGroups(g);
    return dir;
}

inline int RunChecker(const std::string& dir, const std::string& extra = "") {
    std::string cmd =
        "python3 '" + ChakraCheckerPath() + "' --strict " + extra + " " + dir + " > " + dir + ".check.log 2>&1";
    int rc = std::system(cmd.c_str());
    return WEXITSTATUS(rc);
}

}  // namespace sctest
