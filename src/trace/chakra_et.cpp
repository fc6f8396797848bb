// Section numbers in the comments below refer to docs/chakra_et.md (the format as ASTRA-sim reads it).
#include "trace/chakra_et.h"

#include <protozero/buffer_fixed.hpp>
#include <protozero/pbf_reader.hpp>
#include <protozero/pbf_writer.hpp>
#include <protozero/varint.hpp>

#include <array>
#include <charconv>
#include <cstring>
#include <iterator>
#include <limits>

#include "config/error.h"

namespace sc {
namespace {

// Field numbers of et_def.proto (section 3).
constexpr uint32_t kMetaVersion = 1;
constexpr uint32_t kNodeId = 1, kNodeName = 2, kNodeType = 3, kNodeCtrlDeps = 4, kNodeDataDeps = 5, kNodeDuration = 7,
                   kNodeAttr = 10;
constexpr uint32_t kAttrName = 1;
// AttributeProto oneof members we write or convert on reading.
constexpr uint32_t kInt32Val = 7, kInt64Val = 9, kUint32Val = 11, kUint64Val = 13, kSint32Val = 15, kSint64Val = 17,
                   kFixed32Val = 19, kFixed64Val = 21, kSfixed32Val = 23, kSfixed64Val = 25, kBoolVal = 27,
                   kStringVal = 29;

// A record's length prefix is a varint32: at most 5 bytes.
constexpr size_t kFrameRoom = 5;

// Records are encoded into a buffer sized beforehand from an upper bound (NodeSizeBound), through
// protozero's fixed-size adaptor: appending is then a bounds check and a store, where the std::string
// writer paid for a capacity check per byte. At ~100 bytes a node that difference is most of the cost.
using Pbf = protozero::basic_pbf_writer<protozero::fixed_size_buffer_adaptor>;
using protozero::pbf_wire_type;

// {name: "is_cpu_op", bool_val: false}, the byte example of section 3. It is on every node, so it is
// copied in whole; bool_val 0 must be present or the oneof reads as "not set" (section 6).
constexpr char kIsCpuOpFalseBytes[] =
    "\x0a\x09"
    "is_cpu_op"
    "\xd8\x01\x00";
constexpr std::string_view kIsCpuOpFalse{kIsCpuOpFalseBytes, sizeof(kIsCpuOpFalseBytes) - 1};

// The constant start of an AttributeProto: its name field and the tag of its oneof value member. Every
// attribute is written as head + value in one length-delimited field (add_bytes_vectored), which spares
// the per-attribute nested writer whose length fix-up moves the body back by up to 4 bytes.
struct AttrHead {
    std::array<char, 24> bytes{};
    size_t size = 0;
    constexpr std::string_view view() const { return {bytes.data(), size}; }
};

constexpr AttrHead MakeAttrHead(std::string_view name, uint32_t member, pbf_wire_type wire_type) {
    AttrHead h;
    h.bytes[h.size++] = static_cast<char>((kAttrName << 3) | 2);
    h.bytes[h.size++] = static_cast<char>(name.size());  // our names are < 128 bytes: a 1-byte length
    for (char c : name) h.bytes[h.size++] = c;
    uint32_t tag = (member << 3) | static_cast<uint32_t>(wire_type);
    for (; tag >= 0x80; tag >>= 7) h.bytes[h.size++] = static_cast<char>((tag & 0x7F) | 0x80);
    h.bytes[h.size++] = static_cast<char>(tag);
    return h;
}

// Value kinds per section 5: the ones both feeders read.
constexpr AttrHead kNumOps = MakeAttrHead("num_ops", kInt64Val, pbf_wire_type::varint);
constexpr AttrHead kTensorSize = MakeAttrHead("tensor_size", kUint64Val, pbf_wire_type::varint);
constexpr AttrHead kCommType = MakeAttrHead("comm_type", kInt64Val, pbf_wire_type::varint);
constexpr AttrHead kCommSize = MakeAttrHead("comm_size", kInt64Val, pbf_wire_type::varint);
constexpr AttrHead kCommSrc = MakeAttrHead("comm_src", kInt32Val, pbf_wire_type::varint);
constexpr AttrHead kCommDst = MakeAttrHead("comm_dst", kInt32Val, pbf_wire_type::varint);
constexpr AttrHead kCommTag = MakeAttrHead("comm_tag", kInt32Val, pbf_wire_type::varint);
constexpr AttrHead kPgName = MakeAttrHead("pg_name", kStringVal, pbf_wire_type::length_delimited);

// Longest attribute field: tag + 1-byte length + head + a 10-byte varint.
constexpr size_t kMaxAttrBytes = 2 + sizeof(AttrHead::bytes) + 10;
// The rank-dependent part is at most two attributes (a send's or receive's two ends, or one pg_name).
static_assert(2 * kMaxAttrBytes <= EtWriter::kMaxRankDependentBytes);

// Varint oneof value; int32/int64 negatives go as 64-bit two's complement, as protobuf sends them.
void AddVarintAttr(Pbf& w, const AttrHead& head, uint64_t raw) {
    char value[10];
    const auto n = static_cast<size_t>(protozero::add_varint_to_buffer(value, raw));
    w.add_bytes_vectored(kNodeAttr, head.view(), std::string_view(value, n));
}

void AddInt32Attr(Pbf& w, const AttrHead& head, int32_t v) {
    AddVarintAttr(w, head, static_cast<uint64_t>(int64_t{v}));
}

void AddInt64Attr(Pbf& w, const AttrHead& head, int64_t v) { AddVarintAttr(w, head, static_cast<uint64_t>(v)); }

// pg_name as the group id's decimal string.
void AddPgNameAttr(Pbf& w, uint32_t pg) {
    char value[16];
    const auto res = std::to_chars(value + 1, value + sizeof(value), pg);
    const auto len = static_cast<size_t>(res.ptr - (value + 1));
    value[0] = static_cast<char>(len);  // at most 10 digits: a 1-byte length
    w.add_bytes_vectored(kNodeAttr, kPgName.view(), std::string_view(value, len + 1));
}

// Where a message of at most `bound` bytes is encoded: `record` after the frame headroom. The buffer only
// grows (rarely: a long name or many deps), so steady state allocates nothing.
protozero::fixed_size_buffer_adaptor BodyOf(std::string& record, size_t bound) {
    if (record.size() < kFrameRoom + bound) record.resize(2 * (kFrameRoom + bound));
    return {record.data() + kFrameRoom, record.size() - kFrameRoom};
}

// Upper bound of a node's encoded size: fixed fields <= 11 bytes each, the name and deps with their
// tags and lengths, and at most five attributes (is_cpu_op + four per type).
size_t NodeSizeBound(const EtNode& n) {
    return 4 * 11 + (6 + n.name.size()) + 2 * 6 + 10 * (n.data_deps.size() + n.ctrl_deps.size()) + 5 * kMaxAttrBytes;
}

// Protobuf parsers reject a message whose string field is not UTF-8, so a bad name would hide the node.
bool IsValidUtf8(std::string_view s) {
    size_t i = 0;
    const size_t n = s.size();
    while (i < n) {
        // Names are nearly always ASCII: skip 8 bytes at a time while no byte has its top bit set.
        uint64_t word;
        if (n - i >= 8 && (std::memcpy(&word, s.data() + i, 8), (word & 0x8080808080808080ull) == 0)) {
            i += 8;
            continue;
        }
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len;
        uint32_t cp;
        if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
        else return false;
        if (n - i < len) return false;
        for (size_t k = 1; k < len; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        const uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
        if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

std::string NodeLabel(const EtNode& n) {
    return "ET node " + std::to_string(n.id) + " '" + n.name + "' (" + NameOf(n.type) + ")";
}

}  // namespace

const char* NameOf(EtNodeType t) {
    switch (t) {
        case EtNodeType::invalid: return "INVALID_NODE";
        case EtNodeType::metadata: return "METADATA_NODE";
        case EtNodeType::mem_load: return "MEM_LOAD_NODE";
        case EtNodeType::mem_store: return "MEM_STORE_NODE";
        case EtNodeType::comp: return "COMP_NODE";
        case EtNodeType::comm_send: return "COMM_SEND_NODE";
        case EtNodeType::comm_recv: return "COMM_RECV_NODE";
        case EtNodeType::comm_coll: return "COMM_COLL_NODE";
    }
    return "UNKNOWN_NODE";
}

const char* NameOf(CollectiveType t) {
    switch (t) {
        case CollectiveType::all_reduce: return "ALL_REDUCE";
        case CollectiveType::reduce: return "REDUCE";
        case CollectiveType::all_gather: return "ALL_GATHER";
        case CollectiveType::gather: return "GATHER";
        case CollectiveType::scatter: return "SCATTER";
        case CollectiveType::broadcast: return "BROADCAST";
        case CollectiveType::all_to_all: return "ALL_TO_ALL";
        case CollectiveType::reduce_scatter: return "REDUCE_SCATTER";
        case CollectiveType::reduce_scatter_block: return "REDUCE_SCATTER_BLOCK";
        case CollectiveType::barrier: return "BARRIER";
    }
    return "UNKNOWN_COLLECTIVE";
}

// ------------------------------------------------------------------------------------------ writer

EtWriter::EtWriter(ByteSink& sink, int32_t rank) : sink_(sink), rank_(rank) {
    if (rank < 0) throw Error("rank", "ET writer: rank " + std::to_string(rank) + " is negative");
    record_.resize(kFrameRoom + 512);
}

void EtWriter::WriteMetadata(std::string_view version) {
    if (have_metadata_) throw Error("", "ET writer: GlobalMetadata written twice (it is the first record only)");
    if (version.empty())
        throw Error("version", "ET GlobalMetadata version is empty; an empty record reads as end of file");
    protozero::fixed_size_buffer_adaptor body = BodyOf(record_, 16 + version.size());
    Pbf(body).add_string(kMetaVersion, version.data(), version.size());
    EmitRecord(body.size());
    have_metadata_ = true;
}

void EtWriter::WriteNode(const EtNode& node) {
    Validate(node);
    EmitRecord(EncodeNode(node));
    ++nodes_;
}

namespace {

void ValidateRankInvariant(const EtNode& n) {
    const auto type = static_cast<int32_t>(n.type);
    if (type < 0 || type > static_cast<int32_t>(EtNodeType::comm_coll))
        throw Error("type", "ET node " + std::to_string(n.id) + ": node type " + std::to_string(type) +
                                " is not a Chakra NodeType (0..7)");
    if (!IsValidUtf8(n.name))
        throw Error("name", NodeLabel(n) + ": name is not valid UTF-8; protobuf parsers would reject the node");
    // A self-dependency never becomes ready: ASTRA-sim hangs on it without an error.
    for (const auto* deps : {&n.data_deps, &n.ctrl_deps})
        for (uint64_t d : *deps)
            if (d == n.id) throw Error("deps", NodeLabel(n) + ": depends on itself");

    if (n.type == EtNodeType::comp && n.num_ops < 0)
        throw Error("num_ops", NodeLabel(n) + ": num_ops " + std::to_string(n.num_ops) + " is negative");
    if (n.type == EtNodeType::comm_coll) {
        const auto ct = static_cast<int32_t>(n.comm_type);
        if (ct < 0 || ct > static_cast<int32_t>(CollectiveType::barrier))
            throw Error("comm_type", NodeLabel(n) + ": comm_type " + std::to_string(ct) +
                                         " is not a Chakra CollectiveCommType (0..9)");
        if (n.comm_size < 0)
            throw Error("comm_size", NodeLabel(n) + ": comm_size " + std::to_string(n.comm_size) + " is negative");
    }
    if (n.type == EtNodeType::comm_send || n.type == EtNodeType::comm_recv) {
        // The analytical backend asserts size > 0 and tag >= 0, and pairs the two ends on (src, dst, tag, size).
        if (n.comm_size <= 0)
            throw Error("comm_size",
                        NodeLabel(n) + ": comm_size " + std::to_string(n.comm_size) + " must be > 0 for a send/recv");
        if (n.comm_tag < 0)
            throw Error("comm_tag", NodeLabel(n) + ": comm_tag " + std::to_string(n.comm_tag) + " is negative");
    }
}

// The two ends of a send or receive: the peer set, the own end unset (-1) or the writing rank.
void ValidateRankDependent(const EtNode& n, int32_t rank) {
    if (n.type != EtNodeType::comm_send && n.type != EtNodeType::comm_recv) return;
    const bool send = n.type == EtNodeType::comm_send;
    const int32_t peer = send ? n.comm_dst : n.comm_src;
    const int32_t own = send ? n.comm_src : n.comm_dst;
    const char* peer_field = send ? "comm_dst" : "comm_src";
    const char* own_field = send ? "comm_src" : "comm_dst";
    if (peer < 0) throw Error(peer_field, NodeLabel(n) + ": peer rank " + std::to_string(peer) + " is not set");
    if (own != -1 && own != rank)
        throw Error(own_field, NodeLabel(n) + ": " + own_field + "=" + std::to_string(own) + " in rank " +
                                   std::to_string(rank) + "'s file; it must be the file's own rank");
}

}  // namespace

void EtWriter::Validate(const EtNode& n) const {
    if (!have_metadata_) throw Error("", "ET writer: WriteNode before WriteMetadata (GlobalMetadata comes first)");
    ValidateRankInvariant(n);
    ValidateRankDependent(n, rank_);
}

namespace {

// Everything of a node but the fields that name the writing rank or its peers: those come last (protobuf
// attributes are matched by name, not position), so a writer can cache this part per node (EncodeRankInvariantPart).
void EncodeRankInvariant(Pbf& w, const EtNode& n) {
    // Fields in field-number order; proto3 scalars at their default are left out, as protobuf does.
    if (n.id != 0) w.add_uint64(kNodeId, n.id);
    if (!n.name.empty()) w.add_string(kNodeName, n.name.data(), n.name.size());
    if (n.type != EtNodeType::invalid) w.add_enum(kNodeType, static_cast<int32_t>(n.type));
    if (!n.ctrl_deps.empty()) w.add_packed_uint64(kNodeCtrlDeps, n.ctrl_deps.begin(), n.ctrl_deps.end());
    if (!n.data_deps.empty()) w.add_packed_uint64(kNodeDataDeps, n.data_deps.begin(), n.data_deps.end());
    if (n.duration_micros != 0) w.add_uint64(kNodeDuration, n.duration_micros);

    // Attributes: is_cpu_op first, then the ones section 5 lists for the type, each in the value kind both
    // feeders read. Oneof values are written even when zero.
    w.add_message(kNodeAttr, kIsCpuOpFalse.data(), kIsCpuOpFalse.size());
    switch (n.type) {
        case EtNodeType::comp:
            AddInt64Attr(w, kNumOps, n.num_ops);
            AddVarintAttr(w, kTensorSize, n.tensor_size);
            break;
        case EtNodeType::mem_load:
        case EtNodeType::mem_store: AddVarintAttr(w, kTensorSize, n.tensor_size); break;
        case EtNodeType::comm_coll:
            AddInt64Attr(w, kCommType, static_cast<int64_t>(n.comm_type));
            AddInt64Attr(w, kCommSize, n.comm_size);
            break;
        case EtNodeType::comm_send:
        case EtNodeType::comm_recv:
            AddInt64Attr(w, kCommSize, n.comm_size);
            AddInt32Attr(w, kCommTag, n.comm_tag);
            break;
        case EtNodeType::invalid:
        case EtNodeType::metadata: break;
    }
}

// The rest: the communicator group of a collective, the two ends of a send or receive.
void EncodeRankDependent(Pbf& w, const EtNode& n, int32_t rank) {
    switch (n.type) {
        case EtNodeType::comm_coll:
            if (n.pg != 0) AddPgNameAttr(w, n.pg);
            break;
        case EtNodeType::comm_send:
            AddInt32Attr(w, kCommSrc, rank);  // optional for ASTRA-sim, but it then checks the sender
            AddInt32Attr(w, kCommDst, n.comm_dst);
            break;
        case EtNodeType::comm_recv:
            AddInt32Attr(w, kCommSrc, n.comm_src);
            AddInt32Attr(w, kCommDst, rank);
            break;
        default: break;
    }
}

}  // namespace

size_t EtWriter::EncodeNode(const EtNode& n) {
    protozero::fixed_size_buffer_adaptor body = BodyOf(record_, NodeSizeBound(n));
    Pbf w{body};
    EncodeRankInvariant(w, n);
    EncodeRankDependent(w, n, rank_);
    return body.size();
}

std::string EtWriter::EncodeRankInvariantPart(const EtNode& node) {
    ValidateRankInvariant(node);
    std::string out(NodeSizeBound(node), '\0');
    protozero::fixed_size_buffer_adaptor body(out.data(), out.size());
    Pbf w{body};
    EncodeRankInvariant(w, node);
    out.resize(body.size());
    return out;
}

size_t EtWriter::MaxRankDependentSize(EtNodeType type) {
    EtNode widest;  // pg_name and both ends at their longest encodings
    widest.type = type;
    widest.pg = std::numeric_limits<uint32_t>::max();
    widest.comm_src = widest.comm_dst = std::numeric_limits<int32_t>::max();
    RankDependentPart part;
    EncodeRankDependentPart(widest, std::numeric_limits<int32_t>::max(), part);
    return part.size;
}

void EtWriter::EncodeRankDependentPart(const EtNode& node, int32_t rank, RankDependentPart& out) {
    if (rank < 0) throw Error("rank", "ET writer: rank " + std::to_string(rank) + " is negative");
    ValidateRankDependent(node, rank);
    protozero::fixed_size_buffer_adaptor body(out.bytes, sizeof out.bytes);
    Pbf w{body};
    EncodeRankDependent(w, node, rank);
    out.size = body.size();
}

void EtWriter::EmitRecord(size_t len) {
    if (len > std::numeric_limits<uint32_t>::max())
        throw Error("", "ET record of " + std::to_string(len) + " bytes exceeds the 4 GiB varint32 frame");
    char prefix[10];
    const auto n = static_cast<size_t>(protozero::add_varint_to_buffer(prefix, len));
    char* start = record_.data() + (kFrameRoom - n);
    std::memcpy(start, prefix, n);
    sink_.Write(std::string_view(start, n + len));
    bytes_ += n + len;
}

// ------------------------------------------------------------------------------------------ reader
namespace {

// Oneof members that convert to an integer (FeederV3 accepts any integer kind and bool).
enum class AttrKind { unset, integer, string, other };

struct AttrValue {
    std::string_view name;
    AttrKind kind = AttrKind::unset;
    uint32_t field = 0;  // oneof member number, for messages
    uint64_t raw = 0;    // integer kinds, sign-extended to 64 bits
    std::string_view text;
};

pbf_wire_type WireTypeOfMember(uint32_t f) {
    switch (f) {
        case 3:
        case 21:
        case 25: return pbf_wire_type::fixed64;  // double, fixed64, sfixed64
        case 5:
        case 19:
        case 23: return pbf_wire_type::fixed32;  // float, fixed32, sfixed32
        case 7:
        case 9:
        case 11:
        case 13:
        case 15:
        case 17:
        case 27: return pbf_wire_type::varint;
        default: return pbf_wire_type::length_delimited;  // lists, string, bytes
    }
}

AttrValue ParseAttr(protozero::data_view bytes) {
    AttrValue v;
    protozero::pbf_reader r{bytes};
    while (r.next()) {
        const uint32_t f = r.tag();
        if (f == kAttrName && r.wire_type() == pbf_wire_type::length_delimited) {
            const auto s = r.get_view();
            v.name = std::string_view(s.data(), s.size());
            continue;
        }
        // A oneof member with the wrong wire type is an unknown field to protobuf: it doesn't change the value.
        if (f < 3 || f > 32 || r.wire_type() != WireTypeOfMember(f)) {
            r.skip();
            continue;
        }
        v.field = f;  // oneof: the last member on the wire wins
        v.kind = AttrKind::integer;
        switch (f) {
            case kInt32Val: v.raw = static_cast<uint64_t>(int64_t{r.get_int32()}); break;
            case kInt64Val: v.raw = static_cast<uint64_t>(r.get_int64()); break;
            case kUint32Val: v.raw = r.get_uint32(); break;
            case kUint64Val: v.raw = r.get_uint64(); break;
            case kSint32Val: v.raw = static_cast<uint64_t>(int64_t{r.get_sint32()}); break;
            case kSint64Val: v.raw = static_cast<uint64_t>(r.get_sint64()); break;
            case kFixed32Val: v.raw = r.get_fixed32(); break;
            case kFixed64Val: v.raw = r.get_fixed64(); break;
            case kSfixed32Val: v.raw = static_cast<uint64_t>(int64_t{r.get_sfixed32()}); break;
            case kSfixed64Val: v.raw = static_cast<uint64_t>(r.get_sfixed64()); break;
            case kBoolVal: v.raw = r.get_uint64() != 0; break;
            case kStringVal: {
                const auto s = r.get_view();
                v.text = std::string_view(s.data(), s.size());
                v.kind = AttrKind::string;
                break;
            }
            default:
                v.kind = AttrKind::other;  // floats, lists, bytes
                r.skip();
        }
    }
    return v;
}

uint64_t IntOf(const AttrValue& a) {
    if (a.kind == AttrKind::integer) return a.raw;
    throw Error(std::string(a.name),
                a.kind == AttrKind::unset
                    ? "attribute has no value set (FeederV3 rejects it)"
                    : "attribute value kind (oneof member " + std::to_string(a.field) + ") is not an integer kind");
}

uint32_t PgOf(const AttrValue& a) {
    if (a.kind != AttrKind::string) throw Error("pg_name", "attribute is not a string_val (FeederV3 throws)");
    if (a.text.empty()) return 0;  // "" and "0" both mean the world group
    uint32_t pg = 0;
    const auto res = std::from_chars(a.text.data(), a.text.data() + a.text.size(), pg);
    if (res.ec != std::errc() || res.ptr != a.text.data() + a.text.size())
        throw Error("pg_name", "'" + std::string(a.text) + "' is not a decimal group id");
    return pg;
}

// Attributes we map onto EtNode; bit i set once the i-th has been seen (first occurrence wins).
constexpr std::string_view kKnownAttrs[] = {"num_ops",  "tensor_size", "comm_type", "comm_size",
                                            "comm_src", "comm_dst",    "comm_tag",  "pg_name"};

void ApplyAttr(const AttrValue& a, EtNode* n, uint32_t* seen) {
    for (uint32_t i = 0; i < std::size(kKnownAttrs); ++i) {
        if (a.name != kKnownAttrs[i]) continue;
        if (*seen & (1u << i)) return;
        *seen |= 1u << i;
        switch (i) {
            case 0: n->num_ops = static_cast<int64_t>(IntOf(a)); break;
            case 1: n->tensor_size = IntOf(a); break;
            case 2: n->comm_type = static_cast<CollectiveType>(static_cast<int32_t>(IntOf(a))); break;
            case 3: n->comm_size = static_cast<int64_t>(IntOf(a)); break;
            case 4: n->comm_src = static_cast<int32_t>(IntOf(a)); break;
            case 5: n->comm_dst = static_cast<int32_t>(IntOf(a)); break;
            case 6: n->comm_tag = static_cast<int32_t>(IntOf(a)); break;
            case 7: n->pg = PgOf(a); break;
        }
        return;
    }
}

// Resets every field but keeps the capacity of the name and dep vectors for the next node.
void ResetNode(EtNode* n) {
    std::string name = std::move(n->name);
    std::vector<uint64_t> data = std::move(n->data_deps), ctrl = std::move(n->ctrl_deps);
    *n = EtNode{};
    name.clear();
    data.clear();
    ctrl.clear();
    n->name = std::move(name);
    n->data_deps = std::move(data);
    n->ctrl_deps = std::move(ctrl);
}

void AppendDeps(protozero::pbf_reader& r, std::vector<uint64_t>* deps) {
    if (r.wire_type() == pbf_wire_type::length_delimited) {
        for (uint64_t d : r.get_packed_uint64()) deps->push_back(d);
    } else if (r.wire_type() == pbf_wire_type::varint) {
        deps->push_back(r.get_uint64());  // unpacked form
    } else {
        r.skip();
    }
}

void DecodeNode(std::string_view rec, EtNode* n) {
    ResetNode(n);
    uint32_t seen = 0;
    protozero::pbf_reader r{rec.data(), rec.size()};
    while (r.next()) {
        const bool varint = r.wire_type() == pbf_wire_type::varint;
        const bool ld = r.wire_type() == pbf_wire_type::length_delimited;
        switch (r.tag()) {
            case kNodeId:
                if (varint) n->id = r.get_uint64();
                else r.skip();
                break;
            case kNodeName:
                if (ld) {
                    const auto s = r.get_view();
                    n->name.assign(s.data(), s.size());
                } else {
                    r.skip();
                }
                break;
            case kNodeType:
                if (varint) n->type = static_cast<EtNodeType>(r.get_enum());
                else r.skip();
                break;
            case kNodeCtrlDeps: AppendDeps(r, &n->ctrl_deps); break;
            case kNodeDataDeps: AppendDeps(r, &n->data_deps); break;
            case kNodeDuration:
                if (varint) n->duration_micros = r.get_uint64();
                else r.skip();
                break;
            case kNodeAttr:
                if (ld) ApplyAttr(ParseAttr(r.get_view()), n, &seen);
                else r.skip();
                break;
            default: r.skip();  // start_time_micros, inputs, outputs, unknown fields
        }
    }
}

std::string AtOffset(size_t off) { return "ET record at byte offset " + std::to_string(off) + ": "; }

}  // namespace

EtReader::EtReader(std::string_view bytes) : bytes_(bytes) {
    if (bytes_.empty()) throw Error("", "ET file is empty: no GlobalMetadata record");
    const std::string_view rec = NextRecord();
    try {
        protozero::pbf_reader r{rec.data(), rec.size()};
        while (r.next()) {
            if (r.tag() == kMetaVersion && r.wire_type() == pbf_wire_type::length_delimited) version_ = r.get_string();
            else r.skip();
        }
    } catch (const protozero::exception& e) {
        throw Error("", AtOffset(0) + "GlobalMetadata does not parse: " + e.what());
    }
}

std::string_view EtReader::NextRecord() {
    const size_t start = pos_;
    const size_t n = bytes_.size();
    uint64_t len = 0;
    size_t p = pos_;
    for (int shift = 0;; shift += 7) {
        if (shift >= 35) throw Error("", AtOffset(start) + "length varint longer than 5 bytes");
        if (p >= n) throw Error("", AtOffset(start) + "truncated length varint");
        const auto b = static_cast<unsigned char>(bytes_[p++]);
        len |= uint64_t{b & 0x7Fu} << shift;
        if (b < 0x80) break;
    }
    if (len > std::numeric_limits<uint32_t>::max()) throw Error("", AtOffset(start) + "length exceeds 32 bits");
    if (len > n - p)
        throw Error("", AtOffset(start) + "declares " + std::to_string(len) + " bytes but only " +
                            std::to_string(n - p) + " remain (truncated file)");
    pos_ = p + static_cast<size_t>(len);
    return bytes_.substr(p, static_cast<size_t>(len));
}

bool EtReader::Next(EtNode* node) {
    if (pos_ >= bytes_.size()) return false;
    const size_t start = pos_;
    const std::string_view rec = NextRecord();
    try {
        DecodeNode(rec, node);
    } catch (const protozero::exception& e) {
        throw Error("", AtOffset(start) + "Node does not parse: " + e.what());
    } catch (const Error& e) {
        throw Error("", AtOffset(start) + "node " + std::to_string(node->id) + ": " + e.what());
    }
    return true;
}

EtFile ReadEt(std::string_view bytes) {
    EtReader reader(bytes);
    EtFile file;
    file.version = reader.version();
    EtNode node;
    while (reader.Next(&node)) file.nodes.push_back(node);
    return file;
}

}  // namespace sc
