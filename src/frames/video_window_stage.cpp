// The video model's windows (video_window_stage.h): the official infer_video_depth windowing, streamed.
#include "depthbatch/video_window_stage.h"

#include "depthbatch/error.h"
#include "depthbatch/log.h"
#include "depthbatch/passes.h"
#include "depthbatch/exr_metadata.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

namespace depthbatch {

namespace {

/// v[i] for an index counted by the windowing (a slot, a keyframe, a window's output): one checked conversion where
/// the windowing's int arithmetic meets a vector. An index outside `v` is a bug in this file (std::logic_error).
template <class Vector> auto& item(Vector& v, int i) {
    if (i < 0 || static_cast<size_t>(i) >= v.size())
        throw std::logic_error("video windows: index " + std::to_string(i) + " outside " + std::to_string(v.size()));
    return v[static_cast<size_t>(i)];
}

/// Window k's input positions given window k - 1's (`previous`, empty for k = 0), before any tail padding: slot
/// j < overlap of window k > 0 is previous[keyframes[j]], every other slot j is k * stride + j.
std::vector<int> next_window_inputs(const TemporalWindowing& t, int k, const std::vector<int>& previous) {
    std::vector<int> slots(static_cast<size_t>(t.window));
    for (int j = 0; j < t.window; ++j)
        item(slots, j) = k > 0 && j < t.overlap ? item(previous, item(t.keyframes, j)) : k * t.stride() + j;
    return slots;
}

/// The tail padding: a position past a segment of `n` frames is its last frame (n - 1).
void pad_tail(std::vector<int>& positions, int n) {
    for (int& p : positions) p = std::min(p, n - 1);
}

}  // namespace

double crossfade_weight(int i, int crossfade) { return crossfade > 1 ? static_cast<double>(i) / (crossfade - 1) : 1.0; }

int window_count(const TemporalWindowing& t, int n) { return n <= 0 ? 0 : (n + t.stride() - 1) / t.stride(); }

std::vector<int> window_inputs(const TemporalWindowing& t, int k, int n) {
    // Selecting slots commutes with the padding (a min): pad once, after the chain of selections.
    std::vector<int> slots;
    for (int w = 0; w <= k; ++w) slots = next_window_inputs(t, w, slots);
    pad_tail(slots, n);
    return slots;
}

int owning_window(const TemporalWindowing& t, int p) { return p < t.window ? 0 : (p - t.overlap) / t.stride(); }

std::vector<int> video_chunk_windows(const TemporalWindowing& t, int n, int first, int last, int context_windows) {
    if (!(0 <= first && first <= last && last < n))
        throw std::invalid_argument("plan_video_windows: frames " + std::to_string(first) + "-" + std::to_string(last) +
                                    " of a segment of " + std::to_string(n));
    const int count = window_count(t, n);
    int from = owning_window(t, first);
    int to = owning_window(t, last);
    // `last` cross-faded by the next window: its frames (to + 1) * S + A .. (to + 1) * S + O - 1.
    if (to + 1 < count && last >= (to + 1) * t.stride() + t.align_frames()) ++to;
    std::vector<int> windows;
    if (t.align == TemporalWindowing::Align::ScaleShift) {
        from = std::max(0, from - context_windows);
        if (from > 0) windows.push_back(0);
    }
    for (int k = from; k <= to; ++k) windows.push_back(k);
    return windows;
}

int video_chunk_size(const TemporalWindowing& t, int n, double overhead) {
    const int whole = window_count(t, n);
    for (int size = t.stride(); size < n; size += t.stride()) {
        const int chunks = (n + size - 1) / size;
        long total = 0;
        for (int i = 1; i <= chunks; ++i) {  // as chunk_frames cuts them
            const int a = static_cast<int>(static_cast<long long>(n) * (i - 1) / chunks);
            const int e = static_cast<int>(static_cast<long long>(n) * i / chunks) - 1;
            if (e >= a) total += static_cast<long>(video_chunk_windows(t, n, a, e).size());
        }
        if (static_cast<double>(total) <= overhead * whole) return size;
    }
    return n;
}

VideoWindowPlan plan_video_windows(const TemporalWindowing& t, int n, int first, int last, int context_windows) {
    VideoWindowPlan plan;
    plan.windows = video_chunk_windows(t, n, first, last, context_windows);
    std::vector<int> all;
    for (int k : plan.windows)
        for (int p : window_inputs(t, k, n)) all.push_back(p);
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    plan.positions = std::move(all);
    return plan;
}

// One machine for both renders. A segment has a plan: the windows it runs, ascending, and each one's input
// positions. A whole segment (the streaming render) lists window k when its first frame arrives, its inputs counted
// as if the segment went on (the plan is open); the segment's end closes the plan: its size is known, inputs past
// its last frame become that frame (the tail padding, pad_tail). A chunk (plan_partial) gets its plan, closed, over
// the shot's size before its first frame. Either way: frames are held by position, a window runs once its inputs
// have arrived (`per_forward` at a time, fewer only for a closed plan's last ones), an input is released after the
// last window that takes it, and a frame is passed on once no window left to run writes it.
struct VideoWindowStage::Impl {
    TemporalWindowing t;
    size_t per_forward = 1;
    Forward forward;
    OnFailure on_failure;

