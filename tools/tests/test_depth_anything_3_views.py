"""Parity of the Depth Anything 3 any-view exporter (tools/depth_anything_3_views.py) with the official package.

Reference: depth-anything-3 0.1.1 (PyPI; github ByteDance-Seed/Depth-Anything-3), installed without dependencies
(see tools/tests/test_depth_anything_3.py). These tests skip when it is missing, and say so.

The official DepthAnything3Net is built offline from the package's own configs/da3-small.yaml (and da3-base.yaml for
one case), in float32 on the CPU without autocast, with seeded weights in the hub layout ("model." + its state dict
keys; tools/seeded_weights.py, seed 0). One change to the seeded values: the camera decoder's fov bias
(model.cam_dec.fc_fov.0.bias) is raised to 1, so that ReLU(fov) is a real field of view (with the seeded bias it is 0
for some views, the focal length then 1e6 x W/2, and an intrinsics comparison means nothing). The same checkpoint
file is exported with the tool (strict loading) and the SCRIPTED, saved and reloaded module is compared with the
official forward (use_ray_pose=False, ref_view_strategy as the export) on the ImageNet-normalised input:
  depth         max |ours - official| / (max - min of the official depth)             <= 1e-4
  intrinsics    max |ours - official| / max |official| per view                          <= 1e-4
  rotation      angle of R_ours R_official^T (from the Frobenius distance)              <= 0.01 degree
  translation   max |t_ours - t_official| / the window's path extent (largest distance between camera centres
                -R^T t; the largest |t| when the centres coincide)                        <= 1e-4
  confidence    max |ours - official| / max |official|                                   <= 1e-4
The S = 4 case runs the official reference-view selection ("saddle_balanced", S >= 3); the test checks that it picked
a view other than the first, so the reordering is exercised.
"""
import math
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytest.importorskip("depth_anything_3", reason="every Depth Anything 3 any-view parity test skipped: the reference "
                    "package depth_anything_3 is not installed (pip install --no-deps depth-anything-3==0.1.1)")
pytest.importorskip("addict", reason="every Depth Anything 3 any-view parity test skipped: addict, needed by the "
                    "reference package, is not installed (pip install -r tools/requirements.txt)")

import depth_anything_3.model.dinov2.vision_transformer as official_vit  # noqa: E402
from depth_anything_3.cfg import create_object, load_config  # noqa: E402
from depth_anything_3.registry import MODEL_REGISTRY  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from tools import depth_anything_3_views as da3v  # noqa: E402
from tools.contract import read_contract  # noqa: E402
from tools.export import main as export_main  # noqa: E402
from tools.seeded_weights import seeded_state_dict  # noqa: E402

SEED = 0
TOL = 1e-4
ROT_TOL_DEG = 0.01
# ImageNet statistics of depth_anything_3/utils/io/input_processor.py.
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 1, 3, 1, 1)
CONFIGS = {"vits": "da3-small", "vitb": "da3-base"}
WHICH = {"vits": "small", "vitb": "base"}

_CACHE = {}


