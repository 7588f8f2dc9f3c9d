// The camera path from an any-view model's windows (camera_solve.h): similarity fits, windows, the chaining.
#include "depthbatch/camera_solve.h"

#include "depthbatch/frame_sequence.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <regex>
#include <set>
#include <stdexcept>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

using Vec3 = std::array<double, 3>;
using Mat3 = Eigen::Matrix3d;

constexpr double kPi = 3.14159265358979323846;

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
    double m = v[mid];
    if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + static_cast<long>(mid))) / 2;
    return m;
}

/// The q-th quantile (0..1) by linear interpolation between order statistics.
double quantile_of(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double at = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(at));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

/// Median of `values` weighted by `weights` (> 0 entries only).
double weighted_median(const std::vector<double>& values, const std::vector<double>& weights) {
    std::vector<size_t> order;
    double total = 0;
    for (size_t i = 0; i < values.size(); ++i)
        if (weights[i] > 0) order.push_back(i), total += weights[i];
    if (order.empty()) return 0;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
    double run = 0;
    for (size_t i : order)
        if ((run += weights[i]) >= total / 2) return values[i];
    return values[order.back()];
}

/// The angle of the rotation between two rotations: |A - B|_F = 2 sqrt(2) sin(angle / 2), exact near 0 where
/// acos((trace(A B^T) - 1) / 2) loses half its digits (it reads 1.7e-6 degrees for identical float matrices).
double angle_between_deg(const Mat3& a, const Mat3& b) {
    return 2 * std::asin(std::min(1.0, (a - b).norm() / std::sqrt(8.0))) * 180 / kPi;
}

Eigen::Vector3d vec(const Vec3& v) { return {v[0], v[1], v[2]}; }

}  // namespace

std::string default_camera_solve_path(const std::string& output_pattern) {
    const fs::path p(output_pattern);
    static const std::regex token(R"([._-]?(#+|@+|%0?\d*d|\$F\d*))");
    std::string name = std::regex_replace(p.stem().string(), token, "");
    if (name.empty()) name = "depth";
    return (p.parent_path() / (name + ".camera.chan")).string();
}
std::string camera_solve_usda_path(const std::string& chan_path) {
    return fs::path(chan_path).replace_extension(".usda").string();
}
std::string camera_solve_report_path(const std::string& chan_path) {
    return fs::path(chan_path).replace_extension(".json").string();
}

Vec3 Similarity::apply(const Vec3& x) const {
    const auto& r = rotation;
    return {scale * (r[0] * x[0] + r[1] * x[1] + r[2] * x[2]) + translation[0],
            scale * (r[3] * x[0] + r[4] * x[1] + r[5] * x[2]) + translation[1],
            scale * (r[6] * x[0] + r[7] * x[1] + r[8] * x[2]) + translation[2]};
}

Similarity fit_similarity(const std::vector<Vec3>& from, const std::vector<Vec3>& to,
                          const std::vector<double>& weights) {
    if (from.size() != to.size() || from.size() != weights.size())
        throw std::invalid_argument("fit_similarity: " + std::to_string(from.size()) + " points, " +
                                    std::to_string(to.size()) + " targets, " + std::to_string(weights.size()) +
                                    " weights");
    double total = 0;
    size_t used = 0;
    Eigen::Vector3d mu_a = Eigen::Vector3d::Zero(), mu_b = Eigen::Vector3d::Zero();
    for (size_t i = 0; i < from.size(); ++i) {
        const double w = weights[i];
        if (!(w >= 0) || !std::isfinite(w))
            throw std::invalid_argument("fit_similarity: a weight is negative or not finite");
        if (w == 0) continue;
        total += w, ++used;
        mu_a += w * vec(from[i]), mu_b += w * vec(to[i]);
    }
    if (used < 3)
        throw std::invalid_argument("fit_similarity: " + std::to_string(used) + " points of weight > 0 (3 needed)");
    mu_a /= total, mu_b /= total;
    // Umeyama (1991) eqs. 36-42 with weights: the weighted cross-covariance, its SVD, the reflection guard.
    Mat3 cov = Mat3::Zero();
    double var_a = 0;
    for (size_t i = 0; i < from.size(); ++i) {
        if (weights[i] == 0) continue;
        const Eigen::Vector3d a = vec(from[i]) - mu_a, b = vec(to[i]) - mu_b;
        cov += weights[i] * b * a.transpose();
        var_a += weights[i] * a.squaredNorm();
    }
    cov /= total, var_a /= total;
    Eigen::JacobiSVD<Mat3> svd(cov, Eigen::ComputeFullU | Eigen::ComputeFullV);
    const Eigen::Vector3d sv = svd.singularValues();
    if (!(var_a > 0) || !(sv[1] > 1e-12 * std::max(sv[0], 1e-300)))
        throw std::invalid_argument("fit_similarity: the points span less than a plane's line (no unique rotation)");
    Eigen::Vector3d d(1, 1, 1);
    if (svd.matrixU().determinant() * svd.matrixV().determinant() < 0) d[2] = -1;
    const Mat3 r = svd.matrixU() * d.asDiagonal() * svd.matrixV().transpose();
    const double s = sv.dot(d) / var_a;
    const Eigen::Vector3d t = mu_b - s * r * mu_a;
    Similarity out;
    out.scale = s;
    for (int i = 0; i < 3; ++i) {
        out.translation[static_cast<size_t>(i)] = t[i];
        for (int j = 0; j < 3; ++j) out.rotation[static_cast<size_t>(i * 3 + j)] = r(i, j);
    }
    return out;
}

