#include "training/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "config/error.h"
#include "config/job_segments.h"
#include "config/numbers.h"
#include "config/split_list.h"
#include "config/torus_slice.h"
#include "parallel/job.h"

namespace sc {

const char* NameOf(Topology t) {
    switch (t) {
        case Topology::two_tier: return "two_tier";
        case Topology::fullflat: return "fullflat";
        case Topology::torus: return "torus";
    }
    return "two_tier";
}

namespace {

const char* const kAxes = "flops hbm_bw hbm_capacity domain net_bw topology overlap inr gpus power";

// A positive count from 1 to 2^24 (the ranks' limit, README "Limits") for the domain and gpus axes.
int Count(const std::string& axis, const std::string& s, const char* what) {
    char* end = nullptr;
    long x = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || x < 1 || x > (1 << 24))
        throw Error(axis, std::string("expected ") + what + " (1 to 16M), got \"" + Clip(s) + "\"");
    return static_cast<int>(x);
}

// A hardware factor from 1e-6 to 1e6 (1e308 made the step time nan).
double Factor(const std::string& axis, const std::string& v) {
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !(x > 0))
        throw Error(axis, "expected a positive factor (e.g. 0.5, 1, 2), got \"" + Clip(v) + "\"");
    return NumberIn(axis, x, v, kMinSweepFactor, kMaxSweepFactor);
}

int OnOff(const std::string& axis, const std::string& v) {
    if (v == "on" || v == "1" || v == "true") return 1;
    if (v == "off" || v == "0" || v == "false") return 0;
    throw Error(axis, "expected on or off, got \"" + v + "\"");
}

}  // namespace

void ParseSweepAxis(const std::string& arg, SweepAxes& axes) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos)
        throw Error("axis", "expected name=v1,v2,... (e.g. flops=1,2,4), got \"" + arg + "\"; axes: " + kAxes);
    const std::string name = arg.substr(0, eq);
    const std::vector<std::string> values = SplitList(arg.substr(eq + 1));
    if (name == "flops" || name == "hbm_bw" || name == "hbm_capacity" || name == "net_bw") {
        std::vector<double> v;
        for (const std::string& s : values) v.push_back(Factor(name, s));
        (name == "flops"          ? axes.flops
         : name == "hbm_bw"       ? axes.hbm_bw
         : name == "hbm_capacity" ? axes.hbm_capacity
                                  : axes.net_bw) = v;
    } else if (name == "domain" || name == "gpus") {
        std::vector<int> v;
        const char* what = name == "domain" ? "a scale-up domain size in accelerators" : "a GPU count";
        for (const std::string& s : values) v.push_back(Count(name, s, what));
        (name == "domain" ? axes.domain : axes.gpus) = v;
    } else if (name == "topology") {
        std::vector<Topology> v;
        for (const std::string& s : values) {
            if (s == "two_tier" || s == "two-tier" || s == "twotier") v.push_back(Topology::two_tier);
            else if (s == "fullflat" || s == "full_flat" || s == "full-flat") v.push_back(Topology::fullflat);
            else throw Error(name, "\"" + s + "\" is not one of two_tier, fullflat");
        }
        axes.topology = v;
    } else if (name == "power") {
        // W per GPU; 0 keeps the base system's. Its range depends on the part's board power: the engine checks
        // each value against the base (engine/sweep.cpp), naming this axis.
        std::vector<double> v;
        for (const std::string& s : values) v.push_back(ParseNumberIn(name, s, 0, 1e6));
        axes.power = v;
    } else if (name == "overlap" || name == "inr") {
        std::vector<int> v;
        for (const std::string& s : values) v.push_back(OnOff(name, s) * (name == "overlap" ? kOverlapAll : 1));
        (name == "overlap" ? axes.overlap : axes.inr) = v;
    } else {
        throw Error(name, std::string("unknown sweep axis; valid: ") + kAxes);
    }
}

