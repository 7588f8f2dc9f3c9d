// depthbatch — the camera from the plate: an any-view model (model_contract.h ViewsContract: Depth Anything 3
// any-view) run over windows of a shot, each window's cameras and depth in its own gauge (world frame and scale),
// chained into one camera path with one focal length and one scale (docs/camera-solve.md).
//
// The chaining follows DA3-Streaming (github ByteDance-Seed/Depth-Anything-3, da3_streaming/): consecutive windows
// share `overlap` frames; the points those frames' depth gives in both windows are aligned by a similarity transform
// (scale, rotation, translation), fitted by weighted least squares (Umeyama, "Least-squares estimation of
// transformation parameters between two point patterns", IEEE PAMI 13(4), 1991) re-weighted with Huber weights
// (iteratively reweighted least squares), and each window is mapped into the first window's gauge.
//
// Conventions: the model's cameras are OpenCV (x right, y down, z forward; world-to-camera [R|t]); what this header
// returns is Nuke's (camera.h: +Y up, the camera looks down -Z): a camera-to-world M_nuke = F M_cv F with
// F = diag(1, -1, -1, 1), world_nuke = F world_cv. The shot's first frame is the world: its camera sits at the
// origin looking down -Z. Lengths are in the solve's units (those of the first window) until a scale is applied
// (CameraPath::scale_to): metres then.
#pragma once

#include "depthbatch/model_data.h"

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

/// The job's camera.solve section (job_config.h; docs/jobs.md): set `model` and a render without a camera of its
/// own uses the camera solved from its plate.
struct CameraSolveSettings {
    std::string model;                  ///< camera.solve.model: an any-view model (absolute path); "" = no solve
    int window = 0;                     ///< camera.solve.window: views a forward (0: the model's views.window)
    int overlap = 0;                    ///< camera.solve.overlap: frames consecutive windows share (0: the model's)
    bool zoom = false;                  ///< camera.solve.zoom: a focal length per frame (else one for the shot)
    std::optional<double> distance_m;   ///< camera.solve.distance: the median scene depth at distance_frame (m)
    std::optional<int> distance_frame;  ///< camera.solve.distance_frame (default: the shot's first frame)
    std::string metric_model;           ///< camera.solve.metric_model: a metric model giving the scale ("" = none)
    std::string chan;  ///< camera.solve.chan: the .chan written ("" = default_camera_solve_path); .usda, .json beside
    bool enabled() const { return !model.empty(); }
};

/// The .chan a solve writes for a job whose output.path is `output_pattern`, when camera.solve.chan is not set:
/// beside the output, named from its file name without the frame token (depth.####.exr -> depth.camera.chan).
std::string default_camera_solve_path(const std::string& output_pattern);
/// The .usda and the report (.json) beside a solve's .chan: its path with that extension.
std::string camera_solve_usda_path(const std::string& chan_path);
std::string camera_solve_report_path(const std::string& chan_path);

/// A similarity transform x -> scale * R x + t (R row-major, a rotation).
struct Similarity {
    double scale = 1;
    std::array<double, 9> rotation{1, 0, 0, 0, 1, 0, 0, 0, 1};
    std::array<double, 3> translation{0, 0, 0};
    std::array<double, 3> apply(const std::array<double, 3>& x) const;
};

/// The similarity that maps `from` onto `to` with the least weighted squared error, sum w_i |to_i - T(from_i)|^2
/// (Umeyama 1991, with weights; the rotation's determinant is +1). Throws std::invalid_argument for fewer than 3
/// points of weight > 0, sizes that differ, negative or non-finite weights, or points that span less than a line
/// (no unique rotation).
Similarity fit_similarity(const std::vector<std::array<double, 3>>& from, const std::vector<std::array<double, 3>>& to,
                          const std::vector<double>& weights);

/// fit_similarity re-weighted: each pass multiplies the given weights by Huber weights of the residuals
/// (k = 1.345 times 1.4826 x their median absolute value, the 95%-efficiency constant of Huber's estimator), 10 passes
/// or until the transform stops changing. `residual` (optional): the weighted median of |to_i - T(from_i)| at the
/// end. Throws as fit_similarity.
Similarity robust_fit_similarity(const std::vector<std::array<double, 3>>& from,
                                 const std::vector<std::array<double, 3>>& to, const std::vector<double>& weights,
                                 double* residual = nullptr);

/// The windows a shot of `count` frames is solved in, as [first, end) positions: `window` frames starting every
/// window - overlap; the last window ends at the shot's last frame (it starts earlier and shares more frames with the
/// one before when the shot does not divide evenly); one window of every frame when count <= window. Throws
/// std::invalid_argument for count < 2, window < 2 or overlap outside 1 .. window - 1.
std::vector<std::pair<int, int>> solve_windows(int count, int window, int overlap);

/// One view of a window as the solve receives it: the frame, the model's output, and how its model input maps to
/// the plate (reformat.h ReformatPlan: plate columns per scaled model pixel, rows likewise; the pixel aspect).
struct SolveView {
    int frame = 0;
    ViewOutput view;
    double columns_per_px = 1, rows_per_px = 1;
    double pixel_aspect = 1;
    /// The index of a confidence map among view.depth.extra (-1: none; every point then weighs 1).
    int confidence = -1;
};

