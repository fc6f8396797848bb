#include "training/host_link.h"

#include <cmath>

#include "config/error.h"
#include "config/numbers.h"

namespace sc {

// The host link the copies go over: stated, else the part's measured rates, else an error naming the field.
OffloadLink OffloadLinkOf(const TrainingOptions& opt, const CalibrationTable* cal, const Accelerator& acc) {
    OffloadLink l;
    if (!(std::isfinite(opt.host_link_gbps) && opt.host_link_gbps >= 0))
        throw Error("host_link_gbps", "must be >= 0 GB/s each way (0: the part's measured host link), got " +
                                          ShownNumber(opt.host_link_gbps));
    if (opt.host_link_gbps > 0) {
        l.out_gbps = l.in_gbps = opt.host_link_gbps, l.source = "stated (host_link_gbps)";
        return l;
    }
    std::string measured;
    if (cal) {
        const HostLinkMeasurement* out = FindHostLink(*cal, acc.id, HostLinkOp::device_to_host);
        const HostLinkMeasurement* in = FindHostLink(*cal, acc.id, HostLinkOp::host_to_device);
        if (out && in) l.out_gbps = out->gbps, l.in_gbps = in->gbps, l.source = out->series + ", " + out->hardware;
        for (const HostLinkMeasurement& m : cal->host_link)
            for (const std::string& id : m.accelerators)
                if (measured.find(id) == std::string::npos) measured += (measured.empty() ? "" : ", ") + id;
    }
    l.measured = l.out_gbps > 0 && l.in_gbps > 0;
    if (!l.measured)
        throw Error("offload_layers", "CPU activation offloading copies over the host link, and " + acc.id +
                                          " has no measured host-link rate (measured: " +
                                          (measured.empty() ? "none without a calibration" : measured) +
                                          "); state one with --options host_link_gbps=<GB/s>");
    return l;
}

}  // namespace sc
