// A sweep shard's cells as text (worker -> page). Not JSON: a 10^5-point sweep sends some 40 MB of cells, and
// nlohmann's parser in wasm (strtod on 128-bit long doubles) took about 15 us a cell on the page's thread.
// One line per cell, numbers as decimal integers or the 16 hex digits of a double's bits (exact, and parsed
// without strtod), strings length-prefixed (a model name or a CSV row may hold any character):
//   sweep-shard 1 <cells>\n
//   <point> <model> <found> <step> <mfu> <valid> <flops> <hbm_bw> <hbm_capacity> <domain> <net_bw>
//   <topology 0|1> <overlap 0|1> <inr 0|1> <gpus> <bytes>:<best><bytes>:<csv>\n
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "app/pool_jobs.h"
#include "config/error.h"

namespace sc::app {

namespace {

constexpr std::string_view kMagic = "sweep-shard 1 ";

// std::bit_cast is missing from Emscripten 3.1.6's libc++.
uint64_t BitsOf(double v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
}
double DoubleOf(uint64_t b) {
    double v;
    std::memcpy(&v, &b, sizeof v);
    return v;
}

void PutUint(std::string& o, uint64_t v) {
    char b[24];
    o.append(b, std::to_chars(b, b + sizeof b, v).ptr);
    o += ' ';
}

void PutDouble(std::string& o, double v) {
    char b[17];
    const uint64_t bits = BitsOf(v);
    for (int i = 0; i < 16; ++i) b[i] = "0123456789abcdef"[(bits >> (60 - 4 * i)) & 15];
    b[16] = ' ';
    o.append(b, 17);
}

void PutBytes(std::string& o, const std::string& s) {
    char b[24];
    o.append(b, std::to_chars(b, b + sizeof b, s.size()).ptr);
    o += ':';
    o += s;
}

[[noreturn]] void Malformed(const std::string& what) {
    throw Error("sweep shard", "malformed result from a worker: " + what);
}

// Reads the text left to right; any surprise is Malformed.
struct Reader {
    std::string_view t;
    size_t pos = 0;

    uint64_t Uint(char end) {
        uint64_t v = 0;
        const auto [p, ec] = std::from_chars(t.data() + pos, t.data() + t.size(), v);
        if (ec != std::errc() || p == t.data() + t.size() || *p != end) Malformed("expected a number at " + Where());
        pos = static_cast<size_t>(p - t.data()) + 1;
        return v;
    }
    double Double() {
        if (t.size() - pos < 17 || t[pos + 16] != ' ') Malformed("expected 16 hex digits at " + Where());
        uint64_t bits = 0;
        for (size_t i = pos; i < pos + 16; ++i) {
            const char c = t[i];
            const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0) Malformed("expected 16 hex digits at " + Where());
            bits = bits << 4 | static_cast<uint64_t>(d);
        }
        pos += 17;
        return DoubleOf(bits);
    }
    bool Bool() {
        const uint64_t v = Uint(' ');
        if (v > 1) Malformed("expected 0 or 1 before " + Where());
        return v == 1;
    }
    std::string Bytes() {
        const uint64_t n = Uint(':');
        if (n > t.size() - pos) Malformed("a string runs past the end at " + Where());
        std::string s(t.substr(pos, n));
        pos += n;
        return s;
    }
    std::string Where() const { return "byte " + std::to_string(pos); }
};

}  // namespace

std::string EncodeSweepShard(const std::vector<SweepCell>& cells) {
    std::string o(kMagic);
    PutUint(o, cells.size());
    o.back() = '\n';
    for (const SweepCell& c : cells) {
        const SweepPoint& p = c.point;
        PutUint(o, c.key.point);
        PutUint(o, static_cast<uint64_t>(c.key.model));
        PutUint(o, c.found);
        PutDouble(o, c.step_seconds);
        PutDouble(o, c.mfu);
        PutUint(o, c.valid);
        PutDouble(o, p.flops);
        PutDouble(o, p.hbm_bw);
        PutDouble(o, p.hbm_capacity);
        PutUint(o, static_cast<uint64_t>(p.domain));
        PutDouble(o, p.net_bw);
        PutUint(o, p.topology == Topology::fullflat);
        PutUint(o, p.overlap);
        PutUint(o, p.inr);
        PutUint(o, static_cast<uint64_t>(p.gpus));
        PutBytes(o, c.best);
        PutBytes(o, c.csv);
        o += '\n';
    }
    return o;
}

std::vector<SweepCell> DecodeSweepShard(const std::string& text) {
    if (text.compare(0, kMagic.size(), kMagic) != 0) Malformed("it does not start with \"sweep-shard 1\"");
    Reader r{text, kMagic.size()};
    const uint64_t count = r.Uint('\n');
    if (count > text.size()) Malformed("it claims " + std::to_string(count) + " cells");
    std::vector<SweepCell> cells(count);
    for (SweepCell& c : cells) {
        c.key.point = r.Uint(' ');
        c.key.model = static_cast<int>(r.Uint(' '));
        c.found = r.Bool();
        c.step_seconds = r.Double();
        c.mfu = r.Double();
        c.valid = r.Uint(' ');
        SweepPoint& p = c.point;
        p.flops = r.Double();
        p.hbm_bw = r.Double();
        p.hbm_capacity = r.Double();
        p.domain = static_cast<int>(r.Uint(' '));
        p.net_bw = r.Double();
        p.topology = r.Bool() ? Topology::fullflat : Topology::two_tier;
        p.overlap = r.Bool();
        p.inr = r.Bool();
        const uint64_t gpus = r.Uint(' ');
        if (gpus > (1u << 24)) Malformed("a GPU count of " + std::to_string(gpus) + " at " + r.Where());
        p.gpus = static_cast<int>(gpus);
        c.best = r.Bytes();
        c.csv = r.Bytes();
        if (r.pos >= text.size() || text[r.pos] != '\n') Malformed("a cell does not end its line at " + r.Where());
        ++r.pos;
    }
    if (r.pos != text.size()) Malformed("text after the last cell at " + r.Where());
    return cells;
}

}  // namespace sc::app
