// Flags shared by `search` and `sweep`: the GPU count, global batch and the layout space to search.
#pragma once
#include <string>
#include <vector>

#include "cli/args.h"
#include "training/search.h"

namespace sc::cli {

// gpus batch tp pp cp ep microbatch schedule vstages recompute zero sp order threads
std::vector<std::string> SearchSpaceFlags();
// --gpus and --batch (required), the optional value lists (comma-separated) of the space.
SearchRequest LoadSearchRequest(const Args& a);
// --threads N: worker threads (default: the machine's hardware threads); results do not depend on it.
int LoadThreads(const Args& a);

// The usage lines of those flags.
const char* SearchSpaceUsage();

}  // namespace sc::cli
