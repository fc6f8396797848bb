// Number formatting shared by every text report (CLI and page print the same strings).
#pragma once
#include <string>

namespace sc {

std::string FormatCount(double n);                              // 174.60 B, 8.03 B, 512.00 M (SI, 2 decimals)
std::string FormatFlops(double f);                              // 1.073 TFLOP, 3.14 PFLOP
std::string FormatBytes(double b);                              // 325.22 GiB (binary units)
std::string FormatInt(double n);                                // 174604259328 (exact integer, no separators)
std::string FormatNumber(const char* printf_format, double v);  // FormatNumber("%.1f%%", 37.25) = "37.2%"
// Joules as energy a reader compares: Wh below a kWh, kWh below a MWh, MWh above (3 significant digits), so a
// one-node step is not "0.00 kWh" nor a long serving run "5e+03 Wh": 3412.96 J = "0.948 Wh".
std::string FormatEnergy(double joules);

// Unit conversions for the numbers printed bare (JSON, CSV, a panel's "80 GiB"): one definition of each scale.
constexpr double kBytesPerGiB = 1024.0 * 1024 * 1024;
inline double InGiB(double bytes) { return bytes / kBytesPerGiB; }
inline double InTera(double v) { return v / 1e12; }  // FLOP/s -> TFLOP/s

// Durations: seconds from 1 s up, milliseconds below, and microseconds below 1 ms when `down_to_us`. One
// function for every place that prints a time, with the precision each view has always used:
struct TimeStyle {
    int s_decimals;
    int ms_decimals;
    bool down_to_us;  // else a time under 1 ms stays in ms ("0.05 ms")
};
// `stagecraft estimate`: 12.345 s, 12.345 ms, 12.345 us
inline constexpr TimeStyle kReportTime{3, 3, true};
// The layout tables (`stagecraft search`, the page's Best layout): 1.234 s, 12.34 ms
inline constexpr TimeStyle kTableTime{3, 2, false};
// The page's Training panel: 1.23 s, 12.3 ms
inline constexpr TimeStyle kPanelTime{2, 1, false};
std::string FormatSeconds(double s, TimeStyle style = kReportTime);

}  // namespace sc
