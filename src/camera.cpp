// The shot's camera (camera.h): .chan files, Nuke's knobs to pixels, the processing focal of DA3 metric.
#include "depthbatch/camera.h"

#include "depthbatch/error.h"
#include "depthbatch/exr_metadata.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace depthbatch {
namespace {

constexpr double kPi = 3.14159265358979323846;
double radians(double deg) { return deg * kPi / 180.0; }

// Row-major 4x4 products.
std::array<double, 16> mul(const std::array<double, 16>& a, const std::array<double, 16>& b) {
    std::array<double, 16> m{};
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c)
            for (int k = 0; k < 4; ++k) m[r * 4 + c] += a[r * 4 + k] * b[k * 4 + c];
    return m;
}
std::array<double, 16> rot(int axis, double deg) {
    const double c = std::cos(radians(deg)), s = std::sin(radians(deg));
    std::array<double, 16> m{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    const int i = (axis + 1) % 3, j = (axis + 2) % 3;  // x: (y, z), y: (z, x), z: (x, y)
    m[i * 4 + i] = c, m[i * 4 + j] = -s, m[j * 4 + i] = s, m[j * 4 + j] = c;
    return m;
}

}  // namespace

ChanFile read_chan_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw ConfigError("camera.chan: cannot read '" + path + "'");
    ChanFile file;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        const std::string where = "camera.chan: " + path + ":" + std::to_string(number) + ": ";
        std::istringstream words(line);
        std::vector<std::string> cols;
        for (std::string w; words >> w;) cols.push_back(w);
        if (cols.empty() || cols[0][0] == '#') continue;
        if (cols.size() != 7 && cols.size() != 8)
            throw ConfigError(where + "expected 'frame tx ty tz rx ry rz [vfov]' (7 or 8 columns), found " +
                              std::to_string(cols.size()));
        double v[8] = {};
        for (size_t k = 0; k < cols.size(); ++k) {
            size_t used = 0;
            try {
                v[k] = std::stod(cols[k], &used);
            } catch (const std::logic_error&) {
                used = 0;
            }
            if (used != cols[k].size() || !std::isfinite(v[k]))
                throw ConfigError(where + "column " + std::to_string(k + 1) + " '" + cols[k] + "' is not a number");
        }
        if (v[0] != std::floor(v[0]) || std::abs(v[0]) > 1e9)
            throw ConfigError(where + "frame '" + cols[0] + "' is not a whole frame number");
        const int frame = static_cast<int>(v[0]);
        ChanSample s;
        for (int k = 0; k < 3; ++k) s.translate[k] = v[1 + k], s.rotate_deg[k] = v[4 + k];
        if (cols.size() == 8) {
            if (!(v[7] > 0 && v[7] < 180))
                throw ConfigError(where + "vertical field of view " + cols[7] + " is not between 0 and 180 degrees");
            s.vfov_deg = v[7];
        }
        if (!file.emplace(frame, s).second)
            throw ConfigError(where + "frame " + std::to_string(frame) + " is given twice");
    }
    if (file.empty()) throw ConfigError("camera.chan: " + path + " holds no frame lines");
    return file;
}

std::array<double, 16> chan_camera_to_world(const ChanSample& s) {
    std::array<double, 16> t{1, 0, 0, s.translate[0], 0, 1, 0, s.translate[1], 0, 0, 1, s.translate[2], 0, 0, 0, 1};
    // Rotation order ZXY: the Z rotation applies first, then X, then Y.
    return mul(t, mul(rot(1, s.rotate_deg[1]), mul(rot(0, s.rotate_deg[0]), rot(2, s.rotate_deg[2]))));
}

