#include "engine/estimate.h"

#include "config/error.h"
#include "config/job_segments.h"

namespace sc::engine {

namespace {

// A job smaller than a torus pod runs on a slice of it, as it would on Cloud TPU and as the trace's timeline
// (engine/trace.cpp) times it; `slice` keeps that slice for the report. A count no slice of whole cubes holds
// runs on the pod's first chips, and the report says so rather than naming the pod alone. On NVL72 racks a job
// runs in segments of whole trays (config/job_segments.h).
TrainingEstimate Train(const Job& job, const Request& r, std::optional<System>& slice) {
    // The page's panels can edit a level to a value no preset has; the CLI's edits are checked as they are made,
    // so this only repeats that check for them.
    ValidateSystemLevels(*r.system);
    slice = JobPartFor(*r.system, job.par.world());
    const System& sys = slice ? *slice : *r.system;
    TrainingEstimate e = EstimateTraining(job, sys, r.calibration, r.options);
    e.rates = DescribeRates(job, sys, r.calibration, r.options);
    if (job.par.pp > 1) e.pipeline = TimePipeline(job, sys, r.calibration, r.options);
    return e;
}

}  // namespace

EstimateResult RunEstimate(const Request& r) {
    ValidateModelConfig(r.model);
    EstimateResult out;
    out.stats = ComputeModelStats(r.model);
    if (!r.system) return out;
    out.job.emplace(MakeJob(r.model, r.parallel, r.options.kernels));
    out.training = Train(*out.job, r, out.slice);
    return out;
}

EstimateResult RunEstimate(const Request& r, Job job) {
    if (!r.system) throw Error("system", "an estimate on a prepared split needs a cluster; none was given");
    ValidateModelConfig(r.model);
    EstimateResult out;
    out.stats = ComputeModelStats(r.model);
    out.job.emplace(std::move(job));
    out.training = Train(*out.job, r, out.slice);
    return out;
}

SummaryResult RunSummary(const Request& r) {
    Job job = MakeJob(r.model, r.parallel, r.options.kernels);
    TraceSummary summary = SummarizeJob(job);
    return {std::move(job), std::move(summary)};
}

Evaluation EvaluateEstimate(const Request& r) {
    Evaluation ev;
    try {
        ValidateModelConfig(r.model);
        ev.stats = ComputeModelStats(r.model);
    } catch (const Error& e) {
        ev.model_error = e.what();
        return ev;
    }
    try {
        ev.job.emplace(MakeJob(r.model, r.parallel, r.options.kernels));
    } catch (const Error& e) {
        ev.parallel_error = e.what();
        return ev;
    }
    if (r.system) {
        try {
            ev.training = Train(*ev.job, r, ev.slice);
        } catch (const Error& e) {
            ev.training_error = e.what();
        }
    }
    ev.summary_pending = true;
    return ev;
}

Evaluation Evaluate(const Request& r) {
    Evaluation ev = EvaluateEstimate(r);
    if (!ev.summary_pending) return ev;
    ev.summary_pending = false;
    try {
        ev.summary = SummarizeJob(*ev.job);
    } catch (const Error& e) {
        ev.summary_error = e.what();
    }
    return ev;
}

}  // namespace sc::engine
