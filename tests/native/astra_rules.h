// What ASTRA-sim enforces on a trace set (docs/chakra_et.md), checked with the project's own reader, so every
// layout is checked whether or not the independent checker is present. Returns the problems found, one per
// line ("" when clean): rank and node named.
#pragma once
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/chakra_et.h"

namespace sctest {

struct AstraRules {
    // The comm-group JSON ({"1": [0, 1], ...}) as id -> members.
    static std::map<uint32_t, std::vector<int>> ParseGroups(const std::string& json_text) {
        std::map<uint32_t, std::vector<int>> groups;
        const nlohmann::json g = nlohmann::json::parse(json_text);
        for (auto it = g.begin(); it != g.end(); ++it)
            groups[static_cast<uint32_t>(std::stoul(it.key()))] = it->get<std::vector<int>>();
        return groups;
    }

    // groups: id -> members, as the comm-group JSON has them.
    static std::string Check(const std::vector<sc::EtFile>& files, const std::map<uint32_t, std::vector<int>>& groups) {
        std::ostringstream bad;
        const int world = static_cast<int>(files.size());
        // (src, dst, tag, size) -> sends minus receives
        std::map<std::tuple<int, int, int, int64_t>, int> p2p;
        // group -> each member's sequence of (type, size)
        std::map<uint32_t, std::map<int, std::vector<std::pair<int, int64_t>>>> issued;
        for (int r = 0; r < world; ++r) {
            const sc::EtFile& f = files[r];
            auto where = [&](const sc::EtNode& n) {
                return "rank " + std::to_string(r) + " node " + std::to_string(n.id) + " (" + n.name + "): ";
            };
            if (f.version.empty()) bad << "rank " << r << ": GlobalMetadata has no version\n";
            if (f.nodes.empty()) bad << "rank " << r << ": no nodes\n";
            std::set<uint64_t> ids;
            bool any_free = false;
            for (const sc::EtNode& n : f.nodes) {
                if (!ids.insert(n.id).second) bad << where(n) << "duplicate id\n";
                for (uint64_t d :
                     n.data_deps)  // written parents first: a dependency on a later id would be a cycle risk
                    if (!ids.count(d) || d == n.id) bad << where(n) << "depends on " << d << ", not an earlier node\n";
                if (!n.ctrl_deps.empty()) bad << where(n) << "ctrl_deps (the legacy feeder ignores them)\n";
                any_free |= n.data_deps.empty();
                switch (n.type) {
                    case sc::EtNodeType::comp:
                        if (n.num_ops < 1)
                            bad << where(n) << "num_ops " << n.num_ops << " (roofline 0/0: the rank hangs)\n";
                        if (n.tensor_size == 0) bad << where(n) << "tensor_size 0 (skipped by the roofline)\n";
                        break;
                    case sc::EtNodeType::comm_coll: {
                        const auto t = n.comm_type;
                        if (t != sc::CollectiveType::all_reduce && t != sc::CollectiveType::all_gather &&
                            t != sc::CollectiveType::reduce_scatter && t != sc::CollectiveType::all_to_all)
                            bad << where(n) << "collective ASTRA-sim does not simulate\n";
                        if (n.comm_size <= 0) bad << where(n) << "comm_size " << n.comm_size << "\n";
                        auto g = groups.find(n.pg);
                        if (n.pg == 0 || g == groups.end()) {
                            bad << where(n) << "group " << n.pg << " not in the comm-group file\n";
                            break;
                        }
                        bool member = false;
                        for (int m : g->second) member |= m == r;
                        if (!member) bad << where(n) << "rank is not a member of group " << n.pg << "\n";
                        issued[n.pg][r].push_back({static_cast<int>(t), n.comm_size});
                        break;
                    }
                    case sc::EtNodeType::comm_send:
                    case sc::EtNodeType::comm_recv: {
                        const bool send = n.type == sc::EtNodeType::comm_send;
                        const int src = send ? r : n.comm_src, dst = send ? n.comm_dst : r;
                        if ((send ? n.comm_src : n.comm_dst) != r)
                            bad << where(n) << "own rank field is not this rank\n";
                        if (src < 0 || src >= world || dst < 0 || dst >= world || src == dst)
                            bad << where(n) << "peer out of range\n";
                        if (n.comm_tag < 0 || n.comm_size <= 0) bad << where(n) << "tag or size invalid\n";
                        p2p[{src, dst, n.comm_tag, n.comm_size}] += send ? 1 : -1;
                        break;
                    }
                    // CPU activation offloading's copies: ASTRA-sim hands them to its remote-memory model (a
                    // memory configuration other than NO_MEMORY_EXPANSION, which exits on them), sized by tensor_size.
                    case sc::EtNodeType::mem_load:
                    case sc::EtNodeType::mem_store:
                        if (n.tensor_size == 0) bad << where(n) << "memory copy of tensor_size 0\n";
                        break;
                    default: bad << where(n) << "node type ASTRA-sim skips\n";
                }
            }
            if (!f.nodes.empty() && !any_free) bad << "rank " << r << ": no dependency-free node\n";
        }
        for (const auto& [key, balance] : p2p)
            if (balance != 0)
                bad << "send/recv " << std::get<0>(key) << "->" << std::get<1>(key) << " tag " << std::get<2>(key)
                    << " size " << std::get<3>(key) << ": " << (balance > 0 ? "no matching recv" : "no matching send")
                    << "\n";
        // Collectives pair by issue order within their group: every member issues the same sequence.
        for (const auto& [id, by_rank] : issued) {
            const auto& members = groups.at(id);
            const auto& first = by_rank.begin()->second;
            for (int m : members) {
                auto it = by_rank.find(m);
                if (it == by_rank.end() || it->second != first)
                    bad << "group " << id << ": rank " << m << " issues a different sequence of collectives than rank "
                        << by_rank.begin()->first << "\n";
            }
        }
        return bad.str();
    }
};

}  // namespace sctest
