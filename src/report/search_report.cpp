#include "report/search_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "report/format.h"
#include "report/training_report.h"

namespace sc {

namespace {

nlohmann::ordered_json LayoutJson(const ParallelConfig& p) {
    return {{"tp", p.tp},
            {"pp", p.pp},
            {"dp", p.dp},
            {"cp", p.cp},
            {"ep", p.ep},
            {"sp", p.sp},
            {"microbatch", p.microbatch},
            {"schedule", NameOf(p.schedule)},
            {"vstages", p.vstages},
            {"recompute", NameOf(p.recompute)},
            {"zero", p.zero},
            {"spec", ParallelSpecString(p)}};
}

nlohmann::ordered_json StatsJson(const SearchStats& s) {
    return {{"candidates", s.candidates}, {"valid", s.valid}, {"fitting", s.fitting}, {"estimated", s.estimated}};
}

}  // namespace

std::string SearchReportText(const ModelConfig& m, const System& sys, const SearchRequest& req, const SearchResult& r,
                             const RateSources* rates) {
    std::string o = "Layout search: " + m.name + " on " + std::to_string(req.gpus) + " x " + sys.accelerator.name +
                    " (" + sys.name + "), global batch " + std::to_string(req.batch) + " x " + std::to_string(m.seq) +
                    " tokens\n";
    const SearchStats& s = r.stats;
    o += "layouts: " + std::to_string(s.candidates) + " candidates, " + std::to_string(s.valid) + " valid, " +
         std::to_string(s.fitting) + " fit in " + FormatBytes(sys.accelerator.MemoryBytes()) + " (" +
         std::to_string(s.estimated) + " timed)\n";
    if (!req.space.uneven) {  // pipelines the GPU count allows that the layers do not divide: name them
        std::string skipped;
        for (int pp = 2; pp <= std::min(req.gpus, m.layers); ++pp)
            if (req.gpus % pp == 0 && m.layers % pp != 0) skipped += (skipped.empty() ? "" : ",") + std::to_string(pp);
        if (!skipped.empty())
            o += "not searched: pp=" + skipped + ", which do not divide the " + std::to_string(m.layers) +
                 " layers (--uneven on splits them unevenly)\n";
    }
    if (r.top.empty()) {
        o += "no layout fits in memory\n";
        return o;
    }
    char buf[512];
    std::snprintf(buf, sizeof buf, "%4s %11s %6s %12s %10s  %4s %4s %5s %4s %4s %2s %4s %-11s %2s %-9s %4s %7s\n", "#",
                  "step", "MFU", "tokens/s", "memory", "tp", "pp", "dp", "cp", "ep", "sp", "mb", "schedule", "v",
                  "recompute", "zero", "offload");
    o += buf;
    for (size_t i = 0; i < r.top.size(); ++i) {
        const ParallelConfig& p = r.top[i].par;
        const TrainingEstimate& e = r.top[i].estimate;
        std::snprintf(buf, sizeof buf,
                      "%4zu %11s %5.1f%% %12.0f %10s  %4d %4d %5d %4d %4d %2d %4d %-11s %2d %-9s %4d %7d\n", i + 1,
                      FormatSeconds(e.step_seconds, kTableTime).c_str(), 100 * e.mfu, e.tokens_per_second,
                      FormatBytes(e.memory_peak).c_str(), p.tp, p.pp, p.dp, p.cp, p.ep, p.sp ? 1 : 0, p.microbatch,
                      NameOf(p.schedule), p.vstages, NameOf(p.recompute), p.zero, p.offload_layers);
        o += buf;
    }
    const StepBreakdown& b = r.top[0].estimate.step;
    const double t = r.top[0].estimate.step_seconds;
    o += "best: " + ParallelSpecString(r.top[0].par) + "\n";
    auto part = [&](const char* label, double v) {
        if (v <= 0) return;
        std::snprintf(buf, sizeof buf, "  %-24s %11s (%4.1f%%)\n", label, FormatSeconds(v, kTableTime).c_str(),
                      100 * v / t);
        o += buf;
    };
    for (const BreakdownPart& p : kBreakdownParts) part(p.label, b.*p.seconds);
    if (rates) {
        o += std::string("rates from: ") + (rates->all_measured ? "measurements" : "measurements and fallbacks") +
             " (presets/calibration/measured.json)\n";
        o += "  GEMMs              " + rates->gemm + "\n  attention          " + rates->attention +
             "\n  HBM                " + rates->hbm + "\n  kernel fixed cost  " + rates->floor + "\n";
    }
    return o;
}

std::string SearchReportJson(const ModelConfig& m, const System& sys, const SearchRequest& req, const SearchResult& r,
                             const RateSources* rates) {
    nlohmann::ordered_json j;
    j["model"] = m.name;
    j["system"] = sys.id;
    j["gpus"] = req.gpus;
    j["batch"] = req.batch;
    j["stats"] = StatsJson(r.stats);
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (size_t i = 0; i < r.top.size(); ++i) {
        const TrainingEstimate& e = r.top[i].estimate;
        nlohmann::ordered_json x;
        x["rank"] = i + 1;
        x["parallel"] = LayoutJson(r.top[i].par);
        x["step_seconds"] = e.step_seconds;
        x["mfu"] = e.mfu;
        x["hfu"] = e.hfu;
        x["tokens_per_second"] = e.tokens_per_second;
        x["memory_peak_bytes"] = e.memory_peak;
        x["memory_capacity_bytes"] = e.memory_capacity;
        x["breakdown"] = BreakdownJson(e.step);
        top.push_back(x);
    }
    j["top"] = top;
    if (rates) j["rate_sources"] = RateSourcesJson(*rates);
    return j.dump(2) + "\n";
}

std::string SweepCsvHeader() {
    return "model,flops,hbm_bw,hbm_capacity,domain,net_bw,topology,overlap,inr,gpus,power_w,batch,found,step_seconds,"
           "mfu,tokens_per_second,memory_peak_gib,energy_joules,tp,pp,dp,cp,ep,sp,microbatch,schedule,vstages,"
           "recompute,zero,offload_layers,compute,recompute_s,kernel_fixed,fp8_cast,moe_routing,tp_comm,cp_comm,ep_comm,pp_comm,"
           "bubble,dp_comm,offload,optimizer,candidates,valid,fitting\n";
}

std::string SweepRowText(const SweepRow& row, const SweepRequest& req, SweepFormat f) {
    const SweepPoint& pt = row.point;
    const TrainingEstimate& e = row.estimate;
    const ParallelConfig& p = row.best;
    if (f == SweepFormat::json) {
        nlohmann::ordered_json j;
        j["model"] = row.model;
        j["point"] = {{"flops", pt.flops},
                      {"hbm_bw", pt.hbm_bw},
                      {"hbm_capacity", pt.hbm_capacity},
                      {"domain", pt.domain},
                      {"net_bw", pt.net_bw},
                      {"topology", NameOf(pt.topology)},
                      {"overlap", OverlapName(pt.overlap)},
                      {"inr", pt.inr == 1},
                      {"power_w", pt.power_w}};
        j["gpus"] = pt.gpus > 0 ? pt.gpus : req.gpus;  // the point's (a gpus axis), else the request's
        j["batch"] = req.batch;
        j["found"] = row.found;
        if (row.found) {
            j["step_seconds"] = e.step_seconds;
            j["mfu"] = e.mfu;
            j["tokens_per_second"] = e.tokens_per_second;
            j["memory_peak_bytes"] = e.memory_peak;
            j["energy_joules_per_step"] = e.energy_joules_per_step;
            j["parallel"] = LayoutJson(p);
            j["breakdown"] = BreakdownJson(e.step);
        }
        j["stats"] = StatsJson(row.stats);
        return j.dump();
    }
    std::string o = row.model;
    if (o.find_first_of(",\"\n") != std::string::npos) {  // RFC 4180 quoting
        o.assign(1, '"');
        for (char c : row.model) {
            if (c == '"') o.push_back('"');
            o.push_back(c);
        }
        o.push_back('"');
    }
    auto num = [&](double v) { o.push_back(','), o.append(FormatNumber("%.9g", v)); };
    auto str = [&](const std::string& s) { o.push_back(','), o.append(s); };
    num(pt.flops), num(pt.hbm_bw), num(pt.hbm_capacity), num(pt.domain), num(pt.net_bw);
    str(NameOf(pt.topology)), str(OverlapName(pt.overlap)), str(pt.inr == 1 ? "on" : "off");
    num(pt.gpus > 0 ? pt.gpus : req.gpus), num(pt.power_w), num(req.batch), str(row.found ? "1" : "0");
    if (row.found) {
        num(e.step_seconds), num(e.mfu), num(e.tokens_per_second), num(InGiB(e.memory_peak));
        num(e.energy_joules_per_step);
        num(p.tp), num(p.pp), num(p.dp), num(p.cp), num(p.ep), num(p.sp ? 1 : 0), num(p.microbatch);
        str(NameOf(p.schedule)), num(p.vstages), str(NameOf(p.recompute)), num(p.zero), num(p.offload_layers);
        const StepBreakdown& b = e.step;
        for (const BreakdownPart& part : kBreakdownParts) num(b.*part.seconds);
    } else {
        o += std::string(17 + kBreakdownPartCount, ',');  // the result columns stay empty
    }
    num(static_cast<double>(row.stats.candidates)), num(static_cast<double>(row.stats.valid)),
        num(static_cast<double>(row.stats.fitting));
    return o + "\n";
}

std::string AssembleSweep(const std::vector<std::string>& rows, SweepFormat f) {
    std::string o;
    if (f == SweepFormat::csv) {
        o = SweepCsvHeader();
        for (const std::string& r : rows) o += r;
        return o;
    }
    o = "[";
    for (size_t i = 0; i < rows.size(); ++i) o += (i ? ",\n  " : "\n  ") + rows[i];
    return o + (rows.empty() ? "]\n" : "\n]\n");
}

}  // namespace sc