    /// A frame of the segment not yet ready; its model input is shared with the windows that take it.
    struct Held {
        FrameRecord frame;  ///< its input moved out into `input`; its depth as far as aligned
        std::shared_ptr<ModelInput> input;
    };

    // The segment's plan.
    bool chunk = false;                    ///< planned by plan_partial (positions are FrameRecord::shot_pos)
    bool open = true;                      ///< a whole segment whose end has not come: its size is not known
    int size = 0;                          ///< the segment's frames: pushed so far (whole) or the shot's (chunk)
    std::vector<int> windows;              ///< the plan's windows, ascending
    std::vector<std::vector<int>> inputs;  ///< each one's input positions (emptied once it ran)
    std::vector<int> last_listed;          ///< the last listed window's inputs, unpadded (an open plan grows)
    std::map<int, size_t> last_use;        ///< position -> the last plan index whose window takes it
    size_t next = 0;                       ///< plan index of the next window to run
    int last_run = -1;                     ///< the last window run (-1: none)

    std::map<int, Held> held;                        ///< frames by position
    std::map<int, std::shared_ptr<ModelInput>> fed;  ///< inputs by position, while a window left takes them
    std::vector<std::vector<float>> reference;       ///< the aligned reference depths (A of them)
    std::vector<FrameRecord> ready;
    SegmentEnd start = SegmentEnd::End;  ///< how the segment began (Gap: after failed frames)
    std::vector<int> start_gap;          ///< those frames
    std::vector<int> ending_gap;         ///< the failed frames a segment's end at a gap finishes frames without
    int windows_run = 0;

    void reset_segment() {
        chunk = false;
        open = true;
        size = 0;
        windows.clear();
        inputs.clear();
        last_listed.clear();
        last_use.clear();
        next = 0;
        last_run = -1;
        held.clear();
        fed.clear();
        reference.clear();
    }

    /// Adds window `k`'s input positions to the plan.
    void list(int k, std::vector<int> positions) {
        for (int p : positions) last_use[p] = windows.size();
        windows.push_back(k);
        inputs.push_back(std::move(positions));
    }

    /// An open plan: lists every window starting at or before position `p`.
    void list_through(int p) {
        for (int k = static_cast<int>(windows.size()); k * t.stride() <= p; ++k) {
            last_listed = next_window_inputs(t, k, last_listed);
            list(k, last_listed);
        }
    }

    /// Releases the inputs no window left to run takes. An open plan's last frame is always taken by a window left
    /// (the window whose last input it is hands it on as its last keyframe), so the tail padding has it.
    void release_inputs() {
        for (auto it = fed.begin(); it != fed.end();) {
            const auto use = last_use.find(it->first);
            if (use == last_use.end() || use->second < next) it = fed.erase(it);
            else ++it;
        }
    }

    /// The end of a whole segment: its size is known; the windows left take the last frame where it ends.
    void close() {
        open = false;
        last_use.clear();
        for (size_t q = next; q < windows.size(); ++q) {
            pad_tail(inputs[q], size);
            for (int p : inputs[q]) last_use[p] = q;
        }
        release_inputs();
    }

    void push(FrameRecord frame) {
        const int pos = chunk ? frame.shot_pos : size++;
        if (open) list_through(pos);
        Held h;
        h.input = std::make_shared<ModelInput>(std::move(frame.input));
        frame.input = ModelInput();
        h.frame = std::move(frame);
        if (last_use.count(pos)) fed[pos] = h.input;
        held.emplace(pos, std::move(h));
        run_ready_windows();
    }

