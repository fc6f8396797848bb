#include "inference/time_series.h"

#include <algorithm>
#include <cmath>

namespace sc {

SeriesRecorder::SeriesRecorder(double first_width) : width_(first_width) {}

void SeriesRecorder::Coarsen() {
    std::vector<Area> merged((areas_.size() + 1) / 2);
    for (size_t i = 0; i < areas_.size(); ++i) {
        merged[i / 2].kv += areas_[i].kv;
        merged[i / 2].running += areas_[i].running;
        merged[i / 2].waiting += areas_[i].waiting;
    }
    areas_.swap(merged);
    width_ *= 2;
}

void SeriesRecorder::Add(double t0, double t1, double kv, double running, double waiting) {
    if (!(t1 > t0)) return;
    while (t1 > width_ * kMaxPoints) Coarsen();
    const size_t last = std::min<size_t>(kMaxPoints - 1, static_cast<size_t>(t1 / width_));
    if (areas_.size() <= last) areas_.resize(last + 1);
    for (size_t b = static_cast<size_t>(t0 / width_); b <= last; ++b) {
        const double lo = std::max(t0, b * width_), hi = std::min(t1, (b + 1) * width_);
        if (hi <= lo) continue;
        const double dt = hi - lo;
        areas_[b].kv += kv * dt;
        areas_[b].running += running * dt;
        areas_[b].waiting += waiting * dt;
    }
}

std::vector<SeriesPoint> SeriesRecorder::Points(double end) const {
    std::vector<SeriesPoint> out;
    for (size_t b = 0; b < areas_.size(); ++b) {
        const double lo = b * width_, hi = std::min(end, (b + 1) * width_);
        if (hi <= lo) break;
        const double dt = hi - lo;
        out.push_back({lo, hi, areas_[b].kv / dt, areas_[b].running / dt, areas_[b].waiting / dt});
    }
    return out;
}

}  // namespace sc
