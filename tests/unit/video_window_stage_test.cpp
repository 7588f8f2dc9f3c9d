// Unit tests for include/depthbatch/video_window_stage.h with a fake forward: which inputs each window gets (the
// first `overlap` replaced by the previous window's keyframes, the tail padded with the last frame), the least
// squares alignment and its clamp at 0, the cross-fade weights, metric models not rescaled, segments (a gap, a
// stop), and the frames held.
#include "depthbatch/video_window_stage.h"

#include "depthbatch/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

using namespace depthbatch;

namespace {

/// The official VDA windowing (video_depth.py): 32 frames, overlap 10, keyframes [0,12,24..31], crossfade 8.
TemporalWindowing vda(TemporalWindowing::Align align = TemporalWindowing::Align::ScaleShift) {
    TemporalWindowing t;
    t.window = 32, t.overlap = 10, t.crossfade = 8, t.align = align;
    t.keyframes = {0, 12, 24, 25, 26, 27, 28, 29, 30, 31};
    return t;
}

/// Segment position p as a frame of 2x1 px whose input holds p in every value (so a window's inputs name frames).
FrameRecord frame_at(int p, bool failed = false) {
    FrameRecord f(p, 1001 + p, p);
    if (failed) f.fail(InputError("frame " + std::to_string(f.frame) + ": unreadable"));
    f.input.width = 2, f.input.height = 1;
    f.input.chw.assign(6, static_cast<float>(p));
    return f;
}

DepthImage depth2(float a, float b) {
    DepthImage d;
    d.width = 2, d.height = 1;
    d.data = {a, b};
    return d;
}

/// A fake model: records each window's inputs (as frame positions) and returns out(window, slot, frame) per frame.
struct Fake {
    std::vector<std::vector<int>> windows;  ///< every window run, as the frame positions of its inputs
    std::vector<size_t> forwards;           ///< windows per forward call
    std::function<DepthImage(int window, int slot, int frame)> out;
    VideoWindowStage::Forward forward() {
        return [this](const std::vector<std::vector<const ModelInput*>>& batch) {
            forwards.push_back(batch.size());
            std::vector<std::vector<DepthImage>> result;
            for (const auto& w : batch) {
                const int k = static_cast<int>(windows.size());
                windows.emplace_back();
                result.emplace_back();
                for (size_t j = 0; j < w.size(); ++j) {
                    const int p = static_cast<int>(w[j]->chw.at(0));
                    windows.back().push_back(p);
                    result.back().push_back(out(k, static_cast<int>(j), p));
                }
            }
            return result;
        };
    }
};

/// Push positions 0 .. n-1 (failed where `failed` says), end with `why`; every frame out, in order, and the most held.
std::vector<FrameRecord> run(SequenceStage& stage, int n, SegmentEnd why = SegmentEnd::End, int* most_held = nullptr,
                             const std::function<bool(int)>& failed = {}) {
    StageChain chain;
    std::unique_ptr<SequenceStage> owned(&stage);
    chain.add(std::move(owned));
    std::vector<FrameRecord> out;
    int held = 0, most = 0;
    for (int p = 0; p < n; ++p) {
        chain.push(frame_at(p, failed && failed(p)));
        ++held;
        for (auto& f : chain.pop_ready()) out.push_back(std::move(f)), --held;
        most = std::max(most, held);
    }
    chain.end_segment(why);
    for (auto& f : chain.pop_ready()) out.push_back(std::move(f));
    if (most_held) *most_held = most;
    return out;
}

/// run() on a stage the chain owns.
std::vector<FrameRecord> run_new(const TemporalWindowing& t, Fake& fake, int n, int per_forward = 1,
                                 SegmentEnd why = SegmentEnd::End, int* most_held = nullptr,
                                 const std::function<bool(int)>& failed = {}) {
    return run(*new VideoWindowStage(t, per_forward, fake.forward()), n, why, most_held, failed);
}

std::vector<int> range(int from, int to) {  // from .. to inclusive
    std::vector<int> v;
    for (int i = from; i <= to; ++i) v.push_back(i);
    return v;
}
std::vector<int> cat(std::vector<int> a, const std::vector<int>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST(VideoWindowStage, LaterWindowsTakeThePreviousKeyframesAndTheTailIsPaddedWithTheLastFrame) {
    Fake fake;
    fake.out = [](int, int, int p) { return depth2(static_cast<float>(p + 1), static_cast<float>(p + 2)); };
    int most = 0;
    const auto out = run_new(vda(), fake, 70, 1, SegmentEnd::End, &most);
    // 70 frames: windows start at 0, 22, 44, 66 (every start < 70), as the official range(0, 70, 22).
    ASSERT_EQ(fake.windows.size(), 4u);
    EXPECT_EQ(fake.windows[0], range(0, 31));
    // Inputs 0..9: the previous window's inputs at [0,12,24..31]: frame 0, frame 12, frames 24..31.
    EXPECT_EQ(fake.windows[1], cat({0, 12}, range(24, 53)));
    // Window 2: input 0 is window 1's input 0 (frame 0 again), input 1 its input 12 (frame 34); then 46..69 and
    // frame 69 (the last) for 70..75.
    EXPECT_EQ(fake.windows[2], cat(cat({0, 34}, range(46, 69)), std::vector<int>(6, 69)));
    // Window 3: frame 0, window 2's input 12 (frame 56), its inputs 24..31 (68, 69 and padding), then padding.
    EXPECT_EQ(fake.windows[3], cat(cat({0, 56}, {68, 69}), std::vector<int>(28, 69)));
    // Every frame out once, in order.
    ASSERT_EQ(out.size(), 70u);
    for (int p = 0; p < 70; ++p) EXPECT_EQ(out[static_cast<size_t>(p)].frame, 1001 + p);
    EXPECT_EQ(out[5].input.chw.at(0), 5.0f) << "each frame gets its model input back (the stabilizer reads it)";
    EXPECT_EQ(out[0].input.chw.size(), 6u) << "the first frame's input, shared as a keyframe, is given back too";
    VideoWindowStage probe(vda(), 1, fake.forward());
    EXPECT_EQ(probe.max_held(), 32);
    EXPECT_EQ(probe.context_frames(), 31);
    EXPECT_TRUE(probe.needs_segment_start());
    StageChain names;
    EXPECT_EQ(names.temporal_names(), "");
    names.add(std::make_unique<VideoWindowStage>(vda(), 1, fake.forward()));
    names.add(std::make_unique<StabilizerStage>(2, 70));
    EXPECT_EQ(names.temporal_names(), "video windows and stabilizer");
    EXPECT_TRUE(names.needs_segment_start());
    EXPECT_EQ(names.context_frames(), 31 + 2);
    EXPECT_LE(most, probe.max_held());
    EXPECT_EQ(most, 31) << "the first window waits for its 32 frames (the 32nd runs it)";
}

TEST(VideoWindowStage, ShortShotsAndBatchedWindows) {
    // 25 frames: two windows (starts 0 and 22 < 25); window 0 padded with frame 24 from 25 on.
    Fake fake;
    fake.out = [](int, int, int p) { return depth2(1.0f + static_cast<float>(p), 2.0f); };
    auto out = run_new(vda(), fake, 25);
    ASSERT_EQ(fake.windows.size(), 2u);
    EXPECT_EQ(fake.windows[0], cat(range(0, 24), std::vector<int>(7, 24)));
    EXPECT_EQ(fake.windows[1], cat({0, 12}, std::vector<int>(30, 24)));
    ASSERT_EQ(out.size(), 25u);
    // One frame: one window of its copies.
    Fake one;
    one.out = fake.out;
    out = run_new(vda(), one, 1);
    ASSERT_EQ(one.windows.size(), 1u);
    EXPECT_EQ(one.windows[0], std::vector<int>(32, 0));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].depth.data, (std::vector<float>{1.0f, 2.0f}));
    // Three windows a forward: the same windows (their inputs do not depend on outputs), fewer forwards.
    Fake batched;
    batched.out = fake.out;
    int most = 0;
    out = run_new(vda(), batched, 70, 3, SegmentEnd::End, &most);
    Fake single;
    single.out = fake.out;
    const auto ref = run_new(vda(), single, 70);
    EXPECT_EQ(batched.windows, single.windows);
    EXPECT_EQ(batched.forwards, (std::vector<size_t>{3, 1}));
    ASSERT_EQ(out.size(), ref.size());
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].depth.data, ref[i].depth.data) << i;
    EXPECT_LE(most, VideoWindowStage(vda(), 3, batched.forward()).max_held());
    EXPECT_EQ(VideoWindowStage(vda(), 3, batched.forward()).max_held(), 32 + 2 * 22);
}

