"""The synthetic camera-solve shot and its oracles (tools/camera_oracle.py).

  caster      a fronto-parallel plane comes back at its known depth at every pixel
  geometry    points lifted from frame A's true depth (Nuke convention, camera.h) and projected through frame B's
              truth camera converted to OpenCV ([R|t], K with cx = W/2) land where B's own ray cast sees the same
              surface (depth within 1e-4 relative); lifting and projecting into A itself gives the pixel centres
  oracle      the views module reloaded from disk identifies every frame, gives [I|0] to each window's first view,
              and its extrinsics composed with the truth reproduce the truth up to the window's scale; depth is the
              truth times the scale; intrinsics follow the input size; the outputs are consistent among themselves
              (view 0 lifted through its K, projected through E_i, K_i lands on view i's depth)
  paths       nodal_pan keeps every camera centre; locked_off every camera
  noise       the noisy oracle differs from the exact one by the stated amplitudes
"""
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import camera_oracle as co  # noqa: E402
from tools.contract import read_contract  # noqa: E402

W, H, FRAMES = 112, 70, 12


def load_plates(d: Path, truth) -> torch.Tensor:
    from PIL import Image
    return torch.stack([torch.from_numpy(np.array(Image.open(d / f"plate.{f}.png"))).permute(2, 0, 1).float() / 255
                        for f in range(truth["first"], truth["last"] + 1)])


def load_depth(d: Path, frame: int, h: int, w: int) -> np.ndarray:
    return np.fromfile(d / f"depth.{frame}.bin", dtype="<f4").reshape(h, w)


def c2w(truth, frame: int) -> np.ndarray:
    return np.array(truth["camera_to_world"][str(frame)], float).reshape(4, 4)


@pytest.fixture(scope="module")
def shot(tmp_path_factory):
    out = tmp_path_factory.mktemp("dolly")
    truth = co.make_shot("dolly", str(out), FRAMES, W, H)
    return out, truth, load_plates(out, truth)


@pytest.fixture(scope="module")
def noisy_shot(tmp_path_factory):
    out = tmp_path_factory.mktemp("dolly-noisy")
    truth = co.make_shot("dolly", str(out), FRAMES, W, H, noise=True)
    return out, truth


# ------------------------------------------------------------------------------------------------ caster, geometry

def test_fronto_parallel_plane():
    scene = co.Scene(((-1e3, -1e3, -5.0), (1e3, 1e3, 1e3)), [])
    f = co.FOCAL_MM / co.HAPERTURE_MM * W
    for pos, plane_depth in (((0.0, 0.0, 0.0), 5.0), ((0.3, -0.2, 1.0), 6.0)):
        _, depth = co.render(scene, co.nuke_camera_to_world(pos, (0, 0, 0)), W, H, f, supersample=1)
        np.testing.assert_allclose(depth, plane_depth, rtol=1e-7)
    # a box face in front of the plane, also fronto-parallel
    scene = co.Scene(((-1e3, -1e3, -5.0), (1e3, 1e3, 1e3)), [((-10, -10, -3.0), (10, 10, -2.5))])
    _, depth = co.render(scene, np.eye(4), W, H, f, supersample=1)
    np.testing.assert_allclose(depth, 2.5, rtol=1e-7)


def test_nuke_opencv_conversion_roundtrip():
    m = co.nuke_camera_to_world((0.4, 1.7, -0.3), (-7.0, 23.0, 4.0))
    cv = co.nuke_to_opencv_c2w(m)
    np.testing.assert_allclose(co.opencv_to_nuke_c2w(cv), m, atol=1e-15)
    # the OpenCV camera looks down its +Z, which is the Nuke camera's -Z, in the flipped world
    fwd_nuke_world = m[:3, :3] @ np.array([0, 0, -1.0])
    np.testing.assert_allclose(cv[:3, :3] @ np.array([0, 0, 1.0]), np.diag(co.F_CV)[:3] * fwd_nuke_world, atol=1e-15)
    assert np.linalg.det(cv[:3, :3]) == pytest.approx(1.0)


@pytest.mark.parametrize("kind,a,b", [("dolly", 0, 11), ("orbit", 0, 11), ("pan_translate", 2, 9),
                                      ("crane", 0, 11), ("nodal_pan", 0, 6)])