ChanSample chan_sample_from_camera_to_world(const std::array<double, 16>& m, std::optional<double> vfov_deg) {
    const auto r = [&m](int row, int col) { return m[static_cast<size_t>(row * 4 + col)]; };
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double dot = 0;
            for (int k = 0; k < 3; ++k) dot += r(k, i) * r(k, j);
            if (std::abs(dot - (i == j ? 1.0 : 0.0)) > 1e-6)
                throw std::invalid_argument("chan_sample_from_camera_to_world: the rotation is not orthonormal");
        }
    const double det = r(0, 0) * (r(1, 1) * r(2, 2) - r(1, 2) * r(2, 1)) -
                       r(0, 1) * (r(1, 0) * r(2, 2) - r(1, 2) * r(2, 0)) +
                       r(0, 2) * (r(1, 0) * r(2, 1) - r(1, 1) * r(2, 0));
    if (std::abs(det - 1) > 1e-6)
        throw std::invalid_argument("chan_sample_from_camera_to_world: the matrix mirrors (determinant -1)");
    ChanSample s;
    for (int k = 0; k < 3; ++k) s.translate[k] = r(k, 3);
    const double degrees = 180.0 / kPi;
    const double sx = std::clamp(-r(1, 2), -1.0, 1.0);
    s.rotate_deg[0] = std::asin(sx) * degrees;
    if (std::sqrt(r(1, 0) * r(1, 0) + r(1, 1) * r(1, 1)) >
        1e-9) {  // cos(rx) > 0: R[1][0], R[1][1] are cos(rx) sin(rz), cos(rx) cos(rz)
        s.rotate_deg[1] = std::atan2(r(0, 2), r(2, 2)) * degrees;
        s.rotate_deg[2] = std::atan2(r(1, 0), r(1, 1)) * degrees;
    } else {
        s.rotate_deg[1] = std::atan2(-r(2, 0), r(0, 0)) * degrees;
        s.rotate_deg[2] = 0;
    }
    s.vfov_deg = vfov_deg;
    return s;
}

std::string chan_text(const ChanFile& file) {
    std::ostringstream out;
    out.precision(10);
    const bool vfov = !file.empty() && file.begin()->second.vfov_deg.has_value();
    for (const auto& [frame, s] : file) {
        if (s.vfov_deg.has_value() != vfov)
            throw std::invalid_argument(
                "chan_text: frame " + std::to_string(frame) +
                (vfov ? " has no vfov where the others do" : " has a vfov where the others do not"));
        out << frame;
        // A rounded zero is written 0, never -0 (the same number; -0 reads as a sign error to a person).
        const auto put = [&out](double v) { out << ' ' << (v == 0 ? 0.0 : v); };
        for (double v : s.translate) put(v);
        for (double v : s.rotate_deg) put(v);
        if (vfov) out << ' ' << *s.vfov_deg;
        out << '\n';
    }
    return out.str();
}

std::string usd_camera_text(const std::map<int, UsdCameraFrame>& frames, double haperture_mm, double vaperture_mm,
                            double fps) {
    if (frames.empty()) throw std::invalid_argument("usd_camera_text: no frames");
    if (!(haperture_mm > 0 && vaperture_mm > 0 && fps > 0))
        throw std::invalid_argument("usd_camera_text: the apertures and fps must be > 0");
    std::ostringstream u;
    u.precision(17);
    const auto tenths = [](double mm) { return mm / 100; };  // 1 mm = 1/100 of a tenth of a metre
    u << "#usda 1.0\n(\n    defaultPrim = \"shot\"\n    doc = \"depthbatch camera\"\n    metersPerUnit = 1\n"
      << "    upAxis = \"Y\"\n    startTimeCode = " << frames.begin()->first
      << "\n    endTimeCode = " << frames.rbegin()->first << "\n    timeCodesPerSecond = " << fps
      << "\n    framesPerSecond = " << fps << "\n)\n\ndef Xform \"shot\"\n{\n    def Camera \"camera\"\n    {\n";
    u << "        float horizontalAperture = " << tenths(haperture_mm) << "\n";
    u << "        float verticalAperture = " << tenths(vaperture_mm) << "\n";
    u << "        token projection = \"perspective\"\n";
    u << "        float focalLength.timeSamples = {\n";
    for (const auto& [frame, f] : frames) {
        if (!(f.focal_mm > 0))
            throw std::invalid_argument("usd_camera_text: frame " + std::to_string(frame) + " has no focal length");
        u << "            " << frame << ": " << tenths(f.focal_mm) << ",\n";
    }
    u << "        }\n        matrix4d xformOp:transform.timeSamples = {\n";
    for (const auto& [frame, f] : frames) {
        const auto& m = f.camera_to_world;
        u << "            " << frame << ": (";
        for (int row = 0; row < 4; ++row) {  // USD's row i: column i of the column-vector matrix
            u << (row ? ", (" : "(");
            for (int col = 0; col < 4; ++col) u << (col ? ", " : "") << m[static_cast<size_t>(col * 4 + row)];
            u << ")";
        }
        u << "),\n";
    }
    u << "        }\n        uniform token[] xformOpOrder = [\"xformOp:transform\"]\n    }\n}\n";
    return u.str();
}

