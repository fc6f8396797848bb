// Number formatting shared by every text report (CLI and page print the same strings).
#pragma once
#include <string>

namespace sc {

std::string FormatCount(double n);   // 174.60 B, 8.03 B, 512.00 M (SI, 2 decimals)
std::string FormatFlops(double f);   // 1.073 TFLOP, 3.14 PFLOP
std::string FormatBytes(double b);   // 325.22 GiB (binary units)
std::string FormatInt(double n);     // 174604259328 (exact integer, no separators)
std::string FormatNumber(const char* printf_format, double v);  // FormatNumber("%.1f%%", 37.25) = "37.2%"

}  // namespace sc
