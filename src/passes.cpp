// Position and normal passes from depth (passes.h).
#include "depthbatch/passes.h"

#include <cmath>
#include <limits>
#include <vector>

namespace depthbatch {
namespace {

/// The camera's rays at unit depth, separably: x component per column, y component per row (z is -1).
void rays(const PlateCamera& c, int width, int height, std::vector<float>& rx, std::vector<float>& ry) {
    rx.resize(width);
    ry.resize(height);
    double r[3];
    for (int i = 0; i < width; ++i) c.ray(i, 0, r), rx[i] = static_cast<float>(r[0]);
    for (int j = 0; j < height; ++j) c.ray(0, j, r), ry[j] = static_cast<float>(r[1]);
}

inline bool surface(float d) { return d > 0 && d < std::numeric_limits<float>::infinity(); }

/// The tangent direction along one axis at a pixel of depth d whose neighbours before/after have depth
/// d0/d1 (NaN when absent): +1 = after - here, -1 = here - before, 0 = central (after - before), 2 = none.
/// `footprint` is 1 / focal (pixels) along the axis: d * footprint is the lateral distance between neighbouring
/// samples, the depth step of a 45-degree slope. Jumps within that of each other are one smooth surface (so a
/// pixel beside a crest, where the jumps are tiny, takes the central difference too).
inline int tangent_side(float d, float d0, float d1, float footprint) {
    const bool has0 = surface(d0), has1 = surface(d1);
    if (!has0 && !has1) return 2;
    if (!has0) return 1;
    if (!has1) return -1;
    const float j0 = std::abs(d - d0), j1 = std::abs(d1 - d);
    const float lo = j0 < j1 ? j0 : j1, hi = j0 < j1 ? j1 : j0;
    if (hi <= 2 * lo + d * footprint) return 0;
    return j1 <= j0 ? 1 : -1;
}

}  // namespace

void position_pass(const float* depth, int width, int height, const PlateCamera& camera, float* const p[3]) {
    std::vector<float> rx, ry;
    rays(camera, width, height, rx, ry);
    const auto& m = camera.camera_to_world;
    const float m0 = float(m[0]), m1 = float(m[1]), m2 = float(m[2]), m3 = float(m[3]);
    const float m4 = float(m[4]), m5 = float(m[5]), m6 = float(m[6]), m7 = float(m[7]);
    const float m8 = float(m[8]), m9 = float(m[9]), m10 = float(m[10]), m11 = float(m[11]);
    for (int j = 0; j < height; ++j) {
        const size_t row = static_cast<size_t>(j) * width;
        const float* d = depth + row;
        float *X = p[0] + row, *Y = p[1] + row, *Z = p[2] + row;
        const float y = ry[j];
        if (!camera.world) {
            for (int i = 0; i < width; ++i) {
                const float z = surface(d[i]) ? d[i] : 0.0f;
                X[i] = z * rx[i];
                Y[i] = z * y;
                Z[i] = -z;
            }
        } else {
            for (int i = 0; i < width; ++i) {
                const bool s = surface(d[i]);
                const float z = s ? d[i] : 0.0f;
                const float cx = z * rx[i], cy = z * y, cz = -z;
                X[i] = s ? m0 * cx + m1 * cy + m2 * cz + m3 : 0.0f;
                Y[i] = s ? m4 * cx + m5 * cy + m6 * cz + m7 : 0.0f;
                Z[i] = s ? m8 * cx + m9 * cy + m10 * cz + m11 : 0.0f;
            }
        }
    }
}

void normal_pass(const float* depth, int width, int height, const PlateCamera& camera, float* const n[3]) {
    std::vector<float> rx, ry;
    rays(camera, width, height, rx, ry);
    const auto& m = camera.camera_to_world;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float fx_inv = static_cast<float>(1 / camera.fx), fy_inv = static_cast<float>(1 / camera.fy);
    for (int j = 0; j < height; ++j) {
        const size_t row = static_cast<size_t>(j) * width;
        const float* d = depth + row;
        const float* up = j > 0 ? d - width : nullptr;
        const float* down = j + 1 < height ? d + width : nullptr;
        const float y = ry[j], y_up = j > 0 ? ry[j - 1] : 0.0f, y_down = j + 1 < height ? ry[j + 1] : 0.0f;
        float *NX = n[0] + row, *NY = n[1] + row, *NZ = n[2] + row;
        for (int i = 0; i < width; ++i) {
            const float z = d[i];
            if (!surface(z)) {
                NX[i] = NY[i] = NZ[i] = 0.0f;
                continue;
            }
            const float px = z * rx[i], py = z * y, pz = -z;
            // Tangent along x (columns): Y is the same ray component along a row.
            float tx[3] = {0, 0, 0}, ty[3] = {0, 0, 0};
            const float dl = i > 0 ? d[i - 1] : nan, dr = i + 1 < width ? d[i + 1] : nan;
            const int sx = tangent_side(z, dl, dr, fx_inv);
            if (sx != 2) {
                const float za = sx == -1 ? z : dr, zb = sx == 1 ? z : dl;       // after, before
                const float xa = sx == -1 ? rx[i] : rx[i + 1], xb = sx == 1 ? rx[i] : rx[i - 1];
                tx[0] = za * xa - zb * xb, tx[1] = (za - zb) * y, tx[2] = zb - za;
            }
            const float du = up ? up[i] : nan, dd = down ? down[i] : nan;
            const int sy = tangent_side(z, du, dd, fy_inv);
            if (sy != 2) {
                const float za = sy == -1 ? z : dd, zb = sy == 1 ? z : du;       // below, above
                const float ya = sy == -1 ? y : y_down, yb = sy == 1 ? y : y_up;
                ty[0] = (za - zb) * rx[i], ty[1] = za * ya - zb * yb, ty[2] = zb - za;
            }
            float cx, cy, cz;
            if (sx == 2 || sy == 2) {   // no tangent along an axis: face the camera
                cx = -px, cy = -py, cz = -pz;
            } else {                    // ty x tx faces the camera for a surface seen from it (y grows down)
                cx = ty[1] * tx[2] - ty[2] * tx[1];
                cy = ty[2] * tx[0] - ty[0] * tx[2];
                cz = ty[0] * tx[1] - ty[1] * tx[0];
                if (cx * px + cy * py + cz * pz > 0) cx = -cx, cy = -cy, cz = -cz;
            }
            const float len2 = cx * cx + cy * cy + cz * cz;
            const float inv = len2 > 0 ? 1.0f / std::sqrt(len2) : 0.0f;
            cx *= inv, cy *= inv, cz *= inv;
            if (camera.world) {
                const float wx = float(m[0]) * cx + float(m[1]) * cy + float(m[2]) * cz;
                const float wy = float(m[4]) * cx + float(m[5]) * cy + float(m[6]) * cz;
                const float wz = float(m[8]) * cx + float(m[9]) * cy + float(m[10]) * cz;
                cx = wx, cy = wy, cz = wz;
            }
            NX[i] = cx, NY[i] = cy, NZ[i] = cz;
        }
    }
}

}  // namespace depthbatch
