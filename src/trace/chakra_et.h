// Chakra execution traces (ET) for ASTRA-sim: one file per rank, a stream of varint-length-framed protobuf
// records, GlobalMetadata first and then one Node per record. The rules (which attribute, which value kind,
// why zero values are written) are those of docs/chakra_et.md; section numbers below refer to it.
//
// EtWriter encodes the subset of the schema we emit; ReadEt decodes any conforming file back into the same
// structs (tests, summary-vs-trace checks). Both are pure: bytes go through a ByteSink / come in as a view.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <protozero/varint.hpp>

#include "trace/byte_sink.h"

namespace sc {

// ChakraProtoMsg.NodeType; the values are the wire values (section 4).
enum class EtNodeType : int32_t {
    invalid = 0,
    metadata = 1,
    mem_load = 2,
    mem_store = 3,
    comp = 4,
    comm_send = 5,
    comm_recv = 6,
    comm_coll = 7,
};

// ChakraProtoMsg.CollectiveCommType. ASTRA-sim simulates all_reduce, all_gather, reduce_scatter and
// all_to_all on the network, replays broadcast, and rejects the rest (section 5).
enum class CollectiveType : int32_t {
    all_reduce = 0,
    reduce = 1,
    all_gather = 2,
    gather = 3,
    scatter = 4,
    broadcast = 5,
    all_to_all = 6,
    reduce_scatter = 7,
    reduce_scatter_block = 8,
    barrier = 9,
};

const char* NameOf(EtNodeType t);      // "COMP_NODE", as the schema spells it
const char* NameOf(CollectiveType t);  // "ALL_REDUCE"

// One node as we write it. Which fields reach the file depends on `type` (section 5); the others are
// ignored by the writer and left at their defaults by the reader. Generators should keep one EtNode and
// overwrite it per node: assigning to `name` and the dep vectors then reuses their capacity.
struct EtNode {
    uint64_t id = 0;  // unique within the file
    std::string name;
    EtNodeType type = EtNodeType::invalid;
    std::vector<uint64_t> data_deps;  // parents; both ASTRA-sim feeders honour these
    std::vector<uint64_t> ctrl_deps;  // parents only FeederV3 honours: don't put required ordering here
    uint64_t duration_micros = 0;     // replay-mode runtime (COMP, and BROADCAST which is replayed)

    int64_t num_ops = 0;       // COMP: FLOPs
    uint64_t tensor_size = 0;  // COMP: bytes touched; MEM_LOAD / MEM_STORE: bytes moved

    CollectiveType comm_type = CollectiveType::all_reduce;  // COLL
    int64_t comm_size = 0;                                  // COLL / SEND / RECV: bytes
    int32_t comm_src = -1;  // RECV: the peer. SEND: -1 or the writer's rank (written as the rank)
    int32_t comm_dst = -1;  // SEND: the peer. RECV: -1 or the writer's rank (written as the rank)
    int32_t comm_tag = 0;   // SEND / RECV: pairs with the peer on (src, dst, tag, size)
    uint32_t pg = 0;        // COLL: communicator group id (comm_groups.h); 0 = world, pg_name not written

    bool operator==(const EtNode&) const = default;
};

// Writes one rank's file: WriteMetadata once, then WriteNode per node. Every record goes to the sink in
// a single Write (length prefix included), so nothing is pending and there is no Flush. Steady state
// allocates nothing: the record is built in a buffer that keeps its capacity.
// Throws sc::Error on input ASTRA-sim would reject (negative tag, send size 0, a send whose comm_src is
// not this rank, a node depending on itself, ...); the message names the node id and the field.
class EtWriter {
public:
    EtWriter(ByteSink& sink, int32_t rank);

