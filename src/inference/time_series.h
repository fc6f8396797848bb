// Quantities over time in bounded memory: KV occupancy, running sequences and waiting requests as time averages
// over consecutive equal buckets. When the run outlasts kMaxPoints buckets, neighbouring buckets are merged in
// pairs and the width doubles, so a run of any length keeps between kMaxPoints/2 and kMaxPoints points and each
// point is the exact time average over its bucket (nothing is sampled or dropped).
#pragma once
#include <vector>

namespace sc {

struct SeriesPoint {
    double start = 0, end = 0;  // s
    double kv_occupancy = 0;    // used KV blocks / all blocks
    double running = 0;         // sequences in running batches
    double waiting = 0;         // requests queued (and, disaggregated, waiting for or in the KV transfer)
};

class SeriesRecorder {
public:
    static constexpr int kMaxPoints = 256;
    // `first_width`: the first bucket width (s); it doubles as the run grows.
    explicit SeriesRecorder(double first_width = 1e-3);
    // The quantities held these values from t0 to t1 (t0 <= t1, t0 not before the previous call's t1).
    void Add(double t0, double t1, double kv_occupancy, double running, double waiting);
    // Buckets up to `end` (the run's end), the last one cut at `end`.
    std::vector<SeriesPoint> Points(double end) const;

private:
    struct Area {
        double kv = 0, running = 0, waiting = 0;
    };
    void Coarsen();
    double width_;
    std::vector<Area> areas_;
};

}  // namespace sc
