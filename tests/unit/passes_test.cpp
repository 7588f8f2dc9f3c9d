// Unit tests for include/depthbatch/camera.h (the shot's camera, .chan files, DA3's processing focal) and
// include/depthbatch/passes.h (P and N from depth), against analytic scenes: a tilted plane and a sphere in
// front of a wall, seen through Nuke's camera convention.
#include "depthbatch/camera.h"
#include "depthbatch/passes.h"

#include "depthbatch/error.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

using namespace depthbatch;
using namespace depthbatch::test;

namespace {

constexpr double kPi = 3.14159265358979323846;

struct Vec {
    double x = 0, y = 0, z = 0;
};
Vec operator-(Vec a, Vec b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
Vec operator*(double s, Vec a) { return {s * a.x, s * a.y, s * a.z}; }
double dot(Vec a, Vec b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
double norm(Vec a) { return std::sqrt(dot(a, a)); }
Vec unit(Vec a) { return (1 / norm(a)) * a; }
double angle_deg(Vec a, Vec b) { return std::acos(std::min(1.0, std::max(-1.0, dot(unit(a), unit(b))))) * 180 / kPi; }

/// A scene seen by a camera: per data-window pixel, the depth along the optical axis, the true position and
/// the true normal (camera space).
struct Scene {
    int width = 0, height = 0;
    std::vector<float> depth;
    std::vector<Vec> position, normal;
    std::vector<int> object;  ///< which surface the pixel sees (0 = wall, 1 = sphere / plane)
};

struct Passes {
    std::vector<float> p[3], n[3];
};

Passes run_passes(const Scene& s, const PlateCamera& cam) {
    Passes out;
    const size_t count = s.depth.size();
    for (int c = 0; c < 3; ++c) out.p[c].assign(count, -1), out.n[c].assign(count, -1);
    float* const p[3] = {out.p[0].data(), out.p[1].data(), out.p[2].data()};
    float* const n[3] = {out.n[0].data(), out.n[1].data(), out.n[2].data()};
    position_pass(s.depth.data(), s.width, s.height, cam, p);
    normal_pass(s.depth.data(), s.width, s.height, cam, n);
    return out;
}

Vec ray_of(const PlateCamera& cam, int i, int j) {
    double r[3];
    cam.ray(i, j, r);
    return {r[0], r[1], r[2]};
}

/// A plane through `point` with normal `n` (facing the camera), seen over the whole data window.
Scene plane_scene(const PlateCamera& cam, int w, int h, Vec point, Vec n) {
    Scene s;
    s.width = w, s.height = h;
    n = unit(n);
    for (int j = 0; j < h; ++j)
        for (int i = 0; i < w; ++i) {
            const Vec r = ray_of(cam, i, j);
            const double t = dot(n, point) / dot(n, r);  // r has z = -1: t is the depth along the axis
            s.depth.push_back(static_cast<float>(t));
            s.position.push_back(t * r);
            s.normal.push_back(n);
            s.object.push_back(1);
        }
    return s;
}

/// A sphere (centre c, radius rad) in front of a wall facing the camera at depth `wall`.
Scene sphere_scene(const PlateCamera& cam, int w, int h, Vec c, double rad, double wall) {
    Scene s;
    s.width = w, s.height = h;
    for (int j = 0; j < h; ++j)
        for (int i = 0; i < w; ++i) {
            const Vec r = ray_of(cam, i, j);
            const double a = dot(r, r), b = dot(r, c), disc = b * b - a * (dot(c, c) - rad * rad);
            if (disc > 0) {
                const double t = (b - std::sqrt(disc)) / a;
                const Vec p = t * r;
                s.depth.push_back(static_cast<float>(t));
                s.position.push_back(p);
                s.normal.push_back((1 / rad) * (p - c));
                s.object.push_back(1);
            } else {
                s.depth.push_back(static_cast<float>(wall));
                s.position.push_back(wall * r);
                s.normal.push_back({0, 0, 1});
                s.object.push_back(0);
            }
        }
    return s;
}

PlateCamera camera_for(int full_w, int full_h, int x, int y, int w, int h, double aspect = 1.0,
                       const ChanSample* chan = nullptr) {
    CameraSettings settings;
    settings.focal_mm = 35;
    PlateWindows win;
    win.x = x, win.y = y, win.width = w, win.height = h;
    win.full_width = full_w, win.full_height = full_h;
    return make_plate_camera(settings, win, aspect, chan);
}

Vec at(const std::vector<float> (&planes)[3], size_t k) { return {planes[0][k], planes[1][k], planes[2][k]}; }

/// P to 1e-4 relative everywhere; N to 0.5 degrees wherever all 8 neighbours see the same surface and it faces
/// the camera within 75 degrees. Beyond (a sphere's limb, where one pixel spans a long stretch of surface and the
/// side with the smaller jump gives a one-sided difference) within 3 degrees.
void expect_passes_match(const Scene& s, const Passes& got, const char* what) {
    double worst_p = 0, worst_n = 0, worst_grazing = 0;
    for (int j = 1; j + 1 < s.height; ++j)
        for (int i = 1; i + 1 < s.width; ++i) {
            const size_t k = static_cast<size_t>(j) * s.width + i;
            worst_p = std::max(worst_p, norm(at(got.p, k) - s.position[k]) / norm(s.position[k]));
            bool interior = true;
            for (int dj = -1; dj <= 1; ++dj)
                for (int di = -1; di <= 1; ++di) interior &= s.object[k + dj * s.width + di] == s.object[k];
            if (!interior) continue;
            const double error = angle_deg(at(got.n, k), s.normal[k]);
            if (angle_deg(s.normal[k], -1.0 * s.position[k]) < 75) worst_n = std::max(worst_n, error);
            else worst_grazing = std::max(worst_grazing, error);
        }
    EXPECT_LT(worst_p, 1e-4) << what;
    EXPECT_LT(worst_n, 0.5) << what;
    EXPECT_LT(worst_grazing, 3.0) << what;
}

}  // namespace

TEST(Camera, NukeKnobsGiveFocalInPlateColumns) {
    CameraSettings c;
    EXPECT_EQ(camera_focal_columns(c, 2048), 0);
    c.focal_mm = 35;
    EXPECT_NEAR(camera_focal_columns(c, 2048), 35 / 24.576 * 2048, 1e-9);  // Nuke's default haperture
    c.haperture_mm = 36;
    EXPECT_NEAR(camera_focal_columns(c, 1920), 35 / 36.0 * 1920, 1e-9);
    CameraSettings fov;
    fov.fov_deg = 90;
    EXPECT_NEAR(camera_focal_columns(fov, 1920), 960, 1e-9);
    CameraSettings px;
    px.focal_px = 1234.5;
    EXPECT_EQ(camera_focal_columns(px, 1920), 1234.5);
    // A .chan vfov (Nuke: vfov = 2 atan(vaperture / 2 / focal)) through the default vaperture: 35 mm back.
    const double vfov = 2 * std::atan(kNukeVaperture_mm / 2 / 35) * 180 / kPi;
    EXPECT_NEAR(camera_focal_columns(CameraSettings(), 2048, vfov), 35 / 24.576 * 2048, 1e-6);
    EXPECT_TRUE(contains(expect_error<ConfigError>(
                             [&] {
                                 make_plate_camera(CameraSettings(), PlateWindows{0, 0, 8, 8, 0, 0, 8, 8}, 1);
                             },
                             "no focal"),
                         "camera.focal"));
}

TEST(Camera, PrincipalPointIsTheDisplayWindowCentreAndPixelCentresAreAtHalf) {
    const PlateCamera c = camera_for(1920, 1080, -16, 40, 1952, 1000);
    EXPECT_EQ(c.cx, 960);
    EXPECT_EQ(c.cy, 540);
    double r[3];
    c.ray(16 + 959, 500, r);  // file pixel 959, row 540: centre at (959.5, 540.5)
    EXPECT_NEAR(r[0], -0.5 / c.fx, 1e-12);
    EXPECT_NEAR(r[1], -0.5 / c.fy, 1e-12);
    EXPECT_EQ(r[2], -1);
}

// DA3 metric averages fx and fy at the processing size (alignment.py apply_metric_scaling): on 854x480 forced to
// 140x140 with a 1000 px focal, depth is 0.759x the raw output, not 0.546x (the horizontal focal alone).
TEST(Camera, ProcessingFocalAveragesFxAndFyAtTheModelSize) {
    const double k = processing_focal_px(1000, 1.0, 854, 480, 140, 140) / 300;
    EXPECT_NEAR(k, 0.759, 5e-4);
    EXPECT_NEAR(k, (1000 * 140 / 854.0 + 1000 * 140 / 480.0) / 2 / 300, 1e-12);
    EXPECT_GT(std::abs(k - 1000 * 140 / 854.0 / 300), 0.2);  // the old horizontal-only factor, 0.546
    // Aspect kept: fx' = fy'.
    EXPECT_NEAR(processing_focal_px(1000, 1.0, 1920, 1080, 518, 291), 1000 * 518 / 1920.0, 0.5);
    // Anamorphic 2:1, desqueezed for the model: 1000 columns are 2000 square pixels wide, 600 rows high.
    EXPECT_NEAR(processing_focal_px(1000, 2.0, 1000, 600, 1000, 300), (1000 * 1.0 + 2000 * 0.5) / 2, 1e-9);
}

TEST(Passes, TiltedPlaneGivesExactPositionsAndNormals) {
    const PlateCamera cam = camera_for(320, 180, 0, 0, 320, 180);
    const Scene s = plane_scene(cam, 320, 180, {0.5, -0.2, -6}, {0.4, 0.3, 1});
    expect_passes_match(s, run_passes(s, cam), "plane");
    // Nuke's axes: the top-left pixel is left (-X) and up (+Y) of the axis, in front of the camera (-Z).
    const Passes got = run_passes(s, cam);
    EXPECT_LT(got.p[0][0], 0);
    EXPECT_GT(got.p[1][0], 0);
    EXPECT_LT(got.p[2][0], 0);
    EXPECT_NEAR(-got.p[2][0], s.depth[0], 1e-6 * s.depth[0]);  // depth is distance along the axis
}

TEST(Passes, SphereBeforeAWallKeepsForegroundAndBackgroundApart) {
    const PlateCamera cam = camera_for(400, 300, 0, 0, 400, 300);
    const Scene s = sphere_scene(cam, 400, 300, {0.3, -0.2, -6}, 1.5, 12);
    const Passes got = run_passes(s, cam);
    expect_passes_match(s, got, "sphere");
    // Along the silhouette: wall pixels take the wall's normal exactly, sphere pixels the sphere's side (the
    // limb is seen at 80-90 degrees, where a one-sided difference is first order: within 15 degrees, where a
    // normal mixing sphere and wall tilts towards the wall by tens of degrees).
    int rim = 0;
    double worst_wall = 0, worst_sphere = 0;
    for (int j = 1; j + 1 < s.height; ++j)
        for (int i = 1; i + 1 < s.width; ++i) {
            const size_t k = static_cast<size_t>(j) * s.width + i;
            const bool edge = s.object[k - 1] != s.object[k] || s.object[k + 1] != s.object[k] ||
                              s.object[k - s.width] != s.object[k] || s.object[k + s.width] != s.object[k];
            if (!edge) continue;
            ++rim;
            const double a = angle_deg(at(got.n, k), s.normal[k]);
            (s.object[k] ? worst_sphere : worst_wall) = std::max(s.object[k] ? worst_sphere : worst_wall, a);
        }
    EXPECT_GT(rim, 200);
    EXPECT_LT(worst_wall, 0.01);
    EXPECT_LT(worst_sphere, 15.0);
}

TEST(Passes, DataWindowInsideTheDisplayWindowIsTheSameCameraCropped) {
    // Full frame 300x200; a data window of 120x70 at (101, 57), and one reaching outside (overscan) at (-20, -10).
    const PlateCamera full = camera_for(300, 200, 0, 0, 300, 200);
    const Scene whole = sphere_scene(full, 300, 200, {0.2, 0.1, -5}, 1.2, 9);
    const Passes all = run_passes(whole, full);
    for (const auto& [x0, y0] : {std::pair{101, 57}, std::pair{0, 0}, std::pair{180, 130}}) {
        const int w = 120, h = 70;
        const PlateCamera crop = camera_for(300, 200, x0, y0, w, h);
        Scene part;
        part.width = w, part.height = h;
        for (int j = 0; j < h; ++j)
            for (int i = 0; i < w; ++i) {
                const size_t k = static_cast<size_t>(y0 + j) * 300 + x0 + i;
                part.depth.push_back(whole.depth[k]);
                part.position.push_back(whole.position[k]);
                part.normal.push_back(whole.normal[k]);
                part.object.push_back(whole.object[k]);
            }
        const Passes got = run_passes(part, crop);
        expect_passes_match(part, got, "data window");
        // Inside the crop (not on its border, where the crop has fewer neighbours) the passes are the full frame's.
        for (int j = 1; j + 1 < h; ++j)
            for (int i = 1; i + 1 < w; ++i) {
                const size_t k = static_cast<size_t>(j) * w + i, K = static_cast<size_t>(y0 + j) * 300 + x0 + i;
                for (int c = 0; c < 3; ++c) {
                    ASSERT_EQ(got.p[c][k], all.p[c][K]) << i << "," << j;
                    ASSERT_EQ(got.n[c][k], all.n[c][K]) << i << "," << j;
                }
            }
    }
    // Overscan: a data window larger than the display window, starting at negative coordinates.
    const PlateCamera over = camera_for(300, 200, -20, -10, 340, 220);
    const Scene s = sphere_scene(over, 340, 220, {0.2, 0.1, -5}, 1.2, 9);
    expect_passes_match(s, run_passes(s, over), "overscan");
    EXPECT_NEAR(s.position[static_cast<size_t>(10) * 340 + 20].x, (0.5 - 150) / full.fx * 9, 1e-9);
}

TEST(Passes, AnamorphicPixelsAreWiderThanHigh) {
    // 2:1 anamorphic: 200 stored columns of pixels twice as wide as high, 160 rows.
    const PlateCamera cam = camera_for(200, 160, 0, 0, 200, 160, 2.0);
    EXPECT_EQ(cam.fy, 2 * cam.fx);
    const Scene s = plane_scene(cam, 200, 160, {0, 0, -8}, {-0.3, 0.5, 1});
    const Passes got = run_passes(s, cam);
    expect_passes_match(s, got, "anamorphic plane");
    // A frontal wall: one column step moves P.X twice as far as one row step moves P.Y.
    const Scene wall = plane_scene(cam, 200, 160, {0, 0, -8}, {0, 0, 1});
    const Passes w = run_passes(wall, cam);
    const double dx = w.p[0][1] - w.p[0][0], dy = w.p[1][0] - w.p[1][200];
    EXPECT_NEAR(dx / dy, 2.0, 1e-4);
    const Scene ball = sphere_scene(cam, 200, 160, {0, 0, -6}, 1.5, 12);
    expect_passes_match(ball, run_passes(ball, cam), "anamorphic sphere");
}

TEST(Passes, ChanWorldSpaceProjectsBackOntoPixelCentres) {
    ChanSample sample;
    sample.translate[0] = 1.5, sample.translate[1] = 2, sample.translate[2] = -3;
    sample.rotate_deg[0] = 12, sample.rotate_deg[1] = -35, sample.rotate_deg[2] = 7;
    const PlateCamera cam = camera_for(256, 144, 10, 6, 230, 130, 1.0, &sample);
    const PlateCamera local = camera_for(256, 144, 10, 6, 230, 130);
    const Scene s = sphere_scene(local, 230, 130, {0.1, 0.2, -5}, 1.3, 10);
    const Passes world = run_passes(s, cam), camera = run_passes(s, local);
    const auto& m = cam.camera_to_world;
    double worst_px = 0, worst_n = 0;
    for (int j = 0; j < s.height; ++j)
        for (int i = 0; i < s.width; ++i) {
            const size_t k = static_cast<size_t>(j) * s.width + i;
            // World -> camera with the inverse of the rigid transform: R^T (P - t).
            const double q[3] = {world.p[0][k] - m[3], world.p[1][k] - m[7], world.p[2][k] - m[11]};
            double pc[3], nc[3];
            for (int r = 0; r < 3; ++r) {
                pc[r] = m[r] * q[0] + m[4 + r] * q[1] + m[8 + r] * q[2];
                nc[r] = m[r] * world.n[0][k] + m[4 + r] * world.n[1][k] + m[8 + r] * world.n[2][k];
            }
            const double col = cam.cx + cam.fx * pc[0] / -pc[2] - 0.5 - cam.data_x;
            const double row = cam.cy - cam.fy * pc[1] / -pc[2] - 0.5 - cam.data_y;
            worst_px = std::max({worst_px, std::abs(col - i), std::abs(row - j)});
            worst_n = std::max(worst_n, angle_deg({nc[0], nc[1], nc[2]}, at(camera.n, k)));
        }
    EXPECT_LT(worst_px, 1e-3);
    EXPECT_LT(worst_n, 0.01);
}

TEST(Camera, ChanRotationOrderIsZxyAndTheFileIsChecked) {
    // ZXY: Z applies first. With rx = 90, rz = 90 the camera's +X goes to world +Z (an XYZ order gives +Y).
    ChanSample s;
    s.rotate_deg[0] = 90, s.rotate_deg[2] = 90;
    auto m = chan_camera_to_world(s);
    EXPECT_NEAR(m[0], 0, 1e-12);
    EXPECT_NEAR(m[4], 0, 1e-12);
    EXPECT_NEAR(m[8], 1, 1e-12);
    // ry = 90 turns the view direction (-Z) to world -X; translation is the last column.
    ChanSample t;
    t.rotate_deg[1] = 90, t.translate[0] = 4, t.translate[1] = 5, t.translate[2] = 6;
    m = chan_camera_to_world(t);
    EXPECT_NEAR(-m[2], -1, 1e-12);
    EXPECT_NEAR(-m[10], 0, 1e-12);
    EXPECT_EQ(m[3], 4);
    EXPECT_EQ(m[7], 5);
    EXPECT_EQ(m[11], 6);

    TempDir dir;
    const auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream(dir / name) << text;
        return (dir / name).string();
    };
    const ChanFile f =
        read_chan_file(write("cam.chan", "# Nuke\n1001 0 1.5 3 -2 10 0 40.5\n\n1002.0\t0.1 1.5 3 -2 10 0 40.6\n"));
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f.at(1001).translate[1], 1.5);
    EXPECT_EQ(f.at(1001).rotate_deg[1], 10);
    EXPECT_EQ(*f.at(1002).vfov_deg, 40.6);
    EXPECT_FALSE(read_chan_file(write("novfov.chan", "1 0 0 0 0 0 0\n")).at(1).vfov_deg);
    EXPECT_TRUE(
        contains(expect_error<ConfigError>([&] { read_chan_file(write("a.chan", "1 0 0 0 0 0\n")); }, "columns"),
                 "a.chan:1: expected 'frame tx ty tz rx ry rz [vfov]'"));
    EXPECT_TRUE(contains(
        expect_error<ConfigError>([&] { read_chan_file(write("b.chan", "1 0 0 0 0 0 0\n2 0 x 0 0 0 0\n")); }, "nan"),
        "b.chan:2: column 3 'x' is not a number"));
    EXPECT_TRUE(contains(
        expect_error<ConfigError>([&] { read_chan_file(write("c.chan", "1 0 0 0 0 0 0\n1 0 0 0 0 0 0\n")); }, "twice"),
        "frame 1 is given twice"));
    EXPECT_TRUE(
        contains(expect_error<ConfigError>([&] { read_chan_file(write("d.chan", "1 0 0 0 0 0 0 180\n")); }, "vfov"),
                 "between 0 and 180"));
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { read_chan_file(write("e.chan", "# nothing\n")); }, "empty"),
                         "holds no frame lines"));
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { read_chan_file((dir / "missing.chan").string()); }, "missing"),
                         "cannot read"));
}

