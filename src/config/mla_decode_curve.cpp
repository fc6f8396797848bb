#include "config/mla_decode_curve.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "config/error.h"
#include "config/numbers.h"

namespace sc {

void SetMlaDecodePoints(MlaDecodeCurve* curve, const std::vector<std::array<double, 3>>& points,
                        const std::string& field) {
    std::map<double, std::map<double, double>> by;  // sequences -> cached -> seconds
    for (size_t k = 0; k < points.size(); ++k) {
        const auto& [s, c, ms] = points[k];
        const std::string f = field + "[" + std::to_string(k) + "]";
        if (!(std::isfinite(s) && s >= 1 && s == std::floor(s)))
            throw Error(f, "sequences must be a whole number >= 1, got " + ShownNumber(s));
        if (!(std::isfinite(c) && c >= 1)) throw Error(f, "cached tokens must be >= 1, got " + ShownNumber(c));
        if (!(std::isfinite(ms) && ms > 0 && ms < 1e5))
            throw Error(f, "ms must be in (0, 1e5), got " + ShownNumber(ms));
        if (!by[s].emplace(c, ms * 1e-3).second)
            throw Error(
                f, "the point at " + ShownNumber(s) + " sequences and " + ShownNumber(c) + " tokens is given twice");
    }
    if (by.empty()) throw Error(field, "no points");
    curve->rows.clear();
    for (const auto& [s, cs] : by) {
        MlaDecodeCurve::Row r;
        r.sequences = s;
        for (const auto& [c, t] : cs) {
            r.cached.push_back(c), r.seconds.push_back(t);
            r.log_cached.push_back(std::log(c)), r.log_seconds.push_back(std::log(t));
        }
        curve->rows.push_back(std::move(r));
    }
}

namespace {

double RowSeconds(const MlaDecodeCurve::Row& r, double cached) {
    if (cached <= r.cached.front()) return r.seconds.front();
    if (cached >= r.cached.back()) return r.seconds.back() * cached / r.cached.back();
    const size_t i = static_cast<size_t>(std::upper_bound(r.cached.begin(), r.cached.end(), cached) - r.cached.begin());
    if (cached == r.cached[i - 1]) return r.seconds[i - 1];
    const double t = (std::log(cached) - r.log_cached[i - 1]) / (r.log_cached[i] - r.log_cached[i - 1]);
    return std::exp(r.log_seconds[i - 1] + t * (r.log_seconds[i] - r.log_seconds[i - 1]));
}

}  // namespace

double MlaDecodeSeconds(const MlaDecodeCurve& curve, double sequences, double cached) {
    const auto& rows = curve.rows;
    if (rows.empty()) throw Error("mla_decode_attention", curve.id + " has no points");
    if (sequences <= rows.front().sequences) return RowSeconds(rows.front(), cached);
    if (sequences >= rows.back().sequences) return RowSeconds(rows.back(), cached) * sequences / rows.back().sequences;
    size_t i = 1;
    while (rows[i].sequences < sequences) ++i;  // rows[i-1] < sequences <= rows[i]; a dozen rows
    const double hi = RowSeconds(rows[i], cached);
    if (sequences == rows[i].sequences) return hi;
    const double lo = RowSeconds(rows[i - 1], cached);
    const double t = std::log(sequences / rows[i - 1].sequences) / std::log(rows[i].sequences / rows[i - 1].sequences);
    return std::exp(std::log(lo) + t * (std::log(hi) - std::log(lo)));
}

}  // namespace sc