Similarity robust_fit_similarity(const std::vector<Vec3>& from, const std::vector<Vec3>& to,
                                 const std::vector<double>& weights, double* residual) {
    Similarity fit = fit_similarity(from, to, weights);
    std::vector<double> r(from.size()), w(weights);
    const auto residuals = [&] {
        for (size_t i = 0; i < from.size(); ++i) {
            const Vec3 p = fit.apply(from[i]);
            r[i] = std::hypot(p[0] - to[i][0], p[1] - to[i][1], p[2] - to[i][2]);
        }
    };
    for (int pass = 0; pass < 10; ++pass) {
        residuals();
        const double sigma = 1.4826 * weighted_median(r, weights);
        if (!(sigma > 0)) break;  // an exact fit: nothing to re-weigh
        const double k = 1.345 * sigma;
        for (size_t i = 0; i < w.size(); ++i) w[i] = weights[i] * (r[i] <= k ? 1.0 : k / r[i]);
        const Similarity next = fit_similarity(from, to, w);
        double change = std::abs(next.scale - fit.scale);
        for (size_t i = 0; i < 9; ++i) change = std::max(change, std::abs(next.rotation[i] - fit.rotation[i]));
        fit = next;
        if (change < 1e-12) break;
    }
    residuals();
    if (residual) *residual = weighted_median(r, weights);
    return fit;
}

std::vector<std::pair<int, int>> solve_windows(int count, int window, int overlap) {
    if (count < 2) throw std::invalid_argument("a camera solve needs at least 2 frames, not " + std::to_string(count));
    if (window < 2)
        throw std::invalid_argument("camera.solve.window must be at least 2, not " + std::to_string(window));
    if (overlap < 1 || overlap >= window)
        throw std::invalid_argument("camera.solve.overlap must be 1 to window - 1 (" + std::to_string(window - 1) +
                                    "), not " + std::to_string(overlap));
    if (count <= window) return {{0, count}};
    std::vector<std::pair<int, int>> out;
    const int stride = window - overlap;
    for (int first = 0;; first += stride) {
        if (first + window >= count) {
            out.emplace_back(count - window, count);
            break;
        }
        out.emplace_back(first, first + window);
    }
    return out;
}

const char* camera_motion_name(CameraMotion motion) {
    switch (motion) {
    case CameraMotion::Moving: return "moving";
    case CameraMotion::Nodal: return "nodal";
    case CameraMotion::LockedOff: return "locked_off";
    }
    return "moving";
}

bool CameraPath::focal_pinned() const {
    return motion == CameraMotion::Moving && short_baseline.size() * 2 < frames.size();
}

void CameraPath::scale_to(double metres_per_unit, const std::string& source) {
    if (!(metres_per_unit > 0) || !std::isfinite(metres_per_unit))
        throw std::invalid_argument("a camera path's scale must be finite and > 0, not " +
                                    std::to_string(metres_per_unit));
    for (auto& [f, s] : frames) {
        for (size_t i : {3u, 7u, 11u}) s.camera_to_world[i] *= metres_per_unit;
        s.median_depth *= metres_per_unit;
    }
    path_length *= metres_per_unit;
    scale *= metres_per_unit;
    scale_source = source;
}

