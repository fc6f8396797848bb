// Throughput of EtWriter: 1M typical nodes (60% COMP, 25% collectives, 15% send/recv, names like
// "mb3.L17.fwd.mlp.up", one or two data deps) encoded into three sinks: counting only (pure encoding), an
// in-memory string (grows to ~95 MB: reallocation and page faults included), and a stdio file with a
// 1 MiB buffer written once per record (batching in the sink itself measured no faster). Every figure
// includes building the nodes, which is timed alone first. Target: >= 200 MB/s of trace output natively.
//
//   g++ -std=c++20 -O2 -DNDEBUG -Isrc bench/chakra_write_bench.cpp src/trace/chakra_et.cpp -o chakra_write_bench
//   ./chakra_write_bench [nodes=1000000] [file=/tmp/chakra_write_bench.et]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <string>

#include "trace/byte_sink.h"
#include "trace/chakra_et.h"

namespace {

// A file sink as the CLI would have it: stdio with a 1 MiB buffer, one fwrite per record.
struct StdioFileSink final : sc::ByteSink {
    std::FILE* f;
    explicit StdioFileSink(const std::string& path) : f(std::fopen(path.c_str(), "wb")) {
        if (!f) {
            std::perror(path.c_str());
            std::exit(1);
        }
        std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
    }
    ~StdioFileSink() override { std::fclose(f); }
    void Write(std::string_view b) override {
        if (std::fwrite(b.data(), 1, b.size(), f) != b.size()) {
            std::perror("fwrite");
            std::exit(1);
        }
    }
};

// Fills `n` (reused across calls, as a generator would) with the i-th node of a 1F1B-like stream.
void MakeNode(uint64_t i, sc::EtNode* n) {
    static const char* const kOps[] = {"attn.qkv", "attn.core", "attn.out", "mlp.up", "mlp.down", "norm"};
    const uint64_t kind = i % 20;
    const uint64_t layer = (i / 20) % 96;
    const uint64_t micro = (i / 1920) % 64;
    n->id = i + 1;
    n->data_deps.clear();
    n->ctrl_deps.clear();
    if (i > 0) n->data_deps.push_back(i);
    if (i > 8 && kind % 4 == 0) n->data_deps.push_back(i - 7);
    n->name.assign("mb").append(std::to_string(micro)).append(".L").append(std::to_string(layer));
    if (kind < 12) {
        n->type = sc::EtNodeType::comp;
        n->name.append(kind < 6 ? ".fwd." : ".bwd.").append(kOps[kind % 6]);
        n->num_ops = int64_t{1} << (30 + kind % 8);
        n->tensor_size = uint64_t{1} << (20 + kind % 6);
        n->duration_micros = 5 + kind * 13;
    } else if (kind < 17) {
        n->type = sc::EtNodeType::comm_coll;
        n->name.append(".tp.allreduce");
        n->comm_type = kind % 2 ? sc::CollectiveType::all_reduce : sc::CollectiveType::reduce_scatter;
        n->comm_size = int64_t{1} << (18 + kind % 8);
        n->pg = 1 + static_cast<uint32_t>(kind % 3) * 1000;
        n->duration_micros = 0;
    } else {
        const bool send = kind % 2;
        n->type = send ? sc::EtNodeType::comm_send : sc::EtNodeType::comm_recv;
        n->name.append(send ? ".pp.send" : ".pp.recv");
        n->comm_src = send ? -1 : 2;
        n->comm_dst = send ? 4 : -1;
        n->comm_tag = static_cast<int32_t>(micro * 96 + layer);
        n->comm_size = 16 << 20;
        n->duration_micros = 0;
    }
}

double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// Best of `repeats` runs (the machine may be shared); CPU time shown next to wall time for the same run.
void Run(const char* label, const std::function<std::unique_ptr<sc::ByteSink>()>& make_sink, uint64_t nodes,
         int repeats) {
    double best_wall = 1e300, best_cpu = 0;
    uint64_t bytes = 0;
    for (int r = 0; r < repeats; ++r) {
        auto sink = make_sink();
        sc::EtNode node;
        const double c0 = CpuSeconds();
        const auto t0 = std::chrono::steady_clock::now();
        sc::EtWriter writer(*sink, 3);
        writer.WriteMetadata();
        for (uint64_t i = 0; i < nodes; ++i) {
            MakeNode(i, &node);
            writer.WriteNode(node);
        }
        sink.reset();  // the file sink flushes and closes here: part of the cost
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double cpu = CpuSeconds() - c0;
        if (wall < best_wall) best_wall = wall, best_cpu = cpu;
        bytes = writer.bytes_written();
    }
    const double mb = static_cast<double>(bytes) / 1e6;
    std::printf("%-14s %6.1f MB: wall %6.3f s = %6.1f MB/s (%5.1f ns/node), cpu %6.3f s = %6.1f MB/s, %5.1f B/node\n",
                label, mb, best_wall, mb / best_wall, best_wall * 1e9 / static_cast<double>(nodes), best_cpu,
                mb / best_cpu, static_cast<double>(bytes) / static_cast<double>(nodes));
}

// Node generation alone, so the writer's share can be read off.
void RunGenerateOnly(uint64_t nodes) {
    sc::EtNode node;
    uint64_t sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < nodes; ++i) {
        MakeNode(i, &node);
        sink += node.name.size();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-14s %6.3f s (%6.1f ns/node) of the totals above is building the EtNode [%llu]\n", "generate only", s,
                s * 1e9 / static_cast<double>(nodes), static_cast<unsigned long long>(sink % 10));
}

}  // namespace

int main(int argc, char** argv) {
    const uint64_t nodes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
    const std::string path = argc > 2 ? argv[2] : "/tmp/chakra_write_bench.et";
    const int repeats = 3;

    RunGenerateOnly(nodes);
    Run(
        "counting sink", [] { return std::make_unique<sc::CountingSink>(); }, nodes, repeats);
    Run(
        "string sink", [] { return std::make_unique<sc::StringSink>(); }, nodes, repeats);
    Run(
        "stdio file", [&] { return std::make_unique<StdioFileSink>(path); }, nodes, repeats);
    std::printf(
        "wrote %s (check with the independent checker, docs/chakra_et.md section 7: "
        "python3 \"$SC_CHAKRA_CHECK\" --no-cross %s)\n",
        path.c_str(), path.c_str());
    return 0;
}