def test_reprojection_lands_on_the_same_surface(kind, a, b):
    scene = co.default_scene()
    f = co.FOCAL_MM / co.HAPERTURE_MM * W
    path = co.camera_path(kind, FRAMES)
    ma, mb = (co.nuke_camera_to_world(*path[i]) for i in (a, b))
    _, depth_a = co.render(scene, ma, W, H, f, supersample=1)
    pts = co.lift_nuke(depth_a.astype(np.float64), ma, f)
    pts_cv = pts @ co.F_CV[:3, :3].T                               # world_cv = F * world_nuke

    # into A itself: the pixel centres come back
    x, y, z = co.project_opencv(pts_cv, co.rigid_inverse(co.nuke_to_opencv_c2w(ma)), f, f, W / 2, H / 2)
    ys, xs = np.mgrid[0:H, 0:W]
    np.testing.assert_allclose(x, xs.reshape(-1) + 0.5, atol=1e-9)
    np.testing.assert_allclose(y, ys.reshape(-1) + 0.5, atol=1e-9)
    np.testing.assert_allclose(z, depth_a.reshape(-1), rtol=1e-12)

    # into B: B's own ray through (x, y) hits the same surface at depth z, where B sees it
    x, y, z = co.project_opencv(pts_cv, co.rigid_inverse(co.nuke_to_opencv_c2w(mb)), f, f, W / 2, H / 2)
    inside = (z > 0) & (x >= 0) & (x < W) & (y >= 0) & (y < H)
    assert inside.mean() > 0.4
    rays = co.pixel_rays(W, H, f, x[inside], y[inside]) @ mb[:3, :3].T
    t, _, _ = co.cast(scene, mb[:3, 3], rays)
    rel = (t - z[inside]) / z[inside]
    visible = np.abs(rel) < 1e-4
    assert visible.mean() > 0.6, f"{kind}: only {visible.mean():.2f} of the points reprojected onto their surface"
    # the rest is occluded in B (B sees something nearer); never a surface behind the point (a wrong camera)
    assert (rel > 1e-4).mean() < 0.002
    # B's depth file agrees where the projection lands near a pixel centre of a visible point
    _, depth_b = co.render(scene, mb, W, H, f, supersample=1)
    xi, yi = np.floor(x[inside]).astype(int), np.floor(y[inside]).astype(int)
    near = visible & (np.abs(x[inside] - xi - 0.5) < 0.02) & (np.abs(y[inside] - yi - 0.5) < 0.02)
    if near.any():
        np.testing.assert_allclose(depth_b[yi[near], xi[near]], z[inside][near], rtol=2e-3)


# ------------------------------------------------------------------------------------------------ oracle

def window_starts(n: int, window: int, overlap: int):
    return list(range(0, max(n - overlap, 1), window - overlap))


def test_truth_and_files(shot):
    out, truth, plates = shot
    assert truth["first"] == 1001 and truth["last"] == 1000 + FRAMES
    assert (truth["width"], truth["height"]) == (W, H)
    assert truth["focal_px"] == pytest.approx(35 / 24.576 * W)
    assert truth["path_length"] == pytest.approx(1.5)
    assert truth["noise"] is None
    on_disk = json.loads((out / "truth.json").read_text())
    assert on_disk["camera_to_world"] == truth["camera_to_world"]
    assert plates.shape == (FRAMES, 3, H, W)
    d = load_depth(out, 1001, H, W)
    assert on_disk["median_depth"]["1001"] == pytest.approx(float(np.median(d)))
    assert 1.5 < d.min() and d.max() < 16
    chan = (out / "camera.chan").read_text().split("\n")[0].split()
    m = co.nuke_camera_to_world([float(v) for v in chan[1:4]], [float(v) for v in chan[4:7]])
    np.testing.assert_allclose(m, c2w(truth, 1001), atol=1e-8)


def test_contracts(shot):
    out, _, _ = shot
    c = read_contract(str(out / "oracle-views.pt"))
    assert c["name"] == "camera-oracle-dolly"
    assert c["input"] == {"colorspace": "sRGB", "multiple": 14, "size": [H, W], "fixed_size": False,
                          "mean": None, "std": None, "frames": 32}
    assert c["output"]["kind"] == "relative_depth" and c["output"]["units"] == ""
    assert c["output"]["extra_outputs"] == [{"name": "confidence", "channel": "depth.confidence",
                                             "about": "oracle: 1"}]
    assert c["views"] == {"window": 8, "overlap": 3, "pose": "oracle", "extrinsics": "opencv_world_to_camera",
                          "intrinsics": "pixels", "first_view_is_world": True}
    assert "temporal" not in c and c["license"] == "MIT" and c["source"] == "tools/camera_oracle.py"
    m = read_contract(str(out / "oracle-metric.pt"))
    assert m["name"] == "camera-oracle-metric-dolly" and m["output"] == {"kind": "metric_depth", "units": "m"}
    assert "views" not in m and "frames" not in m["input"] and m["license"] == "MIT"


