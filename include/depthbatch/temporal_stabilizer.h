// depthbatch — temporal stabilization of per-frame depth, centred in time (no lag).
//
// Depth networks jitter from frame to frame: relative models (Depth Anything) in their per-frame scale and
// shift, every model in per-pixel noise. A batch renderer has the whole shot, so each frame is stabilized with
// the frames on both sides of it, never with the past alone: a moving average of the past trails every real
// change of depth (a dolly, a push-in) by half its window, which is what the causal version of this class did
// (measured: RMSE 0.526 -> 0.541 m on a dolly-out). Centred and symmetric, a steady change passes unchanged.
//
// For frame i, with R = radius and r = min(R, frames available on each side within the segment) (fewer at the
// start and end of a shot or around a failed frame: the window shrinks symmetrically, so it stays centred):
// 1. Alignment. For each pair of consecutive frames (j-1, j) a robust least-squares fit
//    raw_{j-1} ~= s_j * raw_j + b_j over pixels whose colour changed little (mean |dRGB| < 0.03 at the model
//    input), outliers (|residual| > 3 * 1.4826 * MAD) rejected over three refits: the scale-and-shift
//    alignment of MiDaS (Ranftl et al., TPAMI 2022, eq. 4) made robust, between frames instead of against
//    ground truth. Composing the fits gives T_{i->k}, frame i's values in frame k's scale, for every k in
//    [i-r, i+r]. Frame i is written in the mean of those maps, G_i = mean_k T_{i->k}: for scale jitter this is
//    the average scale of the 2r+1 frames; for a steady trend (T_{i->i+m} and T_{i->i-m} opposite) the mean is
//    the identity, so the trend is kept.
// 2. Per-pixel smoothing. Pixel p of frame i is the mean of G_i(T_{k->i}(raw_k(p))) (neighbour k brought into
//    frame i's stabilized scale) over the centre and the symmetric pairs (i-m, i+m), m = 1..r, in which p's
//    colour is within 0.03 of frame i's in *both* frames of the pair (static content). Taking pairs keeps the
//    mean centred, so a pixel whose depth changes steadily keeps its value at frame i; moving content, whose
//    colour changes, keeps its own depth.
// 3. The bound. The pair fits are guarded (scale_shift.h: identity where a fit is not pinned: identical frames, flat
//    or constant content, too few samples), and the maps of step 2 are checked: if any neighbour's raw range, brought
//    into frame i, leaves [lo - M, hi + M] (lo, hi: the least and greatest raw value of the frames i-r..i+r,
//    M = kFitRangeMargin (0.25) x (hi - lo)), the window is averaged without alignment. So every stabilized value lies
//    in [lo - M, hi + M] of its own raw window, by construction (tests: TemporalStabilizerBound.*).
// The result for frame i depends only on frames i-R..i+R, so a chunk renders R frames before its first and
// after its last frame as warm-up (inferred, not written) and gets bit-identical output to a whole-shot render.
// Cost per frame: one fit on <= 20,000 samples and (2R+1) multiply-adds per model-output pixel.
#pragma once

#include "depthbatch/model_data.h"
#include "depthbatch/scale_shift.h"

#include <deque>
#include <utility>
#include <vector>

namespace depthbatch {

class TemporalStabilizer {
public:
    /// `radius` = R frames on each side (>= 1): a window of 2R + 1 frames centred on each frame.
    explicit TemporalStabilizer(int radius);

    /// Feed the next frame of the shot, in order: its raw model output and the model input it came from (both
    /// at model resolution; a size change starts a new segment). `id` is the caller's handle for the frame.
    void push(int id, DepthImage raw, const ModelInput& input);

    /// Frames whose stabilized depth is final (every frame up to R after them was pushed), in push order,
    /// with that depth. Each pushed frame comes out exactly once.
    std::vector<std::pair<int, DepthImage>> pop_ready();

    /// End of a segment (the last frame, or before a gap such as a failed frame): every pending frame is made
    /// final with the frames there are (the window shrinks symmetrically) and the next push starts afresh.
    void flush();

    int radius() const { return radius_; }
    /// Frames finished so far whose window's fits would have left the bound (below) and were averaged unaligned.
    int unaligned_frames() const { return unaligned_; }
    /// Frames a chunk needs on each side of the frames it writes for bit-identical output.
    int warmup_frames() const { return radius_; }

private:
    struct Frame {
        int id = 0;
        DepthImage raw;
        std::vector<float> rgb;      ///< mean RGB of the model input at each output pixel
        std::vector<float> fit_raw;  ///< subsampled raw and mean RGB, for the pair fit
        std::vector<float> fit_rgb;
        Affine to_previous;     ///< A_j: this frame's values -> the previous frame's (identity for the first)
        double lo = 0, hi = 0;  ///< min and max of the finite raw values
        bool done = false;
    };
    void finish(size_t index, int r);

    int radius_;
    int unaligned_ = 0;
    std::deque<Frame> frames_;  ///< the current segment: R finished frames of context, then pending ones
    std::vector<std::pair<int, DepthImage>> ready_;
};

}  // namespace depthbatch