TEST(VideoWindowStage, LaterWindowsAreFittedByScaleAndShiftAndClampedAtZero) {
    // Window 0 gives frame p the depth (p, p + 2). Window 1 is that depth at 1/2 and + 25 (s = 2, t = -50 fit it back),
    // except frame 40: (10, 30), which aligns to (2*10 - 50 = -30 -> 0, 10).
    Fake fake;
    fake.out = [](int k, int, int p) {
        if (k == 0) return depth2(static_cast<float>(p), static_cast<float>(p + 2));
        if (p == 40) return depth2(10, 30);
        return depth2(p / 2.0f + 25, (p + 2) / 2.0f + 25);
    };
    const auto out = run_new(vda(), fake, 44);
    ASSERT_EQ(out.size(), 44u);
    ASSERT_EQ(fake.windows.size(), 2u);
    for (int p : {0, 5, 23, 24, 31, 32, 39, 41, 43}) {  // 24..31 cross-fade two windows that agree after alignment
        EXPECT_NEAR(out[static_cast<size_t>(p)].depth.data[0], p, 1e-4) << p;
        EXPECT_NEAR(out[static_cast<size_t>(p)].depth.data[1], p + 2, 1e-4) << p;
    }
    EXPECT_EQ(out[40].depth.data[0], 0.0f) << "negative after alignment: clamped to 0, as the official code does";
    EXPECT_NEAR(out[40].depth.data[1], 10.0f, 1e-4);
    EXPECT_EQ(out[40].depth.width, 2);
    // The fit itself: exact on exact data, {1, 0} for a singular system.
    const std::vector<float> p1{25, 26}, p2{27, 28}, r1{0, 2}, r2{4, 6};
    const auto [s, t] = fit_scale_shift({&p1, &p2}, {&r1, &r2});
    EXPECT_NEAR(s, 2.0, 1e-12);
    EXPECT_NEAR(t, -50.0, 1e-10);
    const std::vector<float> flat{3, 3};
    EXPECT_EQ(fit_scale_shift({&flat}, {&r1}), (std::pair<double, double>{1.0, 0.0}));
}

