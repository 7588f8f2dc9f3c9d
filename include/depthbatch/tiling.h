// depthbatch — tiled detail for plates much larger than the processing size (job key model.tiles).
//
// A model that sees a 4K plate at 224-518 px loses thin structure. With tiles, the model sees the whole frame
// once (the global prediction: the scene's layout and one consistent scale) and each tile of a grid of
// overlapping tiles at its full processing size (each tile is a plate of its own to ReformatPlan). A frame costs
// 1 + tiles forward passes; the tiles of a frame go through the model together, model.batch at a time.
// Per tile, its depth brought to its rectangle of the plate is:
//   1. aligned to the global depth over the same rectangle: a robust least-squares scale and shift
//      (robust_affine_fit, scale_shift.h: the alignment of MiDaS, Ranftl et al., TPAMI 2022, eq. 4,
//      with outlier rejection) for relative models, whose scale and shift differ from one forward pass to
//      the next; a flat tile (no depth variation to fit a scale to) gets the shift alone (median difference).
//      Metric models are not aligned: their values are metres already;
//   2. blended: weight 1 inside the tile, falling to 0 across `overlap` pixels on each side the tile shares
//      with a neighbour along a raised cosine (w(d) = 0.5 - 0.5 cos(pi (d + 0.5) / overlap), d = distance to
//      the tile's edge in px), the plate's own borders unweighted; the written depth is the weighted mean.
//      Weights are positive wherever a tile covers, so every pixel gets a value and no seam is left.
#pragma once

#include "depthbatch/depth_upsample.h"

#include <vector>

namespace depthbatch {

/// A rectangle of the plate's data window, origin at its top-left pixel (px).
struct TileRect {
    int x = 0, y = 0, width = 0, height = 0;
};

/// The tile grid for a width x height plate: columns and rows of tiles `size` px on a side (or the plate's
/// extent when smaller), evenly spaced so that neighbours overlap by at least `overlap` px and the last tile
/// ends at the plate's edge. All tiles have one size (so a frame's tiles batch together). One tile (the whole
/// plate) when size >= both sides. Row-major order. Requires size > 2 * overlap >= 0.
std::vector<TileRect> tile_grid(int width, int height, int size, int overlap);

/// Scale and shift that bring `tile` (a tile's depth, values over its rectangle) onto `global` (the global
/// depth over the same rectangle, same length): robust least squares, shift only for a flat tile. Returns
/// {scale, shift}: aligned = scale * tile + shift. Samples every `step`-th value; non-finite samples are
/// skipped, and {1, 0} comes back when none is left. Never throws.
std::pair<double, double> align_to_global(const std::vector<float>& tile, const std::vector<float>& global,
                                          size_t step = 1);

/// Accumulates tiles into a width x height depth plane (see the weights above).
class TileBlender {
public:
    /// `overlap` in px: the width of the weight ramps.
    TileBlender(int width, int height, int overlap);
    /// Add `depth` (rect.width x rect.height values, row-major) at `rect`.
    void add(const TileRect& rect, const std::vector<float>& depth);
    /// The weighted mean; pixels no tile covered hold `fallback`'s value (same size; may be empty when
    /// every pixel is covered, as tile_grid's tiles do).
    Plane result(const Plane& fallback = {}) const;

private:
    int width_, height_, overlap_;
    std::vector<double> sum_, weight_;
};

}  // namespace depthbatch
