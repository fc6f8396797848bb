// The estimate and the trace summary of one request: what `stagecraft estimate` and `stagecraft summary` print
// and what the page shows (and mirrors as text) for its current configuration.
#pragma once
#include <optional>
#include <string>

#include "engine/request.h"
#include "graph/model_stats.h"
#include "parallel/job.h"
#include "trace/summary.h"
#include "training/estimate.h"

namespace sc::engine {

struct EstimateResult {
    ModelStats stats;
    std::optional<Job> job;                    // when the request has a cluster: the split it was timed on
    std::optional<TrainingEstimate> training;  // likewise
    // The slice of a torus pod (TPU) the split ran on, when the cluster is one larger than it
    // (config/torus_slice.h), or the pod named as "its first N chips" when no slice holds N; or the segments of
    // NVL72 racks it ran in (config/job_segments.h); the reports name it. Absent: the cluster as given.
    std::optional<System> slice;
};

// The model's size and FLOPs; with a cluster (request.system) also the split's step time, memory and MFU.
// Throws sc::Error naming the field for an invalid model, split or cluster.
EstimateResult RunEstimate(const Request& request);
// The same with the split's job made already (the CLI makes it before it reads the cluster, so a bad split is
// the error it reports first); request.system must be set.
EstimateResult RunEstimate(const Request& request, Job job);

struct SummaryResult {
    Job job;
    TraceSummary summary;
};
// The per-class summary of the split's traces (no cluster needed). Throws sc::Error for an invalid model or split.
SummaryResult RunSummary(const Request& request);

// Everything the page shows for a request, each stage's error kept instead of thrown: the model, then the split
// (needs a valid model), then the training estimate (needs a split and a cluster) and the trace summary (needs
// a split). A stage after a failed one is absent. Never throws sc::Error.
struct Evaluation {
    std::string model_error;     // "" when the model is valid
    ModelStats stats;            // when it is
    std::string parallel_error;  // "" when the split is valid (or was not reached)
    std::optional<Job> job;
    std::string training_error;  // "" when estimated (or not reached, or no cluster)
    std::optional<TrainingEstimate> training;
    std::optional<System> slice;  // as EstimateResult::slice
    std::string summary_error;    // "" when summarized (or not reached): a stage's trace past kMaxStreamedStageNodes
    std::optional<TraceSummary> summary;
    bool summary_pending = false;  // the split is valid and its summary is left to the caller (EvaluateEstimate)
};
Evaluation Evaluate(const Request& request);
// The same without the trace summary, which can take seconds (10^9 nodes at the microbatch limit): the page counts
// it a slice a frame (trace/summary.h JobSummarizer) and marks it pending meanwhile.
Evaluation EvaluateEstimate(const Request& request);

}  // namespace sc::engine