TEST(VideoWindowStage, TheEightOverlappingFramesAreCrossFadedLinearly) {
    // Window 0 gives every frame 0; window 1 gives 70 except on its two align inputs, which equal the reference
    // (frame 0 and 12: 0), so s = 1, t = 0 ... a singular fit (all x equal) gives s = 1, t = 0 too.
    Fake fake;
    fake.out = [](int k, int slot, int) {
        if (k == 0 || slot < 2) return depth2(0, 0);
        return depth2(70, 70);
    };
    const auto out = run_new(vda(), fake, 40);
    ASSERT_EQ(out.size(), 40u);
    for (int p = 0; p < 24; ++p) EXPECT_EQ(out[static_cast<size_t>(p)].depth.data[0], 0.0f) << p;
    // Frames 24..31: (1 - w) * 0 + w * 70, w = i / 7 (get_interpolate_frames: 0, 1/7, ..., 1).
    for (int i = 0; i < 8; ++i) {
        EXPECT_NEAR(out[static_cast<size_t>(24 + i)].depth.data[0], 10.0f * i, 1e-4) << "frame position " << 24 + i;
        EXPECT_NEAR(crossfade_weight(i, 8), i / 7.0, 1e-15);
    }
    for (int p = 32; p < 40; ++p) EXPECT_EQ(out[static_cast<size_t>(p)].depth.data[0], 70.0f) << p;
}

TEST(VideoWindowStage, MetricModelsAreNotRescaled) {
    // The window-1 outputs of the alignment test, with align none: taken as they are (no fit), cross-faded.
    Fake fake;
    fake.out = [](int k, int, int p) {
        if (k == 0) return depth2(static_cast<float>(p), static_cast<float>(p + 2));
        return depth2(p / 2.0f + 25, (p + 2) / 2.0f + 25);
    };
    const auto out = run_new(vda(TemporalWindowing::Align::None), fake, 44);
    ASSERT_EQ(out.size(), 44u);
    EXPECT_EQ(out[40].depth.data, (std::vector<float>{45.0f, 46.0f})) << "window 1's own values";
    EXPECT_EQ(out[10].depth.data, (std::vector<float>{10.0f, 12.0f}));
    // Frame 27 (i = 3): 4/7 of window 0's 27 and 3/7 of window 1's 38.5.
    EXPECT_NEAR(out[27].depth.data[0], 27.0 * 4 / 7 + 38.5 * 3 / 7, 1e-4);
}

TEST(VideoWindowStage, AGapEndsTheSegmentAndTheFramesAroundItLackIt) {
    Fake fake;
    fake.out = [](int, int, int p) { return depth2(static_cast<float>(p), 1.0f); };
    // 60 frames, position 40 fails: segment 0..39 (flushed: windows 0, 22; their tail padded with 39), then 41..59.
    const auto out = run_new(vda(), fake, 60, 1, SegmentEnd::End, nullptr, [](int p) { return p == 40; });
    ASSERT_EQ(out.size(), 60u);
    for (int p = 0; p < 60; ++p) EXPECT_EQ(out[static_cast<size_t>(p)].frame, 1001 + p);
    EXPECT_TRUE(out[40].failed());
    ASSERT_EQ(fake.windows.size(), 3u) << "0..39: starts 0 and 22; 41..59: start 0";
    EXPECT_EQ(fake.windows[2], cat(range(41, 59), std::vector<int>(13, 59))) << "the new segment starts afresh";
    std::map<int, std::vector<int>> lacked;
    for (const auto& f : out)
        if (!f.lacked.empty()) lacked[f.frame] = f.lacked;
    // Window 0 finished 0..23 before the gap (whole); 24..39 were finished by the padded flush; 41..59 start after it.
    for (int p = 0; p < 24; ++p) EXPECT_EQ(lacked.count(1001 + p), 0u) << p;
    for (int p = 24; p < 60; ++p)
        if (p != 40) EXPECT_EQ(lacked[1001 + p], (std::vector<int>{1041})) << p;
}