// ---- the builder ------------------------------------------------------------------------------------------

namespace {

/// A view placed in the first window's gauge (OpenCV axes): its camera-to-world and its depth in those units.
struct PlacedView {
    int frame = 0;
    int window = 0;
    Mat3 rotation;           ///< camera-to-world
    Eigen::Vector3d centre;  ///< camera centre
    double fx = 0, fy = 0, cx = 0, cy = 0;
    int input_width = 0, input_height = 0;
    int width = 0, height = 0;  ///< of depth
    std::vector<float> depth;   ///< in the gauge's units
    std::vector<float> weight;  ///< confidence (1 without one); 0 where the depth is unusable
    double model_focal_columns = 0;
    /// The point of depth pixel (i, j) in the gauge.
    Eigen::Vector3d point(int i, int j) const {
        const double d = depth[static_cast<size_t>(j) * width + i];
        const double u = (i + 0.5) * input_width / width, v = (j + 0.5) * input_height / height;
        return rotation * Eigen::Vector3d((u - cx) / fx * d, (v - cy) / fy * d, d) + centre;
    }
};

/// What a frame keeps for the whole shot: its camera and a small grid of its depth (the consistency figure).
struct FrameRecordSmall {
    int window = 0;
    Mat3 rotation;
    Eigen::Vector3d centre;
    double fx = 0, fy = 0, cx = 0, cy = 0;
    int input_width = 0, input_height = 0;
    int gw = 0, gh = 0;
    std::vector<float> grid;  ///< depth at the grid's cells, 0 = not confident / unusable
    double median_depth = 0;
    double model_focal_columns = 0;
};

constexpr int kGridW = 64, kGridH = 36;  ///< the kept depth grid (consistency)
constexpr int kFitStep = 24;             ///< overlap points: about kFitStep x kFitStep per frame

PlacedView place(SolveView&& v, const Similarity& to_gauge, int window) {
    PlacedView p;
    p.frame = v.frame, p.window = window;
    const auto& e = v.view.world_to_camera;
    Mat3 r;
    r << e[0], e[1], e[2], e[4], e[5], e[6], e[8], e[9], e[10];
    const Eigen::Vector3d t(e[3], e[7], e[11]);
    const Mat3 c2w = r.transpose();
    const Eigen::Vector3d c = -c2w * t;
    Mat3 rs;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) rs(i, j) = to_gauge.rotation[static_cast<size_t>(i * 3 + j)];
    p.rotation = rs * c2w;
    p.centre = to_gauge.scale * rs * c + vec(to_gauge.translation);
    const auto& k = v.view.intrinsics;
    p.fx = k[0], p.fy = k[4], p.cx = k[2], p.cy = k[5];
    if (!(p.fx > 0) || !(p.fy > 0))
        throw std::invalid_argument("frame " + std::to_string(v.frame) + ": the model gives a focal length of " +
                                    std::to_string(p.fx) + " x " + std::to_string(p.fy) + " px (not > 0)");
    p.input_width = v.view.input_width, p.input_height = v.view.input_height;
    p.width = v.view.depth.width, p.height = v.view.depth.height;
    p.depth = std::move(v.view.depth.data);
    const std::vector<float>* conf = v.confidence >= 0 && static_cast<size_t>(v.confidence) < v.view.depth.extra.size()
                                         ? &v.view.depth.extra[static_cast<size_t>(v.confidence)]
                                         : nullptr;
    p.weight.assign(p.depth.size(), 1.0f);
    for (size_t i = 0; i < p.depth.size(); ++i) {
        p.depth[i] = static_cast<float>(p.depth[i] * to_gauge.scale);
        if (conf) p.weight[i] = std::max(0.0f, (*conf)[i]);
        if (!(p.depth[i] > 0) || !std::isfinite(p.depth[i]) || !std::isfinite(p.weight[i])) p.weight[i] = 0;
    }
    // The model's focal in plate columns: fx in scaled model pixels times plate columns per pixel; fy likewise in
    // rows, a row being 1 / pixel_aspect of a column (camera.h PlateCamera: fy = fx * aspect).
    p.model_focal_columns = (p.fx * v.columns_per_px + p.fy * v.rows_per_px / v.pixel_aspect) / 2;
    return p;
}

