// Activation accounting follows Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models"): every forward op keeps the inputs its backward needs (graph.h: saved_bytes);
// selective recomputation drops the attention core's, full recomputation keeps only each layer's input.
// ZeRO sharding follows Rajbhandari et al. 2020 (stages 1-3: optimizer state, gradients, weights).
#include "parallel/memory.h"

#include <algorithm>

#include "parallel/schedule.h"

namespace sc {

double SavedActivationBytes(const Job& job, const Block& block, Recompute recompute) {
    bool layer = block.kind == BlockKind::dense_layer || block.kind == BlockKind::moe_layer;
    if (recompute == Recompute::full && layer) return job.V(block.boundary_bytes);
    double sum = 0;
    for (const Op& op : block.forward)
        if (!(recompute == Recompute::selective && op.selective)) sum += job.V(op.saved_bytes);
    return sum;
}

StageMemory StageMemoryOf(const Job& job, int stage) {
    const ParallelConfig& p = job.par;
    const PrecisionConfig& prec = job.model.precision;
    const double dp_group = 1.0 * p.dp * p.cp, edp_group = 1.0 * p.dp / p.ep * p.cp;
    StageMemory mem;
    std::vector<double> act(p.chunks(), 0);
    double dense = 0, expert = 0, largest_block = 0, recompute_working = 0;
    for (int c = 0; c < p.chunks(); ++c) {
        for (const StageBlock& sb : BlocksOfVirtualStage(job, c * p.pp + stage)) {
            double block_params = 0;
            for (const Weight& w : sb.block->weights) {
                double n = HeldParams(job, w);
                (w.expert ? expert : dense) += n;
                block_params += n;
            }
            largest_block = std::max(largest_block, block_params);
            act[c] += SavedActivationBytes(job, *sb.block, p.recompute);
            if (p.recompute != Recompute::none)
                recompute_working = std::max(recompute_working, SavedActivationBytes(job, *sb.block, Recompute::none));
        }
    }
    mem.params = dense + expert;
    const double w = BytesOf(prec.compute), g = BytesOf(prec.grad);
    const double opt = (prec.master == prec.compute ? 0 : BytesOf(prec.master)) + 2 * BytesOf(prec.optimizer);
    auto sharded = [&](double bytes_per_param, bool shard) {
        return shard ? bytes_per_param * (dense / dp_group + expert / edp_group) : bytes_per_param * (dense + expert);
    };
    mem.weights = sharded(w, p.zero >= 3) + (p.zero >= 3 ? 2 * largest_block * w : 0);
    mem.gradients = sharded(g, p.zero >= 2);
    mem.optimizer = sharded(opt, p.zero >= 1);

    double cur = 0, peak = 0;
    int inflight = 0;
    for (const PipelineStep& s : PipelineSchedule(p, stage)) {
        if (s.forward) {
            cur += act[s.chunk];
            ++inflight;
            if (cur > peak) peak = cur, mem.peak_inflight = inflight;
        } else {
            cur -= act[s.chunk];
            --inflight;
        }
    }
    mem.activations = peak + recompute_working;
    return mem;
}

}  // namespace sc