TEST(VideoWindowStage, ASizeChangeStartsTheWindowsAfreshWithoutMarkingFrames) {
    Fake fake;
    fake.out = [](int, int, int p) { return depth2(static_cast<float>(p), 1.0f); };
    StageChain chain;
    chain.add(std::make_unique<VideoWindowStage>(vda(), 1, fake.forward()));
    std::vector<FrameRecord> out;
    for (int p = 0; p < 50; ++p) {
        FrameRecord f = frame_at(p);
        if (p >= 30) f.input.width = 1, f.input.chw.resize(3);  // the size changes at position 30
        chain.push(std::move(f));
        for (auto& g : chain.pop_ready()) out.push_back(std::move(g));
    }
    chain.end_segment(SegmentEnd::End);
    for (auto& g : chain.pop_ready()) out.push_back(std::move(g));
    ASSERT_EQ(out.size(), 50u);
    EXPECT_EQ(chain.size_changes(), (std::vector<int>{1031}));
    ASSERT_EQ(fake.windows.size(), 3u) << "0..29: starts 0 and 22; 30..49: start 0";
    EXPECT_EQ(fake.windows[2], cat(range(30, 49), std::vector<int>(12, 49)));
    for (const auto& f : out) EXPECT_TRUE(f.lacked.empty()) << f.frame << ": any render ends its windows there alike";
}

TEST(VideoWindowStage, AStopAbandonsEveryFrameHeld) {
    Fake fake;
    fake.out = [](int, int, int p) { return depth2(static_cast<float>(p), 1.0f); };
    const auto out = run_new(vda(), fake, 40, 1, SegmentEnd::Stop);
    ASSERT_EQ(out.size(), 40u);
    EXPECT_EQ(fake.windows.size(), 1u) << "no padded window runs for a stop";
    for (int p = 0; p < 40; ++p) EXPECT_EQ(out[static_cast<size_t>(p)].abandoned, p >= 24) << p;
}

TEST(VideoWindowStage, AFailedForwardFailsTheFramesItHeld) {
    Fake fake;
    fake.out = [](int k, int, int p) -> DepthImage {
        if (k == 1) throw ModelError("injected");
        return depth2(static_cast<float>(p), 1.0f);
    };
    std::vector<int> told;
    auto* stage = new VideoWindowStage(vda(), 1, fake.forward(), [&told](FrameRecord& f, const std::exception& e) {
        EXPECT_STREQ(e.what(), "injected");
        told.push_back(f.frame);
    });
    const auto out = run(*stage, 60);
    ASSERT_EQ(out.size(), 60u);
    for (int p = 0; p < 60; ++p) EXPECT_EQ(out[static_cast<size_t>(p)].failed(), p >= 24 && p < 54) << p;
    EXPECT_EQ(told.size(), 30u);
}

TEST(VideoWindowStage, AnInvalidWindowingIsAConfigError) {
    TemporalWindowing t = vda();
    t.keyframes = {0, 12, 24, 25, 26, 27, 28, 29, 30, 30};
    EXPECT_THROW(VideoWindowStage(t, 1, {}), ConfigError);
    t = vda();
    t.crossfade = 10;
    EXPECT_THROW(VideoWindowStage(t, 1, {}), ConfigError);
}

// ---- Partial renders (issue 34): a window's inputs from the windowing alone, and a chunk's windows ------------

