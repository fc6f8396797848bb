// Embind of TraceStream (trace_stream.h).
#include <emscripten/bind.h>

#include "config/error.h"
#include "guard.h"
#include "trace/byte_sink.h"
#include "trace_stream.h"

using emscripten::val;

// Every method goes through scweb::Guard (guard.h): writeRank returns {ok}-style null plus error(), the others
// keep what they throw in error() (scweb::Kept) and return their type's empty value.
TraceStream::TraceStream(std::string model_json, std::string parallel_spec) {
    scweb::Kept(error_, [&] {
        sc::engine::Request request;
        request.model = sc::ParseModelConfig(model_json);
        request.parallel = sc::ParseParallelSpec(parallel_spec);
        snap_ = std::make_unique<sc::engine::TraceSnapshot>(sc::engine::SnapshotTrace(request));
        writer_ = sc::engine::MakeTraceWriter(*snap_);
    });
}

void TraceStream::TimeOn(const sc::System& sys, const sc::CalibrationTable* cal, const sc::TrainingOptions& opt) {
    if (!snap_) return;
    const std::string before = error_;
    error_.clear();
    scweb::Kept(error_, [&] {
        sc::engine::Request request;  // the cluster grown to the job's ranks by the snapshot, as the CLI's is
        request.system = &sys;
        request.calibration = cal;
        request.options = opt;
        writer_.reset();  // it reads the snapshot about to be replaced
        // A copy of the job: when the cluster is refused the stream keeps its untimed snapshot intact. The Training
        // panel's kernel choices (unfused attention, dropout, unfused gradient accumulation) are ops of the graph:
        // the timed trace is built with them, as `stagecraft trace --options` does.
        sc::Job job = opt.kernels == snap_->job.graph.kernels
                          ? snap_->job
                          : sc::MakeJob(snap_->job.model, snap_->job.par, opt.kernels);
        auto timed = std::make_unique<sc::engine::TraceSnapshot>(sc::engine::SnapshotTrace(request, std::move(job)));
        snap_ = std::move(timed);
        writer_ = sc::engine::MakeTraceWriter(*snap_);
    });
    if (error_.empty()) error_ = before;
    else writer_.reset();
}

val TraceStream::prepareRank(val rank_arg) {
    if (!writer_) return val::null();
    val r = scweb::Guard([&] {
        const int rank = static_cast<int>(scweb::IntegerArg(rank_arg, "rank", 0, writer_->world() - 1));
        val ok = val::object();
        ok.set("ok", true);
        ok.set("ready", writer_->PrepareRank(rank, kPrepareSliceNodes));
        return ok;
    });
    if (r["ok"].as<bool>()) return r["ready"];
    error_ = r["error"].as<std::string>();
    return val::null();
}

val TraceStream::writeRank(val rank_arg) {
    if (!writer_) return val::null();
    val r = scweb::Guard([&] {
        const int rank = static_cast<int>(scweb::IntegerArg(rank_arg, "rank", 0, writer_->world() - 1));
        const std::string_view file = writer_->RankFile(rank);  // the writer's buffer: no copy
        val ok = val::object();
        ok.set("ok", true);
        ok.set("bytes", val(emscripten::typed_memory_view(file.size(), reinterpret_cast<const uint8_t*>(file.data()))));
        return ok;
    });
    if (r["ok"].as<bool>()) return r["bytes"];
    error_ = r["error"].as<std::string>();  // the page shows error() when writeRank returns null
    return val::null();
}

val TraceStream::startRank(val rank_arg) {
    if (!writer_) return val::null();
    val r = scweb::Guard([&] {
        writer_->StartRankFile(static_cast<int>(scweb::IntegerArg(rank_arg, "rank", 0, writer_->world() - 1)));
        val ok = val::object();
        ok.set("ok", true);
        return ok;
    });
    if (r["ok"].as<bool>()) return val(true);
    error_ = r["error"].as<std::string>();
    return val::null();
}

val TraceStream::nextPiece() {
    if (!writer_) return val::null();
    val r = scweb::Guard([&] {
        const std::string_view piece = writer_->NextPiece(kPieceBytes);  // the writer's buffer: no copy
        val ok = val::object();
        ok.set("ok", true);
        ok.set("bytes",
               val(emscripten::typed_memory_view(piece.size(), reinterpret_cast<const uint8_t*>(piece.data()))));
        return ok;
    });
    if (r["ok"].as<bool>()) return r["bytes"];
    error_ = r["error"].as<std::string>();
    return val::null();
}

std::string TraceStream::commGroups() {
    if (!writer_) return "";
    return scweb::Kept(error_, [&] {
        sc::StringSink s;
        writer_->WriteCommGroups(s);
        return s.bytes;
    });
}

val TraceStream::rankTimelineJson(val rank_arg) {
    if (!writer_) return val::null();
    val r = scweb::Guard([&] {
        const int rank = static_cast<int>(scweb::IntegerArg(rank_arg, "rank", 0, writer_->world() - 1));
        sc::StringSink s;
        sc::engine::WriteRankTimelineJson(*snap_, *writer_, rank, s);
        val ok = val::object();
        ok.set("ok", true);
        // Bytes, not a JavaScript string: V8 refuses strings past 2^29 characters, which a rank of a few thousand
        // microbatches passes (185 bytes a node); copied out, since `s` dies here.
        ok.set("bytes",
               val(emscripten::typed_memory_view(s.bytes.size(), reinterpret_cast<const uint8_t*>(s.bytes.data())))
                   .call<val>("slice"));
        return ok;
    });
    if (r["ok"].as<bool>()) return r["bytes"];
    error_ = r["error"].as<std::string>();
    return val::null();
}
std::string TraceStream::error() {
    return scweb::Kept(error_, [&] { return error_; });
}
int TraceStream::world() {
    return scweb::Kept(error_, [&] { return writer_ ? writer_->world() : 0; });
}

EMSCRIPTEN_BINDINGS(stagecraft_traces) {
    emscripten::class_<TraceStream>("TraceStream")
        .constructor<std::string, std::string>()
        .function("error", &TraceStream::error)
        .function("world", &TraceStream::world)
        .function("prepareRank", &TraceStream::prepareRank)
        .function("writeRank", &TraceStream::writeRank)
        .function("startRank", &TraceStream::startRank)
        .function("nextPiece", &TraceStream::nextPiece)
        .function("commGroups", &TraceStream::commGroups)
        .function("rankTimelineJson", &TraceStream::rankTimelineJson);
}
