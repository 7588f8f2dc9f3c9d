// The scale-and-shift fits the frame stages share (scale_shift.h).
#include "depthbatch/scale_shift.h"

#include <algorithm>
#include <cmath>

namespace depthbatch {
namespace {

constexpr double kMinSamples = 64;       // fewer usable samples: no fit
constexpr double kResidualFloor = 1e-4;  // residuals under this share of the target's span are never outliers
constexpr double kMinSpread = 0.1;       // the kept samples must span this share of the source's range

/// The 2nd and 98th percentiles of the finite values of `v` (lo = hi = 0 when none is finite): the range a fit is
/// checked against, robust to the odd extreme pixel.
struct Range {
    double lo = 0, hi = 0;
    double span() const { return hi - lo; }
};
Range robust_range(const std::vector<float>& v, const std::vector<unsigned char>* keep = nullptr) {
    std::vector<float> finite;
    finite.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i)
        if ((!keep || (*keep)[i]) && std::isfinite(v[i])) finite.push_back(v[i]);
    if (finite.empty()) return {};
    const auto at = [&finite](double q) {
        auto it = finite.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(finite.size() - 1));
        std::nth_element(finite.begin(), it, finite.end());
        return static_cast<double>(*it);
    };
    return {at(0.02), at(0.98)};
}

}  // namespace

bool affine_stays_in_range(const Affine& a, double source_lo, double source_hi, double target_lo, double target_hi,
                           double margin) {
    if (!(std::isfinite(a.scale) && std::isfinite(a.shift)) || a.scale <= 0) return false;
    const double m = margin * std::max(0.0, target_hi - target_lo);
    const double lo = a.scale * source_lo + a.shift, hi = a.scale * source_hi + a.shift;
    // A tolerance of float precision, for equal constant frames (span 0).
    const double eps = 1e-6 * std::max({1.0, std::abs(target_lo), std::abs(target_hi)});
    return lo >= target_lo - m - eps && hi <= target_hi + m + eps;
}

Affine robust_affine_fit(const std::vector<float>& x, const std::vector<float>& y,
                         const std::vector<unsigned char>& mask) {
    std::vector<unsigned char> use(x.size(), 0);
    double usable = 0;
    for (size_t i = 0; i < x.size() && i < y.size() && i < mask.size(); ++i)
        if (mask[i] && std::isfinite(x[i]) && std::isfinite(y[i])) use[i] = 1, usable += 1;
    if (usable < kMinSamples) return Affine{};
    const Range source = robust_range(x), target = robust_range(y);
    const double floor = std::max(kResidualFloor * target.span(), 1e-9);
    Affine fit;
    for (int iter = 0; iter < 3; ++iter) {
        double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (size_t i = 0; i < use.size(); ++i)
            if (use[i]) {
                n += 1;
                sx += x[i];
                sy += y[i];
                sxx += static_cast<double>(x[i]) * x[i];
                sxy += static_cast<double>(x[i]) * y[i];
            }
        const double det = n * sxx - sx * sx;
        if (n < kMinSamples || std::abs(det) < 1e-12 * std::max(1.0, n * sxx)) return Affine{};
        // The slope is only pinned where the kept samples spread over the frame's depths: samples from one flat
        // region (a wall, the sky: what a colour mask keeps between two frames of a pan) fit any slope.
        if (robust_range(x, &use).span() < kMinSpread * source.span()) return Affine{};
        fit.scale = (n * sxy - sx * sy) / det;
        fit.shift = (sy - fit.scale * sx) / n;
        std::vector<float> residuals;
        for (size_t i = 0; i < use.size(); ++i)
            if (use[i]) residuals.push_back(static_cast<float>(std::abs(y[i] - (fit.scale * x[i] + fit.shift))));
        std::nth_element(residuals.begin(), residuals.begin() + residuals.size() / 2, residuals.end());
        // Equal frames (held plates) leave a median residual of ~0: the floor keeps the limit from rejecting all but
        // the exactly equal samples.
        const double limit = std::max(3.0 * 1.4826 * residuals[residuals.size() / 2], floor);
        for (size_t i = 0; i < use.size(); ++i)
            if (use[i] && std::abs(y[i] - (fit.scale * x[i] + fit.shift)) > limit) use[i] = 0;
    }
    if (!affine_stays_in_range(fit, source.lo, source.hi, target.lo, target.hi, kFitRangeMargin)) return Affine{};
    return fit;
}

std::pair<double, double> fit_scale_shift(const std::vector<const std::vector<float>*>& prediction,
                                          const std::vector<const std::vector<float>*>& reference) {
    // The normal equations of min sum (s p + t - r)^2: [a00 a01; a01 a11] [s t]' = [b0 b1]'.
    double a00 = 0, a01 = 0, a11 = 0, b0 = 0, b1 = 0;
    double p_lo = INFINITY, p_hi = -INFINITY, r_lo = INFINITY, r_hi = -INFINITY;
    for (size_t f = 0; f < prediction.size() && f < reference.size(); ++f) {
        const std::vector<float>& p = *prediction[f];
        const std::vector<float>& r = *reference[f];
        for (size_t i = 0; i < p.size() && i < r.size(); ++i) {
            const double x = p[i], y = r[i];
            a00 += x * x, a01 += x, a11 += 1, b0 += x * y, b1 += y;
            p_lo = std::min(p_lo, x), p_hi = std::max(p_hi, x), r_lo = std::min(r_lo, y), r_hi = std::max(r_hi, y);
        }
    }
    const double det = a00 * a11 - a01 * a01;
    // Singular, or nearly (predictions all but equal: a black or constant frame): the slope is noise.
    if (!(det > 1e-12 * a00 * a11)) return {1.0, 0.0};
    const Affine fit{(a11 * b0 - a01 * b1) / det, (-a01 * b0 + a00 * b1) / det};
    if (!affine_stays_in_range(fit, p_lo, p_hi, r_lo, r_hi, kFitRangeMargin)) return {1.0, 0.0};
    return {fit.scale, fit.shift};
}

}  // namespace depthbatch
