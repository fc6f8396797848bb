// How a training job is split over GPUs: the degrees of every parallelism, the pipeline schedule,
// microbatching, recomputation and ZeRO, and the order in which dimensions are laid over ranks.
// The CLI form is "tp=8,pp=16,dp=256,microbatch=1,batch=1536,schedule=1f1b,..." (ParseParallelSpec).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "config/model_config.h"
#include "graph/recompute_modules.h"

namespace sc {

// zbh1: Qi et al. 2024, "Zero Bubble Pipeline Parallelism" (ICLR), the handcrafted ZB-H1 schedule: 1F1B with
// each backward split into the input gradient (B) and the weight gradient (W), stage i running its W i steps
// late, so every stage holds at most pp microbatches (1F1B's first-stage peak) and the deferred W's fill the
// drain: bubble (pp-1)(F + B - W) against 1F1B's (pp-1)(F + B + W).
// dualpipe: DeepSeek-AI 2024, "DeepSeek-V3 Technical Report" (arXiv:2412.19437) Sec. 3.2.1 and the public
// deepseek-ai/DualPipe schedule (dualpipe/dualpipe.py): the layers split into pp stages and rank i holds two of
// them, stage i (microbatches fed from rank 0) and stage pp-1-i (microbatches fed from rank pp-1), so every
// stage's parameters are held twice; half the microbatches run each way, and a forward of one chunk is paired
// with a backward of the other to overlap one's communication with the other's compute. Bubble
// (pp/2-1)(F&B + B - 3W) (Table 2; the estimate replays the steps instead, training/estimate.cpp ReplaysBubble).
// Needs pp even and an even number of microbatches, at least 2*pp.
// zbv: the zero-bubble V schedule (Qi et al. 2024, Sec. 6) as PyTorch builds it (torch.distributed.pipelining
// ScheduleZBVZeroBubble, which torchtitan runs): the layers cut into 2*pp stages, rank i holding stage i and stage
// 2*pp-1-i, so a microbatch goes down the ranks and back up (a V; the turn at rank pp-1 stays on it), each
// backward split into its input half and its weight half. One copy of the parameters, 1F1B's activation memory.
// Its bubble has no closed form for uneven stages: the estimate replays its steps (training/pipeline_replay.h).
// dualpipev: DualPipe cut in half (Sea AI Lab's "Cut-in-half"; deepseek-ai/DualPipe dualpipe/dualpipev.py,
// DualPipeV.step): ZB-V's placement (2*pp stages, rank i holding stages i and 2*pp-1-i, one copy of the
// parameters, every microbatch fed from rank 0 and its loss on rank 0) with DualPipe's order, its forward and
// backward chunks of the two arms paired to overlap one's communication with the other's compute. Bubble
// (pp-1)(F&B + B - 3W) per stage chunk (the repository's table: (PP/2-1)(F&B + B - 3W) for PP = 2*pp stages; the
// estimate replays the steps instead), 2*pp+1 chunk-microbatches of activations. Needs at least 2*pp microbatches.
// interleaved_zb: PyTorch's ScheduleInterleavedZeroBubble (torch.distributed.pipelining; torchtitan's
// "InterleavedZeroBubble"), the ZB1P schedule of Qi et al. 2024 over interleaved chunks: the chunks and microbatches
// of interleaved 1F1B, (vstages-1) pp + pp-1-i warm-up forwards on rank i, every backward split into its input half
// and its weight half, rank i running each weight half i ops after its input half and the rest in the drain.
// Needs pp >= 2, vstages >= 2 (2 unless given) and a multiple of pp microbatches; its bubble is a replay of its
// steps (training/pipeline_replay.h).
enum class Schedule { gpipe, one_f_one_b, interleaved, zbh1, dualpipe, zbv, dualpipev, interleaved_zb };
// Activation recomputation. selective and full: Megatron-LM's (Korthikanti et al. 2022): the attention core, or
// everything but each layer's input. op: PyTorch's op-level selective activation checkpointing with the policy
// torchtitan applies to each transformer block (`selective_ac_option = 'op'`, torchtitan
// parallelisms/parallelize_llama.py, 2024-25): the outputs of torch.mm (all but every second one in the block),
// of SDPA and of reduce-scatters are kept, every other op is re-run in the backward.
enum class Recompute { none, selective, full, op };

const char* NameOf(Schedule s);
const char* NameOf(Recompute r);
// The names NameOf gives, back; anything else is an sc::Error on `field` listing the valid names.
Schedule ParseSchedule(const std::string& field, const std::string& name);
Recompute ParseRecompute(const std::string& field, const std::string& name);

struct ParallelConfig {
    int tp = 1;          // tensor parallel (Megatron column/row split)
    int pp = 1;          // pipeline stages
    int dp = 1;          // data parallel replicas
    int cp = 1;          // context parallel (sequence split for attention, ring exchange of K/V)
    int ep = 1;          // expert parallel: folded over the stage's tp x cp x dp ranks (cp x dp when etp = tp)
    int etp = 1;         // expert tensor parallel: 1 (experts whole) or tp (each expert split over the TP group)
    bool sp = false;     // sequence parallel beside TP (Korthikanti et al. 2022)
    int microbatch = 1;  // sequences per microbatch
    int batch = 0;       // global batch in sequences; 0 means microbatch * dp (one microbatch)
    Schedule schedule = Schedule::one_f_one_b;
    int vstages = 1;  // model chunks per pipeline rank (interleaved 1F1B, interleaved_zb); 1 otherwise
    Recompute recompute = Recompute::none;
    // Under selective recomputation, Megatron's recompute_modules (graph/recompute_modules.h) as a mask; 0 means
    // its default, the attention core alone.
    uint8_t recompute_modules = 0;
    uint8_t selective_modules() const { return recompute_modules ? recompute_modules : kRecomputeCoreAttn; }
    // Under full recomputation, Megatron-Core's block method (--recompute-method block --recompute-num-layers N):
    // only the first N transformer layers of each model chunk recompute, the others keep their activations
    // (megatron/core/transformer/transformer_block.py _checkpointed_forward: "checkpoint the input activations of
    // only a set number of individual Transformer layers and skip the rest"). 0: every layer, the uniform method
    // with one layer a group (what recompute=full means alone). A chunk of fewer layers recomputes them all.
    int recompute_layers = 0;
    // Whether the transformer layer at `ordinal` (0 = the first of its model chunk) recomputes.
    bool recomputes_layer(int ordinal) const {
        return recompute != Recompute::none && (recompute_layers == 0 || ordinal < recompute_layers);
    }
    // Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm, megatron/core/pipeline_parallel/
    // combined_1f1b.py): in the 1F1B steady state the forward of one microbatch (or virtual microbatch) runs layer by
    // layer beside the backward of another, "EP A2A in forward step is hidden by the attention/mlp computation in the
    // backward step, and vice versa". It schedules one more warm-up forward before the steady state (schedules.py,
    // get_pp_rank_microbatches: "one extra micro-batch forward step before the 1f1b stages"), and Megatron-Core
    // accepts it only with expert parallelism, without full recomputation, and with interleaving when pp > 1.
    bool a2a_overlap = false;
    // Transformer Engine's CPU activation offloading as Megatron-Core runs it (--cpu-offloading-num-layers N,
    // activations only): the saved activations of the first N transformer layers go to host memory during the
    // forward and come back during the backward, on a copy stream beside the compute (parallel/offload_schedule.h).
    // Megatron-Core accepts it only without pipeline parallelism and without recomputation, and N below the layer
    // count. 0: none.
    int offload_layers = 0;
    // Whether Megatron-Core can offload this layout's activations, the layer count aside (ValidateParallel names the
    // rule a layout breaks); the search and the page ask it.
    bool offload_runs() const {
        return pp == 1 && schedule == Schedule::one_f_one_b && recompute == Recompute::none && !a2a_overlap;
    }
    // Whether Megatron-Core runs the EP all-to-all overlap on this layout of a model with MoE layers (`moe`) or
    // without: expert parallelism, no full recomputation, 1F1B, interleaved when pp > 1 (ValidateParallel names the
    // rule a layout breaks); the search asks it.
    bool a2a_overlap_runs(bool moe) const {
        return moe && ep > 1 && recompute != Recompute::full &&
               (pp == 1 ? schedule == Schedule::one_f_one_b : schedule == Schedule::interleaved);
    }
    int zero = 0;           // 0: plain DP, 1: optimizer state sharded, 2: + gradients, 3: + weights (FSDP)
    bool uneven = false;    // allow layer counts that pp*vstages does not divide (extra layers go to middle stages)
    double bucket_mb = 25;  // gradient bucket for the data-parallel reduction (PyTorch DDP's default, MiB)
    // Megatron-Core's pipeline layout (`layout=`, parallel/pipeline_layout.h): the transformer layers of each
    // pipeline position in model order, and the MTP modules it places with the loss; empty: the even split (or
    // uneven=1's).
    std::vector<int> layout;
    int layout_mtp = 0;
    std::string order = "tp-cp-dp-pp";  // rank layout, fastest-varying first, dash-separated
    int gpus = 0;                       // when set, must equal tp*cp*dp*pp

