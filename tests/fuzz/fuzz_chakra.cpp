// Chakra ET traces (`stagecraft trace`, the page's download) of whatever parallel spec a user types, on a two-layer
// dense or MoE model: the spec is refused with sc::Error, or every rank's file follows what ASTRA-sim enforces
// (tests/native/astra_rules.h, over the whole set: compute nodes with num_ops and tensor_size, dependencies on
// earlier nodes, every member of a group issuing the same collectives, sends matching receives), and each file
// handed out in pieces of any size (the page's download) is the file whole. Input: one byte choosing the model and
// the piece size, then the spec.
#include <string>
#include <vector>

#include "../native/astra_rules.h"
#include "config/model_config.h"
#include "config/overrides.h"
#include "fuzz_target.h"
#include "parallel/job.h"
#include "parallel/parallel_config.h"
#include "trace/byte_sink.h"
#include "trace/chakra_et.h"
#include "trace/rank_traces.h"

namespace {

void Check(bool ok) {
    if (!ok) __builtin_trap();
}

sc::ModelConfig Small(const char* preset) {
    return sc::ParseModelConfig(sc::ApplyOverrides(scfuzz::ReadSource(preset), {"layers=2", "seq=256"}, preset));
}

void WriteAll(uint8_t choice, std::string_view spec) {
    static const sc::ModelConfig dense = Small("presets/models/llama3-8b.json");
    static const sc::ModelConfig moe = Small("presets/models/mixtral-8x7b.json");
    const sc::Job job = sc::MakeJob(choice & 1 ? moe : dense, sc::ParseParallelSpec(spec));
    // The harness bounds one input's work (a large job is a long run, not a bug): 64 ranks, 2^18 nodes held.
    if (job.par.world() > 64) return;
    sc::RankTraceWriter w(job, {}, uint64_t{1} << 18);
    const size_t piece = size_t{1} << (choice >> 1) % 24;  // 1 byte to 8 MB
    std::vector<sc::EtFile> files;
    for (int r = 0; r < w.world(); ++r) {
        const std::string whole(w.RankFile(r));
        std::string joined;
        w.StartRankFile(r);
        for (std::string_view p = w.NextPiece(piece); !p.empty(); p = w.NextPiece(piece)) {
            Check(p.size() <= std::max<size_t>(piece, 64) + 4096);
            joined.append(p);
        }
        Check(joined == whole);
        files.push_back(sc::ReadEt(whole));
    }
    sc::StringSink groups;
    w.WriteCommGroups(groups);
    Check(sctest::AstraRules::Check(files, sctest::AstraRules::ParseGroups(groups.bytes)).empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    return scfuzz::Expect([&] { WriteAll(data[0], scfuzz::AsText(data + 1, size - 1)); });
}
