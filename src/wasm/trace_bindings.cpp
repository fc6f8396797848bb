// Streaming per-rank traces to JavaScript: TraceStream(modelJson, parallelSpec) then writeRank(r) per
// rank. Each call returns a view of one rank's file in wasm memory, valid until the next call: JS
// writes it out (File System Access API) before asking for the next, so memory stays bounded by one
// rank's trace whatever the rank count.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <memory>

#include "config/error.h"
#include "parallel/job.h"
#include "trace/rank_traces.h"

using emscripten::val;

namespace {

class TraceStream {
public:
    TraceStream(std::string model_json, std::string parallel_spec) {
        try {
            job_ = std::make_unique<sc::Job>(sc::MakeJob(sc::ParseModelConfig(model_json), sc::ParseParallelSpec(parallel_spec)));
            writer_ = std::make_unique<sc::RankTraceWriter>(*job_);
        } catch (const sc::Error& e) {
            error_ = e.what();
        }
    }
    std::string error() const { return error_; }
    int world() const { return writer_ ? writer_->world() : 0; }
    val writeRank(int rank) {
        if (!writer_ || rank < 0 || rank >= writer_->world()) return val::null();
        try {
            const std::string_view file = writer_->RankFile(rank);  // the writer's buffer: no copy
            return val(emscripten::typed_memory_view(file.size(), reinterpret_cast<const uint8_t*>(file.data())));
        } catch (const sc::Error& e) {
            error_ = e.what();  // the page shows error() when writeRank returns null
            return val::null();
        }
    }
    std::string commGroups() {
        if (!writer_) return "";
        sc::StringSink s;
        writer_->WriteCommGroups(s);
        return s.bytes;
    }

private:
    std::unique_ptr<sc::Job> job_;
    std::unique_ptr<sc::RankTraceWriter> writer_;
    std::string error_;
};

}  // namespace

EMSCRIPTEN_BINDINGS(stagecraft_traces) {
    emscripten::class_<TraceStream>("TraceStream")
        .constructor<std::string, std::string>()
        .function("error", &TraceStream::error)
        .function("world", &TraceStream::world)
        .function("writeRank", &TraceStream::writeRank)
        .function("commGroups", &TraceStream::commGroups);
}
