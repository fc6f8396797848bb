#include "config/calibration.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "config/error.h"
#include "config/json_fields.h"
#include "config/numbers.h"

namespace sc {

namespace {

using nlohmann::json;

std::vector<std::string> AcceleratorIds(JsonFields& r) {
    std::vector<std::string> ids = r.NonEmptyStrings("accelerators");
    return ids;
}

void ReadSourceFields(JsonFields& r, std::string* series, std::string* hardware, std::string* setup,
                      std::string* source, std::string* note) {
    *series = r.NonEmptyString("series");
    *hardware = r.NonEmptyString("hardware");
    std::string s = r.String("setup", "");
    if (setup) *setup = s;
    *source = r.NonEmptyString("source");
    *note = r.String("note", "");
}

Precision Dtype(JsonFields& r) {
    std::string d = r.NonEmptyString("dtype");
    Precision p;
    if (!ParsePrecision(d, &p))
        throw Error(r.Field("dtype"), "\"" + d + "\" is not one of \"fp32\", \"bf16\", \"fp16\", \"fp8\", \"fp4\"");
    return p;
}

// A curve's optional "scaling": absent for per-tensor scales (or a format that fixes its own), "block" for fp8's
// block scales (GemmCurve::scaling).
std::string CurveScaling(JsonFields& r, Precision dtype) {
    if (!r.Get("scaling", false)) return "";
    std::string s = r.NonEmptyString("scaling");
    if (s != "block")
        throw Error(r.Field("scaling"), "\"" + s +
                                            "\" is not a scaling a curve can state; valid: \"block\" (or no "
                                            "\"scaling\": one scale a tensor)");
    if (dtype != Precision::fp8)
        throw Error(r.Field("scaling"),
                    std::string("block scaling is an fp8 format; the curve's dtype is ") + NameOf(dtype));
    return s;
}

void ExpectString(JsonFields& r, const char* key, const char* expected) {
    std::string v = r.NonEmptyString(key);
    if (v != expected) throw Error(r.Field(key), "expected \"" + std::string(expected) + "\", got \"" + v + "\"");
}

// The "points" array of a curve: [x, y] pairs, x strictly increasing and positive (ValidateCurve); y at most
// `y_max` when it is positive (0: no bound, y >= 0).
void ReadPoints(JsonFields& r, const char* form, double y_max, MeasuredCurve* out) {
    const json& pts = r.Array("points");
    const std::string pf = r.Field("points");
    for (size_t k = 0; k < pts.size(); ++k) {
        const json& p = pts[k];
        const bool ok = p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number() &&
                        (y_max <= 0 || (p[1].get<double>() > 0 && p[1].get<double>() <= y_max));
        if (!ok) throw Error(pf + "[" + std::to_string(k) + "]", std::string("expected ") + form + ", got " + Shown(p));
        out->x.push_back(p[0].get<double>());
        out->y.push_back(p[1].get<double>());
    }
    ValidateCurve(*out, pf);
    for (double x : out->x) out->log_x.push_back(std::log(x));
}

struct Shape {
    double m, n, k, batch, tflops;
};

Shape ReadShape(const json& j, const std::string& path, bool with_tflops) {
    JsonFields r(j, path);
    Shape s{};
    const char* keys[] = {"m", "n", "k", "batch"};
    double* outs[] = {&s.m, &s.n, &s.k, &s.batch};
    for (int i = 0; i < 4; ++i) {
        *outs[i] = r.PositiveIntAtMost(keys[i], 2147483647);
    }
    if (with_tflops) {
        s.tflops = r.Number("tflops");
        if (!(s.tflops > 0)) throw Error(r.Field("tflops"), "must be positive, got " + ShownNumber(s.tflops));
    }
    r.RejectUnknown();
    return s;
}

// An optional top-level array (absent: empty).
const json& OptionalArray(JsonFields& r, const char* key) {
    static const json kEmpty = json::array();
    const json* a = r.Get(key, false);
    if (!a) return kEmpty;
    if (!a->is_array()) throw Error(key, "expected an array, got " + std::string(a->type_name()));
    return *a;
}

// An entry's "id", which no other entry of the table may use.
std::string UniqueId(JsonFields& g, std::set<std::string>& ids) {
    std::string id = g.NonEmptyString("id");
    if (!ids.insert(id).second) throw Error(g.Field("id"), "\"" + id + "\" is used twice");
    return id;
}

// The fields every derived entry has first: its id, the parts it applies to, the precision it was measured in.
template <class Entry>
void ReadEntryHead(JsonFields& g, std::set<std::string>& ids, Entry* e) {
    e->id = UniqueId(g, ids);
    e->accelerators = AcceleratorIds(g);
    e->dtype = Dtype(g);
}

// The body every measured curve ends with: its axes as named (`x`, `y`), its points (y at most `y_max`, 0: any),
// its source fields; and no field beside them.
template <class Entry>
void ReadCurveTail(JsonFields& g, const char* x, const char* y, const char* form, double y_max, MeasuredCurve* curve,
                   Entry* e) {
    ExpectString(g, "x", x);
    ExpectString(g, "y", y);
    ReadPoints(g, form, y_max, curve);
    ReadSourceFields(g, &e->series, &e->hardware, &e->setup, &e->source, &e->note);
    g.RejectUnknown();
}

// A grouped-GEMM curve's optional routing of the measured model ("top_k" of "model_experts"), both or neither: a whole
// number of experts a token picks, of at least the experts the curve's rank held.
void ReadRouting(JsonFields& g, GroupedGemmCurve* gc) {
    const bool k = g.Has("top_k"), e = g.Has("model_experts");
    if (!k && !e) return;
    if (k != e)
        throw Error(g.Field(k ? "model_experts" : "top_k"),
                    "is missing: a curve states its model's routing as \"top_k\" and \"model_experts\" together, or "
                    "neither");
    gc->model_experts = g.Number("model_experts");
    if (!(gc->model_experts >= gc->experts) || gc->model_experts != std::floor(gc->model_experts))
        throw Error(g.Field("model_experts"), "must be a whole number of experts, at least the rank's " +
                                                  ShownNumber(gc->experts) + ", got " + ShownNumber(gc->model_experts));
    gc->top_k = g.Number("top_k");
    if (!(gc->top_k >= 1 && gc->top_k <= gc->model_experts) || gc->top_k != std::floor(gc->top_k))
        throw Error(g.Field("top_k"), "must be a whole number from 1 to model_experts (" +
                                          ShownNumber(gc->model_experts) + "), got " + ShownNumber(gc->top_k));
}

FrameworkGemmCurve ReadFrameworkGemm(const json& e, const std::string& path, std::set<std::string>& ids) {
    JsonFields g(e, path);
    FrameworkGemmCurve fc;
    ReadEntryHead(g, ids, &fc);
    if (BytesOf(fc.dtype) != 2)
        throw Error(g.Field("dtype"), "a framework profile applies to 16-bit GEMMs: \"fp16\" or \"bf16\"");
    const std::string side = g.NonEmptyString("narrow_side");
    if (side != "output" && side != "contraction")
        throw Error(g.Field("narrow_side"), "\"" + side + "\" is not \"output\" (m or n) or \"contraction\" (k)");
    fc.contraction = side == "contraction";
    ReadCurveTail(g, "gemm_narrow_side", "time_ratio", "[gemm_narrow_side, time_ratio > 0]", 1e9, &fc.time_ratio, &fc);
    return fc;
}

// A derived fixed cost (weight_read_floor, decode_attention_floor): its head, "alpha_us" in microseconds (a
// millisecond would be a unit slip, not a launch), the count of what it is the median of under `count_key`, a decode
// floor's optional "sequence_kv_head_ns" (a block's cost), and its source fields.
template <class Floor>
Floor ReadFixedCost(const json& e, const std::string& path, std::set<std::string>& ids, const char* count_key,
                    int count_max, int Floor::*count) {
    JsonFields g(e, path);
    Floor f;
    ReadEntryHead(g, ids, &f);
    f.alpha_us = g.Number("alpha_us");
    if (!(f.alpha_us > 0 && f.alpha_us < 1000))
        throw Error(g.Field("alpha_us"), "must be in (0, 1000) microseconds, got " + ShownNumber(f.alpha_us));
    f.*count = g.PositiveIntAtMost(count_key, count_max);
    if constexpr (requires { f.sequence_kv_head_ns; }) {
        if (g.Has("sequence_kv_head_ns")) {
            f.sequence_kv_head_ns = g.Number("sequence_kv_head_ns");
            if (!(f.sequence_kv_head_ns > 0 && f.sequence_kv_head_ns < 1000))
                throw Error(g.Field("sequence_kv_head_ns"),
                            "must be in (0, 1000) nanoseconds a block, got " + ShownNumber(f.sequence_kv_head_ns));
        }
    }
    ReadSourceFields(g, &f.series, &f.hardware, &f.setup, &f.source, &f.note);
    g.RejectUnknown();
    return f;
}

// A measured SSD scan curve: the call's shape (heads x batch sequences, head width, state, groups, chunk) and its
// efficiency by tokens a sequence.
ScanCurve ReadScanCurve(const json& e, const std::string& path, std::set<std::string>& ids) {
    JsonFields g(e, path);
    ScanCurve sc;
    sc.id = UniqueId(g, ids);
    sc.accelerators = AcceleratorIds(g);
    for (auto [key, field] : {std::pair{"heads", &ScanCurve::heads},
                              {"batch", &ScanCurve::batch},
                              {"head_dim", &ScanCurve::head_dim},
                              {"state", &ScanCurve::state},
                              {"groups", &ScanCurve::groups},
                              {"chunk", &ScanCurve::chunk}})
        sc.*field = g.PositiveIntAtMost(key, 1 << 20);
    ReadCurveTail(g, "seq_len", "efficiency", "[seq_len, efficiency in (0, 1]]", 1, &sc.efficiency, &sc);
    return sc;
}

// A measured MLA decode op: the latent cache's precision, the heads a rank, the latent geometry, and its times as
// [sequences, cached tokens, ms] points.
MlaDecodeCurve ReadMlaDecodeCurve(const json& e, const std::string& path, std::set<std::string>& ids) {
    JsonFields g(e, path);
    MlaDecodeCurve c;
    ReadEntryHead(g, ids, &c);
    if (c.dtype != Precision::fp8 && BytesOf(c.dtype) != 2)
        throw Error(g.Field("dtype"), "a latent cache measured in \"fp8\", \"bf16\" or \"fp16\"");
    c.heads = g.PositiveIntAtMost("heads", 1024);
    c.kv_lora_rank = g.PositiveIntAtMost("kv_lora_rank", 1 << 16);
    c.qk_rope_head_dim = g.PositiveIntAtMost("qk_rope_head_dim", 1 << 16);
    ExpectString(g, "x", "[sequences, cached_tokens]");
    ExpectString(g, "y", "ms");
    const json& pts = g.Array("points");
    const std::string pf = g.Field("points");
    std::vector<std::array<double, 3>> points;
    for (size_t k = 0; k < pts.size(); ++k) {
        const json& p = pts[k];
        if (!(p.is_array() && p.size() == 3 && p[0].is_number() && p[1].is_number() && p[2].is_number()))
            throw Error(pf + "[" + std::to_string(k) + "]", "expected [sequences, cached_tokens, ms], got " + Shown(p));
        points.push_back({p[0].get<double>(), p[1].get<double>(), p[2].get<double>()});
    }
    SetMlaDecodePoints(&c, points, pf);
    ReadSourceFields(g, &c.series, &c.hardware, &c.setup, &c.source, &c.note);
    g.RejectUnknown();
    return c;
}

// A measured collective: NCCL's (the `collectives` table: its scope, op and nodes as stated) or a serving engine's own
// all-reduce (`engine_all_reduce`: the engine named, the op and scope implied, one scale-up domain, at least two
// sizes); then the GPUs it ran on and its bus bandwidth by message size.
CollectiveCurve ReadCollectiveCurve(const json& e, const std::string& path, std::set<std::string>& ids, bool engine) {
    JsonFields c(e, path);
    CollectiveCurve cc;
    cc.id = UniqueId(c, ids);
    cc.accelerators = AcceleratorIds(c);
    if (engine) {
        cc.engine = c.NonEmptyString("engine");
        if (cc.engine != "tensorrt-llm" && cc.engine != "vllm" && cc.engine != "sglang")
            throw Error(c.Field("engine"), "\"" + cc.engine +
                                               "\" is not one of \"tensorrt-llm\", \"vllm\", \"sglang\" (the engines "
                                               "whose own all-reduce is measured)");
        cc.scope = "scale_up";
        cc.op = CollectiveOp::all_reduce;
    } else {
        cc.scope = c.NonEmptyString("scope");
        if (cc.scope != "scale_up" && cc.scope != "scale_out")
            throw Error(c.Field("scope"), "\"" + cc.scope + "\" is not one of \"scale_up\", \"scale_out\"");
        std::string op = c.NonEmptyString("op");
        if (op == "all_reduce") cc.op = CollectiveOp::all_reduce;
        else if (op == "all_gather") cc.op = CollectiveOp::all_gather;
        else if (op == "reduce_scatter") cc.op = CollectiveOp::reduce_scatter;
        else if (op == "all_to_all") cc.op = CollectiveOp::all_to_all;
        else
            throw Error(
                c.Field("op"),
                "\"" + op + "\" is not one of \"all_reduce\", \"all_gather\", \"reduce_scatter\", \"all_to_all\"");
    }
    cc.algorithm = c.NonEmptyString("algorithm");
    cc.n_ranks = c.Int("n_ranks");
    cc.n_nodes = engine ? 1 : c.Int("n_nodes");
    if (cc.n_ranks < 2)
        throw Error(c.Field("n_ranks"), "a collective needs at least 2 ranks, got " + std::to_string(cc.n_ranks));
    if (cc.n_nodes < 1 || cc.n_nodes > cc.n_ranks)
        throw Error(c.Field("n_nodes"), "must be between 1 and n_ranks, got " + std::to_string(cc.n_nodes));
    ReadCurveTail(c, "message_bytes", "busbw_GBps", "[message_bytes, busbw_GBps]", 0, &cc.busbw, &cc);
    if (engine && cc.busbw.x.size() < 2)
        throw Error(c.Field("points"), "an engine's all-reduce needs at least 2 measured sizes");
    return cc;
}

}  // namespace

void ValidateCurve(const MeasuredCurve& c, const std::string& field) {
    if (c.x.empty()) throw Error(field, "a measured curve needs at least one point");
    if (c.x.size() != c.y.size()) throw Error(field, "x and y have different lengths");
    for (size_t i = 0; i < c.x.size(); ++i) {
        std::string f = field + "[" + std::to_string(i) + "]";
        if (!(c.x[i] > 0) || !std::isfinite(c.x[i]))
            throw Error(f, "size must be positive, got " + ShownNumber(c.x[i]));
        if (!(c.y[i] >= 0) || !std::isfinite(c.y[i]))
            throw Error(f, "value must be zero or positive, got " + ShownNumber(c.y[i]));
        if (i > 0 && !(c.x[i] > c.x[i - 1]))
            throw Error(
                f, "sizes must be strictly increasing: " + ShownNumber(c.x[i]) + " follows " + ShownNumber(c.x[i - 1]));
    }
}

double Interpolate(const MeasuredCurve& c, double x) {
    if (c.x.empty() || c.x.size() != c.y.size()) throw Error("curve", "empty or malformed measured curve");
    if (!(x > 0)) throw Error("size", "must be positive, got " + ShownNumber(x));
    if (x <= c.x.front()) return c.y.front();
    if (x >= c.x.back()) return c.y.back();
    size_t i = static_cast<size_t>(std::upper_bound(c.x.begin(), c.x.end(), x) - c.x.begin());  // x[i-1] <= x < x[i]
    double x0 = c.x[i - 1], x1 = c.x[i], y0 = c.y[i - 1], y1 = c.y[i];
    if (x == x0) return y0;
    const bool logs = c.log_x.size() == c.x.size();
    const double l0 = logs ? c.log_x[i - 1] : std::log(x0), l1 = logs ? c.log_x[i] : std::log(x1);
    double t = (std::log(x) - l0) / (l1 - l0);
    return y0 + t * (y1 - y0);
}

const char* NameOf(CollectiveOp op) {
    switch (op) {
        case CollectiveOp::all_reduce: return "all_reduce";
        case CollectiveOp::all_gather: return "all_gather";
        case CollectiveOp::reduce_scatter: return "reduce_scatter";
        case CollectiveOp::all_to_all: return "all_to_all";
    }
    return "?";
}

CalibrationTable ParseCalibration(std::string_view json_text) {
    json root = ParseJsonText(json_text, "calibration table");
    JsonFields r(root, "");
    r.String("description", "");
    r.String("extracted_from", "");
    if (const json* rules = r.Get("extraction_rules", false); rules && !rules->is_array())
        throw Error("extraction_rules", "expected an array of strings");
    if (const json* d = r.Get("dropped_zero_points", false); d && !d->is_array())
        throw Error("dropped_zero_points", "expected an array");
    CalibrationTable t;
    std::set<std::string> ids;

    const json& colls = r.Array("collectives");
    for (size_t i = 0; i < colls.size(); ++i)
        t.collectives.push_back(ReadCollectiveCurve(colls[i], "collectives[" + std::to_string(i) + "]", ids, false));

    const json& gemms = r.Array("gemm");
    for (size_t i = 0; i < gemms.size(); ++i) {
        JsonFields g(gemms[i], "gemm[" + std::to_string(i) + "]");
        GemmCurve gc;
        gc.id = UniqueId(g, ids);
        gc.accelerators = AcceleratorIds(g);
        gc.dtype = Dtype(g);
        if (g.Get("engine", false)) gc.engine = g.NonEmptyString("engine");
        gc.scaling = CurveScaling(g, gc.dtype);
        if (!gc.scaling.empty() && gc.engine.empty())
            throw Error(g.Field("scaling"), "only a serving engine's own GEMM (\"engine\") states its scaling");
        ExpectString(g, "x", "flops_per_gemm (2*batch*m*n*k)");
        ExpectString(g, "y", "tflops");
        const json& pts = g.Array("points");
        std::string pf = g.Field("points");
        for (size_t k = 0; k < pts.size(); ++k) {
            Shape s = ReadShape(pts[k], pf + "[" + std::to_string(k) + "]", true);
            gc.tflops.x.push_back(2 * s.batch * s.m * s.n * s.k);
            gc.tflops.y.push_back(s.tflops);
        }
        ValidateCurve(gc.tflops, pf);
        for (double x : gc.tflops.x) gc.tflops.log_x.push_back(std::log(x));
        const json& others = g.Array("other_shapes");
        for (size_t k = 0; k < others.size(); ++k)
            ReadShape(others[k], g.Field("other_shapes") + "[" + std::to_string(k) + "]", true);
        if (const json* grid = g.Get("grid", false)) {
            const std::string gf = g.Field("grid");
            if (!grid->is_array()) throw Error(gf, "expected an array, got " + std::string(grid->type_name()));
            std::vector<GemmGridPoint> points;
            for (size_t k = 0; k < grid->size(); ++k) {
                const std::string f = gf + "[" + std::to_string(k) + "]";
                Shape s = ReadShape((*grid)[k], f, true);
                if (s.batch != 1)
                    throw Error(f + ".batch", "a grid point is one GEMM (batch 1), got " + ShownNumber(s.batch));
                points.push_back({s.m, s.n, s.k, s.tflops});
            }
            gc.grid = MakeGemmGrid(points, gf);
        }
        ReadSourceFields(g, &gc.series, &gc.hardware, &gc.setup, &gc.source, &gc.note);
        g.RejectUnknown();
        t.gemm.push_back(std::move(gc));
    }

    for (const json& e : OptionalArray(r, "framework_gemm"))
        t.framework_gemm.push_back(
            ReadFrameworkGemm(e, "framework_gemm[" + std::to_string(t.framework_gemm.size()) + "]", ids));
    for (const json& e : OptionalArray(r, "weight_read_floor"))
        t.weight_read_floor.push_back(
            ReadFixedCost(e, "weight_read_floor[" + std::to_string(t.weight_read_floor.size()) + "]", ids, "gemms",
                          1000000000, &WeightReadFloor::gemms));
    for (const json& e : OptionalArray(r, "decode_attention_floor"))
        t.decode_attention_floor.push_back(
            ReadFixedCost(e, "decode_attention_floor[" + std::to_string(t.decode_attention_floor.size()) + "]", ids,
                          "series_count", 1000, &DecodeAttentionFloor::series_count));

    for (const json& e : OptionalArray(r, "mla_decode_attention"))
        t.mla_decode_attention.push_back(
            ReadMlaDecodeCurve(e, "mla_decode_attention[" + std::to_string(t.mla_decode_attention.size()) + "]", ids));

    const json& mamf = r.Array("gemm_max_achievable");
    for (size_t i = 0; i < mamf.size(); ++i) {
        JsonFields g(mamf[i], "gemm_max_achievable[" + std::to_string(i) + "]");
        GemmMaxAchievable m;
        m.accelerators = AcceleratorIds(g);
        m.dtype = Dtype(g);
        m.tflops = g.Number("tflops");
        if (!(m.tflops > 0)) throw Error(g.Field("tflops"), "must be positive, got " + ShownNumber(m.tflops));
        const json* shape = g.Get("shape", true);
        Shape s = ReadShape(*shape, g.Field("shape"), false);
        m.m = s.m, m.n = s.n, m.k = s.k, m.batch = s.batch;
        ReadSourceFields(g, &m.series, &m.hardware, nullptr, &m.source, &m.note);
        g.RejectUnknown();
        t.gemm_max_achievable.push_back(std::move(m));
    }

    const json& grouped = OptionalArray(r, "grouped_gemm");
    for (size_t i = 0; i < grouped.size(); ++i) {
        JsonFields g(grouped[i], "grouped_gemm[" + std::to_string(i) + "]");
        GroupedGemmCurve gc;
        gc.id = UniqueId(g, ids);
        gc.accelerators = AcceleratorIds(g);
        gc.dtype = Dtype(g);
        gc.expert_width = g.Number("expert_width");
        if (!(gc.expert_width >= 1))
            throw Error(g.Field("expert_width"), "must be at least 1 (the experts' intermediate size on a rank), got " +
                                                     ShownNumber(gc.expert_width));
        gc.experts = g.Number("experts");
        if (!(gc.experts >= 1))
            throw Error(g.Field("experts"),
                        "must be at least 1 (the whole experts the measured op held on a rank), got " +
                            ShownNumber(gc.experts));
        gc.hidden = g.Number("hidden");
        if (!(gc.hidden >= 1))
            throw Error(g.Field("hidden"),
                        "must be at least 1 (the measured op's hidden size), got " + ShownNumber(gc.hidden));
        ReadRouting(g, &gc);
        gc.routing = g.NonEmptyString("routing");
        if (g.Get("weights", false)) {
            gc.weights = g.NonEmptyString("weights");
            if (gc.weights != "mxfp4")
                throw Error(g.Field("weights"), "\"" + gc.weights +
                                                    "\" is not a stored expert format a curve can state; valid: "
                                                    "\"mxfp4\" (or no \"weights\": stored as computed)");
        }
        gc.scaling = CurveScaling(g, gc.dtype);
        ReadCurveTail(g, "rows_per_group", "tflops", "[rows_per_group, tflops]", 0, &gc.tflops, &gc);
        t.grouped_gemm.push_back(std::move(gc));
    }

    const json& hbm = r.Array("memory_bandwidth");
    for (size_t i = 0; i < hbm.size(); ++i) {
        JsonFields h(hbm[i], "memory_bandwidth[" + std::to_string(i) + "]");
        HbmMeasurement m;
        m.accelerators = AcceleratorIds(h);
        m.op = h.NonEmptyString("op");
        m.tbps = h.Number("TBps");
        if (!(m.tbps > 0)) throw Error(h.Field("TBps"), "must be positive, got " + ShownNumber(m.tbps));
        ReadSourceFields(h, &m.series, &m.hardware, nullptr, &m.source, &m.note);
        h.RejectUnknown();
        t.memory_bandwidth.push_back(std::move(m));
    }
    const json& host = OptionalArray(r, "host_link");
    for (size_t i = 0; i < host.size(); ++i) {
        JsonFields h(host[i], "host_link[" + std::to_string(i) + "]");
        HostLinkMeasurement m;
        m.accelerators = AcceleratorIds(h);
        const std::string op = h.NonEmptyString("op");
        if (op != "host_to_device" && op != "device_to_host")
            throw Error(h.Field("op"), "\"" + op + "\" is not one of \"host_to_device\", \"device_to_host\"");
        m.op = op == "host_to_device" ? HostLinkOp::host_to_device : HostLinkOp::device_to_host;
        m.gbps = h.Number("GBps");
        if (!(m.gbps > 0)) throw Error(h.Field("GBps"), "must be positive, got " + ShownNumber(m.gbps));
        ReadSourceFields(h, &m.series, &m.hardware, nullptr, &m.source, &m.note);
        h.RejectUnknown();
        t.host_link.push_back(std::move(m));
    }
    const json& att = OptionalArray(r, "attention");
    for (size_t i = 0; i < att.size(); ++i) {
        JsonFields a(att[i], "attention[" + std::to_string(i) + "]");
        AttentionCurve ac;
        ac.id = UniqueId(a, ids);
        ac.accelerators = AcceleratorIds(a);
        std::string k = a.NonEmptyString("kernel");
        if (k == NameOf(AttentionKernel::tensorrt_llm)) ac.kernel = AttentionKernel::tensorrt_llm;
        else if (!ParseAttentionKernel(k, &ac.kernel))
            throw Error(a.Field("kernel"),
                        "\"" + k + "\" is not one of \"flash2\", \"flash3\", \"cudnn\", \"tensorrt-llm\"");
        std::string d = a.NonEmptyString("direction");
        if (d != "forward" && d != "backward")
            throw Error(a.Field("direction"), "\"" + d + "\" is not \"forward\" or \"backward\"");
        ac.forward = d == "forward";
        ac.causal = a.Bool("causal");
        ac.head_dim = a.PositiveIntAtMost("head_dim", 2147483647);
        if (a.Has("dtype")) {
            ac.dtype = Dtype(a);
            if (ac.dtype != Precision::bf16 && ac.dtype != Precision::fp16 && ac.dtype != Precision::fp8)
                throw Error(a.Field("dtype"), "\"" + std::string(NameOf(ac.dtype)) +
                                                  "\" is not an attention curve's precision; valid: \"bf16\", "
                                                  "\"fp16\", \"fp8\" (or no \"dtype\": 16-bit)");
        }
        ReadCurveTail(a, "seqlen", "efficiency", "[seqlen, efficiency in (0, 1]]", 1, &ac.efficiency, &ac);
        t.attention.push_back(std::move(ac));
    }
    for (const json& e : OptionalArray(r, "ssd_scan"))
        t.ssd_scan.push_back(ReadScanCurve(e, "ssd_scan[" + std::to_string(t.ssd_scan.size()) + "]", ids));
    for (const json& e : OptionalArray(r, "engine_all_reduce"))
        t.engine_all_reduce.push_back(
            ReadCollectiveCurve(e, "engine_all_reduce[" + std::to_string(t.engine_all_reduce.size()) + "]", ids, true));
    r.RejectUnknown();
    return t;
}

const char* NameOf(AttentionKernel k) {
    switch (k) {
        case AttentionKernel::flash2: return "flash2";
        case AttentionKernel::flash3: return "flash3";
        case AttentionKernel::cudnn: return "cudnn";
        case AttentionKernel::tensorrt_llm: return "tensorrt-llm";
    }
    return "?";
}

bool ParseAttentionKernel(std::string_view name, AttentionKernel* out) {
    for (AttentionKernel k : {AttentionKernel::flash2, AttentionKernel::flash3, AttentionKernel::cudnn})
        if (name == NameOf(k)) {
            *out = k;
            return true;
        }
    return false;
}

double BusBandwidthGBps(const CollectiveCurve& curve, double message_bytes) {
    return Interpolate(curve.busbw, message_bytes);
}

double GemmTflops(const GemmCurve& curve, double m, double n, double k, double batch) {
    if (!(m > 0 && n > 0 && k > 0 && batch > 0))
        throw Error("gemm", "m, n, k and batch must be positive, got " + ShownNumber(m) + " x " + ShownNumber(n) +
                                " x " + ShownNumber(k) + " (batch " + ShownNumber(batch) + ")");
    return Interpolate(curve.tflops, 2 * batch * m * n * k);
}

double GemmTflopsOf(const GemmCurve& curve, double flops, const GemmDims& dims) {
    if (!curve.grid.empty() && dims.known()) return GridTflops(curve.grid, dims);
    return Interpolate(curve.tflops, std::max(flops, 1.0));
}

namespace {
bool AppliesTo(const std::vector<std::string>& ids, std::string_view id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
}
}  // namespace

CalibrationTable CalibrationFor(const CalibrationTable& table, std::string_view accelerator_id) {
    CalibrationTable out;
    auto keep = [&](const auto& rows, auto& into) {
        for (const auto& row : rows)
            if (AppliesTo(row.accelerators, accelerator_id)) into.push_back(row);
    };
    keep(table.collectives, out.collectives);
    keep(table.gemm, out.gemm);
    keep(table.framework_gemm, out.framework_gemm);
    keep(table.weight_read_floor, out.weight_read_floor);
    keep(table.decode_attention_floor, out.decode_attention_floor);
    keep(table.mla_decode_attention, out.mla_decode_attention);
    keep(table.gemm_max_achievable, out.gemm_max_achievable);
    keep(table.grouped_gemm, out.grouped_gemm);
    keep(table.memory_bandwidth, out.memory_bandwidth);
    keep(table.attention, out.attention);
    keep(table.ssd_scan, out.ssd_scan);
    keep(table.host_link, out.host_link);
    keep(table.engine_all_reduce, out.engine_all_reduce);
    return out;
}

const CollectiveCurve* FindEngineAllReduce(const CalibrationTable& table, std::string_view accelerator_id,
                                           std::string_view engine, int n_ranks) {
    for (const CollectiveCurve& c : table.engine_all_reduce)
        if (c.engine == engine && c.n_ranks == n_ranks && AppliesTo(c.accelerators, accelerator_id)) return &c;
    return nullptr;
}

const CollectiveCurve* FindCollectiveCurve(const CalibrationTable& table, std::string_view accelerator_id,
                                           CollectiveOp op, std::string_view scope, int n_ranks) {
    const CollectiveCurve* best = nullptr;
    for (const CollectiveCurve& c : table.collectives) {
        if (c.op != op || c.scope != scope || !AppliesTo(c.accelerators, accelerator_id)) continue;
        if (!best) {
            best = &c;
            continue;
        }
        int d = std::abs(c.n_ranks - n_ranks), bd = std::abs(best->n_ranks - n_ranks);
        if (d < bd || (d == bd && c.busbw.x.size() > best->busbw.x.size())) best = &c;
    }
    return best;
}

const GemmCurve* FindGemmCurve(const CalibrationTable& table, std::string_view accelerator_id, Precision dtype) {
    const GemmCurve* best = nullptr;
    for (const GemmCurve& g : table.gemm) {
        if (!g.engine.empty() || g.dtype != dtype || !AppliesTo(g.accelerators, accelerator_id)) continue;
        if (!best || g.tflops.x.size() > best->tflops.x.size()) best = &g;
    }
    return best;
}

const GemmCurve* FindEngineGemmCurve(const CalibrationTable& table, std::string_view accelerator_id, Precision dtype,
                                     std::string_view scaling) {
    for (const GemmCurve& g : table.gemm)
        if (!g.engine.empty() && g.dtype == dtype && g.scaling == scaling && AppliesTo(g.accelerators, accelerator_id))
            return &g;
    return nullptr;
}

const FrameworkGemmCurve* FindFrameworkGemm(const CalibrationTable& table, std::string_view accelerator_id,
                                            bool contraction) {
    for (const FrameworkGemmCurve& f : table.framework_gemm)
        if (f.contraction == contraction && AppliesTo(f.accelerators, accelerator_id)) return &f;
    return nullptr;
}

const WeightReadFloor* FindWeightReadFloor(const CalibrationTable& table, std::string_view accelerator_id) {
    for (const WeightReadFloor& w : table.weight_read_floor)
        if (AppliesTo(w.accelerators, accelerator_id)) return &w;
    return nullptr;
}

const DecodeAttentionFloor* FindDecodeAttentionFloor(const CalibrationTable& table, std::string_view accelerator_id) {
    for (const DecodeAttentionFloor& d : table.decode_attention_floor)
        if (AppliesTo(d.accelerators, accelerator_id)) return &d;
    return nullptr;
}

const MlaDecodeCurve* FindMlaDecodeCurve(const CalibrationTable& table, std::string_view accelerator_id,
                                         Precision cache, int heads, int kv_lora_rank, int qk_rope_head_dim) {
    const bool wide = BytesOf(cache) == 2;
    for (const MlaDecodeCurve& c : table.mla_decode_attention)
        if ((c.dtype == cache || (wide && BytesOf(c.dtype) == 2)) && c.heads == heads &&
            c.kv_lora_rank == kv_lora_rank && c.qk_rope_head_dim == qk_rope_head_dim &&
            AppliesTo(c.accelerators, accelerator_id))
            return &c;
    return nullptr;
}

const GemmMaxAchievable* FindGemmMax(const CalibrationTable& table, std::string_view accelerator_id, Precision dtype) {
    const GemmMaxAchievable* best = nullptr;
    for (const GemmMaxAchievable& g : table.gemm_max_achievable) {
        if (g.dtype != dtype || !AppliesTo(g.accelerators, accelerator_id)) continue;
        if (!best || g.tflops > best->tflops) best = &g;
    }
    return best;
}

std::vector<const GroupedGemmCurve*> FindGroupedGemms(const CalibrationTable& table, std::string_view accelerator_id,
                                                      Precision dtype, std::string_view weights,
                                                      std::string_view scaling) {
    const bool sixteen = dtype == Precision::bf16 || dtype == Precision::fp16;
    std::vector<const GroupedGemmCurve*> out;
    for (const GroupedGemmCurve& g : table.grouped_gemm) {
        const bool same = g.dtype == dtype || (sixteen && (g.dtype == Precision::bf16 || g.dtype == Precision::fp16));
        if (same && g.weights == weights && g.scaling == scaling && AppliesTo(g.accelerators, accelerator_id))
            out.push_back(&g);
    }
    return out;
}

const GroupedGemmCurve* NearestGroupedGemm(const std::vector<const GroupedGemmCurve*>& curves, double width,
                                           double experts, double hidden, double hits) {
    const GroupedGemmCurve* best = nullptr;
    double best_gap = 0;
    for (const GroupedGemmCurve* g : curves) {
        const double g_hits = g->LocalHits();
        const double gap = width > 0 ? std::fabs(std::log(g->expert_width / width)) +
                                           (experts > 0 ? std::fabs(std::log(g->experts / experts)) : 0) +
                                           (hidden > 0 ? std::fabs(std::log(g->hidden / hidden)) : 0) +
                                           (hits > 0 && g_hits > 0 ? std::fabs(std::log(g_hits / hits)) : 0)
                                     : -g->expert_width;
        if (!best || gap < best_gap) best = g, best_gap = gap;
    }
    return best;
}

const AttentionCurve* FindAttentionCurve(const CalibrationTable& table, std::string_view accelerator_id,
                                         AttentionKernel kernel, bool forward, bool causal, int head_dim,
                                         Precision dtype) {
    const AttentionCurve* best = nullptr;
    const bool sixteen = BytesOf(dtype) == 2;
    auto score = [&](const AttentionCurve& c) {
        const bool same = c.dtype == dtype || (sixteen && BytesOf(c.dtype) == 2);
        return (c.causal == causal ? 0 : 100000) + (same ? 0 : 10000) + std::abs(c.head_dim - head_dim);
    };
    for (const AttentionCurve& c : table.attention) {
        if (c.kernel != kernel || c.forward != forward || !AppliesTo(c.accelerators, accelerator_id)) continue;
        if (!best || score(c) < score(*best)) best = &c;
    }
    return best;
}

std::vector<const ScanCurve*> FindScanCurves(const CalibrationTable& table, std::string_view accelerator_id) {
    std::vector<const ScanCurve*> out;
    for (const ScanCurve& c : table.ssd_scan)
        if (AppliesTo(c.accelerators, accelerator_id)) out.push_back(&c);
    return out;
}

const ScanCurve* NearestScanCurve(const std::vector<const ScanCurve*>& curves, double parallel_heads, double heads) {
    const ScanCurve* best = nullptr;
    double best_gap = 0, best_heads_gap = 0;
    for (const ScanCurve* c : curves) {
        const double gap = std::fabs(std::log(c->parallel_heads() / std::max(parallel_heads, 1.0)));
        const double heads_gap = std::fabs(std::log(c->heads / std::max(heads, 1.0)));
        if (!best || gap < best_gap - 1e-12 || (gap < best_gap + 1e-12 && heads_gap < best_heads_gap - 1e-12))
            best = c, best_gap = gap, best_heads_gap = heads_gap;
    }
    return best;
}

double CausalEfficiencyRatio(const CalibrationTable& table, std::string_view accelerator_id, AttentionKernel kernel,
                             bool forward, int head_dim, double seqlen) {
    // One (kernel, direction) with a causal and a non-causal curve at the same head dimension, nearest head_dim.
    auto ratio = [&](AttentionKernel k, bool fwd) -> double {
        const AttentionCurve* causal = nullptr;
        for (const AttentionCurve& c : table.attention) {
            if (c.kernel != k || c.forward != fwd || !c.causal || !AppliesTo(c.accelerators, accelerator_id)) continue;
            if (!causal || std::abs(c.head_dim - head_dim) < std::abs(causal->head_dim - head_dim)) causal = &c;
        }
        if (!causal) return 0;
        for (const AttentionCurve& c : table.attention)
            if (c.kernel == k && c.forward == fwd && !c.causal && c.head_dim == causal->head_dim &&
                AppliesTo(c.accelerators, accelerator_id)) {
                const double full = Interpolate(c.efficiency, seqlen);
                return full > 0 ? std::min(1.0, Interpolate(causal->efficiency, seqlen) / full) : 0;
            }
        return 0;
    };
    for (auto [k, fwd] : {std::pair{kernel, forward}, std::pair{kernel, true}, std::pair{AttentionKernel::flash3, true},
                          std::pair{AttentionKernel::flash2, true}, std::pair{AttentionKernel::cudnn, true}})
        if (const double r = ratio(k, fwd); r > 0) return r;
    return 1;
}

double AchievedHbmTBps(const CalibrationTable& table, std::string_view accelerator_id, std::string_view op) {
    for (const HbmMeasurement& m : table.memory_bandwidth)
        if (m.op == op && AppliesTo(m.accelerators, accelerator_id)) return m.tbps;
    return 0;
}

const HostLinkMeasurement* FindHostLink(const CalibrationTable& table, std::string_view accelerator_id, HostLinkOp op) {
    for (const HostLinkMeasurement& m : table.host_link)
        if (m.op == op && AppliesTo(m.accelerators, accelerator_id)) return &m;
    return nullptr;
}

double HostLinkGBps(const CalibrationTable& table, std::string_view accelerator_id, HostLinkOp op) {
    const HostLinkMeasurement* m = FindHostLink(table, accelerator_id, op);
    return m ? m->gbps : 0;
}

}  // namespace sc
