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

}  // namespace

Affine robust_affine_fit(const std::vector<float>& x, const std::vector<float>& y, const std::vector<unsigned char>& mask) {
    std::vector<unsigned char> use = mask;
    Affine fit;
    for (int iter = 0; iter < 3; ++iter) {
        double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (size_t i = 0; i < x.size(); ++i)
            if (use[i] && std::isfinite(x[i]) && std::isfinite(y[i])) {
                n += 1;
                sx += x[i];
                sy += y[i];
                sxx += static_cast<double>(x[i]) * x[i];
                sxy += static_cast<double>(x[i]) * y[i];
            }
        const double det = n * sxx - sx * sx;
        if (n < 64 || std::abs(det) < 1e-12 * std::max(1.0, n * sxx)) return Affine{};
        fit.scale = (n * sxy - sx * sy) / det;
        fit.shift = (sy - fit.scale * sx) / n;
        std::vector<float> residuals;
        for (size_t i = 0; i < x.size(); ++i)
            if (use[i]) residuals.push_back(static_cast<float>(std::abs(y[i] - (fit.scale * x[i] + fit.shift))));
        std::nth_element(residuals.begin(), residuals.begin() + residuals.size() / 2, residuals.end());
        const double limit = std::max(3.0 * 1.4826 * residuals[residuals.size() / 2], 1e-9);
        for (size_t i = 0; i < x.size(); ++i)
            if (use[i] && std::abs(y[i] - (fit.scale * x[i] + fit.shift)) > limit) use[i] = 0;
    }
    if (!(std::isfinite(fit.scale) && std::isfinite(fit.shift)) || fit.scale <= 0) return Affine{};
    return fit;
}

TemporalStabilizer::TemporalStabilizer(int window) : window_(std::max(1, window)) {}

void TemporalStabilizer::reset() {
    prev_raw_.clear();
    prev_rgb_.clear();
    pair_fits_.clear();
    history_.clear();
}

void TemporalStabilizer::stabilize(DepthImage& raw, const ModelInput& input) {
    const Affine a = push(raw, input);
    const size_t total = static_cast<size_t>(raw.width) * raw.height;
    Frame cur;
    cur.depth.resize(total);
    cur.rgb.resize(total);
    const size_t plane = static_cast<size_t>(input.width) * input.height;
    for (size_t i = 0; i < total; ++i) {
        const int ox = static_cast<int>(i % raw.width), oy = static_cast<int>(i / raw.width);
        const int ix = std::min(input.width - 1, ox * input.width / std::max(1, raw.width));
        const int iy = std::min(input.height - 1, oy * input.height / std::max(1, raw.height));
        const size_t p = static_cast<size_t>(iy) * input.width + ix;
        cur.depth[i] = static_cast<float>(a.scale * raw.data[i] + a.shift);
        cur.rgb[i] = (input.chw[p] + input.chw[plane + p] + input.chw[2 * plane + p]) / 3.0f;
    }
    if (pair_fits_.empty()) history_.clear();   // first frame, or a size change: no usable history
    // Temporal average of the aligned depth over the window, per pixel, using only the earlier frames in
    // which that pixel's colour is within kColourChange of now (a static pixel): moving content keeps its
    // own value, static content stops shimmering.
    for (size_t i = 0; i < total; ++i) {
        double sum = cur.depth[i];
        int n = 1;
        for (const Frame& h : history_)
            if (std::abs(h.rgb[i] - cur.rgb[i]) < kColourChange) {
                sum += h.depth[i];
                ++n;
            }
        raw.data[i] = static_cast<float>(sum / n);
    }
    history_.push_back(std::move(cur));
    while (static_cast<int>(history_.size()) > window_) history_.pop_front();
}

Affine TemporalStabilizer::push(const DepthImage& raw, const ModelInput& input) {
    // Subsample the raw output, and the model input's mean RGB at the same positions (the output may
    // be smaller than the input: nearest position).
    const size_t total = static_cast<size_t>(raw.width) * raw.height;
    const size_t stride = std::max<size_t>(1, total / kMaxSamples);
    std::vector<float> cur_raw, cur_rgb;
    cur_raw.reserve(total / stride + 1);
    cur_rgb.reserve(total / stride + 1);
    const size_t plane = static_cast<size_t>(input.width) * input.height;
    for (size_t i = 0; i < total; i += stride) {
        const int ox = static_cast<int>(i % raw.width), oy = static_cast<int>(i / raw.width);
        const int ix = std::min(input.width - 1, ox * input.width / std::max(1, raw.width));
        const int iy = std::min(input.height - 1, oy * input.height / std::max(1, raw.height));
        const size_t p = static_cast<size_t>(iy) * input.width + ix;
        cur_raw.push_back(raw.data[i]);
        cur_rgb.push_back((input.chw[p] + input.chw[plane + p] + input.chw[2 * plane + p]) / 3.0f);
    }
    if (prev_raw_.size() == cur_raw.size()) {
        std::vector<unsigned char> mask(cur_raw.size());
        for (size_t i = 0; i < mask.size(); ++i) mask[i] = std::abs(cur_rgb[i] - prev_rgb_[i]) < kColourChange;
        pair_fits_.push_back(robust_affine_fit(cur_raw, prev_raw_, mask));  // A_i: frame i -> frame i-1
        while (static_cast<int>(pair_fits_.size()) > window_) pair_fits_.pop_front();
    } else {
        pair_fits_.clear();
    }
    prev_raw_ = std::move(cur_raw);
    prev_rgb_ = std::move(cur_rgb);

    // Mean over k = i, i-1, ..., i-W of T_{i->k}.
    Affine sum{1.0, 0.0}, t{1.0, 0.0};
    int terms = 1;
    for (auto it = pair_fits_.rbegin(); it != pair_fits_.rend(); ++it) {
        t = compose(*it, t);
        sum.scale += t.scale;
        sum.shift += t.shift;
        ++terms;
    }
    return {sum.scale / terms, sum.shift / terms};
}

}  // namespace depthbatch
