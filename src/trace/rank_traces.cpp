#include "trace/rank_traces.h"

#include "trace/comm_groups.h"

namespace sc {

RankTraceWriter::RankTraceWriter(const Job& job)
    : job_(job), layout_(job.par), programs_(job.par.pp), encoded_(job.par.pp) {}

const StageProgram& RankTraceWriter::Program(int stage) {
    if (!programs_[stage]) programs_[stage] = std::make_unique<StageProgram>(BuildStageProgram(job_, stage));
    return *programs_[stage];
}

namespace {
bool RankDependent(EtNodeType t) {
    return t == EtNodeType::comm_coll || t == EtNodeType::comm_send || t == EtNodeType::comm_recv;
}
}  // namespace

void RankTraceWriter::FillNode(const StageProgram& prog, size_t i) {
    const ProgNode& p = prog.nodes[i];
    EtNode& n = node_;
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
}

// Only what EtWriter::WriteNodeFrom validates and encodes: the type, the rank-dependent fields and the size
// and tag its checks read. The name and deps stay empty (they are in the cached part, validated there).
void RankTraceWriter::FillRankFields(const StageProgram& prog, size_t i, int rank, const uint32_t* group_id,
                                     int next, int prev) {
    const ProgNode& p = prog.nodes[i];
    EtNode& n = node_;
    n.id = i;
    n.type = p.type;
    n.comm_size = p.comm_bytes;
    n.comm_tag = p.tag;
    n.comm_src = n.comm_dst = -1;
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
}

const RankTraceWriter::StageBytes& RankTraceWriter::Encoded(int stage) {
    if (encoded_[stage]) return *encoded_[stage];
    const StageProgram& prog = Program(stage);
    auto out = std::make_unique<StageBytes>();
    StringSink sink;
    EtWriter w(sink, 0);
    w.WriteMetadata("1.0.0");
    sink.bytes.clear();  // only node records are kept
    Run run;
    for (size_t i = 0; i <= prog.nodes.size(); ++i) {
        if (i < prog.nodes.size()) FillNode(prog, i);
        if (i == prog.nodes.size() || RankDependent(prog.nodes[i].type)) {
            run.end = sink.bytes.size();
            run.next = i;
            if (i < prog.nodes.size()) {
                run.part_begin = sink.bytes.size();
                sink.bytes += EtWriter::EncodeRankInvariantPart(node_);
                run.part_end = sink.bytes.size();
            }
            out->runs.push_back(run);
            run = Run{sink.bytes.size(), sink.bytes.size(), 0, 0, 0, 0};
            continue;
        }
        w.WriteNode(node_);
        ++run.nodes;
    }
    out->encoded = std::move(sink.bytes);
    encoded_[stage] = std::move(out);
    return *encoded_[stage];
}

uint64_t RankTraceWriter::WriteRank(int rank, ByteSink& sink) {
    const int stage = layout_.Stage(rank);
    const StageProgram& prog = Program(stage);
    const StageBytes& enc = Encoded(stage);
    uint32_t group_id[static_cast<int>(GroupKind::count)];
    for (int k = 0; k < static_cast<int>(GroupKind::count); ++k) group_id[k] = layout_.GroupId(static_cast<GroupKind>(k), rank);
    const int next = layout_.PipelinePeer(rank, +1), prev = layout_.PipelinePeer(rank, -1);

    EtWriter w(sink, rank);
    w.WriteMetadata("1.0.0");
    node_.name.clear();
    node_.data_deps.clear();
    node_.ctrl_deps.clear();
    const std::string_view bytes(enc.encoded);
    for (const Run& r : enc.runs) {
        w.WriteEncoded(bytes.substr(r.begin, r.end - r.begin), r.nodes);
        if (r.next == prog.nodes.size()) break;
        FillRankFields(prog, r.next, rank, group_id, next, prev);
        w.WriteNodeFrom(bytes.substr(r.part_begin, r.part_end - r.part_begin), node_);
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
