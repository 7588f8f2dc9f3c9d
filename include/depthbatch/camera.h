// depthbatch — one camera for the shot: the job's `camera:` section (Nuke's Camera knobs or pixels, an optional
// Nuke .chan file) turned into the pinhole camera of one plate frame, used by focal-dependent metric models
// (Depth Anything 3 metric) and by the position/normal passes (passes.h).
//
// Conventions (Nuke's classic 3D system; docs/passes.md "Passes for comp" is the user-facing copy):
//   * Camera space: +X right, +Y up, the camera looks down -Z; a point at depth d (distance along the optical
//     axis, what depth.Z holds in metres) has Z = -d.
//   * The horizontal aperture spans the display window's width (Nuke's format), whatever the data window is:
//     fx = focal_mm / haperture_mm * display_width, in the plate's stored (squeezed) columns. The vertical
//     focal follows from the pixel aspect a (EXR pixelAspectRatio: a pixel is a times as wide as high):
//     fy = fx * a rows. vaperture only converts a vertical field of view (a .chan file's 8th column) to a focal
//     length: focal_mm = vaperture / (2 tan(vfov / 2)), as Nuke's Camera does when it imports a .chan file.
//   * Principal point: the display window's centre. Pixel (x, y) of the file (OpenEXR/OIIO coordinates: y grows
//     down, the data window may start anywhere inside or outside the display window) has its centre at
//     (x + 0.5, y + 0.5); Nuke's y grows up, so
//       u = (x + 0.5) - (full_x + full_width / 2)            columns right of the centre
//       v = (full_y + full_height / 2) - (y + 0.5)           rows above the centre
//       P_camera = (u / fx * d, v / fy * d, -d).
//   * A .chan file (Nuke's Camera "export chan file"): one line per frame, `frame tx ty tz rx ry rz [vfov]`,
//     rotations in degrees, Nuke's default orders: transform SRT, rotation ZXY (the Z rotation first), so
//     camera-to-world = T(tx,ty,tz) * Ry(ry) * Rx(rx) * Rz(rz) (column vectors). vfov (degrees), when present,
//     gives the frame's focal length through vaperture (above); without it the camera section's focal is used.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>

namespace depthbatch {

/// Nuke's Camera defaults (Camera node, "Projection" tab): 24.576 x 18.672 mm (Super 35 4-perf full aperture).
constexpr double kNukeHaperture_mm = 24.576;
constexpr double kNukeVaperture_mm = 18.672;

/// The job's camera section (all optional; at most one of focal_mm, fov_deg, focal_px).
struct CameraSettings {
    std::optional<double> focal_mm;           ///< camera.focal: lens focal length (mm)
    double haperture_mm = kNukeHaperture_mm;  ///< camera.haperture: film back width (mm)
    double vaperture_mm = kNukeVaperture_mm;  ///< camera.vaperture: film back height (mm)
    std::optional<double> fov_deg;            ///< camera.fov: horizontal field of view (degrees, 0 < fov < 180)
    std::optional<double> focal_px;           ///< camera.focal_px (older: depth.focal_px): focal in plate columns
    std::string chan;                         ///< camera.chan: absolute path of a Nuke .chan file, "" = none
    /// Whether the section states a focal length some way (a .chan file with vfov columns is checked per frame).
    bool has_focal() const { return focal_mm || fov_deg || focal_px; }
};

/// One line of a .chan file.
struct ChanSample {
    double translate[3] = {0, 0, 0};
    double rotate_deg[3] = {0, 0, 0};  ///< rx, ry, rz (degrees)
    std::optional<double> vfov_deg;    ///< vertical field of view, when the line has an 8th column
};

/// A whole .chan file: frame -> sample.
using ChanFile = std::map<int, ChanSample>;

/// Read a Nuke .chan file. Lines are `frame tx ty tz rx ry rz [vfov]` separated by spaces or tabs; blank lines
/// and lines starting with '#' are skipped; the frame is an integer (a whole number written "1001.0" is taken).
/// Throws ConfigError naming path:line for an unreadable file, a line of another column count, a value that is
/// not a finite number, a repeated frame, a vfov outside (0, 180), and a file without any frame.
ChanFile read_chan_file(const std::string& path);

/// Camera-to-world of a .chan sample (row-major 4x4; see the header comment for the orders).
std::array<double, 16> chan_camera_to_world(const ChanSample& sample);

/// The .chan sample of a camera-to-world transform `m` (row-major 4x4 whose upper 3x3 is a rotation: orthonormal,
/// determinant +1; the last row 0 0 0 1), the inverse of chan_camera_to_world: translate = m's last column, and
/// R = Ry(ry) Rx(rx) Rz(rz) solved for the angles: rx = asin(-R[1][2]) in [-90, 90], ry = atan2(R[0][2], R[2][2]),
/// rz = atan2(R[1][0], R[1][1]); at rx = +-90 (gimbal lock: only ry - rz or ry + rz is defined) rz = 0 and ry takes
/// the whole turn, atan2(-R[2][0], R[0][0]). chan_camera_to_world of the result equals `m` to rounding. `vfov_deg`
/// is copied into the sample. Throws std::invalid_argument for a matrix whose 3x3 is not a rotation (1e-6).
ChanSample chan_sample_from_camera_to_world(const std::array<double, 16>& m,
                                            std::optional<double> vfov_deg = std::nullopt);

/// A .chan file's text, as Nuke's Camera "import chan file" and read_chan_file read it: one line per frame in
/// ascending order, `frame tx ty tz rx ry rz [vfov]` separated by spaces, each number with 10 significant digits
/// (the vfov column on every line or on none: a file mixing them is refused with std::invalid_argument).
std::string chan_text(const ChanFile& file);

/// One frame of a camera for USD: its pose and focal length.
struct UsdCameraFrame {
    std::array<double, 16> camera_to_world{};  ///< row-major 4x4, column vectors (as chan_camera_to_world), metres
    double focal_mm = 0;                       ///< with the film back usd_camera_text is given
};

/// A .usda layer holding one animated UsdGeomCamera, /shot/camera, for Nuke 16's Camera4 and other DCCs: USD's
/// camera looks down -Z with +Y up, as Nuke's classic camera (the header comment), so the pose is written as it is:
/// xformOp:transform time samples, USD's row-vector matrices (the transpose of `camera_to_world`). The stage is in
/// metres (metersPerUnit 1, upAxis Y: P passes are in metres); USD measures focalLength and the apertures in tenths
/// of a scene unit (UsdGeomCamera, "Units of Measure for Camera Properties"), so millimetres are written / 100.
/// Time codes are frame numbers (startTimeCode / endTimeCode the first and last, timeCodesPerSecond = `fps`). Numbers
/// carry 17 significant digits. Throws std::invalid_argument for no frames, a focal or aperture <= 0, or fps <= 0.
std::string usd_camera_text(const std::map<int, UsdCameraFrame>& frames, double haperture_mm, double vaperture_mm,
                            double fps);

/// The windows of a plate frame (OIIO ImageSpec fields), in pixels.
struct PlateWindows {
    int x = 0, y = 0, width = 0, height = 0;                      ///< data window: origin and size
    int full_x = 0, full_y = 0, full_width = 0, full_height = 0;  ///< display window
};

/// The pinhole camera of one plate frame, in the plate's stored pixels (see the header comment).
struct PlateCamera {
    double fx = 0;               ///< focal length in stored columns
    double fy = 0;               ///< focal length in rows (fx * pixel aspect)
    double cx = 0, cy = 0;       ///< principal point in file pixel coordinates (edges at integers): the display
                                 ///< window's centre
    int data_x = 0, data_y = 0;  ///< the data window's origin: pixel (i, j) of a data-window buffer is file
                                 ///< pixel (data_x + i, data_y + j)
    double pixel_aspect = 1;
    bool world = false;  ///< camera_to_world holds a .chan transform (passes are in world space)
    std::array<double, 16> camera_to_world{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};