void ValidateSweepAxes(const SweepAxes& a) {
    auto factors = [](const char* name, const std::vector<double>& v) {
        if (v.empty()) throw Error(name, "the axis needs at least one value");
        for (double x : v)
            if (!(x >= kMinSweepFactor && x <= kMaxSweepFactor))
                throw Error(name, "factor " + std::to_string(x) + " must be from 1e-6 to 1e6");
    };
    factors("flops", a.flops);
    factors("hbm_bw", a.hbm_bw);
    factors("hbm_capacity", a.hbm_capacity);
    factors("net_bw", a.net_bw);
    if (a.domain.empty()) throw Error("domain", "the axis needs at least one value");
    for (int d : a.domain)
        if (d < 0) throw Error("domain", "domain=" + std::to_string(d) + " must be a positive size (0: the system's)");
    if (a.gpus.empty()) throw Error("gpus", "the axis needs at least one value");
    for (int g : a.gpus)
        if (g < 0 || g > (1 << 24))
            throw Error("gpus", "gpus=" + std::to_string(g) + " must be a GPU count from 1 to 16M (0: the request's)");
    if (a.power.empty()) throw Error("power", "the axis needs at least one value");
    for (double w : a.power)
        if (!(w >= 0 && w <= 1e6))
            throw Error("power", "power=" + ShownNumber(w) + " must be 0 to 1e6 W (0: the system's)");
    if (a.topology.empty()) throw Error("topology", "the axis needs at least one value");
    for (const auto* v : {&a.overlap, &a.inr}) {
        const bool overlap = v == &a.overlap;
        const char* name = overlap ? "overlap" : "inr";
        if (v->empty()) throw Error(name, "the axis needs at least one value");
        for (int x : *v)
            if (x != kSweepAsOptions && (x < 0 || x > (overlap ? kOverlapAll : 1)))
                throw Error(name, std::string("expected on (") + (overlap ? "7" : "1") +
                                      "), off (0) or the options' (" + std::to_string(kSweepAsOptions) + "), got " +
                                      std::to_string(x));
    }
}

std::vector<SweepPoint> SweepPoints(const SweepAxes& a) {
    ValidateSweepAxes(a);
    std::vector<SweepPoint> out;
    SweepPoint p;
    for (double f : a.flops)
        for (double hb : a.hbm_bw)
            for (double hc : a.hbm_capacity)
                for (int d : a.domain)
                    for (double nb : a.net_bw)
                        for (Topology t : a.topology)
                            for (int ov : a.overlap)
                                for (int inr : a.inr)
                                    for (int g : a.gpus)
                                        for (double w : a.power) {
                                            p.flops = f, p.hbm_bw = hb, p.hbm_capacity = hc, p.domain = d;
                                            p.net_bw = nb, p.topology = t, p.overlap = ov, p.inr = inr;
                                            p.gpus = g, p.power_w = w;
                                            out.push_back(p);
                                        }
    return out;
}

size_t SweepPointCount(const SweepAxes& a) {
    return a.flops.size() * a.hbm_bw.size() * a.hbm_capacity.size() * a.domain.size() * a.net_bw.size() *
           a.topology.size() * a.overlap.size() * a.inr.size() * a.gpus.size() * a.power.size();
}

SweepPoint SweepPointAt(const SweepAxes& a, size_t index) {
    // Mixed radix, innermost axis (power) the fastest digit, as SweepPoints nests its loops.
    auto digit = [&index](const auto& axis) {
        const auto& v = axis[index % axis.size()];
        index /= axis.size();
        return v;
    };
    SweepPoint p;
    p.power_w = digit(a.power);
    p.gpus = digit(a.gpus);
    p.inr = digit(a.inr);
    p.overlap = digit(a.overlap);
    p.topology = digit(a.topology);
    p.net_bw = digit(a.net_bw);
    p.domain = digit(a.domain);
    p.hbm_capacity = digit(a.hbm_capacity);
    p.hbm_bw = digit(a.hbm_bw);
    p.flops = digit(a.flops);
    return p;
}

