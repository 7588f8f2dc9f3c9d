#include "depthbatch/temporal_stabilizer.h"

#include <algorithm>
#include <cmath>

namespace depthbatch {
namespace {

constexpr size_t kMaxSamples = 20000;   // pixels per fit: plenty for two parameters
constexpr float kColourChange = 0.03f;  // mean |dRGB| below this = "colour changed little"

Affine compose(const Affine& outer, const Affine& inner) {  // outer(inner(x))
    return {outer.scale * inner.scale, outer.scale * inner.shift + outer.shift};
}
Affine inverse(const Affine& a) { return {1.0 / a.scale, -a.shift / a.scale}; }

/// Mean RGB of the model input at each pixel of a depth image (the output may be smaller: nearest position).
std::vector<float> mean_rgb(const DepthImage& raw, const ModelInput& input) {
    const size_t total = static_cast<size_t>(raw.width) * raw.height;
    const size_t plane = static_cast<size_t>(input.width) * input.height;
    std::vector<float> rgb(total);
    for (size_t i = 0; i < total; ++i) {
        const int ox = static_cast<int>(i % raw.width), oy = static_cast<int>(i / raw.width);
        const int ix = std::min(input.width - 1, ox * input.width / std::max(1, raw.width));
        const int iy = std::min(input.height - 1, oy * input.height / std::max(1, raw.height));
        const size_t p = static_cast<size_t>(iy) * input.width + ix;
        rgb[i] = (input.chw[p] + input.chw[plane + p] + input.chw[2 * plane + p]) / 3.0f;
    }
    return rgb;
}

}  // namespace

TemporalStabilizer::TemporalStabilizer(int radius) : radius_(std::max(1, radius)) {}

void TemporalStabilizer::push(int id, DepthImage raw, const ModelInput& input) {
    if (!frames_.empty() && (frames_.back().raw.width != raw.width || frames_.back().raw.height != raw.height))
        flush();  // a size change: no pair fit across it
    Frame f;
    f.id = id;
    f.rgb = mean_rgb(raw, input);
    const size_t total = raw.data.size();
    const size_t stride = std::max<size_t>(1, total / kMaxSamples);
    for (size_t i = 0; i < total; i += stride) {
        f.fit_raw.push_back(raw.data[i]);
        f.fit_rgb.push_back(f.rgb[i]);
    }
    if (!frames_.empty()) {
        const Frame& prev = frames_.back();
        std::vector<unsigned char> mask(f.fit_raw.size());
        for (size_t i = 0; i < mask.size(); ++i) mask[i] = std::abs(f.fit_rgb[i] - prev.fit_rgb[i]) < kColourChange;
        f.to_previous = robust_affine_fit(f.fit_raw, prev.fit_raw, mask);
    }
    f.lo = INFINITY, f.hi = -INFINITY;
    for (float v : raw.data)
        if (std::isfinite(v)) f.lo = std::min<double>(f.lo, v), f.hi = std::max<double>(f.hi, v);
    if (f.lo > f.hi) f.lo = f.hi = 0;  // no finite value: nothing to bound
    f.raw = std::move(raw);
    frames_.push_back(std::move(f));
    // Frame i is final once frame i + R is here; its window reaches back at most R frames.
    const size_t n = frames_.size();
    for (size_t i = 0; i < n; ++i)
        if (!frames_[i].done && i + static_cast<size_t>(radius_) < n)
            finish(i, static_cast<int>(std::min<size_t>(radius_, i)));
    while (frames_.size() > 2 * static_cast<size_t>(radius_) + 1 && frames_.front().done) frames_.pop_front();
}

void TemporalStabilizer::flush() {
    const size_t n = frames_.size();
    for (size_t i = 0; i < n; ++i)
        if (!frames_[i].done) finish(i, static_cast<int>(std::min({static_cast<size_t>(radius_), i, n - 1 - i})));
    frames_.clear();
}

std::vector<std::pair<int, DepthImage>> TemporalStabilizer::pop_ready() {
    std::vector<std::pair<int, DepthImage>> out;
    out.swap(ready_);
    return out;
}

void TemporalStabilizer::finish(size_t i, int r) {
    Frame& cur = frames_[i];
    // T_{i->k} for k = i-r..i+r, indexed k - (i - r).
    std::vector<Affine> t(2 * static_cast<size_t>(r) + 1);
    t[r] = Affine{};
    for (int m = 1; m <= r; ++m) {
        t[r - m] = compose(frames_[i - m + 1].to_previous, t[r - m + 1]);       // one frame back: A_{k+1}
        t[r + m] = compose(inverse(frames_[i + m].to_previous), t[r + m - 1]);  // one frame on: A_{k}^-1
    }
    Affine g{0.0, 0.0};
    for (const Affine& a : t) g.scale += a.scale, g.shift += a.shift;
    g.scale /= static_cast<double>(t.size());
    g.shift /= static_cast<double>(t.size());
    // Neighbour k into frame i's stabilized scale: G_i o T_{k->i} = G_i o T_{i->k}^-1.
    std::vector<Affine> into(t.size());
    for (size_t k = 0; k < t.size(); ++k) into[k] = compose(g, inverse(t[k]));
    // The bound: every neighbour's range, brought into frame i, stays within the window's raw range widened by
    // kFitRangeMargin of its span; else the window is averaged unaligned (identity maps). The output, a mean of such
    // values, then never leaves [lo - margin, hi + margin] whatever the fits did.
    const size_t first = i - static_cast<size_t>(r);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < into.size(); ++k)
        lo = std::min(lo, frames_[first + k].lo), hi = std::max(hi, frames_[first + k].hi);
    bool bounded = true;
    for (size_t k = 0; k < into.size() && bounded; ++k)
        bounded = affine_stays_in_range(into[k], frames_[first + k].lo, frames_[first + k].hi, lo, hi, kFitRangeMargin);
    if (!bounded) {
        std::fill(into.begin(), into.end(), Affine{});
        ++unaligned_;
    }

    DepthImage out;
    out.width = cur.raw.width;
    out.height = cur.raw.height;
    out.data.resize(cur.raw.data.size());
    out.extra = cur.raw.extra;  // the model's extra outputs (mattes, confidence) pass through unstabilized
    for (size_t p = 0; p < out.data.size(); ++p) {
        double sum = into[r].scale * cur.raw.data[p] + into[r].shift;
        int count = 1;
        for (int m = 1; m <= r; ++m) {
            const Frame& before = frames_[i - m];
            const Frame& after = frames_[i + m];
            if (std::abs(before.rgb[p] - cur.rgb[p]) < kColourChange &&
                std::abs(after.rgb[p] - cur.rgb[p]) < kColourChange) {
                sum += into[r - m].scale * before.raw.data[p] + into[r - m].shift;
                sum += into[r + m].scale * after.raw.data[p] + into[r + m].shift;
                count += 2;
            }
        }
        out.data[p] = static_cast<float>(sum / count);
    }
    cur.done = true;
    ready_.emplace_back(cur.id, std::move(out));
}

}  // namespace depthbatch