    /// The forward over `batch` windows, checked: one output window per input window, each of t.window frames.
    /// Throws what the forward throws, or RenderError naming the counts.
    std::vector<std::vector<DepthImage>> checked_forward(const std::vector<std::vector<const ModelInput*>>& batch) {
        auto out = forward(batch);
        if (out.size() != batch.size())
            throw RenderError("the video model returned " + std::to_string(out.size()) + " windows for " +
                              std::to_string(batch.size()));
        for (const auto& w : out)
            if (static_cast<int>(w.size()) != t.window)
                throw RenderError("the video model returned " + std::to_string(w.size()) + " frames for a window of " +
                                  std::to_string(t.window));
        return out;
    }

    bool arrived(const std::vector<int>& positions) const {
        return std::all_of(positions.begin(), positions.end(), [&](int p) { return fed.count(p) > 0; });
    }

    /// Runs the windows whose inputs have arrived, `per_forward` a forward (fewer only for a closed plan's last
    /// ones), then passes on the frames no window left writes.
    void run_ready_windows() {
        while (next < windows.size()) {
            size_t end = next;
            while (end < windows.size() && end - next < per_forward && arrived(inputs[end])) ++end;
            if (end == next) break;
            if (end - next < per_forward && (open || end < windows.size())) break;
            if (!run_windows(end)) return;
        }
        pass_finished();
    }

    /// Runs plan indices next .. end - 1 in one forward; false when it failed (every frame held failed with it).
    bool run_windows(size_t end) {
        std::vector<std::vector<const ModelInput*>> batch;
        for (size_t q = next; q < end; ++q) {
            batch.emplace_back();
            for (int p : inputs[q]) batch.back().push_back(fed.at(p).get());
        }
        std::vector<std::vector<DepthImage>> out;
        const auto t0 = std::chrono::steady_clock::now();
        try {
            out = checked_forward(batch);
        } catch (const std::exception& e) {
            fail_all(e);
            return false;
        }
        // Each frame's share of the forward time: the windows' time over their frames (a frame in two windows gets
        // two shares).
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                          (static_cast<double>(batch.size()) * t.window);
        for (size_t q = next; q < end; ++q) {
            const int k = windows[q];
            for (int j = 0; j < t.window; ++j)
                if (auto it = held.find(k * t.stride() + j); it != held.end())
                    it->second.frame.result.times.infer_ms += ms;
            align(k, out[q - next]);
            inputs[q].clear();
        }
        windows_run += static_cast<int>(end - next);
        next = end;
        release_inputs();
        return true;
    }

    /// y = max(0, s x + t), elementwise.
    static std::vector<float> scaled(const std::vector<float>& x, double s, double sh) {
        std::vector<float> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = std::max(0.0f, static_cast<float>(s * x[i] + sh));
        return y;
    }

    /// Position `p`'s depth, when the segment holds it.
    void set_depth(int p, std::vector<float> values, const DepthImage& like) {
        auto it = held.find(p);
        if (it == held.end()) return;
        DepthImage& out = it->second.frame.depth;
        out.width = like.width, out.height = like.height;
        out.data = std::move(values);
    }

    /// Window k's outputs `d` into the frames held and the reference (the official alignment loop, one window).
    /// A window after the one run last (chained) is fitted on the A reference frames and cross-fades into the frames
    /// it shares with it; a chunk's first window after a jump (its first context window) is fitted on the shot's
    /// first frame alone (slot 0, against window 0's output there: the one reference every window shares) and
    /// writes the frames it would cross-fade.
    void align(int k, std::vector<DepthImage>& d) {
        const int b = k * t.stride(), A = t.align_frames(), C = t.crossfade;
        if (k == 0) {
            reference.clear();
            for (int i = 0; i < A; ++i) reference.push_back(item(d, item(t.keyframes, i)).data);
            for (int j = 0; j < t.window; ++j) set_depth(j, std::move(item(d, j).data), item(d, j));
            last_run = 0;
            return;
        }
        const bool chained = last_run == k - 1;
        double s = 1, sh = 0;
        if (t.align == TemporalWindowing::Align::ScaleShift && !reference.empty()) {
            const int fit = std::min(chained ? A : 1, static_cast<int>(reference.size()));
            std::vector<const std::vector<float>*> pred, ref;
            for (int i = 0; i < fit; ++i) pred.push_back(&item(d, i).data), ref.push_back(&item(reference, i));
            std::tie(s, sh) = fit_scale_shift(pred, ref);
        }
        for (int i = 0; i < C; ++i) {
            auto it = held.find(b + A + i);
            if (it == held.end()) continue;
            std::vector<float> post = scaled(item(d, A + i).data, s, sh);
            std::vector<float>& pre = it->second.frame.depth.data;
            if (!chained || pre.size() != post.size()) {  // a context frame the previous window never made
                set_depth(b + A + i, std::move(post), item(d, A + i));
                continue;
            }
            const double w = crossfade_weight(i, C);
            for (size_t p = 0; p < pre.size(); ++p) pre[p] = static_cast<float>(pre[p] * (1 - w) + post[p] * w);
        }
        for (int j = t.overlap; j < t.window; ++j) set_depth(b + j, scaled(item(d, j).data, s, sh), item(d, j));
        if (reference.empty()) reference.push_back(d.front().data);  // a metric chunk's first window: unused
        reference.resize(1);
        for (int i = 1; i < A; ++i) reference.push_back(scaled(item(d, item(t.keyframes, i)).data, s, sh));
        last_run = k;
    }