FrameRecordSmall keep(const PlacedView& p) {
    FrameRecordSmall r;
    r.window = p.window, r.rotation = p.rotation, r.centre = p.centre;
    r.fx = p.fx, r.fy = p.fy, r.cx = p.cx, r.cy = p.cy;
    r.input_width = p.input_width, r.input_height = p.input_height;
    r.gw = std::min(kGridW, p.width), r.gh = std::min(kGridH, p.height);
    r.model_focal_columns = p.model_focal_columns;
    // Confident pixels: weight at least the frame's median weight (all of them without a confidence map).
    std::vector<double> weights;
    for (float w : p.weight)
        if (w > 0) weights.push_back(w);
    const double cut = median_of(weights);
    std::vector<double> depths;
    for (size_t i = 0; i < p.depth.size(); ++i)
        if (p.weight[i] > 0 && p.weight[i] >= cut) depths.push_back(p.depth[i]);
    r.median_depth = median_of(depths);
    r.grid.assign(static_cast<size_t>(r.gw) * r.gh, 0.0f);
    for (int b = 0; b < r.gh; ++b)
        for (int a = 0; a < r.gw; ++a) {
            const int i = std::min(p.width - 1, static_cast<int>((a + 0.5) * p.width / r.gw));
            const int j = std::min(p.height - 1, static_cast<int>((b + 0.5) * p.height / r.gh));
            const size_t at = static_cast<size_t>(j) * p.width + i;
            if (p.weight[at] > 0 && p.weight[at] >= cut) r.grid[static_cast<size_t>(b) * r.gw + a] = p.depth[at];
        }
    return r;
}

/// Bilinear depth of `g`'s grid at input pixel (u, v); nullopt outside it or next to an unusable cell.
std::optional<double> grid_depth(const FrameRecordSmall& g, double u, double v) {
    const double a = u * g.gw / g.input_width - 0.5, b = v * g.gh / g.input_height - 0.5;
    if (!(a >= 0 && b >= 0 && a <= g.gw - 1 && b <= g.gh - 1)) return std::nullopt;
    const int a0 = std::min(static_cast<int>(a), std::max(0, g.gw - 2)),
              b0 = std::min(static_cast<int>(b), std::max(0, g.gh - 2));
    const int a1 = std::min(a0 + 1, g.gw - 1), b1 = std::min(b0 + 1, g.gh - 1);
    const double fa = a - a0, fb = b - b0;
    const auto at = [&](int x, int y) { return static_cast<double>(g.grid[static_cast<size_t>(y) * g.gw + x]); };
    const double d00 = at(a0, b0), d10 = at(a1, b0), d01 = at(a0, b1), d11 = at(a1, b1);
    if (!(d00 > 0 && d10 > 0 && d01 > 0 && d11 > 0)) return std::nullopt;
    return (d00 * (1 - fa) + d10 * fa) * (1 - fb) + (d01 * (1 - fa) + d11 * fa) * fb;
}

Consistency consistency(const std::vector<const FrameRecordSmall*>& frames, int k) {
    Consistency c;
    c.k = k;
    std::vector<double> errors;
    for (size_t f = 0; f + static_cast<size_t>(k) < frames.size(); ++f) {
        const FrameRecordSmall& a = *frames[f];
        const FrameRecordSmall& b = *frames[f + static_cast<size_t>(k)];
        const Mat3 to_b = b.rotation.transpose();
        for (int y = 0; y < a.gh; ++y)
            for (int x = 0; x < a.gw; ++x) {
                const double d = a.grid[static_cast<size_t>(y) * a.gw + x];
                if (!(d > 0)) continue;
                const double u = (x + 0.5) * a.input_width / a.gw, v = (y + 0.5) * a.input_height / a.gh;
                const Eigen::Vector3d world =
                    a.rotation * Eigen::Vector3d((u - a.cx) / a.fx * d, (v - a.cy) / a.fy * d, d) + a.centre;
                const Eigen::Vector3d in_b = to_b * (world - b.centre);
                if (!(in_b.z() > 0)) continue;
                const auto db = grid_depth(b, b.fx * in_b.x() / in_b.z() + b.cx, b.fy * in_b.y() / in_b.z() + b.cy);
                if (db) errors.push_back(std::abs(in_b.z() - *db) / *db);
            }
    }
    c.samples = static_cast<long long>(errors.size());
    c.median_error = median_of(std::move(errors));
    return c;
}

}  // namespace

