// Layout search and co-design sweep results as text, JSON and CSV (`stagecraft search`, `stagecraft sweep`).
// Sweep rows are formatted one by one so that shards of a sweep (MPI ranks) can format their own rows and
// the root only orders and joins them: AssembleSweep(format, rows sorted by key) is the whole output.
#pragma once
#include <string>
#include <vector>

#include "config/hardware_config.h"
#include "config/model_config.h"
#include "training/search.h"
#include "training/sweep.h"

namespace sc {

// `rates`: what the best layout's rates rest on (training/rate_sources.h), printed after it; null: not printed.
std::string SearchReportText(const ModelConfig& m, const System& sys, const SearchRequest& req, const SearchResult& r,
                             const RateSources* rates = nullptr);
std::string SearchReportJson(const ModelConfig& m, const System& sys, const SearchRequest& req, const SearchResult& r,
                             const RateSources* rates = nullptr);

enum class SweepFormat { csv, json };
// One row: a CSV line (with its newline) or a JSON object (no trailing comma or newline).
std::string SweepRowText(const SweepRow& row, const SweepRequest& req, SweepFormat f);
// The whole output from rows already in (point, model) order: CSV header + lines, or a JSON array.
std::string AssembleSweep(const std::vector<std::string>& rows, SweepFormat f);
std::string SweepCsvHeader();

}  // namespace sc
