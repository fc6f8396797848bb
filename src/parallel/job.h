// A model and its parallel split, with the symbolic graph built and evaluated once: the input of
// traces, summaries, memory and the training estimate.
#pragma once
#include <algorithm>
#include <vector>

#include "config/gemm_grid.h"
#include "config/model_config.h"
#include "graph/graph.h"
#include "parallel/layout.h"
#include "parallel/parallel_config.h"

namespace sc {

// Per-block totals that depend only on the evaluated values (Rebind fills them; memory's hot path reads them).
struct BlockSums {
    double saved[4] = {0, 0, 0, 0};          // SavedActivationBytes under Recompute none, selective, full, op
    double dense = 0, expert = 0;            // parameters per rank of the block's untied weights
    double tied_dense = 0, tied_expert = 0;  // of its tied weights (held only when pp > 1, see HeldParams)
};

struct Job {
    ModelConfig model;
    ParallelConfig par;
    Graph graph;
    std::vector<double> values;        // graph.pool evaluated for this split: values[e.id]
    double padded_vocab = 0;           // vocabulary padded to a multiple of tp (Megatron pads to 128*tp)
    double model_flops_per_token = 0;  // ModelStats of the unsplit model: matmul + attention, fwd + bwd
    BlockSums sums[kBlockKinds];       // by BlockKind, for the current values
    BlockSums bf16_sums[kBlockKinds];  // the same for each kind's BF16 twin (Block::bf16), where the model has one

