// The symbolic tensor graph of a decoder-only transformer, per rank and per microbatch.
// Blocks (embedding, dense layer, MoE layer, head) are templates: a layer's ops appear once and
// the pipeline schedule instantiates them per layer. Every count is an Expr over the symbols of
// expr.h, including the parallel degrees tp/cp/ep, so one graph serves every layout of a family.
#pragma once
#include <string>
#include <vector>

#include "graph/expr.h"
#include "graph/recompute_modules.h"

namespace sc {

enum class OpKind : uint8_t {
    matmul,       // GEMM: 2*m*n*k FLOPs
    attention,    // causal QK^T and AV (fused, flash-style: no s^2 tensor stored)
    elementwise,  // norms, activations, residual adds, rotary, softmax/cross-entropy, router top-k
    gather,       // embedding lookup (forward) / scatter-add (backward)
    collective,   // communication within a parallel group
    scan,         // a state-space model's chunked scan (Mamba-2's SSD): its own measured kernel, an attention-class op
};

enum class Pass : uint8_t { forward, backward };

// Which communicator an op's collective runs on.
enum class Group : uint8_t { none, tp, cp, ep, dp, pp };
enum class Collective : uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all };

const char* NameOf(OpKind k);
const char* NameOf(Group g);
const char* NameOf(Collective c);

struct Op {
    std::string name;  // "attn.qkv", "mlp.fc1.dgrad", "tp.reduce_scatter" ...
    OpKind kind = OpKind::elementwise;
    Pass pass = Pass::forward;
    Expr flops;        // floating-point operations on one rank (multiply and add count as 2)
    Expr bytes;        // bytes read plus written by the op on one rank (tensor_size in the trace)
    Expr saved_bytes;  // forward only: bytes this op keeps for the backward pass (activation memory)
    // Forward only, Megatron's selective recomputation by module (graph/recompute_modules.h): the modules whose
    // recomputation re-runs this op in the backward, those that make all of saved_bytes unnecessary, and those
    // that make `part_bytes` of them unnecessary (the output of a module this op keeps as its input, as a GEMM
    // keeps a norm's output; or Q, K, V kept with the projection that made them).
    uint8_t rerun_modules = 0;
    uint8_t drop_all_modules = 0;
    uint8_t drop_part_modules = 0;
    Expr part_bytes;
    // Forward only, PyTorch's op-level selective activation checkpointing as torchtitan applies it
    // (Recompute::op): the share of this op re-run in the backward (1: everything but matmuls, SDPA, reduce-
    // scatters; a fused GEMM standing for several torch.mm calls: the ones the policy recomputes), and the bytes
    // of its output kept instead (the rest of the layer is rebuilt from its input).
    Expr sac_rerun;
    Expr sac_saved_bytes;
    // Forward only, outside the layers: re-run in the backward under full recomputation. A multi-token prediction
    // module's projection, layers and final norm, which Megatron-Core checkpoints whole (MultiTokenPredictionLayer.
    // _checkpointed_forward under recompute_granularity "full"); not its embedding lookup, LM head or loss. Under
    // selective recomputation its layers' modules are re-run as a layer's are (rerun_modules).
    bool mtp_rerun = false;
    // Matmuls only: independent GEMMs of equal size this op stands for (the local experts of a grouped
    // GEMM); its efficiency is that of one of them. Zero means one.
    Expr groups;
    // Matmuls only: the GEMM's shape, an m x k input times a k x n weight (all groups' rows in m; the backward's
    // input gradient is m x n times n x k, its weight gradient k x m times m x n). Unset: timed by FLOP count.
    Expr gemm_m, gemm_n, gemm_k;
    // Matmuls only: stays in 16-bit when the model trains in fp8 (Megatron-Core's output layer and MoE
    // router are plain PyTorch linears outside Transformer Engine's fp8_autocast).
    bool high_precision = false;
    // Backward matmuls only: computes a weight gradient (X^T dY), which zero-bubble schedules run apart from the
    // input gradient.
    bool weight_grad = false;
    // Collectives only: launched before the next op and waited for by the op after it, so it runs beside
    // the next op (Megatron overlaps SP's backward re-gather with the input-gradient GEMM).
    bool async = false;
    // Collectives only. Size convention (one for every type, see README): bytes of the whole buffer
    // as one rank sees it unsharded: the all-reduce buffer, the all-gather output, the reduce-scatter
    // input, the all-to-all send buffer.
    Group group = Group::none;
    Collective collective = Collective::all_reduce;
    Expr comm_bytes;
    // An MoE layer's expert all-to-all (moe.dispatch, moe.combine, forward and backward): where a pair of a forward
    // and a backward cuts a layer into windows (training/pair_windows.h, trace/stage_program.cpp).
    bool expert_all_to_all() const { return kind == OpKind::collective && group == Group::ep; }
};

