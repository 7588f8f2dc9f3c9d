// Unit tests for include/depthbatch/depth_preview.h: matplotlib's colour maps as written by tools/colormaps.py,
// and a preview's size, colours (monotonic in depth, near bright) and legend.
#include "depthbatch/depth_normalizer.h"
#include "depth_preview_pvt.h"
#include "depthbatch/depth_preview.h"
#include "depthbatch/error.h"
#include "output/output_guard.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <OpenImageIO/imagebufalgo.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

using namespace depthbatch;
using test::contains;
using test::expect_error;

namespace {

/// The preview at `path`, opened through an empty output guard (the door every writer's file comes through).
void write_depth_preview(const std::string& path, const OIIO::ImageBuf& depth, const PreviewRange& range,
                         const Colormap& map, int size, const std::string& caption) {
    Publication out = OutputGuard().open(path, OutputRole::Preview);
    depthbatch::write_depth_preview(out, depth, range, map, size, caption);
}
/// Index of the table entry nearest to `rgb` (the colour map inverted).
int nearest_entry(const Colormap& map, const float* rgb) {
    int best = 0;
    double best_d = 1e9;
    for (size_t k = 0; k < map.table.size(); ++k) {
        double d = 0;
        for (int c = 0; c < 3; ++c) d += (map.table[k][c] - rgb[c]) * (map.table[k][c] - rgb[c]);
        if (d < best_d) best_d = d, best = static_cast<int>(k);
    }
    return best;
}
}  // namespace

// matplotlib's tables, 256 entries each: turbo starts dark blue-violet and ends dark red; viridis and inferno
// get lighter from start to end (their design: monotonic lightness).
TEST(DepthPreview, ColourMapsAreMatplotlibsTables) {
    const Colormap turbo = load_colormap("turbo");
    ASSERT_EQ(turbo.table.size(), 256u);
    EXPECT_NEAR(turbo.table[0][0], 0.18995, 1e-5);  // matplotlib _turbo_data[0] = (0.18995, 0.07176, 0.23217)
    EXPECT_NEAR(turbo.table[0][2], 0.23217, 1e-5);
    EXPECT_NEAR(turbo.table[255][0], 0.47960, 1e-5);  // _turbo_data[255] = (0.47960, 0.01583, 0.01055)
    for (const char* name : {"viridis", "inferno"}) {
        const Colormap m = load_colormap(name);
        const auto luma = [](const std::array<float, 3>& c) { return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]; };
        for (size_t k = 16; k < 256; k += 16) EXPECT_GT(luma(m.table[k]), luma(m.table[k - 16])) << name << " " << k;
    }
    EXPECT_TRUE(contains(expect_error<ConfigError>([] { load_colormap("jet"); }), "turbo, viridis, inferno"));
}

// A depth ramp from near (left, 1 m) to far (right, 5 m): the preview is resized to its long side, its colours
// run monotonically from the near (bright, top of the map) to the far end, and the legend strip holds text.
TEST(DepthPreview, ColoursFollowDepthAndTheLegendIsDrawn) {
    test::TempDir dir;
    OIIO::ImageBuf depth(OIIO::ImageSpec(400, 200, 1, OIIO::TypeDesc::FLOAT));
    for (int y = 0; y < 200; ++y)
        for (int x = 0; x < 400; ++x) {
            const float v = 1.0f + 4.0f * x / 399.0f;
            depth.setpixel(x, y, &v, 1);
        }
    const Colormap map = load_colormap("turbo");
    const test::fs::path png = dir / "p.1001.png";
    write_depth_preview(png.string(), depth, {1.0, 5.0, "m"}, map, 200, "frame 1001");
    OIIO::ImageBuf out(png.string());
    ASSERT_TRUE(out.read(0, 0, true, OIIO::TypeDesc::FLOAT)) << out.geterror();
    EXPECT_EQ(out.spec().width, 200);   // long side 400 -> 200
    ASSERT_GT(out.spec().height, 100);  // 100 px of image + the legend strip below
    int previous = 256;
    for (int x = 2; x < 198; x += 4) {
        float rgb[3];
        out.getpixel(x, 50, rgb, 3);
        const int k = nearest_entry(map, rgb);
        EXPECT_LE(k, previous + 2) << "x " << x << ": colours must go from near (top of the map) to far";
        previous = std::min(previous, k);
    }
    float left[3], right[3];
    out.getpixel(1, 50, left, 3);
    out.getpixel(198, 50, right, 3);
    EXPECT_GT(nearest_entry(map, left), 240);  // 1 m: the near end
    EXPECT_LT(nearest_entry(map, right), 15);  // 5 m: the far end
    // The legend: light text pixels in the strip below the image (labels and caption), none in a black image.
    int light = 0;
    for (int y = 100; y < out.spec().height; ++y)
        for (int x = 0; x < 200; ++x) {
            float rgb[3];
            out.getpixel(x, y, rgb, 3);
            light += rgb[0] > 0.9f && rgb[1] > 0.9f && rgb[2] > 0.9f;
        }
    EXPECT_GT(light, 100) << "no legend text drawn";
}

