#include "cli/search_args.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "config/error.h"
#include "config/numbers.h"
#include "config/split_list.h"

namespace sc::cli {

std::vector<std::string> SearchSpaceFlags() {
    return {"gpus",      "batch", "tp", "pp",          "cp",      "ep",    "microbatch", "schedule", "vstages",
            "recompute", "zero",  "sp", "a2a-overlap", "offload", "order", "uneven",     "threads"};
}

const char* SearchSpaceUsage() {
    return "  --gpus N       GPUs of every layout (tp*cp*pp*dp)\n"
           "  --batch B      global batch in sequences\n"
           "  restrict the layouts searched (comma-separated lists; default: every valid value):\n"
           "  --tp, --pp, --cp, --ep, --microbatch, --vstages LIST   e.g. --tp 4,8 --pp 1,2,4\n"
           "  --schedule LIST   gpipe,1f1b,interleaved (also zbh1, dualpipe, zbv, dualpipev, interleaved_zb) --recompute LIST   none,selective,full (also op)\n"
           "  --zero LIST       0,1,2,3                      --sp LIST          off,on\n"
           "  --a2a-overlap LIST   off,on (Megatron-Core's EP all-to-all overlap, tried where it can run)\n"
           "  --offload on|off  a one-stage 1F1B layout without recomputation that does not fit is tried with the\n"
           "                    fewest offloaded layers that make it fit (CPU activation offloading; default on where\n"
           "                    the part's host link is measured or --options host_link_gbps states it)\n"
           "  --order O         rank order, fastest-varying first (default tp-cp-dp-pp)\n"
           "  --uneven on|off   also pipelines whose pp*vstages does not divide the layers, split as uneven=1\n"
           "                    (default off; a model of 61 layers has no pipeline without it)\n"
           "  --threads N       worker threads (default: all hardware threads; the output does not change)\n";
}

namespace {

// At most `hi`; zero and negative values pass to the search, whose errors name the constraint.
int Int(const std::string& flag, const std::string& v, long long hi = kMaxRanks) {
    return static_cast<int>(ParseIntegerIn("--" + flag, v, -hi, hi));
}

std::vector<int> Ints(const Args& a, const std::string& flag) {
    std::vector<int> out;
    if (!a.Has(flag)) return out;
    for (const std::string& v : SplitList(a.Get(flag))) out.push_back(Int(flag, v));
    return out;
}

}  // namespace

int LoadThreads(const Args& a) {
    if (!a.Has("threads")) return std::max(1u, std::thread::hardware_concurrency());
    int n = Int("threads", a.Get("threads"));
    if (n < 1 || n > 1024) throw Error("--threads", "expected 1 to 1024 threads, got " + a.Get("threads"));
    return n;
}

SearchRequest LoadSearchRequest(const Args& a) {
    SearchRequest r;
    if (!a.Has("gpus")) throw Error("--gpus", "missing; give the number of GPUs, e.g. --gpus 4096");
    if (!a.Has("batch")) throw Error("--batch", "missing; give the global batch in sequences, e.g. --batch 1536");
    r.gpus = Int("gpus", a.Get("gpus"));
    r.batch = Int("batch", a.Get("batch"), kMaxBatch);
    SearchSpace& s = r.space;
    s.tp = Ints(a, "tp");
    s.pp = Ints(a, "pp");
    s.cp = Ints(a, "cp");
    s.ep = Ints(a, "ep");
    s.microbatch = Ints(a, "microbatch");
    s.vstages = Ints(a, "vstages");
    if (a.Has("zero")) s.zero = Ints(a, "zero");
    if (a.Has("schedule")) {
        s.schedules.clear();
        for (const std::string& v : SplitList(a.Get("schedule"))) s.schedules.push_back(ParseSchedule("--schedule", v));
    }
    if (a.Has("recompute")) {
        s.recompute.clear();
        for (const std::string& v : SplitList(a.Get("recompute")))
            s.recompute.push_back(ParseRecompute("--recompute", v));
    }
    if (a.Has("sp")) {
        s.sp.clear();
        for (const std::string& v : SplitList(a.Get("sp"))) {
            if (v == "on" || v == "1" || v == "true") s.sp.push_back(1);
            else if (v == "off" || v == "0" || v == "false") s.sp.push_back(0);
            else throw Error("--sp", "expected on or off, got \"" + v + "\"");
        }
    }
    if (a.Has("a2a-overlap")) {
        s.a2a_overlap.clear();
        for (const std::string& v : SplitList(a.Get("a2a-overlap"))) {
            if (v == "on" || v == "1" || v == "true") s.a2a_overlap.push_back(1);
            else if (v == "off" || v == "0" || v == "false") s.a2a_overlap.push_back(0);
            else throw Error("--a2a-overlap", "expected on or off, got \"" + Clip(v) + "\"");
        }
    }
    if (a.Has("offload")) {
        const std::string v = a.Get("offload");
        if (v == "on" || v == "1" || v == "true") s.offload = true;
        else if (v == "off" || v == "0" || v == "false") s.offload = false;
        else throw Error("--offload", "expected on or off, got \"" + Clip(v) + "\"");
    }
    if (a.Has("order")) s.order = a.Get("order");
    if (a.Has("uneven")) {
        const std::string v = a.Get("uneven");
        if (v == "on" || v == "1" || v == "true") s.uneven = true;
        else if (v == "off" || v == "0" || v == "false") s.uneven = false;
        else throw Error("--uneven", "expected on or off, got \"" + Clip(v) + "\"");
    }
    return r;
}

}  // namespace sc::cli
