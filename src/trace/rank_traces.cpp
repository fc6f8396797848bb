#include "trace/rank_traces.h"

#include "trace/comm_groups.h"

namespace sc {

RankTraceWriter::RankTraceWriter(const Job& job) : job_(job), layout_(job.par), programs_(job.par.pp) {}

const StageProgram& RankTraceWriter::Program(int stage) {
    if (!programs_[stage]) programs_[stage] = std::make_unique<StageProgram>(BuildStageProgram(job_, stage));
    return *programs_[stage];
}

uint64_t RankTraceWriter::WriteRank(int rank, ByteSink& sink) {
    const StageProgram& prog = Program(layout_.Stage(rank));
    uint32_t group_id[static_cast<int>(GroupKind::count)];
    for (int k = 0; k < static_cast<int>(GroupKind::count); ++k) group_id[k] = layout_.GroupId(static_cast<GroupKind>(k), rank);
    const int next = layout_.PipelinePeer(rank, +1), prev = layout_.PipelinePeer(rank, -1);

    EtWriter w(sink, rank);
    w.WriteMetadata("1.0.0");
    EtNode& n = node_;
    for (size_t i = 0; i < prog.nodes.size(); ++i) {
        const ProgNode& p = prog.nodes[i];
        n.id = i;
        n.name = prog.names[p.name];
        n.type = p.type;
        n.data_deps.assign(prog.deps.begin() + p.dep_begin, prog.deps.begin() + p.dep_begin + p.dep_count);
        n.ctrl_deps.clear();
        n.duration_micros = 0;
        n.num_ops = p.flops;
        n.tensor_size = p.bytes;
        n.comm_type = p.coll;
        n.comm_size = p.comm_bytes;
        n.comm_src = n.comm_dst = -1;
        n.comm_tag = p.tag;
        n.pg = 0;
        if (p.type == EtNodeType::comm_coll) {
            n.pg = group_id[static_cast<int>(p.group)];
        } else if (p.type == EtNodeType::comm_send) {
            n.comm_src = rank;
            n.comm_dst = p.peer > 0 ? next : prev;
        } else if (p.type == EtNodeType::comm_recv) {
            n.comm_dst = rank;
            n.comm_src = p.peer > 0 ? next : prev;
        }
        w.WriteNode(n);
    }
    return prog.nodes.size();
}

void RankTraceWriter::WriteCommGroups(ByteSink& sink) const {
    std::vector<std::vector<int>> groups;
    std::vector<int> members;
    for (int k = 0; k < static_cast<int>(GroupKind::count); ++k) {
        GroupKind kind = static_cast<GroupKind>(k);
        if (layout_.GroupSize(kind) <= 1) continue;
        for (int i = 0; i < layout_.GroupCount(kind); ++i) {
            layout_.Members(kind, i, members);
            groups.push_back(members);
        }
    }
    sc::WriteCommGroups(sink, groups, layout_.world());
}

}  // namespace sc