namespace {

/// A forward whose output depends only on the window's inputs (as a real model's): frame p at slot j of a window
/// whose slot 1 is frame q gives scale(q) * truth(p) + shift(q) (an affine change from window to window, which the
/// scale/shift chain undoes) plus j / 1000 (so a frame's depth differs between the windows that see it); truth(p)
/// spans about 1 .. 4 in every frame (its two pixels), as a real frame spans its scene's depths.
VideoWindowStage::Forward input_only_forward(int* windows = nullptr) {
    return [windows](const std::vector<std::vector<const ModelInput*>>& batch) {
        std::vector<std::vector<DepthImage>> result;
        for (const auto& w : batch) {
            if (windows) ++*windows;
            const int q = static_cast<int>(w.at(1)->chw.at(0));
            const float scale = 1.0f + 0.05f * static_cast<float>(q % 7), shift = 0.2f * static_cast<float>(q % 5);
            result.emplace_back();
            for (size_t j = 0; j < w.size(); ++j) {
                const float p = w[j]->chw.at(0);
                const float e = static_cast<float>(j) / 1000;
                result.back().push_back(
                    depth2(scale * (1 + 0.1f * std::sin(p)) + shift + e, scale * (4 + 0.1f * std::cos(p)) + shift + e));
            }
        }
        return result;
    };
}

/// Depth by position of a whole render of n frames (the streaming path).
std::vector<std::vector<float>> whole_render(const TemporalWindowing& t, int n) {
    std::vector<std::vector<float>> depth;
    for (FrameRecord& f : run(*new VideoWindowStage(t, 1, input_only_forward()), n)) depth.push_back(f.depth.data);
    return depth;
}

/// Push frame_at(p) for each of `positions` through `chain`, then end the segment: every frame out, in the order
/// they came out.
std::vector<FrameRecord> push_all(StageChain& chain, const std::vector<int>& positions) {
    std::vector<FrameRecord> out;
    for (int p : positions) {
        chain.push(frame_at(p));
        for (auto& f : chain.pop_ready()) out.push_back(std::move(f));
    }
    chain.end_segment(SegmentEnd::End);
    for (auto& f : chain.pop_ready()) out.push_back(std::move(f));
    return out;
}

/// A partial render of positions first .. last: the frames it writes, by position; the windows it ran; what it fed.
std::map<int, std::vector<float>> partial_render(const TemporalWindowing& t, int n, int first, int last, int* windows,
                                                 std::vector<int>* fed = nullptr) {
    StageChain chain;
    auto stage = std::make_unique<VideoWindowStage>(t, 2, input_only_forward(windows));
    chain.add(std::move(stage));
    const auto positions = chain.plan_partial(n, first, last);
    std::vector<int> all = positions ? *positions : range(0, n - 1);
    if (fed) *fed = all;
    const std::vector<FrameRecord> out = push_all(chain, all);
    std::map<int, std::vector<float>> written;
    EXPECT_EQ(out.size(), all.size()) << "every frame pushed comes out once";
    for (size_t i = 0; i < out.size(); ++i) {
        EXPECT_EQ(out[i].shot_pos, all[i]) << "in push order";
        EXPECT_FALSE(out[i].abandoned);
        if (out[i].shot_pos >= first && out[i].shot_pos <= last) written[out[i].shot_pos] = out[i].depth.data;
    }
    return written;
}

}  // namespace

TEST(VideoWindowPlan, WindowInputsAreWhatTheStreamingStageFeeds) {
    for (int n : {1, 5, 25, 32, 33, 70, 200, 223}) {
        Fake fake;
        fake.out = [](int, int, int p) { return depth2(static_cast<float>(p), 0); };
        run_new(vda(), fake, n);
        ASSERT_EQ(static_cast<int>(fake.windows.size()), window_count(vda(), n)) << n << " frames";
        for (int k = 0; k < window_count(vda(), n); ++k)
            EXPECT_EQ(window_inputs(vda(), k, n), fake.windows[static_cast<size_t>(k)])
                << "window " << k << " of " << n << " frames";
    }
    // Listed without the windows before: window 40 of 1000 frames is [0, b_39 + 12, b_40 + 2 .. b_40 + 31].
    EXPECT_EQ(window_inputs(vda(), 40, 1000), cat({0, 39 * 22 + 12}, range(40 * 22 + 2, 40 * 22 + 31)));
    EXPECT_EQ(owning_window(vda(), 31), 0);
    EXPECT_EQ(owning_window(vda(), 32), 1);
    EXPECT_EQ(owning_window(vda(), 53), 1);
    EXPECT_EQ(owning_window(vda(), 54), 2);
}

TEST(VideoWindowPlan, AChunksWindowsAreBoundedWhereverItSitsInTheShot) {
    const TemporalWindowing metric = vda(TemporalWindowing::Align::None), relative = vda();
    // Frames 100-149 of 1000: owned by windows 4 (100 = 4*22+12) .. 6 (149 = 6*22+17); 149 is not cross-faded by
    // window 7 (7*22+2 = 156 on): windows 4-6. 50 frames at 900-949: windows 40 (900 = 40*22+20) .. 42, and 43,
    // which cross-fades 948-949: at most one window more than the frames' own, wherever the chunk sits.
    VideoWindowPlan p = plan_video_windows(metric, 1000, 100, 149);
    EXPECT_EQ(p.windows, (std::vector<int>{4, 5, 6}));
    EXPECT_EQ(plan_video_windows(metric, 1000, 900, 949).windows, (std::vector<int>{40, 41, 42, 43}));
    // Frame 160 is cross-faded by window 7 (its frames 156-163): window 7 is run too.
    EXPECT_EQ(plan_video_windows(metric, 1000, 100, 160).windows, (std::vector<int>{4, 5, 6, 7}));
    // Relative: window 0 (the anchor) and 8 windows before the chunk's first.
    EXPECT_EQ(plan_video_windows(relative, 1000, 900, 949).windows,
              (std::vector<int>{0, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43}));
    EXPECT_EQ(plan_video_windows(relative, 1000, 100, 149).windows, range(0, 6));
    EXPECT_TRUE(std::binary_search(p.positions.begin(), p.positions.end(), 0))
        << "the shot's first frame sits in every window";
    EXPECT_THROW(plan_video_windows(metric, 100, 50, 100), std::invalid_argument);
}

