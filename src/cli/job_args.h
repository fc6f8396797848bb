// Flags shared by the commands that need a model and a parallel split.
#pragma once
#include <string>
#include <vector>

#include "cli/args.h"
#include "parallel/job.h"

namespace sc::cli {

// The flags LoadModel/LoadJob read, for ParseArgs.
std::vector<std::string> ModelFlags();  // model, set, precision
ModelConfig LoadModel(const Args& a);   // errors are prefixed with the model file's path
Job LoadJob(const Args& a);             // + --parallel

}  // namespace sc::cli
