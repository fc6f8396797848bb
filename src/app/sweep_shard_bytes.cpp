// A sweep shard's cells as bytes (worker -> page, as a transferred ArrayBuffer). Not text: a 10^5-point sweep
// is 10^5 cells, and the worker's text encoding (with each row's CSV line) and the page's parsing of it cost
// 5 and 6-8 us a cell, a third of the pool's time on a fixed-layout sweep (README "Workers"). Fixed-width
// little-endian fields, read back with a bounds check on every one; a cell is about 290 bytes:
//   "sweep-shard 8\n" <u64 cells> then per cell:
//   <u64 point> <u32 model> <u8 found> <f64 step, mfu, tokens/s, memory peak, energy> <f64 x breakdown parts>
//   <point: f64 flops, hbm_bw, hbm_capacity, net_bw, power; u32 domain, gpus; u8 topology (Topology), overlap
//    (a mask of kOverlapDp/Pp/Tp), inr>
//   <layout: u32 tp pp dp cp ep etp microbatch batch vstages zero gpus; u8 sp, uneven, schedule, recompute,
//    recompute modules; u32 recompute layers; u8 a2a overlap; u32 offload layers;
//    f64 bucket_mb; u32 length + bytes of order; u32 pipeline-layout stages, u32 layers of each, u32 its MTP
//    modules> <u64 candidates, valid, fitting, estimated>
// WebAssembly is little-endian, and so is every machine the native tests run on (checked below).
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "app/pool_jobs.h"
#include "config/error.h"

namespace sc::app {

namespace {

static_assert(std::endian::native == std::endian::little, "the shard bytes are little-endian");

constexpr std::string_view kMagic = "sweep-shard 8\n";  // 3: topology is 0-2 (2 is torus); 4: pipeline layouts,
                                                        // recompute modules; 5: power limit, energy;
                                                        // 6: recompute layers (the block method);
                                                        // 7: the EP all-to-all overlap;
                                                        // 8: activation offloading (layers, and its breakdown
                                                        //    part)

template <typename T>
void Put(std::string& o, T v) {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    o.append(b, sizeof v);
}

[[noreturn]] void Malformed(const std::string& what) {
    throw Error("sweep shard", "malformed result from a worker: " + what);
}

// The messages of the readers below, out of line: built in the readers, they kept each one from being inlined, and
// the page's merge of a 10^5-point sweep (every field of every cell through them) took twice as long.
[[noreturn, gnu::cold, gnu::noinline]] void Truncated(size_t pos) {
    Malformed("it ends inside a cell at byte " + std::to_string(pos));
}
[[noreturn, gnu::cold, gnu::noinline]] void NotABool(size_t pos) {
    Malformed("expected 0 or 1 at byte " + std::to_string(pos));
}
[[noreturn, gnu::cold, gnu::noinline]] void BadCount(const char* what, uint32_t v, size_t pos) {
    Malformed(std::string("a ") + what + " of " + std::to_string(v) + " at byte " + std::to_string(pos));
}
[[noreturn, gnu::cold, gnu::noinline]] void BadEnum(const char* what, uint8_t v, size_t pos) {
    Malformed(std::string("no ") + what + " " + std::to_string(v) + " at byte " + std::to_string(pos));
}

// Reads the bytes left to right; any surprise is Malformed.
struct Reader {
    std::string_view t;
    size_t pos = 0;