    int world() const { return tp * cp * dp * pp; }
    int global_batch() const { return batch > 0 ? batch : microbatch * dp; }
    int microbatches() const { return global_batch() / (microbatch * dp); }
    // Whether the layers are interleaved over the ranks (interleaved 1F1B, interleaved_zb): vstages chunks a rank,
    // chunk c of rank i being position c*pp + i.
    bool interleaved() const { return schedule == Schedule::interleaved || schedule == Schedule::interleaved_zb; }
    // Whether the layers are placed as a V (ZB-V, DualPipeV): 2*pp stages, rank i holding stages i and 2*pp-1-i.
    bool v_shape() const { return schedule == Schedule::zbv || schedule == Schedule::dualpipev; }
    // Model chunks each pipeline rank runs: vstages under the interleaved schedule, 2 under DualPipe (one per
    // direction) and the V schedules (the two arms of the V), 1 under the others.
    int active_vstages() const { return interleaved() ? vstages : schedule == Schedule::dualpipe || v_shape() ? 2 : 1; }
    // Whether the loss stage (final norm, LM head) is on the rank of the embedding: one stage, or a V, which ends
    // where it starts. A tied head or the MTP modules then read the rank's own table: no second copy, and no
    // gradient all-reduce between two.
    bool head_on_first_rank() const { return pp == 1 || v_shape(); }
    // Distinct layer ranges the pipeline is cut into: pp x vstages interleaved, 2 x pp as a V, pp otherwise
    // (DualPipe's two chunks per rank are two of the pp stages, each stage held by two ranks).
    int pipeline_positions() const { return pp * (interleaved() ? vstages : v_shape() ? 2 : 1); }
};

// Members of one data-parallel group of dense weights (dp x cp) and of expert weights. Expert layers fold
// the stage's tp x cp x dp ranks into etp x ep x edp (Megatron-Core "MoE parallel folding", Liu et al. 2025
// arXiv:2504.14960; megatron/core/parallel_state.py: expert_data_parallel_size = world_size /
// (expert_tensor_parallel_size x expert_model_parallel_size x pipeline_model_parallel_size)), so
// edp = tp x cp x dp / (etp x ep). ep need not divide dp: DeepSeek-V3 ran ep=64 over tp=2 x dp=32.
// Layout::GroupSize(dp / edp) gives the same.
inline int DataParallelSize(const ParallelConfig& p) { return p.dp * p.cp; }
// The stage's ranks an expert-parallel group is carved from (per TP position when experts are split over TP).
inline int ExpertFoldRanks(const ParallelConfig& p) { return (p.etp > 1 ? 1 : p.tp) * p.cp * p.dp; }
inline int ExpertDataParallelSize(const ParallelConfig& p) { return ExpertFoldRanks(p) / p.ep; }

// Parses "key=value,key=value". Unknown keys and malformed values throw sc::Error naming the key.
ParallelConfig ParseParallelSpec(std::string_view spec);
// recompute_modules' value ("mla_up_proj+layernorm") as a RecomputeModule mask, and back.
uint8_t ParseRecomputeModules(const std::string& field, const std::string& value);
std::string RecomputeModulesString(uint8_t mask);
std::string ParallelSpecString(const ParallelConfig& p);  // round-trips through ParseParallelSpec

// Checks the configuration against the model; each error names the constraint, e.g.
// "tp=3 does not divide 32 attention heads", "pp=7 does not divide 80 layers",
// "tp*cp*pp*dp = 4096 but 4000 GPUs were given".
void ValidateParallel(const ModelConfig& m, const ParallelConfig& p);

}  // namespace sc