TEST(Passes, NoSurfaceGivesZerosAndALonePixelFacesTheCamera) {
    const PlateCamera cam = camera_for(4, 3, 0, 0, 4, 3);
    Scene s;
    s.width = 4, s.height = 3;
    s.depth = {0, 0, 0, 0, 0, 5, 0, -1, 0, 0, 0, std::nanf("")};
    const Passes got = run_passes(s, cam);
    for (size_t k = 0; k < s.depth.size(); ++k) {
        if (k == 5) continue;
        for (int c = 0; c < 3; ++c) {
            EXPECT_EQ(got.p[c][k], 0) << k;
            EXPECT_EQ(got.n[c][k], 0) << k;
        }
    }
    const Vec p = at(got.p, 5), n = at(got.n, 5);
    EXPECT_NEAR(angle_deg(n, -1.0 * p), 0, 1e-3);
    EXPECT_NEAR(norm(n), 1, 1e-6);
}

// Issue 43 §2 (the camera a solve writes): a camera-to-world transform back to Nuke's .chan angles (ZXY) and the
// .chan text, over random rotations and the gimbal-lock poles: chan_camera_to_world of what comes back is the same
// matrix, and read_chan_file reads the text back to the same samples.
TEST(Camera, ACameraToWorldGoesBackToChanAnglesAndTextThatReadBack) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<double> angle(-180, 180), pitch(-90, 90), pos(-50, 50);
    ChanFile file;
    for (int i = 0; i < 500; ++i) {
        ChanSample s;
        s.translate[0] = pos(rng), s.translate[1] = pos(rng), s.translate[2] = pos(rng);
        // Every 50th at a pole (rx = +-90), where only ry - rz (or ry + rz) is defined.
        s.rotate_deg[0] = i % 50 == 0 ? (i % 100 == 0 ? 90 : -90) : pitch(rng);
        s.rotate_deg[1] = angle(rng), s.rotate_deg[2] = angle(rng);
        const auto m = chan_camera_to_world(s);
        const ChanSample back = chan_sample_from_camera_to_world(m, 40.0 + i * 0.01);
        const auto again = chan_camera_to_world(back);
        for (size_t k = 0; k < 16; ++k) ASSERT_NEAR(again[k], m[k], 1e-9) << "sample " << i << ", element " << k;
        EXPECT_LE(std::abs(back.rotate_deg[0]), 90.0);
        file[1001 + i] = back;
    }
    TempDir dir;
    std::ofstream(dir / "solved.chan") << chan_text(file);
    const ChanFile read = read_chan_file((dir / "solved.chan").string());
    ASSERT_EQ(read.size(), file.size());
    for (const auto& [frame, s] : file) {
        const ChanSample& r = read.at(frame);
        for (int k = 0; k < 3; ++k) {
            EXPECT_NEAR(r.translate[k], s.translate[k], 1e-7) << frame;
            EXPECT_NEAR(r.rotate_deg[k], s.rotate_deg[k], 1e-7) << frame;
        }
        EXPECT_NEAR(*r.vfov_deg, *s.vfov_deg, 1e-8) << frame;
    }
    // Not a rotation: a mirror, a scale.
    std::array<double, 16> mirror{-1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    EXPECT_THROW(chan_sample_from_camera_to_world(mirror), std::invalid_argument);
    std::array<double, 16> scaled{2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1};
    EXPECT_THROW(chan_sample_from_camera_to_world(scaled), std::invalid_argument);
    // One vfov column for the whole file.
    file.begin()->second.vfov_deg.reset();
    EXPECT_THROW(chan_text(file), std::invalid_argument);
}