    template <typename T>
    T Get() {
        if (t.size() - pos < sizeof(T)) [[unlikely]]
            Truncated(pos);
        T v;
        std::memcpy(&v, t.data() + pos, sizeof v);
        pos += sizeof v;
        return v;
    }
    bool Bool() {
        const uint8_t v = Get<uint8_t>();
        if (v > 1) [[unlikely]]
            NotABool(pos - 1);
        return v == 1;
    }
    // A count the page can hold (a GPU count, a layout degree): at most 2^24.
    int Count(const char* what) {
        const uint32_t v = Get<uint32_t>();
        if (v > (1u << 24)) [[unlikely]]
            BadCount(what, v, pos - 4);
        return static_cast<int>(v);
    }
    template <typename E>
    E Enum(int count, const char* what) {
        const uint8_t v = Get<uint8_t>();
        if (v >= count) [[unlikely]]
            BadEnum(what, v, pos - 1);
        return static_cast<E>(v);
    }
};

constexpr int kSchedules = static_cast<int>(Schedule::interleaved_zb) + 1;
constexpr int kRecomputes = static_cast<int>(Recompute::op) + 1;
constexpr int kTopologies = static_cast<int>(Topology::torus) + 1;

void PutLayout(std::string& o, const ParallelConfig& p) {
    for (int v : {p.tp, p.pp, p.dp, p.cp, p.ep, p.etp, p.microbatch, p.batch, p.vstages, p.zero, p.gpus})
        Put<uint32_t>(o, static_cast<uint32_t>(v));
    Put<uint8_t>(o, p.sp), Put<uint8_t>(o, p.uneven);
    Put<uint8_t>(o, static_cast<uint8_t>(p.schedule)), Put<uint8_t>(o, static_cast<uint8_t>(p.recompute));
    Put<uint8_t>(o, p.recompute_modules);
    Put<uint32_t>(o, static_cast<uint32_t>(p.recompute_layers));
    Put<uint8_t>(o, p.a2a_overlap);
    Put<uint32_t>(o, static_cast<uint32_t>(p.offload_layers));
    Put<double>(o, p.bucket_mb);
    Put<uint32_t>(o, static_cast<uint32_t>(p.order.size()));
    o += p.order;
    Put<uint32_t>(o, static_cast<uint32_t>(p.layout.size()));
    for (int n : p.layout) Put<uint32_t>(o, static_cast<uint32_t>(n));
    Put<uint32_t>(o, static_cast<uint32_t>(p.layout_mtp));
}

// Into the cell's own layout (a ParallelConfig built and copied in cost a string copy a cell).
void GetLayout(Reader& r, ParallelConfig& p) {
    for (int* v : {&p.tp, &p.pp, &p.dp, &p.cp, &p.ep, &p.etp, &p.microbatch, &p.batch, &p.vstages, &p.zero, &p.gpus})
        *v = r.Count("layout degree");
    p.sp = r.Bool(), p.uneven = r.Bool();
    p.schedule = r.Enum<Schedule>(kSchedules, "schedule");
    p.recompute = r.Enum<Recompute>(kRecomputes, "recomputation");
    p.recompute_modules = r.Get<uint8_t>();
    if (p.recompute_modules >> kRecomputeModuleCount)
        Malformed("recompute modules " + std::to_string(p.recompute_modules));
    p.recompute_layers = r.Count("recompute layers");
    const uint8_t a2a = r.Get<uint8_t>();
    if (a2a > 1) Malformed("an all-to-all overlap flag of " + std::to_string(a2a));
    p.a2a_overlap = a2a != 0;
    p.offload_layers = r.Count("offload layers");
    p.bucket_mb = r.Get<double>();
    const uint32_t n = r.Get<uint32_t>();
    if (n > 64 || n > r.t.size() - r.pos) Malformed("a rank order of " + std::to_string(n) + " bytes");
    p.order.assign(r.t.substr(r.pos, n));
    r.pos += n;
    const uint32_t stages = r.Get<uint32_t>();
    if (stages > (r.t.size() - r.pos) / 4) Malformed("a pipeline layout of " + std::to_string(stages) + " stages");
    p.layout.resize(stages);
    for (int& v : p.layout) v = r.Count("layout stage");
    p.layout_mtp = r.Count("layout MTP modules");
}

// Appends the cells of `bytes` to `out` (the page's cells, reserved for the whole sweep: no temporary vector and
// no reallocation per shard, which cost more than reading the bytes).
void ReadCells(std::string_view bytes, std::vector<SweepCell>& out) {
    if (bytes.substr(0, kMagic.size()) != kMagic)
        Malformed("it does not start with \"" + std::string(kMagic.substr(0, kMagic.size() - 1)) + "\"");
    Reader r{bytes, kMagic.size()};
    const uint64_t count = r.Get<uint64_t>();
    if (count > bytes.size()) Malformed("it claims " + std::to_string(count) + " cells");
    for (uint64_t i = 0; i < count; ++i) {
        SweepCell& c = out.emplace_back();
        c.key.point = r.Get<uint64_t>();
        c.key.model = r.Count("model index");
        c.found = r.Bool();
        for (double* v : {&c.step_seconds, &c.mfu, &c.tokens_per_second, &c.memory_peak, &c.energy_joules})
            *v = r.Get<double>();
        for (const BreakdownPart& part : kBreakdownParts) c.step.*part.seconds = r.Get<double>();
        SweepPoint& p = c.point;
        for (double* v : {&p.flops, &p.hbm_bw, &p.hbm_capacity, &p.net_bw, &p.power_w}) *v = r.Get<double>();
        p.domain = r.Count("domain size");
        p.gpus = r.Count("GPU count");
        p.topology = r.Enum<Topology>(kTopologies, "topology");
        p.overlap = r.Get<uint8_t>(), p.inr = r.Bool();
        if (p.overlap > kOverlapAll) Malformed("an overlap mask of " + std::to_string(p.overlap));
        GetLayout(r, c.best);
        for (uint64_t* v : {&c.stats.candidates, &c.stats.valid, &c.stats.fitting, &c.stats.estimated})
            *v = r.Get<uint64_t>();
    }
    if (r.pos != bytes.size()) Malformed("bytes after the last cell at byte " + std::to_string(r.pos));
}

}  // namespace

std::string EncodeSweepShard(const std::vector<SweepCell>& cells) {
    std::string o(kMagic);
    o.reserve(kMagic.size() + 8 + cells.size() * 300);
    Put<uint64_t>(o, cells.size());
    for (const SweepCell& c : cells) {
        Put<uint64_t>(o, c.key.point);
        Put<uint32_t>(o, static_cast<uint32_t>(c.key.model));
        Put<uint8_t>(o, c.found);
        for (double v : {c.step_seconds, c.mfu, c.tokens_per_second, c.memory_peak, c.energy_joules}) Put<double>(o, v);
        for (const BreakdownPart& part : kBreakdownParts) Put<double>(o, c.step.*part.seconds);
        const SweepPoint& p = c.point;
        for (double v : {p.flops, p.hbm_bw, p.hbm_capacity, p.net_bw, p.power_w}) Put<double>(o, v);
        Put<uint32_t>(o, static_cast<uint32_t>(p.domain)), Put<uint32_t>(o, static_cast<uint32_t>(p.gpus));
        Put<uint8_t>(o, static_cast<uint8_t>(p.topology)), Put<uint8_t>(o, static_cast<uint8_t>(p.overlap));
        Put<uint8_t>(o, static_cast<uint8_t>(p.inr));
        PutLayout(o, c.best);
        for (uint64_t v : {c.stats.candidates, c.stats.valid, c.stats.fitting, c.stats.estimated}) Put<uint64_t>(o, v);
    }
    return o;
}

std::vector<SweepCell> DecodeSweepShard(std::string_view bytes) {
    std::vector<SweepCell> cells;
    AppendSweepShard(bytes, cells);
    return cells;
}

void AppendSweepShard(std::string_view bytes, std::vector<SweepCell>& out) {
    const size_t before = out.size();
    try {
        ReadCells(bytes, out);
    } catch (const Error&) {
        out.resize(before);  // none of a damaged shard's cells
        throw;
    }
}

}  // namespace sc::app