TEST(VideoWindowPlan, AMetricChunkEqualsTheWholeRenderExactly) {
    const TemporalWindowing t = vda(TemporalWindowing::Align::None);
    const int n = 300;
    const auto whole = whole_render(t, n);
    for (auto [first, last] :
         std::vector<std::pair<int, int>>{{100, 149}, {150, 199}, {250, 299}, {60, 61}, {287, 287}}) {
        int windows = 0;
        std::vector<int> fed;
        const auto part = partial_render(t, n, first, last, &windows, &fed);
        ASSERT_EQ(static_cast<int>(part.size()), last - first + 1);
        for (const auto& [pos, d] : part) EXPECT_EQ(d, whole[static_cast<size_t>(pos)]) << "frame " << pos;
        EXPECT_EQ(windows, static_cast<int>(plan_video_windows(t, n, first, last).windows.size()));
        EXPECT_LE(windows, (last - first) / 22 + 3) << "its own windows and one more";
        EXPECT_LT(fed.size(), static_cast<size_t>(last - first + 1 + 2 * 32)) << "frames " << first << "-" << last;
    }
}

TEST(VideoWindowPlan, ARelativeChunkIsAnchoredOnTheShotsFirstFrame) {
    const TemporalWindowing t = vda();
    const int n = 400;
    const auto whole = whole_render(t, n);
    float lo = whole[0][0], hi = lo;
    for (const auto& d : whole)
        for (float v : d) lo = std::min(lo, v), hi = std::max(hi, v);
    int windows = 0;
    const auto part = partial_render(t, n, 300, 349, &windows);
    EXPECT_EQ(windows, 1 + 8 + 3) << "window 0, 8 context windows, the chunk's 3";
    double worst = 0;
    for (const auto& [pos, d] : part)
        for (size_t i = 0; i < d.size(); ++i)
            worst = std::max(worst, std::abs(double(d[i]) - whole[static_cast<size_t>(pos)][i]));
    EXPECT_LT(worst / (hi - lo), 0.005) << "within 0.5% of the depth span";
    // With the stabilizer after it (radius 2): the video stage plans frames 298-351, not the shot from its start.
    StageChain two;
    two.add(std::make_unique<VideoWindowStage>(t, 1, input_only_forward()));
    two.add(std::make_unique<StabilizerStage>(2, n));
    const auto two_positions = two.plan_partial(n, 300, 349);
    ASSERT_TRUE(two_positions);
    EXPECT_EQ(*two_positions, plan_video_windows(t, n, 298, 351).positions);
    // A stabilizer before a video stage is not planned by it: the driver plans from the context.
    StageChain reversed;
    reversed.add(std::make_unique<StabilizerStage>(2, n));
    reversed.add(std::make_unique<VideoWindowStage>(t, 1, input_only_forward()));
    EXPECT_FALSE(reversed.plan_partial(n, 300, 349));
    // A chunk inside the first windows runs windows 0 .. its own, no more: frames 40-60 need windows 0-2 (60 is
    // cross-faded by window 2), fed frames 0-75; its frames equal the whole render's exactly (the same chain).
    int early_windows = 0;
    std::vector<int> fed;
    const auto early = partial_render(t, n, 40, 60, &early_windows, &fed);
    EXPECT_EQ(early_windows, 3);
    EXPECT_EQ(fed, range(0, 75));
    for (const auto& [pos, d] : early) EXPECT_EQ(d, whole[static_cast<size_t>(pos)]) << pos;
    const auto first_frames = partial_render(t, n, 0, 5, &early_windows);
    for (const auto& [pos, d] : first_frames)
        EXPECT_EQ(d, whole[static_cast<size_t>(pos)]) << "window 0's frame " << pos;
    // The whole shot: the streaming path.
    StageChain all;
    all.add(std::make_unique<VideoWindowStage>(t, 1, input_only_forward()));
    EXPECT_FALSE(all.plan_partial(n, 0, n - 1));
}

TEST(VideoWindowPlan, AChunksWindowsAreBatchedAndItHoldsNoMoreThanTheStreamingPath) {
    const TemporalWindowing t = vda(TemporalWindowing::Align::None);
    std::vector<size_t> per_call;
    VideoWindowStage::Forward inner = input_only_forward();
    StageChain chain;
    auto stage = std::make_unique<VideoWindowStage>(t, 2, [&](const std::vector<std::vector<const ModelInput*>>& b) {
        per_call.push_back(b.size());
        return inner(b);
    });
    const int most_allowed = stage->max_held();
    chain.add(std::move(stage));
    const auto positions = chain.plan_partial(1000, 500, 699);
    ASSERT_TRUE(positions);
    int held = 0, most = 0;
    for (int p : *positions) {
        chain.push(frame_at(p));
        ++held;
        held -= static_cast<int>(chain.pop_ready().size());
        most = std::max(most, held);
    }
    chain.end_segment(SegmentEnd::End);
    EXPECT_EQ(held, static_cast<int>(chain.pop_ready().size()));
    EXPECT_LE(most, most_allowed) << "no more frames held than max_held()";
    const size_t windows = plan_video_windows(t, 1000, 500, 699).windows.size();
    EXPECT_EQ(per_call.size(), (windows + 1) / 2) << "two windows a forward";
}

