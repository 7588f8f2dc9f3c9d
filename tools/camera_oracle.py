"""A synthetic shot with known cameras and "oracle" TorchScript models, to test depthbatch's camera solve against
exact truth.

  python -m tools.camera_oracle make --shot KIND --out DIR [--frames N] [--noise] [--width W --height H]

KIND: dolly, pan_translate, orbit, crane, nodal_pan, locked_off (SHOTS). Writes into DIR:
  plate.1001.png ...     8-bit sRGB RGB plates (values already sRGB-encoded: declare input colorspace sRGB)
  depth.1001.bin ...     float32 little-endian row-major H x W: true depth in metres along the optical axis
                         (Nuke depth.Z), sampled at the pixel centres (x + 0.5, y + 0.5)
  truth.json             shot, frames, size, focal, Nuke camera_to_world per frame, median depth, noise
  camera.chan            the same cameras as a Nuke .chan file (frame tx ty tz rx ry rz, ZXY)
  oracle-views.pt        the any-view oracle (OracleViews; noisy with --noise)
  oracle-metric.pt       the single-frame metric oracle (OracleMetric; always exact)

Scene: a closed room (x -8..8, y 0..5, z -12..4 m, Nuke world: +Y up) holding five axis-aligned boxes, ray cast in
numpy. The colour is a deterministic function of the hit surface and the 3D hit point (face coordinates: checker,
hashed cells, sines; per-surface tint and a fixed shading per face direction), so a surface looks the same from
every view. Cameras (Nuke convention, camera looks down -Z, +Y up, camera_to_world = T * Ry * Rx * Rz, ZXY): one
fixed focal FOCAL_MM on HAPERTURE_MM (focal_px = 35 / 24.576 * W), square pixels, principal point at the centre.

The oracles identify each input view's frame by comparing it to thumbnails of every plate stored in the module
(adaptive average pool to THUMB of the same [0, 1] values, argmin of the squared distance) and answer from the truth.

OracleViews: forward(x [B,S,3,H,W]) -> (depth [B,S,H,W], confidence [B,S,H,W], extrinsics [B,S,3,4],
intrinsics [B,S,3,3]), each window in its own gauge: the window's first view is the world (extrinsics [I|0]) and the
whole window is scaled by s = window_scale(first view's frame number) = 0.3 + 0.25 * (frame % 7) (depth and
translations multiplied by s). Extrinsics are OpenCV world-to-camera (x right, y down, z forward); intrinsics in the
input's pixels: fx = focal_px * W_in / W, fy = focal_px * H_in / H, cx = W_in / 2, cy = H_in / 2 (pixel (x, y)
centre at (x + 0.5, y + 0.5), as camera.h).

Nuke -> OpenCV: F = diag(1, -1, -1) (4x4: diag(1, -1, -1, 1)). OpenCV camera axes are Nuke's with Y and Z flipped,
and the OpenCV world is F * Nuke world, so
    camera_to_world_cv = F * camera_to_world_nuke * F,     world_to_camera_cv = inverse(camera_to_world_cv)
and the window's extrinsics of view i (first view 0) are
    E_i = [R_i R_0^T | s * (t_i - R_i R_0^T t_0)]          with world_to_camera_cv(frame of view k) = [R_k | t_k].

Noise (--noise): deterministic, from tables stored in the module (seeded by the frame and the view's position p in
the window, p mod MAX_VIEWS): depth *= 1 + 0.01 * n (n a standard normal per pixel: (a_frame + b_p) / sqrt 2);
for p >= 1 (the first view stays exactly [I|0]) the rotation is left-multiplied by a 0.02 degree rotation about a
random axis and the translation gets s * 0.001 * median_depth(frame) metres in a random direction; fx and fy are
multiplied by 1 +- 0.003 (random sign). See NOISE.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
from torch import Tensor, nn

from tools.ops import resize

SHOTS = ("dolly", "pan_translate", "orbit", "crane", "nodal_pan", "locked_off")
FIRST_FRAME = 1001
FOCAL_MM = 35.0
HAPERTURE_MM = 24.576
DEFAULT_W, DEFAULT_H = 224, 126
MULTIPLE = 14
THUMB = (8, 14)                 # thumbnail [h, w] the oracles identify frames by
MAX_VIEWS = 32                  # contract input.frames; noise tables per view position
SUPERSAMPLE = 2                 # plate colour: SUPERSAMPLE^2 rays per pixel (depth: the centre ray)
NOISE = {"depth_rel_sigma": 0.01, "rotation_deg": 0.02, "translation_rel_median_depth": 0.001,
         "focal_rel": 0.003, "seed": 20240, "first_view_pose_exact": True,
         "about": "oracle-views.pt only: depth *= 1 + depth_rel_sigma * N(0,1) per pixel; for views after the "
                  "window's first: rotation left-multiplied by a rotation_deg turn about a random axis, translation "
                  "+= window_scale * translation_rel_median_depth * median_depth(frame) in a random direction; "
                  "fx, fy *= 1 +- focal_rel. Seeded by (frame, view position in the window)."}
VIEWS_BLOCK = {"window": 8, "overlap": 3, "pose": "oracle", "extrinsics": "opencv_world_to_camera",
               "intrinsics": "pixels", "first_view_is_world": True}
SCALE_RULE = "0.3 + 0.25 * (first view's frame number % 7)"

F_CV = np.diag([1.0, -1.0, -1.0, 1.0])   # Nuke <-> OpenCV axis flip (its own inverse)


def window_scale(frame: int) -> float:
    """The gauge scale of a window whose first view is `frame` (a frame number, e.g. 1001)."""
    return 0.3 + 0.25 * (int(frame) % 7)


# ----------------------------------------------------------------------------------------------------- scene

class Scene:
    """A room (an axis-aligned box seen from inside) holding axis-aligned boxes, each with a tint."""

    def __init__(self, room: Tuple[Tuple[float, float, float], Tuple[float, float, float]],
                 boxes: List[Tuple[Tuple[float, float, float], Tuple[float, float, float]]],
                 room_tints: Optional[np.ndarray] = None, box_tints: Optional[np.ndarray] = None):
        self.room_lo, self.room_hi = np.asarray(room[0], float), np.asarray(room[1], float)
        self.box_lo = np.asarray([b[0] for b in boxes], float).reshape(-1, 3)
        self.box_hi = np.asarray([b[1] for b in boxes], float).reshape(-1, 3)
        self.room_tints = room_tints if room_tints is not None else np.ones((6, 3))
        self.box_tints = box_tints if box_tints is not None else np.ones((len(boxes), 3))


def default_scene() -> Scene:
    room = ((-8.0, 0.0, -12.0), (8.0, 5.0, 4.0))
    boxes = [((-1.8, 0.0, -3.6), (-0.8, 0.8, -2.6)),     # near, low
             ((0.5, 0.0, -5.5), (1.7, 1.5, -4.3)),       # middle
             ((-0.5, 0.0, -7.0), (0.6, 1.1, -6.0)),      # middle, behind
             ((-3.2, 0.0, -8.6), (-1.8, 2.6, -7.0)),     # tall, far left
             ((1.5, 1.9, -9.2), (3.0, 2.9, -8.0))]       # floating, far right
    # room faces: index axis * 2 + (0: the lo face, 1: the hi face)
    room_tints = np.array([[0.85, 0.70, 0.55], [0.55, 0.75, 0.85],    # x lo / hi walls
                           [0.65, 0.62, 0.58], [0.90, 0.90, 0.88],    # floor / ceiling
                           [0.70, 0.85, 0.65], [0.80, 0.80, 0.80]])   # back wall / wall behind
    box_tints = np.array([[0.95, 0.45, 0.35], [0.40, 0.60, 0.95], [0.95, 0.85, 0.30],
                          [0.30, 0.80, 0.85], [0.85, 0.45, 0.90]])
    return Scene(room, boxes, room_tints, box_tints)


def _safe_dirs(d: np.ndarray) -> np.ndarray:
    return np.where(np.abs(d) < 1e-30, np.where(d < 0, -1e-30, 1e-30), d)


def cast(scene: Scene, origin: np.ndarray, dirs: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest hit of rays origin + t * dirs (dirs [N,3], not necessarily unit). Returns (t [N], surface [N] int:
    0-5 room faces axis*2+(hi face), 6+k box k; axis [N] int: the axis of the face's normal). A ray leaving through
    nothing (an origin outside the room) gets t = inf."""
    o = np.asarray(origin, float).reshape(1, 3)
    d = _safe_dirs(np.asarray(dirs, float))
    inv = 1.0 / d
    # room, from inside: the exit
    t1, t2 = (scene.room_lo - o) * inv, (scene.room_hi - o) * inv
    tmax = np.maximum(t1, t2)
    axis = np.argmin(tmax, axis=1)
    t = np.take_along_axis(tmax, axis[:, None], 1)[:, 0]
    positive = np.take_along_axis(d, axis[:, None], 1)[:, 0] > 0
    surface = axis * 2 + positive.astype(int)
    t = np.where(t > 0, t, np.inf)
    for k in range(len(scene.box_lo)):
        b1, b2 = (scene.box_lo[k] - o) * inv, (scene.box_hi[k] - o) * inv
        bmin, bmax = np.minimum(b1, b2), np.maximum(b1, b2)
        near, far = bmin.max(axis=1), bmax.min(axis=1)
        hit = (near <= far) & (near > 1e-9) & (near < t)
        t = np.where(hit, near, t)
        surface = np.where(hit, 6 + k, surface)
        axis = np.where(hit, np.argmax(bmin, axis=1), axis)
    return t, surface, axis


