// depthbatch — temporal stabilization of per-frame relative depth.
//
// Relative models (Depth Anything) predict depth up to a per-frame scale and shift, which flickers.
// For each pair of consecutive frames (j-1, j) we fit raw_{j-1} ~= s_j * raw_j + b_j by least squares over
// pixels whose colour changed little (mean |RGB_j - RGB_{j-1}| < 0.03 at the model input), rejecting
// outliers (|residual| > 3 * 1.4826 * MAD) over three refits — the scale-and-shift alignment of MiDaS
// (Ranftl et al., TPAMI 2022, eq. 4) made robust, applied between frames instead of against ground truth.
// Frame i is then aligned as a_i = S_i * raw_i + B_i, where (S_i, B_i) is the mean over k in [i-W, i] of
// the composed map T_{i->k} = A_{k+1} o ... o A_i (T_{i->i} = identity): frame i expressed in the average
// scale of its last W frames, a moving average that removes frame-to-frame pumping.
// Finally each pixel is smoothed over time: the mean of a_k(p) over k in [i-W, i] restricted to the frames
// where p's colour is within 0.03 of frame i's (a static pixel), so static content stops shimmering while
// moving content keeps its own depth.
// The result depends only on frames i-2W..i, so a chunk that starts at frame F renders frames F-2W..F-1
// as warm-up (inferred, not written) and gets bit-identical output to a whole-shot render.
#pragma once

#include "depthbatch/reformat.h"

#include <deque>

namespace depthbatch {

/// y = scale * x + shift
struct Affine {
    double scale = 1.0, shift = 0.0;
};

/// Robust least-squares fit of `target ~= scale * source + shift` over the sample indices where
/// `mask` holds. Returns identity when fewer than 64 usable samples remain.
Affine robust_affine_fit(const std::vector<float>& source, const std::vector<float>& target,
                         const std::vector<unsigned char>& mask);

class TemporalStabilizer {
public:
    /// `window` = W, frames of history (>= 1).
    explicit TemporalStabilizer(int window);

    /// Feed the next frame in shot order (raw model output and the model input it came from; both at
    /// model resolution, the same size for every frame). Returns the map to apply to this frame.
    Affine push(const DepthImage& raw, const ModelInput& input);

    /// Align and smooth this frame's raw output in place (the full method above; calls push()).
    void stabilize(DepthImage& raw, const ModelInput& input);

    /// Forget history (a gap in the frame list).
    void reset();

    /// Frames of history a chunk needs before its first written frame for bit-identical output.
    int warmup_frames() const { return 2 * window_; }

private:
    int window_;
    std::vector<float> prev_raw_;
    std::vector<float> prev_rgb_;  ///< subsampled mean RGB of the previous frame
    std::deque<Affine> pair_fits_; ///< A_j for the last W frames, newest last
    struct Frame {
        std::vector<float> depth;  ///< aligned depth a_k at model output resolution
        std::vector<float> rgb;    ///< mean RGB of the model input at the same pixels
    };
    std::deque<Frame> history_;    ///< the last W frames, newest last
};

}  // namespace depthbatch