TEST(VideoWindowPlan, AStopInAChunkAbandonsWhatItHeld) {
    StageChain chain;
    chain.add(std::make_unique<VideoWindowStage>(vda(TemporalWindowing::Align::None), 1, input_only_forward()));
    const auto positions = chain.plan_partial(300, 100, 149);
    ASSERT_TRUE(positions);
    std::vector<FrameRecord> out;
    for (size_t i = 0; i < positions->size() / 2; ++i) chain.push(frame_at((*positions)[i]));
    chain.end_segment(SegmentEnd::Stop);
    for (auto& f : chain.pop_ready()) out.push_back(std::move(f));
    ASSERT_EQ(out.size(), positions->size() / 2);
    int abandoned = 0;
    for (const FrameRecord& f : out) abandoned += f.abandoned;
    EXPECT_GT(abandoned, 0);
    // What came out finished is final: the chunk's frames among them equal the whole render's.
    const auto whole = whole_render(vda(TemporalWindowing::Align::None), 300);
    for (const FrameRecord& f : out)
        if (!f.abandoned && f.shot_pos >= 100)
            EXPECT_EQ(f.depth.data, whole[static_cast<size_t>(f.shot_pos)]) << f.shot_pos;
}

// A video model with depth.stabilize (issue 34: such a chunk rendered from the shot's first frame): the chain asks the
// video stage for the chunk's frames and the stabilizer's radius on each side, and the frames the video stage gives out
// beyond those pass the stabilizer. Every written frame equals the whole render's bit for bit; what is fed is bounded
// wherever the chunk sits.
TEST(VideoWindowPlan, AChunkWithTheStabilizerEqualsTheWholeRenderWithoutStartingAtTheShotsFirstFrame) {
    const TemporalWindowing t = vda(TemporalWindowing::Align::None);
    const int n = 300, radius = 3;
    auto make = [&](StageChain& chain) {
        chain.add(std::make_unique<VideoWindowStage>(t, 1, input_only_forward()));
        chain.add(std::make_unique<StabilizerStage>(radius, n));
    };
    auto render = [&](StageChain& chain, const std::vector<int>& positions) {
        const std::vector<FrameRecord> out = push_all(chain, positions);
        EXPECT_EQ(out.size(), positions.size()) << "every frame pushed comes out once";
        std::map<int, std::vector<float>> depth;
        for (const FrameRecord& f : out) {
            EXPECT_FALSE(f.abandoned || f.failed()) << f.shot_pos;
            EXPECT_TRUE(f.lacked.empty()) << f.shot_pos;
            depth[f.shot_pos] = f.depth.data;
        }
        return depth;
    };
    StageChain whole_chain;
    make(whole_chain);
    const auto whole = render(whole_chain, range(0, n - 1));
    for (auto [first, last] :
         std::vector<std::pair<int, int>>{{100, 149}, {150, 199}, {250, 299}, {0, 40}, {60, 61}, {287, 287}}) {
        StageChain chain;
        make(chain);
        const auto positions = chain.plan_partial(n, first, last);
        ASSERT_TRUE(positions) << first << "-" << last;
        for (int p = std::max(0, first - radius); p <= std::min(n - 1, last + radius); ++p)
            EXPECT_TRUE(std::binary_search(positions->begin(), positions->end(), p))
                << "the stabilizer's context " << p;
        EXPECT_LT(positions->size(), static_cast<size_t>(last - first + 1 + 2 * radius + 2 * 32))
            << first << "-" << last;
        const auto part = render(chain, *positions);
        for (int p = first; p <= last; ++p)
            EXPECT_EQ(part.at(p), whole.at(p)) << "frame " << p << " of chunk " << first << "-" << last;
    }
}

