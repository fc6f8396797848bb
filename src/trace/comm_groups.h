// The communicator-group file ASTRA-sim takes with --comm-group-configuration (by convention
// <prefix>.json next to the <prefix>.<rank>.et files): {"1": [0, 1], "2": [2, 3]}. A COMM_COLL_NODE names
// its group with pg_name = the decimal id (EtNode::pg). Ids must be > 0 because ASTRA-sim asserts it and
// 0 means the world group, so group i of the list gets id i + 1.
#pragma once
#include <vector>

#include "trace/byte_sink.h"

namespace sc {

// Writes `groups` as JSON text, one group per line, ranks sorted ascending. Streams in chunks rather than
// building a JSON object, since 32K ranks times several group kinds would be a large DOM for a flat list.
// Throws sc::Error for an empty group, a duplicate rank within a group, or a rank outside 0..num_ranks-1.
void WriteCommGroups(ByteSink& sink, const std::vector<std::vector<int>>& groups, int num_ranks);

}  // namespace sc
