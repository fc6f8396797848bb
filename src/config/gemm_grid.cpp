#include "config/gemm_grid.h"

#include <algorithm>
#include <cmath>

#include "config/error.h"
#include "config/numbers.h"

namespace sc {

namespace {

std::vector<double> SortedSizes(const std::vector<GemmGridPoint>& points, double GemmGridPoint::*size) {
    std::vector<double> v;
    for (const GemmGridPoint& p : points) v.push_back(p.*size);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

size_t IndexOf(const std::vector<double>& sizes, double x) {
    return static_cast<size_t>(std::lower_bound(sizes.begin(), sizes.end(), x) - sizes.begin());
}

// Where `x` falls on `sizes` (`logs` their logarithms): the lower neighbour and the weight of the upper one, in
// log(size), clamped.
void Bracket(const std::vector<double>& sizes, const std::vector<double>& logs, double x, size_t* lo, double* w) {
    *lo = 0, *w = 0;
    if (sizes.size() == 1 || x <= sizes.front()) return;
    if (x >= sizes.back()) {
        *lo = sizes.size() - 1;
        return;
    }
    size_t hi = IndexOf(sizes, x);
    *lo = hi - 1;
    *w = (std::log(x) - logs[*lo]) / (logs[hi] - logs[*lo]);
}

std::vector<double> Logs(const std::vector<double>& sizes) {
    std::vector<double> v;
    for (double s : sizes) v.push_back(std::log(s));
    return v;
}

// A GEMM wider than the grid in one non-contracting size and narrower in the other, as the grid's GEMM of the same
// output area m x n (and k): see the header.
void FoldToGrid(const GemmGrid& g, double* m, double* n) {
    const double m_max = g.m.back(), n_max = g.n.back();
    if (*n > n_max && *m < m_max) {
        const double f = std::min(*n / n_max, m_max / *m);
        *m *= f, *n /= f;
    } else if (*m > m_max && *n < n_max) {
        const double f = std::min(*m / m_max, n_max / *n);
        *n *= f, *m /= f;
    }
}

}  // namespace

GemmGrid MakeGemmGrid(const std::vector<GemmGridPoint>& points, const std::string& field) {
    GemmGrid g;
    if (points.empty()) return g;
    for (size_t i = 0; i < points.size(); ++i) {
        const GemmGridPoint& p = points[i];
        const std::string f = field + "[" + std::to_string(i) + "]";
        for (double v : {p.m, p.n, p.k, p.tflops})
            if (!(v > 0) || !std::isfinite(v))
                throw Error(f, "sizes and tflops must be positive, got " + ShownNumber(v));
    }
    g.m = SortedSizes(points, &GemmGridPoint::m);
    g.n = SortedSizes(points, &GemmGridPoint::n);
    g.k = SortedSizes(points, &GemmGridPoint::k);
    // Checked before the table is allocated: n points span at most n^3 shapes, and only a full grid is read.
    const size_t shapes = g.m.size() * g.n.size() * g.k.size();
    if (points.size() != shapes)
        throw Error(field, "the points must cover every m x n x k of their sizes (" + std::to_string(g.m.size()) +
                               " x " + std::to_string(g.n.size()) + " x " + std::to_string(g.k.size()) + " = " +
                               std::to_string(shapes) + "), got " + std::to_string(points.size()));
    g.log_m = Logs(g.m), g.log_n = Logs(g.n), g.log_k = Logs(g.k);
    g.tflops.assign(shapes, 0.0);
    for (size_t i = 0; i < points.size(); ++i) {
        const GemmGridPoint& p = points[i];
        double& slot = g.tflops[(IndexOf(g.m, p.m) * g.n.size() + IndexOf(g.n, p.n)) * g.k.size() + IndexOf(g.k, p.k)];
        if (slot > 0)
            throw Error(field + "[" + std::to_string(i) + "]", "shape " + ShownNumber(p.m) + " x " + ShownNumber(p.n) +
                                                                   " x " + ShownNumber(p.k) + " is listed twice");
        slot = p.tflops;  // as many points as shapes: a shape listed twice leaves another empty
    }
    return g;
}

double GridTflops(const GemmGrid& g, const GemmDims& d) {
    double m = d.m, n = d.n;
    FoldToGrid(g, &m, &n);
    size_t i, j, l;
    double wi, wj, wl;
    Bracket(g.m, g.log_m, m, &i, &wi);
    Bracket(g.n, g.log_n, n, &j, &wj);
    Bracket(g.k, g.log_k, d.k, &l, &wl);
    auto at = [&](size_t a, size_t b, size_t c) { return g.tflops[(a * g.n.size() + b) * g.k.size() + c]; };
    double sum = 0;
    for (int da = 0; da < 2; ++da)
        for (int db = 0; db < 2; ++db)
            for (int dc = 0; dc < 2; ++dc) {
                const double w = (da ? wi : 1 - wi) * (db ? wj : 1 - wj) * (dc ? wl : 1 - wl);
                if (w > 0) sum += w * at(i + da, j + db, l + dc);
            }
    return sum;
}

}  // namespace sc
