// Unit tests for include/depthbatch/reformat.h: the plan from plate size to model input and back.
// docs/cases.md 6 (odd sizes: output size equals the input data window, not the model's multiple).
#include "depthbatch/error.h"
#include "depthbatch/reformat.h"
#include "depthbatch/resample.h"
#include "support/test_support.h"

#include <OpenImageIO/imagebuf.h>
#include <OpenImageIO/imagebufalgo.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

using namespace depthbatch;
using Mode = ProcessingSize::Mode;

namespace {

ProcessingSize plate_size() {
    ProcessingSize s;
    s.mode = Mode::Plate;
    return s;
}
ProcessingSize short_side(int n) {
    ProcessingSize s;
    s.mode = Mode::ShortSide;
    s.short_side_px = n;
    return s;
}
ProcessingSize explicit_size(int w, int h) {
    ProcessingSize s;
    s.mode = Mode::Explicit;
    s.width_px = w;
    s.height_px = h;
    return s;
}
ProcessingSize model_size() { return ProcessingSize{}; }

ModelContract contract(int multiple, int width = 0, int height = 0, bool fixed = false) {
    ModelContract c;
    c.name = "test";
    c.multiple = multiple;
    c.width = width;
    c.height = height;
    c.fixed_size = fixed;
    return c;
}

// A packed float RGB plate of w x h (origin x0,y0) with values fn(x, y, c) in local (0-based) coordinates.
template <class Fn> OIIO::ImageBuf make_rgb(int w, int h, Fn fn, int x0 = 0, int y0 = 0) {
    OIIO::ImageSpec spec(w, h, 3, OIIO::TypeDesc::FLOAT);
    spec.x = x0;
    spec.y = y0;
    OIIO::ImageBuf buf(spec);
    float* p = static_cast<float*>(buf.localpixels());
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < 3; ++c) p[(static_cast<size_t>(y) * w + x) * 3 + c] = fn(x, y, c);
    return buf;
}

float chw_at(const ModelInput& in, int c, int x, int y) {
    return in.chw[(static_cast<size_t>(c) * in.height + y) * in.width + x];
}

DepthImage make_depth(int w, int h, float value) {
    DepthImage d;
    d.width = w;
    d.height = h;
    d.data.assign(static_cast<size_t>(w) * h, value);
    return d;
}

float pixel(const OIIO::ImageBuf& buf, int x, int y) {
    float v = std::numeric_limits<float>::quiet_NaN();
    buf.getpixel(x, y, 0, &v, 1);
    return v;
}

void expect_restored_shape(const OIIO::ImageBuf& out, const ReformatPlan& plan) {
    const OIIO::ImageSpec& s = out.spec();
    EXPECT_EQ(s.width, plan.plate_width);
    EXPECT_EQ(s.height, plan.plate_height);
    EXPECT_EQ(s.x, 0);
    EXPECT_EQ(s.y, 0);
    EXPECT_EQ(s.nchannels, 1);
    EXPECT_EQ(s.format, OIIO::TypeDesc::FLOAT);
}