// The preview's direction for every convention: a frame whose left edge is the nearest point and right edge the
// farthest, written by DepthNormalizer, previewed over its own range with the near end where
// DepthNormalizer::larger_is_nearer puts it (as run_job's preview_range does without a job range). The nearest
// pixel takes the bright end of the map and the colour bar's near end (right, under "near"), the farthest the
// dark end and the bar's far end (left, under "far"), whichever way the written values run.
TEST(DepthPreview, NearIsTheBrightEndOfTheColourBarForEveryConvention) {
    struct Case {
        DepthConvention kind;
        Normalization normalize;
        int near_is;
        DepthKind model;
    };
    const std::vector<Case> cases = {
        {DepthConvention::Raw, Normalization::Raw, 0, DepthKind::MetricDepth},
        {DepthConvention::Inverse, Normalization::Raw, 0, DepthKind::MetricDepth},
        {DepthConvention::Normalized, Normalization::Frame, 0, DepthKind::MetricDepth},
        {DepthConvention::Normalized, Normalization::Frame, 1, DepthKind::MetricDepth},
        {DepthConvention::Raw, Normalization::Raw, 0, DepthKind::RelativeInverseDepth},
        {DepthConvention::Inverse, Normalization::Raw, 0, DepthKind::RelativeInverseDepth},
        {DepthConvention::Normalized, Normalization::Frame, 0, DepthKind::RelativeInverseDepth},
        {DepthConvention::Normalized, Normalization::Frame, 1, DepthKind::RelativeInverseDepth},
        {DepthConvention::Raw, Normalization::Raw, 0, DepthKind::RelativeDepth},
        {DepthConvention::Inverse, Normalization::Raw, 0, DepthKind::RelativeDepth},
        {DepthConvention::Normalized, Normalization::Frame, 1, DepthKind::RelativeDepth},
    };
    test::TempDir dir;
    const Colormap map = load_colormap("viridis");
    constexpr int W = 64, H = 16;
    for (const Case& c : cases) {
        DepthSettings job;
        job.convention = c.kind;
        job.normalize = c.normalize;
        job.near_is = c.near_is;
        const DepthNormalizer normalizer(job, c.model);
        const std::string what = std::string(option_name(c.kind)) + " near_is " + std::to_string(c.near_is) + " of a " +
                                 depth_kind_name(c.model) + " model";
        // Raw model values from the nearest (x = 0) to the farthest (x = W - 1) point.
        const bool raw_larger_is_nearer = c.model == DepthKind::RelativeInverseDepth;
        std::vector<float> values(W * H);
        for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x) {
                const float t = static_cast<float>(x) / (W - 1);  // 0 near .. 1 far
                values[static_cast<size_t>(y) * W + x] = raw_larger_is_nearer ? 5.0f - 4.0f * t : 1.0f + 4.0f * t;
            }
        const DepthRange range = normalizer.range_from_percentiles(1.0, 5.0);
        normalizer.apply(values.data(), values.size(), &range);
        const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
        const bool larger_is_nearer = normalizer.larger_is_nearer();
        const PreviewRange preview{larger_is_nearer ? *hi : *lo, larger_is_nearer ? *lo : *hi, normalizer.units()};

        OIIO::ImageBuf depth(OIIO::ImageSpec(W, H, 1, OIIO::TypeDesc::FLOAT));
        for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x) depth.setpixel(x, y, &values[static_cast<size_t>(y) * W + x], 1);
        const test::fs::path png = dir / (std::string(option_name(c.kind)) + std::to_string(c.near_is) + "_" +
                                          depth_kind_name(c.model) + ".png");
        write_depth_preview(png.string(), depth, preview, map, W, "");
        OIIO::ImageBuf out(png.string());
        ASSERT_TRUE(out.read(0, 0, true, OIIO::TypeDesc::FLOAT)) << what << ": " << out.geterror();
        ASSERT_GT(out.spec().height, H) << what;
        auto entry = [&](int x, int y) {
            float rgb[3];
            out.getpixel(x, y, rgb, 3);
            return nearest_entry(map, rgb);
        };
        EXPECT_GT(entry(0, H / 2), 250) << what << ": the nearest pixel is the bright (near) end";
        EXPECT_LT(entry(W - 1, H / 2), 5) << what << ": the farthest pixel is the dark (far) end";
        // The colour bar in the legend strip (from x = W/20 to W - W/20, just below the image): far at its left
        // end, near at its right end, as the labels say.
        const int bar_y = H + 44 / 4, bar_left = W / 20, bar_right = W - W / 20 - 1;
        EXPECT_LT(entry(bar_left, bar_y), 5) << what << ": the bar's far end";
        EXPECT_GT(entry(bar_right, bar_y), 250) << what << ": the bar's near end";
    }
}

