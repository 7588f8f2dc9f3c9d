// Unit tests for include/depthbatch/depth_upsample.h (bilinear / guided / edge_hard enlargement) and
// include/depthbatch/tiling.h (the tile grid, alignment to the global depth, seamless blending).
#include "depthbatch/depth_upsample.h"
#include "depthbatch/passes.h"
#include "depthbatch/reformat.h"
#include "depthbatch/tiling.h"

#include <OpenImageIO/imagebuf.h>
#include <OpenImageIO/imagebufalgo.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

using namespace depthbatch;

namespace {

constexpr int kW = 256, kH = 128;                        // the plate
constexpr int kX0 = 101, kX1 = 181, kY0 = 37, kY1 = 93;  // a bright rectangle, edges off the 4 px grid
constexpr float kNear = 2.0f, kFar = 5.0f;               // its depth and the background's

bool inside(int x, int y) { return x >= kX0 && x < kX1 && y >= kY0 && y < kY1; }

/// The plate: a bright rectangle (0.8) on a dark background (0.2), packed float RGB.
OIIO::ImageBuf square_plate() {
    OIIO::ImageBuf buf(OIIO::ImageSpec(kW, kH, 3, OIIO::TypeDesc::FLOAT));
    float* p = static_cast<float*>(buf.localpixels());
    for (int y = 0; y < kH; ++y)
        for (int x = 0; x < kW; ++x)
            for (int c = 0; c < 3; ++c) p[(static_cast<size_t>(y) * kW + x) * 3 + c] = inside(x, y) ? 0.8f : 0.2f;
    return buf;
}

/// What a probe model that outputs a step at the processing size gives: near where the model input is bright.
DepthImage step_model(const ModelInput& in) {
    DepthImage d{in.width, in.height, std::vector<float>(static_cast<size_t>(in.width) * in.height)};
    for (size_t i = 0; i < d.data.size(); ++i) d.data[i] = in.chw[i] > 0.5f ? kNear : kFar;
    return d;
}

struct Rendered {
    ReformatPlan plan;
    std::vector<float> depth;  // kW x kH
    float at(int x, int y) const { return depth[static_cast<size_t>(y) * kW + x]; }
};

/// The plate at 1/4 size through the step model, back to the plate with `method`.
Rendered render(DepthUpsample method) {
    ProcessingSize quarter;
    quarter.mode = ProcessingSize::Mode::Explicit;
    quarter.width_px = kW / 4;
    quarter.height_px = kH / 4;
    ModelContract c;
    c.multiple = 1;
    const OIIO::ImageBuf rgb = square_plate();
    Rendered r{ReformatPlan::make(kW, kH, quarter, c), {}};
    const ModelInput in = r.plan.to_model_input(rgb);
    UpsampleSettings s;
    s.method = method;
    const UpsampleGuide guide = r.plan.make_guide(in, rgb);
    const OIIO::ImageBuf out = r.plan.restore(step_model(in), s, &guide);
    r.depth.assign(static_cast<size_t>(kW) * kH, 0.0f);
    EXPECT_TRUE(out.get_pixels(OIIO::ROI(0, kW, 0, kH, 0, 1, 0, 1), OIIO::TypeDesc::FLOAT, r.depth.data()));
    return r;
}

/// Width in px of the 10%-90% transition from far to near along `values` (linear interpolation between
/// pixel centres): the distance between where the curve crosses 10% and 90% of the step.
double transition_width(const std::vector<float>& values) {
    auto crossing = [&](double level) {
        const float target = static_cast<float>(kFar + level * (kNear - kFar));
        for (size_t i = 1; i < values.size(); ++i)
            if (values[i - 1] > target && values[i] <= target)
                return static_cast<double>(i - 1) + (values[i - 1] - target) / (values[i - 1] - values[i]);
        return -1.0;
    };
    return crossing(0.9) - crossing(0.1);
}

std::vector<float> row(const Rendered& r, int y, int x_from, int x_to) {
    std::vector<float> v;
    for (int x = x_from; x < x_to; ++x) v.push_back(r.at(x, y));
    return v;
}
std::vector<float> column(const Rendered& r, int x, int y_from, int y_to) {
    std::vector<float> v;
    for (int y = y_from; y < y_to; ++y) v.push_back(r.at(x, y));
    return v;
}

}  // namespace

