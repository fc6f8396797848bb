#include "report/engine_report.h"

#include "report/model_report.h"
#include "report/search_report.h"
#include "report/summary_report.h"
#include "report/training_report.h"

namespace sc {

std::string EstimateReportText(const engine::Request& r, const engine::EstimateResult& e) {
    std::string out = ModelReportText(r.model, e.stats);
    if (e.training) out += TrainingReportText(*e.job, *r.system, *e.training);
    return out;
}

std::string EstimateReportJson(const engine::Request& r, const engine::EstimateResult& e) {
    if (!e.training) return ModelReportJson(r.model, e.stats);
    return "{\"model\": " + ModelReportJson(r.model, e.stats) +
           ", \"training\": " + TrainingReportJson(*e.job, *r.system, *e.training) + "}\n";
}

std::string SummaryReportText(const engine::SummaryResult& s) { return SummaryReportText(s.job, s.summary); }
std::string SummaryReportJson(const engine::SummaryResult& s) { return SummaryReportJson(s.job, s.summary); }

std::string SearchReportText(const engine::SearchSnapshot& s, const SearchResult& r) {
    return SearchReportText(s.model, s.system, s.request, r);
}
std::string SearchReportJson(const engine::SearchSnapshot& s, const SearchResult& r) {
    return SearchReportJson(s.model, s.system, s.request, r);
}

std::string PageReportText(const engine::Request& r, const engine::Evaluation& ev) {
    if (!ev.model_error.empty()) return "Model: " + r.model.name + "\nerror: " + ev.model_error + "\n";
    std::string out = ModelReportText(r.model, ev.stats);
    if (!ev.parallel_error.empty()) return out + "parallel error: " + ev.parallel_error + "\n";
    if (ev.training) out += TrainingReportText(*ev.job, *r.system, *ev.training);
    if (!ev.training_error.empty()) out += "training error: " + ev.training_error + "\n";
    if (ev.summary) out += SummaryReportText(*ev.job, *ev.summary);
    return out;
}

}  // namespace sc
