#include "parallel/job.h"

#include <cmath>

#include "graph/model_stats.h"
#include "graph/transformer_graph.h"
#include "parallel/schedule.h"

namespace sc {

void Rebind(Job& job, const ParallelConfig& p) {
    ValidateParallel(job.model, p);
    job.par = p;
    SymbolValues sv;
    sv.microbatch = p.microbatch;
    sv.tp = p.tp;
    sv.cp = p.cp;
    sv.ep = p.ep;
    Binding b = BindSymbols(job.model, sv);
    job.padded_vocab = std::ceil(static_cast<double>(job.model.vocab) / p.tp) * p.tp;
    b[static_cast<size_t>(Sym::V)] = job.padded_vocab;
    job.graph.pool.EvalAll(b, job.values);
}

Job MakeJob(const ModelConfig& m, const ParallelConfig& p) {
    ValidateModelConfig(m);
    ValidateParallel(m, p);
    Job job;
    job.model = m;
    job.graph = BuildTransformerGraph(m, GraphOptions{p.sp, p.etp > 1});
    Rebind(job, p);
    job.model_flops_per_token = ComputeModelStats(m).model_flops_per_token();
    return job;
}

double HeldParams(const Job& job, const Weight& w) {
    if (w.tied && job.par.pp == 1) return 0;
    return job.V(w.numel_per_rank);
}

std::vector<StageBlock> BlocksOfVirtualStage(const Job& job, int g) {
    std::vector<StageBlock> out;
    const Graph& gr = job.graph;
    if (g == 0) out.push_back({gr.Find(BlockKind::embedding), -1});
    LayerRange r = LayersOfVirtualStage(job.par, job.model.layers, g);
    for (int l = r.first; l < r.first + r.count; ++l) {
        bool moe = job.model.is_moe() && l >= job.model.moe.dense_layers;
        out.push_back({gr.Find(moe ? BlockKind::moe_layer : BlockKind::dense_layer), l});
    }
    if (g == job.virtual_stages() - 1) out.push_back({gr.Find(BlockKind::head), -1});
    return out;
}

}  // namespace sc
