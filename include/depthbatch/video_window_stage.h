// depthbatch — the video model's windows as a sequence stage (sequence_stage.h): a multi-frame model (contract
// input.frames > 1, e.g. Video Depth Anything) run over a shot the way its official inference runs it.
//
// The windowing is the official infer_video_depth of DepthAnything/Video-Depth-Anything
// (video_depth_anything/video_depth.py, utils/util.py compute_scale_and_shift and get_interpolate_frames), written
// here from its description, streaming, with the contract's numbers (TemporalWindowing, model_contract.h; VDA:
// W = 32, overlap O = 10, keyframes K = [0,12,24..31], crossfade C = 8, A = O - C = 2 align frames):
//   - the segment's frames, counted from 0 in push order (the frames the job renders, in order: with input.frames
//     1001-1100x2 a window is 32 rendered frames, 1001, 1003, ... 1063, not 32 frame numbers), are covered by windows k = 0, 1, ... starting at
//     b_k = k (W - O) while b_k < n (n: the segment's frames); a window past the segment's last frame takes copies
//     of that frame's input (the official tail padding);
//   - window k > 0's inputs 0 .. O-1 are window k-1's inputs (as they were fed, replaced ones included) at K:
//     with VDA's K, input 0 is always the segment's first frame, input 1 frame b_{k-1} + 12, inputs 2..9 its own
//     frames b_k + 2 .. b_k + 9; inputs O .. W-1 are frames b_k + O .. b_k + W - 1;
//   - window 0's outputs are frames 0 .. W-1 as they are; the reference is its outputs at K[0 .. A-1];
//   - window k > 0 (relative models, align scale_shift): (s, t) = the least squares fit of its outputs 0 .. A-1
//     (all pixels of those frames together) to the reference: minimise sum (s x + t - r)^2 (compute_scale_and_shift;
//     s = 1, t = 0 when the system is singular); align none (metric models): s = 1, t = 0. Every later output is
//     y = max(0, s x + t) (the clamp applies with align none too, as in the official code);
//   - its outputs A .. O-1 (frames b_k + A .. b_k + O - 1, the previous window's last C frames) are cross-faded:
//     frame = (1 - w_i) previous + w_i y, w_i = i / (C - 1), i = 0 .. C-1 (get_interpolate_frames);
//   - its outputs O .. W-1 are frames b_k + O .. b_k + W - 1;
//   - the reference becomes [reference[0], y at K[1 .. A-1]] (reference[0], window 0's output for the segment's
//     first frame, is kept for the whole segment).
// Everything runs at the processing size (the model input size; one size for the segment: the chain ends a segment
// where it changes). The official code aligns at the plate's size after resizing each window's output back; the two
// agree where the plate is the processing size (tests/data/vda fixtures).
//
// A segment is a shot for the model: a gap (a failed frame), a size change, or the job's end ends it, running its
// last windows (tail-padded) and finishing every frame held; the next frame starts a new segment with a new first
// frame and reference. After a gap, the frames finished by the padding before it and every frame of the segment after
// it are marked as lacking the gap's frames (StageFrame::lacked: their depth differs from an uninterrupted render);
// a stop abandons every frame held (their windows were cut).
//
// The stage holds at most max_held() frames (the frames of `windows_per_forward` windows waiting, W + (B - 1)(W - O),
// each with its model input and, once inferred, its depth) plus, outside that count, up to A keyframe inputs of
// earlier frames (the segment's first frame's among them), the last frame's input and A reference depths. A frame's
// depth depends on every frame before it in its segment and on up to W - 1 - A frames after it: context_frames()
// is W - 1 and needs_segment_start() is true, so a partial render starts at the shot's first frame (warm-up).
#pragma once

#include "depthbatch/model_contract.h"
#include "depthbatch/sequence_stage.h"

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

/// Least squares scale and shift: minimises sum_i (s p_i + t - r_i)^2 over the pairs of `prediction` and
/// `reference` (equal sizes). Returns {1, 0} when the 2x2 system is singular (all predictions equal, or none).
/// Sums in double (the official compute_scale_and_shift sums in float32; the two agree to ~1e-6 relative).
std::pair<double, double> fit_scale_shift(const std::vector<const std::vector<float>*>& prediction,
                                          const std::vector<const std::vector<float>*>& reference);

/// The weight of the newer window's frame i of `crossfade` cross-faded frames: i / (crossfade - 1).
double crossfade_weight(int i, int crossfade);

class VideoWindowStage : public SequenceStage {
public:
    /// The model's forward over windows of one segment: windows[b][t] is the input of frame t of window b (all W
    /// long, one size); returns the raw depth [b][t]. Throws on failure (std::exception).
    using Forward = std::function<std::vector<std::vector<DepthImage>>(const std::vector<std::vector<const ModelInput*>>& windows)>;
    /// Called for each frame a failed forward takes down (the stage marks it failed), with the exception.
    using OnFailure = std::function<void(StageFrame& frame, const std::exception& error)>;

    /// `windowing`: the contract's (validated). `windows_per_forward` >= 1: windows batched into one forward (their
    /// inputs do not depend on each other's outputs; model.batch). Throws ConfigError for an invalid windowing.
    VideoWindowStage(const TemporalWindowing& windowing, int windows_per_forward, Forward forward, OnFailure on_failure = {});
    ~VideoWindowStage() override;
    std::string name() const override { return "video windows"; }
    /// W - 1: the frames after a frame that can change its depth (warm-up after a partial render's last frame).
    int context_frames() const override;
    bool needs_segment_start() const override { return true; }
    /// W + (windows_per_forward - 1) (W - O) frames.
    int max_held() const override;
    void push(StageFrame frame) override;
    void end_segment(SegmentEnd why, const std::vector<int>& gap) override;
    std::vector<StageFrame> pop_ready() override;
    std::vector<std::pair<std::string, std::string>> metadata() const override;

    /// Windows run so far (all segments), for the log and tests.
    int windows_run() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace depthbatch