// min/max over a 1-channel float ImageBuf, and whether every value is finite.
struct Range {
    float lo = std::numeric_limits<float>::infinity(), hi = -std::numeric_limits<float>::infinity();
    bool finite = true;
};
Range range_of(const OIIO::ImageBuf& buf) {
    Range r;
    const OIIO::ROI roi = buf.roi();
    std::vector<float> v(static_cast<size_t>(roi.width()) * roi.height());
    EXPECT_TRUE(buf.get_pixels(roi, OIIO::TypeDesc::FLOAT, v.data()));
    for (float f : v) {
        if (!std::isfinite(f)) r.finite = false;
        r.lo = std::min(r.lo, f);
        r.hi = std::max(r.hi, f);
    }
    return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ReformatPlan::make
// ---------------------------------------------------------------------------------------------

TEST(ReformatPlan, PlateModePadsOnly) {
    const ReformatPlan p = ReformatPlan::make(13, 7, plate_size(), contract(32));
    EXPECT_EQ(p.plate_width, 13);
    EXPECT_EQ(p.plate_height, 7);
    EXPECT_EQ(p.scaled_width, 13);
    EXPECT_EQ(p.scaled_height, 7);
    EXPECT_EQ(p.input_width, 32);
    EXPECT_EQ(p.input_height, 32);
    EXPECT_FALSE(p.resizes());

    const ReformatPlan q = ReformatPlan::make(1920, 1080, plate_size(), contract(14));
    EXPECT_EQ(q.scaled_width, 1920);
    EXPECT_EQ(q.scaled_height, 1080);
    EXPECT_EQ(q.input_width, 1932);   // 138 * 14
    EXPECT_EQ(q.input_height, 1092);  // 78 * 14
    EXPECT_FALSE(q.resizes());

    // Already a multiple: nothing to pad.
    const ReformatPlan r = ReformatPlan::make(64, 32, plate_size(), contract(32));
    EXPECT_EQ(r.input_width, 64);
    EXPECT_EQ(r.input_height, 32);
}

TEST(ReformatPlan, ShortSideModeRoundsToTheMultipleWithoutPadding) {
    const ReformatPlan p = ReformatPlan::make(960, 540, short_side(224), contract(32));
    EXPECT_EQ(p.input_width, 384);  // 960 * 224/540 = 398.2 -> nearest multiple of 32
    EXPECT_EQ(p.input_height, 224);
    EXPECT_EQ(p.scaled_width, 384);
    EXPECT_EQ(p.scaled_height, 224);
    EXPECT_TRUE(p.resizes());

    const ReformatPlan q = ReformatPlan::make(1920, 1080, short_side(518), contract(14));
    EXPECT_EQ(q.input_width, 924);   // 1920 * 518/1080 = 920.9 -> 66 * 14
    EXPECT_EQ(q.input_height, 518);  // 37 * 14
    EXPECT_EQ(q.scaled_width, q.input_width);
    EXPECT_EQ(q.scaled_height, q.input_height);

    // Portrait: the short side is the width.
    const ReformatPlan r = ReformatPlan::make(540, 960, short_side(224), contract(32));
    EXPECT_EQ(r.input_width, 224);
    EXPECT_EQ(r.input_height, 384);
}

TEST(ReformatPlan, ShortSideCapsTheLongSide) {
    const ReformatPlan p = ReformatPlan::make(4097, 3, short_side(224), contract(32));
    EXPECT_EQ(p.input_width, 896);  // 4 * 224
    EXPECT_EQ(p.input_height, 32);  // never below one multiple
    const ReformatPlan q = ReformatPlan::make(3, 4097, short_side(224), contract(32));
    EXPECT_EQ(q.input_width, 32);
    EXPECT_EQ(q.input_height, 896);
}

TEST(ReformatPlan, ExplicitSizeResizesThenPads) {
    const ReformatPlan p = ReformatPlan::make(1920, 1080, explicit_size(640, 360), contract(32));
    EXPECT_EQ(p.scaled_width, 640);
    EXPECT_EQ(p.scaled_height, 360);
    EXPECT_EQ(p.input_width, 640);
    EXPECT_EQ(p.input_height, 384);
    EXPECT_TRUE(p.resizes());

    const ReformatPlan q = ReformatPlan::make(100, 50, explicit_size(100, 50), contract(14));
    EXPECT_EQ(q.scaled_width, 100);
    EXPECT_EQ(q.scaled_height, 50);
    EXPECT_EQ(q.input_width, 112);
    EXPECT_EQ(q.input_height, 56);
    EXPECT_FALSE(q.resizes());
}

TEST(ReformatPlan, ModelModeUsesTheContractShortSide) {
    // FastDepth-like: 224x224, multiple 32, not fixed: the plate's short side becomes 224.
    const ReformatPlan p = ReformatPlan::make(960, 540, model_size(), contract(32, 224, 224));
    const ReformatPlan same = ReformatPlan::make(960, 540, short_side(224), contract(32, 224, 224));
    EXPECT_EQ(p.input_width, 384);
    EXPECT_EQ(p.input_height, 224);
    EXPECT_EQ(p.input_width, same.input_width);
    EXPECT_EQ(p.input_height, same.input_height);
    EXPECT_EQ(p.scaled_width, same.scaled_width);
    EXPECT_EQ(p.scaled_height, same.scaled_height);

    // A non-square contract: its short side (the smaller of width and height) is used.
    const ReformatPlan q = ReformatPlan::make(1920, 1080, model_size(), contract(14, 518, 392));
    EXPECT_EQ(q.input_height, 392);
    EXPECT_EQ(q.input_width, 700);  // 1920 * 392/1080 = 696.9 -> 50 * 14
}

TEST(ReformatPlan, FixedSizeModelGetsExactlyItsSize) {
    const ModelContract fixed = contract(32, 320, 192, true);  // width 320, height 192
    for (auto [w, h] : std::vector<std::pair<int, int>>{{960, 540}, {13, 7}, {4097, 3}, {320, 192}}) {
        const ReformatPlan p = ReformatPlan::make(w, h, model_size(), fixed);
        EXPECT_EQ(p.input_width, 320) << w << "x" << h;
        EXPECT_EQ(p.input_height, 192) << w << "x" << h;
        EXPECT_EQ(p.scaled_width, 320);
        EXPECT_EQ(p.scaled_height, 192);
        EXPECT_EQ(p.plate_width, w);
        EXPECT_EQ(p.plate_height, h);
    }
    // Explicitly asking for the fixed size is fine.
    const ReformatPlan e = ReformatPlan::make(960, 540, explicit_size(320, 192), fixed);
    EXPECT_EQ(e.input_width, 320);
    EXPECT_EQ(e.input_height, 192);
}

TEST(ReformatPlan, ExplicitSizeMismatchWithFixedSizeModelNamesBothSizes) {
    const ModelContract fixed = contract(32, 320, 192, true);
    for (auto [w, h] : std::vector<std::pair<int, int>>{{640, 384}, {192, 320}, {320, 224}}) {
        const std::string size = std::to_string(w) + "x" + std::to_string(h);
        const std::string msg = test::expect_error<ConfigError>(
            [&] { ReformatPlan::make(960, 540, explicit_size(w, h), fixed); }, "explicit " + size);
        EXPECT_TRUE(test::contains(msg, size)) << msg;
        EXPECT_TRUE(test::contains(msg, "320x192")) << msg;
    }
}

// docs/cases.md 6: odd sizes, both multiples, plate and short-side modes.
TEST(ReformatPlan, OddSizesGiveValidInputsAndRestoreToThePlateSize) {
    const std::vector<std::pair<int, int>> sizes = {{1, 1},    {2, 3},       {13, 7},     {4097, 3},
                                                    {3, 4097}, {1920, 1080}, {4096, 2160}};
    // Each multiple with its model family's short side: 32 with FastDepth's 224, 14 with ViT's 518.
    for (auto [m, n] : std::vector<std::pair<int, int>>{{32, 224}, {14, 518}}) {
        for (const ProcessingSize& mode : {plate_size(), short_side(n)}) {
            for (auto [w, h] : sizes) {
                SCOPED_TRACE("plate " + std::to_string(w) + "x" + std::to_string(h) + ", multiple " +
                             std::to_string(m) + ", mode " +
                             (mode.mode == Mode::Plate ? std::string("plate")
                                                       : "short side " + std::to_string(mode.short_side_px)));
                const ReformatPlan p = ReformatPlan::make(w, h, mode, contract(m));
                EXPECT_EQ(p.plate_width, w);
                EXPECT_EQ(p.plate_height, h);
                EXPECT_EQ(p.input_width % m, 0);
                EXPECT_EQ(p.input_height % m, 0);
                EXPECT_GE(p.input_width, m);
                EXPECT_GE(p.input_height, m);
                EXPECT_GE(p.scaled_width, 1);
                EXPECT_GE(p.scaled_height, 1);
                EXPECT_LE(p.scaled_width, p.input_width);
                EXPECT_LE(p.scaled_height, p.input_height);
                if (mode.mode == Mode::Plate) {
                    EXPECT_EQ(p.scaled_width, w);
                    EXPECT_EQ(p.scaled_height, h);
                    EXPECT_LT(p.input_width - w, m);  // the smallest multiple that holds the plate
                    EXPECT_LT(p.input_height - h, m);
                    EXPECT_FALSE(p.resizes());
                } else {
                    const int n = mode.short_side_px;
                    // No padding in short-side mode.
                    EXPECT_EQ(p.scaled_width, p.input_width);
                    EXPECT_EQ(p.scaled_height, p.input_height);
                    // The long side is capped at 4*N (rounded to the nearest multiple).
                    const int cap = static_cast<int>(std::lround(4.0 * n / m)) * m;
                    EXPECT_LE(std::max(p.input_width, p.input_height), cap);
                    // Each side is the scaled side rounded to the nearest multiple (at least one).
                    const double s = std::min(static_cast<double>(n) / std::min(w, h), 4.0 * n / std::max(w, h));
                    EXPECT_LE(std::abs(p.input_width - std::max(w * s, static_cast<double>(m))), m / 2.0 + 1e-9);
                    EXPECT_LE(std::abs(p.input_height - std::max(h * s, static_cast<double>(m))), m / 2.0 + 1e-9);
                }

                // Model output at the input size, and at half of it: both restore to the plate size.
                // (The half-size case is skipped for 4096x2160: a single-threaded 4K resize costs ~1.5 s.)
                for (int div : {1, 2}) {
                    if (div == 2 && static_cast<long>(w) * h > 4'000'000) continue;
                    const DepthImage d =
                        make_depth(std::max(1, p.input_width / div), std::max(1, p.input_height / div), 2.5f);
                    const OIIO::ImageBuf out = p.restore(d);
                    expect_restored_shape(out, p);
                    const Range r = range_of(out);
                    EXPECT_TRUE(r.finite);
                    // A constant stays constant. OIIO's resize sums filter weights in float: a strong
                    // reduction (e.g. 512x512 -> 1x1) is off by up to ~3e-4 relative, so allow 1e-3
                    // relative there and 2e-5 relative otherwise.
                    const double ratio = std::max(static_cast<double>(d.width) / w, static_cast<double>(d.height) / h);
                    const double tol = 2.5 * (ratio > 4.0 ? 1e-3 : 2e-5);
                    EXPECT_NEAR(r.lo, 2.5f, tol);
                    EXPECT_NEAR(r.hi, 2.5f, tol);
                }
            }
        }
    }
}

TEST(ReformatPlan, OddSizesModelInputHasThePlannedSizeAndIsFinite) {
    const std::vector<std::pair<int, int>> sizes = {{1, 1}, {2, 3}, {13, 7}, {4097, 3}, {3, 4097}, {1920, 1080}};
    for (int m : {32, 14}) {
        for (const ProcessingSize& mode : {plate_size(), short_side(224)}) {
            for (auto [w, h] : sizes) {
                SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + " multiple " + std::to_string(m) +
                             (mode.mode == Mode::Plate ? " plate" : " short side"));
                const ReformatPlan p = ReformatPlan::make(w, h, mode, contract(m));
                const OIIO::ImageBuf rgb = make_rgb(w, h, [](int, int, int c) { return 0.25f + 0.25f * c; });
                long clamped = -1;
                const ModelInput in = p.to_model_input(rgb, &clamped);
                EXPECT_EQ(in.width, p.input_width);
                EXPECT_EQ(in.height, p.input_height);
                ASSERT_EQ(in.chw.size(), static_cast<size_t>(3) * p.input_width * p.input_height);
                EXPECT_EQ(clamped, 0);
                // A constant plate stays constant per channel through resize and padding.
                for (int c = 0; c < 3; ++c) {
                    const auto first = in.chw.begin() + static_cast<long>(c) * in.width * in.height;
                    const auto last = first + static_cast<long>(in.width) * in.height;
                    const auto [lo, hi] = std::minmax_element(first, last);
                    EXPECT_NEAR(*lo, 0.25f + 0.25f * c, 1e-5) << "channel " << c;
                    EXPECT_NEAR(*hi, 0.25f + 0.25f * c, 1e-5) << "channel " << c;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// to_model_input
// ---------------------------------------------------------------------------------------------

namespace {
float ramp(int x, int y, int c) { return static_cast<float>(x + 13 * y) / 100.0f + 0.03f * c; }  // in [0, 0.96]
}  // namespace

TEST(ToModelInput, PlateModeIsExactAndPadsByEdgeReplication) {
    const ReformatPlan p = ReformatPlan::make(13, 7, plate_size(), contract(32));
    const OIIO::ImageBuf rgb = make_rgb(13, 7, ramp);
    long clamped = -1;
    const ModelInput in = p.to_model_input(rgb, &clamped);
    ASSERT_EQ(in.width, 32);
    ASSERT_EQ(in.height, 32);
    ASSERT_EQ(in.chw.size(), 3u * 32 * 32);
    EXPECT_EQ(clamped, 0);
    for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 32; ++y)
            for (int x = 0; x < 32; ++x) {
                // Data region: the plate's value; pad region: the nearest edge pixel (last column/row).
                const float expected = ramp(std::min(x, 12), std::min(y, 6), c);
                ASSERT_EQ(chw_at(in, c, x, y), expected) << "c " << c << " x " << x << " y " << y;
            }
    // Spot checks of the layout (planar CHW).
    EXPECT_FLOAT_EQ(in.chw[0], 0.0f);
    EXPECT_FLOAT_EQ(in.chw[32 * 32], 0.03f);
    EXPECT_FLOAT_EQ(chw_at(in, 0, 12, 6), 0.90f);
    EXPECT_FLOAT_EQ(chw_at(in, 0, 31, 31), 0.90f);
    EXPECT_FLOAT_EQ(chw_at(in, 2, 31, 0), 0.12f + 0.06f);
    EXPECT_FLOAT_EQ(chw_at(in, 1, 0, 31), 0.78f + 0.03f);
}

TEST(ToModelInput, DataWindowOffTheOriginIsReadFromItsFirstPixel) {
    // docs/cases.md 4: a plate whose data window starts at (-50,-50) or (30,40).
    const ReformatPlan p = ReformatPlan::make(13, 7, plate_size(), contract(32));
    for (auto [x0, y0] : std::vector<std::pair<int, int>>{{-50, -50}, {30, 40}}) {
        const OIIO::ImageBuf rgb = make_rgb(13, 7, ramp, x0, y0);
        const ModelInput in = p.to_model_input(rgb);
        ASSERT_EQ(in.chw.size(), 3u * 32 * 32);
        for (int c = 0; c < 3; ++c)
            for (int y = 0; y < 7; ++y)
                for (int x = 0; x < 13; ++x) ASSERT_EQ(chw_at(in, c, x, y), ramp(x, y, c)) << x0 << "," << y0;
    }
}

TEST(ToModelInput, ClampsOutOfRangeValuesAndCountsThem) {
    // 4x2 plate, multiple 4: rows 2 and 3 of the input replicate row 1.
    const ReformatPlan p = ReformatPlan::make(4, 2, plate_size(), contract(4));
    OIIO::ImageBuf rgb = make_rgb(4, 2, [](int, int, int) { return 0.5f; });
    float* px = static_cast<float*>(rgb.localpixels());
    auto at = [&](int x, int y, int c) -> float& { return px[(y * 4 + x) * 3 + c]; };
    at(0, 0, 0) = -0.5f;  // -> 0
    at(1, 0, 1) = 1.5f;   // -> 1
    at(3, 1, 2) = 12.0f;  // -> 1, and on the last row and column: replicated into the pad
    at(2, 1, 0) = 1.0f;   // in range: unchanged, not counted
    at(2, 0, 2) = 0.0f;   // in range: unchanged, not counted
    long clamped = -1;
    const ModelInput in = p.to_model_input(rgb, &clamped);
    ASSERT_EQ(in.width, 4);
    ASSERT_EQ(in.height, 4);
    EXPECT_EQ(clamped, 3);  // values of the plate, not copies in the pad
    EXPECT_EQ(chw_at(in, 0, 0, 0), 0.0f);
    EXPECT_EQ(chw_at(in, 1, 1, 0), 1.0f);
    EXPECT_EQ(chw_at(in, 2, 3, 1), 1.0f);
    EXPECT_EQ(chw_at(in, 2, 3, 3), 1.0f);  // pad copy of the clamped value
    EXPECT_EQ(chw_at(in, 0, 2, 1), 1.0f);
    EXPECT_EQ(chw_at(in, 2, 2, 0), 0.0f);
    EXPECT_EQ(chw_at(in, 0, 1, 0), 0.5f);
    for (float v : in.chw) {
        EXPECT_GE(v, 0.0f);
        EXPECT_LE(v, 1.0f);
    }
    // The count pointer is optional.
    const ModelInput again = p.to_model_input(rgb);
    EXPECT_EQ(again.chw, in.chw);
}

TEST(ToModelInput, NonFiniteValuesBecomeZero) {
    const ReformatPlan p = ReformatPlan::make(3, 2, plate_size(), contract(1));
    OIIO::ImageBuf rgb = make_rgb(3, 2, [](int, int, int) { return 0.75f; });
    float* px = static_cast<float*>(rgb.localpixels());
    px[0] = std::numeric_limits<float>::quiet_NaN();  // (0,0) R
    px[4] = std::numeric_limits<float>::infinity();   // (1,0) G
    px[8] = -std::numeric_limits<float>::infinity();  // (2,0) B
    px[9] = 2.0f;                                     // (0,1) R: clamped
    long clamped = -1;
    const ModelInput in = p.to_model_input(rgb, &clamped);
    ASSERT_EQ(in.chw.size(), 18u);
    EXPECT_EQ(chw_at(in, 0, 0, 0), 0.0f);
    EXPECT_EQ(chw_at(in, 1, 1, 0), 0.0f);  // +Inf becomes 0, not 1
    EXPECT_EQ(chw_at(in, 2, 2, 0), 0.0f);
    EXPECT_EQ(chw_at(in, 0, 0, 1), 1.0f);
    EXPECT_EQ(chw_at(in, 1, 0, 0), 0.75f);
    EXPECT_EQ(chw_at(in, 2, 1, 1), 0.75f);
    for (float v : in.chw) EXPECT_TRUE(std::isfinite(v));
    // Only the finite out-of-range value was clamped.
    EXPECT_EQ(clamped, 1);
}

TEST(ToModelInput, ResizedInputKeepsAConstantPlateConstant) {
    const ReformatPlan p = ReformatPlan::make(960, 540, short_side(224), contract(32));
    const OIIO::ImageBuf rgb = make_rgb(960, 540, [](int, int, int c) { return 0.1f + 0.3f * c; });
    const ModelInput in = p.to_model_input(rgb);
    ASSERT_EQ(in.width, 384);
    ASSERT_EQ(in.height, 224);
    for (int c = 0; c < 3; ++c)
        for (int y = 0; y < in.height; y += 7)
            for (int x = 0; x < in.width; x += 5) ASSERT_NEAR(chw_at(in, c, x, y), 0.1f + 0.3f * c, 1e-5);
}

TEST(ToModelInput, ResizedInputFollowsAHorizontalSplit) {
    // Left half 0.2, right half 0.8: after a 2.5x downscale the far left and far right keep their values.
    const ReformatPlan p = ReformatPlan::make(960, 540, short_side(224), contract(32));
    const OIIO::ImageBuf rgb = make_rgb(960, 540, [](int x, int, int) { return x < 480 ? 0.2f : 0.8f; });
    const ModelInput in = p.to_model_input(rgb);
    for (int y = 0; y < in.height; y += 11) {
        EXPECT_NEAR(chw_at(in, 0, 10, y), 0.2f, 1e-4);
        EXPECT_NEAR(chw_at(in, 1, in.width - 10, y), 0.8f, 1e-4);
    }
}

// ---------------------------------------------------------------------------------------------
// restore
// ---------------------------------------------------------------------------------------------

TEST(Restore, PlateModeIsExactPerPixel) {
    const ReformatPlan p = ReformatPlan::make(13, 7, plate_size(), contract(32));
    DepthImage d = make_depth(32, 32, -999.0f);  // the pad region holds junk
    for (int y = 0; y < 7; ++y)
        for (int x = 0; x < 13; ++x) d.data[static_cast<size_t>(y) * 32 + x] = 0.5f + x + 100.0f * y;
    const OIIO::ImageBuf out = p.restore(d);
    expect_restored_shape(out, p);
    for (int y = 0; y < 7; ++y)
        for (int x = 0; x < 13; ++x) ASSERT_EQ(pixel(out, x, y), 0.5f + x + 100.0f * y) << x << "," << y;
    const Range r = range_of(out);
    EXPECT_GE(r.lo, 0.5f);  // nothing from the pad region
}

TEST(Restore, PlateModeWithoutPaddingIsExact) {
    const ReformatPlan p = ReformatPlan::make(5, 3, plate_size(), contract(1));
    DepthImage d = make_depth(5, 3, 0.0f);
    for (size_t i = 0; i < d.data.size(); ++i) d.data[i] = 0.125f * static_cast<float>(i);
    const OIIO::ImageBuf out = p.restore(d);
    expect_restored_shape(out, p);
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 5; ++x) EXPECT_EQ(pixel(out, x, y), 0.125f * static_cast<float>(y * 5 + x));
}

TEST(Restore, HalfSizeModelOutputStillGivesThePlateSize) {
    const ReformatPlan p = ReformatPlan::make(13, 7, plate_size(), contract(32));
    const OIIO::ImageBuf out = p.restore(make_depth(16, 16, 3.25f));
    expect_restored_shape(out, p);
    for (int y = 0; y < 7; ++y)
        for (int x = 0; x < 13; ++x) EXPECT_NEAR(pixel(out, x, y), 3.25f, 1e-6);

    const ReformatPlan q = ReformatPlan::make(960, 540, short_side(224), contract(32));
    const OIIO::ImageBuf out2 = q.restore(make_depth(192, 112, 7.0f));
    expect_restored_shape(out2, q);
    const Range r = range_of(out2);
    EXPECT_NEAR(r.lo, 7.0f, 1e-5);
    EXPECT_NEAR(r.hi, 7.0f, 1e-5);
}

TEST(Restore, PaddingIsCutBeforeResizingBack) {
    // Explicit 64x40 in a 64x64 input: rows 40..63 are pad, holding a value that must never leak back.
    const ReformatPlan p = ReformatPlan::make(100, 50, explicit_size(64, 40), contract(32));
    ASSERT_EQ(p.input_width, 64);
    ASSERT_EQ(p.input_height, 64);
    DepthImage d = make_depth(64, 64, 100.0f);
    for (int y = 0; y < 40; ++y)
        for (int x = 0; x < 64; ++x) d.data[static_cast<size_t>(y) * 64 + x] = 1.0f;
    const OIIO::ImageBuf out = p.restore(d);
    expect_restored_shape(out, p);
    const Range r = range_of(out);
    EXPECT_NEAR(r.lo, 1.0f, 1e-5);
    EXPECT_NEAR(r.hi, 1.0f, 1e-5);
}

TEST(Restore, DepthResizeDoesNotOvershoot) {
    // A hard step 0 | 10 upscaled 2.5x: a bilinear (triangle) filter never leaves [0, 10].
    const ReformatPlan p = ReformatPlan::make(960, 540, short_side(224), contract(32));
    DepthImage d = make_depth(p.input_width, p.input_height, 0.0f);
    for (int y = 0; y < d.height; ++y)
        for (int x = d.width / 2; x < d.width; ++x) d.data[static_cast<size_t>(y) * d.width + x] = 10.0f;
    const OIIO::ImageBuf out = p.restore(d);
    expect_restored_shape(out, p);
    const Range r = range_of(out);
    EXPECT_TRUE(r.finite);
    // Float rounding only (a ringing filter such as lanczos3 overshoots a step by several percent).
    EXPECT_GE(r.lo, -1e-5f);
    EXPECT_LE(r.hi, 10.0f + 1e-4f);
    EXPECT_NEAR(pixel(out, 5, 270), 0.0f, 1e-6);
    EXPECT_NEAR(pixel(out, 955, 270), 10.0f, 1e-5);
}

TEST(Restore, ShortSideRoundTripOfAHorizontalRampStaysMonotonic) {
    const ReformatPlan p = ReformatPlan::make(960, 540, short_side(224), contract(32));
    DepthImage d = make_depth(p.input_width, p.input_height, 0.0f);
    for (int y = 0; y < d.height; ++y)
        for (int x = 0; x < d.width; ++x) d.data[static_cast<size_t>(y) * d.width + x] = static_cast<float>(x);
    const OIIO::ImageBuf out = p.restore(d);
    expect_restored_shape(out, p);
    float prev = -1.0f;
    for (int x = 0; x < 960; ++x) {
        const float v = pixel(out, x, 100);
        EXPECT_GE(v, prev - 1e-4f) << x;
        prev = v;
    }
    // The middle of the plate maps to the middle of the model output (x ~ 191.5 of 0..383).
    EXPECT_NEAR(pixel(out, 480, 100), 191.5f, 1.0f);
}

// Anamorphic plates: sizes are computed for the desqueezed plate (W * aspect) x H; restore() returns the stored grid.
TEST(Reformat, PixelAspectDesqueezesForTheModel) {
    const ReformatPlan p = ReformatPlan::make(200, 100, plate_size(), contract(1), 2.0);
    EXPECT_EQ(p.scaled_width, 400);
    EXPECT_EQ(p.scaled_height, 100);
    EXPECT_TRUE(p.resizes());
    EXPECT_EQ(p.pixel_aspect, 2.0);
    // 2048x858 at 2:1 is 4096x858 in square pixels: short side 224 -> 1069x224, capped at 4 x 224 on the long
    // side -> 896x188, rounded to multiples of 32 -> 896x192.
    const ReformatPlan q = ReformatPlan::make(2048, 858, short_side(224), contract(32), 2.0);
    EXPECT_EQ(q.scaled_width, 896);
    EXPECT_EQ(q.scaled_height, 192);
    const ReformatPlan r = ReformatPlan::make(1000, 800, short_side(256), contract(32), 2.0);
    EXPECT_EQ(r.scaled_height, 256);
    EXPECT_EQ(r.scaled_width, 640);  // 2000 x 800 -> 640 x 256
    const OIIO::ImageBuf out = r.restore(make_depth(r.input_width, r.input_height, 3.0f));
    expect_restored_shape(out, r);
    EXPECT_FLOAT_EQ(pixel(out, 500, 400), 3.0f);
    // An explicit [w, h] is taken as written; 1 (or a bad value) is square.
    EXPECT_EQ(ReformatPlan::make(200, 100, explicit_size(64, 64), contract(1), 2.0).scaled_width, 64);
    EXPECT_EQ(ReformatPlan::make(200, 100, plate_size(), contract(1), 0.0).scaled_width, 200);
}

// resample.h's filter, written out from its definition (PIL's antialiased bilinear: a tent of half-width
// max(1, scale) source px around each output pixel's centre, weights normalised over the pixels inside), applied
// rows then columns in double precision: the reference the LibTorch kernel must equal.
std::vector<double> tent_weights_1d(int n, int N, std::vector<int>& first) {
    const double scale = static_cast<double>(n) / N, support = std::max(1.0, scale);
    std::vector<double> w(static_cast<size_t>(N) * n, 0.0);
    first.assign(static_cast<size_t>(N), 0);
    for (int o = 0; o < N; ++o) {
        const double centre = (o + 0.5) * scale;
        double sum = 0;
        for (int i = 0; i < n; ++i) {
            const double t = std::max(0.0, 1.0 - std::abs((i + 0.5 - centre) / support));
            w[static_cast<size_t>(o) * n + i] = t;
            sum += t;
        }
        for (int i = 0; i < n; ++i) w[static_cast<size_t>(o) * n + i] /= sum;
    }
    return w;
}

TEST(Reformat, TriangleResizeIsTheTentFilterItDocuments) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (auto [w, h, W, H] : {std::array<int, 4>{96, 54, 38, 22}, {37, 23, 13, 7}, {50, 30, 64, 45}, {8, 8, 1, 1}}) {
        OIIO::ImageBuf src = make_rgb(w, h, [&](int, int, int) { return u(rng); });
        const float* p = static_cast<const float*>(src.localpixels());
        std::vector<int> fx, fy;
        const std::vector<double> wx = tent_weights_1d(w, W, fx), wy = tent_weights_1d(h, H, fy);
        std::vector<float> ours(static_cast<size_t>(3) * W * H);
        resize_triangle_to_planar(p, w, h, 3, W, H, ours.data());
        double worst = 0;
        for (int c = 0; c < 3; ++c)
            for (int y = 0; y < H; ++y)
                for (int x = 0; x < W; ++x) {
                    double v = 0;
                    for (int j = 0; j < h; ++j)
                        for (int i = 0; i < w; ++i)
                            v += wy[static_cast<size_t>(y) * h + j] * wx[static_cast<size_t>(x) * w + i] *
                                 p[(static_cast<size_t>(j) * w + i) * 3 + c];
                    worst = std::max(worst, std::abs(v - ours[(static_cast<size_t>(c) * H + y) * W + x]));
                }
        EXPECT_LT(worst, 2e-6) << w << "x" << h << " -> " << W << "x" << H;
    }
    // A constant stays constant; bad sizes are refused.
    const OIIO::ImageBuf grey = make_rgb(97, 61, [](int, int, int) { return 0.375f; });
    std::vector<float> out(static_cast<size_t>(3) * 40 * 24);
    resize_triangle_to_planar(static_cast<const float*>(grey.localpixels()), 97, 61, 3, 40, 24, out.data());
    for (float v : out) ASSERT_NEAR(v, 0.375f, 1e-7f);
    EXPECT_THROW(resize_triangle_to_planar(out.data(), 0, 5, 3, 4, 4, out.data()), std::invalid_argument);
}

// Issue 22 §2.1: restore from an empty depth image throws; nothing is resized from an empty source (the
// target buffer is made without initialising its pixels, so a resize that writes nothing would leave garbage
// as depth). Also a depth image whose data does not hold width x height values. Run under valgrind by ctest
// (valgrind.RestoreFromEmpty): any read of uninitialised memory on these paths fails it.
TEST(Restore, EmptyOrInconsistentDepthIsRefused) {
    const ReformatPlan p = ReformatPlan::make(64, 48, plate_size(), contract(1));
    const ReformatPlan q = ReformatPlan::make(960, 540, short_side(224), contract(32));
    struct Case {
        int w, h;
        size_t n;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {0, 0, 0, "the depth to restore is 0x0 with 0 values"},
        {64, 0, 0, "the depth to restore is 64x0 with 0 values"},
        {0, 48, 0, "the depth to restore is 0x48 with 0 values"},
        {-4, -4, 16, "the depth to restore is -4x-4 with 16 values"},
        {64, 48, 100, "the depth to restore is 64x48 with 100 values"},   // fewer values than pixels
        {8, 8, 64 * 48, "the depth to restore is 8x8 with 3072 values"},  // more: memcpy would overflow
    };
    for (const ReformatPlan* plan : {&p, &q})
        for (const Case& c : cases) {
            DepthImage d;
            d.width = c.w, d.height = c.h;
            d.data.assign(c.n, 1.0f);
            const std::string msg = test::expect_error<RenderError>([&] { plan->restore(d); }, "restore");
            EXPECT_TRUE(test::contains(msg, c.expected)) << msg;
            EXPECT_TRUE(test::contains(msg, "ReformatPlan::restore")) << msg;
        }
    // A 1x1 depth is small, not empty: it fills the plate with its one value.
    const OIIO::ImageBuf one = q.restore(make_depth(1, 1, 2.5f));
    expect_restored_shape(one, q);
    const Range r = range_of(one);
    EXPECT_EQ(r.lo, 2.5f);
    EXPECT_EQ(r.hi, 2.5f);
}