def _hash01(ix: np.ndarray, iy: np.ndarray, salt: np.ndarray) -> np.ndarray:
    """A deterministic hash of integer cells to [0, 1) (splitmix64-style, uint64 arithmetic)."""
    with np.errstate(over="ignore"):
        h = (ix.astype(np.int64).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             ^ iy.astype(np.int64).astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
             ^ salt.astype(np.uint64) * np.uint64(0x165667B19E3779F9))
        h ^= h >> np.uint64(31)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(29)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(32)
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def shade(scene: Scene, points: np.ndarray, surface: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """sRGB-encoded colour in [0, 1] of hit points [N,3] on `surface` (a function of the point and the surface)."""
    n = len(points)
    # face coordinates: the two world coordinates other than the normal's axis
    others = np.array([[1, 2], [0, 2], [0, 1]])[axis]
    u = np.take_along_axis(points, others[:, :1], 1)[:, 0]
    v = np.take_along_axis(points, others[:, 1:], 1)[:, 0]
    checker = (np.floor(u / 0.6) + np.floor(v / 0.6)) % 2
    cells = _hash01(np.floor(u / 0.23), np.floor(v / 0.23), surface + 17)
    blobs = _hash01(np.floor(u / 1.1 + 0.5), np.floor(v / 0.9 + 0.5), surface + 101)
    waves = np.sin(2 * np.pi * (0.55 * u + 0.35 * v)) * np.sin(2 * np.pi * (0.9 * v - 0.2 * u))
    value = 0.28 + 0.22 * checker + 0.2 * cells + 0.15 * blobs + 0.1 * waves
    tint = np.where((surface < 6)[:, None], scene.room_tints[np.minimum(surface, 5)],
                    scene.box_tints[np.clip(surface - 6, 0, max(len(scene.box_tints) - 1, 0))]
                    if len(scene.box_tints) else 1.0)
    light = np.array([0.8, 1.0, 0.9])[axis]   # fixed shading per face direction
    rgb = tint * (value * light)[:, None]
    return np.clip(rgb, 0.0, 1.0).reshape(n, 3)


# ---------------------------------------------------------------------------------------------------- cameras

def rot_x(deg: float) -> np.ndarray:
    a = math.radians(deg)
    return np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])


