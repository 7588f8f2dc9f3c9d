// depthbatch — sequence stages: the work on a shot that needs more than one frame at a time, behind one interface.
//
// The frame pipeline (run_job.h) reads, colours and reformats frames in parallel, then hands them, in shot order, to
// one serial step that runs a StageChain: per-batch inference (a single-frame model: frames of one size share a
// forward pass), the video model's windows, the centred stabilizer (temporal_stabilizer.h). The driver never knows
// which stages it runs (llama.cpp's sampler chain is the model for this shape): it pushes frames, ends segments and
// takes the frames that are ready, then restores and writes them in parallel; at the end of its frames it flushes the
// chain (flush: the last segment ends, every frame still held comes out).
//
// A stage owns the frames it holds: the frame's one record (frame_record.h) moves into the chain and out of it, and a
// stage reads and writes its typed fields at model resolution (`input`, `depth`, `tiles`), marks it (`lacked`,
// `abandoned`) or fails it (FrameRecord::fail: the error travels with the record to the writer and the report). Frames
// arrive in order; each frame pushed comes out exactly once, in push order. A stage may hold frames until the frames
// after them have arrived (at most max_held(), counted in the job's frames in flight). A segment is a run of frames a stage may combine: it
// ends at a gap (a frame that failed), a change of the model input size (decided once, by the chain), a stop, or
// the end of the job's frames. context_frames() is what a chunk needs on each side of the frames it writes for
// output identical to a whole render (the driver renders them as warm-up: inferred, not written).
#pragma once

#include "depthbatch/frame_record.h"

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

/// Why a segment ends.
enum class SegmentEnd {
    Gap,         ///< a frame failed (its number is passed along)
    SizeChange,  ///< the next frame has another model input size: nothing is fitted across it, in any render alike
    Stop,        ///< a stop request ended the frames early: what lacks context must be abandoned
    End,         ///< the job's frames (with their warm-up) are over
};

/// A stage of the chain. Not thread-safe: the chain runs in one serial step.
class SequenceStage {
public:
    virtual ~SequenceStage() = default;
    virtual std::string name() const = 0;
    /// Frames of context needed on each side of a written frame (0: frames are independent).
    virtual int context_frames() const { return 0; }
    /// True when a frame's result depends on every frame before it in its segment (a video model's windows, aligned
    /// to the segment's first frame): a partial render then starts at the shot's first frame (warm-up), and
    /// context_frames() counts the frames needed after.
    virtual bool needs_segment_start() const { return false; }
    /// The most frames this stage holds at once.
    virtual int max_held() const { return 0; }
    /// A render that writes only shot positions first .. last (of `shot_size`), before any push: the shot positions
    /// it must be fed (ascending; frames then arrive with those FrameRecord::shot_pos) for output equal to (or, as the
    /// stage documents, within a bound of) a whole render, with a context that does not grow with `first`; nullopt:
    /// the driver plans from context_frames() / needs_segment_start().
    virtual std::optional<std::vector<int>> plan_partial(int shot_size, int first, int last) {
        (void)shot_size, (void)first, (void)last;
        return std::nullopt;
    }
    /// The next frame of the segment (never a failed one: the chain passes those around).
    virtual void push(FrameRecord frame) = 0;
    /// The segment ends: every frame held is finished with what there is (or abandoned, for Stop) and becomes
    /// ready; the next push starts a new segment. `gap`: the frames that failed (SegmentEnd::Gap).
    virtual void end_segment(SegmentEnd why, const std::vector<int>& gap) = 0;
    /// The frames finished since the last call, in push order.
    virtual std::vector<FrameRecord> pop_ready() = 0;
    /// What the stage adds to every EXR's metadata (and so to what describes the render), as key/value pairs.
    virtual std::vector<std::pair<std::string, std::string>> metadata() const { return {}; }
};