    /// Camera-space direction of data-window pixel (i, j)'s centre at unit depth: (u / fx, v / fy, -1).
    void ray(double i, double j, double out[3]) const {
        out[0] = (data_x + i + 0.5 - cx) / fx;
        out[1] = (cy - (data_y + j + 0.5)) / fy;
        out[2] = -1;
    }
};

/// The horizontal focal length in stored plate columns that `camera` states for a plate whose display window
/// is `display_width` columns wide: focal_px as given; focal_mm / haperture_mm * display_width;
/// display_width / 2 / tan(fov / 2). `chan_vfov_deg` (a .chan line's vfov) takes precedence:
/// focal_mm = vaperture / (2 tan(vfov / 2)). Returns 0 when nothing states a focal length.
double camera_focal_columns(const CameraSettings& camera, int display_width,
                            std::optional<double> chan_vfov_deg = std::nullopt);

/// The camera of one frame: focal from camera_focal_columns (the sample's vfov first), principal point at the
/// display window's centre, the sample's transform when `sample` is given. Throws ConfigError when no focal
/// length is stated (naming camera.focal / camera.fov / camera.focal_px) or the pixel aspect is not > 0.
PlateCamera make_plate_camera(const CameraSettings& camera, const PlateWindows& windows, double pixel_aspect,
                              const ChanSample* sample = nullptr);

/// The focal length in the pixels a model sees, for focal-dependent metric output (Depth Anything 3 metric):
/// the plate's data window (plate_width x plate_height stored pixels, focal fx columns, pixel aspect a) resized
/// to scaled_width x scaled_height square model pixels gives fx' = fx * scaled_width / plate_width and
/// fy' = fx * a * scaled_height / plate_height; the result is their mean (fx' + fy') / 2, as DA3's
/// apply_metric_scaling does (depth_anything_3/utils/alignment.py: focal = (K[0,0] + K[1,1]) / 2, metres =
/// raw * focal / 300). Equal to fx' when the resize keeps the (desqueezed) aspect; not when model.size forces
/// another aspect ([140, 140] on 854 x 480: fx' = 0.164 fx, fy' = 0.292 fx, mean 0.228 fx).
double processing_focal_px(double fx_columns, double pixel_aspect, int plate_width, int plate_height, int scaled_width,
                           int scaled_height);

/// "focal 35 mm, haperture 24.576 mm -> 2800 px" style description of where a focal length came from, for
/// metadata (depthbatch/camera) and logs.
std::string describe_camera(const CameraSettings& camera);

}  // namespace depthbatch
