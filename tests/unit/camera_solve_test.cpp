// The camera solve's mathematics (camera_solve.h): similarity fits, the windows of a shot, the chaining of windows
// each in its own gauge, over generated shots (issue 43 §2, §4). The oracle through the CLI: camera_solve_test in
// tests/integration.
#include "depthbatch/camera.h"
#include "depthbatch/camera_solve.h"

#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <cmath>
#include <random>
#include <stdexcept>

using namespace depthbatch;

namespace {

using V3 = std::array<double, 3>;

Eigen::Matrix3d random_rotation(std::mt19937& rng) {
    std::normal_distribution<double> n(0, 1);
    Eigen::Quaterniond q(n(rng), n(rng), n(rng), n(rng));
    return q.normalized().toRotationMatrix();
}

Eigen::Matrix3d rotation_of(const Similarity& s) {
    Eigen::Matrix3d r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r(i, j) = s.rotation[static_cast<size_t>(i * 3 + j)];
    return r;
}

/// The angle between two rotations (|A - B|_F = 2 sqrt(2) sin(angle / 2): exact near 0, unlike acos of the trace).
double angle_deg(const Eigen::Matrix3d& a, const Eigen::Matrix3d& b) {
    return 2 * std::asin(std::min(1.0, (a - b).norm() / std::sqrt(8.0))) * 180 / M_PI;
}

}  // namespace

// Any similarity (scale 1e-2 .. 1e2, any rotation) of any point set of 3 to 60 points in general position, with any
// positive weights, comes back from its points to rounding.
TEST(CameraSolve, FitSimilarityRecoversAnyTransformOfAnyPointSet) {
    std::mt19937 rng(43);
    std::uniform_real_distribution<double> u(-10, 10), logs(-2, 2), w(0.1, 5);
    std::uniform_int_distribution<int> count(3, 60);
    for (int trial = 0; trial < 300; ++trial) {
        const Eigen::Matrix3d r = random_rotation(rng);
        const double s = std::pow(10.0, logs(rng));
        const Eigen::Vector3d t(u(rng), u(rng), u(rng));
        std::vector<V3> from, to;
        std::vector<double> weights;
        for (int i = 0, n = count(rng); i < n; ++i) {
            const Eigen::Vector3d p(u(rng), u(rng), u(rng)), q = s * r * p + t;
            from.push_back({p.x(), p.y(), p.z()});
            to.push_back({q.x(), q.y(), q.z()});
            weights.push_back(w(rng));
        }
        const Similarity fit = fit_similarity(from, to, weights);
        EXPECT_NEAR(fit.scale / s, 1.0, 1e-9) << "trial " << trial;
        EXPECT_LT(angle_deg(rotation_of(fit), r), 1e-6) << "trial " << trial;
        for (size_t i = 0; i < from.size(); ++i) {
            const V3 p = fit.apply(from[i]);
            EXPECT_NEAR(p[0], to[i][0], 1e-7 * s * 20);
            EXPECT_NEAR(p[2], to[i][2], 1e-7 * s * 20);
        }
    }
}

TEST(CameraSolve, FitSimilarityRefusesWhatDoesNotPinARotation) {
    const std::vector<V3> three = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
    EXPECT_THROW(fit_similarity(three, three, {1, 1, 0}), std::invalid_argument);  // 2 points of weight > 0
    EXPECT_THROW(fit_similarity(three, three, {1, -1, 1}), std::invalid_argument);
    EXPECT_THROW(fit_similarity(three, {{0, 0, 0}}, {1, 1, 1}), std::invalid_argument);
    const std::vector<V3> line = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {3, 3, 3}};
    EXPECT_THROW(fit_similarity(line, line, {1, 1, 1, 1}), std::invalid_argument);
    const std::vector<V3> same = {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}};
    EXPECT_THROW(fit_similarity(same, same, {1, 1, 1}), std::invalid_argument);
    // A plane's points pin it.
    const Similarity plane = fit_similarity(three, three, {1, 1, 1});
    EXPECT_NEAR(plane.scale, 1, 1e-12);
}

