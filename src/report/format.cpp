#include "report/format.h"

#include <cmath>
#include <cstdio>

namespace sc {

static std::string Scaled(double v, const char* const* units, int count, double step, int decimals) {
    int i = 0;
    double a = std::fabs(v);
    while (i + 1 < count && a >= step) a /= step, v /= step, ++i;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, units[i]);
    return buf;
}

std::string FormatCount(double n) {
    static const char* u[] = {"", "K", "M", "B", "T"};
    return Scaled(n, u, 5, 1000, 2);
}

std::string FormatFlops(double f) {
    static const char* u[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP", "ZFLOP"};
    return Scaled(f, u, 8, 1000, 3);
}

std::string FormatBytes(double b) {
    static const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    return Scaled(b, u, 6, 1024, 2);
}

std::string FormatInt(double n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", n);
    return buf;
}

std::string FormatEnergy(double joules) {
    const double wh = joules / 3600;
    if (wh < 1e3) return FormatNumber("%.3g Wh", wh);
    if (wh < 1e6) return FormatNumber("%.3g kWh", wh / 1e3);
    return FormatNumber("%.3g MWh", wh / 1e6);
}

std::string FormatNumber(const char* printf_format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, printf_format, v);
    return buf;
}

std::string FormatSeconds(double s, TimeStyle style) {
    char buf[64];
    if (s >= 1) std::snprintf(buf, sizeof buf, "%.*f s", style.s_decimals, s);
    else if (s >= 1e-3 || !style.down_to_us) std::snprintf(buf, sizeof buf, "%.*f ms", style.ms_decimals, s * 1e3);
    else std::snprintf(buf, sizeof buf, "%.*f us", style.ms_decimals, s * 1e6);
    return buf;
}

}  // namespace sc
