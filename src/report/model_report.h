// The model summary as text (what `stagecraft estimate --model` prints and the page mirrors) and JSON.
#pragma once
#include <string>

#include "config/model_config.h"
#include "graph/model_stats.h"

namespace sc {

std::string ModelReportText(const ModelConfig& m, const ModelStats& st);
// "18 of 36 layers see the last 128 keys": the layers whose attention the sliding window shortens at the model's
// sequence length; "" when none.
std::string WindowLine(const ModelConfig& m);
std::string ModelReportJson(const ModelConfig& m, const ModelStats& st);

}  // namespace sc
