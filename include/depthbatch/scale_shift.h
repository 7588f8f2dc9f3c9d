// depthbatch — the scale-and-shift fits the frame stages share: depth from two forward passes (two frames, two
// windows, a tile and its frame) differs by a scale and a shift for relative models, and these bring one onto the
// other (aligned = scale * x + shift).
//
//   robust_affine_fit  the alignment of MiDaS (Ranftl et al., TPAMI 2022, eq. 4) made robust: least squares over the
//                      masked samples, outliers (|residual| > 3 * 1.4826 * MAD) rejected over three refits. Used by
//                      the stabilizer between consecutive frames (temporal_stabilizer.h) and by tiles against their
//                      frame's global depth (tiling.h: align_to_global).
//   fit_scale_shift    plain least squares over every pair, as Video Depth Anything's compute_scale_and_shift does:
//                      a video window's outputs onto the previous window's (video_window_stage.h).
//
// Both are pure functions of their arguments (thread-safe), in the depth's own units; neither throws.
#pragma once

#include <utility>
#include <vector>

namespace depthbatch {

/// y = scale * x + shift
struct Affine {
    double scale = 1.0, shift = 0.0;
};

/// Robust least-squares fit of `target ~= scale * source + shift` over the sample indices where `mask` holds
/// (`source`, `target` and `mask` of one length). Returns identity when fewer than 64 usable samples remain.
Affine robust_affine_fit(const std::vector<float>& source, const std::vector<float>& target,
                         const std::vector<unsigned char>& mask);

/// Least squares scale and shift: minimises sum_i (s p_i + t - r_i)^2 over the pairs of `prediction` and
/// `reference` (equal sizes). Returns {1, 0} when the 2x2 system is singular (all predictions equal, or none).
/// Sums in double (the official compute_scale_and_shift sums in float32; the two agree to ~1e-6 relative).
std::pair<double, double> fit_scale_shift(const std::vector<const std::vector<float>*>& prediction,
                                          const std::vector<const std::vector<float>*>& reference);

}  // namespace depthbatch