    double V(Expr e) const { return values[e.id]; }
    // Layer ranges the pipeline is cut into (pp x vstages interleaved, pp otherwise), numbered by PositionOf.
    int total_vstages() const { return par.pipeline_positions(); }
};

// Validates model and split (throws sc::Error naming the constraint) and evaluates the graph, built with the
// framework's kernel choices (TrainingOptions::kernels; the default: fused attention, no dropout, fused
// gradient accumulation).
Job MakeJob(const ModelConfig& m, const ParallelConfig& p, const KernelChoices& kernels = {});

// Re-evaluates the graph of `job` for another microbatch size or degrees without rebuilding it
// (structural options, like sequence parallelism, must be unchanged).
void Rebind(Job& job, const ParallelConfig& p);

// The MoE whose expert all-to-all DeepEP sends (KernelChoices::deepep_dispatch), for the communication model;
// nullptr for Megatron-Core's all-to-all dispatcher or a dense model.
inline const MoeConfig* DeepEpMoe(const Job& job) {
    return job.graph.kernels.deepep_dispatch && job.model.is_moe() ? &job.model.moe : nullptr;
}

// Parameters of `w` held by one rank (0 for a tied head copy when the embedding is on the same stage).
double HeldParams(const Job& job, const Weight& w);

// Parameters of block `b` held by one rank that feed fp8 GEMMs: the weights of matmuls not kept in 16 bits
// (QKV, output, MLP, experts; not embeddings, norms, the LM head or the router), which Transformer Engine
// quantizes into fp8 copies (training/fp8_overheads.h). 0 when the model's GEMMs are not in fp8.
double Fp8GemmWeightParams(const Job& job, const Block& b);
// Bytes per weight element of one such quantization under the model's scaling recipe: under delayed scaling read
// the 16-bit weight (2), write its fp8 copy (1) and the transposed copy (1) (training/fp8_overheads.h,
// config/quantization.h).
double Fp8WeightCastBytesPerParam(const Job& job);

// Bytes per held parameter of one unfused gradient accumulation (KernelChoices::grad_accumulation_fusion = false):
// read the gradient buffer and write it back (grad width each) and read the fresh gradient the weight-gradient
// GEMM wrote (compute width).
inline double GradAccumulationBytesPerParam(const PrecisionConfig& p) {
    return 2 * BytesOf(p.grad) + BytesOf(p.compute);
}

// The share of forward op `op` of a layer block that runs again before its backward under the job's recomputation:
// all of it (full), the attention core (selective), what op-level checkpointing's policy re-runs (op:
// Op::sac_rerun), nothing (none). The estimate and the trace's `recompute.` nodes both read it.
double RecomputeShare(const Job& job, const Op& op);
// The same for an op of any block: a layer's by RecomputeShare; outside the layers, only an MTP module's
// checkpointed part (Op::mtp_rerun), whole under full recomputation, by module under selective.
double RecomputeShareIn(const Job& job, bool layer, const Op& op);

// What EstimateTraining and SnapshotTrace say when a job's graph was built with other kernel choices than the
// options'.
constexpr const char* kKernelChoicesDiffer =
    "the kernel choices (flash_attention, dropout, grad_accumulation_fusion, fused_elementwise, pp_scatter_gather, "
    "deepep_dispatch, fp8_dispatch) "
    "differ from the ones the job's graph was built with: build it with MakeJob(model, parallel, options.kernels)";

// The blocks of virtual stage g, in forward order, each with its first layer index (for names).
struct StageBlock {
    const Block* block;
    int layer;  // global layer index, -1 for embedding and head
};
std::vector<StageBlock> BlocksOfVstage(const Job& job, int g);
// The block kind of layer l (0-based): a hybrid model's by its symbol, else dense or MoE, windowed or not.
BlockKind LayerBlockKind(const Job& job, int l);

// The same blocks counted instead of listed (no allocation; the hot path of memory and search): in forward
// order the embedding (if any), the dense layers, the MoE layers, the head (if any). Of the layers, the windowed
// ones (dense_window, moe_window) are counted apart: their kinds' blocks time and hold them (the two kinds
// interleave by layer index; BlocksOfVstage lists them in order).
struct StageBlockCounts {
    bool embedding = false, head = false;
    int first_layer = 0, dense = 0, moe = 0, dense_window = 0, moe_window = 0;
    int mamba = 0, attention = 0, mlp = 0, moe_mlp = 0;  // a hybrid model's one-symbol layers
    // Of the layers counted above, by BlockKind, those the model keeps in BF16 (ModelConfig::bf16_layer): their
    // kind's BF16 twin times and holds them.
    int bf16[kBlockKinds] = {};
    // Of the layers counted above, by BlockKind, those that keep their activations under full recomputation's
    // block method (ParallelConfig::recompute_layers: every layer of the chunk after its first N), and of those the
    // BF16 ones. Zero unless the method is in use.
    int kept[kBlockKinds] = {}, kept_bf16[kBlockKinds] = {};
    int layers() const { return dense + moe + dense_window + moe_window + mamba + attention + mlp + moe_mlp; }
    int of(BlockKind k) const {
        switch (k) {
            case BlockKind::embedding: return embedding ? 1 : 0;
            case BlockKind::head: return head ? 1 : 0;
            case BlockKind::dense_layer: return dense;
            case BlockKind::moe_layer: return moe;
            case BlockKind::dense_window_layer: return dense_window;
            case BlockKind::moe_window_layer: return moe_window;
            case BlockKind::mamba_layer: return mamba;
            case BlockKind::attention_layer: return attention;
            case BlockKind::mlp_layer: return mlp;
            case BlockKind::moe_mlp_layer: return moe_mlp;
        }
        return 0;
    }
};
StageBlockCounts BlockCountsOfVstage(const Job& job, int g);
// The order the estimate and the memory model add a stage's block kinds in: the embedding first, the head last (a
// fixed order keeps their sums the same from run to run).
inline constexpr BlockKind kStageBlockOrder[] = {
    BlockKind::embedding,        BlockKind::dense_layer, BlockKind::moe_layer,       BlockKind::dense_window_layer,
    BlockKind::moe_window_layer, BlockKind::mamba_layer, BlockKind::attention_layer, BlockKind::mlp_layer,
    BlockKind::moe_mlp_layer,    BlockKind::head};

// One GEMM of a matmul op on this job's values (Op::gemm_m/n/k; unknown when unset): a grouped op's rows are its
// groups' together, so one group's GEMM has m / groups of them; `share` of a fused GEMM re-run (op-level
// checkpointing) is that share of its output width. The estimate and the trace time a matmul with it.
inline GemmDims GemmDimsOf(const Job& job, const Op& op, double share = 1.0) {
    const double groups = std::max(1.0, job.V(op.groups));
    return {job.V(op.gemm_m) / groups, share * job.V(op.gemm_n), job.V(op.gemm_k)};
}

// True when Rebind(job, b) would produce the same values as Rebind(job, a): the graph's symbols bind only
// microbatch, tp, cp and ep (and the vocabulary padded to tp). A sweep over the other knobs (pp, dp,
// schedule, recompute, ZeRO, ...) may then validate and set job.par without re-evaluating.
inline bool SameBinding(const ParallelConfig& a, const ParallelConfig& b) {
    return a.microbatch == b.microbatch && a.tp == b.tp && a.cp == b.cp && a.ep == b.ep;
}

}  // namespace sc
