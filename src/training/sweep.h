// The hardware/software co-design study of "Scaling Intelligence: Designing Data Centers for Next-Gen
// Language Models" (Tithi et al., arXiv 2506.15006): vary the accelerator's FLOPS, HBM bandwidth and
// capacity, the scale-up domain, the scale-out bandwidth, the topology (two-tier vs FullFlat), overlap of
// communication with computation and in-network collectives; at every point of the cartesian product find
// the best layout (SearchLayouts) of each model and report its step time and MFU. Or, with a fixed layout
// (SweepRequest::layout), that one layout's step time and MFU at every point.
//
// How a point changes the base system (MakeSweepSystem), all per accelerator:
//   flops         factor on every matrix and vector peak (all precisions)
//   hbm_bw        factor on HBM bandwidth
//   hbm_capacity  factor on HBM capacity
//   domain        scale-up domain size in accelerators (absolute; 0 = the base system's)
//   net_bw        factor on the scale-out (outermost level's) bandwidth and the NIC
//   topology      two_tier: the scale-up level, then one scale-out level over all GPUs with the base
//                 system's outermost level's latency, efficiency, oversubscription and in-network reduction;
//                 fullflat: the same hierarchy (collectives stay hierarchical, NCCL-style), but every level
//                 gives each GPU uniform bandwidth and latency: the outer level takes the better effective
//                 per-GPU bandwidth and the lower latency of the two (never oversubscribed), and offers
//                 in-network reduction if either level did. So FullFlat is never worse than two-tier.
//   overlap       on: DP, PP and TP communication overlapped with computation; off: none overlapped; without
//                 the axis, the request's own (TrainingOptions: DP and PP overlapped, TP not, by default)
//   inr           in-network collectives (SHARP / NVLink SHARP) used where a level offers them, or not; without
//                 the axis, the request's own
//   gpus          GPU counts (the request's global batch kept)
//   power         a GPU power limit in W (0: the base system's; training/power_cap.h): compute at
//                 (limit / board)^(1/3) of the clock; within 2/7 of the board power and the board power
// A point is an edit of the base part, as --system-set makes one: its measured calibration curves (GEMM TFLOPS by
// FLOP count and by shape, the best GEMM, HBM copy bandwidth, NVLink bus bandwidth) answer for it scaled by edited /
// preset (CalibrationScale), so the hypothetical part reaches the same fraction of its peak at each size as the
// measured one. The kernel's measured fixed cost (training/kernel_floor.h) is a time and stays. Intermediate network levels of the base system are not kept (the
// presets have two). Total accelerators: the GPU count rounded up to whole scale-up domains.
// A torus system (TPU) keeps its chip-to-chip links and gets the job's slice (ExtendSystem); net_bw scales only the
// network beyond the torus; domain and topology have nothing to act on and are errors.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "config/model_config.h"
#include "parallel/job.h"
#include "training/search.h"
#include "training/training_options.h"