namespace {

// The point's accelerator: its peaks, HBM and NIC scaled by the point's factors.
void ScaleAccelerator(Accelerator& a, const SweepPoint& pt) {
    for (std::optional<double>* v : {&a.matrix.fp32, &a.matrix.tf32, &a.matrix.bf16, &a.matrix.fp16, &a.matrix.fp8,
                                     &a.matrix.fp4, &a.vector.fp32, &a.vector.bf16})
        if (*v) **v *= pt.flops;
    // Not the preset's figures: the point is an edit of the base part, as --system-set makes one, and the
    // measured curves answer for it scaled by edited / preset (CalibrationScale, config/hardware_config.h): the
    // same fraction of its peak at every size, by FLOP count and by shape. The kernel's measured fixed cost
    // (training/kernel_floor.h) is a time, not a rate, and stays.
    a.hbm_bandwidth_tbps *= pt.hbm_bw;
    a.hbm_capacity_gib_usable *= pt.hbm_capacity;
    a.hbm_capacity_gb_marketing *= pt.hbm_capacity;
    a.nic_gbit_per_gpu *= pt.net_bw;
    // A power limit (training/power_cap.h) is set, not scaled: 0 keeps the base's (an edit of the page, or none).
    if (pt.power_w > 0) {
        ValidatePowerLimit(a, pt.power_w, "power");
        a.power_limit_w = pt.power_w;
    }
}

// A system with no switched scale-up domain: a torus (TPU), whose chips' own links stay as they are while the
// network beyond them (the data-center network joining slices) scales with net_bw, or FullFlat, whose one flat
// network scales with net_bw. The accelerator's factors apply as on any system, and the job gets its slice or as
// many GPUs as it needs (ExtendSystem). The axes that reshape a scale-up domain or flatten a two-tier pair have
// nothing to act on (on FullFlat, a topology axis would compare the system with itself).
System MakeUnswitchedSweepSystem(const System& base, const SweepPoint& pt, int gpus) {
    const bool torus = base.levels[0].kind == LevelKind::torus;
    const std::string is = "system " + base.id + (torus ? " is a torus of chip-to-chip links" : " is FullFlat");
    if (pt.domain > 0)
        throw Error("domain", is + ": it has no scale-up domain to resize (sweep domain with a scale_up system, e.g. "
                                   "gb200-nvl72)");
    if (pt.topology == Topology::fullflat)
        throw Error("topology", is +
                                    (torus ? ": it has no switched scale-up and scale-out pair to flatten"
                                           : " already: the topology axis flattens a scale-up and scale-out pair") +
                                    " (sweep topology with a scale_up system, e.g. dgx-h100-superpod)");
    System s = base;
    ScaleAccelerator(s.accelerator, pt);
    for (NetworkLevel& l : s.levels)
        if (l.kind != LevelKind::torus) l.bandwidth_gbps *= pt.net_bw;
    s = ExtendSystem(s, gpus);
    s.id = base.id + "@sweep";
    return s;
}

}  // namespace

System MakeSweepSystem(const System& base, const SweepPoint& pt, int gpus) {
    RequirePositiveCount("gpus", gpus);
    if (!base.levels.empty() && (base.levels[0].kind == LevelKind::torus ||
                                 (base.levels.size() == 1 && base.levels[0].kind == LevelKind::fullflat)))
        return MakeUnswitchedSweepSystem(base, pt, gpus);
    if (base.levels.empty() || base.levels[0].kind != LevelKind::scale_up)
        throw Error("system", "the sweep varies a scale-up domain and the network beyond it, but system " + base.id +
                                  " has no scale_up first level (use a preset like dgx-h100-superpod or gb200-nvl72, "
                                  "a torus like tpu-v4-pod or a FullFlat one like h100-fullflat)");
    System s = base;
    ScaleAccelerator(s.accelerator, pt);
    Accelerator& a = s.accelerator;

    NetworkLevel up = base.levels[0];
    if (pt.domain > 0) up.size = pt.domain;
    a.scale_up_domain = up.size;
    const int total = static_cast<int>((static_cast<long long>(gpus) + up.size - 1) / up.size * up.size);
    s.levels.assign(1, up);
    if (total > up.size) {
        if (base.levels.size() < 2)
            throw Error("system", "system " + base.id + " has no network beyond its scale-up domain of " +
                                      std::to_string(up.size) + " for " + std::to_string(gpus) + " GPUs");
        NetworkLevel out = base.levels.back();
        out.size = total;
        out.bandwidth_gbps *= pt.net_bw;
        if (pt.topology == Topology::fullflat) {
            // Uniform per-GPU bandwidth and latency everywhere: the better of the scale-up and scale-out figures.
            out.oversubscription = 1;
            if (up.EffectiveGBps() > out.EffectiveGBps()) {
                out.bandwidth_gbps = up.bandwidth_gbps;
                out.efficiency = up.efficiency;
            }
            out.latency_us = std::min(out.latency_us, up.latency_us);
            out.in_network_reduction = out.in_network_reduction || up.in_network_reduction;
            out.kind = LevelKind::fullflat;
            out.name = "fullflat";
        }
        s.levels.push_back(out);
    }
    s.id = base.id + "@sweep";
    return s;
}

