// depthbatch — passes for comp computed from depth: position (P) and normals (N), at the plate's resolution.
//
// output.passes: [P, N] writes, beside depth.Z:
//   P.X P.Y P.Z   the position of each pixel's centre in Nuke's camera space (camera.h: +X right, +Y up, the
//                 camera looks down -Z), in the units of depth.Z (metres): P = (u / fx * d, v / fy * d, -d) for
//                 depth d, the distance along the optical axis (what depth.Z holds, not the distance to the
//                 camera centre). With camera.chan, world space: P_world = camera_to_world * P.
//   N.X N.Y N.Z   unit normals in the same space, facing the camera (N . (camera - P) >= 0).
// Normals at depth edges: the tangent along x (and along y) is taken from the neighbour whose depth jump is
// smaller (P(i+1) - P(i) or P(i) - P(i-1)); where both jumps are alike (the larger at most twice the smaller
// plus d / f, the depth step of a 45-degree slope at that depth) the central difference P(i+1) - P(i-1) is used
// (second-order accurate on smooth surfaces). So a pixel on
// the foreground side of an edge takes its tangent from the foreground and a background pixel from the
// background: foreground and background are never mixed in one normal. Pixels whose depth is not a positive
// finite number get P = (0, 0, 0) and N = (0, 0, 0) (no surface there); a neighbour of that kind is never used.
// A pixel with no usable neighbour along an axis faces the camera (N = -P / |P|).
// These are pure functions of depth and the camera: no allocation beyond the outputs, one thread.
#pragma once

#include "depthbatch/camera.h"

#include <string>

namespace depthbatch {

/// True for the names of the passes computed from depth and the camera: "P" (position) and "N" (normals), as
/// output.passes names them; any other name is a model's extra output (model_contract.h: ExtraOutput).
inline bool is_geometric_pass(const std::string& name) { return name == "P" || name == "N"; }

/// Position pass: `depth` is width x height floats, row-major over the plate's data window (the camera's
/// data_x/data_y say where that window lies); `p[0..2]` are three planes of width x height floats receiving
/// X, Y, Z. Units: those of depth.
void position_pass(const float* depth, int width, int height, const PlateCamera& camera, float* const p[3]);

/// Normal pass: as position_pass, `n[0..2]` receive unit normals (see the header comment for edges).
void normal_pass(const float* depth, int width, int height, const PlateCamera& camera, float* const n[3]);

}  // namespace depthbatch