TEST(DepthUpsample, BilinearEdgeIsAsWideAsTheScaleFactor) {
    const Rendered r = render(DepthUpsample::Bilinear);
    // The left edge of the rectangle (x = 101) on its middle row, and the top edge (y = 37) on its middle column.
    const double w = transition_width(row(r, 64, 80, 120));
    EXPECT_GT(w, 2.5) << "bilinear spreads a model pixel's step over about 4 plate pixels";
    EXPECT_LT(w, 5.0);
    EXPECT_GT(transition_width(column(r, 140, 20, 60)), 2.5);
}

TEST(DepthUpsample, GuidedEdgeIsAtMostTwoPixelsWideAndOnThePlateEdge) {
    const Rendered r = render(DepthUpsample::Guided);
    for (int y : {50, 64, 80}) {
        const std::vector<float> v = row(r, y, 80, 120);
        EXPECT_LE(transition_width(v), 2.0) << "row " << y;
        // Half way between the sides at the plate's edge: between pixel 100 (dark) and 101 (bright).
        EXPECT_GT(r.at(kX0 - 2, y), 0.5f * (kNear + kFar)) << "row " << y;
        EXPECT_LT(r.at(kX0 + 1, y), 0.5f * (kNear + kFar)) << "row " << y;
    }
    EXPECT_LE(transition_width(column(r, 140, 20, 60)), 2.0);
    // Far from edges the depth is the model's.
    EXPECT_NEAR(r.at(140, 64), kNear, 1e-3);
    EXPECT_NEAR(r.at(20, 10), kFar, 1e-3);
}

TEST(DepthUpsample, EdgeHardHasNoMixedDepthsAndItsEdgeOnThePlateEdge) {
    const Rendered r = render(DepthUpsample::EdgeHard);
    int mixed = 0, misplaced = 0;
    for (int y = 0; y < kH; ++y)
        for (int x = 0; x < kW; ++x) {
            const float v = r.at(x, y);
            if (std::abs(v - kNear) > 1e-4f && std::abs(v - kFar) > 1e-4f) ++mixed;
            // Within 1 px of the plate's edge either side is right; anywhere else the plate's side is.
            bool near_edge = false;
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx) near_edge |= inside(x + dx, y + dy) != inside(x, y);
            if (!near_edge && std::abs(v - (inside(x, y) ? kNear : kFar)) > 1e-4f) ++misplaced;
        }
    EXPECT_EQ(mixed, 0) << "no pixel holds a depth between the two sides";
    EXPECT_EQ(misplaced, 0) << "the depth edge lies on the plate's edge within 1 px";
}

// ---- edge_hard wherever an edge falls ------------------------------------------------------------------
//
// A two-level plate (a rectangle of luma 0.9 on 0.1) through the real reformat (the triangle filter mixes the
// model pixels an edge crosses: one or two per edge, whatever its phase) and a model whose depth is a linear
// function of its input, so mixed model pixels hold mixed depths (what a real network does at an edge it saw
// inside one pixel), then edge_hard back to the plate. Every output value must be one of the two plateaus and
// the boundary within 1 plate px of the rectangle's edge.

