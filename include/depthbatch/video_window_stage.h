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
// One machine runs both renders (the streaming whole render and a chunk): a segment has a plan, the windows it runs
// and each one's inputs (window_inputs). A whole segment lists window k when its first frame arrives and learns its
// size at its end (the tail padding); a chunk gets its plan from plan_partial before its first frame. Windows run as
// their inputs arrive, in the same forwards, aligned by the same code.
//
// A segment is a shot for the model: a gap (a failed frame), a size change, or the job's end ends it, running its
// last windows (tail-padded) and finishing every frame held; the next frame starts a new segment with a new first
// frame and reference. After a gap, the frames finished by the padding before it and every frame of the segment after
// it are marked as lacking the gap's frames (FrameRecord::lacked: their depth differs from an uninterrupted render);
// a stop abandons every frame held (their windows were cut).
//
// The stage holds at most max_held() frames (the frames of `windows_per_forward` windows waiting, W + (B - 1)(W - O),
// each with its model input and, once inferred, its depth) plus, outside that count, up to A keyframe inputs of
// earlier frames (the segment's first frame's among them), the last frame's input and A reference depths. A frame's
// depth depends on every frame before it in its segment and on up to W - 1 - A frames after it: context_frames()
// is W - 1 and needs_segment_start() is true.
//
// Partial renders (a farm chunk, --frames A-B; plan_partial): a window's INPUTS do not depend on the windows before it
// (window_inputs lists them from the windowing alone), so a chunk runs only the windows that make its frames: the
// window owning its first frame to the one cross-fading its last (metric models, align none: their frames equal the
// whole render's, they depend on those windows' inputs only), and for relative models (align scale_shift, fitted
// window to window) also window 0 (the anchor: it holds the shot's first frame, which sits in every window) and
// kRelativeContextWindows windows before the chunk's first: the first of those is fitted on the shot's first frame
// alone (its output there against window 0's), the chain then converges over the context windows (docs/video-models.md "Video
// models": measured errors). A chunk's cost is bounded by its frames plus at most kRelativeContextWindows + 2
// windows, wherever it sits in the shot.
#pragma once

#include "depthbatch/model_contract.h"
#include "depthbatch/scale_shift.h"
#include "depthbatch/sequence_stage.h"

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

/// The weight of the newer window's frame i of `crossfade` cross-faded frames: i / (crossfade - 1).
double crossfade_weight(int i, int crossfade);

/// Context windows a relative model's partial render runs before the window owning its first frame (besides window 0).
constexpr int kRelativeContextWindows = 8;

/// The windows of a segment of `n` frames (n >= 1): ceil(n / stride), window k starting at k * stride.
int window_count(const TemporalWindowing& t, int n);

/// The segment positions (0-based, in push order) that window `k` (0 <= k < window_count) of a segment of `n` frames
/// is fed, in slot order (t.window of them), as the streaming stage feeds them: slot j < overlap of window k > 0 is
/// slot keyframes[j] of window k - 1's list; every other slot j is frame k * stride + j, a frame past the last one
/// replaced by the last (n - 1, the tail padding). With VDA's windowing: [0, b_{k-1} + 12, b_k + 2 .. b_k + 31].
/// O(k * window).
std::vector<int> window_inputs(const TemporalWindowing& t, int k, int n);

/// The window whose outputs a frame at position `p` takes as its own (0 for p < window, else (p - overlap) / stride);
/// frames (k + 1) * stride + A .. (k + 1) * stride + overlap - 1 of it are then cross-faded with window k + 1.
int owning_window(const TemporalWindowing& t, int p);

/// A partial render of segment positions first .. last of a segment of `n` frames: the windows it runs (ascending)
/// and the positions it must be fed (ascending: the union of those windows' inputs).
struct VideoWindowPlan {
    std::vector<int> windows;
    std::vector<int> positions;
};
/// The windows the frames first .. last need (see the file comment): metric (align none) the owning windows of
/// first .. last and the window cross-fading `last` when it exists; relative (scale_shift) also window 0 and
/// `context_windows` windows before (clipped at window 1). Throws std::invalid_argument for 0 <= first <= last < n
/// not holding.
VideoWindowPlan plan_video_windows(const TemporalWindowing& t, int n, int first, int last,
                                   int context_windows = kRelativeContextWindows);
