// Position and normal passes from depth (passes.h).
#include "depthbatch/passes.h"

#include <algorithm>
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

inline bool surface(float d) { return (d > 0) & (d < std::numeric_limits<float>::infinity()); }

/// One row of normal_pass: U, D, B the rows above, here and below and X the rays' x, each padded with one
/// no-surface (NaN) value on both sides; y, y_up, y_down the rays' y of the three rows. __restrict parameters: the
/// outputs never overlap the inputs (without it the compiler gives up vectorizing over the overlap checks).
// Built twice where GCC can (function multiversioning, chosen once at load time by the CPU): 8-wide AVX2 on the
// machines that have it (bench/passes_cost, 2K frame, one thread: N 10.4 ms with SSE2, 5.3 ms with AVX2), SSE2 elsewhere.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void normal_row(const float* __restrict U, const float* __restrict D, const float* __restrict B,
                const float* __restrict X, float y, float y_up, float y_down, float fx_inv, float fy_inv, int width,
                float* __restrict NX, float* __restrict NY, float* __restrict NZ) {
    // Branch-free (bitwise & and | on the flags, selects for the sides) so that the compiler vectorizes it.
    for (int i = 0; i < width; ++i) {
        const float z = D[i];
        // Along x: the side with the smaller jump, or central where both sides are one smooth surface.
        const float dl = D[i - 1], dr = D[i + 1];
        const bool okl = surface(dl), okr = surface(dr);
        const float jl = std::fabs(z - dl), jr = std::fabs(dr - z);
        const bool smooth_x = okl & okr & ((jl > jr ? jl : jr) <= 2 * (jl > jr ? jr : jl) + z * fx_inv);
        const bool right = okr & (!okl | (jr <= jl));  // one-sided: after - here
        const bool use_r = smooth_x | right, use_l = smooth_x | !right;
        // Neighbouring rays differ by 1 / fx in x (no load of X[i +- 1]: a conditional load keeps the loop from
        // vectorizing).
        const float x = X[i];
        const float xa_z = use_r ? dr : z, xa_x = use_r ? x + fx_inv : x;
        const float xb_z = use_l ? dl : z, xb_x = use_l ? x - fx_inv : x;
        const float tx0 = xa_z * xa_x - xb_z * xb_x, tx1 = (xa_z - xb_z) * y, tx2 = xb_z - xa_z;
        // Along y (rows grow down).
        const float du = U[i], dd = B[i];
        const bool oku = surface(du), okd = surface(dd);
        const float ju = std::fabs(z - du), jd = std::fabs(dd - z);
        const bool smooth_y = oku & okd & ((ju > jd ? ju : jd) <= 2 * (ju > jd ? jd : ju) + z * fy_inv);
        const bool down = okd & (!oku | (jd <= ju));
        const bool use_d = smooth_y | down, use_u = smooth_y | !down;
        const float ya_z = use_d ? dd : z, ya_y = use_d ? y_down : y;
        const float yb_z = use_u ? du : z, yb_y = use_u ? y_up : y;
        const float ty0 = (ya_z - yb_z) * x, ty1 = ya_z * ya_y - yb_z * yb_y, ty2 = yb_z - ya_z;
        // ty x tx faces the camera for a surface seen from it; with no tangent along an axis, face the camera.
        const float px = z * x, py = z * y, pz = -z;
        const bool tangents = (okl | okr) & (oku | okd);
        const float cx = tangents ? ty1 * tx2 - ty2 * tx1 : -px;
        const float cy = tangents ? ty2 * tx0 - ty0 * tx2 : -py;
        const float cz = tangents ? ty0 * tx1 - ty1 * tx0 : -pz;
        const float away = cx * px + cy * py + cz * pz;
        const float len2 = cx * cx + cy * cy + cz * cz;
        const bool has = surface(z) & (len2 > 0);
        const float scale = (away > 0 ? -1.0f : 1.0f) / std::sqrt(has ? len2 : 1.0f);
        NX[i] = has ? cx * scale : 0.0f;
        NY[i] = has ? cy * scale : 0.0f;
        NZ[i] = has ? cz * scale : 0.0f;
    }
}

}  // namespace

void position_pass(const float* depth, int width, int height, const PlateCamera& camera, float* const p[3]) {
    if (width <= 0 || height <= 0) return;
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
                const float z = s ? d[i] : 0.0f, w = s ? 1.0f : 0.0f;  // no surface: (0, 0, 0), not the camera
                const float cx = z * rx[i], cy = z * y, cz = -z;
                X[i] = m0 * cx + m1 * cy + m2 * cz + m3 * w;
                Y[i] = m4 * cx + m5 * cy + m6 * cz + m7 * w;
                Z[i] = m8 * cx + m9 * cy + m10 * cz + m11 * w;
            }
        }
    }
}

void normal_pass(const float* depth, int width, int height, const PlateCamera& camera, float* const n[3]) {
    if (width <= 0 || height <= 0) return;
    std::vector<float> rx, ry;
    rays(camera, width, height, rx, ry);
    // Padded copies: a column of no-surface (NaN) on each side of every row, so one branch-free loop serves the
    // borders too (a missing neighbour is never used).
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> rxp(width + 2, 0.0f);
    std::copy(rx.begin(), rx.end(), rxp.begin() + 1);
    std::vector<float> above(width + 2, nan), here(width + 2, nan), below(width + 2, nan);
    const float fx_inv = static_cast<float>(1 / camera.fx), fy_inv = static_cast<float>(1 / camera.fy);
    const auto& m = camera.camera_to_world;
    const float r00 = float(m[0]), r01 = float(m[1]), r02 = float(m[2]);
    const float r10 = float(m[4]), r11 = float(m[5]), r12 = float(m[6]);
    const float r20 = float(m[8]), r21 = float(m[9]), r22 = float(m[10]);
    const bool world = camera.world;
    std::copy(depth, depth + width, here.begin() + 1);
    if (height > 1) std::copy(depth + width, depth + 2 * static_cast<size_t>(width), below.begin() + 1);
    for (int j = 0; j < height; ++j) {
        const size_t row = static_cast<size_t>(j) * width;
        const float y = ry[j], y_up = j > 0 ? ry[j - 1] : 0.0f, y_down = j + 1 < height ? ry[j + 1] : 0.0f;
        float *NX = n[0] + row, *NY = n[1] + row, *NZ = n[2] + row;
        normal_row(above.data() + 1, here.data() + 1, below.data() + 1, rxp.data() + 1, y, y_up, y_down, fx_inv, fy_inv,
                   width, NX, NY, NZ);
        if (world)  // camera -> world: the .chan rotation
            for (int i = 0; i < width; ++i) {
                const float cx = NX[i], cy = NY[i], cz = NZ[i];
                NX[i] = r00 * cx + r01 * cy + r02 * cz;
                NY[i] = r10 * cx + r11 * cy + r12 * cz;
                NZ[i] = r20 * cx + r21 * cy + r22 * cz;
            }
        // Shift the three padded rows.
        std::swap(above, here);
        std::swap(here, below);
        if (j + 2 < height)
            std::copy(depth + row + 2 * static_cast<size_t>(width), depth + row + 3 * static_cast<size_t>(width),
                      below.begin() + 1);
        else std::fill(below.begin(), below.end(), nan);
    }
}

}  // namespace depthbatch
