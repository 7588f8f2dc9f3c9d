// Issue 41 §2: temporal fits that cannot explode. A relative video shot held on twos reached 7,596 where its raw
// maximum was 1.42: the consecutive-frame fit of two frames of a pan keeps only the pixels whose colour did not change
// (a flat sky), over which any slope fits, and the stabilizer composed it over its window. These tests are properties
// over generated shots, not one recipe: every stabilized value of every frame stays within its raw window's range
// widened by kFitRangeMargin of its span (temporal_stabilizer.h, "The bound"), for held frames on twos and threes,
// static shots, fades to black, cuts, noise, constant and tiny plates, as a relative and as a metric model would give
// them, at radii 1, 2 and 4; and the fits themselves return the identity where they are not pinned.
#include "depthbatch/scale_shift.h"
#include "depthbatch/temporal_stabilizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace depthbatch;

namespace {

/// One generated frame: the model input (RGB in 0-1, planar) and the model's raw output, both W x H.
struct Generated {
    ModelInput input;
    DepthImage raw;
};

/// A shot generator: frame f of `frames` -> its input and raw depth.
using Shot = std::function<Generated(int f)>;

constexpr int kW = 48, kH = 32;

float hash01(int x, int y, int seed) {  // a fixed texture in 0-1
    unsigned h = static_cast<unsigned>(x) * 374761393u + static_cast<unsigned>(y) * 668265263u +
                 static_cast<unsigned>(seed) * 2246822519u;
    h = (h ^ (h >> 13)) * 1274126177u;
    return static_cast<float>((h ^ (h >> 16)) & 0xffffff) / static_cast<float>(0xffffff);
}

/// A scene seen through a pan of `offset` pixels: the top third is sky (flat colour, far, a little noise in depth as
/// a network gives), the rest textured ground whose depth falls towards the bottom, with a box. `stripes`: the
/// ground's texture is 3-pixel stripes, so a pan of 3 pixels changes the colour of every ground pixel and only the sky
/// passes the stabilizer's colour mask (the held frames: a jump between two held pairs). `relative`: the raw
/// value is disparity times `gain` plus `shift` (a relative model's jitter); else metres.
Generated scene(int w, int h, int offset, int seed, bool relative, double gain, double shift, double fade = 1.0,
                double noise = 1e-3, int noise_seed = 0, bool stripes = false) {
    Generated g;
    g.input.width = g.raw.width = w;
    g.input.height = g.raw.height = h;
    g.input.chw.assign(3 * static_cast<size_t>(w) * h, 0.f);
    g.raw.data.resize(static_cast<size_t>(w) * h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const int sx = x + offset;
            const bool sky = y < h / 3;
            const bool box = !sky && ((sx / 12 + seed) % 3 == 0) && y > h / 2;
            double metres = sky ? 40.0 : box ? 3.0 : 2.0 + 10.0 * (h - y) / h;
            metres *= 1.0 + noise * (hash01(sx, y, 7 + noise_seed) - 0.5);
            const size_t p = static_cast<size_t>(y) * w + x;
            for (int c = 0; c < 3; ++c)
                g.input.chw[c * static_cast<size_t>(w) * h + p] = static_cast<float>(
                    fade * (sky       ? 0.6 + 0.1 * c
                            : stripes ? 0.2 + 0.5 * ((sx / 3) % 2) + 0.1 * hash01(sx, y + 100 * c, seed)
                                      : hash01(sx, y + 100 * c, seed)));
            g.raw.data[p] = static_cast<float>(relative ? gain / metres + shift : metres);
        }
    return g;
}

/// Jitter of a relative model's scale and shift for content index c (a held frame repeats its content exactly).
double gain_of(int c) { return 1.0 + 0.15 * std::sin(1.7 * c); }
double shift_of(int c) { return 0.02 * std::cos(2.3 * c); }

struct NamedShot {
    std::string name;
    int frames;
    Shot shot;
};

std::vector<NamedShot> generated_shots(bool relative) {
    std::vector<NamedShot> shots;
    const auto pan = [relative](int c, int w = kW, int h = kH, double noise = 1e-3, int noise_seed = 0) {
        return scene(w, h, 3 * c, 1, relative, relative ? gain_of(c) : 1.0, relative ? shift_of(c) : 0.0, 1.0, noise,
                     noise_seed);
    };
    shots.push_back({"pan", 24, [pan](int f) { return pan(f); }});
    shots.push_back({"pan held on twos", 24, [pan](int f) { return pan(f / 2); }});
    shots.push_back({"pan held on threes", 24, [pan](int f) { return pan(f / 3); }});
    // A video model gives two equal plates near-equal depth, not equal: a last-bit difference.
    const auto striped = [relative](int c, double noise) {
        return scene(kW, kH, 3 * c, 1, relative, relative ? gain_of(c) : 1.0, relative ? shift_of(c) : 0.0, 1.0, noise,
                     c, true);
    };
    shots.push_back({"striped pan on twos", 24, [striped](int f) { return striped(f / 2, 1e-3); }});
    shots.push_back({"striped pan on threes", 24, [striped](int f) { return striped(f / 3, 1e-3); }});
    shots.push_back({"striped pan on twos, noisy sky", 24, [striped](int f) { return striped(f / 2, 2e-2); }});
    shots.push_back(
        {"pan on twos, near-equal depth", 24, [pan](int f) { return pan(f / 2, kW, kH, 1e-3 + 1e-7 * (f % 2)); }});
    shots.push_back({"static", 16, [pan](int) { return pan(0); }});
    shots.push_back({"static with depth noise", 16, [pan](int f) { return pan(0, kW, kH, 1e-3, f); }});
    shots.push_back({"fade to black", 24, [relative](int f) {
                         const double fade = std::max(0.0, 1.0 - f / 12.0);
                         Generated g = scene(kW, kH, 0, 2, relative, relative ? gain_of(f) : 1.0, 0.0, fade);
                         // The network sees less and less: its depth flattens towards a constant as the plate goes black.
                         for (float& v : g.raw.data)
                             v = static_cast<float>(fade * v + (1 - fade) * (relative ? 0.1 : 5.0));
                         return g;
                     }});
    shots.push_back({"cut", 24, [relative](int f) {
                         return f < 12 ? scene(kW, kH, 2 * f, 1, relative, 1.0, 0.0)
                                       : scene(kW, kH, 2 * f, 5, relative, 3.0, 0.5);
                     }});
    shots.push_back({"noise", 16, [](int f) {
                         Generated g = scene(kW, kH, 0, 1, false, 1.0, 0.0);
                         std::mt19937 rng(static_cast<unsigned>(f));
                         std::uniform_real_distribution<float> u(0.f, 1.f);
                         for (float& v : g.raw.data) v = u(rng);
                         for (float& v : g.input.chw)
                             v = u(rng) < 0.5f ? 0.5f : 0.51f;  // colour static enough for the mask
                         return g;
                     }});
    shots.push_back({"constant plate", 16, [](int f) {
                         Generated g = scene(kW, kH, 0, 1, false, 1.0, 0.0);
                         std::fill(g.input.chw.begin(), g.input.chw.end(), 0.18f);
                         for (size_t i = 0; i < g.raw.data.size(); ++i)
                             g.raw.data[i] = 0.5f + 1e-7f * static_cast<float>((i + f) % 3);
                         return g;
                     }});
    shots.push_back({"tiny plate on twos", 16, [pan](int f) { return pan(f / 2, 4, 4); }});
    return shots;
}

/// Runs `shot` through a stabilizer of radius `r` and checks every output value against the bound of its window
/// (frames f - r .. f + r of the shot, clipped): finite, and in [lo - M, hi + M], M = kFitRangeMargin (hi - lo).
/// Returns the worst excess over the window's range, as a share of its span (0 when inside the range).
double worst_excess(const Shot& shot, int frames, int r, const std::string& what) {
    std::vector<DepthImage> raw;
    std::vector<std::pair<int, DepthImage>> out;
    TemporalStabilizer stab(r);
    for (int f = 0; f < frames; ++f) {
        Generated g = shot(f);
        raw.push_back(g.raw);
        stab.push(f, std::move(g.raw), g.input);
        for (auto& o : stab.pop_ready()) out.push_back(std::move(o));
    }
    stab.flush();
    for (auto& o : stab.pop_ready()) out.push_back(std::move(o));
    EXPECT_EQ(out.size(), static_cast<size_t>(frames)) << what;
    double worst = 0;
    for (const auto& [f, depth] : out) {
        double lo = INFINITY, hi = -INFINITY;
        for (int k = std::max(0, f - r); k <= std::min(frames - 1, f + r); ++k)
            for (float v : raw[static_cast<size_t>(k)].data) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
        const double span = hi - lo, margin = kFitRangeMargin * span + 1e-6 * std::max(1.0, std::abs(hi));
        for (float v : depth.data) {
            EXPECT_TRUE(std::isfinite(v)) << what << " frame " << f;
            const double excess = std::max(lo - v, v - hi);
            EXPECT_LE(excess, margin) << what << " frame " << f << ": " << v << " outside [" << lo << ", " << hi << "]";
            if (span > 0) worst = std::max(worst, excess / span);
            if (excess > margin) return worst;  // one message a frame is enough
        }
    }
    return worst;
}

}  // namespace

