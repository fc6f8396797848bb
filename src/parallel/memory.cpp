// Activation accounting follows Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models"): every forward op keeps the inputs its backward needs (graph.h: saved_bytes);
// selective recomputation drops the attention core's (or what Megatron's recompute_modules name), full recomputation keeps only each layer's input, op-level
// checkpointing (torchtitan) the layer's input and the outputs of the ops its policy saves (graph.h: sac_saved_bytes).
// ZeRO sharding follows Rajbhandari et al. 2020 (stages 1-3: optimizer state, gradients, weights).
#include "parallel/memory.h"

#include <algorithm>
#include <vector>

#include "parallel/offload_schedule.h"
#include "parallel/schedule.h"

namespace sc {

double SavedActivationBytes(const Job& job, const Block& block, Recompute recompute) {
    bool layer = IsLayer(block.kind);
    if (recompute == Recompute::full && layer) return job.V(block.boundary_bytes);
    double sum = 0;
    if (recompute == Recompute::op && layer) {  // the layer's input and the outputs the policy keeps
        sum = job.V(block.boundary_bytes);
        for (const Op& op : block.forward) sum += job.V(op.sac_saved_bytes);
        return sum;
    }
    // Selective recomputation by module (Megatron's recompute_modules): what the chosen modules' recomputation
    // makes unnecessary is not kept, in the layers and in the MTP modules' layers (built from the same config).
    // Full recomputation checkpoints an MTP module whole: it keeps its inputs, not what its ops keep.
    const uint8_t selected = recompute == Recompute::selective ? job.par.selective_modules() : 0;
    const bool mtp_rerun = recompute == Recompute::full && !layer;
    if (mtp_rerun) sum = job.V(block.mtp_rerun_inputs);
    for (const Op& op : block.forward) {
        const uint8_t modules = layer || op.mtp_rerun ? selected : 0;
        if ((op.drop_all_modules & modules) || (mtp_rerun && op.mtp_rerun)) continue;
        sum += job.V(op.saved_bytes) - (op.drop_part_modules & modules ? job.V(op.part_bytes) : 0);
    }
    return sum;
}

StageMemory StageMemoryOf(const Job& job, int stage) {
    const ParallelConfig& p = job.par;
    const PrecisionConfig& prec = job.model.precision;
    const double dp_group = DataParallelSize(p), edp_group = ExpertDataParallelSize(p);
    StageMemory mem;

    // Per block kind, once: its saved activations (under the job's recomputation and, for the recompute
    // working set, under none) and the parameters this rank holds. Summed below in the order the stage
    // runs its blocks; every term is a whole number of bytes (parameters), so the totals equal a block-by-block walk.
    struct KindCost {
        bool done = false;
        double act = 0, act_none = 0, dense = 0, expert = 0;
    };
    KindCost kinds[kBlockKinds], twins[kBlockKinds];  // twins: each kind's BF16 twin (Block::bf16)
    auto cost = [&](BlockKind k, bool bf16) -> const KindCost& {
        KindCost& c = (bf16 ? twins : kinds)[static_cast<int>(k)];
        if (!c.done) {
            const BlockSums& b = (bf16 ? job.bf16_sums : job.sums)[static_cast<int>(k)];  // evaluated by Rebind
            const bool tied = p.pp > 1;  // HeldParams: a tied copy counts only then
            c.dense = b.dense + (tied ? b.tied_dense : 0);
            c.expert = b.expert + (tied ? b.tied_expert : 0);
            c.act = b.saved[static_cast<int>(p.recompute)];
            c.act_none = p.recompute != Recompute::none ? b.saved[static_cast<int>(Recompute::none)] : 0;
            c.done = true;
        }
        return c;
    };

    double act[64];  // per chunk; vstages beyond 64 fall back to the heap
    std::vector<double> act_heap;
    double* chunk_act = act;
    if (p.active_vstages() > 64) act_heap.assign(p.active_vstages(), 0), chunk_act = act_heap.data();
    // Parameters held, in the compute precision and (the layers kept in BF16) in 16 bits.
    double dense = 0, expert = 0, dense16 = 0, expert16 = 0, largest_block_bytes = 0, recompute_working = 0;
    for (int c = 0; c < p.active_vstages(); ++c) {
        chunk_act[c] = 0;
        StageBlockCounts n = BlockCountsOfVstage(job, PositionOf(p, c, stage));
        // `kept`: of those, the layers full recomputation's block method leaves alone (ParallelConfig::
        // recompute_layers), which keep every activation as without recomputation.
        auto add = [&](BlockKind k, int times, bool bf16, int kept = 0) {
            if (times <= 0) return;
            const KindCost& kc = cost(k, bf16);
            // whole bytes: exact as a block-by-block sum
            (bf16 ? dense16 : dense) += times * kc.dense, (bf16 ? expert16 : expert) += times * kc.expert;
            chunk_act[c] += (times - kept) * kc.act + kept * kc.act_none;
            largest_block_bytes = std::max(largest_block_bytes, (kc.dense + kc.expert) * WeightBytesOf(prec, bf16));
            // Recomputing a block in the backward brings back what its forward dropped, beside what it kept (already
            // in chunk_act): the working set is the difference. Counting the whole block here counted its kept
            // bytes twice (under selective recomputation nearly the whole layer).
            if (p.recompute != Recompute::none && times > kept)
                recompute_working = std::max(recompute_working, kc.act_none - kc.act);
        };
        for (BlockKind k : kStageBlockOrder) {
            const int i = static_cast<int>(k), twin = n.bf16[i];
            add(k, n.of(k) - twin, false, n.kept[i] - n.kept_bf16[i]);
            add(k, twin, true, n.kept_bf16[i]);
        }
    }
    // CPU activation offloading (pp = 1, one chunk, no recomputation: ValidateParallel): of the layers' activations,
    // what is on the GPU at the schedule's peak (parallel/offload_schedule.h); the first N layers' are in host memory
    // by the end of the forward.
    if (p.offload_layers > 0) {
        std::vector<double> bytes(static_cast<size_t>(job.model.layers));
        double all = 0;
        for (int l = 0; l < job.model.layers; ++l) {
            bytes[l] = cost(LayerBlockKind(job, l), job.model.bf16_layer(l)).act;
            all += bytes[l];
            if (l < p.offload_layers) mem.host_activations += bytes[l];
        }
        chunk_act[0] += OffloadResidentPeak(bytes, p.offload_layers) - all;
    }
    mem.params = dense + expert + dense16 + expert16;
    const double w = BytesOf(prec.compute), w16 = WeightBytesOf(prec, true), g = BytesOf(prec.grad);
    const double opt = (prec.master == prec.compute ? 0 : BytesOf(prec.master)) + 2 * BytesOf(prec.optimizer);
    auto sharded = [&](double d, double e, double bytes_per_param, bool shard) {
        return shard ? bytes_per_param * (d / dp_group + e / edp_group) : bytes_per_param * (d + e);
    };
    const bool z3 = p.zero >= 3;
    mem.weights =
        sharded(dense, expert, w, z3) + sharded(dense16, expert16, w16, z3) + (z3 ? 2 * largest_block_bytes : 0);
    mem.gradients = sharded(dense + dense16, expert + expert16, g, p.zero >= 2);
    mem.optimizer = sharded(dense + dense16, expert + expert16, opt, p.zero >= 1);

    InFlightPeak peak = PeakInFlight(p, stage, chunk_act);
    mem.peak_inflight = peak.inflight;
    mem.activations = peak.bytes + recompute_working;
    return mem;
}

}  // namespace sc