def rot_y(deg: float) -> np.ndarray:
    a = math.radians(deg)
    return np.array([[math.cos(a), 0, math.sin(a)], [0, 1, 0], [-math.sin(a), 0, math.cos(a)]])


def rot_z(deg: float) -> np.ndarray:
    a = math.radians(deg)
    return np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])


def nuke_camera_to_world(translate, rotate_deg) -> np.ndarray:
    """camera_to_world = T * Ry * Rx * Rz (Nuke's SRT / ZXY defaults, camera.h), row-major 4x4."""
    m = np.eye(4)
    m[:3, :3] = rot_y(rotate_deg[1]) @ rot_x(rotate_deg[0]) @ rot_z(rotate_deg[2])
    m[:3, 3] = translate
    return m


def camera_path(kind: str, frames: int) -> List[Tuple[np.ndarray, np.ndarray]]:
    """(translate [3], rotate_deg [3]: rx, ry, rz) per frame, Nuke convention, metres."""
    if kind not in SHOTS:
        raise ValueError(f"unknown shot {kind!r}: one of {', '.join(SHOTS)}")
    out = []
    for i in range(frames):
        a = i / (frames - 1) if frames > 1 else 0.0
        pos, rot = np.array([0.0, 1.6, 0.0]), np.array([-5.0, 0.0, 0.0])
        if kind == "dolly":                     # 1.5 m forward (-Z)
            pos[2] = -1.5 * a
        elif kind == "pan_translate":           # truck 1 m right while yawing 20 degrees (left to right)
            pos[0] = -0.5 + 1.0 * a
            rot[1] = 10.0 - 20.0 * a
        elif kind == "orbit":                   # 30 degree arc around a vertical axis 5 m ahead, looking at it
            ang = -15.0 + 30.0 * a
            centre = np.array([0.0, 1.6, -5.0])
            pos = centre + 5.0 * np.array([math.sin(math.radians(ang)), 0.0, math.cos(math.radians(ang))])
            rot[1] = ang
        elif kind == "crane":                   # rise 1.5 m while tilting down 10 degrees
            pos[1] = 1.2 + 1.5 * a
            rot[0] = -5.0 - 10.0 * a
        elif kind == "nodal_pan":               # yaw 25 degrees about the camera centre
            rot[1] = 12.5 - 25.0 * a
        out.append((pos, rot))
    return out


