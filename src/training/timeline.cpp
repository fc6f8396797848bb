#include "training/timeline.h"

#include <algorithm>

#include "training/comm_model.h"
#include "training/compute_model.h"

namespace sc {

std::vector<double> NodeSeconds(const Job& job, const StageProgram& prog, const System& sys, const CalibrationTable* cal,
                                const TrainingOptions& opt) {
    Layout layout(job.par);
    ComputeModel cm(sys.accelerator, job.model.precision.compute, cal, opt);
    CommModel net(sys, layout, opt.in_network_reduction, cal);
    std::vector<double> t(prog.nodes.size());
    for (size_t i = 0; i < prog.nodes.size(); ++i) {
        const ProgNode& n = prog.nodes[i];
        switch (n.type) {
            case EtNodeType::comp: t[i] = cm.Seconds(n.kind, static_cast<double>(n.flops), static_cast<double>(n.bytes)); break;
            case EtNodeType::comm_coll: t[i] = net.Seconds(n.coll, n.group, static_cast<double>(n.comm_bytes)); break;
            case EtNodeType::comm_send:
            case EtNodeType::comm_recv: t[i] = net.P2PSeconds(static_cast<double>(n.comm_bytes)); break;
            default: t[i] = 0;
        }
    }
    return t;
}

std::vector<TimedNode> ReplayStage(const StageProgram& prog, const std::vector<double>& seconds) {
    std::vector<TimedNode> out(prog.nodes.size());
    double main_free = 0, sync_free = 0, send_free = 0;
    for (size_t i = 0; i < prog.nodes.size(); ++i) {
        const ProgNode& n = prog.nodes[i];
        double ready = 0;
        for (uint32_t d = 0; d < n.dep_count; ++d) {
            const TimedNode& p = out[prog.deps[n.dep_begin + d]];
            ready = std::max(ready, p.start_us + p.dur_us);
        }
        double* stream = &main_free;
        if (n.type == EtNodeType::comm_send) stream = &send_free;
        else if (n.role == NodeRole::grad_sync && n.type == EtNodeType::comm_coll &&
                 n.name < prog.names.size() && prog.names[n.name].find("zero3") == std::string::npos)
            stream = &sync_free;
        out[i].start_us = std::max(ready, *stream);
        out[i].dur_us = seconds[i] * 1e6;
        *stream = out[i].start_us + out[i].dur_us;
    }
    return out;
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
                e.category = n.role == NodeRole::recompute ? "recompute" : n.role == NodeRole::optimizer ? "optimizer" : "compute";
                e.args = {{"flops", n.flops}, {"bytes", static_cast<int64_t>(n.bytes)}};
                break;
            case EtNodeType::comm_coll:
                e.category = std::string("comm:") + NameOf(n.group);
                e.args = {{"collective", std::string(NameOf(n.coll))}, {"bytes", n.comm_bytes}};
                break;
            case EtNodeType::comm_send:
            case EtNodeType::comm_recv:
                e.category = n.type == EtNodeType::comm_send ? "send" : "recv";
                e.args = {{"bytes", n.comm_bytes}, {"tag", static_cast<int64_t>(n.tag)},
                          {"peer", std::string(n.peer > 0 ? "next stage" : "previous stage")}};
                break;
            default: e.category = "other";
        }
        ev.push_back(std::move(e));
    }
    return ev;
}

}  // namespace sc