def test_oracle_views_windows(shot):
    out, truth, plates = shot
    module = torch.jit.load(str(out / "oracle-views.pt"), map_location="cpu")
    f = truth["focal_px"]
    w2c_truth = {i: co.rigid_inverse(co.nuke_to_opencv_c2w(c2w(truth, 1001 + i))) for i in range(FRAMES)}
    seen = set()
    for start in window_starts(FRAMES, 5, 2):
        ids = list(range(start, min(start + 5, FRAMES)))
        x = plates[ids].unsqueeze(0)
        with torch.inference_mode():
            depth, conf, ext, intr = module(x)
        s = co.window_scale(1001 + ids[0])
        assert depth.shape == (1, len(ids), H, W) and conf.shape == depth.shape
        assert ext.shape == (1, len(ids), 3, 4) and intr.shape == (1, len(ids), 3, 3)
        assert torch.all(conf == 1)
        np.testing.assert_array_equal(ext[0, 0].numpy(), np.eye(3, 4, dtype=np.float32))
        np.testing.assert_allclose(intr[0].numpy(), np.broadcast_to(
            np.array([[f, 0, W / 2], [0, f, H / 2], [0, 0, 1]], np.float32), (len(ids), 3, 3)), rtol=1e-6)
        r0, t0 = w2c_truth[ids[0]][:3, :3], w2c_truth[ids[0]][:3, 3]
        for k, i in enumerate(ids):
            np.testing.assert_allclose(depth[0, k].numpy(), s * load_depth(out, 1001 + i, H, W), rtol=1e-6)
            seen.add(i)
            re, te = ext[0, k, :, :3].numpy().astype(float), ext[0, k, :, 3].numpy().astype(float)
            # compose with the truth of the window's first view: R_i = R_E R_0, t_i = t_E / s + R_E t_0
            np.testing.assert_allclose(re @ r0, w2c_truth[i][:3, :3], atol=1e-6)
            np.testing.assert_allclose(te / s + re @ t0, w2c_truth[i][:3, 3], atol=1e-5)
    assert seen == set(range(FRAMES))


def test_oracle_views_batch_and_resize(shot):
    out, truth, plates = shot
    module = torch.jit.load(str(out / "oracle-views.pt"), map_location="cpu")
    order = torch.tensor([[7, 8, 9, 10], [2, 3, 4, 5]])
    with torch.inference_mode():
        depth, _, ext, intr = module(plates[order])
    for b in range(2):
        s = co.window_scale(1001 + int(order[b, 0]))
        for k in range(4):
            np.testing.assert_allclose(depth[b, k].numpy(), s * load_depth(out, 1001 + int(order[b, k]), H, W),
                                       rtol=1e-6)
        np.testing.assert_array_equal(ext[b, 0].numpy(), np.eye(3, 4, dtype=np.float32))
    # another processing size: depth resized, intrinsics in the input's pixels, same frames found
    hi, wi = 56, 84
    small = torch.nn.functional.interpolate(plates[order[0]], size=(hi, wi), mode="bilinear", antialias=True)
    with torch.inference_mode():
        depth_s, _, ext_s, intr_s = module(small.unsqueeze(0))
    assert depth_s.shape == (1, 4, hi, wi)
    np.testing.assert_allclose(ext_s[0].numpy(), ext[0].numpy(), atol=1e-6)
    f = truth["focal_px"]
    np.testing.assert_allclose(intr_s[0, 0].numpy(), [[f * wi / W, 0, wi / 2], [0, f * hi / H, hi / 2], [0, 0, 1]],
                               rtol=1e-6)
    ref = torch.nn.functional.interpolate(depth[0].unsqueeze(1), size=(hi, wi), mode="bilinear")[:, 0]
    np.testing.assert_allclose(depth_s[0].numpy(), ref.numpy(), rtol=1e-6)


def test_oracle_views_self_consistent(shot):
    """View 0 lifted with the oracle's own depth and K, projected through E_i and K_i, lands on view i's depth."""
    out, truth, plates = shot
    module = torch.jit.load(str(out / "oracle-views.pt"), map_location="cpu")
    with torch.inference_mode():
        depth, _, ext, intr = (t[0].double().numpy() for t in module(plates[[3, 6, 9]].unsqueeze(0)))
    k0 = intr[0]
    ys, xs = np.mgrid[0:H, 0:W].astype(float)
    d0 = depth[0].reshape(-1)
    pts = np.stack([(xs.reshape(-1) + 0.5 - k0[0, 2]) / k0[0, 0] * d0,
                    (ys.reshape(-1) + 0.5 - k0[1, 2]) / k0[1, 1] * d0, d0], 1)   # view 0's camera = the world
    for i in (1, 2):
        w2c = np.eye(4)
        w2c[:3] = ext[i]
        x, y, z = co.project_opencv(pts, w2c, intr[i, 0, 0], intr[i, 1, 1], intr[i, 0, 2], intr[i, 1, 2])
        inside = (z > 0) & (x >= 0) & (x < W) & (y >= 0) & (y < H)
        got = depth[i][np.floor(y[inside]).astype(int), np.floor(x[inside]).astype(int)]
        rel = np.abs(got - z[inside]) / z[inside]
        assert np.median(rel) < 0.01 and (rel < 0.03).mean() > 0.8


