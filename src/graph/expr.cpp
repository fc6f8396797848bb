#include "graph/expr.h"

#include <algorithm>
#include <cstring>

namespace sc {

const char* SymName(Sym s) {
    static const char* names[] = {"b",  "s",   "h",  "a",  "kv", "d",  "f",  "V",  "E",  "k",  "fe", "se",
                                  "ql", "kvl", "dn", "dr", "dv", "tp", "cp", "ep", "w",  "cf", "q8", "xr",
                                  "mh", "mp",  "mn", "mg", "mk", "dm", "qn", "qc", "qg", "qs"};
    static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Sym::count));
    return names[static_cast<size_t>(s)];
}

ExprPool::ExprPool() { Intern(kConst, 0, 0, 0.0); }

Expr ExprPool::Intern(Op op, uint32_t x, uint32_t y, double c) {
    char key[1 + 4 + 4 + 8];
    key[0] = static_cast<char>(op);
    std::memcpy(key + 1, &x, 4);
    std::memcpy(key + 5, &y, 4);
    std::memcpy(key + 9, &c, 8);
    auto [it, inserted] = index_.try_emplace(std::string(key, sizeof key), static_cast<uint32_t>(nodes_.size()));
    if (inserted) nodes_.push_back({op, x, y, c});
    return Expr{it->second};
}

bool ExprPool::IsConst(Expr e, double* v) const {
    if (nodes_[e.id].op != kConst) return false;
    *v = nodes_[e.id].c;
    return true;
}

Expr ExprPool::Const(double value) { return Intern(kConst, 0, 0, value); }
Expr ExprPool::Symbol(Sym s) { return Intern(kSym, 0, 0, static_cast<double>(s)); }

Expr ExprPool::Add(Expr x, Expr y) {
    double a, b;
    bool ca = IsConst(x, &a), cb = IsConst(y, &b);
    if (ca && cb) return Const(a + b);
    if (ca && a == 0) return y;
    if (cb && b == 0) return x;
    if (x.id > y.id) std::swap(x, y);  // commutative: one canonical order
    return Intern(kAdd, x.id, y.id, 0);
}

Expr ExprPool::Mul(Expr x, Expr y) {
    double a, b;
    bool ca = IsConst(x, &a), cb = IsConst(y, &b);
    if (ca && cb) return Const(a * b);
    if ((ca && a == 0) || (cb && b == 0)) return Const(0);
    if (ca && a == 1) return y;
    if (cb && b == 1) return x;
    if (x.id > y.id) std::swap(x, y);
    return Intern(kMul, x.id, y.id, 0);
}

Expr ExprPool::Div(Expr x, Expr y) {
    double a, b;
    bool ca = IsConst(x, &a), cb = IsConst(y, &b);
    if (ca && cb && b != 0) return Const(a / b);
    if (cb && b == 1) return x;
    if (ca && a == 0) return Const(0);
    return Intern(kDiv, x.id, y.id, 0);
}

Expr ExprPool::Max(Expr x, Expr y) {
    double a, b;
    if (IsConst(x, &a) && IsConst(y, &b)) return Const(std::max(a, b));
    if (x.id > y.id) std::swap(x, y);
    return Intern(kMax, x.id, y.id, 0);
}

void ExprPool::EvalAll(const Binding& binding, std::vector<double>& out) const {
    out.resize(nodes_.size());
    double* v = out.data();
    const Node* n = nodes_.data();
    for (size_t i = 0, e = nodes_.size(); i < e; ++i) {
        switch (n[i].op) {
            case kConst: v[i] = n[i].c; break;
            case kSym: v[i] = binding[static_cast<size_t>(n[i].c)]; break;
            case kAdd: v[i] = v[n[i].x] + v[n[i].y]; break;
            case kMul: v[i] = v[n[i].x] * v[n[i].y]; break;
            case kDiv: v[i] = v[n[i].x] / v[n[i].y]; break;
            case kMax: v[i] = std::max(v[n[i].x], v[n[i].y]); break;
        }
    }
}

double ExprPool::Eval(Expr e, const Binding& binding) const {
    const Node& n = nodes_[e.id];
    switch (n.op) {
        case kConst: return n.c;
        case kSym: return binding[static_cast<size_t>(n.c)];
        case kAdd: return Eval({n.x}, binding) + Eval({n.y}, binding);
        case kMul: return Eval({n.x}, binding) * Eval({n.y}, binding);
        case kDiv: return Eval({n.x}, binding) / Eval({n.y}, binding);
        case kMax: return std::max(Eval({n.x}, binding), Eval({n.y}, binding));
    }
    return 0;
}

std::string ExprPool::ToString(Expr e) const {
    const Node& n = nodes_[e.id];
    auto wrap = [&](uint32_t id, Op parent) {
        std::string s = ToString({id});
        Op op = nodes_[id].op;
        bool need = (parent == kMul || parent == kDiv) && op == kAdd;
        if (parent == kDiv && (op == kMul || op == kDiv)) need = true;
        return need ? "(" + s + ")" : s;
    };
    switch (n.op) {
        case kConst: {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.15g", n.c);
            return buf;
        }
        case kSym: return SymName(static_cast<Sym>(static_cast<int>(n.c)));
        case kAdd: return ToString({n.x}) + " + " + ToString({n.y});
        case kMul: return wrap(n.x, kMul) + "*" + wrap(n.y, kMul);
        case kDiv: return wrap(n.x, kMul) + "/" + wrap(n.y, kDiv);
        case kMax: return "max(" + ToString({n.x}) + ", " + ToString({n.y}) + ")";
    }
    return "?";
}

}  // namespace sc