namespace {

struct Rect {
    double x0, y0, x1, y1;  // plate coordinates; pixel (x, y) covers [x, x + 1) x [y, y + 1)
};

/// The fraction of plate pixel [i, i + 1) inside [a, b): edges between pixel centres are anti-aliased.
double cover(int i, double a, double b) { return std::clamp(std::min(b, i + 1.0) - std::max(a, double(i)), 0.0, 1.0); }

/// The plate's two levels and the probe model: depth a linear function of the input, pointwise, so a mixed
/// input pixel is a mixed depth. Two scenes: bright near (depth 5 - 3 v on luma 0.1 / 0.9), and bright far on
/// black and white (depth 0.1 + 0.8 v, the held-back check's 0.1 and 0.9).
struct Scene {
    float dark, bright, a, b;  // depth = a + b * v
    float depth(float v) const { return a + b * v; }
};
constexpr Scene kNearBright{0.1f, 0.9f, 5.0f, -3.0f}, kFarBright{0.0f, 1.0f, 0.1f, 0.8f};

struct PhaseResult {
    long mixed = 0, misplaced = 0;
    float worst = 0;  // the mixed value furthest from both plateaus
    float worst_gap = -1;
};

/// A W x H plate holding `r`, processed at w x h, enlarged back with edge_hard.
PhaseResult edge_hard_on(int W, int H, int w, int h, const Rect& r, const Scene& sc = kNearBright,
                         std::vector<float>* depth_out = nullptr) {
    OIIO::ImageBuf rgb(OIIO::ImageSpec(W, H, 3, OIIO::TypeDesc::FLOAT));
    float* px = static_cast<float*>(rgb.localpixels());
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            const double c = cover(x, r.x0, r.x1) * cover(y, r.y0, r.y1);
            for (int k = 0; k < 3; ++k)
                px[(static_cast<size_t>(y) * W + x) * 3 + k] = static_cast<float>(sc.dark + c * (sc.bright - sc.dark));
        }
    ProcessingSize size;
    size.mode = ProcessingSize::Mode::Explicit;
    size.width_px = w;
    size.height_px = h;
    ModelContract c;
    c.multiple = 1;
    const ReformatPlan plan = ReformatPlan::make(W, H, size, c);
    const ModelInput in = plan.to_model_input(rgb);
    DepthImage d{in.width, in.height, std::vector<float>(static_cast<size_t>(in.width) * in.height)};
    for (size_t i = 0; i < d.data.size(); ++i) d.data[i] = sc.depth(in.chw[i]);
    UpsampleSettings s;
    s.method = DepthUpsample::EdgeHard;
    const UpsampleGuide guide = plan.make_guide(in, rgb);
    const OIIO::ImageBuf out = plan.restore(d, s, &guide);
    std::vector<float> z(static_cast<size_t>(W) * H);
    EXPECT_TRUE(out.get_pixels(OIIO::ROI(0, W, 0, H, 0, 1, 0, 1), OIIO::TypeDesc::FLOAT, z.data()));
    const float near = sc.depth(sc.bright), far = sc.depth(sc.dark);
    if (depth_out) *depth_out = z;
    PhaseResult res;
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            const float v = z[static_cast<size_t>(y) * W + x];
            const bool is_near = std::abs(v - near) <= 1e-5f, is_far = std::abs(v - far) <= 1e-5f;
            if (!is_near && !is_far) {
                ++res.mixed;
                if (const float gap = std::min(std::abs(v - near), std::abs(v - far)); gap > res.worst_gap)
                    res.worst = v, res.worst_gap = gap;
            }
            // The pixel centre's distance to the rectangle's outline (Chebyshev): within 1 px either side is right.
            const double cx = x + 0.5, cy = y + 0.5;
            const bool inside = cx > r.x0 && cx < r.x1 && cy > r.y0 && cy < r.y1;
            const double dx = std::min(std::abs(cx - r.x0), std::abs(cx - r.x1)),
                         dy = std::min(std::abs(cy - r.y0), std::abs(cy - r.y1));
            const bool by_edge = inside
                                     ? std::min(dx, dy) <= 1.0
                                     : (std::max(r.x0 - cx, cx - r.x1) <= 1.0 && std::max(r.y0 - cy, cy - r.y1) <= 1.0);
            if (!by_edge && (inside ? !is_near : !is_far)) ++res.misplaced;
        }
    return res;
}

}  // namespace

// The held-back check of issue 25: edges at 131 and 388 on a 512 plate processed at 128 gave a line of mixed
// depth (1,028 px) all around the square.
TEST(DepthUpsample, EdgeHardSquareBetweenModelPixels) {
    for (const Scene& sc : {kNearBright, kFarBright}) {
        const PhaseResult r = edge_hard_on(512, 512, 128, 128, {131, 131, 388, 388}, sc);
        EXPECT_EQ(r.mixed, 0) << "e.g. " << r.worst;
        EXPECT_EQ(r.misplaced, 0);
    }
}

