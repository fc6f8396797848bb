#include "report/engine_report.h"

#include <nlohmann/json.hpp>

#include "report/model_report.h"
#include "report/search_report.h"
#include "report/summary_report.h"
#include "report/training_report.h"

namespace sc {

std::string EstimateReportText(const engine::Request& r, const engine::EstimateResult& e) {
    std::string out = ModelReportText(r.model, e.stats);
    if (e.training) out += TrainingReportText(*e.job, e.slice ? *e.slice : *r.system, *e.training);
    return out;
}

// `stagecraft estimate --json`: the model alone, or the model and its training estimate.
static std::string EstimateJson(const engine::Request& r, const ModelStats& stats, const Job* job,
                                const TrainingEstimate* training, const std::optional<System>& slice) {
    if (!training) return ModelReportJson(r.model, stats);
    return "{\"model\": " + ModelReportJson(r.model, stats) +
           ", \"training\": " + TrainingReportJson(*job, slice ? *slice : *r.system, *training) + "}\n";
}

std::string EstimateReportJson(const engine::Request& r, const engine::EstimateResult& e) {
    return EstimateJson(r, e.stats, e.job ? &*e.job : nullptr, e.training ? &*e.training : nullptr, e.slice);
}

std::string SummaryReportText(const engine::SummaryResult& s) { return SummaryReportText(s.job, s.summary); }
std::string SummaryReportJson(const engine::SummaryResult& s) { return SummaryReportJson(s.job, s.summary); }

// What the best layout's rates rest on (every layout runs on the same part and precision), once per report: the
// search's own estimates carry none, their hot path formats no text.
static std::optional<RateSources> BestRates(const engine::SearchSnapshot& s, const SearchResult& r) {
    if (r.top.empty()) return std::nullopt;
    return DescribeRates(MakeJob(s.model, r.top[0].par, s.options.kernels), s.system, s.calibration.get(), s.options);
}
std::string SearchReportText(const engine::SearchSnapshot& s, const SearchResult& r) {
    const std::optional<RateSources> rates = BestRates(s, r);
    return SearchReportText(s.model, s.system, s.request, r, rates ? &*rates : nullptr);
}
std::string SearchReportJson(const engine::SearchSnapshot& s, const SearchResult& r) {
    const std::optional<RateSources> rates = BestRates(s, r);
    return SearchReportJson(s.model, s.system, s.request, r, rates ? &*rates : nullptr);
}

std::string PageReportText(const engine::Request& r, const engine::Evaluation& ev) {
    if (!ev.model_error.empty()) return "Model: " + r.model.name + "\nerror: " + ev.model_error + "\n";
    std::string out = ModelReportText(r.model, ev.stats);
    if (!ev.parallel_error.empty()) return out + "parallel error: " + ev.parallel_error + "\n";
    if (ev.training) out += TrainingReportText(*ev.job, ev.slice ? *ev.slice : *r.system, *ev.training);
    if (!ev.training_error.empty()) out += "training error: " + ev.training_error + "\n";
    if (ev.summary) out += SummaryReportText(*ev.job, *ev.summary);
    if (!ev.summary_error.empty()) out += "summary error: " + ev.summary_error + "\n";
    if (ev.summary_pending)
        out += "summary: being counted (" + std::to_string(ev.job->par.world()) + " ranks, " +
               std::to_string(ev.job->par.microbatches()) + " microbatches a step)\n";
    return out;
}

std::string PageReportJson(const engine::Request& r, const engine::Evaluation& ev) {
    using Json = nlohmann::ordered_json;
    Json j = Json::object();
    auto error = [&](const char* stage, const std::string& message) {
        j["errors"].push_back({{"stage", stage}, {"message", message}});
    };
    if (!ev.model_error.empty()) {
        error("model", ev.model_error);
        return j.dump(2) + "\n";
    }
    const TrainingEstimate* training = ev.training ? &*ev.training : nullptr;
    j["estimate"] = Json::parse(EstimateJson(r, ev.stats, ev.job ? &*ev.job : nullptr, training, ev.slice));
    if (!ev.parallel_error.empty()) error("parallel", ev.parallel_error);
    if (!ev.training_error.empty()) error("training", ev.training_error);
    if (!ev.summary_error.empty()) error("summary", ev.summary_error);
    if (ev.summary) j["summary"] = Json::parse(SummaryReportJson(*ev.job, *ev.summary));
    if (ev.summary_pending) j["summary_pending"] = true;
    return j.dump(2) + "\n";
}

}  // namespace sc