def official(net):
    """(official DepthAnything3Net with the seeded weights, hub-layout state dict); cached."""
    if ("ref", net) not in _CACHE:
        ref = create_object(load_config(MODEL_REGISTRY[CONFIGS[net]])).eval()
        shapes = {"model." + k: tuple(v.shape) for k, v in ref.state_dict().items()}
        sd = seeded_state_dict(shapes, SEED)
        sd["model.cam_dec.fc_fov.0.bias"] = sd["model.cam_dec.fc_fov.0.bias"] + 1.0   # see the module doc
        ref.load_state_dict({k[len("model."):]: v for k, v in sd.items()}, strict=True)
        _CACHE[("ref", net)] = (ref, sd)
    return _CACHE[("ref", net)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    torch.set_num_threads(2)
    yield tmp_path_factory.mktemp("da3v")
    _CACHE.clear()


def checkpoint(workdir, net):
    path = workdir / f"{net}-seed{SEED}.safetensors"
    if not path.exists():
        save_file({k: v.contiguous() for k, v in official(net)[1].items()}, str(path))
    return path


def exported(workdir, net, ref_view="saddle_balanced"):
    """(reloaded scripted module, contract, checkpoint, file) of the tool's export; cached."""
    key = ("export", net, ref_view)
    if key not in _CACHE:
        ckpt = checkpoint(workdir, net)
        out = workdir / f"{net}-{ref_view}.pt"
        contract = da3v.export(str(ckpt), str(out), WHICH[net], ref_view=ref_view)
        _CACHE[key] = (torch.jit.load(str(out), map_location="cpu"), contract, ckpt, out)
    return _CACHE[key]


def run_official(ref, x, strategy):
    """The official forward on x [B,S,3,H,W] in [0,1], recording the reference views it selects."""
    picked = []
    select = official_vit.select_reference_view

    def recording(tokens, strategy="saddle_balanced"):
        b_idx = select(tokens, strategy=strategy)
        picked.append(b_idx.clone())
        return b_idx

    official_vit.select_reference_view = recording
    try:
        with torch.no_grad():
            out = ref((x - MEAN) / STD, export_feat_layers=[], use_ray_pose=False, ref_view_strategy=strategy)
    finally:
        official_vit.select_reference_view = select
    return out, picked


def camera_centres(ext):
    rot, t = ext[..., :3, :3], ext[..., :3, 3:]
    return -(rot.transpose(-1, -2) @ t)[..., 0]


def parity_errors(ours, want):
    """Error measures of the module doc, for (depth, conf, extrinsics, intrinsics) against the official dict."""
    depth, conf, ext, intr = ours
    assert depth.shape == want.depth.shape and conf.shape == want.depth_conf.shape
    assert ext.shape == want.extrinsics.shape and intr.shape == want.intrinsics.shape
    assert all(t.dtype == torch.float32 for t in ours)
    span = (want.depth.max() - want.depth.min()).item()
    errs = {"depth/span": (depth - want.depth).abs().max().item() / span,
            "conf_rel": ((conf - want.depth_conf).abs().max() / want.depth_conf.abs().max()).item()}
    scale = want.intrinsics.abs().amax(dim=(-1, -2), keepdim=True)
    errs["intrinsics_rel"] = ((intr - want.intrinsics).abs() / scale).max().item()
    # the angle of R_ours R_ref^T from |R_ours - R_ref|_F = 2 sqrt(2) sin(angle / 2) (exact for rotations; acos of
    # the trace loses ~0.03 degree to float32 rounding near the identity)
    frob = (ext[..., :3, :3].double() - want.extrinsics[..., :3, :3].double()).flatten(-2).norm(dim=-1)
    errs["rotation_deg"] = math.degrees(2 * math.asin(min(1.0, frob.max().item() / (2 * math.sqrt(2)))))
    centres = camera_centres(want.extrinsics)
    extent = torch.cdist(centres, centres).max().item()
    if extent < 1e-6:
        extent = want.extrinsics[..., :3, 3].norm(dim=-1).max().item()
    errs["translation_rel"] = (ext[..., :3, 3] - want.extrinsics[..., :3, 3]).abs().max().item() / extent
    return errs


CASES = [pytest.param("vits", 1, 2, (42, 70), "saddle_balanced", id="vits-S2-42x70"),
         pytest.param("vits", 1, 4, (56, 98), "saddle_balanced", id="vits-S4-56x98"),
         pytest.param("vits", 1, 4, (56, 98), "first", id="vits-S4-56x98-first"),
         pytest.param("vitb", 1, 2, (42, 70), "saddle_balanced", id="vitb-S2-42x70")]


@pytest.mark.parametrize("net,b,s,hw,strategy", CASES)
def test_parity(workdir, net, b, s, hw, strategy):
    ours_module, _, _, _ = exported(workdir, net, strategy)
    ref, _ = official(net)
    x = torch.rand(b, s, 3, *hw, generator=torch.Generator().manual_seed(100 + s))
    t0 = time.monotonic()
    want, picked = run_official(ref, x, strategy)
    t1 = time.monotonic()
    with torch.no_grad():
        got = ours_module(x)
    t2 = time.monotonic()
    errs = parity_errors(got, want)
    print(f"\nDA3 views {net} B={b} S={s} {hw[0]}x{hw[1]} ref_view={strategy} "
          f"(official picked {[p.tolist() for p in picked]}; official {t1 - t0:.1f} s, ours {t2 - t1:.1f} s): "
          + "  ".join(f"{k}={v:.2e}" for k, v in errs.items()))
    if s >= 3 and strategy == "saddle_balanced":
        assert picked and int(picked[0][0]) != 0, "the case does not exercise the reference-view reordering"
    assert not picked or s >= 3
    assert errs["depth/span"] <= TOL and errs["conf_rel"] <= TOL and errs["intrinsics_rel"] <= TOL
    assert errs["rotation_deg"] <= ROT_TOL_DEG and errs["translation_rel"] <= TOL
    # a real field of view (see the module doc): the focal lengths are of the order of the image size
    assert 0.05 * hw[1] < float(got[3][..., 0, 0].min()) < 100 * hw[1]


def test_reference_view_strategy_matters(workdir):
    """Negative control: the saddle_balanced export differs from the official "first" forward where it picks
    another view (so agreement above is not an artefact of the harness)."""
    ours_module = exported(workdir, "vits")[0]
    x = torch.rand(1, 4, 3, 56, 98, generator=torch.Generator().manual_seed(104))
    want, _ = run_official(official("vits")[0], x, "first")
    with torch.no_grad():
        got = ours_module(x)
    assert parity_errors(got, want)["depth/span"] > 100 * TOL


def test_state_dict_keys_match_official():
    ref, sd = official("vits")
    got = {k: tuple(v.shape) for k, v in da3v.DepthAnything3Views("vits").state_dict().items()}
    assert got == {k: tuple(v.shape) for k, v in sd.items()}


def test_strict_loading():
    _, sd = official("vits")
    bad = dict(sd)
    del bad["model.cam_dec.fc_qvec.weight"]
    bad["model.backbone.pretrained.mask_token"] = torch.zeros(1, 384)
    with pytest.raises(ValueError) as e:
        da3v.build(bad, net="vits")
    assert "missing key(s): model.cam_dec.fc_qvec.weight" in str(e.value)
    assert "unexpected key(s): model.backbone.pretrained.mask_token" in str(e.value)
    missing_only = dict(sd)
    del missing_only["model.cam_enc.trunk.0.attn.qkv.weight"]
    with pytest.raises(ValueError, match=r"missing key\(s\): model.cam_enc.trunk.0.attn.qkv.weight"):
        da3v.build(missing_only, net="vits")
    with pytest.raises(ValueError, match="shape mismatch"):
        da3v.build(sd, net="vitb")
    with pytest.raises(ValueError, match="not a Depth Anything 3 checkpoint"):
        da3v.build({"pretrained.cls_token": torch.zeros(1, 1, 384)}, net="vits")
    # DepthAnything3Net.state_dict() (no "model." prefix) is accepted as well
    unprefixed = da3v.build({k[len("model."):]: v for k, v in sd.items()}, net="vits")
    assert set(unprefixed.state_dict()) == set(sd)


def test_contract(workdir):
    _, contract, ckpt, out = exported(workdir, "vits")
    c = read_contract(str(out))
    assert c == contract
    assert c["name"] == "depth-anything-3-small-views"
    assert c["input"] == {"colorspace": "sRGB", "multiple": 14, "size": [280, 504], "fixed_size": False,
                          "mean": None, "std": None, "frames": 32}
    assert c["output"]["kind"] == "relative_depth" and c["output"]["units"] == ""
    assert c["output"]["extra_outputs"] == [{"name": "confidence", "channel": "depth.confidence",
                                             "about": da3v.CONFIDENCE["about"]}]
    views = c["views"]
    assert {k: views[k] for k in ("window", "overlap", "pose", "extrinsics", "intrinsics", "first_view_is_world")} \
        == {"window": 8, "overlap": 3, "pose": "camera_head", "extrinsics": "opencv_world_to_camera",
            "intrinsics": "pixels", "first_view_is_world": False}
    assert views["pose_note"] and views["reference_view"] == "saddle_balanced"
    assert "temporal" not in c
    assert c["license"] == "Apache-2.0" and c["variant"] == "da3-small"
    assert len(c["source_sha256"]) == 64 and c["source"].startswith("depth-anything/DA3-SMALL")
    assert c["exported_by"] == {"torch": torch.__version__}


def test_cli(workdir, capsys):
    ours, _, ckpt, _ = exported(workdir, "vits")
    out = workdir / "cli.pt"
    assert export_main(["depth-anything-3-views", "--model", "base", "--net", "vits", "--checkpoint", str(ckpt),
                        "--out", str(out), "--source", "seeded test weights"]) == 0
    printed = capsys.readouterr().out
    assert '"pose": "camera_head"' in printed
    c = read_contract(str(out))
    assert c["name"] == "depth-anything-3-base-views-vits-test" and c["variant"] == "da3-base"
    assert c["source"] == "seeded test weights"
    x = torch.rand(1, 2, 3, 42, 70, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        for a, b in zip(torch.jit.load(str(out))(x), ours(x)):
            assert torch.equal(a, b)
    assert export_main(["depth-anything-3-views", "--model", "small", "--checkpoint", str(workdir / "nope.pth"),
                        "--out", str(out)]) == 2


def test_input_checks(workdir):
    ours = exported(workdir, "vits")[0]
    with pytest.raises((RuntimeError, torch.jit.Error), match="multiples of 14"):
        ours(torch.rand(1, 2, 3, 42, 60))
    with pytest.raises((RuntimeError, torch.jit.Error), match="number of views S must be 1..32"):
        ours(torch.rand(1, 33, 3, 14, 14))
    with pytest.raises((RuntimeError, torch.jit.Error), match=r"expected input \[B, S, 3, H, W\]"):
        ours(torch.rand(2, 3, 42, 70))


def test_single_view_and_batch(workdir):
    """S = 1 (no global partner) runs, and two sets in one batch give what each set gives alone."""
    ours = exported(workdir, "vits")[0]
    x = torch.rand(2, 3, 3, 28, 42, generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        one = ours(x[:1, :1])
        both = ours(x)
        alone = ours(x[1:])
    assert one[0].shape == (1, 1, 28, 42) and one[2].shape == (1, 1, 3, 4) and one[3].shape == (1, 1, 3, 3)
    for a, b in zip(both, alone):
        assert torch.allclose(a[1:], b, rtol=1e-4, atol=1e-5)


def test_ray_head_matches_official(workdir):
    """The auxiliary (ray) chain the module carries for a ray-map pose (DualDPT.forward_ray, not used by forward)
    against the official head's ray / ray_conf, which the official camera-head path computes and drops."""
    ours = exported(workdir, "vits")[0]
    ref = official("vits")[0]
    x = torch.rand(1, 2, 3, 42, 70, generator=torch.Generator().manual_seed(9))
    cap = {}
    hook = ref.head.register_forward_hook(lambda m, i, o: cap.update(ray=o["ray"], ray_conf=o["ray_conf"]))
    try:
        run_official(ref, x, "saddle_balanced")
    finally:
        hook.remove()
    with torch.no_grad():
        tokens, _ = ours.model.backbone((x - MEAN) / STD)
        ray, ray_conf = ours.model.head.forward_ray([t.flatten(0, 1) for t in tokens], 3, 5)
    assert ray.shape == cap["ray"].flatten(0, 1).shape == (2, 24, 40, 6)
    for a, b in ((ray, cap["ray"].flatten(0, 1)), (ray_conf, cap["ray_conf"].flatten(0, 1))):
        assert ((a - b).abs().max() / b.abs().max()).item() <= TOL