struct CameraPathBuilder::Impl {
    bool zoom = false;
    int windows = 0;
    int stride = 0;                    ///< the first pair's frames apart (the consistency figure's second k)
    std::vector<PlacedView> previous;  ///< the last window, placed
    std::map<int, FrameRecordSmall> frames;
    std::vector<std::vector<int>> members;  ///< each window's frames
    std::vector<OverlapResidual> overlaps;
};

CameraPathBuilder::CameraPathBuilder(bool zoom) : impl_(std::make_unique<Impl>()) { impl_->zoom = zoom; }
CameraPathBuilder::~CameraPathBuilder() = default;

void CameraPathBuilder::add_window(std::vector<SolveView> views) {
    Impl& m = *impl_;
    if (views.empty()) throw std::invalid_argument("a camera solve window without views");
    Similarity to_gauge;  // the first window is the gauge
    OverlapResidual residual;
    std::vector<int> shared;
    if (m.windows > 0) {
        for (const SolveView& v : views)
            for (const PlacedView& p : m.previous)
                if (p.frame == v.frame) shared.push_back(v.frame);
        if (shared.empty())
            throw std::invalid_argument("camera solve window " + std::to_string(m.windows) + " (frames " +
                                        std::to_string(views.front().frame) + "-" + std::to_string(views.back().frame) +
                                        ") shares no frame with the window before it");
        // The shared frames' depth points: in this window's gauge (from) and, placed, in the first one's (to).
        std::vector<Vec3> from, to;
        std::vector<double> weights, depths;
        for (int f : shared) {
            const PlacedView& before =
                *std::find_if(m.previous.begin(), m.previous.end(), [f](const PlacedView& p) { return p.frame == f; });
            SolveView copy =
                *std::find_if(views.begin(), views.end(), [f](const SolveView& v) { return v.frame == f; });
            const PlacedView here = place(std::move(copy), Similarity{}, m.windows);
            if (here.width != before.width || here.height != before.height)
                throw std::invalid_argument("frame " + std::to_string(f) +
                                            ": two windows gave depth of different sizes");
            const int step_x = std::max(1, here.width / kFitStep), step_y = std::max(1, here.height / kFitStep);
            for (int j = step_y / 2; j < here.height; j += step_y)
                for (int i = step_x / 2; i < here.width; i += step_x) {
                    const size_t at = static_cast<size_t>(j) * here.width + i;
                    const double w = static_cast<double>(here.weight[at]) * before.weight[at];
                    if (!(w > 0)) continue;
                    const Eigen::Vector3d a = here.point(i, j), b = before.point(i, j);
                    from.push_back({a.x(), a.y(), a.z()});
                    to.push_back({b.x(), b.y(), b.z()});
                    weights.push_back(w);
                    depths.push_back(before.depth[at]);
                }
        }
        if (from.size() < 3)
            throw std::invalid_argument("camera solve: frames " + format_frame_spec(shared) +
                                        ", shared by two windows, give " + std::to_string(from.size()) +
                                        " usable depth points (3 needed): the model's depth there is empty");
        double median_distance = 0;
        to_gauge = robust_fit_similarity(from, to, weights, &median_distance);
        const double depth = median_of(depths);
        residual.window = m.windows;
        residual.first_frame = views.front().frame;
        residual.shared = static_cast<int>(shared.size());
        residual.points = static_cast<int>(from.size());
        residual.point_error = depth > 0 ? median_distance / depth : 0;
        residual.scale = to_gauge.scale;
        if (m.stride == 0) m.stride = static_cast<int>(m.previous.size() - shared.size());
    }
    std::vector<PlacedView> placed;
    placed.reserve(views.size());
    for (SolveView& v : views) placed.push_back(place(std::move(v), to_gauge, m.windows));
    // Cameras of the shared frames, as each window places them.
    for (int f : shared) {
        const PlacedView& a =
            *std::find_if(m.previous.begin(), m.previous.end(), [f](const PlacedView& p) { return p.frame == f; });
        const PlacedView& b =
            *std::find_if(placed.begin(), placed.end(), [f](const PlacedView& p) { return p.frame == f; });
        residual.rotation_deg = std::max(residual.rotation_deg, angle_between_deg(a.rotation, b.rotation));
        const double depth = m.frames.count(f) ? m.frames[f].median_depth : 0;
        if (depth > 0) residual.centre_error = std::max(residual.centre_error, (a.centre - b.centre).norm() / depth);
    }
    if (m.windows > 0) m.overlaps.push_back(residual);
    // Which window each frame keeps: shared frames in the overlap's first half keep the earlier window's.
    std::vector<int> members;
    for (const PlacedView& p : placed) {
        members.push_back(p.frame);
        const auto s = std::find(shared.begin(), shared.end(), p.frame);
        if (s != shared.end() && (s - shared.begin()) < static_cast<long>(shared.size() / 2)) continue;
        m.frames[p.frame] = keep(p);
    }
    m.members.push_back(std::move(members));
    m.previous = std::move(placed);
    ++m.windows;
}