    /// Passes on the frames no window left to run writes: those before the next window's first cross-faded frame
    /// (window 0 writes from its first frame on), every frame once a closed plan has run. A whole segment's frames
    /// carry the gap it started after and the one its end was flushed at (their windows were tail-padded or
    /// started where an uninterrupted render had frames).
    void pass_finished() {
        int bound = std::numeric_limits<int>::max();
        if (next < windows.size() || open) {
            const int k = next < windows.size() ? windows[next] : static_cast<int>(windows.size());
            bound = k == 0 ? 0 : k * t.stride() + t.align_frames();
        }
        while (!held.empty() && held.begin()->first < bound) {
            Held& h = held.begin()->second;
            if (!chunk) {
                if (start == SegmentEnd::Gap) h.frame.lacked = start_gap;
                h.frame.lacked.insert(h.frame.lacked.end(), ending_gap.begin(), ending_gap.end());
                std::sort(h.frame.lacked.begin(), h.frame.lacked.end());
                h.frame.lacked.erase(std::unique(h.frame.lacked.begin(), h.frame.lacked.end()), h.frame.lacked.end());
            }
            pass_on(h);
            held.erase(held.begin());
        }
    }

    /// The frame leaves the stage with its input back (a copy where a window left still takes it).
    void pass_on(Held& h) {
        if (h.input) h.frame.input = h.input.use_count() == 1 ? std::move(*h.input) : *h.input;
        h.input.reset();
        ready.push_back(std::move(h.frame));
    }

    /// A frame a failed forward takes down: its record carries the error (the exception's exit code when it has one,
    /// else exit 5, naming the frame) to the writer and the report; then the caller's on_failure, if any.
    void fail_frame(FrameRecord& f, const std::exception& e) {
        const auto* err = dynamic_cast<const Error*>(&e);
        f.fail(Error(err ? err->code() : ExitCode::Render, "frame " + std::to_string(f.frame) + ": " + e.what()));
        if (on_failure) on_failure(f, e);
    }

    /// Every frame held leaves: failed with `error`, or (null) abandoned (never published: its windows were cut).
    void drop_held(const std::exception* error) {
        for (auto& [pos, h] : held) {
            if (error) fail_frame(h.frame, *error);
            else h.frame.abandoned = true;
            pass_on(h);
        }
        held.clear();
    }

    /// A forward failed: every frame held fails and the segment ends there; what follows starts afresh, as after a
    /// gap of these frames.
    void fail_all(const std::exception& e) {
        std::vector<int> frames;
        for (const auto& [pos, h] : held) frames.push_back(h.frame.frame);
        drop_held(&e);
        reset_segment();
        start = SegmentEnd::Gap;
        start_gap = frames;
    }

