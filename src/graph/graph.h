// The symbolic tensor graph of a decoder-only transformer, per rank and per microbatch.
// Blocks (embedding, dense layer, MoE layer, head) are templates: a layer's ops appear once and
// the pipeline schedule instantiates them per layer. Every count is an Expr over the symbols of
// expr.h, including the parallel degrees tp/cp/ep, so one graph serves every layout of a family.
#pragma once
#include <string>
#include <vector>

#include "graph/expr.h"

namespace sc {

enum class OpKind : uint8_t {
    matmul,       // GEMM: 2*m*n*k FLOPs
    attention,    // causal QK^T and AV (fused, flash-style: no s^2 tensor stored)
    elementwise,  // norms, activations, residual adds, rotary, softmax/cross-entropy, router top-k
    gather,       // embedding lookup (forward) / scatter-add (backward)
    collective,   // communication within a parallel group
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
    Expr flops;              // floating-point operations on one rank (multiply and add count as 2)
    Expr bytes;              // bytes read plus written by the op on one rank (tensor_size in the trace)
    Expr saved_bytes;        // forward only: bytes this op keeps for the backward pass (activation memory)
    bool selective = false;  // part of what selective recomputation drops and recomputes (attention core)
    // Matmuls only: independent GEMMs of equal size this op stands for (the local experts of a grouped
    // GEMM); its efficiency is that of one of them. Zero means one.
    Expr groups;
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
};

struct Weight {
    std::string name;
    Expr numel;           // whole model, all ranks together
    Expr numel_per_rank;  // after tensor / expert parallel sharding
    bool expert = false;  // routed-expert weight: its gradients reduce over the expert-data-parallel group
    bool tied = false;    // the LM head's copy of a tied embedding: held separately only when the head
                          // sits on another pipeline stage than the embedding (pp > 1)
};

enum class BlockKind : uint8_t { embedding, dense_layer, moe_layer, head };
const char* NameOf(BlockKind k);

struct Block {
    BlockKind kind;
    std::vector<Op> forward;   // in execution order
    std::vector<Op> backward;  // in execution order (input and weight gradients)
    std::vector<Weight> weights;
    Expr boundary_bytes;  // activation entering the block (what a pipeline stage sends; what full recompute keeps)
};

struct Graph {
    ExprPool pool;
    std::vector<Block> blocks;  // embedding, dense_layer, [moe_layer], head
    int dense_layers = 0;       // how many times each layer template repeats
    int moe_layers = 0;
    bool sequence_parallel = false;

    const Block* Find(BlockKind k) const {
        for (const Block& b : blocks)
            if (b.kind == k) return &b;
        return nullptr;
    }
    int Repeats(BlockKind k) const {
        return k == BlockKind::dense_layer ? dense_layers : k == BlockKind::moe_layer ? moe_layers : 1;
    }
};

}  // namespace sc