// Every sub-pixel phase of the edges against the model's grid (the left/top edge and, with it, the
// right/bottom one, in quarter plate pixels: whole-pixel and anti-aliased edges), at 2x, 3x, 4x, 3.7x and 1.5x,
// and plates larger than the processing size by different non-integer factors in x and y.
TEST(DepthUpsample, EdgeHardHasNoMixedDepthsAtAnyPhaseOrScale) {
    struct Case {
        int W, H, w, h;
    };
    const Case cases[] = {{192, 160, 96, 80},    // 2x
                          {240, 192, 80, 64},    // 3x
                          {256, 192, 64, 48},    // 4x
                          {259, 222, 70, 60},    // 3.7x
                          {180, 150, 120, 100},  // 1.5x
                          {263, 181, 71, 67},    // 3.70x by 2.70x
                          {301, 157, 97, 31}};   // 3.10x by 5.06x
    long total_mixed = 0, total_misplaced = 0, renders = 0;
    for (const Case& c : cases) {
        const double sx = double(c.W) / c.w, sy = double(c.H) / c.h;
        // Enough quarter-pixel steps to pass through every phase of one model pixel (and one more).
        const int steps = 4 * static_cast<int>(std::ceil(std::max(sx, sy))) + 4;
        for (int k = 0; k <= steps; ++k) {
            const double x0 = 0.3 * c.W + 0.25 * k, y0 = 0.3 * c.H + 0.25 * k;
            // The far edges move at another rate, so near and far edges take their phases independently.
            const double x1 = 0.7 * c.W + 0.25 * ((3 * k) % (steps + 1)),
                         y1 = 0.7 * c.H + 0.25 * ((5 * k) % (steps + 1));
            for (const Scene& sc : {kNearBright, kFarBright}) {
                const PhaseResult r = edge_hard_on(c.W, c.H, c.w, c.h, {x0, y0, x1, y1}, sc);
                EXPECT_EQ(r.mixed, 0) << c.W << "x" << c.H << " at " << c.w << "x" << c.h << ", rectangle " << x0 << ","
                                      << y0 << " - " << x1 << "," << y1 << ": e.g. " << r.worst;
                EXPECT_EQ(r.misplaced, 0) << c.W << "x" << c.H << " at " << c.w << "x" << c.h << ", rectangle " << x0
                                          << "," << y0 << " - " << x1 << "," << y1;
                total_mixed += r.mixed, total_misplaced += r.misplaced, ++renders;
            }
        }
    }
    EXPECT_GT(renders, 250);
    EXPECT_EQ(total_mixed, 0);
    EXPECT_EQ(total_misplaced, 0);
}

// P from edge_hard depth has no flying points (issue 25): every position of the held-back square and of an
// anamorphic, off-grid rectangle lies on the foreground plane or the background plane (P.Z = -depth of one side,
// and P.X, P.Y on that side's ray), none in the space between them.
TEST(DepthUpsample, PositionsFromEdgeHardDepthHaveNoFlyingPoints) {
    struct Case {
        int W, H, w, h;
        Rect r;
        double aspect;
    };
    const Case cases[] = {{512, 512, 128, 128, {131, 131, 388, 388}, 1.0},
                          {263, 181, 71, 67, {80.25, 54.5, 190.75, 130.25}, 2.0}};
    for (const Case& c : cases) {
        std::vector<float> z;
        const PhaseResult r = edge_hard_on(c.W, c.H, c.w, c.h, c.r, kNearBright, &z);
        ASSERT_EQ(r.mixed, 0);
        PlateCamera cam;
        cam.fx = 1.2 * c.W;
        cam.fy = cam.fx * c.aspect;
        cam.pixel_aspect = c.aspect;
        cam.cx = c.W / 2.0, cam.cy = c.H / 2.0;
        std::vector<float> px(z.size()), py(z.size()), pz(z.size());
        float* const planes[3] = {px.data(), py.data(), pz.data()};
        position_pass(z.data(), c.W, c.H, cam, planes);
        const float near = kNearBright.depth(kNearBright.bright), far = kNearBright.depth(kNearBright.dark);
        long flying = 0;
        for (int y = 0; y < c.H; ++y)
            for (int x = 0; x < c.W; ++x) {
                const size_t i = static_cast<size_t>(y) * c.W + x;
                const bool on_near = std::abs(pz[i] + near) <= 1e-5f, on_far = std::abs(pz[i] + far) <= 1e-5f;
                double ray[3];
                cam.ray(x, y, ray);
                const double d = -pz[i];
                const bool on_ray = std::abs(px[i] - ray[0] * d) <= 1e-4 * std::abs(d) + 1e-6 &&
                                    std::abs(py[i] - ray[1] * d) <= 1e-4 * std::abs(d) + 1e-6;
                if (!(on_near || on_far) || !on_ray) ++flying;
            }
        EXPECT_EQ(flying, 0) << c.W << "x" << c.H << " at " << c.w << "x" << c.h;
    }
}

