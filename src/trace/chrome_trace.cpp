#include "trace/chrome_trace.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "config/error.h"

namespace sc {
namespace {

void AppendInt(std::string* out, int64_t v) {
    char digits[24];
    const auto res = std::to_chars(digits, digits + sizeof(digits), v);
    out->append(digits, static_cast<size_t>(res.ptr - digits));
}

// Length of the valid UTF-8 sequence starting at s[i] (a byte >= 0x80), or 0 if it is not one.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return 0;
    if (s.size() - i < len) return 0;
    for (size_t k = 1; k < len; ++k) {
        const auto d = static_cast<unsigned char>(s[i + k]);
        if ((d & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (d & 0x3F);
    }
    const uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

// A JSON string literal. Invalid UTF-8 becomes U+FFFD: JSON parsers (and Perfetto) reject the whole
// file over one bad byte, and event names may come from user-edited layer names.
void AppendJsonString(std::string* out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out->push_back('"');
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            size_t j = i + 1;  // copy the run of plain characters in one go
            while (j < s.size()) {
                const auto d = static_cast<unsigned char>(s[j]);
                if (d < 0x20 || d >= 0x80 || d == '"' || d == '\\') break;
                ++j;
            }
            out->append(s.data() + i, j - i);
            i = j;
            continue;
        }
        if (c >= 0x80) {
            const size_t len = Utf8SequenceLength(s, i);
            if (len) out->append(s.data() + i, len);
            else out->append("\\ufffd");
            i += len ? len : 1;
            continue;
        }
        switch (c) {
            case '"': out->append("\\\""); break;
            case '\\': out->append("\\\\"); break;
            case '\n': out->append("\\n"); break;
            case '\r': out->append("\\r"); break;
            case '\t': out->append("\\t"); break;
            case '\b': out->append("\\b"); break;
            case '\f': out->append("\\f"); break;
            default:
                out->append("\\u00");
                out->push_back(kHex[c >> 4]);
                out->push_back(kHex[c & 15]);
        }
        ++i;
    }
    out->push_back('"');
}

// Microseconds with up to three decimals (nanoseconds), trailing zeros dropped. Integer arithmetic
// rather than printf/to_chars: locale-independent, and Emscripten 3.1.6's libc++ has no to_chars(double).
void AppendMicros(std::string* out, double us, const char* what) {
    if (!std::isfinite(us) || std::fabs(us) > 9e15)
        throw Error(what, "Chrome trace time " + std::to_string(us) + " us is not a finite time");
    const auto ns = static_cast<int64_t>(std::llround(us * 1000.0));
    const int64_t whole = ns / 1000;
    int64_t frac = ns % 1000;
    if (ns < 0 && whole == 0) out->push_back('-');  // -0.5 us: the integer part alone loses the sign
    AppendInt(out, whole);
    if (frac == 0) return;
    if (frac < 0) frac = -frac;
    char digits[4] = {char('0' + frac / 100), char('0' + frac / 10 % 10), char('0' + frac % 10), 0};
    size_t n = 3;
    while (digits[n - 1] == '0') --n;
    out->push_back('.');
    out->append(digits, n);
}

void AppendNumber(std::string* out, double v) {
    if (!std::isfinite(v)) {
        out->append("null");  // JSON has no NaN / Infinity
        return;
    }
    if (std::trunc(v) == v && std::fabs(v) < 9.007199254740992e15) {  // exact integers print as such
        AppendInt(out, static_cast<int64_t>(v));
        return;
    }
    char buf[32];
    const int n = std::snprintf(buf, sizeof(buf), "%.15g", v);
    for (int k = 0; k < n; ++k)
        if (buf[k] == ',') buf[k] = '.';  // a host that set LC_NUMERIC would otherwise break the JSON
    out->append(buf, static_cast<size_t>(n));
}

void AppendArgValue(std::string* out, const std::variant<int64_t, double, std::string>& v) {
    if (const auto* i = std::get_if<int64_t>(&v)) AppendInt(out, *i);
    else if (const auto* d = std::get_if<double>(&v)) AppendNumber(out, *d);
    else AppendJsonString(out, std::get<std::string>(v));
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(ByteSink& sink, int rank) : ChromeTraceWriter(sink, rank, {}) {}

ChromeTraceWriter::ChromeTraceWriter(ByteSink& sink, int rank, std::string_view process_name)
    : sink_(sink), rank_(rank) {
    if (rank < 0) throw Error("rank", "Chrome trace: rank " + std::to_string(rank) + " is negative");
    event_.reserve(512);
    sink_.Write("{\"traceEvents\":[\n");
    const std::string pid = std::to_string(rank_);
    BeginEvent();
    event_ += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":0,\"args\":{\"name\":";
    AppendJsonString(&event_, process_name.empty() ? "rank " + pid : std::string(process_name));
    event_ += "}}";
    Emit();
    // Perfetto orders processes by this index; merged traces of several ranks then read 0, 1, 2, ...
    BeginEvent();
    event_ += "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid +
              ",\"tid\":0,\"args\":{\"sort_index\":" + pid + "}}";
    Emit();
}

int ChromeTraceWriter::Lane(std::string_view category) {
    for (size_t i = 0; i < lanes_.size(); ++i)
        if (lanes_[i] == category) return static_cast<int>(i) + 1;
    lanes_.emplace_back(category);
    const int tid = static_cast<int>(lanes_.size());
    BeginEvent();
    event_.append("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
    AppendInt(&event_, rank_);
    event_.append(",\"tid\":");
    AppendInt(&event_, tid);
    event_.append(",\"args\":{\"name\":");
    AppendJsonString(&event_, category);
    event_.append("}}");
    Emit();
    BeginEvent();
    event_.append("{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":");
    AppendInt(&event_, rank_);
    event_.append(",\"tid\":");
    AppendInt(&event_, tid);
    event_.append(",\"args\":{\"sort_index\":");
    AppendInt(&event_, tid);
    event_.append("}}");
    Emit();
    return tid;
}

void ChromeTraceWriter::Write(const ChromeEvent& e) {
    if (finished_) throw Error("", "Chrome trace: Write after Finish");
    if (e.dur_us < 0)
        throw Error("dur_us", "Chrome trace event '" + e.name + "': negative duration " + std::to_string(e.dur_us));
    const int tid = Lane(e.category);
    BeginEvent();
    event_.append("{\"name\":");
    AppendJsonString(&event_, e.name);
    event_.append(",\"cat\":");
    AppendJsonString(&event_, e.category);
    event_.append(",\"ph\":\"X\",\"ts\":");
    AppendMicros(&event_, e.start_us, "start_us");
    event_.append(",\"dur\":");
    AppendMicros(&event_, e.dur_us, "dur_us");
    event_.append(",\"pid\":");
    AppendInt(&event_, rank_);
    event_.append(",\"tid\":");
    AppendInt(&event_, tid);
    if (!e.args.empty()) {
        event_.append(",\"args\":{");
        for (size_t i = 0; i < e.args.size(); ++i) {
            if (i) event_.push_back(',');
            AppendJsonString(&event_, e.args[i].key);
            event_.push_back(':');
            AppendArgValue(&event_, e.args[i].value);
        }
        event_.push_back('}');
    }
    event_.push_back('}');
    Emit();
}

void ChromeTraceWriter::BeginEvent() { event_.assign(",\n"); }

void ChromeTraceWriter::Emit() {
    // The first event goes without the separator, so the whole event is still a single Write.
    sink_.Write(std::string_view(event_).substr(any_event_ ? 0 : 2));
    any_event_ = true;
}

void ChromeTraceWriter::Finish() {
    if (finished_) throw Error("", "Chrome trace: Finish called twice");
    finished_ = true;
    sink_.Write("\n]}\n");
}

void WriteChromeTrace(ByteSink& sink, int rank, const std::vector<ChromeEvent>& events) {
    ChromeTraceWriter writer(sink, rank);
    for (const auto& e : events) writer.Write(e);
    writer.Finish();
}

}  // namespace sc