/// The stages of a job, run in order: a frame leaves stage i and enters stage i + 1; a failed frame passes the
/// later stages and ends their segments. The chain also decides, once, where a size change ends a segment.
class StageChain {
public:
    void add(std::unique_ptr<SequenceStage> stage);
    bool empty() const { return stages_.empty(); }
    /// The next frame in shot order (a failed one too: it becomes a gap).
    void push(FrameRecord frame);
    /// End the segment everywhere (SegmentEnd::Stop / End from the driver; gaps and size changes are the chain's).
    void end_segment(SegmentEnd why);
    /// Frames that have passed every stage since the last call (failed ones included), each exactly once.
    std::vector<FrameRecord> pop_ready();
    /// The end of the driver's frames: end_segment(`why`: SegmentEnd::End, or Stop when a stop cut them short), then
    /// every frame still inside the chain, finished (or abandoned) and in push order, with those not yet popped.
    std::vector<FrameRecord> flush(SegmentEnd why);
    /// Sums over the stages.
    int context_frames() const;
    /// A partial render of shot positions first .. last (0 <= first <= last < shot_size): the positions to push, from
    /// the stage that plans its own context (needs_segment_start: a video model's windows), asked for first - C ..
    /// last + C (clipped to the shot), C the summed context_frames() of the stages after it (the stabilizer's
    /// radius). Frames it gives out beyond those then pass the stages after it, which see first - C .. last + C as a
    /// whole render's frames around first .. last. nullopt when no stage plans its context, when two do, when a stage
    /// with context comes before it, or when the planner runs the whole shot: the driver plans from context_frames().
    std::optional<std::vector<int>> plan_partial(int shot_size, int first, int last);
    /// Any stage's needs_segment_start().
    bool needs_segment_start() const;
    /// The names of the stages that combine frames (context_frames() > 0 or needs_segment_start()), in order, for
    /// the log ("video windows and stabilizer"; "" when none does).
    std::string temporal_names() const;
    int max_held() const;
    std::vector<std::pair<std::string, std::string>> metadata() const;
    /// Frames at which the model input size changed (each ended a segment), for the log.
    const std::vector<int>& size_changes() const { return size_changes_; }

private:
    void feed(size_t stage, FrameRecord frame);
    void drain(size_t stage);
    void end_from(size_t stage, SegmentEnd why, const std::vector<int>& gap);
    std::vector<std::unique_ptr<SequenceStage>> stages_;
    std::vector<FrameRecord> out_;
    bool open_ = false;
    int width_ = 0, height_ = 0;
    std::vector<int> size_changes_;
    /// Stop while a stop's end of segment runs through the stages: a frame a stage abandons then (feed) ends the
    /// later stages' segment as the stop does; else as a gap.
    SegmentEnd ending_ = SegmentEnd::End;
    // plan_partial: frames outside positions pass_first_ .. pass_last_ leave the chain at stage pass_from_ (no stage
    // when it is kNoPass).
    static constexpr size_t kNoPass = static_cast<size_t>(-1);
    size_t pass_from_ = kNoPass;
    int pass_first_ = 0, pass_last_ = 0;
};

/// Per-batch inference: frames of one size are collected `batch` at a time and handed to the model. Synchronous
/// (`Forward`: fills each frame's depth, or marks it failed, before it returns) or `lookahead` batches ahead
/// (`Launch`: starts the batch's forward and returns the function that completes it — waits for the model and
/// fills each frame's depth or marks it failed; it must not throw): up to `lookahead` launched batches stay held
/// while the next is collected, so the model's thread has the next batch before the last one is waited for
/// (depth_model.h: submit). A segment's end runs what is collected and completes every batch in flight. Holds at
/// most batch - 1 + lookahead x batch frames.
class BatchInferenceStage : public SequenceStage {
public:
    using Forward = std::function<void(std::vector<FrameRecord*>& frames)>;
    using Launch = std::function<std::function<void()>(std::vector<FrameRecord*>& frames)>;
    /// Synchronous: lookahead 0.
    BatchInferenceStage(int batch, Forward forward);
    BatchInferenceStage(int batch, int lookahead, Launch launch);
    ~BatchInferenceStage() override;
    std::string name() const override { return "inference"; }
    int max_held() const override { return batch_ - 1 + lookahead_ * batch_; }
    void push(FrameRecord frame) override;
    void end_segment(SegmentEnd why, const std::vector<int>& gap) override;
    std::vector<FrameRecord> pop_ready() override;

private:
    struct InFlight;
    void run();
    void complete_oldest();
    int batch_, lookahead_;
    Launch launch_;
    std::vector<FrameRecord> pending_, ready_;
    std::deque<std::unique_ptr<InFlight>> in_flight_;
};

/// The centred stabilizer (temporal_stabilizer.h, radius R = depth.stabilize_radius) with what it knows of the
/// shot: `shot_size` frames, so that a frame's window in an uninterrupted whole render is known. A frame whose
/// window is shorter than that was cut: by a gap (its `lacked` lists the frames) or by a stop (abandoned).
class StabilizerStage : public SequenceStage {
public:
    StabilizerStage(int radius, int shot_size);
    ~StabilizerStage() override;
    std::string name() const override { return "stabilizer"; }
    int context_frames() const override;
    int max_held() const override;
    void push(FrameRecord frame) override;
    void end_segment(SegmentEnd why, const std::vector<int>& gap) override;
    std::vector<FrameRecord> pop_ready() override;
    std::vector<std::pair<std::string, std::string>> metadata() const override;

private:
    struct Impl;
    void take(bool flushing, SegmentEnd why, const std::vector<int>& gap);
    std::unique_ptr<Impl> impl_;
};

}  // namespace depthbatch