// A third of the points moved far away (a window's depth wrong at an occlusion, a moving object): the Huber
// re-weighting keeps the transform the rest gives.
TEST(CameraSolve, RobustFitKeepsTheTransformOfTheInliers) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-5, 5);
    const Eigen::Matrix3d r = random_rotation(rng);
    std::vector<V3> from, to;
    for (int i = 0; i < 300; ++i) {
        const Eigen::Vector3d p(u(rng), u(rng), u(rng) + 10);
        Eigen::Vector3d q = 0.5 * r * p + Eigen::Vector3d(1, 2, 3);
        if (i % 3 == 0) q += Eigen::Vector3d(u(rng), u(rng), u(rng)) * 3;
        from.push_back({p.x(), p.y(), p.z()});
        to.push_back({q.x(), q.y(), q.z()});
    }
    const std::vector<double> ones(from.size(), 1.0);
    const Similarity plain = fit_similarity(from, to, ones);
    double residual = -1;
    const Similarity robust = robust_fit_similarity(from, to, ones, &residual);
    EXPECT_GT(std::abs(plain.scale - 0.5), 0.01) << "the outliers do move a least-squares fit";
    EXPECT_NEAR(robust.scale, 0.5, 2e-3);
    EXPECT_LT(angle_deg(rotation_of(robust), r), 0.2);
    EXPECT_LT(residual, 0.5);
}

// Every shot length and windowing: windows of at most `window` frames in order, each sharing at least `overlap`
// frames with the one before, together covering the shot, the last ending at its last frame.
TEST(CameraSolve, SolveWindowsCoverEveryFrameSharingTheOverlap) {
    for (int window = 2; window <= 12; ++window)
        for (int overlap = 1; overlap < window; ++overlap)
            for (int count = 2; count <= 80; ++count) {
                SCOPED_TRACE(std::to_string(count) + " frames, window " + std::to_string(window) + ", overlap " +
                             std::to_string(overlap));
                const auto w = solve_windows(count, window, overlap);
                ASSERT_FALSE(w.empty());
                EXPECT_EQ(w.front().first, 0);
                EXPECT_EQ(w.back().second, count);
                for (size_t i = 0; i < w.size(); ++i) {
                    EXPECT_LE(w[i].second - w[i].first, window);
                    EXPECT_GE(w[i].second - w[i].first, std::min(count, 2));
                    if (i == 0) continue;
                    EXPECT_GT(w[i].first, w[i - 1].first);
                    EXPECT_GE(w[i - 1].second - w[i].first, overlap) << "window " << i;
                }
                if (count <= window) EXPECT_EQ(w.size(), 1u);
            }
    EXPECT_THROW(solve_windows(1, 8, 3), std::invalid_argument);
    EXPECT_THROW(solve_windows(10, 8, 8), std::invalid_argument);
    EXPECT_THROW(solve_windows(10, 1, 0), std::invalid_argument);
}

namespace {

/// A generated shot: a floor, a back wall and a side wall seen by cameras along a path (Nuke camera-to-world).
struct GeneratedShot {
    int width = 48, height = 27;
    double focal = 40;                 ///< px
    std::vector<Eigen::Matrix4d> c2w;  ///< Nuke convention
};

/// Depth (along the optical axis) of pixel (i, j) of camera `c2w`, the nearest of three planes.
double depth_at(const Eigen::Matrix4d& c2w, const GeneratedShot& s, int i, int j) {
    // Nuke camera space ray: (u / f, v / f, -1).
    const double u = (i + 0.5) - s.width / 2.0, v = s.height / 2.0 - (j + 0.5);
    const Eigen::Vector3d dir = c2w.block<3, 3>(0, 0) * Eigen::Vector3d(u / s.focal, v / s.focal, -1);
    const Eigen::Vector3d o = c2w.block<3, 1>(0, 3);
    double best = 1e30;
    const auto plane = [&](const Eigen::Vector3d& n, double d) {  // n . x = d
        const double den = n.dot(dir);
        if (std::abs(den) < 1e-12) return;
        const double t = (d - n.dot(o)) / den;
        if (t > 1e-6) best = std::min(best, t);  // t is the depth: dir has unit -Z component in camera space
    };
    plane({0, 1, 0}, -1.6);  // floor
    plane({0, 0, 1}, -9);    // back wall
    plane({1, 0, 0}, 4.5);   // side wall
    plane({-1, 0, 0}, 5);    // other side
    plane({0, -1, 0}, -4);   // ceiling
    return best;
}

/// The views of frames [a, b) as a model gives them in a window's own gauge: OpenCV, first view the world, scaled.
std::vector<SolveView> window_views(const GeneratedShot& s, int a, int b, double scale) {
    const Eigen::Matrix4d f = Eigen::Vector4d(1, -1, -1, 1).asDiagonal();
    const Eigen::Matrix4d first_cv = f * s.c2w[static_cast<size_t>(a)] * f;
    std::vector<SolveView> out;
    for (int k = a; k < b; ++k) {
        const Eigen::Matrix4d c2w_cv = first_cv.inverse() * (f * s.c2w[static_cast<size_t>(k)] * f);
        Eigen::Matrix4d w2c = c2w_cv.inverse();
        w2c.block<3, 1>(0, 3) *= scale;
        SolveView v;
        v.frame = 1001 + k;
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c) v.view.world_to_camera[static_cast<size_t>(r * 4 + c)] = w2c(r, c);
        v.view.intrinsics = {s.focal, 0, s.width / 2.0, 0, s.focal, s.height / 2.0, 0, 0, 1};
        v.view.input_width = v.view.depth.width = s.width;
        v.view.input_height = v.view.depth.height = s.height;
        for (int j = 0; j < s.height; ++j)
            for (int i = 0; i < s.width; ++i)
                v.view.depth.data.push_back(
                    static_cast<float>(scale * depth_at(s.c2w[static_cast<size_t>(k)], s, i, j)));
        out.push_back(std::move(v));
    }
    return out;
}

