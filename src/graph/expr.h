// Symbolic sizes: expressions over named symbols (batch, sequence, hidden, heads, tp, ...).
// A graph is built once per model family with every shape, FLOP and byte count as an Expr, then
// evaluated for a binding of symbols in one linear pass over the pool (children always precede
// parents), which is what makes sweeps cheap. Values are doubles holding integers: exact below 2^53.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace sc {

enum class Sym : uint8_t {
    // one microbatch
    b,  // sequences per microbatch
    s,  // sequence length
    // model shape
    h,    // hidden size
    a,    // attention heads
    kv,   // key/value heads
    d,    // head dim (q, k, v) for ordinary attention
    f,    // dense MLP intermediate size
    V,    // vocabulary
    E,    // routed experts
    k,    // experts per token
    fe,   // expert intermediate size
    se,   // shared experts
    ql,   // MLA query low rank
    kvl,  // MLA key/value low rank
    dn,   // MLA q/k head dim without rotary part
    dr,   // MLA rotary head dim
    dv,   // MLA value head dim
    // parallel split
    tp,
    cp,
    ep,
    // number formats (bytes per element)
    w,   // activation precision (stored for backward, communicated, read and written by kernels)
    cf,  // MoE capacity factor multiplier (1 when tokens are not padded to a capacity)
    q8,  // 1 when GEMMs run in an 8-bit (or narrower) format, else 0
    xr,  // EP ranks a token is sent to: top_k (every routed copy), or the distinct ranks of its experts (DeepEP)
    // Mamba-2 mixer (hybrid models; appended so the older symbols keep their indices)
    mh,  // Mamba heads
    mp,  // Mamba head dim
    mn,  // SSM state size
    mg,  // groups of B and C
    mk,  // depthwise convolution taps
    dm,  // width of a routed MoE token: the latent size of a latent MoE, else h
    // quantizing narrow GEMM operands, bytes per element by recipe (config/quantization.h; 0 for 16-bit GEMMs)
    qn,  // an input a norm wrote
    qc,  // any other input
    qg,  // an output gradient
    qs,  // the input kept for the weight gradient
    count
};

const char* SymName(Sym s);

using Binding = std::array<double, static_cast<size_t>(Sym::count)>;

struct Expr {
    uint32_t id = 0;  // index in its ExprPool; 0 is the constant 0
};

class ExprPool {
public:
    ExprPool();
    Expr Const(double value);
    Expr Symbol(Sym s);
    Expr Add(Expr x, Expr y);
    Expr Mul(Expr x, Expr y);
    Expr Div(Expr x, Expr y);  // exact division; divisibility is checked where the binding is validated
    Expr Max(Expr x, Expr y);

    size_t size() const { return nodes_.size(); }
    // Evaluates every expression of the pool: out[e.id] is the value of e. `out` is resized to size().
    void EvalAll(const Binding& binding, std::vector<double>& out) const;
    double Eval(Expr e, const Binding& binding) const;  // one expression (slow path, for tests and strings)
    std::string ToString(Expr e) const;

private:
    enum Op : uint8_t { kConst, kSym, kAdd, kMul, kDiv, kMax };
    struct Node {
        Op op;
        uint32_t x, y;
        double c;  // constant value, or the symbol index for kSym
    };
    Expr Intern(Op op, uint32_t x, uint32_t y, double c);
    bool IsConst(Expr e, double* v) const;
    std::vector<Node> nodes_;
    std::unordered_map<std::string, uint32_t> index_;  // hash-consing: one node per distinct expression
};

// Arithmetic sugar for building graphs: SymExpr values carry their pool.
struct SymExpr {
    ExprPool* pool;
    Expr e;
};
inline SymExpr operator+(SymExpr x, SymExpr y) { return {x.pool, x.pool->Add(x.e, y.e)}; }
inline SymExpr operator*(SymExpr x, SymExpr y) { return {x.pool, x.pool->Mul(x.e, y.e)}; }
inline SymExpr operator/(SymExpr x, SymExpr y) { return {x.pool, x.pool->Div(x.e, y.e)}; }
inline SymExpr operator*(double c, SymExpr y) { return {y.pool, y.pool->Mul(y.pool->Const(c), y.e)}; }
inline SymExpr operator*(SymExpr y, double c) { return c * y; }
inline SymExpr operator+(SymExpr x, double c) { return {x.pool, x.pool->Add(x.e, x.pool->Const(c))}; }
inline SymExpr operator/(SymExpr x, double c) { return {x.pool, x.pool->Div(x.e, x.pool->Const(c))}; }
inline SymExpr Max(SymExpr x, SymExpr y) { return {x.pool, x.pool->Max(x.e, y.e)}; }

}  // namespace sc
