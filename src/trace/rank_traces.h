// Writes per-rank Chakra ET files and the communicator-group JSON, one rank after another, in memory
// bounded by one stage program and its encoded rank-invariant nodes per pipeline stage (independent of the
// rank count), and by kMaxHeldTraceNodes over all of them.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "parallel/job.h"
#include "trace/byte_sink.h"
#include "trace/stage_program.h"

namespace sc {

// Seconds of every node of a stage program (index-aligned): what fills a COMP node's duration_micros.
using StageSeconds = std::function<std::vector<double>(const StageProgram&)>;

class RankTraceWriter {
public:
    // With `seconds`, every COMP node carries duration_micros (rounded to the microsecond, at least 1) for
    // ASTRA-sim's replay mode beside num_ops and tensor_size for its roofline mode; without, duration 0.
    // `max_held_nodes` bounds the stage programs held together (tests of the limit pass a smaller one).
    explicit RankTraceWriter(const Job& job, StageSeconds seconds = {}, uint64_t max_held_nodes = kMaxHeldTraceNodes);
    ~RankTraceWriter();
    RankTraceWriter(const RankTraceWriter&) = delete;
    RankTraceWriter& operator=(const RankTraceWriter&) = delete;

    static constexpr size_t kSizeSample = 4096;  // nodes a stage encodes before its bytes are reserved

    int world() const { return layout_.world(); }
    // Rank r's whole file (GlobalMetadata then every node), built in a buffer the writer reuses: the view
    // is valid until the next call.
    std::string_view RankFile(int rank);
    // The same file in pieces, so that a whole file is never held beside its stage's bytes (a stage at the node
    // limit makes 1.4 GB files, which the page's 4 GB cannot hold twice): StartRankFile, then NextPiece until it
    // returns an empty view. A piece is at most `max_bytes` plus one collective's or peer operation's record, in
    // the buffer RankFile uses (valid until the next call); the pieces joined are RankFile's bytes. Starting
    // another rank, or RankFile, ends the file under way.
    void StartRankFile(int rank);
    std::string_view NextPiece(size_t max_bytes);
    // The file into `sink` in pieces of kWritePieceBytes. Returns the node count.
    uint64_t WriteRank(int rank, ByteSink& sink);
    static constexpr size_t kWritePieceBytes = size_t{8} << 20;
    size_t FileBufferBytes() const { return file_.size(); }  // the buffer RankFile and NextPiece fill (tests)
    // The communicator groups JSON ({"1": [0, 1], ...}) that ASTRA-sim takes with --comm-group-configuration.
    void WriteCommGroups(ByteSink& sink) const;
    // Stage `stage`'s program (built when first asked for; a program the writer built only to encode its ranks was
    // dropped then, and is built again). The reference stays valid while the writer lives.
    const StageProgram& Program(int stage);
    // Builds stage `stage`'s bytes (its program, its nodes' times, their encoding) by about `min_nodes` nodes of
    // work; true once its ranks' files need nothing more than their own fields filled in. RankFile does whatever is
    // left at once; the page's download calls this first, a slice between frames, so a stage of millions of nodes
    // (seconds of work in wasm) never stops the page. Asking for another stage drops a part-built one.
    bool Prepare(int stage, uint64_t min_nodes);
    bool PrepareRank(int rank, uint64_t min_nodes);  // Prepare of the rank's stage
    // Nodes of the stage programs held now (tests: those built only to encode ranks are dropped).
    uint64_t ProgramNodesHeld() const;

private:
    // What a rank-dependent node needs from its rank: a collective the id of its group of one kind; a send
    // or receive the rank and its peer one stage up or down. One slot per case; each rank encodes each
    // slot's bytes once (EtWriter::EncodeRankDependentPart), whatever the number of nodes using it.
    enum Slot : uint8_t { kSendNext = static_cast<uint8_t>(GroupKind::count), kSendPrev, kRecvNext, kRecvPrev, kSlots };
    // One stage's file as every rank of the stage writes it, encoded once: the nodes that are the same on
    // all of them (compute, memory) as finished records, and of the nodes that depend on the rank, everything
    // but the rank-dependent fields (EtWriter::EncodeRankInvariantPart), each right after the records before
    // it (after room for its length prefix when that is the same for every rank). A rank's file is then the
    // runs copied as they are, each rank-dependent node framed with its slot's bytes between them: the same
    // bytes as WriteNode for every node, a fraction of the work.
    struct Hole {
        size_t part_begin = 0, part_end = 0;  // the node's rank-invariant part in `encoded`
        Slot slot = kSlots;
        uint8_t prefix_room = 0;  // EtWriter::FixedPrefixSize: bytes kept for the length prefix before the part
    };
    struct StageBytes {
        std::string encoded;
        std::vector<Hole> holes;  // in file order; the records before a hole end at its part_begin
        uint64_t nodes = 0;
        size_t max_part = 0;  // the largest hole's part: what a piece may run past its size by
        bool uses[kSlots] = {};
    };
    // The rank file under way (StartRankFile / NextPiece).
    struct RankCursor {
        const StageBytes* enc = nullptr;           // null: none (or its last piece was handed out)
        EtWriter::RankDependentPart slot[kSlots];  // the rank's bytes for each slot its stage uses
        size_t hole = 0, pos = 0;                  // the next hole, the next byte of enc->encoded
        bool metadata = false;                     // GlobalMetadata handed out
    };
    const StageBytes& Encoded(int stage);  // Prepare run to the end
    struct Pending;                        // a stage's bytes part built (rank_traces.cpp)
    bool Advance(int stage, uint64_t min_nodes);
    void EncodeNode(Pending& q, size_t i);
    void Abandon();                                     // drops the part-built stage
    int StageOf(int rank) const;                        // throws for a rank outside the job
    void FillNode(const StageProgram& prog, size_t i);  // node_ from the program, rank-dependent fields unset

    const Job& job_;
    StageSeconds seconds_of_;
    std::vector<double> seconds_;  // of the stage being encoded
    Layout layout_;
    std::vector<std::unique_ptr<StageProgram>> programs_;  // built lazily, one per stage; dropped once encoded
    std::vector<std::unique_ptr<StageBytes>> encoded_;     // likewise, kept
    uint64_t max_held_nodes_;
    uint64_t held_nodes_ = 0;  // of the stages in programs_ or encoded_ (each counted once): at most max_held_nodes_
    std::unique_ptr<Pending> pending_;  // the stage Prepare is building, at most one
    std::string metadata_;              // the GlobalMetadata record, the same in every file
    std::string file_;                  // RankFile's and NextPiece's buffer: only grows
    RankCursor cursor_;
    EtNode node_;  // reused: no allocation per node in steady state
};

}  // namespace sc
