// Emits the ops of one graph block at a time: GEMMs with their fp8 casts and backward GEMMs, elementwise and
// eager-PyTorch kernels, collectives (Megatron's conjugate TP pairs around a tensor-parallel region, the MoE
// all-to-alls), weights, and the tags of op-level checkpointing and of Megatron's recompute modules. What a layer
// is made of is the transformer builder's business (transformer_builder.h); how an op is costed and kept is this
// file's.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace sc {

struct OpBuilder {
    Graph& g;
    ExprPool& p;
    Block* blk = nullptr;
    std::vector<std::vector<Op>> pending;  // backward ops of each forward op, emitted in reverse
    std::optional<Op> regather;            // SP: the backward all-gather of the shard the next GEMM keeps
    int torch_mms = 0;                     // torch.mm calls of the block so far (op-level checkpointing's count)
    uint8_t rerun_scope = 0;               // recompute modules re-running every forward op made now (RerunScope)
    bool mtp_rerun_scope = false;          // forward ops made now are an MTP module's checkpointed part
    // The next Matmul's input is a tensor an earlier GEMM of the block already keeps (SharedInput).
    bool input_kept_already = false;
    // Building a layer kind's BF16 twin (Block::bf16): every GEMM in 16 bits, no quantization passes.
    bool bf16_twin = false;
    // Modules whose GEMMs stay in 16 bits (PrecisionConfig::bf16_modules), and those the ops made now belong to
    // (the builder's ModuleScope; an MTP module's ops belong to it and to their own).
    uint8_t bf16_modules = 0, module = 0;
    // Whether the GEMMs made now run narrow when the model's do.
    bool Narrow() const { return !bf16_twin && !(module & bf16_modules); }

    SymExpr S(Sym s) { return {&p, p.Symbol(s)}; }
    SymExpr C(double c) { return {&p, p.Const(c)}; }
    SymExpr Zero() { return C(0); }
    // 1 when the GEMMs made now run in fp8 or fp4 (the symbol q8), 0 in a BF16 twin or a module kept in BF16.
    SymExpr Q8() { return Narrow() ? S(Sym::q8) : Zero(); }

    void Begin(BlockKind kind, SymExpr boundary) {
        g.blocks.push_back(Block{kind, {}, {}, {}, boundary.e, {}, bf16_twin});
        blk = &g.blocks.back();
        pending.clear();
        regather.reset();
        torch_mms = 0;
    }
    void End() {
        for (auto it = pending.rbegin(); it != pending.rend(); ++it)
            for (Op& op : *it) blk->backward.push_back(std::move(op));
        pending.clear();
    }

    Op MakeOp(std::string name, OpKind kind, Pass pass, SymExpr flops, SymExpr bytes) {
        Op op;
        op.name = std::move(name);
        op.kind = kind;
        op.pass = pass;
        op.flops = flops.e;
        op.bytes = bytes.e;
        op.saved_bytes = Expr{};
        op.comm_bytes = Expr{};
        // Op-level checkpointing re-runs what its save list does not name (matmuls and SDPA say otherwise below).
        op.sac_rerun = (pass == Pass::forward ? C(1) : Zero()).e;
        if (pass == Pass::forward) op.rerun_modules = rerun_scope, op.mtp_rerun = mtp_rerun_scope;
        return op;
    }

    // Megatron's recompute modules (graph/recompute_modules.h), on the forward op made last: recomputing a module
    // of `modules` drops all it keeps, or the input it keeps (a GEMM's input: the whole of saved_bytes then, before
    // anything is added to them).
    void DropAll(uint8_t modules) { blk->forward.back().drop_all_modules |= modules; }
    void DropInput(uint8_t modules) {
        Op& op = blk->forward.back();
        op.drop_part_modules |= modules;
        op.part_bytes = op.saved_bytes;
    }

