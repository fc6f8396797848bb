#include "trace/summary.h"

#include <string_view>

namespace sc {

namespace {

// graph/transformer_graph.cpp MaterializedAttentionCore's GEMMs, under any "L<i>." / "recompute." prefix.
bool IsScoreGemm(std::string_view name) {
    return name.find("attn.scores") != std::string_view::npos || name.find("attn.context") != std::string_view::npos;
}

}  // namespace

namespace {

// The stage's class before its nodes: ranks, examples, memory.
RankClass ClassOf(const Job& job, const Layout& layout, int stage) {
    RankClass rc;
    rc.stage = stage;
    rc.ranks = layout.world() / job.par.pp;
    for (int r = 0; r < layout.world() && rc.example_ranks.size() < 4; ++r)
        if (layout.Stage(r) == stage) rc.example_ranks.push_back(r);
    rc.memory = StageMemoryOf(job, stage);
    return rc;
}

void Count(const Layout& layout, const ProgNode& n, const std::vector<std::string>& names, RankClass& rc) {
    rc.nodes[static_cast<int>(n.type)]++;
    rc.total_nodes++;
    switch (n.type) {
        case EtNodeType::comp:
            rc.flops += n.flops;
            rc.compute_bytes += n.bytes;
            // Attention is the fused core's nodes, or the unfused core's score GEMMs (QK^T, AV and their
            // gradients; KernelChoices::flash_attention = false): the same query-key work either way.
            if (n.kind == OpKind::attention || (n.kind == OpKind::matmul && IsScoreGemm(names[n.name])))
                rc.attention_flops += n.flops;
            else if (n.kind == OpKind::matmul) rc.matmul_flops += n.flops;
            if (n.role == NodeRole::recompute) rc.recompute_flops += n.flops;
            break;
        case EtNodeType::comm_coll: {
            CollectiveTotal* t = nullptr;
            for (CollectiveTotal& c : rc.collectives)
                if (c.type == n.coll && c.group == n.group) t = &c;
            if (!t)
                rc.collectives.push_back({n.coll, n.group, layout.GroupSize(n.group), 0, 0}),
                    t = &rc.collectives.back();
            t->count++;
            t->bytes += n.comm_bytes;
            break;
        }
        case EtNodeType::comm_send: rc.sends++, rc.send_bytes += n.comm_bytes; break;
        case EtNodeType::comm_recv: rc.recvs++, rc.recv_bytes += n.comm_bytes; break;
        default: break;
    }
}

}  // namespace

RankClass SummarizeProgram(const Job& job, const StageProgram& prog) {
    const Layout layout(job.par);
    RankClass rc = ClassOf(job, layout, prog.stage);
    for (const ProgNode& n : prog.nodes) Count(layout, n, prog.names, rc);
    return rc;
}

TraceSummary SummarizeJob(const Job& job) {
    TraceSummary s;
    s.world = job.par.world();
    s.microbatches = job.par.microbatches();
    const Layout layout(job.par);
    for (int stage = 0; stage < job.par.pp; ++stage) {
        // Streamed: the summary's memory does not grow with the microbatches or the layers.
        RankClass rc = ClassOf(job, layout, stage);
        VisitStageProgram(
            job, stage, [&](const ProgNode& n, const std::vector<std::string>& names) { Count(layout, n, names, rc); });
        s.total_flops += rc.flops * rc.ranks;
        double comm = rc.send_bytes;
        for (const CollectiveTotal& c : rc.collectives) comm += c.bytes;
        s.total_comm_bytes += comm * rc.ranks;
        s.classes.push_back(std::move(rc));
    }
    return s;
}

}  // namespace sc