    void end_segment(SegmentEnd why, const std::vector<int>& gap) {
        const bool had_frames = size > 0 && !chunk;
        if (chunk) {
            // The plan's frames all arrived: its windows ran as they did. Anything else cut them.
            if (why == SegmentEnd::End) run_ready_windows();
            if (why == SegmentEnd::SizeChange) {
                // A whole render restarts its windows at a size change; the chunk's plan (windows counted from the
                // shot's first frame, at one size) cannot: the frames it held fail, saying so.
                const RenderError e(
                    "not written: the model input size changes inside the video windows that make it "
                    "(the plate's data window changes size; a chunk runs only its own windows, planned "
                    "at one size): render this shot whole, without --chunk or --frames");
                drop_held(&e);
            } else {
                drop_held(nullptr);  // what is still held (a stop, a gap) lacks its windows
            }
        } else if (why == SegmentEnd::Stop) {
            drop_held(nullptr);  // every frame held lacks windows the stop never let run
        } else if (size > 0) {
            ending_gap = why == SegmentEnd::Gap ? gap : std::vector<int>();
            close();
            run_ready_windows();
            ending_gap.clear();
        }
        reset_segment();
        // What the next segment starts after: consecutive failed frames add up to one gap.
        if (why == SegmentEnd::Gap) {
            if (had_frames || start != SegmentEnd::Gap) start_gap.clear();
            start_gap.insert(start_gap.end(), gap.begin(), gap.end());
            start = SegmentEnd::Gap;
        } else {
            start_gap.clear();
            start = why;
        }
    }
};

VideoWindowStage::VideoWindowStage(const TemporalWindowing& windowing, int windows_per_forward, Forward forward,
                                   OnFailure on_failure)
    : impl_(std::make_unique<Impl>()) {
    ModelContract check;
    check.frames = windowing.window;
    check.temporal = windowing;
    try {
        validate_model_contract(check, "video windows");
    } catch (const ModelError& e) {
        throw ConfigError(e.what());
    }
    impl_->t = windowing;
    impl_->per_forward = static_cast<size_t>(std::max(1, windows_per_forward));
    impl_->forward = std::move(forward);
    impl_->on_failure = std::move(on_failure);
}

VideoWindowStage::~VideoWindowStage() = default;

int VideoWindowStage::context_frames() const { return impl_->t.window - 1; }
int VideoWindowStage::max_held() const {
    return impl_->t.window + static_cast<int>(impl_->per_forward - 1) * impl_->t.stride();
}
int VideoWindowStage::windows_run() const { return impl_->windows_run; }

std::optional<std::vector<int>> VideoWindowStage::plan_partial(int shot_size, int first, int last) {
    Impl& s = *impl_;
    VideoWindowPlan plan = plan_video_windows(s.t, shot_size, first, last);
    // Every window of the shot: the whole render (a gap there marks frames and goes on, docs/video-models.md).
    if ((first == 0 && last == shot_size - 1) || static_cast<int>(plan.windows.size()) == window_count(s.t, shot_size))
        return std::nullopt;
    s.reset_segment();
    s.chunk = true;
    s.open = false;
    s.size = shot_size;
    for (int k : plan.windows) s.list(k, window_inputs(s.t, k, shot_size));
    return plan.positions;
}

void VideoWindowStage::push(FrameRecord frame) { impl_->push(std::move(frame)); }

void VideoWindowStage::end_segment(SegmentEnd why, const std::vector<int>& gap) { impl_->end_segment(why, gap); }

std::vector<FrameRecord> VideoWindowStage::pop_ready() { return std::move(impl_->ready); }

std::vector<std::pair<std::string, std::string>> VideoWindowStage::metadata() const {
    const TemporalWindowing& t = impl_->t;
    return {{exr_meta::kTemporal, "video windows: " + std::to_string(t.window) + " frames, overlap " +
                                      std::to_string(t.overlap) + ", crossfade " + std::to_string(t.crossfade) +
                                      ", align " + align_name(t.align)}};
}

void check_video_model_job(const ModelContract& contract, const std::string& model_path, const VideoModelJob& job) {
    const TemporalWindowing& t = contract.temporal;
    const std::string model = model_path + " is a video model (input.frames " + std::to_string(contract.frames) + ")";
    log_info("video model: windows of ", t.window, " frames every ", t.stride(), " (overlap ", t.overlap,
             ", crossfade ", t.crossfade, ", align ", align_name(t.align), "), ", std::max(1, job.batch),
             " window(s) a forward");
    if (job.tiles)
        throw ConfigError("model.tiles: " + model +
                          ": its windows see whole frames; tiles are for single-frame models "
                          "(remove model.tiles)");
    if (job.sequence_statistics)
        throw ConfigError("depth.normalize sequence: " + model +
                          ": the sequence statistics sample single frames, which a "
                          "video model does not see alone; its windows are aligned across the shot already: use "
                          "depth.normalize raw (or fixed)");
    if (contract.reference_focal_px > 0)
        throw ConfigError(
            model + ": output.reference_focal_px (focal-dependent metric depth) is not supported for video models");
    for (const std::string& p : job.passes)
        if (!is_geometric_pass(p))
            throw ConfigError("output.passes: " + p + ": " + model +
                              ": extra model outputs are written for single-frame "
                              "models only (P and N work: they are computed from the depth)");
}

}  // namespace depthbatch
