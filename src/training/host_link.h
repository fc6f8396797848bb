// The host link CPU activation offloading copies over (ParallelConfig::offload_layers): its rate each way, stated
// or measured on the part, for the estimate's wait, the traces' copy durations and the search.
#pragma once
#include <string>

#include "config/calibration.h"
#include "config/hardware_config.h"
#include "training/training_options.h"

namespace sc {

// The host link CPU activation offloading copies over (GB/s each way): stated (TrainingOptions::host_link_gbps) or
// the part's measured rates (calibration host_link rows: nvbandwidth).
struct OffloadLink {
    double out_gbps = 0, in_gbps = 0;  // device to host, host to device
    bool measured = false;
    std::string source;  // the measurement's series and hardware, or "stated"
};

// The host link CPU activation offloading copies over for `acc`: TrainingOptions::host_link_gbps when stated, else
// the part's measured rates in `cal`; throws sc::Error naming offload_layers when it has neither.
OffloadLink OffloadLinkOf(const TrainingOptions& opt, const CalibrationTable* cal, const Accelerator& acc);

}  // namespace sc