double camera_focal_columns(const CameraSettings& camera, int display_width, std::optional<double> chan_vfov_deg) {
    if (chan_vfov_deg) {
        const double focal_mm = camera.vaperture_mm / (2 * std::tan(radians(*chan_vfov_deg) / 2));
        return focal_mm / camera.haperture_mm * display_width;
    }
    if (camera.focal_px) return *camera.focal_px;
    if (camera.focal_mm) return *camera.focal_mm / camera.haperture_mm * display_width;
    if (camera.fov_deg) return display_width / 2.0 / std::tan(radians(*camera.fov_deg) / 2);
    return 0;
}

PlateCamera make_plate_camera(const CameraSettings& camera, const PlateWindows& w, double pixel_aspect,
                              const ChanSample* sample) {
    if (!(pixel_aspect > 0)) throw ConfigError("input.pixel_aspect: must be > 0, not " + metadata_number(pixel_aspect));
    PlateCamera c;
    c.fx = camera_focal_columns(camera, w.full_width, sample ? sample->vfov_deg : std::nullopt);
    if (!(c.fx > 0))
        throw ConfigError(
            "camera: no focal length: set camera.focal (mm, with camera.haperture), camera.fov "
            "(horizontal degrees) or camera.focal_px (plate pixels)");
    c.fy = c.fx * pixel_aspect;
    c.cx = w.full_x + w.full_width / 2.0;
    c.cy = w.full_y + w.full_height / 2.0;
    c.data_x = w.x, c.data_y = w.y;
    c.pixel_aspect = pixel_aspect;
    if (sample) {
        c.world = true;
        c.camera_to_world = chan_camera_to_world(*sample);
    }
    return c;
}

double processing_focal_px(double fx_columns, double pixel_aspect, int plate_width, int plate_height, int scaled_width,
                           int scaled_height) {
    const double fx = fx_columns * scaled_width / plate_width;
    const double fy = fx_columns * pixel_aspect * scaled_height / plate_height;
    return (fx + fy) / 2;
}

std::string describe_camera(const CameraSettings& camera) {
    std::string s;
    if (camera.focal_px) s = "focal_px " + metadata_number(*camera.focal_px);
    else if (camera.focal_mm)
        s = "focal " + metadata_number(*camera.focal_mm) + " mm, haperture " + metadata_number(camera.haperture_mm) +
            " mm";
    else if (camera.fov_deg) s = "fov " + metadata_number(*camera.fov_deg) + " deg (horizontal)";
    if (!camera.chan.empty())
        s += std::string(s.empty() ? "" : "; ") + "chan " + camera.chan + " (vaperture " +
             metadata_number(camera.vaperture_mm) + " mm for its vfov)";
    return s;
}

}  // namespace depthbatch