// Kernels and pipeline exchange of the framework being modelled: they change which ops a layer runs or which nodes
// the trace holds (TrainingOptions::kernels carries
// them from the CLI and the page; the defaults describe a current Megatron-Core / NeMo run). The trace, the
// estimate and the timeline all read these ops, so none of them times a kernel the others do not see.
struct KernelChoices {
    // Fused attention (FlashAttention, cuDNN): the s x s scores never reach HBM and causal blocks are skipped.
    // false: Megatron-LM's pre-2023 "core attention" (Narayanan et al. 2021; Korthikanti et al. 2022; BLOOM;
    // MT-NLG): QK^T and AV as batched GEMMs over the whole s x s score matrix (the causal mask is applied
    // after), a fused scale-mask-softmax and a dropout that read and write it in HBM, and the softmax output,
    // dropout mask and dropout output (5 a s^2 b bytes per layer, Korthikanti et al. 2022 Sec. 4.1) kept for
    // the backward.
    bool flash_attention = true;
    // Dropout after attention and MLP (GPT-3 / Megatron-LM default 0.1; Llama-style runs use none), fused with
    // the residual add (Megatron-LM bias_dropout_add_fused_train): a one-byte mask per hidden element written
    // in the forward and kept for the backward (2 s b h per layer, Korthikanti et al. 2022 Sec. 4.1). The
    // attention-probability dropout is part of flash_attention=false.
    bool dropout = false;
    // Weight-gradient accumulation fused into the wgrad GEMM (Megatron --gradient-accumulation-fusion, 2022;
    // Transformer Engine): the GEMM adds into the gradient buffer in its epilogue. false: the GEMM writes a
    // fresh gradient and a separate pass adds it into the buffer for every microbatch (Megatron-LM 2021-22
    // DDP hook "param.main_grad.add_(param.grad.data)"; DeepSpeed's BF16 optimizer): per held parameter and
    // microbatch it reads the buffer and the gradient and writes the buffer. The trace emits that pass per
    // block (trace/stage_program.cpp), since which weights a rank holds depends on the pipeline split.
    bool grad_accumulation_fusion = true;
    // Pipeline "scatter/gather" (Narayanan et al. 2021 Sec. 4.1; on by default in Megatron-LM, and DeepSpeed's
    // pipe-partitioned activations): without sequence parallelism each TP rank sends 1/tp of the boundary
    // activation to the next stage over its own link and the receiving TP group all-gathers it (the trace's
    // `recv.*.tp_all_gather` nodes). Under sequence parallelism the boundary is already split.
    bool pp_scatter_gather = true;
    // Elementwise work as fused kernels (Megatron-Core / Transformer Engine, or torch.compile). false: PyTorch eager,
    // as torchtitan's Llama runs without torch.compile (torchtitan models/norms.py RMSNorm, models/llama/model.py
    // apply_rotary_emb, repeat_kv, FeedForward): RMSNorm as eight kernels through fp32 copies, rotary embedding through
    // fp32 complex views, GQA's K and V copied out to every query head, SwiGLU as silu then multiply; each
    // kernel one pass over HBM, and their backward as PyTorch's autograd formulas run them (transformer_ops.cpp).
    // LayerNorm and GeLU are single ATen kernels in eager too and do not change.
    bool fused_elementwise = true;
    // The MoE token dispatcher. false: Megatron-Core's all-to-all dispatcher (MoEAlltoAllTokenDispatcher), which
    // sends every (token, expert) pair to the expert's owner. true: DeepEP (deepseek-ai/DeepEP; Megatron-Core's
    // flex dispatcher, NeMo AutoModel's enable_deepep), whose dispatch layout sends a token once to each rank
    // holding one of its experts ("is_token_in_rank") and, across nodes, once over RDMA to each destination node
    // ("num_tokens_per_rdma_rank", to the GPU of the same index), which forwards it over NVLink. The graph's
    // dispatch and combine carry the per-rank copies (graph/moe_spread.h); the per-node sends beyond the
    // scale-up domain are the communication model's (training/comm_model.h).
    bool deepep_dispatch = false;
    // The MoE all-to-all's token-to-expert direction in FP8 (DeepSeek-V3, arXiv 2412.19437 Sec. 3.3.3: the
    // activations before the experts' up-projections and the gradients before their down-projections are quantized
    // to FP8 before dispatch; the combine, forward and backward, stays BF16). DeepEP's dispatch takes such input as
    // an FP8 tensor and one fp32 scale per 128 elements (deep_ep/buffer.py, Buffer.dispatch: scales of shape
    // [num_tokens, hidden // 128]): 1 + 4/128 bytes per element. So the dispatch's forward and the combine's
    // gradient carry FP8, the other two stay at the activation precision. The quantization pass itself is the
    // expert GEMM's FP8 input cast, which an FP8 model runs either way.
    bool fp8_dispatch = false;