// Issue 43 §2: the camera as USD, read back by a real USD library (usd-core's pxr, tools/requirements.txt): the stage
// is in metres with Y up, each frame's local-to-world is the camera-to-world written, and its field of view is the one
// the focal and film back give (USD's tenths of a scene unit undone).
TEST(Camera, AUsdCameraReadsBackWithItsPosesAndFieldOfViewThroughUsd) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> angle(-180, 180), pitch(-89, 89), pos(-20, 20), focal(18, 85);
    std::map<int, UsdCameraFrame> frames;
    for (int f = 1001; f <= 1012; ++f) {
        ChanSample s;
        for (int k = 0; k < 3; ++k) s.translate[k] = pos(rng);
        s.rotate_deg[0] = pitch(rng), s.rotate_deg[1] = angle(rng), s.rotate_deg[2] = angle(rng);
        frames[f] = {chan_camera_to_world(s), focal(rng)};
    }
    TempDir dir;
    std::ofstream(dir / "camera.usda") << usd_camera_text(frames, kNukeHaperture_mm, kNukeVaperture_mm, 24);
    const std::string script =
        "import json, sys\n"
        "from pxr import Usd, UsdGeom, Gf\n"
        "stage = Usd.Stage.Open(sys.argv[1])\n"
        "cam = UsdGeom.Camera.Get(stage, '/shot/camera')\n"
        "out = {'mpu': UsdGeom.GetStageMetersPerUnit(stage), 'up': str(UsdGeom.GetStageUpAxis(stage)),\n"
        "       'start': stage.GetStartTimeCode(), 'end': stage.GetEndTimeCode(), 'fps': "
        "stage.GetTimeCodesPerSecond(),\n"
        "       'frames': {}}\n"
        "for t in range(int(stage.GetStartTimeCode()), int(stage.GetEndTimeCode()) + 1):\n"
        "    m = cam.ComputeLocalToWorldTransform(Usd.TimeCode(t))\n"
        "    g = cam.GetCamera(Usd.TimeCode(t))\n"
        "    out['frames'][str(t)] = {'m': [[m[r][c] for c in range(4)] for r in range(4)],\n"
        "        'hfov': g.GetFieldOfView(Gf.Camera.FOVHorizontal), 'vfov': g.GetFieldOfView(Gf.Camera.FOVVertical)}\n"
        "print(json.dumps(out))\n";
    std::ofstream(dir / "read.py") << script;
    const auto r = run_python({(dir / "read.py").string(), (dir / "camera.usda").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
    EXPECT_EQ(j.at("mpu").get<double>(), 1.0);
    EXPECT_EQ(j.at("up").get<std::string>(), "Y");
    EXPECT_EQ(j.at("start").get<double>(), 1001);
    EXPECT_EQ(j.at("end").get<double>(), 1012);
    EXPECT_EQ(j.at("fps").get<double>(), 24);
    ASSERT_EQ(j.at("frames").size(), frames.size());
    constexpr double kDeg = 180 / 3.14159265358979323846;
    for (const auto& [frame, f] : frames) {
        const auto& got = j.at("frames").at(std::to_string(frame));
        // USD's row-vector matrix: element [r][c] is the column-vector matrix's [c][r].
        for (int row = 0; row < 4; ++row)
            for (int col = 0; col < 4; ++col)
                EXPECT_NEAR(got.at("m").at(row).at(col).get<double>(), f.camera_to_world[col * 4 + row], 1e-9)
                    << frame << " [" << row << "][" << col << "]";
        EXPECT_NEAR(got.at("hfov").get<double>(), 2 * std::atan(kNukeHaperture_mm / 2 / f.focal_mm) * kDeg, 1e-4)
            << frame;
        EXPECT_NEAR(got.at("vfov").get<double>(), 2 * std::atan(kNukeVaperture_mm / 2 / f.focal_mm) * kDeg, 1e-4)
            << frame;
    }
    EXPECT_THROW(usd_camera_text({}, 24, 18, 24), std::invalid_argument);
    EXPECT_THROW(usd_camera_text(frames, 24, 18, 0), std::invalid_argument);
}
