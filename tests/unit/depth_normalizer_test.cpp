// DepthNormalizer, percentiles, sequence sampling and the stabilizer's fit: the formulas in
// depth_normalizer.h / sequence_stats.h / temporal_stabilizer.h with known numbers.
#include "depthbatch/depth_normalizer.h"
#include "depthbatch/error.h"
#include "depthbatch/sequence_stats.h"
#include "depthbatch/temporal_stabilizer.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <functional>

#include <cmath>
#include <limits>

using namespace depthbatch;

namespace {
DepthSettings depth(const std::string& kind, const std::string& normalize, std::optional<double> near = {},
                    std::optional<double> far = {}, int near_is = 0) {
    // The job-file spellings, through the parser's own table (option_name), so the cases read like jobs.
    DepthSettings d;
    for (auto k :
         {DepthConvention::Raw, DepthConvention::Metric, DepthConvention::Inverse, DepthConvention::Normalized})
        if (kind == option_name(k)) d.convention = k;
    for (auto n : {Normalization::Raw, Normalization::Frame, Normalization::Sequence, Normalization::Fixed})
        if (normalize == option_name(n)) d.normalize = n;
    EXPECT_EQ(option_name(d.convention), kind);
    EXPECT_EQ(option_name(d.normalize), normalize);
    d.near = near;
    d.far = far;
    d.near_is = near_is;
    return d;
}
float apply1(const DepthNormalizer& n, float v, const DepthRange* r = nullptr) {
    n.apply(&v, 1, r);
    return v;
}
}  // namespace

TEST(DepthNormalizer, MetricModel) {
    EXPECT_EQ(apply1(DepthNormalizer(depth("raw", "raw"), DepthKind::MetricDepth), 4.0f), 4.0f);
    EXPECT_EQ(apply1(DepthNormalizer(depth("metric", "raw"), DepthKind::MetricDepth), 4.0f), 4.0f);
    EXPECT_FLOAT_EQ(apply1(DepthNormalizer(depth("inverse", "raw"), DepthKind::MetricDepth), 4.0f), 0.25f);
    const DepthNormalizer inv(depth("inverse", "raw"), DepthKind::MetricDepth);
    EXPECT_EQ(apply1(inv, 0.0f), 0.0f) << "d <= 0: infinitely far, never Inf";
    EXPECT_EQ(apply1(inv, -1.0f), 0.0f);
    EXPECT_EQ(apply1(inv, std::numeric_limits<float>::quiet_NaN()), 0.0f);
    EXPECT_EQ(apply1(inv, std::numeric_limits<float>::infinity()), 0.0f);
    const DepthNormalizer norm(depth("normalized", "fixed", 1.0, 5.0), DepthKind::MetricDepth);
    EXPECT_FLOAT_EQ(apply1(norm, 4.0f), 0.75f);
    EXPECT_FLOAT_EQ(apply1(norm, 1.0f), 0.0f);
    EXPECT_FLOAT_EQ(apply1(norm, 9.0f), 1.0f) << "clamped";
    float v[3] = {0.5f, 3.0f, 9.0f};
    EXPECT_EQ(norm.apply(v, 3, nullptr), 2u) << "two values clamped, and counted";
    EXPECT_FLOAT_EQ(apply1(DepthNormalizer(depth("normalized", "fixed", 1.0, 5.0, 1), DepthKind::MetricDepth), 4.0f),
                    0.25f);
    EXPECT_THROW(DepthNormalizer(depth("metric", "frame"), DepthKind::MetricDepth), ConfigError);
}