CameraPath CameraPathBuilder::finish() {
    Impl& m = *impl_;
    if (m.frames.empty()) throw std::logic_error("CameraPathBuilder::finish without a window");
    // The first frame is the world: every camera re-placed rigidly (depths do not change).
    const FrameRecordSmall first = m.frames.begin()->second;
    const Mat3 back = first.rotation.transpose();
    for (auto& [f, r] : m.frames) {
        r.rotation = back * r.rotation;
        r.centre = back * (r.centre - first.centre);
    }
    CameraPath path;
    path.zoom = m.zoom;
    path.overlaps = m.overlaps;
    std::vector<double> focals;
    for (const auto& [f, r] : m.frames) focals.push_back(r.model_focal_columns);
    path.focal_columns = median_of(focals);
    std::vector<double> deviations;
    for (double v : focals) deviations.push_back(std::abs(v - path.focal_columns));
    path.focal_spread = path.focal_columns > 0 ? 1.4826 * median_of(deviations) / path.focal_columns : 0;
    path.focal_low = quantile_of(focals, 0.05), path.focal_high = quantile_of(focals, 0.95);
    // Baselines: each frame against the other cameras of the window it took.
    std::vector<const FrameRecordSmall*> ordered;
    std::vector<double> all_depths;
    for (const auto& [f, r] : m.frames) ordered.push_back(&r), all_depths.push_back(r.median_depth);
    const double scene_depth = median_of(all_depths);
    const Eigen::Matrix3d flip = Eigen::Vector3d(1, -1, -1).asDiagonal();
    const FrameRecordSmall* before = nullptr;
    for (const auto& [f, r] : m.frames) {
        SolvedFrame s;
        s.frame = f, s.window = r.window;
        s.model_focal_columns = r.model_focal_columns;
        s.focal_columns = m.zoom ? r.model_focal_columns : path.focal_columns;
        s.median_depth = r.median_depth;
        double far = 0;
        for (int g : m.members[static_cast<size_t>(r.window)])
            if (g != f && m.frames.count(g)) far = std::max(far, (m.frames.at(g).centre - r.centre).norm());
        s.baseline = r.median_depth > 0 ? far / r.median_depth : 0;
        if (s.baseline < kShortBaseline) path.short_baseline.push_back(f);
        if (scene_depth > 0) path.travel = std::max(path.travel, r.centre.norm() / scene_depth);
        path.turn_deg = std::max(path.turn_deg, angle_between_deg(r.rotation, Mat3::Identity()));
        if (before) path.path_length += (r.centre - before->centre).norm();
        before = &r;
        // Nuke's axes: M_nuke = F M_cv F (camera_solve.h).
        const Mat3 rn = flip * r.rotation * flip;
        const Eigen::Vector3d cn = flip * r.centre;
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j) s.camera_to_world[static_cast<size_t>(i * 4 + j)] = rn(i, j);
            s.camera_to_world[static_cast<size_t>(i * 4 + 3)] = cn[i];
        }
        s.camera_to_world[15] = 1;
        path.frames[f] = s;
    }
    if (path.short_baseline.size() == path.frames.size())
        path.motion = path.turn_deg > kNodalTurnDeg ? CameraMotion::Nodal : CameraMotion::LockedOff;
    path.consistency.push_back(consistency(ordered, 1));
    if (m.stride > 1) path.consistency.push_back(consistency(ordered, m.stride));
    return path;
}

}  // namespace depthbatch
