// The training estimate of any model a preset can describe (presets/models/*.json): a model that parses is split
// by a few layouts (TP, PP with uneven stages and interleaving, CP, EP, ZeRO-3, recomputation, DualPipe) and
// estimated on a DGX H100 with the measured curves (an MoE model also with DeepEP's dispatch), as `stagecraft
// estimate` and the page do. A layout the model cannot take is refused with sc::Error; one it can take must give
// a step whose every part is finite and not negative, a positive step time, finite MFU and memory. Never a crash,
// a NaN or a hang.
#include <cmath>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "fuzz_target.h"
#include "parallel/job.h"
#include "parallel/parallel_config.h"
#include "training/estimate.h"

namespace {

void Check(bool ok) {
    if (!ok) __builtin_trap();
}

void CheckFigure(double v) { Check(std::isfinite(v) && v >= 0); }

// The H100 preset at 200 W of its 700 W, the lowest power limit the model takes.
const sc::System& CappedH100() {
    static const sc::System capped = [] {
        sc::System s = sc::ParseSystem(scfuzz::ReadSource("presets/systems/dgx-h100-superpod.json"),
                                       scfuzz::ReadSource("presets/hardware/h100-sxm.json"));
        s.accelerator.power_limit_w = 200;
        sc::ValidateAcceleratorRates(s.accelerator);
        return s;
    }();
    return capped;
}

void Estimate(const sc::ModelConfig& model) {
    static const sc::System h100 = sc::ParseSystem(scfuzz::ReadSource("presets/systems/dgx-h100-superpod.json"),
                                                   scfuzz::ReadSource("presets/hardware/h100-sxm.json"));
    static const sc::CalibrationTable cal =
        sc::ParseCalibration(scfuzz::ReadSource("presets/calibration/measured.json"));
    for (const char* spec :
         {"tp=1,microbatch=1", "tp=2,pp=2,dp=2,microbatch=1,batch=8,uneven=1,recompute=selective",
          "tp=2,sp=1,cp=2,dp=2,ep=2,microbatch=1,batch=4,recompute=full,zero=3",
          "pp=4,schedule=interleaved,vstages=2,microbatch=1,batch=8,uneven=1,recompute=op",
          "pp=2,dp=2,ep=2,schedule=dualpipe,microbatch=1,batch=8,uneven=1,zero=1",
          "pp=2,dp=2,schedule=zbv,microbatch=1,batch=6,uneven=1,recompute=full,recompute_layers=1",
          "pp=2,dp=2,ep=2,schedule=dualpipev,microbatch=1,batch=8,uneven=1,zero=1",
          "pp=2,dp=2,schedule=interleaved_zb,vstages=2,microbatch=1,batch=4,uneven=1",
          "pp=2,dp=2,ep=2,schedule=interleaved,vstages=2,microbatch=1,batch=6,uneven=1,a2a_overlap=1",
          "dp=2,microbatch=1,batch=4,zero=3,offload_layers=1"}) {
        // An MoE model's all-to-all as Megatron-Core sends it, and as DeepEP sends it in FP8 (DeepSeek-V3's).
        for (bool deepep : {false, true}) {
            if (deepep && !model.is_moe()) continue;
            sc::TrainingOptions opt;
            opt.kernels.deepep_dispatch = opt.kernels.fp8_dispatch = deepep;
            sc::Job job;
            try {
                job = sc::MakeJob(model, sc::ParseParallelSpec(spec), opt.kernels);
            } catch (const sc::Error& e) {
                Check(e.what()[0] != '\0');
                continue;  // a layout this model cannot take, refused with a reason
            }
            const sc::TrainingEstimate e = sc::EstimateTraining(job, h100, &cal, opt);
            for (const sc::BreakdownPart& p : sc::kBreakdownParts) CheckFigure(e.step.*p.seconds);
            CheckFigure(e.step.comm_sms);
            CheckFigure(e.step.dp_comm_sms);
            // Shares of what they slow: compute and recompute.
            Check(e.step.comm_sms + e.step.dp_comm_sms <= (e.step.compute + e.step.recompute) * (1 + 1e-12));
            Check(std::isfinite(e.step_seconds) && e.step_seconds > 0);
            for (double v : {e.tokens_per_second, e.mfu, e.hfu, e.mfu_bf16, e.model_flops_per_step,
                             e.hardware_flops_per_step, e.memory_peak, e.energy_joules_per_step})
                CheckFigure(v);
            for (const sc::StageMemory& m : e.memory) CheckFigure(m.total());
            // Under the lowest power limit (training/power_cap.h) the same step is finite and never faster (the
            // three layouts that start with TP: enough to reach every op kind, at a third of the cost).
            if (spec[0] == 't') {
                const sc::TrainingEstimate c = sc::EstimateTraining(job, CappedH100(), &cal, opt);
                // Equal where no op is compute-bound at either clock, up to the rounding of sums taken in another
                // order (found: a MoE model of 40-token sequences, 1.4055511721284362 s against ...364).
                Check(std::isfinite(c.step_seconds) && c.step_seconds >= e.step_seconds * (1 - 1e-12));
                CheckFigure(c.energy_joules_per_step);
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return scfuzz::Expect([&] { Estimate(sc::ParseModelConfig(scfuzz::AsText(data, size))); });
}
