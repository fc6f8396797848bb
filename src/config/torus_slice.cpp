#include "config/torus_slice.h"

#include <algorithm>
#include <functional>

namespace sc {

std::optional<System> SliceTorus(const System& pod, int gpus) {
    size_t t = 0;
    while (t < pod.levels.size() && pod.levels[t].kind == LevelKind::torus) ++t;
    if (t == 0 || gpus <= 0 || gpus >= pod.levels[t - 1].size) return std::nullopt;
    // Whole cubes (a multiple of 64 chips) take dimensions that are multiples of the cube side and close into
    // rings; a slice smaller than a cube is a mesh of any shape within one (v4-8 is 2x2x1, v4-32 is 2x4x4).
    long long cube = 1;
    for (size_t i = 0; i < t; ++i) cube *= kTorusCubeSide;
    const bool whole_cubes = gpus >= cube && gpus % cube == 0;
    if (gpus > cube && !whole_cubes) return std::nullopt;
    const int step = whole_cubes ? kTorusCubeSide : 1;
    std::vector<int> limit(t);
    for (size_t i = 0; i < t; ++i) limit[i] = pod.levels[i].size / (i ? pod.levels[i - 1].size : 1);
    // Every ascending choice of dimensions whose product is gpus, each within the pod's dimension of the same
    // rank in ascending order; the most cubic (smallest largest side) wins.
    std::vector<int> sorted = limit, dims(t), best;
    std::sort(sorted.begin(), sorted.end());
    std::function<void(size_t, int, int)> choose = [&](size_t i, int left, int from) {
        if (i + 1 == t) {
            if (left >= from && left % step == 0 && left <= sorted[i]) {
                dims[i] = left;
                if (best.empty() || dims.back() < best.back()) best = dims;
            }
            return;
        }
        for (int side = from; side <= sorted[i] && side <= left; side += step)
            if (left % side == 0) dims[i] = side, choose(i + 1, left / side, side);
    };
    choose(0, gpus, step);
    if (best.empty()) return std::nullopt;
    System s = pod;
    s.levels.clear();  // the job fits in the slice: the network joining pods carries none of its traffic
    long long size = 1;
    std::string shape;
    for (size_t i = 0; i < t; ++i) {
        if (i) shape += 'x';
        shape += std::to_string(best[i]);
        if (best[i] == 1) continue;  // a dimension of one chip has no links to model
        size *= best[i];
        NetworkLevel lv = pod.levels[i];
        lv.size = static_cast<int>(size);
        lv.wraparound = lv.wraparound && whole_cubes;
        lv.provenance["size"] = {"DERIVED",
                                 {"--gpus " + std::to_string(gpus)},
                                 whole_cubes ? "a torus slice of whole 4x4x4 cubes, the most cubic of its size"
                                             : "a mesh slice within one 4x4x4 cube, the most cubic of its size",
                                 ""};
        s.levels.push_back(lv);
    }
    if (s.levels.empty()) {
        // One chip: no link carries any of its traffic, but a system still has a level, sized to what it holds
        // (an empty one read as 0 accelerators: "gpus=1 exceeds the 0 accelerators of system tpu-v4-pod").
        NetworkLevel lv = pod.levels[0];
        lv.size = 1;
        lv.wraparound = false;
        lv.provenance["size"] = {"DERIVED", {"--gpus 1"}, "one chip of the pod", ""};
        s.levels.push_back(lv);
    }
    s.name += " (slice " + shape + ")";
    return s;
}

std::optional<System> TorusPartFor(const System& pod, int gpus) {
    if (std::optional<System> slice = SliceTorus(pod, gpus)) return slice;
    size_t t = 0;
    while (t < pod.levels.size() && pod.levels[t].kind == LevelKind::torus) ++t;
    if (t == 0 || gpus <= 0 || gpus >= pod.levels[t - 1].size) return std::nullopt;
    System s = pod;
    s.name += " (its first " + std::to_string(gpus) + " chips: no slice of whole 4x4x4 cubes has " +
              std::to_string(gpus) + ")";
    return s;
}

}  // namespace sc