// A size change inside a chunk's windows (issue 34's closing note: it was reported as "a failed frame cut the video
// windows"): the frames the chunk's windows held fail, naming the size change and what to do.
TEST(VideoWindowPlan, ASizeChangeInAChunkFailsWhatItHeldNamingTheSizeChange) {
    StageChain chain;
    chain.add(std::make_unique<VideoWindowStage>(vda(TemporalWindowing::Align::None), 1, input_only_forward()));
    const auto positions = chain.plan_partial(300, 100, 149);
    ASSERT_TRUE(positions);
    std::vector<FrameRecord> out;
    for (int p : *positions) {
        FrameRecord f = frame_at(p);
        if (p >= 130) f.input.width = 1, f.input.chw.resize(3);  // the plate changes size at position 130
        chain.push(std::move(f));
        for (auto& g : chain.pop_ready()) out.push_back(std::move(g));
    }
    chain.end_segment(SegmentEnd::End);
    for (auto& g : chain.pop_ready()) out.push_back(std::move(g));
    int failed = 0;
    for (const FrameRecord& f : out) {
        EXPECT_FALSE(f.abandoned) << f.shot_pos;
        if (!f.failed()) continue;
        ++failed;
        EXPECT_LT(f.shot_pos, 130) << "the frames held when the size changed";
        EXPECT_EQ(f.result.message,
                  "frame " + std::to_string(f.frame) +
                      ": not written: the model input size changes inside the video windows that make "
                      "it (the plate's data window changes size; a chunk runs only its own windows, "
                      "planned at one size): render this shot whole, without --chunk or --frames");
    }
    EXPECT_GT(failed, 0);
}

TEST(VideoWindowPlan, TheDefaultChunkSizeKeepsTheWindowsWithinTheOverhead) {
    const TemporalWindowing metric = vda(TemporalWindowing::Align::None), relative = vda();
    for (int n : {400, 2000}) {
        for (const TemporalWindowing& t : {metric, relative}) {
            const int size = video_chunk_size(t, n);
            if (size == n) continue;
            EXPECT_EQ(size % 22, 0) << n;
            const int chunks = (n + size - 1) / size;
            long total = 0;
            for (int i = 1; i <= chunks; ++i)
                total += static_cast<long>(video_chunk_windows(t, n, n * (i - 1) / chunks, n * i / chunks - 1).size());
            EXPECT_LE(static_cast<double>(total), 1.3 * window_count(t, n)) << n;
            EXPECT_GT(video_chunk_size(t, n, 1.3), size - 22) << "the smallest such multiple";
        }
    }
    // Metric: 88 frames (4 windows a chunk, the fifth shared) for 400 frames; relative: 9 windows of context each.
    EXPECT_EQ(video_chunk_size(metric, 400), 88);
    EXPECT_EQ(video_chunk_size(relative, 400), 400) << "no chunk size within 1.3x: one task";
    EXPECT_EQ(video_chunk_size(relative, 2000), 682) << "31 windows a chunk, 10 more each";
    EXPECT_EQ(video_chunk_size(relative, 40), 40);
}

// ---- One window machine (issue 42 §5): the whole render is the plan of every window, listed as frames arrive ----

TEST(VideoWindowPlan, EveryWindowingFeedsItsListedInputsAndPassesEveryFrameOnceForAnyShotLength) {
    // VDA's windowing and two others (a small one; one whose keyframes skip the first input, metric), every shot
    // length from 1 to 3 windows and more, 1-3 windows a forward: each window is fed window_inputs (its inputs, the
    // tail padded), each frame comes out once, in order, with its depth (the fake gives every window the same depth
    // for a frame, so fits are the identity and cross-fades keep it), and no more frames are held than max_held().
    TemporalWindowing small;
    small.window = 8, small.overlap = 4, small.crossfade = 2, small.keyframes = {0, 3, 6, 7};
    TemporalWindowing odd;
    odd.window = 7, odd.overlap = 4, odd.crossfade = 2, odd.keyframes = {1, 2, 5, 6};
    odd.align = TemporalWindowing::Align::None;
    for (const TemporalWindowing& t : {vda(), small, odd})
        for (int per_forward : {1, 2, 3})
            for (int n = 1; n <= 3 * t.window + 5; ++n) {
                Fake fake;
                fake.out = [](int, int, int p) { return depth2(static_cast<float>(p), static_cast<float>(p) + 0.5f); };
                int most = 0;
                auto* stage = new VideoWindowStage(t, per_forward, fake.forward());
                const int allowed = stage->max_held();
                const auto out = run(*stage, n, SegmentEnd::End, &most);
                const std::string what = "window " + std::to_string(t.window) + ", " + std::to_string(n) + " frames, " +
                                         std::to_string(per_forward) + " a forward";
                ASSERT_EQ(static_cast<int>(fake.windows.size()), window_count(t, n)) << what;
                for (int k = 0; k < window_count(t, n); ++k)
                    EXPECT_EQ(fake.windows.at(static_cast<size_t>(k)), window_inputs(t, k, n))
                        << what << ", window " << k;
                ASSERT_EQ(static_cast<int>(out.size()), n) << what;
                for (int p = 0; p < n; ++p) {
                    const FrameRecord& f = out.at(static_cast<size_t>(p));
                    EXPECT_EQ(f.shot_pos, p) << what;
                    EXPECT_FALSE(f.abandoned || f.failed()) << what;
                    ASSERT_EQ(f.depth.data.size(), 2u) << what << ", frame " << p;
                    EXPECT_NEAR(f.depth.data[0], p, 1e-3) << what << ", frame " << p;
                }
                EXPECT_LE(most, allowed) << what;
            }
}
