#include "trace/summary.h"

#include <string_view>

namespace sc {

namespace {

// graph/transformer_graph.cpp MaterializedAttentionCore's GEMMs, under any "L<i>." / "recompute." prefix.
bool IsScoreGemm(std::string_view name) {
    return name.find("attn.scores") != std::string_view::npos || name.find("attn.context") != std::string_view::npos;
}

}  // namespace

RankClass SummarizeProgram(const Job& job, const StageProgram& prog) {
    Layout layout(job.par);
    RankClass rc;
    rc.stage = prog.stage;
    rc.ranks = layout.world() / job.par.pp;
    for (int r = 0; r < layout.world() && rc.example_ranks.size() < 4; ++r)
        if (layout.Stage(r) == prog.stage) rc.example_ranks.push_back(r);
    for (const ProgNode& n : prog.nodes) {
        rc.nodes[static_cast<int>(n.type)]++;
        rc.total_nodes++;
        switch (n.type) {
            case EtNodeType::comp:
                rc.flops += n.flops;
                rc.compute_bytes += n.bytes;
                // Attention is the fused core's nodes, or the unfused core's score GEMMs (QK^T, AV and their
                // gradients; KernelChoices::flash_attention = false): the same query-key work either way.
                if (n.kind == OpKind::attention || (n.kind == OpKind::matmul && IsScoreGemm(prog.names[n.name])))
                    rc.attention_flops += n.flops;
                else if (n.kind == OpKind::matmul) rc.matmul_flops += n.flops;
                if (n.role == NodeRole::recompute) rc.recompute_flops += n.flops;
                break;
            case EtNodeType::comm_coll: {
                int size = layout.GroupSize(n.group);
                CollectiveTotal* t = nullptr;
                for (CollectiveTotal& c : rc.collectives)
                    if (c.type == n.coll && c.group == n.group) t = &c;
                if (!t) rc.collectives.push_back({n.coll, n.group, size, 0, 0}), t = &rc.collectives.back();
                t->count++;
                t->bytes += n.comm_bytes;
                break;
            }
            case EtNodeType::comm_send: rc.sends++, rc.send_bytes += n.comm_bytes; break;
            case EtNodeType::comm_recv: rc.recvs++, rc.recv_bytes += n.comm_bytes; break;
            default: break;
        }
    }
    rc.memory = StageMemoryOf(job, prog.stage);
    return rc;
}

TraceSummary SummarizeJob(const Job& job) {
    TraceSummary s;
    s.world = job.par.world();
    s.microbatches = job.par.microbatches();
    for (int stage = 0; stage < job.par.pp; ++stage) {
        StageProgram prog = BuildStageProgram(job, stage);
        s.classes.push_back(SummarizeProgram(job, prog));
        const RankClass& rc = s.classes.back();
        s.total_flops += rc.flops * rc.ranks;
        double comm = rc.send_bytes;
        for (const CollectiveTotal& c : rc.collectives) comm += c.bytes;
        s.total_comm_bytes += comm * rc.ranks;
    }
    return s;
}

}  // namespace sc
