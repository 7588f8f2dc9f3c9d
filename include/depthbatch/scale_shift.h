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
//
// Guards (issue 41: held frames made a stabilized shot reach 466-35,000x its raw depth). Degenerate data is daily
// life on a farm (held frames, constant plates, fades, tiny plates), and a fit that goes wild there is composed over
// frames and windows. So both fits return the identity (no alignment) rather than a fit that is not pinned:
//   - too few samples (robust_affine_fit: under 64), or a singular or nearly singular system (all sources equal);
//   - robust_affine_fit: the kept samples span less than a tenth of the source's depth range (2nd-98th percentile):
//     samples from one flat region (the sky a colour mask keeps between two frames of a pan) fit any slope;
//   - the fitted map sends the source's range outside the target's range widened by kFitRangeMargin of its span on
//     each side (affine_stays_in_range), or its scale is not finite and positive.
// Residuals under 1e-4 of the target's span are never outliers in robust_affine_fit: equal frames (held plates) give a
// median residual of ~0, and the MAD limit alone would reject all but the exactly equal samples.
#pragma once

#include <utility>
#include <vector>

namespace depthbatch {

/// y = scale * x + shift
struct Affine {
    double scale = 1.0, shift = 0.0;
};

/// How far outside the target's range (a share of its span, each side) a fitted map may send the source's range.
constexpr double kFitRangeMargin = 0.25;

/// True when `a` has a finite positive scale and maps [source_lo, source_hi] into
/// [target_lo - margin * span, target_hi + margin * span], span = target_hi - target_lo (plus float precision).
bool affine_stays_in_range(const Affine& a, double source_lo, double source_hi, double target_lo, double target_hi,
                           double margin);

/// Robust least-squares fit of `target ~= scale * source + shift` over the sample indices where `mask` holds
/// (`source`, `target` and `mask` of one length; non-finite samples are left out). Returns the identity when the
/// fit is not pinned (the guards above): fewer than 64 usable samples, kept samples over too narrow a range, a map
/// leaving the target's range.
Affine robust_affine_fit(const std::vector<float>& source, const std::vector<float>& target,
                         const std::vector<unsigned char>& mask);

/// Least squares scale and shift: minimises sum_i (s p_i + t - r_i)^2 over the pairs of `prediction` and
/// `reference` (equal sizes). Returns {1, 0} when the 2x2 system is singular or nearly so (all predictions equal, or
/// none: det <= 1e-12 a00 a11), and when the fit fails affine_stays_in_range (min/max of the predictions into
/// min/max of the reference, kFitRangeMargin).
/// Sums in double (the official compute_scale_and_shift sums in float32; the two agree to ~1e-6 relative).
std::pair<double, double> fit_scale_shift(const std::vector<const std::vector<float>*>& prediction,
                                          const std::vector<const std::vector<float>*>& reference);

}  // namespace depthbatch