// The legend's labels never overlap (issue 26 §4): side by side when they fit, else the near label and then the
// caption move to lines of their own; a narrow preview's legend grows by those lines.
TEST(DepthPreview, LegendLabelsMoveToTheirOwnLinesRatherThanOverlap) {
    // 480 px wide: "far 1.2 m" (80 px), "near 9.8 m" (90), "frame 1001" (40) side by side.
    LegendLayout l = legend_layout(24, 456, 240, 80, 90, 40, 7);
    EXPECT_EQ(l.lines, 1);
    // A long caption that reaches the far label: its own line.
    l = legend_layout(24, 456, 240, 100, 100, 250, 7);
    EXPECT_EQ(l.lines, 2);
    EXPECT_EQ(l.near_line, 0);
    EXPECT_EQ(l.caption_line, 1);
    // 120 px wide: far and near do not fit side by side, nor the caption beside near.
    l = legend_layout(6, 114, 60, 70, 75, 30, 7);
    EXPECT_EQ(l.lines, 3);
    EXPECT_EQ(l.near_line, 1);
    EXPECT_EQ(l.caption_line, 2);
    // Near on its own line, the short caption fits left of it there.
    l = legend_layout(6, 114, 60, 70, 40, 10, 4);
    EXPECT_EQ(l.near_line, 1);
    EXPECT_EQ(l.caption_line, 1);
    EXPECT_EQ(l.lines, 2);
    // No caption: nothing to place.
    EXPECT_EQ(legend_layout(24, 456, 240, 80, 90, 0, 7).lines, 1);

    // Drawn: the same depth at 480 and 120 px; the narrow one's legend strip is taller (two more lines).
    test::TempDir dir;
    OIIO::ImageBuf depth(OIIO::ImageSpec(480, 270, 1, OIIO::TypeDesc::FLOAT));
    OIIO::ImageBufAlgo::fill(depth, {2.0f});
    const Colormap map = load_colormap("turbo");
    write_depth_preview((dir / "wide.png").string(), depth, {1.25, 9.75, "m"}, map, 480, "frame 1001");
    write_depth_preview((dir / "narrow.png").string(), depth, {1.25, 9.75, "m"}, map, 120, "frame 1001");
    const auto wide = test::file_spec(dir / "wide.png"), narrow = test::file_spec(dir / "narrow.png");
    EXPECT_EQ(wide.width, 480);
    EXPECT_EQ(narrow.width, 120);
    const int wide_legend = wide.height - 270, narrow_legend = narrow.height - 68;  // 270 * 120 / 480 = 67.5 -> 68
    EXPECT_EQ(wide_legend, 44) << "one line";
    EXPECT_GT(narrow_legend, wide_legend) << "labels that do not fit get lines of their own";
}
