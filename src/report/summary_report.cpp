#include "report/summary_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "report/format.h"

namespace sc {

static std::string Ranks(const RankClass& c) {
    std::string s;
    for (size_t i = 0; i < c.example_ranks.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(c.example_ranks[i]);
    }
    if (c.ranks > static_cast<int>(c.example_ranks.size())) s += ",...";
    return s;
}

std::string SummaryReportText(const Job& job, const TraceSummary& s) {
    const ParallelConfig& p = job.par;
    std::string o;
    char buf[512];
    std::snprintf(buf, sizeof buf, "Traces: %s on %d ranks (%s), %d microbatches of %d, %d rank classes\n",
                  job.model.name.c_str(), s.world, ParallelSpecString(p).c_str(), s.microbatches, p.microbatch,
                  static_cast<int>(s.classes.size()));
    o += buf;
    std::snprintf(buf, sizeof buf, "total over all ranks: %s, %s communicated\n", FormatFlops(s.total_flops).c_str(),
                  FormatBytes(s.total_comm_bytes).c_str());
    o += buf;
    for (const RankClass& c : s.classes) {
        std::snprintf(buf, sizeof buf, "class stage %d: %d ranks (%s)\n", c.stage, c.ranks, Ranks(c).c_str());
        o += buf;
        std::snprintf(buf, sizeof buf, "  nodes %llu: %llu compute, %llu collective, %llu send, %llu recv",
                      static_cast<unsigned long long>(c.total_nodes), static_cast<unsigned long long>(c.nodes[4]),
                      static_cast<unsigned long long>(c.nodes[7]), static_cast<unsigned long long>(c.nodes[5]),
                      static_cast<unsigned long long>(c.nodes[6]));
        o += buf;
        if (c.host_copies) o += ", " + std::to_string(c.host_copies) + " host copies";  // activation offloading
        o += "\n";
        std::snprintf(buf, sizeof buf, "  compute %s (matmul %s, attention %s, recompute %s), %s touched\n",
                      FormatFlops(c.flops).c_str(), FormatFlops(c.matmul_flops).c_str(),
                      FormatFlops(c.attention_flops).c_str(), FormatFlops(c.recompute_flops).c_str(),
                      FormatBytes(c.compute_bytes).c_str());
        o += buf;
        for (const CollectiveTotal& t : c.collectives) {
            std::snprintf(buf, sizeof buf, "  %-14s on %-5s (group of %d): %llu x, %s\n", NameOf(t.type),
                          NameOf(t.group), t.group_size, static_cast<unsigned long long>(t.count),
                          FormatBytes(t.bytes).c_str());
            o += buf;
        }
        if (c.sends || c.recvs) {
            std::snprintf(buf, sizeof buf, "  pipeline: %llu sends (%s), %llu recvs (%s)\n",
                          static_cast<unsigned long long>(c.sends), FormatBytes(c.send_bytes).c_str(),
                          static_cast<unsigned long long>(c.recvs), FormatBytes(c.recv_bytes).c_str());
            o += buf;
        }
        if (c.host_copies) {
            std::snprintf(buf, sizeof buf, "  activation offload: %llu copies to and from host memory (%s)\n",
                          static_cast<unsigned long long>(c.host_copies), FormatBytes(c.host_copy_bytes).c_str());
            o += buf;
        }
        const StageMemory& m = c.memory;
        std::snprintf(
            buf, sizeof buf,
            "  memory %s: weights %s, gradients %s, optimizer %s, activations %s (%d microbatches in flight)\n",
            FormatBytes(m.total()).c_str(), FormatBytes(m.weights).c_str(), FormatBytes(m.gradients).c_str(),
            FormatBytes(m.optimizer).c_str(), FormatBytes(m.activations).c_str(), m.peak_inflight);
        o += buf;
        if (m.host_activations > 0) o += "  in host memory: " + FormatBytes(m.host_activations) + " of activations\n";
    }
    return o;
}

std::string SummaryReportJson(const Job& job, const TraceSummary& s) {
    nlohmann::ordered_json j;
    j["model"] = job.model.name;
    j["parallel"] = ParallelSpecString(job.par);
    j["world"] = s.world;
    j["microbatches"] = s.microbatches;
    j["total_flops"] = s.total_flops;
    j["total_comm_bytes"] = s.total_comm_bytes;
    j["size_convention"] =
        "comm_size is bytes of the whole buffer: all-reduce buffer, all-gather output, "
        "reduce-scatter input, all-to-all send buffer";
    nlohmann::ordered_json classes = nlohmann::ordered_json::array();
    for (const RankClass& c : s.classes) {
        nlohmann::ordered_json x;
        x["stage"] = c.stage;
        x["ranks"] = c.ranks;
        x["example_ranks"] = c.example_ranks;
        x["nodes"] = {{"total", c.total_nodes},
                      {"comp", c.nodes[4]},
                      {"comm_coll", c.nodes[7]},
                      {"comm_send", c.nodes[5]},
                      {"comm_recv", c.nodes[6]}};
        x["flops"] = {{"total", c.flops},
                      {"matmul", c.matmul_flops},
                      {"attention", c.attention_flops},
                      {"recompute", c.recompute_flops}};
        x["compute_bytes"] = c.compute_bytes;
        nlohmann::ordered_json colls = nlohmann::ordered_json::array();
        for (const CollectiveTotal& t : c.collectives)
            colls.push_back({{"type", NameOf(t.type)},
                             {"group", NameOf(t.group)},
                             {"group_size", t.group_size},
                             {"count", t.count},
                             {"bytes", t.bytes}});
        x["collectives"] = colls;
        x["pipeline"] = {
            {"sends", c.sends}, {"send_bytes", c.send_bytes}, {"recvs", c.recvs}, {"recv_bytes", c.recv_bytes}};
        x["activation_offload"] = {{"host_copies", c.host_copies}, {"host_copy_bytes", c.host_copy_bytes}};
        x["memory"] = {{"weights", c.memory.weights},     {"gradients", c.memory.gradients},
                       {"optimizer", c.memory.optimizer}, {"activations", c.memory.activations},
                       {"total", c.memory.total()},       {"peak_inflight_microbatches", c.memory.peak_inflight}};
        classes.push_back(x);
    }
    j["classes"] = classes;
    return j.dump(2) + "\n";
}

}  // namespace sc