Eigen::Matrix4d pose(double yaw_deg, double pitch_deg, const Eigen::Vector3d& t) {
    Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
    m.block<3, 3>(0, 0) = (Eigen::AngleAxisd(yaw_deg * M_PI / 180, Eigen::Vector3d::UnitY()) *
                           Eigen::AngleAxisd(pitch_deg * M_PI / 180, Eigen::Vector3d::UnitX()))
                              .toRotationMatrix();
    m.block<3, 1>(0, 3) = t;
    return m;
}

}  // namespace

// Generated shots of every length from 2 to 30 frames, six kinds of move (moving, nodal, locked-off, a move that
// stops halfway, and the move held on twos and on threes), windows of 3 to 8 with every overlap, each window in a gauge of its own scale: the chained
// path is the shot's, relative to its first frame, to 1e-6; nodal and locked-off shots are said to be so, with
// every frame short of baseline and the focal not pinned.
TEST(CameraSolve, ChainedWindowsGiveTheShotsPathForAnyLengthAndWindowing) {
    std::mt19937 rng(2026);
    std::uniform_real_distribution<double> gauge(0.05, 20);
    int cases = 0;
    for (const char* kind : {"moving", "nodal", "locked_off", "stops", "twos", "threes"})
        for (int count = 2; count <= 30; count += (count < 10 ? 1 : 7))
            for (int window = 3; window <= 8; window += 5)
                for (int overlap = 1; overlap < window; overlap += (window > 4 ? 3 : 1)) {
                    SCOPED_TRACE(std::string(kind) + ", " + std::to_string(count) + " frames, window " +
                                 std::to_string(window) + " overlap " + std::to_string(overlap));
                    GeneratedShot shot;
                    const std::string k = kind;
                    for (int i = 0; i < count; ++i) {
                        const double a = count > 1 ? static_cast<double>(i) / (count - 1) : 0;
                        // Animation held on twos or threes: each pose for 2 or 3 frames (identical cameras side
                        // by side, in a window and across the overlap).
                        const int hold = k == "twos" ? 2 : k == "threes" ? 3 : 1;
                        const double held = count > 1 ? static_cast<double>(i / hold * hold) / (count - 1) : 0;
                        const double m = k == "stops" ? std::min(a, 0.5) : hold > 1 ? held : a;
                        if (k == "moving" || k == "stops" || hold > 1)
                            shot.c2w.push_back(pose(10 * m, -3, Eigen::Vector3d(m, 0.3 * m, -1.5 * m)));
                        else if (k == "nodal") shot.c2w.push_back(pose(-12 + 24 * a, 2, Eigen::Vector3d(0.2, 0, 0)));
                        else shot.c2w.push_back(pose(3, -2, Eigen::Vector3d(0.1, 0.2, 0.3)));
                    }
                    CameraPathBuilder builder(false);
                    for (const auto& [a, b] : solve_windows(count, window, overlap))
                        builder.add_window(window_views(shot, a, b, gauge(rng)));
                    const CameraPath path = builder.finish();
                    ASSERT_EQ(path.frames.size(), static_cast<size_t>(count));
                    const Eigen::Matrix4d first_inv = shot.c2w.front().inverse();
                    for (int i = 0; i < count; ++i) {
                        const Eigen::Matrix4d truth = first_inv * shot.c2w[static_cast<size_t>(i)];
                        const auto& m = path.frames.at(1001 + i).camera_to_world;
                        Eigen::Matrix4d got;
                        for (int r = 0; r < 4; ++r)
                            for (int c = 0; c < 4; ++c) got(r, c) = m[static_cast<size_t>(r * 4 + c)];
                        EXPECT_LT(angle_deg(got.block<3, 3>(0, 0), truth.block<3, 3>(0, 0)), 1e-5) << "frame " << i;
                        // The path is in the first window's units: compare after the one scale that makes the first
                        // frame's median depth the truth's.
                        const double unit = path.frames.at(1001).median_depth;
                        const double true_unit = [&] {
                            std::vector<double> d;
                            for (int j = 0; j < shot.height; ++j)
                                for (int x = 0; x < shot.width; ++x) d.push_back(depth_at(shot.c2w[0], shot, x, j));
                            std::nth_element(d.begin(), d.begin() + static_cast<long>(d.size() / 2), d.end());
                            return d[d.size() / 2];
                        }();
                        EXPECT_LT((got.block<3, 1>(0, 3) * true_unit / unit - truth.block<3, 1>(0, 3)).norm(), 1e-5)
                            << "frame " << i;
                    }
                    EXPECT_NEAR(path.focal_columns, shot.focal, 1e-9);
                    if (k == "nodal" && count > 2) {
                        EXPECT_EQ(path.motion, CameraMotion::Nodal);
                        EXPECT_FALSE(path.focal_pinned());
                        EXPECT_EQ(path.short_baseline.size(), static_cast<size_t>(count));
                    } else if (k == "locked_off") {
                        EXPECT_EQ(path.motion, CameraMotion::LockedOff);
                        EXPECT_FALSE(path.focal_pinned());
                    } else if (k == "moving" && count >= 4) {
                        EXPECT_EQ(path.motion, CameraMotion::Moving);
                        // 1.8 m over the shot: a window of 8 frames moves more than 1% of the depth (about 8 m); a
                        // window of 3 on a long shot does not, and its frames are rightly said short of baseline.
                        if (window >= 8 && count <= 24) EXPECT_TRUE(path.focal_pinned());
                    }
                    for (const OverlapResidual& o : path.overlaps) EXPECT_LT(o.point_error, 1e-6);
                    ASSERT_FALSE(path.consistency.empty());
                    EXPECT_LT(path.consistency[0].median_error, 1e-3);
                    ++cases;
                }
    EXPECT_GT(cases, 150);
}