TrainingOptions MakeSweepOptions(const TrainingOptions& base, const SweepPoint& pt) {
    TrainingOptions o = base;
    if (pt.overlap != kSweepAsOptions) {
        o.overlap_dp = (pt.overlap & kOverlapDp) != 0;
        o.overlap_pp = (pt.overlap & kOverlapPp) != 0;
        o.overlap_tp = (pt.overlap & kOverlapTp) != 0;
    }
    if (pt.inr != kSweepAsOptions) o.in_network_reduction = pt.inr == 1;
    return o;
}

std::string OverlapName(int mask) {
    if (mask == kOverlapAll) return "on";
    if (mask == 0) return "off";
    std::string s;
    for (auto [bit, name] : {std::pair{kOverlapDp, "dp"}, {kOverlapPp, "pp"}, {kOverlapTp, "tp"}})
        if (mask & bit) s += (s.empty() ? "" : "+") + std::string(name);
    return s;
}

System ExtendSystem(const System& base, int gpus) {
    if (base.levels.empty()) throw Error("system.levels", "a system needs at least one network level");
    if (std::optional<System> slice = SliceTorus(base, gpus)) return *slice;  // named by the engine otherwise
    if (gpus <= base.TotalAccelerators()) return SegmentedPartFor(base, gpus).value_or(base);
    if (base.levels.back().kind == LevelKind::torus)
        throw Error("gpus", std::to_string(gpus) + " accelerators do not fit in " + base.name + " (" +
                                std::to_string(base.TotalAccelerators()) +
                                " chips, one torus pod with no data-center network beyond it); use a system with a "
                                "level joining pods, e.g. tpu-v5p-pod");
    // NVLink and PCIe do not stretch to more accelerators: growing a one-domain system would invent a fabric.
    if (base.IsOneDomain())
        throw Error("gpus", std::to_string(gpus) + " accelerators do not fit in " + base.name + " (" +
                                std::to_string(base.TotalAccelerators()) + " accelerators, one " +
                                base.levels.back().name +
                                " scale-up domain with no network beyond it); use a system with a scale-out level, "
                                "e.g. dgx-h100-superpod, or describe one with its NICs");
    System s = base;
    const NetworkLevel pod = s.levels.back();
    if (s.levels.size() > 1 && (pod.kind == LevelKind::two_tier || pod.kind == LevelKind::rail_optimized)) {
        // A leaf-spine pod is as large as the preset says (its switch radix): more GPUs take a core tier joining
        // whole pods, as NVIDIA's SuperPOD reference architectures add beyond 4 SUs. Same NICs, so the same
        // per-GPU bandwidth, ring-step latency and efficiency; non-blocking unless an edit sets its
        // oversubscription (--system-set <core>.oversubscription=2).
        NetworkLevel core = pod;
        core.name = pod.name + "-core";
        core.kind = LevelKind::three_tier;
        core.size = static_cast<int>((static_cast<long long>(gpus) + pod.size - 1) / pod.size * pod.size);
        core.oversubscription = 1;
        core.provenance.clear();
        core.provenance["size"] = {
            "DERIVED", {"--gpus " + std::to_string(gpus)}, "whole pods of " + std::to_string(pod.size), ""};
        core.provenance["oversubscription"] = {"ASSUMED", {}, "non-blocking core tier", ""};
        s.levels.push_back(core);
        s.name += " (" + std::to_string(core.size / pod.size) + " pods of " + std::to_string(pod.size) +
                  " joined by a core tier)";
        return SegmentedPartFor(s, gpus).value_or(s);
    }
    NetworkLevel& out = s.levels.back();
    const long long unit = s.levels.size() > 1 ? s.levels[s.levels.size() - 2].size : 1;
    out.size = static_cast<int>((gpus + unit - 1) / unit * unit);
    s.name += " (" + out.name + " extended to " + std::to_string(out.size) + " accelerators)";
    return SegmentedPartFor(s, gpus).value_or(s);
}

