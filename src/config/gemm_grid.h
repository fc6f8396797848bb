// A GEMM's measured throughput by shape: TFLOPS at every (m, n, k) of a product grid of sizes, as XLA's default
// matmul table profiles one compute capability (matmul_interpolator_data.h: batch 1, 256-4096 in each dimension).
// The FLOP-count curve (GemmCurve::tflops) folds shape away; it reads a 4096 x 4096 x 256 GEMM (8.6 GFLOP) as the
// square GEMM of the same work, 500 TFLOPS on sm_90, where the table measured 392.
//
// Interpolation (GridTflops): multilinear in log(m), log(n), log(k) between the eight surrounding grid points. It
// returns the measured value exactly at a grid point and, where the table rises along a dimension, rises along it
// too. Outside the grid:
// - A GEMM wider than the grid in m or n (a 70B layer's 8,192 outputs) and narrower in the other is read as the
//   grid's GEMM of the same output area m x n and the same k: a GEMM's parallelism is its output tiles, and the
//   sm_90 table's rates at equal area and k agree whatever the aspect (k = 1024: 373 TFLOPS at 512 x 4096 and
//   371 at 4096 x 512; 490, 494 and 488 at 1024 x 4096, 2048 x 2048 and 4096 x 1024).
// - What is still outside is clamped to the grid's edge (XLA's own cost model takes the nearest table entry,
//   which also holds the edge's rate beyond the table): past 4096 the table has reached its plateau, below 256
//   it says nothing and the edge's rate is an upper bound.
#pragma once
#include <string>
#include <vector>

namespace sc {

// One GEMM: an m x k matrix times a k x n one (XLA's convention: m and n the non-contracting sizes, k the
// contracted one). Zero anywhere: not known, the op is timed by its FLOP count.
struct GemmDims {
    double m = 0, n = 0, k = 0;
    // A grouped (MoE expert) GEMM of a serving engine's MoE op: the expert's intermediate width on this rank, the
    // experts the rank holds, the model's hidden size and the rows a token sends the rank (top-k / ep), which
    // together pick the measured MoE-op curve it is held to (GroupedGemmCurve, NearestGroupedGemm); width 0: not
    // stated, no such curve applies; experts, hidden or hits 0: picked without them.
    double group_width = 0, group_experts = 0, group_hidden = 0, group_hits = 0;
    bool known() const { return m > 0 && n > 0 && k > 0; }
};

struct GemmGridPoint {
    double m = 0, n = 0, k = 0, tflops = 0;
};

struct GemmGrid {
    std::vector<double> m, n, k;              // sizes, strictly increasing; empty: no grid
    std::vector<double> tflops;               // m-major: index (i * n.size() + j) * k.size() + l
    std::vector<double> log_m, log_n, log_k;  // std::log of each size (GridTflops is on the estimate's hot path)
    bool empty() const { return tflops.empty(); }
};

// The grid the points span. Throws sc::Error naming `field` when a point is repeated, a size or rate is not
// positive, or a point of the product m x n x k is missing (a grid with holes would be interpolated across them).
GemmGrid MakeGemmGrid(const std::vector<GemmGridPoint>& points, const std::string& field);

// TFLOPS of one m x n x k GEMM on the grid (see the header comment). The grid must not be empty.
double GridTflops(const GemmGrid& grid, const GemmDims& dims);

}  // namespace sc