def test_oracle_metric(shot):
    out, truth, plates = shot
    module = torch.jit.load(str(out / "oracle-metric.pt"), map_location="cpu")
    order = [11, 0, 5, 5, 3]
    with torch.inference_mode():
        depth = module(plates[order])
    assert depth.shape == (5, 1, H, W)
    for k, i in enumerate(order):
        np.testing.assert_array_equal(depth[k, 0].numpy(), load_depth(out, 1001 + i, H, W))


# ------------------------------------------------------------------------------------------------ paths

def test_nodal_pan_and_locked_off(tmp_path):
    truth = co.make_shot("nodal_pan", str(tmp_path / "nodal"), 6, 56, 28, modules=False)
    centres = np.array([c2w(truth, f)[:3, 3] for f in range(1001, 1007)])
    np.testing.assert_array_equal(centres, np.broadcast_to(centres[0], centres.shape))
    assert truth["path_length"] == 0
    yaw = [math.degrees(math.atan2(c2w(truth, f)[0, 2], c2w(truth, f)[2, 2])) for f in (1001, 1006)]
    assert yaw[0] - yaw[1] == pytest.approx(25.0)
    for kind in ("locked_off",):
        path = co.camera_path(kind, 5)
        assert all(np.array_equal(p[0], path[0][0]) and np.array_equal(p[1], path[0][1]) for p in path)
    lengths = {k: np.linalg.norm(np.diff([p[0] for p in co.camera_path(k, 24)], axis=0), axis=1).sum()
               for k in co.SHOTS}
    assert lengths["dolly"] == pytest.approx(1.5) and lengths["crane"] == pytest.approx(1.5)
    assert lengths["pan_translate"] == pytest.approx(1.0)
    assert lengths["orbit"] == pytest.approx(5 * math.radians(30), rel=1e-2)


def test_cli_refuses_bad_size(tmp_path, capsys):
    assert co.main(["make", "--shot", "dolly", "--out", str(tmp_path), "--width", "100"]) == 2
    assert "multiples of 14" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ noise

def test_noisy_oracle_amplitudes(shot, noisy_shot):
    out, truth, plates = shot
    nout, ntruth = noisy_shot
    assert ntruth["noise"]["rotation_deg"] == 0.02 and read_contract(str(nout / "oracle-views.pt"))["name"] == \
        "camera-oracle-dolly-noisy"
    exact = torch.jit.load(str(out / "oracle-views.pt"), map_location="cpu")
    noisy = torch.jit.load(str(nout / "oracle-views.pt"), map_location="cpu")
    ids = [1, 3, 5, 7, 9, 11]
    x = plates[ids].unsqueeze(0)
    with torch.inference_mode():
        de, _, ee, ie = (t[0].double().numpy() for t in exact(x))
        dn, _, en, inn = (t[0].double().numpy() for t in noisy(x))
        again = noisy(x)
    np.testing.assert_array_equal(again[0][0].numpy(), dn.astype(np.float32))   # deterministic
    s = co.window_scale(1001 + ids[0])
    ratio = dn / de
    assert abs(ratio.mean() - 1) < 2e-3 and 0.009 < ratio.std() < 0.011
    np.testing.assert_array_equal(en[0], np.eye(3, 4))
    for k in range(1, len(ids)):
        dr = en[k, :, :3] @ ee[k, :, :3].T
        angle = math.degrees(math.asin(np.linalg.norm(dr - dr.T) / (2 * math.sqrt(2))))   # float32: not acos
        assert angle == pytest.approx(0.02, rel=0.05)
        expected = s * 0.001 * ntruth["median_depth"][str(1001 + ids[k])]
        assert np.linalg.norm(en[k, :, 3] - ee[k, :, 3]) == pytest.approx(expected, rel=0.02)
    focal = inn[:, 0, 0] / ie[:, 0, 0]
    np.testing.assert_allclose(np.abs(focal - 1), 0.003, rtol=1e-3)
    np.testing.assert_allclose(inn[:, 1, 1] / ie[:, 1, 1], focal, rtol=1e-6)
    # different positions of the same frame get different noise
    with torch.inference_mode():
        d2 = noisy(plates[[0, 1]].unsqueeze(0))[0][0, 1].double().numpy()
    assert not np.array_equal(d2, dn[0])