TEST(DepthNormalizer, RelativeInverseModel) {
    const DepthNormalizer inv(depth("inverse", "raw"), DepthKind::RelativeInverseDepth);
    EXPECT_EQ(apply1(inv, 0.0f), 0.0f);
    EXPECT_EQ(apply1(inv, 0.7f), 0.7f);
    const DepthNormalizer frame(depth("normalized", "frame"), DepthKind::RelativeInverseDepth);
    const DepthRange r = frame.range_from_percentiles(2.0, 10.0);
    EXPECT_EQ(r.near_value, 10.0) << "largest disparity is nearest";
    EXPECT_FLOAT_EQ(apply1(frame, 10.0f, &r), 0.0f);
    EXPECT_FLOAT_EQ(apply1(frame, 4.0f, &r), 0.75f);
    // metric from disparity with near/far metres: 1/z linear in t.
    const DepthNormalizer metric(depth("metric", "frame", 1.0, 5.0), DepthKind::RelativeInverseDepth);
    EXPECT_FLOAT_EQ(apply1(metric, 10.0f, &r), 1.0f);
    EXPECT_FLOAT_EQ(apply1(metric, 2.0f, &r), 5.0f);
    EXPECT_FLOAT_EQ(apply1(metric, 6.0f, &r), 1.0f / (0.2f + 0.5f * 0.8f));
    // Metric from a relative model without depth.near/far: a ConfigError naming the missing keys.
    for (const char* normalize : {"raw", "frame"}) {
        const std::string msg = test::expect_error<ConfigError>(
            [&] { DepthNormalizer(depth("metric", normalize), DepthKind::RelativeInverseDepth); },
            std::string("depth.kind metric, depth.normalize ") + normalize);
        EXPECT_TRUE(test::contains(msg, "depth.near")) << msg;
    }
}

TEST(DepthNormalizer, RelativeDepthModel) {
    EXPECT_FLOAT_EQ(apply1(DepthNormalizer(depth("inverse", "raw"), DepthKind::RelativeDepth), 2.0f), 0.5f);
    const DepthNormalizer metric(depth("metric", "sequence", 2.0, 10.0), DepthKind::RelativeDepth);
    const DepthRange r = metric.range_from_percentiles(0.0, 4.0);
    EXPECT_FLOAT_EQ(apply1(metric, 1.0f, &r), 4.0f);
    EXPECT_EQ(metric.units(), "m");
}

TEST(DepthNormalizer, MetadataNamesConventionAndDirection) {
    const DepthNormalizer n(depth("normalized", "fixed", 1.0, 5.0, 1), DepthKind::MetricDepth);
    bool saw_near_is = false, saw_convention = false;
    for (const auto& [k, v] : n.metadata(nullptr)) {
        if (k == "depthbatch/near_is") saw_near_is = v.rfind("1 ", 0) == 0;
        if (k == "depthbatch/depth_convention") saw_convention = v == "normalized";
    }
    EXPECT_TRUE(saw_near_is);
    EXPECT_TRUE(saw_convention);
}

