#include "training/power_cap.h"

#include <cmath>
#include <cstdio>

namespace sc {

double PowerCapClockScale(const Accelerator& acc) {
    if (!acc.power_limit_w || !acc.board_power_w || *acc.power_limit_w >= *acc.board_power_w) return 1.0;
    return std::pow(*acc.power_limit_w / *acc.board_power_w, 1.0 / kPowerClockExponent);
}

std::optional<double> PowerDrawW(const Accelerator& acc) {
    return acc.power_limit_w ? acc.power_limit_w : acc.board_power_w;
}

std::string PowerCapText(const Accelerator& acc) {
    if (!acc.power_limit_w || !acc.board_power_w) return "";
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "power limit %.0f W of the %.0f W board: compute at %.3f of its rated clock ((limit / board)^(1/3), "
                  "P ~ f^3); HBM bandwidth unchanged",
                  *acc.power_limit_w, *acc.board_power_w, PowerCapClockScale(acc));
    return buf;
}

}  // namespace sc
