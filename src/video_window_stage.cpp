// The video model's windows (video_window_stage.h): the official infer_video_depth windowing, streamed.
#include "depthbatch/video_window_stage.h"

#include "depthbatch/error.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <tuple>

namespace depthbatch {

std::pair<double, double> fit_scale_shift(const std::vector<const std::vector<float>*>& prediction,
                                          const std::vector<const std::vector<float>*>& reference) {
    // The normal equations of min sum (s p + t - r)^2: [a00 a01; a01 a11] [s t]' = [b0 b1]'.
    double a00 = 0, a01 = 0, a11 = 0, b0 = 0, b1 = 0;
    for (size_t f = 0; f < prediction.size() && f < reference.size(); ++f) {
        const std::vector<float>& p = *prediction[f];
        const std::vector<float>& r = *reference[f];
        for (size_t i = 0; i < p.size() && i < r.size(); ++i) {
            const double x = p[i], y = r[i];
            a00 += x * x, a01 += x, a11 += 1, b0 += x * y, b1 += y;
        }
    }
    const double det = a00 * a11 - a01 * a01;
    if (det == 0) return {1.0, 0.0};
    return {(a11 * b0 - a01 * b1) / det, (-a01 * b0 + a00 * b1) / det};
}

double crossfade_weight(int i, int crossfade) { return crossfade > 1 ? static_cast<double>(i) / (crossfade - 1) : 1.0; }

struct VideoWindowStage::Impl {
    TemporalWindowing t;
    int per_forward;
    Forward forward;
    OnFailure on_failure;

    /// A frame of the segment not yet ready; its model input is shared with the windows that take it.
    struct Held {
        StageFrame frame;                       ///< its input moved out into `input`; its depth as far as aligned
        std::shared_ptr<ModelInput> input;
        bool done = false;
    };
    std::deque<Held> held;                      ///< in push order; held.front() is segment frame `first`
    int first = 0;                              ///< segment index of held.front()
    int n = 0;                                  ///< frames pushed in this segment
    int next_window = 0;                        ///< the segment's next window to run
    std::vector<std::shared_ptr<ModelInput>> prev_slots;   ///< the last window's inputs, as fed
    std::shared_ptr<ModelInput> last_input;     ///< the segment's last frame's (the tail padding)
    std::vector<std::vector<float>> reference;  ///< the aligned reference depths (A of them)
    std::vector<StageFrame> ready;
    SegmentEnd start = SegmentEnd::End;         ///< how the segment began (Gap: after failed frames)
    std::vector<int> start_gap;                 ///< those frames
    int windows = 0;

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
            for (int i = 0; i < A; ++i) reference.push_back(d[static_cast<size_t>(t.keyframes[static_cast<size_t>(i)])].data);
            for (int j = 0; j < t.window && j < n; ++j) depth_of(j, std::move(d[static_cast<size_t>(j)].data), d[static_cast<size_t>(j)]);
            return;
        }
        double s = 1, sh = 0;
        if (t.align == TemporalWindowing::Align::ScaleShift) {
            std::vector<const std::vector<float>*> pred, ref;
            for (int i = 0; i < A; ++i) pred.push_back(&d[static_cast<size_t>(i)].data), ref.push_back(&reference[static_cast<size_t>(i)]);
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
        for (int i = 1; i < A; ++i) reference.push_back(scaled(d[static_cast<size_t>(t.keyframes[static_cast<size_t>(i)])].data, s, sh));
    }

    /// Every frame held fails (a forward that failed): the segment ends there.
    void fail_all(const std::exception& e) {
        std::vector<int> frames;
        for (Held& h : held) {
            h.frame.failed = true;
            if (on_failure) on_failure(h.frame, e);
            frames.push_back(h.frame.frame);
            give_back_input(h);
            ready.push_back(std::move(h.frame));
        }
        reset_segment();
        start = SegmentEnd::Gap;   // what follows starts afresh, as after a gap of these frames
        start_gap = frames;
    }

    static void give_back_input(Held& h) {
        if (!h.input) return;
        h.frame.input = h.input.use_count() == 1 ? std::move(*h.input) : *h.input;   // a keyframe's stays shared
        h.input.reset();
    }

    /// Runs `count` windows from next_window; `last`: they end the segment (every frame becomes ready). `gap_after`:
    /// the failed frames a flush at a gap ends the segment at (the frames it finishes lack them).
    void run(int count, bool last, const std::vector<int>& gap_after) {
        std::vector<std::vector<const ModelInput*>> batch;
        std::vector<std::vector<std::shared_ptr<ModelInput>>> keep;   // every window's inputs, alive until the forward ends
        for (int m = 0; m < count; ++m) {
            const int k = next_window + m, b = k * t.stride();
            std::vector<std::shared_ptr<ModelInput>> slots;
            for (int j = 0; j < t.window; ++j)
                slots.push_back(k > 0 && j < t.overlap ? prev_slots[static_cast<size_t>(t.keyframes[static_cast<size_t>(j)])] : raw(b + j));
            prev_slots = slots;
            batch.emplace_back();
            for (const auto& s : slots) batch.back().push_back(s.get());
            keep.push_back(std::move(slots));
        }
        std::vector<std::vector<DepthImage>> out;
        const auto t0 = std::chrono::steady_clock::now();
        try {
            out = forward(batch);
            if (out.size() != batch.size()) throw RenderError("the video model returned " + std::to_string(out.size()) +
                                                                " windows for " + std::to_string(batch.size()));
            for (const auto& w : out)
                if (static_cast<int>(w.size()) != t.window)
                    throw RenderError("the video model returned " + std::to_string(w.size()) + " frames for a window of " +
                                      std::to_string(t.window));
        } catch (const std::exception& e) {
            fail_all(e);
            return;
        }
        // Each frame's share of the forward time: the windows' time over their frames (a frame in two windows gets two).
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                          (static_cast<double>(count) * t.window);
        for (int m = 0; m < count; ++m)
            for (int j = 0, b = (next_window + m) * t.stride(); j < t.window; ++j)
                if (b + j >= first && b + j < n) at(b + j).frame.infer_ms += ms;
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

VideoWindowStage::VideoWindowStage(const TemporalWindowing& windowing, int windows_per_forward, Forward forward, OnFailure on_failure)
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

void VideoWindowStage::push(StageFrame frame) {
    Impl& s = *impl_;
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
    const bool had_frames = s.n > 0;
    if (why == SegmentEnd::Stop) {   // every frame held lacks windows the stop never let run
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

std::vector<StageFrame> VideoWindowStage::pop_ready() { return std::move(impl_->ready); }

std::vector<std::pair<std::string, std::string>> VideoWindowStage::metadata() const {
    const TemporalWindowing& t = impl_->t;
    return {{"depthbatch/temporal", "video windows: " + std::to_string(t.window) + " frames, overlap " + std::to_string(t.overlap) +
                                        ", crossfade " + std::to_string(t.crossfade) + ", align " + align_name(t.align)}};
}

}  // namespace depthbatch
