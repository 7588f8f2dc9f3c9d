#include "depthbatch/tiling.h"

#include "depthbatch/scale_shift.h"

#include <algorithm>
#include <cmath>

namespace depthbatch {
namespace {

/// Tile origins along one side of `extent` px: tiles of `tile` px, neighbours overlapping by >= `overlap`.
std::vector<int> origins(int extent, int tile, int overlap) {
    if (tile >= extent) return {0};
    // Steps of (extent - tile) / (n - 1) <= tile - overlap, floored: a floored step is either the exact
    // (integer) step or under it by less than 1, so neighbours still overlap by >= `overlap`.
    const int most = std::max(1, tile - overlap);
    const int n = 1 + (extent - tile + most - 1) / most;
    std::vector<int> out;
    for (int i = 0; i < n; ++i) out.push_back(static_cast<int>(static_cast<long long>(i) * (extent - tile) / (n - 1)));
    return out;
}

/// Weight across one side: 1 beyond `overlap` px from an edge shared with a neighbour, a raised cosine inside.
double ramp(int d, int overlap) {
    if (overlap <= 0 || d >= overlap) return 1.0;
    return 0.5 - 0.5 * std::cos(M_PI * (d + 0.5) / overlap);
}

}  // namespace

std::vector<TileRect> tile_grid(int width, int height, int size, int overlap) {
    std::vector<TileRect> tiles;
    const int tw = std::min(size, width), th = std::min(size, height);
    for (int y : origins(height, size, overlap))
        for (int x : origins(width, size, overlap)) tiles.push_back({x, y, tw, th});
    return tiles;
}

std::pair<double, double> align_to_global(const std::vector<float>& tile, const std::vector<float>& global,
                                          size_t step) {
    std::vector<float> x, y;
    for (size_t i = 0; i < tile.size() && i < global.size(); i += std::max<size_t>(1, step))
        if (std::isfinite(tile[i]) && std::isfinite(global[i])) x.push_back(tile[i]), y.push_back(global[i]);
    if (x.empty()) return {1.0, 0.0};
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    const double spread = *hi - *lo;
    Affine fit;
    if (spread > 1e-6 * std::max(1.0, std::abs(static_cast<double>(*hi))))
        fit = robust_affine_fit(x, y, std::vector<unsigned char>(x.size(), 1));
    if (fit.scale == 1.0 && fit.shift == 0.0) {  // flat tile, or no fit: the shift alone (median difference)
        std::vector<float> d(x.size());
        for (size_t i = 0; i < x.size(); ++i) d[i] = y[i] - x[i];
        std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
        fit.shift = d[d.size() / 2];
    }
    return {fit.scale, fit.shift};
}

TileBlender::TileBlender(int width, int height, int overlap)
    : width_(width), height_(height), overlap_(overlap), sum_(static_cast<size_t>(width) * height, 0.0),
      weight_(static_cast<size_t>(width) * height, 0.0) {}

void TileBlender::add(const TileRect& r, const std::vector<float>& depth) {
    for (int j = 0; j < r.height; ++j) {
        const int y = r.y + j;
        double wy = 1.0;
        if (r.y > 0) wy = std::min(wy, ramp(j, overlap_));
        if (r.y + r.height < height_) wy = std::min(wy, ramp(r.height - 1 - j, overlap_));
        for (int i = 0; i < r.width; ++i) {
            double wx = 1.0;
            if (r.x > 0) wx = std::min(wx, ramp(i, overlap_));
            if (r.x + r.width < width_) wx = std::min(wx, ramp(r.width - 1 - i, overlap_));
            const size_t k = static_cast<size_t>(y) * width_ + (r.x + i);
            const double w = wx * wy;
            sum_[k] += w * depth[static_cast<size_t>(j) * r.width + i];
            weight_[k] += w;
        }
    }
}

Plane TileBlender::result(const Plane& fallback) const {
    Plane out{width_, height_, std::vector<float>(sum_.size(), 0.0f)};
    for (size_t k = 0; k < sum_.size(); ++k)
        out.data[k] = weight_[k] > 0 ? static_cast<float>(sum_[k] / weight_[k])
                                     : (k < fallback.data.size() ? fallback.data[k] : 0.0f);
    return out;
}

}  // namespace depthbatch