// Which end of the written range is near, decided once (DepthNormalizer::larger_is_nearer, written as
// depthbatch/larger_is_nearer for previews and the review sheet), for every convention of every model kind, and
// checked against what apply() writes for a near and a far point of the same frame.
TEST(DepthNormalizer, LargerIsNearerForEveryConventionAndModelKind) {
    struct Case {
        const char* kind;
        const char* normalize;
        std::optional<double> near, far;
        int near_is;
        DepthKind model;
        bool larger_is_nearer;
    };
    const std::vector<Case> cases = {
        {"raw", "raw", {}, {}, 0, DepthKind::MetricDepth, false},
        {"metric", "raw", {}, {}, 0, DepthKind::MetricDepth, false},
        {"inverse", "raw", {}, {}, 0, DepthKind::MetricDepth, true},
        {"normalized", "frame", {}, {}, 0, DepthKind::MetricDepth, false},
        {"normalized", "fixed", 1.0, 5.0, 1, DepthKind::MetricDepth, true},
        {"raw", "raw", {}, {}, 0, DepthKind::RelativeInverseDepth, true},
        {"inverse", "raw", {}, {}, 0, DepthKind::RelativeInverseDepth, true},
        {"normalized", "frame", {}, {}, 0, DepthKind::RelativeInverseDepth, false},
        {"normalized", "sequence", {}, {}, 1, DepthKind::RelativeInverseDepth, true},
        {"metric", "frame", 1.0, 5.0, 0, DepthKind::RelativeInverseDepth, false},
        {"raw", "raw", {}, {}, 0, DepthKind::RelativeDepth, false},
        {"inverse", "raw", {}, {}, 0, DepthKind::RelativeDepth, true},
        {"normalized", "frame", {}, {}, 0, DepthKind::RelativeDepth, false},
        {"normalized", "frame", {}, {}, 1, DepthKind::RelativeDepth, true},
        {"metric", "sequence", 2.0, 10.0, 0, DepthKind::RelativeDepth, false},
    };
    for (const Case& c : cases) {
        const std::string what = std::string(c.kind) + "/" + c.normalize + " near_is " + std::to_string(c.near_is) +
                                 " of a " + depth_kind_name(c.model) + " model";
        const DepthNormalizer n(depth(c.kind, c.normalize, c.near, c.far, c.near_is), c.model);
        EXPECT_EQ(n.larger_is_nearer(), c.larger_is_nearer) << what;
        // The metadata key, once, "1" or "0".
        int keys = 0;
        for (const auto& [k, v] : n.metadata(nullptr))
            if (k == "depthbatch/larger_is_nearer") {
                ++keys;
                EXPECT_EQ(v, c.larger_is_nearer ? "1" : "0") << what;
            }
        EXPECT_EQ(keys, 1) << what;
        // What apply() writes for the model's nearest and farthest raw values of a frame (the fixed range's
        // ends for a fixed normalization): the near one is larger exactly when larger_is_nearer says so.
        float near_raw = 1.0f, far_raw = 5.0f;  // metres, or relative depth (larger = farther)
        if (c.model == DepthKind::RelativeInverseDepth) near_raw = 5.0f, far_raw = 1.0f;  // larger = nearer
        const DepthRange range = n.range_from_percentiles(1.0, 5.0);
        float v[2] = {near_raw, far_raw};
        n.apply(v, 2, &range);
        EXPECT_NE(v[0], v[1]) << what;
        EXPECT_EQ(v[0] > v[1], c.larger_is_nearer) << what << ": near written as " << v[0] << ", far as " << v[1];
    }
}

TEST(Percentiles, NearestRankIgnoringNonFinite) {
    std::vector<float> v;
    for (int i = 0; i <= 100; ++i) v.push_back(static_cast<float>(i));
    v.push_back(std::numeric_limits<float>::quiet_NaN());
    v.push_back(std::numeric_limits<float>::infinity());
    const auto [lo, hi] = percentile_pair(v, 2, 98);
    EXPECT_EQ(lo, 2.0);
    EXPECT_EQ(hi, 98.0);
    EXPECT_EQ(percentile_pair({}, 2, 98), std::make_pair(0.0, 0.0));
}

TEST(SequenceStats, SampleFramesAreEvenAndIncludeEnds) {
    std::vector<int> shot;
    for (int f = 1001; f <= 1050; ++f) shot.push_back(f);
    const auto s = sample_frames(shot, 5);
    EXPECT_EQ(s, (std::vector<int>{1001, 1013, 1026, 1038, 1050}));
    EXPECT_EQ(sample_frames(shot, 100), shot);
    EXPECT_EQ(sample_frames(shot, 1), (std::vector<int>{1001}));
    EXPECT_EQ(default_stats_path("/a/depth/shot_depth.####.exr"), "/a/depth/shot_depth.stats.json");
    EXPECT_EQ(default_stats_path("d_%04d.exr"), "d.stats.json");
}

TEST(TemporalStabilizer, RobustFitRecoversScaleAndShiftDespiteOutliers) {
    std::vector<float> x, y;
    std::vector<unsigned char> mask;
    for (int i = 0; i < 1000; ++i) {
        x.push_back(0.01f * i);
        y.push_back(i % 10 == 0 ? 50.0f : 2.0f * 0.01f * i + 0.5f);  // 10 % outliers
        mask.push_back(1);
    }
    const Affine a = robust_affine_fit(x, y, mask);
    EXPECT_NEAR(a.scale, 2.0, 1e-4);
    EXPECT_NEAR(a.shift, 0.5, 1e-4);
    std::vector<unsigned char> none(x.size(), 0);
    const Affine id = robust_affine_fit(x, y, none);
    EXPECT_EQ(id.scale, 1.0);
    EXPECT_EQ(id.shift, 0.0);
}