    // Op-level checkpointing of a GEMM that stands for torch.mm calls with outputs `widths` wide (one per nn.Linear
    // it fuses, in the order the model calls them) over `rows` rows: torchtitan's policy keeps every mm's output but
    // every second one's of the block (`_custom_policy`: "Saves output of all compute ops, except every second mm"),
    // which is re-run in the backward.
    void CheckpointTorchMms(Op& op, SymExpr rows, std::initializer_list<SymExpr> widths) {
        SymExpr all = Zero(), rerun = Zero(), kept = Zero();
        for (const SymExpr& width : widths) {
            all = all + width;
            if (++torch_mms % 2 == 0) rerun = rerun + width;
            else kept = kept + width;
        }
        op.sac_rerun = (rerun / all).e;
        op.sac_saved_bytes = (rows * kept * S(Sym::w)).e;
    }

    // Set while building a module whose weights another module already holds (MTP depths sharing one layer).
    bool weights_held_elsewhere = false;
    void Weight(const std::string& name, SymExpr numel, SymExpr per_rank, bool expert = false, bool tied = false) {
        if (weights_held_elsewhere) return;
        blk->weights.push_back({name, numel.e, per_rank.e, expert, tied});
    }

    // How a GEMM's input reaches it when GEMMs run in fp8 or fp4 (Transformer Engine): written by the norm of a
    // LayerNormLinear (`fused`: under some recipes the norm quantizes its output itself), or as a 16-bit tensor
    // the linear module quantizes (`cast`). What each costs is in config/quantization.h. high_precision: the GEMM
    // is outside fp8_autocast and runs in 16 bits.
    enum class Fp8Input { fused, cast, high_precision };

    static void SetGemmDims(Op& op, const SymExpr& m, const SymExpr& n, const SymExpr& k) {
        op.gemm_m = m.e, op.gemm_n = n.e, op.gemm_k = k.e;
    }

    // Y[m x n] = X[m x k] * W[k x n]. Saves X for the weight gradient: `saved_rows` of its m rows. Under
    // sequence parallelism the input of the first GEMM after the TP all-gather is kept as this rank's
    // s/tp shard and all-gathered again in the backward, overlapped with the input-gradient GEMM and
    // waited for by the weight-gradient GEMM (Korthikanti et al. 2022 Sec. 4.2.2; Megatron's
    // LinearWithGradAccumulationAndAsyncCommunication): the region's pending re-gather (TpEnter) goes with
    // the first GEMM that keeps the shard. `groups`: that many equal GEMMs (a grouped expert GEMM).
    // Under fp8 or fp4 (q8 = 1) two more memory passes go with it: the input's quantization before the forward
    // GEMM and the output gradient's before the input-gradient GEMM, at the recipe's bytes per element (symbols
    // qn, qc, qg; config/quantization.h: under delayed scaling 1 for an input a norm writes in fp8 itself, 4 for a
    // cast_transpose). The input a narrow GEMM keeps for its weight gradient is the quantized
    // copy (qs bytes an element: 1 in fp8): Transformer Engine's linear modules save `inputmat` after quantizing
    // it, keeping only its columnwise data ("Discard row-wise data since it is not needed in backward pass";
    // NVIDIA/TransformerEngine transformer_engine/pytorch/module/linear.py, as grouped_linear.py and
    // layernorm_linear.py do with theirs).
    // `torch_mms`: the output widths of the nn.Linear calls this GEMM fuses, for op-level checkpointing (empty: one
    // of width n; a grouped expert GEMM is no torch.mm and is re-run).
    void Matmul(const std::string& name, SymExpr m, SymExpr n, SymExpr k, const SymExpr* saved_rows = nullptr,
                const SymExpr* groups = nullptr, Fp8Input in = Fp8Input::fused,
                std::initializer_list<SymExpr> torch_mms = {}) {
        SymExpr w = S(Sym::w), q8 = S(Sym::q8);
        SymExpr flops = 2.0 * m * n * k;
        SymExpr bytes = (m * k + (groups ? *groups : C(1)) * k * n + m * n) * w;
        const bool fp8 = in != Fp8Input::high_precision && Narrow();
        if (fp8) {
            const Sym quant = in == Fp8Input::cast ? Sym::qc : Sym::qn;
            blk->forward.push_back(
                MakeOp(name + ".fp8_input", OpKind::elementwise, Pass::forward, q8 * m * k, S(quant) * m * k));
        }
        Op fwd = MakeOp(name, OpKind::matmul, Pass::forward, flops, bytes);
        SetGemmDims(fwd, m, n, k);
        if (groups) fwd.groups = groups->e;
        fwd.high_precision = !fp8;
        SymExpr qs = S(Sym::qs);
        SymExpr saved_w = fp8 ? w + q8 * (-1.0 * w) + qs : w;  // qs bytes under fp8/fp4 (q8 = 1), else w
        // A 16-bit input another GEMM already keeps is one tensor to autograd, saved once: this GEMM keeps only its
        // own quantized copy, if it runs narrow.
        if (input_kept_already) saved_w = fp8 ? qs : Zero();
        input_kept_already = false;
        fwd.saved_bytes = ((saved_rows ? *saved_rows : m) * k * saved_w).e;
        if (!groups) CheckpointTorchMms(fwd, m, torch_mms.size() ? torch_mms : std::initializer_list<SymExpr>{n});
        blk->forward.push_back(fwd);
        std::vector<Op> back;
        if (fp8)
            back.push_back(
                MakeOp(name + ".fp8_grad_cast", OpKind::elementwise, Pass::backward, q8 * m * n, S(Sym::qg) * m * n));
        if (saved_rows && regather) {  // launched first, overlapped with the input gradient
            back.push_back(*regather);
            back.back().async = true;
            regather.reset();
        }
        back.push_back(MakeOp(name + ".dgrad", OpKind::matmul, Pass::backward, flops, bytes));
        SetGemmDims(back.back(), m, k, n);
        back.back().groups = fwd.groups;
        back.back().high_precision = fwd.high_precision;
        back.push_back(MakeOp(name + ".wgrad", OpKind::matmul, Pass::backward, flops, bytes));
        SetGemmDims(back.back(), k, n, m);
        back.back().groups = fwd.groups;
        back.back().high_precision = fwd.high_precision;
        back.back().weight_grad = true;
        pending.push_back(std::move(back));
    }