TEST(DepthUpsample, SmoothSlopesKeepTheirValuesUnderEdgeHard) {
    // A ramp of depth (a floor) with no plate edges: edge_hard must not quantize it into steps.
    const int w = 32, h = 32, W = 128, H = 128;
    Plane p{w, h, {}}, gl{w, h, std::vector<float>(static_cast<size_t>(w) * h, 0.5f)},
        gh{W, H, std::vector<float>(static_cast<size_t>(W) * H, 0.5f)};
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) p.data.push_back(1.0f + 0.1f * y);
    UpsampleSettings s;
    s.method = DepthUpsample::EdgeHard;
    const Plane q = guided_upsample(p, gl, gh, s);
    s.method = DepthUpsample::Guided;
    const Plane g = guided_upsample(p, gl, gh, s);
    // Away from the top and bottom rows (where guided's truncated box means bend a ramp and edge_hard's clamp
    // to the model's values straightens it), edge_hard is guided, unsnapped.
    for (int y = 16; y < H - 16; ++y)
        for (int x = 0; x < W; ++x) ASSERT_EQ(q.at(x, y), g.at(x, y)) << x << "," << y;
    // Rows in the middle follow the ramp: 0.1 per model row = 0.025 per plate row.
    EXPECT_NEAR(q.at(64, 65) - q.at(64, 64), 0.025f, 1e-4);
}

// bilinear_upsample is the sampling OIIO's ImageBufAlgo::resample(interpolate) does (which the bilinear method
// used until it measured 172 ms a 1080p frame): same values to float rounding, borders included.
TEST(DepthUpsample, BilinearMatchesOiioResample) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0.5f, 9.0f);
    for (auto [w, h, W, H] : {std::array<int, 4>{37, 23, 100, 61}, {64, 36, 960, 540}, {5, 5, 5, 9}, {1, 3, 7, 3}}) {
        OIIO::ImageBuf src(OIIO::ImageSpec(w, h, 1, OIIO::TypeDesc::FLOAT));
        float* p = static_cast<float*>(src.localpixels());
        for (int i = 0; i < w * h; ++i) p[i] = u(rng);
        OIIO::ImageBuf ref(OIIO::ImageSpec(W, H, 1, OIIO::TypeDesc::FLOAT));
        ASSERT_TRUE(OIIO::ImageBufAlgo::resample(ref, src, true, {}, 1));
        std::vector<float> ours(static_cast<size_t>(W) * H);
        bilinear_upsample(p, w, h, W, H, ours.data());
        const float* r = static_cast<const float*>(ref.localpixels());
        for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x)
                // OIIO computes source positions in float: ~1e-6 px off, times steps of up to 8.5 a pixel here.
                ASSERT_NEAR(ours[static_cast<size_t>(y) * W + x], r[static_cast<size_t>(y) * W + x], 1e-4f)
                    << w << "x" << h << " -> " << W << "x" << H << " at " << x << "," << y;
    }
    // A constant stays exactly constant (v0 + t * (v1 - v0) with v1 = v0).
    std::vector<float> c(12, 4.0f), out(48 * 30);
    bilinear_upsample(c.data(), 4, 3, 48, 30, out.data());
    for (float v : out) ASSERT_EQ(v, 4.0f);
    EXPECT_THROW(bilinear_upsample(c.data(), 4, 3, 3, 30, out.data()), std::invalid_argument);
}

TEST(DepthUpsample, BoxMeanMatchesADirectSum) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1, 1);
    Plane in{13, 9, {}};
    for (int i = 0; i < 13 * 9; ++i) in.data.push_back(u(rng));
    for (int r : {1, 2, 5, 20}) {
        const Plane m = box_mean(in, r);
        for (int y = 0; y < in.height; ++y)
            for (int x = 0; x < in.width; ++x) {
                double sum = 0;
                int n = 0;
                for (int j = std::max(0, y - r); j <= std::min(in.height - 1, y + r); ++j)
                    for (int i = std::max(0, x - r); i <= std::min(in.width - 1, x + r); ++i) sum += in.at(i, j), ++n;
                ASSERT_NEAR(m.at(x, y), sum / n, 1e-5) << "r " << r << " at " << x << "," << y;
            }
    }
}

