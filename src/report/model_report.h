// The model summary as text (what `stagecraft estimate --model` prints and the page mirrors) and JSON.
#pragma once
#include <string>

#include "config/model_config.h"
#include "graph/model_stats.h"

namespace sc {

std::string ModelReportText(const ModelConfig& m, const ModelStats& st);
std::string ModelReportJson(const ModelConfig& m, const ModelStats& st);

}  // namespace sc
