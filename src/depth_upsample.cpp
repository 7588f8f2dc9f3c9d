#include "depthbatch/depth_upsample.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace depthbatch {
namespace {

/// edge_hard: the smallest luma span (0-1) within an edge's reach that counts as an edge of the plate.
constexpr float kGuideEdge = 0.05f;
/// One source coordinate of a bilinear enlargement at pixel centres (x_src = (x + 0.5) * n / N - 0.5, clamped
/// at the borders): the two source indices and the weight of the second. The same sampling as OIIO's
/// ImageBufAlgo::resample with interpolation, which the bilinear method uses.
struct Tap {
    int i0, i1;
    float t;
};
std::vector<Tap> taps(int n, int big) {
    std::vector<Tap> out(static_cast<size_t>(big));
    for (int x = 0; x < big; ++x) {
        const double s = std::clamp((x + 0.5) * n / big - 0.5, 0.0, static_cast<double>(n - 1));
        const int i0 = static_cast<int>(std::floor(s));
        out[static_cast<size_t>(x)] = {i0, std::min(i0 + 1, n - 1), static_cast<float>(s - i0)};
    }
    return out;
}

/// One row of an enlargement, vertical step: rows i0 and i1 of a w-wide plane mixed by the tap's weight.
void mix_rows(const float* plane, int w, const Tap& v, float* row) {
    const float* r0 = plane + static_cast<size_t>(v.i0) * w;
    const float* r1 = plane + static_cast<size_t>(v.i1) * w;
    for (int i = 0; i < w; ++i) row[i] = r0[i] + v.t * (r1[i] - r0[i]);
}
/// The horizontal step: the mixed row sampled at one output column.
inline float sample(const float* row, const Tap& u) { return row[u.i0] + u.t * (row[u.i1] - row[u.i0]); }

/// Running min (or max) over [i-r, i+r] along rows, then columns (separable; r is small).
Plane extreme(const Plane& in, int r, bool want_max) {
    const auto pick = [want_max](float a, float b) { return want_max ? std::max(a, b) : std::min(a, b); };
    Plane rows = in, out = in;
    for (int y = 0; y < in.height; ++y)
        for (int x = 0; x < in.width; ++x) {
            float v = in.at(x, y);
            for (int k = std::max(0, x - r); k <= std::min(in.width - 1, x + r); ++k) v = pick(v, in.at(k, y));
            rows.data[static_cast<size_t>(y) * in.width + x] = v;
        }
    for (int y = 0; y < in.height; ++y)
        for (int x = 0; x < in.width; ++x) {
            float v = rows.at(x, y);
            for (int k = std::max(0, y - r); k <= std::min(in.height - 1, y + r); ++k) v = pick(v, rows.at(x, k));
            out.data[static_cast<size_t>(y) * in.width + x] = v;
        }
    return out;
}

float percentile(std::vector<float> v, double p) {
    if (v.empty()) return 0.0f;
    const size_t k = static_cast<size_t>(std::lround(p / 100.0 * static_cast<double>(v.size() - 1)));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

}  // namespace

void bilinear_upsample(const float* src, int w, int h, int W, int H, float* out) {
    if (w < 1 || h < 1 || W < w || H < h)
        throw std::invalid_argument("bilinear_upsample: " + std::to_string(w) + "x" + std::to_string(h) + " -> " +
                                    std::to_string(W) + "x" + std::to_string(H) + " is not an enlargement");
    const std::vector<Tap> tx = taps(w, W), ty = taps(h, H);
    std::vector<float> row(static_cast<size_t>(w));
    for (int y = 0; y < H; ++y) {
        mix_rows(src, w, ty[static_cast<size_t>(y)], row.data());
        float* o = out + static_cast<size_t>(y) * W;
        for (int x = 0; x < W; ++x) o[x] = sample(row.data(), tx[static_cast<size_t>(x)]);
    }
}

std::vector<float> rec709_luma(const float* rgb, size_t pixels) {
    std::vector<float> y(pixels);
    for (size_t i = 0; i < pixels; ++i) y[i] = rec709(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
    return y;
}

Plane box_mean(const Plane& in, int r) {
    if (r <= 0) return in;
    const int w = in.width, h = in.height;
    Plane rows{w, h, std::vector<float>(in.data.size())}, out{w, h, std::vector<float>(in.data.size())};
    // Sums in double: a running float sum drifts over a 4K row.
    for (int y = 0; y < h; ++y) {
        const float* src = in.data.data() + static_cast<size_t>(y) * w;
        float* dst = rows.data.data() + static_cast<size_t>(y) * w;
        double sum = 0;
        for (int x = 0; x < std::min(r, w); ++x) sum += src[x];
        for (int x = 0; x < w; ++x) {
            if (x + r < w) sum += src[x + r];
            if (x - r - 1 >= 0) sum -= src[x - r - 1];
            dst[x] = static_cast<float>(sum / (std::min(w - 1, x + r) - std::max(0, x - r) + 1));
        }
    }
    std::vector<double> sum(static_cast<size_t>(w), 0.0);
    for (int y = 0; y < std::min(r, h); ++y)
        for (int x = 0; x < w; ++x) sum[static_cast<size_t>(x)] += rows.at(x, y);
    for (int y = 0; y < h; ++y) {
        const float* add = y + r < h ? rows.data.data() + static_cast<size_t>(y + r) * w : nullptr;
        const float* sub = y - r - 1 >= 0 ? rows.data.data() + static_cast<size_t>(y - r - 1) * w : nullptr;
        const double n = std::min(h - 1, y + r) - std::max(0, y - r) + 1;
        float* dst = out.data.data() + static_cast<size_t>(y) * w;
        for (int x = 0; x < w; ++x) {
            double& s = sum[static_cast<size_t>(x)];
            if (add) s += add[x];
            if (sub) s -= sub[x];
            dst[x] = static_cast<float>(s / n);
        }
    }
    return out;
}

void guided_upsample(const Plane& p, const Plane& guide_low, const Plane& guide_high, const UpsampleSettings& s,
                     float* q) {
    const int w = p.width, h = p.height, W = guide_high.width, H = guide_high.height;
    if (guide_low.width != w || guide_low.height != h || W < w || H < h || w < 1 || h < 1 ||
        p.data.size() != static_cast<size_t>(w) * h || guide_high.data.size() != static_cast<size_t>(W) * H)
        throw std::invalid_argument("guided_upsample: depth " + std::to_string(w) + "x" + std::to_string(h) +
                                    ", guides " + std::to_string(guide_low.width) + "x" +
                                    std::to_string(guide_low.height) + " and " + std::to_string(W) + "x" +
                                    std::to_string(H));
    // The window radius at model resolution.
    const double scale = 0.5 * (static_cast<double>(w) / W + static_cast<double>(h) / H);
    const int r = s.radius_px > 0 ? std::max(1, static_cast<int>(std::lround(s.radius_px * scale))) : 2;

    // He et al. 2013, Algorithm 1 (eqs. 5-8), at model resolution.
    const size_t n = p.data.size();
    Plane ii{w, h, std::vector<float>(n)}, ip{w, h, std::vector<float>(n)};
    for (size_t k = 0; k < n; ++k) {
        ii.data[k] = guide_low.data[k] * guide_low.data[k];
        ip.data[k] = guide_low.data[k] * p.data[k];
    }
    const Plane mean_i = box_mean(guide_low, r), mean_p = box_mean(p, r), corr_ii = box_mean(ii, r),
                corr_ip = box_mean(ip, r);
    Plane a{w, h, std::vector<float>(n)}, b{w, h, std::vector<float>(n)};
    for (size_t k = 0; k < n; ++k) {
        const double var_i =
            static_cast<double>(corr_ii.data[k]) - static_cast<double>(mean_i.data[k]) * mean_i.data[k];
        const double cov_ip =
            static_cast<double>(corr_ip.data[k]) - static_cast<double>(mean_i.data[k]) * mean_p.data[k];
        const double ak = cov_ip / (std::max(var_i, 0.0) + s.epsilon);
        a.data[k] = static_cast<float>(ak);
        b.data[k] = static_cast<float>(mean_p.data[k] - ak * mean_i.data[k]);
    }
    const Plane mean_a = box_mean(a, r), mean_b = box_mean(b, r);

    // Fast Guided Filter (He & Sun 2015), Algorithm 2, last step: A and B enlarged bilinearly, q = A * I + B
    // with the plate-resolution guide. Row by row (vertical interpolation at model width first): the enlarged
    // planes are never stored.
    const std::vector<Tap> tx = taps(w, W), ty = taps(h, H);
    std::vector<float> row_a(static_cast<size_t>(w)), row_b(static_cast<size_t>(w));
    for (int y = 0; y < H; ++y) {
        mix_rows(mean_a.data.data(), w, ty[static_cast<size_t>(y)], row_a.data());
        mix_rows(mean_b.data.data(), w, ty[static_cast<size_t>(y)], row_b.data());
        const float* gi = guide_high.data.data() + static_cast<size_t>(y) * W;
        float* out = q + static_cast<size_t>(y) * W;
        for (int x = 0; x < W; ++x) {
            const Tap& u = tx[static_cast<size_t>(x)];
            out[x] = sample(row_a.data(), u) * gi[x] + sample(row_b.data(), u);
        }
    }
    if (s.method != DepthUpsample::EdgeHard) return;

    // edge_hard. The model's depth mixes the two sides of an edge in the model pixels the edge crosses: the
    // plate's shrink (resample.h's triangle filter, a tent of half-width one model pixel) mixes every model
    // pixel whose centre lies within one model pixel of the edge, i.e. at most two in a row, whatever the
    // edge's phase. The two sides are therefore looked for in the 5 x 5 model pixels around the plate pixel
    // (reach 2: past both mixed pixels on either side): their lowest and highest depth, and the plate pixel takes
    // the one its guided depth is nearer. (The 3 x 3 of before held a mixed pixel as a "side" whenever the edge
    // fell between model pixels: a line of mixed depth around every such object, issue 25.) A plate pixel is at
    // an edge when two neighbouring model pixels in that window differ by more than the threshold — a jump, not
    // a slope (a slope spreads its change over many pixels, each step under it) —
    const int reach = 2;
    Plane step{w, h, std::vector<float>(n, 0.0f)};
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            float d = 0;
            if (x + 1 < w) d = std::max(d, std::abs(p.at(x + 1, y) - p.at(x, y)));
            if (y + 1 < h) d = std::max(d, std::abs(p.at(x, y + 1) - p.at(x, y)));
            if (x > 0) d = std::max(d, std::abs(p.at(x - 1, y) - p.at(x, y)));
            if (y > 0) d = std::max(d, std::abs(p.at(x, y - 1) - p.at(x, y)));
            step.data[static_cast<size_t>(y) * w + x] = d;
        }
    const Plane jumps = extreme(step, reach, true);
    // ... and the plate shows an edge there too: its luma spans more than kGuideEdge in the same window. Where it
    // does not, the guide cannot say where the edge is, and snapping would draw an edge of its own.
    const Plane guide_lo = extreme(guide_low, reach, false), guide_hi = extreme(guide_low, reach, true);
    const float range = percentile(p.data, 98.0) - percentile(p.data, 2.0);
    const float jump = static_cast<float>(s.edge_threshold) * std::max(range, 1e-12f);
    // Elsewhere the guided depth is clamped to the lowest and highest depth of the 3 x 3 model pixels around the
    // plate pixel (its bilinear support and one more): no overshoot, a flat area is exactly the model's value, and
    // the tail of an edge that the wider window reaches without the plate showing it is not let in.
    const Plane near_lo = extreme(p, 1, false), near_hi = extreme(p, 1, true);
    const Plane lo = extreme(p, reach, false), hi = extreme(p, reach, true);
    std::vector<int> nx(static_cast<size_t>(W)), ny(static_cast<size_t>(H));  // the model pixel each plate pixel is in
    for (int x = 0; x < W; ++x) nx[static_cast<size_t>(x)] = std::min(w - 1, static_cast<int>((x + 0.5) * w / W));
    for (int y = 0; y < H; ++y) ny[static_cast<size_t>(y)] = std::min(h - 1, static_cast<int>((y + 0.5) * h / H));
    for (int y = 0; y < H; ++y) {
        float* out = q + static_cast<size_t>(y) * W;
        for (int x = 0; x < W; ++x) {
            const int i = nx[static_cast<size_t>(x)], j = ny[static_cast<size_t>(y)];
            if (jumps.at(i, j) > jump && guide_hi.at(i, j) - guide_lo.at(i, j) > kGuideEdge) {
                const float l = lo.at(i, j), u = hi.at(i, j);
                out[x] = out[x] - l <= u - out[x] ? l : u;
            } else {
                out[x] = std::clamp(out[x], near_lo.at(i, j),
                                    near_hi.at(i, j));  // never outside the model's values around it
            }
        }
    }
}

Plane guided_upsample(const Plane& depth, const Plane& guide_low, const Plane& guide_high, const UpsampleSettings& s) {
    Plane q{guide_high.width, guide_high.height, std::vector<float>(guide_high.data.size())};
    guided_upsample(depth, guide_low, guide_high, s, q.data.data());
    return q;
}

}  // namespace depthbatch