    // Version must be non-empty: an empty GlobalMetadata is a 0-length record, which Chakra's Python
    // tools read as end of file (section 6).
    void WriteMetadata(std::string_view version = "1.0.0");
    void WriteNode(const EtNode& node);
    // For a writer that writes the same nodes from many ranks (RankTraceWriter): a node's message is the
    // part no rank changes (everything but a collective's pg_name and a send's or receive's comm_src and
    // comm_dst, which every record puts last) followed by the part the writing rank fills in. Each encoder
    // validates what it encodes, as WriteNode would. FrameRecord and CompleteRecord write the length prefix
    // and the parts: the same bytes as WriteNode(node) in `rank`'s file.
    static constexpr size_t kMaxFramePrefixBytes = 5;
    static constexpr size_t kMaxRankDependentBytes = 80;  // a multiple of 8: see AppendWords
    struct RankDependentPart {
        char bytes[kMaxRankDependentBytes];
        size_t size = 0;
    };
    static std::string EncodeRankInvariantPart(const EtNode& node);
    // Reads only the node's type and rank-dependent fields.
    static void EncodeRankDependentPart(const EtNode& node, int32_t rank, RankDependentPart& out);
    // Needs kMaxFramePrefixBytes + invariant_part.size() + kMaxRankDependentBytes of room at `out` (the
    // dependent part is copied in whole 8-byte words: a few bytes past the record's end may be written);
    // returns the record's end. Inline, as CompleteRecord: they run once per collective, send and receive of
    // every rank.
    static char* FrameRecord(char* out, std::string_view invariant_part, const RankDependentPart& dependent_part) {
        out += protozero::add_varint_to_buffer(out, invariant_part.size() + dependent_part.size);
        std::memcpy(out, invariant_part.data(), invariant_part.size());
        return AppendWords(out + invariant_part.size(), dependent_part);
    }
    // The largest dependent part a node of this type can have (the widest group id or rank).
    static size_t MaxRankDependentSize(EtNodeType type);
    // The length prefix's size when it is the same for every dependent part up to `max_dependent_size`
    // bytes (0 when it is not). A writer can then keep that much room before the invariant part, copy both
    // together with the records before them, and finish the record with CompleteRecord: one copy fewer per
    // node than FrameRecord.
    static size_t FixedPrefixSize(size_t invariant_size, size_t max_dependent_size) {
        const int least = protozero::length_of_varint(invariant_size);
        return least == protozero::length_of_varint(invariant_size + max_dependent_size) ? static_cast<size_t>(least)
                                                                                         : 0;
    }
    // `part` holds the invariant part, its FixedPrefixSize bytes of room before it and the room
    // FrameRecord needs after it. Writes the prefix and the dependent part; returns the record's end.
    static char* CompleteRecord(char* part, size_t part_size, const RankDependentPart& dependent_part) {
        const size_t prefix = protozero::length_of_varint(part_size);
        protozero::add_varint_to_buffer(part - prefix, part_size + dependent_part.size);
        return AppendWords(part + part_size, dependent_part);
    }

    uint64_t nodes_written() const { return nodes_; }
    uint64_t bytes_written() const { return bytes_; }

private:
    // Whole words, each a fixed-size copy the compiler makes one load and one store: the dependent part is
    // 10-30 bytes, where a memcpy call costs more than the copy (under wasm, calls here took a third of the
    // per-rank trace write, scripts/bench (e)). Reads stay in `bytes`; writes stay in the promised room.
    static char* AppendWords(char* out, const RankDependentPart& part) {
        static_assert(kMaxRankDependentBytes % 8 == 0);
        for (size_t k = 0; k < part.size; k += 8) std::memcpy(out + k, part.bytes + k, 8);
        return out + part.size;
    }
    void Validate(const EtNode& node) const;
    size_t EncodeNode(const EtNode& node);  // into record_; returns the message size
    void EmitRecord(size_t size);           // frames the message in record_ and hands it to the sink

    ByteSink& sink_;
    int32_t rank_;
    bool have_metadata_ = false;
    uint64_t nodes_ = 0;
    uint64_t bytes_ = 0;
    // Raw storage: kFrameRoom bytes of headroom, then the message. The length varint is written
    // right-aligned into the headroom once the size is known, so the record leaves in one piece without
    // being copied. Only its size() matters; it grows when a node's size bound exceeds it.
    std::string record_;
};

struct EtFile {
    std::string version;  // GlobalMetadata.version ("" when the writer left it out)
    std::vector<EtNode> nodes;
};

// Streams the nodes out of one file's bytes without materialising them all. Accepts what protobuf
// parsers accept: packed or unpacked deps, fields in any order (last one wins), unknown fields skipped.
// Attributes are matched by name, first occurrence wins (as in FeederV3), and any integer kind or bool
// converts. Throws sc::Error, naming the byte offset, on truncated or malformed records, on an integer
// attribute carrying a non-integer value, and on a pg_name that is not a decimal string.
class EtReader {
public:
    explicit EtReader(std::string_view bytes);  // reads the GlobalMetadata record
    const std::string& version() const { return version_; }
    bool Next(EtNode* node);  // false at end of input; `node` is fully overwritten otherwise

private:
    std::string_view NextRecord();  // the record at pos_, advancing past it

    std::string_view bytes_;
    size_t pos_ = 0;
    std::string version_;
};

EtFile ReadEt(std::string_view bytes);

}  // namespace sc
