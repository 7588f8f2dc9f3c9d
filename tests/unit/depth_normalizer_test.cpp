// DepthNormalizer, percentiles, sequence sampling and the stabilizer's fit: the formulas in
// depth_normalizer.h / sequence_stats.h / temporal_stabilizer.h with known numbers.
#include "depthbatch/depth_normalizer.h"
#include "depthbatch/error.h"
#include "depthbatch/sequence_stats.h"
#include "depthbatch/temporal_stabilizer.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace depthbatch;

namespace {
JobConfig::Depth depth(const std::string& kind, const std::string& normalize, std::optional<double> near = {},
                       std::optional<double> far = {}, int near_is = 0) {
    // The job-file spellings, through the parser's own table (option_name), so the cases read like jobs.
    JobConfig::Depth d;
    for (auto k : {DepthConvention::Raw, DepthConvention::Metric, DepthConvention::Inverse, DepthConvention::Normalized})
        if (kind == option_name(k)) d.kind = k;
    for (auto n : {Normalization::Raw, Normalization::Frame, Normalization::Sequence, Normalization::Fixed})
        if (normalize == option_name(n)) d.normalize = n;
    EXPECT_EQ(option_name(d.kind), kind);
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
    EXPECT_FLOAT_EQ(apply1(DepthNormalizer(depth("normalized", "fixed", 1.0, 5.0, 1), DepthKind::MetricDepth), 4.0f), 0.25f);
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

TEST(TemporalStabilizer, AveragesScaleOverTheWindow) {
    // Frames whose raw depth is the same scene at scale 1, 2, 1, 2...: stabilized frames are all expressed
    // in the average scale of the window, so consecutive outputs move far less than the raw ones.
    TemporalStabilizer stab(4);
    ModelInput in;
    in.width = 16;
    in.height = 16;
    in.chw.assign(3 * 16 * 16, 0.5f);
    std::vector<double> centre;
    for (int f = 0; f < 12; ++f) {
        DepthImage raw;
        raw.width = raw.height = 16;
        for (int i = 0; i < 256; ++i) raw.data.push_back((f % 2 ? 2.0f : 1.0f) * (1.0f + 0.01f * i));
        const Affine a = stab.push(raw, in);
        centre.push_back(a.scale * raw.data[128] + a.shift);
    }
    for (size_t f = 5; f < centre.size(); ++f)
        EXPECT_NEAR(centre[f], centre[f - 1], 0.25 * std::abs(centre[f])) << "frame " << f;
}