TEST(DepthUpsample, MismatchedSizesAreRefused) {
    Plane p{4, 4, std::vector<float>(16, 1.0f)}, gl{4, 3, std::vector<float>(12, 0.5f)},
        gh{8, 8, std::vector<float>(64, 0.5f)};
    UpsampleSettings s;
    s.method = DepthUpsample::Guided;
    EXPECT_THROW(guided_upsample(p, gl, gh, s), std::invalid_argument);
}

// ---- tiling ----------------------------------------------------------------------------------------

TEST(Tiling, GridCoversThePlateWithTheOverlapAsked) {
    const std::vector<TileRect> t = tile_grid(4096, 2160, 1024, 256);
    ASSERT_FALSE(t.empty());
    std::vector<int> xs, ys;
    for (const TileRect& r : t) {
        EXPECT_EQ(r.width, 1024);
        EXPECT_EQ(r.height, 1024);
        if (r.y == 0) xs.push_back(r.x);
        if (r.x == 0) ys.push_back(r.y);
    }
    EXPECT_EQ(t.size(), xs.size() * ys.size());
    EXPECT_EQ(xs.front(), 0);
    EXPECT_EQ(xs.back() + 1024, 4096) << "the last column ends at the plate's edge";
    EXPECT_EQ(ys.back() + 1024, 2160);
    for (size_t i = 1; i < xs.size(); ++i) EXPECT_GE(xs[i - 1] + 1024 - xs[i], 256) << "overlap";
    for (size_t i = 1; i < ys.size(); ++i) EXPECT_GE(ys[i - 1] + 1024 - ys[i], 256) << "overlap";
    EXPECT_EQ(xs.size(), 5u);  // 1 + ceil((4096 - 1024) / (1024 - 256))
    EXPECT_EQ(ys.size(), 3u);
    // A plate smaller than a tile along one side: one row of tiles the plate's height.
    const std::vector<TileRect> wide = tile_grid(3000, 500, 1024, 128);
    for (const TileRect& r : wide) EXPECT_EQ(r.height, 500);
}

TEST(Tiling, BlendOfConstantTilesIsConstantWithoutSeams) {
    const int W = 700, H = 300;
    TileBlender b(W, H, 40);
    for (const TileRect& r : tile_grid(W, H, 160, 40))
        b.add(r, std::vector<float>(static_cast<size_t>(r.width) * r.height, 3.25f));
    const Plane out = b.result();
    for (float v : out.data) ASSERT_NEAR(v, 3.25f, 1e-5);
}

TEST(Tiling, BlendIsContinuousAcrossTileBorders) {
    // Tiles holding a smooth function of plate position give that function back: the weights are a partition
    // of unity in every overlap.
    const int W = 500, H = 260;
    auto f = [](int x, int y) { return 1.0f + 0.01f * x - 0.003f * y; };
    TileBlender b(W, H, 32);
    for (const TileRect& r : tile_grid(W, H, 128, 32)) {
        std::vector<float> v;
        for (int y = 0; y < r.height; ++y)
            for (int x = 0; x < r.width; ++x) v.push_back(f(r.x + x, r.y + y));
        b.add(r, v);
    }
    const Plane out = b.result();
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) ASSERT_NEAR(out.at(x, y), f(x, y), 1e-4) << x << "," << y;
}

TEST(Tiling, AlignmentRecoversScaleAndShiftOrTheShiftOfAFlatTile) {
    std::vector<float> tile, global;
    for (int i = 0; i < 5000; ++i) {
        tile.push_back(0.001f * i);
        global.push_back(2.5f * 0.001f * i - 0.75f);
    }
    const auto [s, b] = align_to_global(tile, global);
    EXPECT_NEAR(s, 2.5, 1e-4);
    EXPECT_NEAR(b, -0.75, 1e-4);
    const auto [s1, b1] = align_to_global(std::vector<float>(1000, 0.4f), std::vector<float>(1000, 1.9f));
    EXPECT_EQ(s1, 1.0);
    EXPECT_NEAR(b1, 1.5, 1e-6);
}