/// How the overlap between a window and the one before it aligned.
struct OverlapResidual {
    int window = 0;           ///< the later window's index (1 ..)
    int first_frame = 0;      ///< its first frame
    int shared = 0;           ///< frames it shares with the one before
    int points = 0;           ///< depth points the fit used
    double point_error = 0;   ///< weighted median distance of the aligned points, / their median depth
    double rotation_deg = 0;  ///< the largest angle between the two windows' cameras of a shared frame
    double centre_error = 0;  ///< the largest distance between those cameras' centres, / the points' median depth
    double scale = 1;         ///< the window's scale into the first window's units
};

/// One frame of the solved path.
struct SolvedFrame {
    int frame = 0;
    std::array<double, 16> camera_to_world{};  ///< Nuke convention, row-major, column vectors
    double focal_columns = 0;                  ///< the focal length in plate columns in force for this frame
    double model_focal_columns = 0;            ///< what the model gave for this frame (before the shot's median)
    double median_depth = 0;                   ///< median depth of its confident pixels, in path units
    double baseline = 0;                       ///< largest distance to another camera of its window / median_depth
    int window = 0;                            ///< the window whose cameras and depth it took
};

/// What kind of camera move the path is, from its cameras alone.
enum class CameraMotion {
    Moving,     ///< the camera centre travels: parallax pins the focal length and the depth
    Nodal,      ///< the camera turns about a fixed centre (a nodal pan or tilt): no parallax
    LockedOff,  ///< neither centre nor orientation changes
};
/// "moving", "nodal", "locked_off".
const char* camera_motion_name(CameraMotion motion);

/// Figures of a solve (and of any path, for the tests) the thresholds below decide.
constexpr double kShortBaseline = 0.01;  ///< a frame whose baseline (SolvedFrame) is under 1% of its depth
constexpr double kNodalTurnDeg = 0.2;    ///< a path of short baselines that turns more than this is nodal

/// The median relative error of depth reprojected between frames f and f + k of a path (the "consistency figure"):
/// each confident sample of frame f's depth is placed in the world by f's camera, projected into frame f + k, and
/// compared with f + k's depth there (bilinear; samples outside f + k's image or behind it are skipped), |z - d| / d.
struct Consistency {
    int k = 1;                ///< frame distance (in shot positions)
    double median_error = 0;  ///< median over every sample of every pair
    long long samples = 0;    ///< samples compared
};

/// The camera path of a shot.
struct CameraPath {
    std::map<int, SolvedFrame> frames;
    double focal_columns = 0;  ///< the shot's focal length (plate columns): the median of the frames' model focals
    double focal_spread = 0;   ///< 1.4826 x the median absolute deviation of those focals / focal_columns
    double focal_low = 0, focal_high = 0;  ///< their 5th and 95th percentiles (plate columns)
    bool zoom = false;                     ///< focal_columns per frame (each its model's) instead of the median
    std::vector<OverlapResidual> overlaps;
    std::vector<int> short_baseline;  ///< frames whose baseline is under kShortBaseline
    CameraMotion motion = CameraMotion::Moving;
    double travel = 0;       ///< the largest distance of a camera from the first frame's / median depth
    double turn_deg = 0;     ///< the largest angle of a camera from the first frame's
    double path_length = 0;  ///< the sum of distances between consecutive cameras (path units)
    std::vector<Consistency> consistency;
    double scale = 1;          ///< metres per solve unit once scale_to ran (1 before)
    std::string scale_source;  ///< how the scale was found ("" = not scaled: units of the first window)
    /// Whether the plate's own motion pins the focal length (a moving camera whose frames mostly have baselines);
    /// otherwise the focal is the model's reading of single pictures.
    bool focal_pinned() const;
    /// Every length (camera positions, depths, path length) times `metres_per_unit`, and `source` recorded. Throws
    /// std::invalid_argument for a factor that is not finite and > 0.
    void scale_to(double metres_per_unit, const std::string& source);
};

/// Chains the windows of a shot into one path, a window at a time (bounded memory: a window's views are dropped once
/// added; each frame keeps a small grid of its depth for the consistency figure).
class CameraPathBuilder {
public:
    /// `zoom`: keep each frame's own focal (camera.solve.zoom).
    explicit CameraPathBuilder(bool zoom);
    ~CameraPathBuilder();
    CameraPathBuilder(const CameraPathBuilder&) = delete;
    CameraPathBuilder& operator=(const CameraPathBuilder&) = delete;
    /// The next window, its views in shot order; from the second on it must share at least one frame with the one
    /// before (solve_windows). Throws std::invalid_argument for an empty window, one that shares no frame with the
    /// one before, or overlap frames whose depth gives fewer than 3 usable points (naming the frames).
    void add_window(std::vector<SolveView> views);
    /// The path: each frame's camera from the window it is central to (a frame two windows share takes the earlier
    /// one in the first half of the overlap, the later one after it), re-anchored so that the first frame is the
    /// world; focal, motion, baselines and consistency (k = 1 and the window stride) figured. Throws
    /// std::logic_error when no window was added.
    CameraPath finish();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace depthbatch