TEST(TemporalStabilizerBound, EveryGeneratedShotStaysInItsRawWindowsRange) {
    for (bool relative : {true, false})
        for (const NamedShot& s : generated_shots(relative))
            for (int r : {1, 2, 4}) {
                const std::string what =
                    s.name + (relative ? " (relative)" : " (metric)") + ", radius " + std::to_string(r);
                worst_excess(s.shot, s.frames, r, what);
            }
}

// The guard does not cost what the stabilizer is for: on a pan of a relative model with scale jitter (no held
// frames), consecutive stabilized frames still move much less than raw ones at a sky pixel.
TEST(TemporalStabilizerBound, JitterIsStillTakenOut) {
    const std::vector<NamedShot> shots = generated_shots(true);
    const Shot& pan = shots[0].shot;
    TemporalStabilizer stab(4);
    std::vector<float> raw_sky, out_sky;
    const size_t sky = 5 * kW + 20;
    for (int f = 0; f < 24; ++f) {
        Generated g = pan(f);
        raw_sky.push_back(g.raw.data[sky]);
        stab.push(f, std::move(g.raw), g.input);
        for (auto& o : stab.pop_ready()) out_sky.push_back(o.second.data[sky]);
    }
    stab.flush();
    for (auto& o : stab.pop_ready()) out_sky.push_back(o.second.data[sky]);
    double raw_move = 0, out_move = 0;
    for (size_t f = 5; f + 5 < raw_sky.size(); ++f) {
        raw_move += std::abs(raw_sky[f] - raw_sky[f - 1]);
        out_move += std::abs(out_sky[f] - out_sky[f - 1]);
    }
    EXPECT_LT(out_move, 0.5 * raw_move) << "raw " << raw_move << " stabilized " << out_move;
    EXPECT_EQ(stab.unaligned_frames(), 0);
}

