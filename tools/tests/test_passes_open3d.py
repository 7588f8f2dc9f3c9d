"""Cross-check of depthbatch's position pass (P, include/depthbatch/passes.h) against Open3D's back-projection.

depthbatch renders a plate whose data window lies inside a larger display window through a probe model (a
depth ramp in metres), with output.passes [P]; Open3D back-projects the depth.Z it wrote with the same
intrinsics (geometry.PointCloud.create_from_depth_image). The conventions, written out:

  Open3D / OpenCV camera: x right, y down, z forward; pixel (u, v) (integers, u along the row) has its centre
  at (u, v) and X = (u - cx) * z / fx, Y = (v - cy) * z / fy, Z = z.
  Nuke camera (depthbatch): +X right, +Y up, looking down -Z; data-window pixel (i, j) is file pixel
  (x0 + i, y0 + j) with its centre at +0.5; the principal point is the display window's centre (Cx, Cy).
  So, for the data window: cx = Cx - x0 - 0.5, cy = Cy - y0 - 0.5 (Open3D's, in data-window pixels), and
  P_nuke = (X, -Y, -Z) of Open3D's point: the axis flip diag(1, -1, -1).

Runs the depthbatch binary ($DEPTHBATCH_BIN, else build/depthbatch) and needs the open3d package (open3d-cpu,
which scripts/test installs from tools/requirements-crosscheck.txt) and OpenEXR; skips, saying which, when one is
missing, and fails instead under scripts/test once it installed them (DEPTHBATCH_REQUIRE_REFERENCES).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import reference  # noqa: E402

OpenEXR = pytest.importorskip("OpenEXR", reason="OpenEXR (PyPI) is not installed")
torch = pytest.importorskip("torch")

DISPLAY_W, DISPLAY_H = 160, 100
X0, Y0, W, H = 37, 21, 90, 56          # the data window, inside the display window
FOCAL_PX = 140.0


@pytest.fixture(scope="module")
def o3d():
    """Open3D, or a skip (a failure under scripts/test, which installed it): conftest.reference."""
    return reference("open3d", reason="open3d is not installed (scripts/test installs it: tools/requirements-crosscheck.txt)")


def depthbatch_bin(repo_root: Path) -> Path:
    path = Path(os.environ.get("DEPTHBATCH_BIN", repo_root / "build" / "depthbatch"))
    if not path.exists():
        pytest.skip(f"no depthbatch binary at {path} (build it, or set DEPTHBATCH_BIN)")
    return path


def write_plate(path: Path) -> None:
    """A float RGB EXR with a horizontal and a vertical ramp, data window (X0, Y0) W x H in a display window."""
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    rgb = {"R": (xx / W).astype(np.float32), "G": (yy / H).astype(np.float32), "B": np.full((H, W), 0.5, np.float32)}
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage,
              "dataWindow": (np.array([X0, Y0], np.int32), np.array([X0 + W - 1, Y0 + H - 1], np.int32)),
              "displayWindow": (np.array([0, 0], np.int32), np.array([DISPLAY_W - 1, DISPLAY_H - 1], np.int32))}
    with OpenEXR.File(header, rgb) as f:
        f.write(str(path))


def write_model(path: Path) -> None:
    """A metric probe: depth = 1.5 + 3 R + 2 G (metres), any size."""
    class Ramp(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return 1.5 + 3.0 * x[:, 0:1] + 2.0 * x[:, 1:2]
    contract = {"format": 1, "name": "ramp-probe", "input": {"colorspace": "sRGB", "multiple": 1},
                "output": {"kind": "metric_depth", "units": "m"}}
    torch.jit.script(Ramp()).save(str(path), _extra_files={"depthbatch.json": json.dumps(contract)})


def read_channels(path: Path, names):
    with OpenEXR.File(str(path), separate_channels=True) as f:
        ch = f.channels()
        return [np.asarray(ch[n].pixels, dtype=np.float32) for n in names]


def test_position_pass_matches_open3d_back_projection(tmp_path: Path, repo_root: Path, o3d):
    binary = depthbatch_bin(repo_root)
    write_plate(tmp_path / "p.1001.exr")
    write_model(tmp_path / "ramp.pt")
    (tmp_path / "job.yaml").write_text(
        "input: {path: p.####.exr, colorspace: scene_linear}\n"
        "output: {path: out/d.####.exr, channels: depth, passes: [P]}\n"
        f"model: {{path: ramp.pt, size: plate}}\ncamera: {{focal_px: {FOCAL_PX}}}\n")
    run = subprocess.run([str(binary), str(tmp_path / "job.yaml")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    z, px, py, pz = read_channels(tmp_path / "out" / "d.1001.exr", ["depth.Z", "P.X", "P.Y", "P.Z"])
    assert z.shape == (H, W)
    assert float(z.min()) > 1.0 and float(z.max() - z.min()) > 1.0, "a depth ramp, not a constant"

    # Open3D with the same intrinsics, in its own pixel convention (centres at integers, y down).
    cx = DISPLAY_W / 2 - X0 - 0.5
    cy = DISPLAY_H / 2 - Y0 - 0.5
    intrinsic = o3d.camera.PinholeCameraIntrinsic(W, H, FOCAL_PX, FOCAL_PX, cx, cy)
    cloud = o3d.geometry.PointCloud.create_from_depth_image(
        o3d.geometry.Image(np.ascontiguousarray(z)), intrinsic, depth_scale=1.0, depth_trunc=1e6, stride=1,
        project_valid_depth_only=False)
    points = np.asarray(cloud.points).reshape(H, W, 3)
    flip = np.array([1.0, -1.0, -1.0])            # OpenCV (x right, y down, z forward) -> Nuke (+Y up, -Z)
    expected = points * flip
    ours = np.stack([px, py, pz], axis=-1).astype(np.float64)
    err = np.abs(ours - expected).max() / np.abs(expected).max()
    assert err < 1e-5, f"P differs from Open3D's back-projection by {err:.2e} (relative)"
    # And the flip is not a no-op: the top-left pixel is left of and above the axis, in front of the camera.
    assert px[0, 0] < 0 and py[0, 0] > 0 and pz[0, 0] < 0