namespace {

// The fixed layout as a search of one candidate would count it: valid when its job could be made for the
// model, in the result when it fits.
SearchResult EstimateOneLayout(const std::optional<Job>& job, const System& sys, const CalibrationTable* cal,
                               const TrainingOptions& o) {
    SearchResult r;
    r.stats.candidates = 1;
    if (!job) return r;
    ++r.stats.valid;
    ++r.stats.estimated;
    TrainingEstimate e = EstimateTraining(*job, sys, cal, o);
    if (!e.fits) return r;
    ++r.stats.fitting;
    r.top.push_back({0, job->par, std::move(e)});
    return r;
}

}  // namespace

SweepContext MakeSweepContext(const std::vector<SweepModel>& models, const System& base, const CalibrationTable* cal,
                              const TrainingOptions& opt, const SweepAxes& axes, const SweepRequest& req) {
    if (models.empty()) throw Error("model", "the sweep needs at least one model");
    if (req.layout && (req.layout->world() != req.gpus || req.layout->global_batch() != req.batch))
        throw Error("layout", ParallelSpecString(*req.layout) + " runs on " + std::to_string(req.layout->world()) +
                                  " GPUs with batch " + std::to_string(req.layout->global_batch()) +
                                  "; the sweep is of " + std::to_string(req.gpus) + " GPUs with batch " +
                                  std::to_string(req.batch));
    ValidateSweepAxes(axes);
    SweepContext c;
    c.models = models;
    c.base = base;
    c.base.sources.clear();
    c.base.description.clear();
    c.base.accelerator.provenance.clear();
    for (NetworkLevel& level : c.base.levels) level.provenance.clear();
    if (cal) c.cal = CalibrationFor(*cal, base.accelerator.id);
    c.options = opt;
    c.axes = axes;
    c.request = req;
    c.points = SweepPointCount(axes);
    if (req.layout) {
        // Per model and GPU count: the layout with its data-parallel degree stretched to the count (the
        // deployment on more or fewer GPUs, its global batch kept). A count it cannot run on is no job.
        for (const SweepModel& m : models)
            for (int g : axes.gpus) {
                ParallelConfig par = *req.layout;
                if (g > 0) {
                    const int split = par.tp * par.cp * par.pp;
                    par.dp = g / split;
                    par.batch = req.batch;
                    if (g % split != 0) {
                        c.jobs.emplace_back();
                        continue;
                    }
                }
                try {
                    c.jobs.emplace_back(MakeJob(m.config, par, opt.kernels));
                } catch (const Error&) {
                    c.jobs.emplace_back();  // not a valid layout of this model (or of this GPU count)
                }
            }
    }
    return c;
}

SweepPointInputs PrepareSweepPoint(const SweepContext& c, size_t index) {
    if (index >= c.points)
        throw Error("point",
                    std::to_string(index) + " is not one of the sweep's " + std::to_string(c.points) + " points");
    SweepPointInputs in;
    in.index = index;
    in.point = SweepPointAt(c.axes, index);
    const int gpus = in.point.gpus > 0 ? in.point.gpus : c.request.gpus;
    in.system = MakeSweepSystem(c.base, in.point, gpus);
    in.options = MakeSweepOptions(c.options, in.point);
    in.search.gpus = gpus;
    in.search.batch = c.request.batch;
    in.search.top_k = 1;
    in.search.space = c.request.space;
    return in;
}

