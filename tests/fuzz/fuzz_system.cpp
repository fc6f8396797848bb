// System presets, against a fixed accelerator (its own parser has fuzz_hardware). A system that parses is then
// timed: the network model (training/comm_model.h, torus levels included), the slice a smaller job gets
// (config/torus_slice.h) and the system grown for a larger one (ExtendSystem) must give finite, non-negative
// times or an sc::Error, never a crash or a NaN.
#include <cmath>

#include "config/hardware_config.h"
#include "config/torus_slice.h"
#include "fuzz_target.h"
#include "parallel/layout.h"
#include "parallel/parallel_config.h"
#include "training/comm_model.h"
#include "training/sweep.h"

namespace {

void TimeCollectives(const sc::System& sys) {
    for (const char* spec : {"tp=2,dp=4", "tp=8,pp=2,dp=4", "tp=4,cp=2,dp=8,ep=4"}) {
        const sc::ParallelConfig p = sc::ParseParallelSpec(spec);
        sc::Layout layout(p);
        sc::System s;
        try {
            s = sc::ExtendSystem(sys, layout.world());  // refused past a torus-only pod: the next layout may fit
        } catch (const sc::Error&) {
            continue;
        }
        const std::optional<sc::System> slice = sc::SliceTorus(s, layout.world());
        const sc::CommModel net(slice ? *slice : s, layout, true);
        for (sc::GroupKind g : {sc::GroupKind::tp, sc::GroupKind::dp, sc::GroupKind::cp, sc::GroupKind::ep})
            for (sc::CollectiveType c : {sc::CollectiveType::all_reduce, sc::CollectiveType::all_gather,
                                         sc::CollectiveType::reduce_scatter, sc::CollectiveType::all_to_all}) {
                const double t = net.Seconds(c, g, 1e6);
                if (!(t >= 0) || !std::isfinite(t)) __builtin_trap();
            }
        const double p2p = net.P2PSeconds(1e6);
        if (!(p2p >= 0) || !std::isfinite(p2p)) __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const sc::Accelerator h100 = sc::ParseAccelerator(scfuzz::ReadSource("presets/hardware/h100-sxm.json"));
    return scfuzz::Expect([&] { TimeCollectives(sc::ParseSystem(scfuzz::AsText(data, size), h100)); });
}
