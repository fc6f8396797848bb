// Writes per-rank Chakra ET files and the communicator-group JSON, one rank after another, in memory
// bounded by one stage program per pipeline stage (independent of the rank count).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "parallel/job.h"
#include "trace/byte_sink.h"
#include "trace/stage_program.h"

namespace sc {

class RankTraceWriter {
public:
    explicit RankTraceWriter(const Job& job);

    int world() const { return layout_.world(); }
    // Rank r's whole file (GlobalMetadata then every node) into `sink`. Returns the node count.
    uint64_t WriteRank(int rank, ByteSink& sink);
    // The communicator groups JSON ({"1": [0, 1], ...}) that ASTRA-sim takes with --comm-group-configuration.
    void WriteCommGroups(ByteSink& sink) const;
    const StageProgram& Program(int stage);

private:
    const Job& job_;
    Layout layout_;
    std::vector<std::unique_ptr<StageProgram>> programs_;  // built lazily, one per stage
    EtNode node_;  // reused: no allocation per node in steady state
};

}  // namespace sc
