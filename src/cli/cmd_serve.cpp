// stagecraft serve: one serving description (presets/inference/*.json), simulated by the serving engine
// (src/engine/serve.h), a rate sweep of it (a throughput-latency curve) or a sweep of one of its fields, as text
// or JSON.
#include <cstdio>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/file_sink.h"
#include "cli/preset_paths.h"
#include "cli/search_args.h"
#include "cli/shards.h"
#include "cli/system_args.h"
#include "config/error.h"
#include "config/json_fields.h"
#include "config/numbers.h"
#include "config/overrides.h"
#include "config/split_list.h"
#include "config/system_edits.h"
#include "engine/serve.h"
#include "inference/serving_parse.h"
#include "inference/trace_parse.h"
#include "report/serve_report.h"

namespace sc::cli {

namespace fs = std::filesystem;

namespace {

const char* kServeUsage =
    "usage: stagecraft serve --preset FILE|ID [--set key=value]... [--trace FILE] [--rate-sweep R1,R2,...]\n"
    "                        [--sweep key=V1,V2,... [--sweep key2=W1,W2,...]]\n"
    "                        [--timelines N] [--timeline-json FILE]\n"
    "                        [--system SYSTEM] [--system-set k=v]... [--threads N] [--json]\n"
    "  --preset      a serving description (presets/inference/*.json, or its id): model, system, precision,\n"
    "                pool(s), engine, workload, SLO (format in docs/serving.md)\n"
    "  --set         override a description field, checked as strictly as the file, e.g. --set pool.tp=4\n"
    "                --set workload.rate=12 --set slo.ttft_ms=500 --set engine.preemption=swap\n"
    "  --trace       replay a request trace: lines arrival_s,input_tokens,output_tokens[,priority]\n"
    "  --rate-sweep  simulate the workload at each of these arrival rates (requests/s; poisson, gamma or\n"
    "                fixed_rate arrivals) and print the throughput-latency curve\n"
    "  --sweep       simulate the description with one field at each of these values (any --set key, e.g.\n"
    "                --sweep engine.host_cache_gib=0,10,40 --sweep pool.tp=1,2,4 --sweep model=llama3-8b,\n"
    "                llama3-70b --sweep system=dgx-h100-superpod,gb200-nvl72) and print one row a value;\n"
    "                given twice, the grid of both fields' values, one row a pair\n"
    "  --timelines N keep the timelines of the first N requests by arrival (default 8; 0: none): every\n"
    "                span from arrival to last token (queued, prefill chunks, decode, preempted, KV transfer),\n"
    "                in the JSON report's result.timelines\n"
    "  --timeline-json FILE  write those timelines as a Chrome trace (open in Perfetto / chrome://tracing):\n"
    "                one process per replica, one row per request\n"
    "  --threads N   threads for a sweep (default: the machine's); results do not depend on it\n"
    "  --system      run on this cluster instead of the description's; --system-set, --no-calibration as for\n"
    "                estimate (--system-set edits the prefill pool's cluster)\n"
    "  --decode-system  run the decode pool on this cluster of its own (a system preset file or id) instead of\n"
    "                the description's decode_pool.system (heterogeneous pools: e.g. H100 prefill, A100 decode)\n"
    "  --decode-system-set k=v  edit the decode pool's own cluster as --system-set edits the prefill pool's\n"
    "  --json        print JSON instead of text\n";

// The model preset an id names: presets/models/<id>.json beside the description's folder.
ModelConfig LoadModelById(const fs::path& preset, const std::string& id) {
    if (!IsPresetId(id))
        throw Error("model", "\"" + Clip(id) + "\" is not a model preset id (letters, digits, '.', '_', '-')");
    const fs::path path = preset.parent_path() / ".." / "models" / (id + ".json");
    const std::string text = ReadFile(path.string(), "model");
    try {
        return ParseModelConfig(text);
    } catch (const Error& e) {
        throw Error("", Clip(path.lexically_normal().string()) + ": " + e.what());
    }
}

// A cluster a description names by id (`field`: system or decode_pool.system): the preset beside the description's
// folder, else in the preset folders (whose error lists the ids there).
System SystemNamedBy(const char* field, const fs::path& preset, const std::string& id) {
    if (!IsPresetId(id))
        throw Error("", Clip(preset.string()) + ": " + field + ": \"" + Clip(id) +
                            "\" is not a system preset id (letters, digits, '.', '_', '-')");
    const fs::path path = preset.parent_path() / ".." / "systems" / (id + ".json");
    std::error_code ec;
    return LoadSystemPreset(field, fs::exists(path, ec) ? path.string() : id);
}

// The decode pool's own cluster: --decode-system, else the description's decode_pool.system (beside the description
// as its system is, else in the preset folders, whose error lists the ids there), with --decode-system-set's edits.
std::optional<System> LoadDecodeSystem(const Args& a, const ServingDescription& d, const fs::path& preset) {
    std::optional<System> sys;
    if (a.Has("decode-system")) {
        sys = LoadSystemPreset("--decode-system", a.Get("decode-system"));
    } else if (!d.decode_system_id.empty()) {
        sys = SystemNamedBy("decode_pool.system", preset, d.decode_system_id);
    }
    const std::vector<std::string> edits = a.All("decode-system-set");
    if (!edits.empty() && !sys)
        throw Error("--decode-system-set",
                    "edits the decode pool's own cluster; there is none (give --decode-system, "
                    "or a description with decode_pool.system)");
    try {
        if (sys) ApplySystemEdits(*sys, edits);
    } catch (const Error& e) {
        throw Error("--decode-system-set", std::string(e.what()) + " (on " + sys->id + ")");
    }
    return sys;
}

// The description with `sets` applied, its model loaded, the --timelines and --trace options applied.
engine::ServeRequest RequestOf(const Args& a, const fs::path& preset, const std::string& text,
                               const std::vector<std::string>& sets, ServingDescription* d) {
    const std::string file = Clip(preset.string());
    try {
        *d = ParseServingDescription(sets.empty() ? text : ApplyOverrides(text, sets, file));
    } catch (const Error& e) {
        throw Error("", file + ": " + e.what());
    }
    engine::ServeRequest request;
    request.config = d->config;
    request.config.model = LoadModelById(preset, d->model_id);
    if (a.Has("timelines"))
        request.config.timelines =
            static_cast<int>(ParseIntegerIn("--timelines", a.Get("timelines"), 0, kMaxTimelines));
    if (a.Has("trace")) {
        Workload& w = request.config.workload;
        try {
            w.trace = ParseTraceCsv(ReadFile(a.Get("trace"), "--trace"));
        } catch (const Error& e) {
            throw Error("--trace", Clip(a.Get("trace")) + ": " + e.what());
        }
        w.arrival = ArrivalKind::trace;
        w.requests = static_cast<long long>(w.trace.size());
    }
    return request;
}

// --sweep KEY=V1,V2,...: the field and its values, each point the description with one more --set.
struct FieldSweep {
    std::string key;
    std::vector<std::string> values;
};
FieldSweep ParseFieldSweep(const std::string& arg) {
    const size_t eq = arg.find('=');
    FieldSweep f;
    if (eq == std::string::npos || eq == 0)
        throw Error("--sweep", "expected key=V1,V2,... (a --set key and its values), got \"" + Clip(arg) + "\"");
    f.key = arg.substr(0, eq);
    f.values = SplitList(arg.substr(eq + 1));
    if (f.values.empty()) throw Error("--sweep", "no values for " + Clip(f.key));
    if (f.values.size() > 4096)
        throw Error("--sweep", std::to_string(f.values.size()) + " values for " + Clip(f.key) + "; at most 4096");
    return f;
}

// The cluster a description names (`system`, beside the description's folder), with --system-set's edits: a sweep
// point's, when the point sets another than the command's.
System DescriptionSystem(const Args& a, const fs::path& preset, const std::string& id) {
    if (a.Has("system"))
        throw Error("--sweep", "its points name clusters of their own (" + Clip(id) +
                                   "), but --system sets one for every point; drop one of them");
    System sys = SystemNamedBy("system", preset, id);
    try {
        ApplySystemEdits(sys, a.All("system-set"));
    } catch (const Error& e) {
        throw Error("--system-set", std::string(e.what()) + " (on " + sys.id + ")");
    }
    return sys;
}

// Every point of a field sweep, on threads (each point is one RunServe; results do not depend on the threads). A
// point that names another cluster (`--sweep system=...`, `decode_pool.system`) runs on it.
std::string RunFieldSweep(const Args& a, const fs::path& preset, const std::string& text,
                          const ServingDescription& base_d, const engine::ServeRequest& base, bool json) {
    std::vector<FieldSweep> fields;
    for (const std::string& arg : a.All("sweep")) fields.push_back(ParseFieldSweep(arg));
    if (fields.size() > 2)
        throw Error("--sweep", "given " + std::to_string(fields.size()) + " times; one field, or two for a grid");
    if (fields.size() == 2 && fields[0].key == fields[1].key)
        throw Error("--sweep", Clip(fields[0].key) + " given twice; a grid sweeps two different fields");
    FieldSweepPoints points;
    for (const FieldSweep& f : fields) points.keys.push_back(f.key);
    for (const std::string& v : fields[0].values) {
        if (fields.size() == 1) points.values.push_back({v});
        else
            for (const std::string& w : fields[1].values) points.values.push_back({v, w});
    }
    if (points.values.size() > 4096)
        throw Error("--sweep", "a grid of " + std::to_string(points.values.size()) + " points; at most 4096");
    std::vector<engine::ServeRequest> requests;
    std::deque<System> systems;  // the points' own clusters, alive until the sweep is printed
    for (const std::vector<std::string>& values : points.values) {
        std::vector<std::string> sets = a.All("set");
        for (size_t k = 0; k < values.size(); ++k) sets.push_back(points.keys[k] + "=" + values[k]);
        ServingDescription d;
        engine::ServeRequest q = RequestOf(a, preset, text, sets, &d);
        q.calibration = base.calibration;
        q.system = base.system;
        if (d.system_id != base_d.system_id)
            q.system = &systems.emplace_back(DescriptionSystem(a, preset, d.system_id));
        q.decode_system = base.decode_system;
        if (d.decode_system_id != base_d.decode_system_id && !a.Has("decode-system")) {
            std::optional<System> own = LoadDecodeSystem(a, d, preset);
            q.decode_system = own ? &systems.emplace_back(std::move(*own)) : nullptr;
        }
        requests.push_back(std::move(q));
    }
    const int n = static_cast<int>(requests.size()), threads = std::min(LoadThreads(a), n);
    auto parts =
        RunShardsOnThreads<std::vector<std::pair<int, engine::ServeResult>>>(threads, [&](int shard, int count) {
            std::vector<std::pair<int, engine::ServeResult>> out;
            for (int i = shard; i < n; i += count)
                out.emplace_back(i, engine::RunServe(requests[static_cast<size_t>(i)]));
            return out;
        });
    std::vector<engine::ServeResult> results(static_cast<size_t>(n));
    for (auto& part : parts)
        for (auto& [i, r] : part) results[static_cast<size_t>(i)] = std::move(r);
    return json ? ServeFieldSweepJson(points, requests, results) : ServeFieldSweepText(points, requests, results);
}

std::vector<double> SweepRates(const std::string& list) {
    std::vector<double> rates;
    for (const std::string& item : SplitList(list)) rates.push_back(ParseNumberIn("--rate-sweep", item, 0, 1e9, true));
    return rates;
}

}  // namespace

int Serve(int argc, char** argv) {
    std::vector<std::string> flags = {
        "preset",     "set",       "trace",         "rate-sweep",    "threads",           "system",
        "system-set", "timelines", "timeline-json", "decode-system", "decode-system-set", "sweep"};
    Args a = ParseArgs(argc, argv, flags, {"json", "help", "no-calibration"});
    if (a.Has("help") || !a.Has("preset")) {
        std::fputs(kServeUsage, a.Has("help") ? stdout : stderr);
        return a.Has("help") ? 0 : 2;
    }
    const fs::path preset = PresetPath("--preset", "inference", "serving", a.Get("preset"));
    const std::string text = ReadFile(preset.string(), "--preset");
    ServingDescription d;
    engine::ServeRequest request = RequestOf(a, preset, text, a.All("set"), &d);
    const std::string system_path = (preset.parent_path() / ".." / "systems" / (d.system_id + ".json")).string();
    LoadedSystem ls = LoadSystem(a, system_path.c_str());
    BuildCluster(ls, a, 0);
    request.system = &ls.system;
    request.calibration = ls.calibration.get();
    const std::optional<System> decode_system = LoadDecodeSystem(a, d, preset);
    if (decode_system) request.decode_system = &*decode_system;
    const bool json = a.Has("json");
    std::string out;
    if (a.Has("sweep")) {
        if (a.Has("rate-sweep"))
            throw Error("--sweep",
                        "one sweep a command: --rate-sweep or --sweep (--sweep workload.rate=... sweeps rates "
                        "as a field)");
        if (a.Has("timeline-json"))
            throw Error("--timeline-json", "a sweep keeps no timelines; simulate one point without --sweep");
        out = RunFieldSweep(a, preset, text, d, request, json);
    } else if (a.Has("rate-sweep")) {
        if (a.Has("timeline-json"))
            throw Error("--timeline-json", "a rate sweep keeps no timelines; simulate one rate without --rate-sweep");
        request.sweep_rates = SweepRates(a.Get("rate-sweep"));
        const engine::ServeSweepSnapshot snap = engine::SnapshotServeSweep(request);
        const int threads = std::min<int>(LoadThreads(a), static_cast<int>(snap.rates.size()));
        auto parts = RunShardsOnThreads<std::vector<engine::ServeSweepPoint>>(
            threads, [&](int shard, int count) { return engine::RunServeSweepShard(snap, shard, count); });
        const auto points = engine::MergeServeSweep(std::move(parts));
        out = json ? ServeSweepReportJson(snap, points) : ServeSweepReportText(snap, points);
    } else {
        if (a.Has("threads")) throw Error("--threads", "only a sweep runs on threads; add --rate-sweep or --sweep");
        const engine::ServeResult r = engine::RunServe(request);
        out = json ? ServeReportJson(request, r) : ServeReportText(request, r);
        if (a.Has("timeline-json")) {
            FileSink f(a.Get("timeline-json"));
            f.Write(ServeTimelineChromeJson(request, r));
            f.Close();
        }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}

}  // namespace sc::cli
