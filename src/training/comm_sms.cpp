#include "training/comm_sms.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "config/error.h"
#include "trace/stage_program.h"
#include "training/comm_model.h"

namespace sc {

const UserbufferOverlap* UserbufferOverlapOf(const Op& op, const UserbufferConfig& cfg) {
    return UserbufferOverlapOf(op.kind, op.pass, op.name, cfg);
}

const UserbufferOverlap* UserbufferOverlapOf(OpKind kind, Pass pass, std::string_view n, const UserbufferConfig& cfg) {
    if (kind != OpKind::matmul) return nullptr;
    if (pass == Pass::forward) {
        if (n == "attn.out") return &cfg.proj_fprop;
        if (n == "mlp.fc2") return &cfg.fc2_fprop;
        return nullptr;
    }
    if (n == "attn.qkv.dgrad") return &cfg.qkv_dgrad;
    if (n == "attn.qkv.wgrad") return &cfg.qkv_wgrad;
    if (n == "mlp.fc1.dgrad" || n == "mlp.gate_up.dgrad") return &cfg.fc1_dgrad;
    if (n == "mlp.fc1.wgrad" || n == "mlp.gate_up.wgrad") return &cfg.fc1_wgrad;
    return nullptr;
}

double CommSmSeconds(double gemm, double comm, const UserbufferOverlap& o, int sms) {
    if (sms <= 0 || o.num_sm <= 0 || gemm <= 0) return 0;
    if (o.num_sm >= sms)
        throw Error("userbuffers.num_sm", std::to_string(o.num_sm) + " SMs for a communication kernel leave none of " +
                                              std::to_string(sms) + " for the GEMM; valid: 0 to " +
                                              std::to_string(sms - 1));
    const int n = o.num_sm;
    const double margin_loss = gemm * n / (sms - n);
    if (o.sm_margin) return margin_loss;
    return std::min(std::max(0.0, comm) * n / sms, margin_loss);
}

double CollectiveSmSeconds(double compute, double hidden, const Accelerator& acc) {
    if (acc.collective_ctas <= 0 || acc.sm_count <= 0) return 0;
    return CommSmSeconds(compute, hidden, UserbufferOverlap{acc.collective_ctas, false}, acc.sm_count);
}

const UserbufferConfig* UserbuffersOf(const Job& job, const TrainingOptions& opt, const TpOverlapKernels& kernels,
                                      int sm_count) {
    const bool on =
        opt.overlap_tp && kernels.kind == TpOverlapKind::userbuffers && job.par.tp > 1 && job.par.sp && sm_count > 0;
    return on ? &kernels.userbuffers : nullptr;
}

double LargestTpCollectiveSeconds(const Job& job, const Block& block, const CommModel& net) {
    double longest = 0;
    for (const Op& op : block.forward)
        if (op.kind == OpKind::collective && op.group == Group::tp)
            longest =
                std::max(longest, net.Seconds(ToChakra(op.collective), ToGroupKind(op.group), job.V(op.comm_bytes)));
    return longest;
}

}  // namespace sc