    // An elementwise op over `elems` elements: `fpe` FLOPs each, reading `reads` and writing one tensor
    // of that size; saves `saved_elems` for backward. Backward costs twice the FLOPs and one more read.
    void Elementwise(const std::string& name, SymExpr elems, double fpe, double reads, SymExpr saved_elems) {
        SymExpr w = S(Sym::w);
        Op fwd = MakeOp(name, OpKind::elementwise, Pass::forward, fpe * elems, (reads + 1) * elems * w);
        fwd.saved_bytes = (saved_elems * w).e;
        blk->forward.push_back(fwd);
        pending.push_back(
            {MakeOp(name + ".grad", OpKind::elementwise, Pass::backward, 2 * fpe * elems, (reads + 2) * elems * w)});
    }

    // One kernel of PyTorch eager (KernelChoices::fused_elementwise = false): `bytes` read and written per element
    // of `elems` (fp32 intermediates at 4), one FLOP each (a trace's compute node needs some: README "Conventions").
    struct EagerKernel {
        const char* name;
        SymExpr elems;
        SymExpr bytes;
    };
    // A module run as eager kernels: the forward ones (the first keeps `saved` bytes for the backward) and the ones
    // autograd runs for their backward, in that order.
    void Eager(const std::string& name, const std::vector<EagerKernel>& fwd, SymExpr saved,
               const std::vector<EagerKernel>& bwd) {
        for (size_t i = 0; i < fwd.size(); ++i) {
            Op op = MakeOp(name + "." + fwd[i].name, OpKind::elementwise, Pass::forward, fwd[i].elems,
                           fwd[i].elems * fwd[i].bytes);
            if (i == 0) op.saved_bytes = saved.e;
            blk->forward.push_back(op);
        }
        std::vector<Op> back;
        for (const EagerKernel& k : bwd)
            back.push_back(
                MakeOp(name + "." + k.name, OpKind::elementwise, Pass::backward, k.elems, k.elems * k.bytes));
        pending.push_back(std::move(back));
    }

