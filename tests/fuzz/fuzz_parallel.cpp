// Parallel specs ("tp=8,pp=4,..."): parse, validate against a model, and evaluate the job's graph and memory,
// as `estimate` and the page do with whatever a user types.
#include "config/model_config.h"
#include "fuzz_target.h"
#include "parallel/job.h"
#include "parallel/memory.h"
#include "parallel/parallel_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const sc::ModelConfig model = sc::ParseModelConfig(scfuzz::ReadSource("presets/models/mixtral-8x7b.json"));
    return scfuzz::Expect([&] {
        sc::Job job = sc::MakeJob(model, sc::ParseParallelSpec(scfuzz::AsText(data, size)));
        for (int s = 0; s < job.par.pp && s < 4; ++s) sc::StageMemoryOf(job, s);
    });
}