// The .chan a solve writes reads back as its cameras (camera.h), and a scale multiplies every length.
TEST(CameraSolve, ScaleToMultipliesPositionsAndDepthsAndRefusesNonsense) {
    GeneratedShot shot;
    for (int i = 0; i < 6; ++i) shot.c2w.push_back(pose(2 * i, 0, Eigen::Vector3d(0.1 * i, 0, -0.2 * i)));
    CameraPathBuilder builder(true);
    builder.add_window(window_views(shot, 0, 6, 3.0));
    CameraPath path = builder.finish();
    const auto before = path.frames.at(1005);
    path.scale_to(2.5, "test");
    EXPECT_NEAR(path.frames.at(1005).camera_to_world[3], before.camera_to_world[3] * 2.5, 1e-12);
    EXPECT_NEAR(path.frames.at(1005).median_depth, before.median_depth * 2.5, 1e-9);
    EXPECT_EQ(path.scale_source, "test");
    EXPECT_THROW(path.scale_to(0, "x"), std::invalid_argument);
    EXPECT_THROW(path.scale_to(NAN, "x"), std::invalid_argument);
    const ChanSample s = chan_sample_from_camera_to_world(path.frames.at(1005).camera_to_world);
    const auto back = chan_camera_to_world(s);
    for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(back[i], path.frames.at(1005).camera_to_world[i], 1e-9);
    EXPECT_THROW(CameraPathBuilder(false).finish(), std::logic_error);
}
