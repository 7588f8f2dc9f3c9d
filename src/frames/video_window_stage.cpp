// The video model's windows (video_window_stage.h): the official infer_video_depth windowing, streamed.
#include "depthbatch/video_window_stage.h"

#include "depthbatch/error.h"
#include "depthbatch/log.h"
#include "depthbatch/passes.h"
#include "depthbatch/exr_metadata.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <stdexcept>
#include <tuple>

namespace depthbatch {

double crossfade_weight(int i, int crossfade) { return crossfade > 1 ? static_cast<double>(i) / (crossfade - 1) : 1.0; }

int window_count(const TemporalWindowing& t, int n) { return n <= 0 ? 0 : (n + t.stride() - 1) / t.stride(); }

std::vector<int> window_inputs(const TemporalWindowing& t, int k, int n) {
    std::vector<int> slots, prev;
    for (int w = 0; w <= k; ++w) {
        slots.assign(static_cast<size_t>(t.window), 0);
        for (int j = 0; j < t.window; ++j)
            slots[static_cast<size_t>(j)] = w > 0 && j < t.overlap
                                                ? prev[static_cast<size_t>(t.keyframes[static_cast<size_t>(j)])]
                                                : std::min(w * t.stride() + j, n - 1);
        prev = slots;
    }
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

struct VideoWindowStage::Impl {
    TemporalWindowing t;
    int per_forward;
    Forward forward;
    OnFailure on_failure;

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

    /// A frame of the segment not yet ready; its model input is shared with the windows that take it.
    struct Held {
        FrameRecord frame;  ///< its input moved out into `input`; its depth as far as aligned
        std::shared_ptr<ModelInput> input;
        bool done = false;
    };
    std::deque<Held> held;                                ///< in push order; held.front() is segment frame `first`
    int first = 0;                                        ///< segment index of held.front()
    int n = 0;                                            ///< frames pushed in this segment
    int next_window = 0;                                  ///< the segment's next window to run
    std::vector<std::shared_ptr<ModelInput>> prev_slots;  ///< the last window's inputs, as fed
    std::shared_ptr<ModelInput> last_input;               ///< the segment's last frame's (the tail padding)
    std::vector<std::vector<float>> reference;            ///< the aligned reference depths (A of them)
    std::vector<FrameRecord> ready;
    SegmentEnd start = SegmentEnd::End;  ///< how the segment began (Gap: after failed frames)
    std::vector<int> start_gap;          ///< those frames
    int windows = 0;

    // Partial mode (plan_partial): frames by shot position, the planned windows, each position's input while a
    // planned window still needs it.
    bool partial = false;
    int shot_n = 0;
    std::vector<int> plan_windows;                           ///< ascending
    std::vector<std::vector<int>> plan_inputs;               ///< window_inputs of each
    size_t next_plan = 0;                                    ///< index into plan_windows of the next window to run
    int last_run = -1;                                       ///< the last window run (-1: none)
    std::map<int, Held> part_held;                           ///< by shot position
    std::map<int, std::shared_ptr<ModelInput>> part_inputs;  ///< by shot position
    std::map<int, size_t> last_use;                          ///< position -> the last plan index whose window takes it

    Held& at(int v) { return held[static_cast<size_t>(v - first)]; }
    std::shared_ptr<ModelInput> raw(int v) { return v < n ? at(v).input : last_input; }

    void reset_segment() {
        held.clear();
        first = n = next_window = 0;
        prev_slots.clear();
        last_input.reset();
        reference.clear();
    }

    /// y = max(0, s x + t), elementwise.
    static std::vector<float> scaled(const std::vector<float>& x, double s, double sh) {
        std::vector<float> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = std::max(0.0f, static_cast<float>(s * x[i] + sh));
        return y;
    }

    /// Window k's outputs `d` into the frames' depth and the reference (the official alignment loop, one window).
    void align(int k, std::vector<DepthImage>& d) {
        const int b = k * t.stride(), A = t.align_frames(), C = t.crossfade;
        const auto depth_of = [&](int v, std::vector<float> values, const DepthImage& like) {
            DepthImage& out = at(v).frame.depth;
            out.width = like.width, out.height = like.height;
            out.data = std::move(values);
        };
        if (k == 0) {
            reference.clear();
            for (int i = 0; i < A; ++i)
                reference.push_back(d[static_cast<size_t>(t.keyframes[static_cast<size_t>(i)])].data);
            for (int j = 0; j < t.window && j < n; ++j)
                depth_of(j, std::move(d[static_cast<size_t>(j)].data), d[static_cast<size_t>(j)]);
            return;
        }
        double s = 1, sh = 0;
        if (t.align == TemporalWindowing::Align::ScaleShift) {
            std::vector<const std::vector<float>*> pred, ref;
            for (int i = 0; i < A; ++i)
                pred.push_back(&d[static_cast<size_t>(i)].data), ref.push_back(&reference[static_cast<size_t>(i)]);
            std::tie(s, sh) = fit_scale_shift(pred, ref);
        }
        for (int i = 0; i < C; ++i) {
            const int v = b + A + i;
            if (v >= n) break;
            const std::vector<float> post = scaled(d[static_cast<size_t>(A + i)].data, s, sh);
            std::vector<float>& pre = at(v).frame.depth.data;
            const double w = crossfade_weight(i, C);
            for (size_t p = 0; p < pre.size() && p < post.size(); ++p)
                pre[p] = static_cast<float>(pre[p] * (1 - w) + post[p] * w);
        }
        for (int j = t.overlap; j < t.window && b + j < n; ++j)
            depth_of(b + j, scaled(d[static_cast<size_t>(j)].data, s, sh), d[static_cast<size_t>(j)]);
        reference.resize(1);
        for (int i = 1; i < A; ++i)
            reference.push_back(scaled(d[static_cast<size_t>(t.keyframes[static_cast<size_t>(i)])].data, s, sh));
    }

    /// Partial mode: window k's outputs into the frames held (by position) and the reference.
    void align_partial(int k, std::vector<DepthImage>& d) {
        const int b = k * t.stride(), A = t.align_frames(), C = t.crossfade;
        const auto set = [&](int v, std::vector<float> values, const DepthImage& like) {
            auto it = part_held.find(v);
            if (it == part_held.end()) return;
            DepthImage& out = it->second.frame.depth;
            out.width = like.width, out.height = like.height;
            out.data = std::move(values);
        };
        if (k == 0) {
            reference.clear();
            for (int i = 0; i < A; ++i)
                reference.push_back(d[static_cast<size_t>(t.keyframes[static_cast<size_t>(i)])].data);
            for (int j = 0; j < t.window && j < shot_n; ++j)
                set(j, d[static_cast<size_t>(j)].data, d[static_cast<size_t>(j)]);
            last_run = 0;
            return;
        }
        const bool chained = last_run == k - 1;
        double s = 1, sh = 0;
        if (t.align == TemporalWindowing::Align::ScaleShift && !reference.empty()) {
            // Chained: as the streaming stage. After a jump (the first context window): its output for the shot's
            // first frame (slot 0) against window 0's, the one reference every window shares.
            const int fit = chained ? A : 1;
            std::vector<const std::vector<float>*> pred, ref;
            for (int i = 0; i < fit && i < static_cast<int>(reference.size()); ++i)
                pred.push_back(&d[static_cast<size_t>(i)].data), ref.push_back(&reference[static_cast<size_t>(i)]);
            std::tie(s, sh) = fit_scale_shift(pred, ref);
        }
        for (int i = 0; i < C; ++i) {
            const int v = b + A + i;
            if (v >= shot_n) break;
            auto it = part_held.find(v);
            if (it == part_held.end()) continue;
            std::vector<float> post = scaled(d[static_cast<size_t>(A + i)].data, s, sh);
            std::vector<float>& pre = it->second.frame.depth.data;
            if (!chained || pre.size() != post.size()) {  // a context frame the previous window never made
                set(v, std::move(post), d[static_cast<size_t>(A + i)]);
                continue;
            }
            const double w = crossfade_weight(i, C);
            for (size_t p = 0; p < pre.size(); ++p) pre[p] = static_cast<float>(pre[p] * (1 - w) + post[p] * w);
        }
        for (int j = t.overlap; j < t.window && b + j < shot_n; ++j)
            set(b + j, scaled(d[static_cast<size_t>(j)].data, s, sh), d[static_cast<size_t>(j)]);
        if (reference.empty()) reference.push_back(d[0].data);  // metric: unused
        reference.resize(1);
        for (int i = 1; i < A; ++i)
            reference.push_back(scaled(d[static_cast<size_t>(t.keyframes[static_cast<size_t>(i)])].data, s, sh));
        last_run = k;
    }

    /// Partial mode: runs the planned windows whose inputs have all arrived (`flush`: every one left, a missing
    /// input replaced by the nearest earlier one held), then passes on the frames no later planned window touches.
    void run_partial(bool flush) {
        while (next_plan < plan_windows.size()) {
            std::vector<size_t> batch_idx;
            for (size_t q = next_plan; q < plan_windows.size() && static_cast<int>(batch_idx.size()) < per_forward;
                 ++q) {
                const std::vector<int>& in = plan_inputs[q];
                const bool have = std::all_of(in.begin(), in.end(), [&](int p) { return part_inputs.count(p) > 0; });
                if (!have && !flush) break;
                batch_idx.push_back(q);
            }
            if (batch_idx.empty()) break;
            // As the streaming path: `per_forward` windows a forward, fewer only for the plan's last ones.
            if (!flush && static_cast<int>(batch_idx.size()) < per_forward &&
                batch_idx.back() + 1 < plan_windows.size())
                break;
            std::vector<std::vector<const ModelInput*>> batch;
            std::vector<std::shared_ptr<ModelInput>> keep;
            for (size_t q : batch_idx) {
                batch.emplace_back();
                for (int p : plan_inputs[q]) {
                    auto it = part_inputs.upper_bound(p);
                    if (it == part_inputs.begin())
                        throw RenderError("video windows: no input for a window (position " + std::to_string(p) + ")");
                    --it;  // p itself, or (flushing) the nearest earlier one
                    keep.push_back(it->second);
                    batch.back().push_back(it->second.get());
                }
            }
            std::vector<std::vector<DepthImage>> out;
            const auto t0 = std::chrono::steady_clock::now();
            try {
                out = checked_forward(batch);
            } catch (const std::exception& e) {
                fail_partial(e);
                return;
            }
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                              (static_cast<double>(batch.size()) * t.window);
            for (size_t m = 0; m < batch_idx.size(); ++m) {
                const int k = plan_windows[batch_idx[m]];
                for (int j = 0; j < t.window; ++j)
                    if (auto it = part_held.find(k * t.stride() + j); it != part_held.end())
                        it->second.frame.result.times.infer_ms += ms;
                align_partial(k, out[m]);
            }
            windows += static_cast<int>(batch_idx.size());
            next_plan = batch_idx.back() + 1;
            for (auto it = part_inputs.begin(); it != part_inputs.end();) {
                const auto u = last_use.find(it->first);
                if (u == last_use.end() || u->second < next_plan) it = part_inputs.erase(it);
                else ++it;
            }
        }
        // Frames before the next planned window's first cross-faded frame are final.
        // (window 0 writes from its first frame on, a later window from its first cross-faded one).
        const int bound = next_plan >= plan_windows.size() ? shot_n
                          : plan_windows[next_plan] == 0   ? 0
                                                           : plan_windows[next_plan] * t.stride() + t.align_frames();
        while (!part_held.empty() && part_held.begin()->first < bound) {
            Held& h = part_held.begin()->second;
            give_back_input(h);
            ready.push_back(std::move(h.frame));
            part_held.erase(part_held.begin());
        }
    }

    /// A frame a failed forward takes down: its record carries the error (the exception's exit code when it has one,
    /// else exit 5, naming the frame) to the writer and the report; then the caller's on_failure, if any.
    void fail_frame(FrameRecord& f, const std::exception& e) {
        const auto* err = dynamic_cast<const Error*>(&e);
        f.fail(Error(err ? err->code() : ExitCode::Render, "frame " + std::to_string(f.frame) + ": " + e.what()));
        if (on_failure) on_failure(f, e);
    }

    /// Partial mode ends before its windows ran (a failed forward, a gap, a size change, a stop): every frame held
    /// is abandoned (never published: its windows lack frames), or failed with `error`.
    void abandon_partial(const std::exception* error) {
        for (auto& [pos, h] : part_held) {
            if (error) {
                fail_frame(h.frame, *error);
            } else {
                h.frame.abandoned = true;
            }
            give_back_input(h);
            ready.push_back(std::move(h.frame));
        }
        part_held.clear();
        part_inputs.clear();
        last_use.clear();
        plan_windows.clear();
        plan_inputs.clear();
        reference.clear();
        partial = false;
    }
    void fail_partial(const std::exception& e) { abandon_partial(&e); }

    /// Every frame held fails (a forward that failed): the segment ends there.
    void fail_all(const std::exception& e) {
        std::vector<int> frames;
        for (Held& h : held) {
            fail_frame(h.frame, e);
            frames.push_back(h.frame.frame);
            give_back_input(h);
            ready.push_back(std::move(h.frame));
        }
        reset_segment();
        start = SegmentEnd::Gap;  // what follows starts afresh, as after a gap of these frames
        start_gap = frames;
    }

    static void give_back_input(Held& h) {
        if (!h.input) return;
        h.frame.input = h.input.use_count() == 1 ? std::move(*h.input) : *h.input;  // a keyframe's stays shared
        h.input.reset();
    }

    /// Runs `count` windows from next_window; `last`: they end the segment (every frame becomes ready). `gap_after`:
    /// the failed frames a flush at a gap ends the segment at (the frames it finishes lack them).
    void run(int count, bool last, const std::vector<int>& gap_after) {
        std::vector<std::vector<const ModelInput*>> batch;
        std::vector<std::vector<std::shared_ptr<ModelInput>>>
            keep;  // every window's inputs, alive until the forward ends
        for (int m = 0; m < count; ++m) {
            const int k = next_window + m, b = k * t.stride();
            std::vector<std::shared_ptr<ModelInput>> slots;
            for (int j = 0; j < t.window; ++j)
                slots.push_back(k > 0 && j < t.overlap
                                    ? prev_slots[static_cast<size_t>(t.keyframes[static_cast<size_t>(j)])]
                                    : raw(b + j));
            prev_slots = slots;
            batch.emplace_back();
            for (const auto& s : slots) batch.back().push_back(s.get());
            keep.push_back(std::move(slots));
        }
        std::vector<std::vector<DepthImage>> out;
        const auto t0 = std::chrono::steady_clock::now();
        try {
            out = checked_forward(batch);
        } catch (const std::exception& e) {
            fail_all(e);
            return;
        }
        // Each frame's share of the forward time: the windows' time over their frames (a frame in two windows gets two).
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                          (static_cast<double>(count) * t.window);
        for (int m = 0; m < count; ++m)
            for (int j = 0, b = (next_window + m) * t.stride(); j < t.window; ++j)
                if (b + j >= first && b + j < n) at(b + j).frame.result.times.infer_ms += ms;
        for (int m = 0; m < count; ++m) align(next_window + m, out[static_cast<size_t>(m)]);
        windows += count;
        next_window += count;
        const int bound = last ? n : (next_window - 1) * t.stride() + t.window - t.crossfade;
        for (int v = first; v < bound && v < n; ++v) at(v).done = true;
        while (!held.empty() && held.front().done) {
            Held& h = held.front();
            if (start == SegmentEnd::Gap) h.frame.lacked = start_gap;
            // Finished by a flush at a gap: its windows were tail-padded where an uninterrupted render had frames.
            h.frame.lacked.insert(h.frame.lacked.end(), gap_after.begin(), gap_after.end());
            std::sort(h.frame.lacked.begin(), h.frame.lacked.end());
            h.frame.lacked.erase(std::unique(h.frame.lacked.begin(), h.frame.lacked.end()), h.frame.lacked.end());
            give_back_input(h);
            ready.push_back(std::move(h.frame));
            held.pop_front();
            ++first;
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
    impl_->per_forward = std::max(1, windows_per_forward);
    impl_->forward = std::move(forward);
    impl_->on_failure = std::move(on_failure);
}

VideoWindowStage::~VideoWindowStage() = default;

int VideoWindowStage::context_frames() const { return impl_->t.window - 1; }
int VideoWindowStage::max_held() const { return impl_->t.window + (impl_->per_forward - 1) * impl_->t.stride(); }
int VideoWindowStage::windows_run() const { return impl_->windows; }

std::optional<std::vector<int>> VideoWindowStage::plan_partial(int shot_size, int first, int last) {
    Impl& s = *impl_;
    VideoWindowPlan plan = plan_video_windows(s.t, shot_size, first, last);
    // Every window of the shot: the streaming path (a gap there marks frames and goes on, docs/video-models.md "Video models").
    if ((first == 0 && last == shot_size - 1) || static_cast<int>(plan.windows.size()) == window_count(s.t, shot_size))
        return std::nullopt;
    s.partial = true;
    s.shot_n = shot_size;
    s.plan_windows = plan.windows;
    s.plan_inputs.clear();
    s.last_use.clear();
    for (size_t q = 0; q < plan.windows.size(); ++q) {
        s.plan_inputs.push_back(window_inputs(s.t, plan.windows[q], shot_size));
        for (int p : s.plan_inputs.back()) s.last_use[p] = q;
    }
    s.next_plan = 0;
    s.last_run = -1;
    s.reference.clear();
    return plan.positions;
}

void VideoWindowStage::push(FrameRecord frame) {
    Impl& s = *impl_;
    if (s.partial) {
        Impl::Held h;
        h.input = std::make_shared<ModelInput>(std::move(frame.input));
        frame.input = ModelInput();
        const int pos = frame.shot_pos;
        h.frame = std::move(frame);
        if (s.last_use.count(pos)) s.part_inputs[pos] = h.input;
        s.part_held.emplace(pos, std::move(h));
        s.run_partial(false);
        return;
    }
    Impl::Held h;
    h.input = std::make_shared<ModelInput>(std::move(frame.input));
    frame.input = ModelInput();
    h.frame = std::move(frame);
    s.last_input = h.input;
    s.held.push_back(std::move(h));
    ++s.n;
    // Run windows as soon as `per_forward` of them have all their frames.
    while ((s.next_window + s.per_forward - 1) * s.t.stride() + s.t.window <= s.n) s.run(s.per_forward, false, {});
}

void VideoWindowStage::end_segment(SegmentEnd why, const std::vector<int>& gap) {
    Impl& s = *impl_;
    if (s.partial) {
        // The plan's frames all arrived: its windows ran as they did. Anything else cut them.
        if (why == SegmentEnd::End) s.run_partial(false);
        if (why == SegmentEnd::SizeChange) {
            // A whole render restarts its windows at a size change; the chunk's plan (windows counted from the
            // shot's first frame, at one size) cannot: the frames it held fail, saying so.
            const RenderError e(
                "not written: the model input size changes inside the video windows that make it "
                "(the plate's data window changes size; a chunk runs only its own windows, planned "
                "at one size): render this shot whole, without --chunk or --frames");
            s.abandon_partial(&e);
        } else {
            s.abandon_partial(nullptr);  // what is still held (a stop, a gap) lacks its windows
        }
        s.reset_segment();
        if (why == SegmentEnd::Gap) {
            s.start = SegmentEnd::Gap;
            s.start_gap = gap;
        } else {
            s.start_gap.clear();
            s.start = why;
        }
        return;
    }
    const bool had_frames = s.n > 0;
    if (why == SegmentEnd::Stop) {  // every frame held lacks windows the stop never let run
        for (Impl::Held& h : s.held) {
            h.frame.abandoned = true;
            Impl::give_back_input(h);
            s.ready.push_back(std::move(h.frame));
        }
        s.reset_segment();
    } else {
        // The segment's remaining windows: every b_k < n, the last ones tail-padded.
        while (s.n > 0 && s.next_window * s.t.stride() < s.n) {
            const int remaining = (s.n - s.next_window * s.t.stride() + s.t.stride() - 1) / s.t.stride();
            const int count = std::min(remaining, s.per_forward);
            s.run(count, count == remaining, why == SegmentEnd::Gap ? gap : std::vector<int>());
        }
        s.reset_segment();
    }
    // What the next segment starts after: consecutive failed frames add up to one gap.
    if (why == SegmentEnd::Gap) {
        if (had_frames || s.start != SegmentEnd::Gap) s.start_gap.clear();
        s.start_gap.insert(s.start_gap.end(), gap.begin(), gap.end());
        s.start = SegmentEnd::Gap;
    } else {
        s.start_gap.clear();
        s.start = why;
    }
}

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