    bool operator==(const KernelChoices&) const = default;
};

struct Weight {
    std::string name;
    Expr numel;           // whole model, all ranks together
    Expr numel_per_rank;  // after tensor / expert parallel sharding
    bool expert = false;  // routed-expert weight: its gradients reduce over the expert-data-parallel group
    bool tied = false;    // the LM head's copy of a tied embedding: held separately only when the head
                          // sits on another pipeline stage than the embedding (pp > 1)
};

// The window kinds are layers whose attention core is windowed (ModelConfig::window), otherwise the same as their
// full-attention kind; the hybrid kinds are a hybrid model's one-symbol layers (ModelConfig::hybrid: a Mamba-2
// mixer, attention alone, a dense MLP alone, an MoE alone). Appended so the older kinds keep their indices.
enum class BlockKind : uint8_t {
    embedding,
    dense_layer,
    moe_layer,
    head,
    dense_window_layer,
    moe_window_layer,
    mamba_layer,
    attention_layer,
    mlp_layer,
    moe_mlp_layer
};
inline constexpr int kBlockKinds = 10;
inline bool IsLayer(BlockKind k) { return k != BlockKind::embedding && k != BlockKind::head; }
const char* NameOf(BlockKind k);

struct Block {
    BlockKind kind;
    std::vector<Op> forward;   // in execution order
    std::vector<Op> backward;  // in execution order (input and weight gradients)
    std::vector<Weight> weights;
    Expr boundary_bytes;    // activation entering the block (what a pipeline stage sends; what full recompute keeps)
    Expr mtp_rerun_inputs;  // the head's: what its MTP modules keep under full recomputation (Op::mtp_rerun)
    // A layer kind's BF16 twin: the same layer with every GEMM in 16 bits and no quantization, for the layers an fp8
    // or fp4 model keeps in BF16 (ModelConfig::bf16_layer). Graph::Find never returns one; FindBf16 does.
    bool bf16 = false;
};

struct Graph {
    ExprPool pool;
    // embedding, dense_layer, [moe_layer], head, [dense_window_layer, moe_window_layer]; a hybrid model's:
    // embedding, head, then those of [mamba_layer, attention_layer, mlp_layer, moe_mlp_layer] its pattern uses;
    // then, for a model keeping layers in BF16, a BF16 twin of each layer kind (Block::bf16)
    std::vector<Block> blocks;
    int dense_layers = 0;  // how many times each layer template repeats
    int moe_layers = 0;
    int dense_window_layers = 0;
    int moe_window_layers = 0;
    int mamba_layers = 0, attention_layers = 0, mlp_layers = 0, moe_mlp_layers = 0;
    bool sequence_parallel = false;
    KernelChoices kernels;  // what it was built with; the estimate checks its options against them

    const Block* Find(BlockKind k) const {
        for (const Block& b : blocks)
            if (b.kind == k && !b.bf16) return &b;
        return nullptr;
    }
    const Block* FindBf16(BlockKind k) const {
        for (const Block& b : blocks)
            if (b.kind == k && b.bf16) return &b;
        return nullptr;
    }
    // The first layer block (a transformer's dense layer, else the first hybrid kind): what a layer hands the next
    // and what its TP collectives look like where one layer stands for all.
    const Block* FirstLayer() const {
        for (const Block& b : blocks)
            if (IsLayer(b.kind)) return &b;
        return nullptr;
    }
    int Repeats(BlockKind k) const {
        switch (k) {
            case BlockKind::dense_layer: return dense_layers;
            case BlockKind::moe_layer: return moe_layers;
            case BlockKind::dense_window_layer: return dense_window_layers;
            case BlockKind::moe_window_layer: return moe_window_layers;
            case BlockKind::mamba_layer: return mamba_layers;
            case BlockKind::attention_layer: return attention_layers;
            case BlockKind::mlp_layer: return mlp_layers;
            case BlockKind::moe_mlp_layer: return moe_mlp_layers;
            default: return 1;
        }
    }
};

}  // namespace sc