def pixel_rays(width: int, height: int, focal_px: float, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Camera-space (Nuke) directions at unit depth through continuous file pixel coordinates (xs, ys) (pixel
    (x, y)'s centre is (x + 0.5, y + 0.5), y down): (u / f, v / f, -1)."""
    return np.stack([(xs - width / 2.0) / focal_px, (height / 2.0 - ys) / focal_px, -np.ones_like(xs)], axis=-1)


def render(scene: Scene, c2w: np.ndarray, width: int, height: int, focal_px: float,
           supersample: int = SUPERSAMPLE) -> Tuple[np.ndarray, np.ndarray]:
    """(rgb uint8 [H,W,3], depth float32 [H,W]) of the Nuke camera `c2w`. depth: along the optical axis at the
    pixel centres."""
    R, o = c2w[:3, :3], c2w[:3, 3]
    ys, xs = np.mgrid[0:height, 0:width].astype(float)
    d_cam = pixel_rays(width, height, focal_px, xs + 0.5, ys + 0.5).reshape(-1, 3)
    t, _, _ = cast(scene, o, d_cam @ R.T)          # t along a ray with unit forward component = depth
    depth = t.reshape(height, width).astype(np.float32)
    acc = np.zeros((height * width, 3))
    for sy in range(supersample):
        for sx in range(supersample):
            d = pixel_rays(width, height, focal_px, xs + (sx + 0.5) / supersample,
                           ys + (sy + 0.5) / supersample).reshape(-1, 3) @ R.T
            ts, surf, ax = cast(scene, o, d)
            acc += shade(scene, o + ts[:, None] * d, surf, ax)
    rgb = np.clip(np.round(acc / supersample ** 2 * 255.0), 0, 255).astype(np.uint8).reshape(height, width, 3)
    return rgb, depth


def nuke_to_opencv_c2w(c2w_nuke: np.ndarray) -> np.ndarray:
    """camera_to_world_cv = F * camera_to_world_nuke * F, F = diag(1, -1, -1, 1) (world_cv = F * world_nuke)."""
    return F_CV @ c2w_nuke @ F_CV


def opencv_to_nuke_c2w(c2w_cv: np.ndarray) -> np.ndarray:
    return F_CV @ c2w_cv @ F_CV


def rigid_inverse(m: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = m[:3, :3].T
    out[:3, 3] = -m[:3, :3].T @ m[:3, 3]
    return out


def lift_nuke(depth: np.ndarray, c2w_nuke: np.ndarray, focal_px: float) -> np.ndarray:
    """World points (Nuke world) [H*W, 3] of every pixel centre of `depth` (camera.h's P_camera formula)."""
    h, w = depth.shape
    ys, xs = np.mgrid[0:h, 0:w].astype(float)
    p_cam = pixel_rays(w, h, focal_px, xs + 0.5, ys + 0.5).reshape(-1, 3) * depth.reshape(-1, 1)
    return p_cam @ c2w_nuke[:3, :3].T + c2w_nuke[:3, 3]


def project_opencv(points_cv: np.ndarray, w2c_cv: np.ndarray, fx: float, fy: float, cx: float,
                   cy: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, z): continuous pixel coordinates and depth of OpenCV-world points through [R|t] and K."""
    pc = points_cv @ w2c_cv[:3, :3].T + w2c_cv[:3, 3]
    z = pc[:, 2]
    return fx * pc[:, 0] / z + cx, fy * pc[:, 1] / z + cy, z


# ---------------------------------------------------------------------------------------------------- modules

def thumbnails(x: Tensor) -> Tensor:
    """[N,3,H,W] in [0, 1] -> [N,3,THUMB]: what the oracles compare."""
    return torch.nn.functional.adaptive_avg_pool2d(x, [THUMB[0], THUMB[1]])


class OracleViews(nn.Module):
    """The any-view oracle (module doc). Buffers: thumbs [F,3,th,tw], depth [F,H,W] metres, w2c / c2w [F,4,4]
    (OpenCV, float64), frame numbers [F]; noise tables (zeros / identity when exact)."""

    def __init__(self, thumbs: Tensor, depth: Tensor, c2w_cv: Tensor, frames: Tensor, focal_px: float,
                 noise: Optional[Dict[str, Tensor]] = None):
        super().__init__()
        f, h, w = depth.shape
        self.register_buffer("thumbs", thumbs.float())
        self.register_buffer("depth", depth.float())
        self.register_buffer("c2w", c2w_cv.double())
        self.register_buffer("w2c", torch.linalg.inv(c2w_cv.double()))
        self.register_buffer("frames", frames.long())
        self.focal_px = float(focal_px)
        self.height, self.width = int(h), int(w)
        self.th, self.tw = int(thumbs.shape[2]), int(thumbs.shape[3])
        self.noisy = noise is not None
        if noise is None:
            noise = {"depth_frame": torch.zeros(1, 1, 1), "depth_view": torch.zeros(1, 1, 1),
                     "rotation": torch.eye(3, dtype=torch.float64).expand(1, 1, 3, 3).clone(),
                     "translation": torch.zeros(1, 1, 3, dtype=torch.float64), "focal": torch.ones(1, 1)}
        self.register_buffer("noise_depth_frame", noise["depth_frame"].float())    # [F,H,W]
        self.register_buffer("noise_depth_view", noise["depth_view"].float())      # [P,H,W]
        self.register_buffer("noise_rotation", noise["rotation"].double())         # [F,P,3,3]
        self.register_buffer("noise_translation", noise["translation"].double())   # [F,P,3] metres (unscaled)
        self.register_buffer("noise_focal", noise["focal"].float())                # [F,P]
        self.depth_sigma = float(NOISE["depth_rel_sigma"])

    def identify(self, x: Tensor) -> Tensor:
        """[N,3,H,W] -> [N] plate index of each view."""
        t = torch.nn.functional.adaptive_avg_pool2d(x.float(), [self.th, self.tw])
        d = (t.unsqueeze(1) - self.thumbs.unsqueeze(0)).pow(2).flatten(2).sum(2)
        return torch.argmin(d, dim=1)

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        if x.dim() != 5 or x.shape[2] != 3:
            raise ValueError("the oracle takes [B, S, 3, H, W]")
        b, s, hi, wi = x.shape[0], x.shape[1], x.shape[3], x.shape[4]
        idx = self.identify(x.reshape(b * s, 3, hi, wi)).reshape(b, s)
        pos = torch.arange(s, device=x.device) % self.noise_depth_view.shape[0]
        pos_b = pos.unsqueeze(0).expand(b, s)
        scale = 0.3 + 0.25 * (self.frames[idx[:, 0]] % 7).double()                 # [B]

        depth = self.depth[idx]                                                    # [B,S,H,W]
        if self.noisy:
            n = (self.noise_depth_frame[idx] + self.noise_depth_view[pos_b]) * (1.0 / math.sqrt(2.0))
            depth = depth * (1.0 + self.depth_sigma * n)
        if hi != self.height or wi != self.width:
            depth = resize(depth.reshape(b * s, 1, self.height, self.width), size=[hi, wi],
                           mode="bilinear").reshape(b, s, hi, wi)
        depth = depth * scale.float().reshape(b, 1, 1, 1)

        rel = torch.matmul(self.w2c[idx], self.c2w[idx[:, 0]].unsqueeze(1))        # [B,S,4,4]
        same = (idx == idx[:, :1]).reshape(b, s, 1, 1)                             # the first view's frame:
        rel = torch.where(same, torch.eye(4, dtype=rel.dtype, device=rel.device), rel)   # exactly [I|0]
        rot = rel[:, :, :3, :3]
        trans = rel[:, :, :3, 3] * scale.reshape(b, 1, 1)
        if self.noisy:
            f_idx = idx % self.noise_rotation.shape[0]
            rot = torch.matmul(self.noise_rotation[f_idx, pos_b], rot)
            trans = trans + self.noise_translation[f_idx, pos_b] * scale.reshape(b, 1, 1)
        extrinsics = torch.cat([rot, trans.unsqueeze(-1)], dim=-1).float()

        focal = self.noise_focal[idx % self.noise_focal.shape[0], pos_b] if self.noisy \
            else torch.ones(b, s, dtype=torch.float32, device=x.device)
        intr = torch.zeros(b, s, 3, 3, dtype=torch.float32, device=x.device)
        intr[:, :, 0, 0] = focal * (self.focal_px * wi / self.width)
        intr[:, :, 1, 1] = focal * (self.focal_px * hi / self.height)
        intr[:, :, 0, 2] = wi / 2.0
        intr[:, :, 1, 2] = hi / 2.0
        intr[:, :, 2, 2] = 1.0
        return depth, torch.ones_like(depth), extrinsics, intr


class OracleMetric(nn.Module):
    """forward(x [N,3,H,W]) -> [N,1,H,W]: the true depth in metres of each identified frame (resized to the input)."""

    def __init__(self, thumbs: Tensor, depth: Tensor):
        super().__init__()
        self.register_buffer("thumbs", thumbs.float())
        self.register_buffer("depth", depth.float())
        self.height, self.width = int(depth.shape[1]), int(depth.shape[2])
        self.th, self.tw = int(thumbs.shape[2]), int(thumbs.shape[3])

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() != 4 or x.shape[1] != 3:
            raise ValueError("the metric oracle takes [N, 3, H, W]")
        n, hi, wi = x.shape[0], x.shape[2], x.shape[3]
        t = torch.nn.functional.adaptive_avg_pool2d(x.float(), [self.th, self.tw])
        idx = torch.argmin((t.unsqueeze(1) - self.thumbs.unsqueeze(0)).pow(2).flatten(2).sum(2), dim=1)
        depth = self.depth[idx].unsqueeze(1)
        if hi != self.height or wi != self.width:
            depth = resize(depth, size=[hi, wi], mode="bilinear")
        return depth


def _unit_vectors(rng: np.random.Generator, shape) -> np.ndarray:
    v = rng.standard_normal(tuple(shape) + (3,))
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _axis_angle(axis: np.ndarray, deg: float) -> np.ndarray:
    """Rotation matrices [..., 3, 3] of `deg` degrees about unit axes [..., 3] (Rodrigues)."""
    a = math.radians(deg)
    k = np.zeros(axis.shape[:-1] + (3, 3))
    k[..., 0, 1], k[..., 0, 2], k[..., 1, 2] = -axis[..., 2], axis[..., 1], -axis[..., 0]
    k[..., 1, 0], k[..., 2, 0], k[..., 2, 1] = axis[..., 2], -axis[..., 1], axis[..., 0]
    return np.eye(3) + math.sin(a) * k + (1 - math.cos(a)) * (k @ k)


def noise_tables(frames: int, height: int, width: int, median_depth: np.ndarray,
                 views: int = MAX_VIEWS) -> Dict[str, Tensor]:
    """The noisy oracle's tables (NOISE), seeded by NOISE["seed"]: position 0 keeps an exact pose."""
    rng = np.random.default_rng(NOISE["seed"])
    depth_frame = rng.standard_normal((frames, height, width)).astype(np.float32)
    depth_view = rng.standard_normal((views, height, width)).astype(np.float32)
    rotation = _axis_angle(_unit_vectors(rng, (frames, views)), NOISE["rotation_deg"])
    translation = (_unit_vectors(rng, (frames, views)) * NOISE["translation_rel_median_depth"]
                   * np.asarray(median_depth, float).reshape(frames, 1, 1))
    focal = 1.0 + NOISE["focal_rel"] * np.where(rng.random((frames, views)) < 0.5, -1.0, 1.0)
    rotation[:, 0] = np.eye(3)
    translation[:, 0] = 0.0
    return {"depth_frame": torch.from_numpy(depth_frame), "depth_view": torch.from_numpy(depth_view),
            "rotation": torch.from_numpy(rotation), "translation": torch.from_numpy(translation),
            "focal": torch.from_numpy(focal.astype(np.float32))}


def views_contract(kind: str, height: int, width: int, noisy: bool) -> Dict[str, Any]:
    from tools.contract import make_contract
    return make_contract(f"camera-oracle-{kind}" + ("-noisy" if noisy else ""), colorspace="sRGB",
                         multiple=MULTIPLE, size_hw=(height, width), kind="relative_depth", units="",
                         fixed_size=False, frames=MAX_VIEWS,
                         extra_outputs=[{"name": "confidence", "channel": "depth.confidence", "about": "oracle: 1"}],
                         license="MIT", source="tools/camera_oracle.py", views=dict(VIEWS_BLOCK))


def metric_contract(kind: str, height: int, width: int) -> Dict[str, Any]:
    from tools.contract import make_contract
    return make_contract(f"camera-oracle-metric-{kind}", colorspace="sRGB", multiple=MULTIPLE,
                         size_hw=(height, width), kind="metric_depth", units="m", fixed_size=False,
                         license="MIT", source="tools/camera_oracle.py")


# ---------------------------------------------------------------------------------------------------- make

def chan_angles(c2w: np.ndarray) -> Tuple[float, float, float]:
    """(rx, ry, rz) degrees of R = Ry Rx Rz (camera.h chan_sample_from_camera_to_world)."""
    r = c2w[:3, :3]
    rx = math.degrees(math.asin(max(-1.0, min(1.0, -r[1, 2]))))
    ry = math.degrees(math.atan2(r[0, 2], r[2, 2]))
    rz = math.degrees(math.atan2(r[1, 0], r[1, 1]))
    return rx, ry, rz


def truth_text(truth: Dict[str, Any]) -> str:
    """truth.json's text: indented, each matrix on one line."""
    lines = []
    for key, value in truth.items():
        if key == "camera_to_world":
            rows = [f'  {json.dumps(k)}: {json.dumps(v)}' for k, v in value.items()]
            lines.append(f' {json.dumps(key)}: {{\n' + ",\n".join(rows) + "\n }")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def make_shot(kind: str, out: str, frames: int = 24, width: int = DEFAULT_W, height: int = DEFAULT_H,
              noise: bool = False, modules: bool = True, log=None) -> Dict[str, Any]:
    """Render the shot into `out` and write truth.json (and the two oracles unless modules=False). Returns truth."""
    from PIL import Image

    from tools.contract import save_scripted
    if kind not in SHOTS:
        raise ValueError(f"unknown shot {kind!r}: one of {', '.join(SHOTS)}")
    if width % MULTIPLE or height % MULTIPLE or width <= 0 or height <= 0:
        raise ValueError(f"size {width}x{height}: both sides must be positive multiples of {MULTIPLE}")
    if frames < 1:
        raise ValueError("frames must be >= 1")
    os.makedirs(out, exist_ok=True)
    scene = default_scene()
    focal_px = FOCAL_MM / HAPERTURE_MM * width
    path = camera_path(kind, frames)
    c2ws, depths, plates = [], [], []
    for i, (pos, rot) in enumerate(path):
        frame = FIRST_FRAME + i
        c2w = nuke_camera_to_world(pos, rot)
        rgb, depth = render(scene, c2w, width, height, focal_px)
        Image.fromarray(rgb, "RGB").save(os.path.join(out, f"plate.{frame}.png"))
        depth.astype("<f4").tofile(os.path.join(out, f"depth.{frame}.bin"))
        c2ws.append(c2w)
        depths.append(depth)
        plates.append(rgb)
    centres = np.array([m[:3, 3] for m in c2ws])
    medians = [float(np.median(d)) for d in depths]
    truth = {
        "shot": kind, "first": FIRST_FRAME, "last": FIRST_FRAME + frames - 1, "width": width, "height": height,
        "focal_px": focal_px, "focal_mm": FOCAL_MM, "haperture_mm": HAPERTURE_MM,
        "path_length": float(np.linalg.norm(np.diff(centres, axis=0), axis=1).sum()) if frames > 1 else 0.0,
        "camera_to_world": {str(FIRST_FRAME + i): [float(v) + 0.0 for v in m.reshape(-1)] for i, m in enumerate(c2ws)},
        "median_depth": {str(FIRST_FRAME + i): m for i, m in enumerate(medians)},
        "noise": dict(NOISE) if noise else None,
        "convention": "camera_to_world: Nuke (camera looks down -Z, +Y up), row-major, column vectors, metres; "
                      "principal point at the image centre; pixel (x, y) centre at (x + 0.5, y + 0.5)",
        "window_scale": SCALE_RULE,
        "opencv": "camera_to_world_cv = F * camera_to_world * F, F = diag(1, -1, -1, 1); world_cv = F * world",
    }
    with open(os.path.join(out, "truth.json"), "w") as f:
        f.write(truth_text(truth))
    with open(os.path.join(out, "camera.chan"), "w") as f:
        for i, m in enumerate(c2ws):
            rx, ry, rz = chan_angles(m)
            t = m[:3, 3]
            f.write(" ".join([str(FIRST_FRAME + i)] + [f"{v:.10g}" for v in (t[0], t[1], t[2], rx, ry, rz)]) + "\n")
    if log:
        log(f"rendered {frames} frames {width}x{height} of {kind}")
    if not modules:
        return truth
    x = torch.from_numpy(np.stack(plates)).permute(0, 3, 1, 2).float() / 255.0      # [F,3,H,W]
    thumbs = thumbnails(x)
    depth_t = torch.from_numpy(np.stack(depths))
    c2w_cv = torch.from_numpy(np.stack([nuke_to_opencv_c2w(m) for m in c2ws]))
    frame_numbers = torch.arange(FIRST_FRAME, FIRST_FRAME + frames)
    tables = noise_tables(frames, height, width, np.array(medians)) if noise else None
    views = torch.jit.script(OracleViews(thumbs, depth_t, c2w_cv, frame_numbers, focal_px, tables))
    save_scripted(views, os.path.join(out, "oracle-views.pt"), views_contract(kind, height, width, noise),
                  x[: min(frames, VIEWS_BLOCK["window"])].unsqueeze(0))
    metric = torch.jit.script(OracleMetric(thumbs, depth_t))
    save_scripted(metric, os.path.join(out, "oracle-metric.pt"), metric_contract(kind, height, width), x[:2])
    if log:
        log(f"wrote {os.path.join(out, 'oracle-views.pt')} and oracle-metric.pt")
    return truth


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.camera_oracle", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make", help="render a synthetic shot with its truth and oracle models")
    mk.add_argument("--shot", required=True, choices=SHOTS)
    mk.add_argument("--out", required=True)
    mk.add_argument("--frames", type=int, default=24)
    mk.add_argument("--noise", action="store_true", help="oracle-views.pt adds deterministic noise (NOISE)")
    mk.add_argument("--width", type=int, default=DEFAULT_W)
    mk.add_argument("--height", type=int, default=DEFAULT_H)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    try:
        make_shot(args.shot, args.out, args.frames, args.width, args.height, args.noise,
                  log=lambda m: print(m, file=sys.stderr))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{args.out}: {args.shot}, {args.frames} frames in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