    // An op with its own forward and backward costs and the bytes it keeps for backward (`saved`).
    void Custom(const std::string& name, OpKind kind, SymExpr fwd_flops, SymExpr fwd_bytes, SymExpr saved,
                SymExpr bwd_flops, SymExpr bwd_bytes) {
        Op fwd = MakeOp(name, kind, Pass::forward, fwd_flops, fwd_bytes);
        fwd.saved_bytes = saved.e;
        blk->forward.push_back(fwd);
        pending.push_back({MakeOp(name + ".grad", kind, Pass::backward, bwd_flops, bwd_bytes)});
    }

    Op Comm(const std::string& name, Pass pass, Group group, Collective c, SymExpr bytes) {
        Op op = MakeOp(name, OpKind::collective, pass, Zero(), Zero());
        op.group = group;
        op.collective = c;
        op.comm_bytes = bytes.e;
        // Op-level checkpointing keeps reduce-scatter outputs; context parallelism's K/V exchange runs inside SDPA,
        // whose output is kept. Other collectives (all-gather, all-reduce, all-to-all) are re-run.
        if (pass == Pass::forward && (c == Collective::reduce_scatter || group == Group::cp)) op.sac_rerun = Zero().e;
        if (pass == Pass::forward && c == Collective::reduce_scatter && group == Group::tp)
            op.sac_saved_bytes = (bytes / S(Sym::tp)).e;  // this rank's share of the scattered buffer
        return op;
    }

    // Megatron's conjugate pair around a tensor-parallel region, on activations of `elems` elements
    // (the full, unsharded token count). Entering: identity forward / all-reduce backward, or with SP
    // all-gather forward / reduce-scatter backward. Leaving: the mirror image.
    void TpEnter(const std::string& name, SymExpr elems) {
        SymExpr bytes = elems * S(Sym::w);
        if (g.sequence_parallel) {
            blk->forward.push_back(
                Comm(name + ".tp_all_gather", Pass::forward, Group::tp, Collective::all_gather, bytes));
            pending.push_back(
                {Comm(name + ".tp_reduce_scatter", Pass::backward, Group::tp, Collective::reduce_scatter, bytes)});
            regather =
                Comm(name + ".tp_all_gather_saved_input", Pass::backward, Group::tp, Collective::all_gather, bytes);
        } else {
            pending.push_back(
                {Comm(name + ".tp_all_reduce", Pass::backward, Group::tp, Collective::all_reduce, bytes)});
        }
    }
    void TpLeave(const std::string& name, SymExpr elems) {
        SymExpr bytes = elems * S(Sym::w);
        if (g.sequence_parallel) {
            blk->forward.push_back(
                Comm(name + ".tp_reduce_scatter", Pass::forward, Group::tp, Collective::reduce_scatter, bytes));
            pending.push_back(
                {Comm(name + ".tp_all_gather", Pass::backward, Group::tp, Collective::all_gather, bytes)});
        } else {
            blk->forward.push_back(
                Comm(name + ".tp_all_reduce", Pass::forward, Group::tp, Collective::all_reduce, bytes));
            pending.push_back({});
        }
    }
    // A collective whose forward and backward are the same kind (e.g. the MoE all-to-alls).
    void CommBoth(const std::string& name, Group group, Collective fwd_c, Collective bwd_c, SymExpr bytes) {
        CommBoth(name, group, fwd_c, bwd_c, bytes, bytes);
    }
    // The same with the backward's buffer of its own size (a direction sent in another format).
    void CommBoth(const std::string& name, Group group, Collective fwd_c, Collective bwd_c, SymExpr fwd_bytes,
                  SymExpr bwd_bytes) {
        blk->forward.push_back(Comm(name, Pass::forward, group, fwd_c, fwd_bytes));
        pending.push_back({Comm(name + ".grad", Pass::backward, group, bwd_c, bwd_bytes)});
    }
};

}  // namespace sc
