#include "training/timeline.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>

#include "config/error.h"

#include "training/comm_model.h"
#include "training/compute_model.h"
#include "training/host_link.h"
#include "training/kernel_floor.h"

namespace sc {

namespace {

// A trace node's graph op name and layer: "L12.recompute.attn.out" is layer 12's "attn.out"; -1 for the embedding
// and the head, whose names carry no prefix.
struct NodeOp {
    std::string_view op;
    int layer = -1;
};
NodeOp NodeOpOf(std::string_view name) {
    NodeOp n{name, -1};
    const size_t dot = name.find('.');
    if (name.size() < 2 || name[0] != 'L' || dot == std::string_view::npos || dot < 2) return n;
    int layer = 0;
    for (size_t i = 1; i < dot; ++i) {
        if (name[i] < '0' || name[i] > '9') return n;
        layer = layer * 10 + (name[i] - '0');
    }
    n.layer = layer;
    n.op = name.substr(dot + 1);
    constexpr std::string_view kRecompute = "recompute.";
    if (n.op.starts_with(kRecompute)) n.op.remove_prefix(kRecompute.size());
    return n;
}

}  // namespace

std::vector<double> NodeSeconds(const Job& job, const StageProgram& prog, const System& sys,
                                const CalibrationTable* cal, const TrainingOptions& opt,
                                const TpOverlapKernels& kernels) {
    Layout layout(job.par);
    const AttentionShape attn = AttentionShapeOf(job);
    ComputeModel cm(sys.accelerator, job.model.precision.compute, cal, opt, attn);
    CommModel net(sys, layout, opt.in_network_reduction, cal, job.model.is_moe(), DeepEpMoe(job));
    // The estimate's per-kernel terms (TimeBlock in estimate.cpp), so a node's duration_micros is what the
    // estimate charges for it: the roofline, the measured fixed cost of a kernel and the SMs a userbuffers
    // overlap takes from a layer GEMM (beside the block's longest TP collective when it runs without margin).
    const KernelFloor floor = TrainingKernelFloor(cal, sys.accelerator);
    const UserbufferConfig* ub = UserbuffersOf(job, opt, kernels, cm.sm_count());
    double tp_collective[kBlockKinds] = {};  // of each layer kind, as the estimate's TimeBlock takes it
    if (ub)
        for (const Block& b : job.graph.blocks)
            if (IsLayer(b.kind) && !b.bf16)
                tp_collective[static_cast<int>(b.kind)] = LargestTpCollectiveSeconds(job, b, net);
    // CPU activation offloading's copies over the host link (the estimate's OffloadLinkOf).
    const OffloadLink host = job.par.offload_layers > 0 ? OffloadLinkOf(opt, cal, sys.accelerator) : OffloadLink{};
    std::vector<double> t(prog.nodes.size());
    for (size_t i = 0; i < prog.nodes.size(); ++i) {
        const ProgNode& n = prog.nodes[i];
        switch (n.type) {
            case EtNodeType::mem_store: t[i] = static_cast<double>(n.bytes) / (host.out_gbps * 1e9); break;
            case EtNodeType::mem_load: t[i] = static_cast<double>(n.bytes) / (host.in_gbps * 1e9); break;
            case EtNodeType::comp: {
                const bool forward = n.role != NodeRole::backward;
                const double flops = static_cast<double>(n.flops), bytes = static_cast<double>(n.bytes);
                // A windowed layer's attention core at the windowed efficiency (the estimate's window block kinds).
                const int layer =
                    attn.window > 0 && n.kind == OpKind::attention ? NodeOpOf(prog.names[n.name]).layer : -1;
                const bool windowed = layer >= 0 && job.model.windowed_layer(layer);
                double s = cm.Seconds(n.kind, flops, bytes, forward, n.groups, n.high_precision, windowed,
                                      GemmDims{n.gemm_m, n.gemm_n, n.gemm_k});
                const double fixed = KernelFloorExcess(floor, s, flops, bytes, cm.memory_bytes_per_s());
                if (ub && n.kind == OpKind::matmul) {
                    const NodeOp op = NodeOpOf(prog.names[n.name]);
                    const Pass pass = forward ? Pass::forward : Pass::backward;
                    const UserbufferOverlap* o = op.layer < 0 ? nullptr : UserbufferOverlapOf(n.kind, pass, op.op, *ub);
                    if (o)
                        s += CommSmSeconds(s, tp_collective[static_cast<int>(LayerBlockKind(job, op.layer))], *o,
                                           cm.sm_count());
                }
                t[i] = s + fixed;
                break;
            }
            case EtNodeType::comm_coll:
                t[i] = net.Seconds(n.coll, n.group,
                                   BufferBytesOf(n.coll, layout.GroupSize(n.group), static_cast<double>(n.comm_bytes)));
                break;
            case EtNodeType::comm_send:
            case EtNodeType::comm_recv: t[i] = net.P2PSeconds(static_cast<double>(n.comm_bytes)); break;
            default: t[i] = 0;
        }
    }
    return t;
}

namespace {

enum Stream { kMain, kSide, kSend, kAsync, kCopy, kStreams };

Stream StreamOf(const ProgNode& n) {
    if (n.type == EtNodeType::comm_send) return kSend;
    if (n.type == EtNodeType::mem_store || n.type == EtNodeType::mem_load) return kCopy;
    if (n.async) return kAsync;
    if (n.role == NodeRole::grad_sync && n.type == EtNodeType::comm_coll) return kSide;
    return kMain;
}

// A message between stages: the receiving stage and the tag (unique per microbatch, edge and direction).
uint64_t MessageKey(size_t stage, int32_t tag) {
    return (static_cast<uint64_t>(stage) << 32) | static_cast<uint32_t>(tag);
}

}  // namespace

std::vector<std::vector<TimedNode>> ReplayPipeline(const std::vector<const StageProgram*>& programs,
                                                   const std::vector<std::vector<double>>& seconds) {
    const size_t pp = programs.size();
    std::vector<std::vector<TimedNode>> out(pp);
    struct Cursor {
        size_t next = 0;
        double free[kStreams] = {};
    };
    std::vector<Cursor> cur(pp);
    for (size_t s = 0; s < pp; ++s) out[s].resize(programs[s]->nodes.size());
    std::unordered_map<uint64_t, double> posted;  // message -> when its send started
    // Each stage runs its program in order until a receive whose send is not yet posted; round-robin over
    // the stages until all are done. Sends never block, so a valid schedule always makes progress.
    for (bool progress = true; progress;) {
        progress = false;
        for (size_t s = 0; s < pp; ++s) {
            const StageProgram& prog = *programs[s];
            Cursor& c = cur[s];
            for (; c.next < prog.nodes.size(); ++c.next) {
                const size_t i = c.next;
                const ProgNode& n = prog.nodes[i];
                double ready = 0;
                for (uint32_t d = 0; d < n.dep_count; ++d) {
                    const TimedNode& p = out[s][prog.deps[n.dep_begin + d]];
                    ready = std::max(ready, p.start_us + p.dur_us);
                }
                if (n.type == EtNodeType::comm_recv) {
                    auto it = posted.find(MessageKey(s, n.tag));
                    if (it == posted.end()) break;  // its sender has not got there yet
                    ready = std::max(ready, it->second);
                    posted.erase(it);
                }
                double& free = c.free[StreamOf(n)];
                out[s][i].start_us = std::max(ready, free);
                out[s][i].dur_us = seconds[s][i] * 1e6;
                free = out[s][i].start_us + out[s][i].dur_us;
                if (n.type == EtNodeType::comm_send) {
                    const size_t to = (s + pp + n.peer) % pp;
                    posted[MessageKey(to, n.tag)] = out[s][i].start_us;
                }
                progress = true;
            }
        }
    }
    for (size_t s = 0; s < pp; ++s)
        if (cur[s].next < programs[s]->nodes.size())
            throw Error("schedule", "stage " + std::to_string(s) + " waits forever at node " +
                                        std::to_string(cur[s].next) + " (" +
                                        programs[s]->names[programs[s]->nodes[cur[s].next].name] + ")");
    return out;
}

std::vector<std::vector<TimedNode>> ReplayJob(const Job& job, const std::vector<const StageProgram*>& programs,
                                              const System& sys, const CalibrationTable* cal,
                                              const TrainingOptions& opt) {
    std::vector<std::vector<double>> seconds;
    for (const StageProgram* p : programs) seconds.push_back(NodeSeconds(job, *p, sys, cal, opt));
    return ReplayPipeline(programs, seconds);
}

double IdleFraction(const StageProgram& prog, const std::vector<TimedNode>& timeline) {
    double end = 0, busy = 0;
    for (size_t i = 0; i < timeline.size(); ++i) {
        end = std::max(end, timeline[i].start_us + timeline[i].dur_us);
        if (StreamOf(prog.nodes[i]) == kMain) busy += timeline[i].dur_us;
    }
    return end > 0 ? 1 - busy / end : 0;
}

std::vector<ChromeEvent> ChromeEventsOf(const StageProgram& prog, const std::vector<TimedNode>& timeline) {
    std::vector<ChromeEvent> ev;
    ev.reserve(prog.nodes.size());
    for (size_t i = 0; i < prog.nodes.size(); ++i) {
        const ProgNode& n = prog.nodes[i];
        ChromeEvent e;
        e.name = prog.names[n.name];
        e.start_us = timeline[i].start_us;
        e.dur_us = timeline[i].dur_us;
        switch (n.type) {
            case EtNodeType::comp:
                e.category = n.role == NodeRole::recompute   ? "recompute"
                             : n.role == NodeRole::optimizer ? "optimizer"
                                                             : "compute";
                e.args = {{"flops", n.flops}, {"bytes", static_cast<int64_t>(n.bytes)}};
                if (n.kind == OpKind::matmul && n.gemm_m > 0) {  // the shape it was timed at, and what that gives
                    char shape[96];
                    std::snprintf(shape, sizeof shape, "%.0f x %.0f x %.0f%s", n.gemm_m, n.gemm_n, n.gemm_k,
                                  n.groups > 1 ? (" x " + std::to_string(n.groups) + " groups").c_str() : "");
                    e.args.push_back({"gemm (m x n x k)", std::string(shape)});
                    if (timeline[i].dur_us > 0)
                        e.args.push_back({"tflops", static_cast<double>(n.flops) / (timeline[i].dur_us * 1e6)});
                }
                break;
            case EtNodeType::comm_coll:
                e.category = std::string("comm:") + NameOf(n.group);
                e.args = {{"collective", std::string(NameOf(n.coll))}, {"bytes", n.comm_bytes}};
                break;
            case EtNodeType::comm_send:
            case EtNodeType::comm_recv:
                e.category = n.type == EtNodeType::comm_send ? "send" : "recv";
                e.args = {{"bytes", n.comm_bytes},
                          {"tag", static_cast<int64_t>(n.tag)},
                          {"peer", std::string(n.peer > 0 ? "next stage" : "previous stage")}};
                break;
            case EtNodeType::mem_store:
            case EtNodeType::mem_load:
                e.category = "offload";
                e.args = {{"bytes", static_cast<int64_t>(n.bytes)},
                          {"direction", std::string(n.type == EtNodeType::mem_store ? "to host" : "to device")}};
                break;
            default: e.category = "other";
        }
        ev.push_back(std::move(e));
    }
    return ev;
}

}  // namespace sc
