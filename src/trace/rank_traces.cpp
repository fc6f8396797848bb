#include "trace/rank_traces.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "config/error.h"
#include "trace/comm_groups.h"

namespace sc {

// A stage's bytes in three phases, each resumable: its program (unless one was asked for already), its nodes'
// times (whole, in one call: about an eighth of the encoding's work), then the nodes encoded in order.
struct RankTraceWriter::Pending {
    int stage = -1;
    std::unique_ptr<StageProgramStream> stream;  // phase 1, when the writer builds the program
    std::unique_ptr<StageProgram> owned;         // the program it built (dropped once encoded)
    const StageProgram* prog = nullptr;          // the program being encoded: `owned` or programs_[stage]
    bool timed = false;
    size_t next = 0;  // the next node to encode
    StringSink sink;
    std::unique_ptr<EtWriter> writer;  // writes into sink
    std::unique_ptr<StageBytes> out = std::make_unique<StageBytes>();
};

RankTraceWriter::RankTraceWriter(const Job& job, StageSeconds seconds, uint64_t max_held_nodes)
    : job_(job),
      seconds_of_(std::move(seconds)),
      layout_(job.par),
      programs_(job.par.pp),
      encoded_(job.par.pp),
      max_held_nodes_(max_held_nodes) {
    StringSink sink;
    EtWriter(sink, 0).WriteMetadata("1.0.0");
    metadata_ = std::move(sink.bytes);
}

const StageProgram& RankTraceWriter::Program(int stage) {
    if (!programs_[stage] && pending_ && pending_->stage == stage && pending_->owned) {
        programs_[stage] = std::move(pending_->owned);  // the one Prepare built (and counted): now asked for, kept
        pending_->prog = programs_[stage].get();
    }
    if (!programs_[stage]) {
        // A stage already encoded is counted in held_nodes_ once, as bytes: its program again takes no more room.
        const uint64_t counted = encoded_[stage] ? encoded_[stage]->nodes : 0;
        programs_[stage] =
            std::make_unique<StageProgram>(BuildStageProgram(job_, stage, max_held_nodes_ - held_nodes_ + counted));
        held_nodes_ += programs_[stage]->nodes.size() - counted;
    }
    return *programs_[stage];
}

uint64_t RankTraceWriter::ProgramNodesHeld() const {
    uint64_t n = 0;
    for (const auto& p : programs_)
        if (p) n += p->nodes.size();
    return n;
}

void RankTraceWriter::FillNode(const StageProgram& prog, size_t i) {
    const ProgNode& p = prog.nodes[i];
    EtNode& n = node_;
    n.id = i;
    n.name = prog.names[p.name];
    n.type = p.type;
    n.data_deps.assign(prog.deps.begin() + p.dep_begin, prog.deps.begin() + p.dep_begin + p.dep_count);
    n.ctrl_deps.clear();
    n.duration_micros = 0;
    // Compute nodes, and the offload copies (ASTRA-sim times those with its remote-memory model; the duration is
    // what the replay and other readers take).
    const bool timed = p.type == EtNodeType::comp || p.type == EtNodeType::mem_load || p.type == EtNodeType::mem_store;
    if (timed && i < seconds_.size()) {
        if (!std::isfinite(seconds_[i]) || seconds_[i] < 0)
            throw Error("duration",
                        "node " + n.name + " has no finite duration (" + std::to_string(seconds_[i]) + " s)");
        n.duration_micros = static_cast<uint64_t>(std::max<long long>(1, std::llround(seconds_[i] * 1e6)));
    }
    n.num_ops = p.flops;
    n.tensor_size = p.bytes;
    n.comm_type = p.coll;
    n.comm_size = p.comm_bytes;
    n.comm_src = n.comm_dst = -1;
    n.comm_tag = p.tag;
    n.pg = 0;
}

RankTraceWriter::~RankTraceWriter() = default;

void RankTraceWriter::Abandon() {
    if (pending_ && pending_->owned) held_nodes_ -= pending_->owned->nodes.size();  // counted when it was built
    pending_.reset();
}

bool RankTraceWriter::Prepare(int stage, uint64_t min_nodes) {
    if (stage < 0 || stage >= job_.par.pp)
        throw Error("stage", "stage " + std::to_string(stage) + " is outside 0.." + std::to_string(job_.par.pp - 1));
    if (encoded_[stage]) return true;
    try {
        return Advance(stage, min_nodes);
    } catch (...) {
        Abandon();  // a program past the node limit, or memory run out: nothing half-built stays
        throw;
    }
}

bool RankTraceWriter::Advance(int stage, uint64_t min_nodes) {
    if (pending_ && pending_->stage != stage) Abandon();
    if (!pending_) {
        pending_ = std::make_unique<Pending>();
        Pending& q = *pending_;
        q.stage = stage;
        if (programs_[stage]) {
            q.prog = programs_[stage].get();  // asked for (Program): kept, already counted
        } else {
            // A stage already encoded and dropped is not here; one counted as bytes is not rebuilt (encoded_ above).
            q.stream = std::make_unique<StageProgramStream>(job_, stage, nullptr, max_held_nodes_ - held_nodes_);
        }
    }
    Pending& q = *pending_;
    uint64_t work = 0;  // nodes' worth of work done by this call
    if (q.stream) {
        if (!q.stream->Advance(std::max<uint64_t>(1, min_nodes))) return false;
        q.owned = std::make_unique<StageProgram>(q.stream->Take());
        q.stream.reset();
        q.prog = q.owned.get();
        held_nodes_ += q.prog->nodes.size();
        if (min_nodes != UINT64_MAX) return false;  // this call built a slice of it: the times next call
    }
    const StageProgram& prog = *q.prog;
    const size_t n = prog.nodes.size();
    if (!q.timed) {
        seconds_.clear();
        if (seconds_of_) seconds_ = seconds_of_(prog);
        q.timed = true;
        q.writer = std::make_unique<EtWriter>(q.sink, 0);
        q.writer->WriteMetadata("1.0.0");
        q.sink.bytes.clear();  // only node records are kept
        work += n / 8;         // the times cost about an eighth of the encoding
        if (work >= min_nodes) return false;
    }
    for (; q.next < n && work < min_nodes; ++q.next, ++work) EncodeNode(q, q.next);
    if (q.next < n) return false;
    q.out->encoded = std::move(q.sink.bytes);
    q.out->nodes = n;
    encoded_[stage] = std::move(q.out);
    // The ranks need only the bytes: a program built for them is dropped (held_nodes_ keeps counting the stage),
    // about a third of what a stage holds while its ranks are written. One asked for (Program) stays.
    pending_.reset();
    return true;
}

void RankTraceWriter::EncodeNode(Pending& q, size_t i) {
    const StageProgram& prog = *q.prog;
    const size_t n = prog.nodes.size();
    std::string& bytes = q.sink.bytes;
    // The bytes reserved from the first nodes' size: a string doubling on its way to a gigabyte holds the old and
    // the new buffer at once, which the page's 4 GB of wasm memory cannot spare at the node limit.
    if (i == kSizeSample && n > 4 * kSizeSample)
        bytes.reserve(static_cast<size_t>(1.1 * static_cast<double>(bytes.size()) / kSizeSample * n));
    const ProgNode& p = prog.nodes[i];
    FillNode(prog, i);
    Slot slot;
    if (p.type == EtNodeType::comm_coll) slot = static_cast<Slot>(p.group);
    else if (p.type == EtNodeType::comm_send) slot = p.peer > 0 ? kSendNext : kSendPrev;
    else if (p.type == EtNodeType::comm_recv) slot = p.peer > 0 ? kRecvNext : kRecvPrev;
    else return q.writer->WriteNode(node_);
    Hole h;
    const std::string part = EtWriter::EncodeRankInvariantPart(node_);
    h.prefix_room =
        static_cast<uint8_t>(EtWriter::FixedPrefixSize(part.size(), EtWriter::MaxRankDependentSize(p.type)));
    bytes.append(h.prefix_room, '\0');
    h.part_begin = bytes.size();
    bytes += part;
    h.part_end = bytes.size();
    h.slot = slot;
    q.out->max_part = std::max(q.out->max_part, part.size());
    q.out->holes.push_back(h);
    q.out->uses[slot] = true;
}

int RankTraceWriter::StageOf(int rank) const {
    if (rank < 0 || rank >= layout_.world())
        throw Error("rank", "rank " + std::to_string(rank) + " is outside 0.." + std::to_string(layout_.world() - 1));
    return layout_.Stage(rank);
}

bool RankTraceWriter::PrepareRank(int rank, uint64_t min_nodes) { return Prepare(StageOf(rank), min_nodes); }

const RankTraceWriter::StageBytes& RankTraceWriter::Encoded(int stage) {
    while (!Prepare(stage, UINT64_MAX)) {}
    return *encoded_[stage];
}

void RankTraceWriter::StartRankFile(int rank) {
    cursor_.enc = nullptr;
    const StageBytes& enc = Encoded(StageOf(rank));
    // This rank's bytes for each slot its stage uses.
    EtNode& n = node_;
    n.id = 0, n.name.clear(), n.data_deps.clear(), n.ctrl_deps.clear();
    for (int s = 0; s < kSlots; ++s) {
        if (!enc.uses[s]) continue;
        n.pg = 0, n.comm_src = n.comm_dst = -1;
        if (s < static_cast<int>(GroupKind::count)) {
            n.type = EtNodeType::comm_coll;
            n.pg = layout_.GroupId(static_cast<GroupKind>(s), rank);
        } else {
            const bool send = s == kSendNext || s == kSendPrev;
            const int peer = layout_.PipelinePeer(rank, s == kSendNext || s == kRecvNext ? +1 : -1);
            n.type = send ? EtNodeType::comm_send : EtNodeType::comm_recv;
            n.name = send ? "send to a neighbour stage" : "recv from a neighbour stage";  // for an error only
            (send ? n.comm_dst : n.comm_src) = peer;
        }
        EtWriter::EncodeRankDependentPart(n, rank, cursor_.slot[s]);
    }
    cursor_.hole = cursor_.pos = 0;
    cursor_.metadata = false;
    cursor_.enc = &enc;
}

std::string_view RankTraceWriter::NextPiece(size_t max_bytes) {
    RankCursor& c = cursor_;
    if (!c.enc) return {};
    const StageBytes& enc = *c.enc;
    // The piece stops at `limit` bytes, or after the first record that crosses it (at most `record` bytes).
    const size_t limit = std::max({max_bytes, metadata_.size(), size_t{1}});
    const size_t record = EtWriter::kMaxFramePrefixBytes + enc.max_part + EtWriter::kMaxRankDependentBytes;
    const size_t whole = metadata_.size() + enc.encoded.size() +
                         enc.holes.size() * (EtWriter::kMaxFramePrefixBytes + EtWriter::kMaxRankDependentBytes);
    const size_t bound = limit >= whole ? whole : std::min(whole, limit + record);
    if (file_.size() < bound) file_.resize(bound);
    char* const begin = file_.data();
    char* o = begin;
    if (!c.metadata) {
        std::memcpy(o, metadata_.data(), metadata_.size());
        o += metadata_.size();
        c.metadata = true;
    }
    const char* e = enc.encoded.data();
    while (static_cast<size_t>(o - begin) < limit) {
        const size_t left = limit - static_cast<size_t>(o - begin);
        if (c.hole == enc.holes.size()) {  // the records after the last hole
            const size_t n = std::min(left, enc.encoded.size() - c.pos);
            std::memcpy(o, e + c.pos, n);
            o += n, c.pos += n;
            break;
        }
        const Hole& h = enc.holes[c.hole];
        const size_t run_end = h.part_begin - h.prefix_room;  // the records before the hole end here
        if (run_end - c.pos > left) {                         // the piece ends among them
            std::memcpy(o, e + c.pos, left);
            o += left, c.pos += left;
            break;
        }
        const size_t part = h.part_end - h.part_begin;
        if (h.prefix_room) {  // the records before, the prefix's room and the part in one copy
            std::memcpy(o, e + c.pos, h.part_end - c.pos);
            o = EtWriter::CompleteRecord(o + (h.part_begin - c.pos), part, c.slot[h.slot]);
        } else {
            std::memcpy(o, e + c.pos, h.part_begin - c.pos);
            o = EtWriter::FrameRecord(o + (h.part_begin - c.pos), std::string_view(e + h.part_begin, part),
                                      c.slot[h.slot]);
        }
        c.pos = h.part_end, ++c.hole;
    }
    if (c.hole == enc.holes.size() && c.pos == enc.encoded.size()) c.enc = nullptr;  // this was the last piece
    return std::string_view(begin, static_cast<size_t>(o - begin));
}

std::string_view RankTraceWriter::RankFile(int rank) {
    StartRankFile(rank);
    return NextPiece(SIZE_MAX);
}

uint64_t RankTraceWriter::WriteRank(int rank, ByteSink& sink) {
    StartRankFile(rank);
    for (std::string_view piece = NextPiece(kWritePieceBytes); !piece.empty(); piece = NextPiece(kWritePieceBytes))
        sink.Write(piece);
    return encoded_[layout_.Stage(rank)]->nodes;
}

void RankTraceWriter::WriteCommGroups(ByteSink& sink) const {
    std::vector<std::vector<int>> groups;
    std::vector<int> members;
    for (int k = 0; k < static_cast<int>(GroupKind::count); ++k) {
        GroupKind kind = static_cast<GroupKind>(k);
        if (layout_.GroupSize(kind) <= 1) continue;
        for (int i = 0; i < layout_.GroupCount(kind); ++i) {
            layout_.Members(kind, i, members);
            groups.push_back(members);
        }
    }
    sc::WriteCommGroups(sink, groups, layout_.world());
}

}  // namespace sc