namespace {
/// Push `frames` raw images (16x16, a ramp across the image times `gain(f)` plus `offset(f)`) through a
/// stabilizer of radius R with a flat grey input (every pixel static), flush, and return each frame's centre
/// pixel, in order. Fails the test unless every frame comes out exactly once, in order.
std::vector<double> stabilize_centres(int radius, int frames, const std::function<double(int)>& gain,
                                      const std::function<double(int)>& offset) {
    TemporalStabilizer stab(radius);
    ModelInput in;
    in.width = in.height = 16;
    in.chw.assign(3 * 16 * 16, 0.5f);
    std::vector<std::pair<int, DepthImage>> out;
    for (int f = 0; f < frames; ++f) {
        DepthImage raw;
        raw.width = raw.height = 16;
        for (int i = 0; i < 256; ++i) raw.data.push_back(static_cast<float>(gain(f) * (1.0 + 0.01 * i) + offset(f)));
        stab.push(f, raw, in);
        for (auto& r : stab.pop_ready()) out.push_back(std::move(r));
    }
    stab.flush();
    for (auto& r : stab.pop_ready()) out.push_back(std::move(r));
    std::vector<double> centre;
    EXPECT_EQ(out.size(), static_cast<size_t>(frames));
    for (size_t k = 0; k < out.size(); ++k) {
        EXPECT_EQ(out[k].first, static_cast<int>(k)) << "frames come out once each, in order";
        centre.push_back(out[k].second.data[128]);
    }
    return centre;
}
}  // namespace

// Scale jitter (the same scene at scale 1, 2, 1, 2 ...): every frame is put in the mean scale of its window,
// so consecutive outputs barely move.
TEST(TemporalStabilizer, TakesOutScaleJitter) {
    const auto c = stabilize_centres(
        4, 16, [](int f) { return f % 2 ? 2.0 : 1.0; }, [](int) { return 0.0; });
    // Raw consecutive frames differ by the whole centre value (2.28); an odd window holds one more frame of one
    // scale than of the other, which leaves 2.28 / 9 at most.
    for (size_t f = 5; f + 4 < c.size(); ++f) EXPECT_LE(std::abs(c[f] - c[f - 1]), 0.12 * 2.28) << "frame " << f;
}

// A steady change of depth (a dolly: +0.05 per frame) passes through with no lag: interior frames keep their
// value, and the window shrinks symmetrically at the ends, so the first and last frames keep theirs too.
TEST(TemporalStabilizer, SteadyChangePassesWithoutLag) {
    const auto c = stabilize_centres(
        4, 20, [](int) { return 1.0; }, [](int f) { return 0.05 * f; });
    for (size_t f = 0; f < c.size(); ++f) EXPECT_NEAR(c[f], 2.28 + 0.05 * f, 1e-4) << "frame " << f;
    // A steady change of scale too (a relative model on a push-in).
    const auto s = stabilize_centres(
        3, 20, [](int f) { return 1.0 + 0.02 * f; }, [](int) { return 0.0; });
    for (size_t f = 0; f < s.size(); ++f) EXPECT_NEAR(s[f], 2.28 * (1.0 + 0.02 * f), 2e-3 * s[f]) << "frame " << f;
}

// A shift that jitters around a steady ramp: the ramp is kept (no lag on average) and the jitter shrinks.
TEST(TemporalStabilizer, RemovesJitterAroundARamp) {
    const auto noise = [](int f) { return 0.04 * (((f * 7919) % 13) / 6.0 - 1.0); };  // fixed pseudo-noise in +-0.04
    const auto c = stabilize_centres(
        4, 40, [](int) { return 1.0; }, [&](int f) { return 0.03 * f + noise(f); });
    double raw_err = 0, stab_err = 0, bias = 0;
    for (int f = 4; f < 36; ++f) {
        const double truth = 2.28 + 0.03 * f;
        raw_err += std::abs(noise(f));
        stab_err += std::abs(c[f] - truth);
        bias += c[f] - truth;
    }
    EXPECT_LT(stab_err, 0.5 * raw_err) << "raw " << raw_err << " stabilized " << stab_err;
    EXPECT_LT(std::abs(bias / 32), 0.1 * 0.03) << "mean lag must stay under a tenth of a frame's step";
}
