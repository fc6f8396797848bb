// Writes per-rank Chakra ET files and the communicator-group JSON, one rank after another, in memory
// bounded by one stage program and its encoded rank-invariant nodes per pipeline stage (independent of the
// rank count).
#pragma once
#include <functional>
#include <memory>
#include <string>
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
    // One stage's file as every rank of the stage writes it, encoded once: the nodes that are the same on
    // all of them (compute, memory) as finished records, in runs between the nodes that depend on the rank
    // (collectives: group id; sends and receives: peers), and of those, everything but the rank-dependent
    // fields (EtWriter::EncodeRankInvariantPart). WriteRank passes each run through and encodes only those
    // few fields per rank: the same bytes as WriteNode for every node, a fraction of the work.
    struct Run {
        size_t begin = 0, end = 0;            // records of `encoded`
        uint64_t nodes = 0;
        size_t next = 0;                      // the rank-dependent node after the run (nodes.size() at the end)
        size_t part_begin = 0, part_end = 0;  // its rank-invariant part in `encoded`
    };
    struct StageBytes {
        std::string encoded;
        std::vector<Run> runs;
    };
    const StageBytes& Encoded(int stage);
    void FillNode(const StageProgram& prog, size_t i);  // node_ from the program, rank-dependent fields unset
    void FillRankFields(const StageProgram& prog, size_t i, int rank, const uint32_t* group_id, int next, int prev);

    const Job& job_;
    Layout layout_;
    std::vector<std::unique_ptr<StageProgram>> programs_;  // built lazily, one per stage
    std::vector<std::unique_ptr<StageBytes>> encoded_;     // likewise
    EtNode node_;  // reused: no allocation per node in steady state
};

}  // namespace sc