namespace sc {

// An axis value (two_tier, fullflat), or what a row ran on when the system has no switched pair for the axis to
// act on (a torus system's rows say torus, a FullFlat system's fullflat); torus is never an axis value.
enum class Topology { two_tier, fullflat, torus };
const char* NameOf(Topology t);

// The overlap and inr axes' value for "as the request's options say" (the default, so that a sweep without those
// axes times every point as the estimate of the same system would); the overlap axis's other values are masks.
inline constexpr int kSweepAsOptions = -1;
inline constexpr int kOverlapDp = 1, kOverlapPp = 2, kOverlapTp = 4, kOverlapAll = 7;
// "on" (all three), "off" (none), or the ones overlapped joined by '+' ("dp+pp", the default options).
std::string OverlapName(int mask);

struct SweepAxes {
    std::vector<double> flops = {1};
    std::vector<double> hbm_bw = {1};
    std::vector<double> hbm_capacity = {1};
    std::vector<int> domain = {0};  // 0: the base system's scale-up domain
    std::vector<double> net_bw = {1};
    std::vector<Topology> topology = {Topology::two_tier};
    std::vector<int> overlap = {kSweepAsOptions};  // kOverlapAll (on), 0 (off), or the request's own
    std::vector<int> inr = {kSweepAsOptions};      // 1 on, 0 off, or the request's own
    std::vector<int> gpus = {0};      // 0: the request's GPU count (strong scaling: the batch stays the request's)
    std::vector<double> power = {0};  // W per GPU; 0: the base system's limit (none unless edited)
};

struct SweepPoint {
    double flops = 1, hbm_bw = 1, hbm_capacity = 1;
    int domain = 0;
    double net_bw = 1;
    Topology topology = Topology::two_tier;  // a row: the network it ran on (Topology)
    // An axis value (kSweepAsOptions: the request's own), or in a row the kinds of communication it overlapped
    // (kOverlapDp | kOverlapPp | kOverlapTp) and whether it reduced in the network (0 or 1).
    int overlap = kSweepAsOptions, inr = kSweepAsOptions;
    int gpus = 0;        // 0: the request's; a row holds the count it used
    double power_w = 0;  // 0: the base's power limit; a row holds the limit it ran under (0: none)
};

// Parses one --axis argument "name=v1,v2,..." into `axes` (replacing that axis's list). Names: flops hbm_bw
// hbm_capacity domain net_bw topology (two_tier|fullflat) overlap (on|off) inr (on|off) gpus (GPU counts, the
// global batch kept) power (W per GPU, 0: the base's). Throws sc::Error naming the axis and value (unknown axis,
// non-positive factor, ...).
void ParseSweepAxis(const std::string& arg, SweepAxes& axes);
// Validates every list (non-empty, factors > 0, domain >= 0, overlap a mask or kSweepAsOptions, inr 0, 1 or
// kSweepAsOptions, power 0 to 1e6 W).
void ValidateSweepAxes(const SweepAxes& axes);

// Every point, in order: flops outermost, then hbm_bw, hbm_capacity, domain, net_bw, topology, overlap, inr, gpus,
// power.
std::vector<SweepPoint> SweepPoints(const SweepAxes& axes);
// How many points, and point `index` of that order, without listing the others (a shard of a 10^5-point
// sweep reads only its own). The axes must be valid (ValidateSweepAxes) and index < SweepPointCount.
size_t SweepPointCount(const SweepAxes& axes);
SweepPoint SweepPointAt(const SweepAxes& axes, size_t index);

// The base system changed as `pt` says, with room for `gpus` accelerators. The base's first level must be a
// scale_up level (throws sc::Error("system", ...) otherwise).
System MakeSweepSystem(const System& base, const SweepPoint& pt, int gpus);
// `base` with the point's overlap and in-network-reduction switches.
TrainingOptions MakeSweepOptions(const TrainingOptions& base, const SweepPoint& pt);
// `base` built to hold `gpus`: a leaf-spine pod (two_tier, rail_optimized) keeps its size and whole pods are
// joined by a core tier (three_tier, non-blocking); any other outermost level grows to a multiple of the level
// below. Unchanged when the system already holds them, except a torus pod (TPU), which a smaller job gets a
// slice of (config/torus_slice.h); and a job on NVL72 racks runs in segments of whole trays
// (config/job_segments.h). What --gpus and `search --extend` use.
System ExtendSystem(const System& base, int gpus);

struct SweepModel {
    std::string name;  // as reported (e.g. the preset's file name)
    ModelConfig config;
};

struct SweepRow {
    size_t point_index = 0;
    SweepPoint point;  // as evaluated: domain is the scale-up size used, never 0
    int model_index = 0;
    std::string model;
    SearchStats stats;
    bool found = false;         // some layout fits
    ParallelConfig best;        // when found
    TrainingEstimate estimate;  // of `best`, when found
};

struct SweepRequest {
    int gpus = 0;
    int batch = 0;
    SearchSpace space;  // layouts searched at every point
    // Set: this layout at every point instead of a search (how one deployment responds to the hardware): its
    // estimate is the row's, found when it is valid and fits. Its GPU count and batch must be gpus and batch.
    std::optional<ParallelConfig> layout;
};

// ---- One sweep in pieces. RunSweep is made of these; a driver that must not spend a whole point at once (the
// page's thread without web workers: one point's layout search takes 0.1 s or more, several frames) calls them
// itself, a point's search in pieces (SearchLayouts' shards) joined by MergeSearchResults(pieces, 1).

// What every point of a sweep shares, made once instead of at every point (a fixed-layout point is one
// estimate, so rebuilding these dominated it):
//  - the base system without its provenance and sources, which no estimate reads and every point would copy;
//  - the calibration rows that apply to the base accelerator (CalibrationFor): every lookup is by accelerator
//    id and a point keeps the base's id; every point reads them as they are (an edit of the part);
//  - for a fixed layout, each model's job: the graph and its values depend on the model and the split, not on
//    the hardware a point changes (empty when the layout is not valid for that model).
struct SweepContext {
    std::vector<SweepModel> models;
    System base;
    std::optional<CalibrationTable> cal;
    TrainingOptions options;
    SweepAxes axes;
    SweepRequest request;
    size_t points = 0;
    std::vector<std::optional<Job>> jobs;  // per model and gpus value (model-major), fixed layout only
};
// Throws sc::Error as RunSweep does (no model, a layout of other GPUs or batch, invalid axes).
SweepContext MakeSweepContext(const std::vector<SweepModel>& models, const System& base, const CalibrationTable* cal,
                              const TrainingOptions& opt, const SweepAxes& axes, const SweepRequest& req);

// Point `index` made ready: its system and options, and the search request of its layout search (the
// calibration is the context's: the point's part is an edit of the base part, which the table answers for).
struct SweepPointInputs {
    size_t index = 0;
    SweepPoint point;
    System system;
    TrainingOptions options;
    SearchRequest search;  // top_k 1
};
SweepPointInputs PrepareSweepPoint(const SweepContext& c, size_t index);

// Model `model` at the point: piece `piece` of `pieces` of its layout search; with a fixed layout, its one
// estimate (piece 0; the other pieces are empty). MergeSearchResults(all pieces, 1) is the point's result.
SearchResult EvaluateSweepPoint(const SweepContext& c, const SweepPointInputs& in, int model, int piece = 0,
                                int pieces = 1);
// The row of model `model` at the point from its (merged) result.
SweepRow SweepRowOf(const SweepContext& c, const SweepPointInputs& in, int model, SearchResult result);

// RunSweep's points of one shard over a context made once (a driver running many shards of one sweep makes the
// context once: for a fixed layout it holds each model's graph).
std::vector<SweepRow> RunSweepPoints(const SweepContext& c, int shard_index, int shard_count);

// Runs the points whose index i satisfies i % shard_count == shard_index (all of them by default), every
// model at each, rows ordered by (point index, model index). Concatenating the shards' rows and sorting them
// by that key gives exactly the rows of one unsharded run.
std::vector<SweepRow> RunSweep(const std::vector<SweepModel>& models, const System& base, const CalibrationTable* cal,
                               const TrainingOptions& opt, const SweepAxes& axes, const SweepRequest& req,
                               int shard_index = 0, int shard_count = 1);

}  // namespace sc