SearchResult EvaluateSweepPoint(const SweepContext& c, const SweepPointInputs& in, int model, int piece, int pieces) {
    if (model < 0 || model >= static_cast<int>(c.models.size()))
        throw Error("model", std::to_string(model) + " is not one of the sweep's " + std::to_string(c.models.size()) +
                                 " models");
    if (pieces < 1 || piece < 0 || piece >= pieces)
        throw Error("piece", std::to_string(piece) + " of " + std::to_string(pieces) + " is not one of 0 .. count-1");
    const CalibrationTable* cal = c.cal ? &*c.cal : nullptr;
    if (c.request.layout) {
        // gpus is the innermost axis: the point's digit along it (SweepPointAt).
        const size_t job = model * c.axes.gpus.size() + in.index % c.axes.gpus.size();
        return piece == 0 ? EstimateOneLayout(c.jobs[job], in.system, cal, in.options) : SearchResult{};
    }
    SearchRequest sr = in.search;
    sr.shard_index = piece;
    sr.shard_count = pieces;
    return SearchLayouts(c.models[model].config, in.system, cal, in.options, sr);
}

SweepRow SweepRowOf(const SweepContext& c, const SweepPointInputs& in, int model, SearchResult r) {
    SweepRow row;
    row.point_index = in.index;
    row.point = in.point;
    // The domain used (0 on the axis means the base system's); on a torus, the chips its links join (the slice).
    size_t d = 0;
    while (d + 1 < in.system.levels.size() && in.system.levels[d + 1].kind == LevelKind::torus) ++d;
    row.point.domain = in.system.levels[in.system.levels[0].kind == LevelKind::torus ? d : 0].size;
    // The network it ran on: on a system without a switched scale-up and scale-out pair the topology axis has
    // nothing to act on (MakeUnswitchedSweepSystem), and its default, two_tier, would misname a torus or FullFlat.
    if (in.system.levels[0].kind == LevelKind::torus) row.point.topology = Topology::torus;
    if (in.system.levels[0].kind == LevelKind::fullflat) row.point.topology = Topology::fullflat;
    row.point.gpus = in.search.gpus;                                      // likewise the GPU count
    row.point.power_w = in.system.accelerator.power_limit_w.value_or(0);  // and the power limit (0: none)
    // The switches it ran with: the axis's, or the request's own where the axis was not given.
    const TrainingOptions used = MakeSweepOptions(c.options, in.point);
    row.point.overlap =
        (used.overlap_dp ? kOverlapDp : 0) | (used.overlap_pp ? kOverlapPp : 0) | (used.overlap_tp ? kOverlapTp : 0);
    row.point.inr = used.in_network_reduction ? 1 : 0;
    row.model_index = model;
    row.model = c.models[model].name;
    row.stats = r.stats;
    row.found = !r.top.empty();
    if (row.found) {
        row.best = r.top[0].par;
        row.estimate = std::move(r.top[0].estimate);
    }
    return row;
}

std::vector<SweepRow> RunSweepPoints(const SweepContext& c, int shard_index, int shard_count) {
    RequireShard(shard_index, shard_count);
    std::vector<SweepRow> rows;
    for (size_t i = static_cast<size_t>(shard_index); i < c.points; i += static_cast<size_t>(shard_count)) {
        const SweepPointInputs in = PrepareSweepPoint(c, i);
        for (int m = 0; m < static_cast<int>(c.models.size()); ++m)
            rows.push_back(SweepRowOf(c, in, m, EvaluateSweepPoint(c, in, m)));
    }
    return rows;
}

std::vector<SweepRow> RunSweep(const std::vector<SweepModel>& models, const System& base, const CalibrationTable* cal,
                               const TrainingOptions& opt, const SweepAxes& axes, const SweepRequest& req,
                               int shard_index, int shard_count) {
    return RunSweepPoints(MakeSweepContext(models, base, cal, opt, axes, req), shard_index, shard_count);
}

}  // namespace sc