/// plan_video_windows' windows alone (cheap: no input lists).
std::vector<int> video_chunk_windows(const TemporalWindowing& t, int n, int first, int last,
                                     int context_windows = kRelativeContextWindows);

/// `depthbatch submit`'s default chunk size for a video shot of `n` frames: the smallest multiple of the stride
/// whose chunks (cut as chunk_frames cuts them) run at most `overhead` times the whole render's windows in all
/// (video_chunk_windows of each); n (one task) when none does.
int video_chunk_size(const TemporalWindowing& t, int n, double overhead = 1.3);

/// What a job asks of a multi-frame (video) model beyond its windows: the video stage's own check of the job.
struct VideoModelJob {
    bool tiles = false;                ///< model.tiles is set
    bool sequence_statistics = false;  ///< depth.normalize: sequence
    std::vector<std::string> passes;   ///< output.passes, as the job names them
    int batch = 1;                     ///< model.batch: windows a forward (for the log line)
};

/// Refuses what a video model's windows cannot do, with a ConfigError (exit 2) naming the key and the model
/// (`model_path`, whose `contract` has frames > 1): tiles (the windows see whole frames), sequence statistics (they
/// sample single frames), focal-dependent metric depth (contract reference_focal_px), passes other than P and N (the
/// model's extra outputs are written for single-frame models only). Logs the windowing once ("video model: windows
/// of 32 frames every 22 ...").
void check_video_model_job(const ModelContract& contract, const std::string& model_path, const VideoModelJob& job);

class VideoWindowStage : public SequenceStage {
public:
    /// The model's forward over windows of one segment: windows[b][t] is the input of frame t of window b (all W
    /// long, one size); returns the raw depth [b][t]. Throws on failure (std::exception).
    using Forward =
        std::function<std::vector<std::vector<DepthImage>>(const std::vector<std::vector<const ModelInput*>>& windows)>;
    /// Called for each frame a failed forward takes down, with the exception, after the stage failed its record
    /// (FrameRecord::fail: the exception's exit code when it is an Error, else ExitCode::Render; "frame N: " + what()).
    using OnFailure = std::function<void(FrameRecord& frame, const std::exception& error)>;

    /// `windowing`: the contract's (validated). `windows_per_forward` >= 1: windows batched into one forward (their
    /// inputs do not depend on each other's outputs; model.batch). Throws ConfigError for an invalid windowing.
    VideoWindowStage(const TemporalWindowing& windowing, int windows_per_forward, Forward forward,
                     OnFailure on_failure = {});
    ~VideoWindowStage() override;
    std::string name() const override { return "video windows"; }
    /// W - 1: the frames after a frame that can change its depth (warm-up after a partial render's last frame, when
    /// plan_partial leaves the plan to the driver).
    int context_frames() const override;
    bool needs_segment_start() const override { return true; }
    /// W + (windows_per_forward - 1) (W - O) frames.
    int max_held() const override;
    /// A chunk of shot positions first .. last of a shot of `shot_size` frames: plan_video_windows' positions (frames
    /// pushed are then taken by their FrameRecord::shot_pos); nullopt when the plan runs every window of the shot
    /// (the whole render). The partial mode lasts until the segment ends;
    /// a gap or a size change inside it abandons the frames held (their windows lack the frames).
    std::optional<std::vector<int>> plan_partial(int shot_size, int first, int last) override;
    void push(FrameRecord frame) override;
    void end_segment(SegmentEnd why, const std::vector<int>& gap) override;
    std::vector<FrameRecord> pop_ready() override;
    std::vector<std::pair<std::string, std::string>> metadata() const override;

    /// Windows run so far (all segments), for the log and tests.
    int windows_run() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace depthbatch