TEST(ScaleShiftGuard, AFitOverOneFlatRegionIsTheIdentity) {
    // The sky kept by a colour mask: every kept sample near one depth, with noise. Any slope fits it.
    std::vector<float> x, y;
    std::vector<unsigned char> mask;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> noise(-1e-4f, 1e-4f);
    for (int i = 0; i < 2000; ++i) {
        const bool flat = i < 600;
        const float depth = flat ? 0.025f : 0.1f + 0.9f * static_cast<float>(i) / 2000.f;
        x.push_back(depth + (flat ? noise(rng) : 0.f));
        y.push_back(depth + (flat ? noise(rng) : 0.5f));  // the rest changed colour (and depth): masked out
        mask.push_back(flat);
    }
    const Affine a = robust_affine_fit(x, y, mask);
    EXPECT_EQ(a.scale, 1.0);
    EXPECT_EQ(a.shift, 0.0);
}

TEST(ScaleShiftGuard, EqualFramesGiveTheIdentityAndARealFitSurvives) {
    std::vector<float> x;
    for (int i = 0; i < 1000; ++i) x.push_back(0.5f + 0.001f * static_cast<float>(i % 700));
    std::vector<unsigned char> all(x.size(), 1);
    // Equal frames, and frames equal but for the last bit in a few samples.
    Affine a = robust_affine_fit(x, x, all);
    EXPECT_NEAR(a.scale, 1.0, 1e-6);
    EXPECT_NEAR(a.shift, 0.0, 1e-6);
    std::vector<float> y = x;
    for (size_t i = 0; i < y.size(); i += 7) y[i] = std::nextafter(y[i], 2.f);
    a = robust_affine_fit(x, y, all);
    EXPECT_NEAR(a.scale, 1.0, 1e-4);
    EXPECT_NEAR(a.shift, 0.0, 1e-4);
    // A real scale-and-shift change is still found.
    for (size_t i = 0; i < y.size(); ++i) y[i] = 1.2f * x[i] + 0.05f;
    a = robust_affine_fit(x, y, all);
    EXPECT_NEAR(a.scale, 1.2, 1e-4);
    EXPECT_NEAR(a.shift, 0.05, 1e-4);
}

TEST(ScaleShiftGuard, VideoWindowFitOnAFlatWindowIsTheIdentity) {
    // A window of black frames: the prediction is nearly constant, the 2x2 system nearly singular.
    std::vector<float> p(500), r(500);
    for (size_t i = 0; i < p.size(); ++i) {
        p[i] = 0.2f + 1e-7f * static_cast<float>(i % 3);
        r[i] = 0.1f + 0.5f * static_cast<float>(i) / 500.f;
    }
    auto [s, t] = fit_scale_shift({&p}, {&r});
    EXPECT_EQ(s, 1.0);
    EXPECT_EQ(t, 0.0);
    // An ordinary window fit: the exact map comes back.
    for (size_t i = 0; i < p.size(); ++i) p[i] = 0.3f + 0.4f * static_cast<float>(i) / 500.f, r[i] = 2.f * p[i] + 0.1f;
    std::tie(s, t) = fit_scale_shift({&p}, {&r});
    EXPECT_NEAR(s, 2.0, 1e-5);
    EXPECT_NEAR(t, 0.1, 1e-5);
    // A map sending the prediction far outside the reference's range (a negative slope here) is refused.
    for (size_t i = 0; i < p.size(); ++i) r[i] = 1.f - p[i];
    std::tie(s, t) = fit_scale_shift({&p}, {&r});
    EXPECT_EQ(s, 1.0);
    EXPECT_EQ(t, 0.0);
}
