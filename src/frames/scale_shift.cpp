// The scale-and-shift fits the frame stages share (scale_shift.h).
#include "depthbatch/scale_shift.h"

#include <algorithm>
#include <cmath>

namespace depthbatch {

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

std::pair<double, double> fit_scale_shift(const std::vector<const std::vector<float>*>& prediction,
                                          const std::vector<const std::vector<float>*>& reference) {
    // The normal equations of min sum (s p + t - r)^2: [a00 a01; a01 a11] [s t]' = [b0 b1]'.
    double a00 = 0, a01 = 0, a11 = 0, b0 = 0, b1 = 0;
    for (size_t f = 0; f < prediction.size() && f < reference.size(); ++f) {
        const std::vector<float>& p = *prediction[f];
        const std::vector<float>& r = *reference[f];
        for (size_t i = 0; i < p.size() && i < r.size(); ++i) {
            const double x = p[i], y = r[i];
            a00 += x * x, a01 += x, a11 += 1, b0 += x * y, b1 += y;
        }
    }
    const double det = a00 * a11 - a01 * a01;
    if (det == 0) return {1.0, 0.0};
    return {(a11 * b0 - a01 * b1) / det, (-a01 * b0 + a00 * b1) / det};
}

}  // namespace depthbatch
