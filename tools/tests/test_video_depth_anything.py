"""Parity of the Video Depth Anything exporter (tools/video_depth_anything.py) with the official code.

The reference outputs in tests/data/vda were made by the OFFICIAL code (github DepthAnything/
Video-Depth-Anything) on seeded weights (tools/seeded_weights.py), by `python -m tools.vda_fixtures make`
(see tools/vda_fixtures.py for how to regenerate them); the official code is not needed here.

  forward   the exported module (checkpoint written by `tools.vda_fixtures checkpoint`, exported by
            `tools.export video-depth-anything`: strict load, script, save, reload) reproduces the official
            forward on a 6-frame 28x42 clip: max |ours - official| / max |official| <= 1e-4.
            vits through both CLIs (checkpoint file, export, reload); vitb and vitl (marked heavy: 1.3 GB
            of seeded fp32 weights, ~15 s and 2.2 GB peak RSS) built and scripted in memory.
  negative  the same module run frame by frame (T=1) does NOT reproduce the official forward, nor the
            official whole-shot result (tests/data/vda/shot, even after the best single scale and shift
            over the whole shot): it differs by tens of percent of the depth span. So the temporal path is
            exercised and a model that ignored the other frames would fail the parity tests.
  contract  depthbatch.json: input.frames 32, the windowing of the official infer_video_depth, licence per
            variant, source sha256, metric variants (align "none", metres).
  errors    truncated / wrong-variant / image-model checkpoints: exit 2 with one line.
(The whole-shot windowing parity is depthbatch's own, tested on the C++ side against tests/data/vda/shot.)
"""
import glob
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import export as export_cli  # noqa: E402
from tools import vda_fixtures  # noqa: E402
from tools.contract import read_contract  # noqa: E402
from tools.seeded_weights import seeded_state_dict, seeded_tensor  # noqa: E402
from tools.video_depth_anything import (KEYFRAMES, VideoDepthAnything, build, official_shapes,  # noqa: E402
                                        sinusoid_table)

DATA = ROOT / "tests" / "data" / "vda"
FWD = json.loads((DATA / "forward" / "fixture.json").read_text())
SEED = FWD["seed"]
TOL = 1e-4


def rel_err(a: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(a - ref).max() / np.abs(ref).max())


def forward_fixture(variant: str):
    d = np.load(DATA / "forward" / f"{variant}.npz")
    return torch.from_numpy(d["input"]), d["output"]


@pytest.fixture(scope="module")
def vits_export(tmp_path_factory):
    """(scripted module, contract, checkpoint path) for seeded vits through both CLIs."""
    tmp = tmp_path_factory.mktemp("vda")
    ck, out = tmp / "video_depth_anything_vits.pth", tmp / "vda_vits.pt"
    assert vda_fixtures.main(["checkpoint", "--variant", "vits", "--seed", str(SEED), "--out", str(ck)]) == 0
    assert export_cli.main(["video-depth-anything", "--variant", "vits", "--checkpoint", str(ck),
                            "--out", str(out)]) == 0
    return torch.jit.load(str(out)).eval(), read_contract(str(out)), ck


def test_fixture_is_not_vacuous():
    """The reference depth must be mostly above ReLU's zero, else a parity test could hide errors there."""
    for v, meta in FWD["variants"].items():
        assert meta["positive_fraction"] > 0.3, v
    shot = json.loads((DATA / "shot" / "fixture.json").read_text())
    assert shot["positive_fraction"] > 0.3 and shot["frames"] == [1001, 1070]


def test_forward_vits_matches_official(vits_export):
    module, _, _ = vits_export
    x, ref = forward_fixture("vits")
    with torch.inference_mode():
        y = module(x).numpy()
    assert y.shape == ref.shape == (1, 6, 28, 42)
    assert rel_err(y, ref) <= TOL


@pytest.mark.parametrize("variant", [
    "vitb",
    pytest.param("vitl", marks=pytest.mark.heavy),   # 1.3 GB of seeded weights: ~15 s, 2.2 GB peak RSS
])
def test_forward_larger_variants_match_official(variant):
    if variant not in FWD["variants"]:
        pytest.skip(f"no {variant} fixture in tests/data/vda/forward")
    model = build(variant, seeded_state_dict(official_shapes(variant), SEED))
    scripted = torch.jit.script(model)
    x, ref = forward_fixture(variant)
    with torch.inference_mode():
        y = scripted(x).numpy()
    assert rel_err(y, ref) <= TOL


def test_frame_by_frame_does_not_match_forward(vits_export):
    """Negative control on the forward clip: T=1 runs differ by tens of percent of the depth span."""
    module, _, _ = vits_export
    x, ref = forward_fixture("vits")
    with torch.inference_mode():
        single = torch.cat([module(x[:, t:t + 1]) for t in range(x.shape[1])], 1).numpy()
    span = float(ref.max() - ref.min())
    assert np.abs(single - ref).max() / span > 0.2


def _read_z(path: str) -> np.ndarray:
    import OpenEXR
    with OpenEXR.File(path) as f:
        return np.array(f.channels()["Z"].pixels, dtype=np.float32)


def test_frame_by_frame_does_not_match_shot(vits_export):
    """Negative control on the whole shot: 70 frames run one by one, then fitted to the official result by
    the best single scale and shift over the shot, still differ by tens of percent of the depth span."""
    from PIL import Image
    module, _, _ = vits_export
    plates = sorted(glob.glob(str(DATA / "shot" / "plate.*.png")))
    expected = sorted(glob.glob(str(DATA / "shot" / "expected.*.exr")))
    assert len(plates) == len(expected) == 70
    ref = np.stack([_read_z(p) for p in expected])
    frames = np.stack([np.asarray(Image.open(p).convert("RGB")) for p in plates]).astype(np.float32) / 255.0
    x = torch.from_numpy(frames).permute(0, 3, 1, 2).unsqueeze(1)      # [70, 1, 3, H, W]: 70 clips of T=1
    with torch.inference_mode():
        single = module(x).numpy()[:, 0]
    a = np.stack([single.ravel(), np.ones(single.size)], 1).astype(np.float64)
    (scale, shift), *_ = np.linalg.lstsq(a, ref.ravel().astype(np.float64), rcond=None)
    fitted = single * scale + shift
    span = float(ref.max() - ref.min())
    assert np.abs(fitted - ref).max() / span > 0.2
    assert np.abs(fitted - ref).mean() / span > 0.02


def test_contract(vits_export):
    _, contract, ck = vits_export
    assert contract["name"] == "video-depth-anything-vits"
    assert contract["input"] == {"colorspace": "sRGB", "multiple": 14, "size": [518, 518], "fixed_size": False,
                                 "mean": None, "std": None, "frames": 32}
    assert contract["output"] == {"kind": "relative_inverse_depth", "units": ""}
    assert contract["temporal"] == {"window": 32, "overlap": 10, "keyframes": [0, 12, 24, 25, 26, 27, 28, 29, 30, 31],
                                    "crossfade": 8, "align": "scale_shift"}
    assert contract["license"] == "Apache-2.0" and contract["variant"] == "vits"
    assert contract["source"] == "video_depth_anything_vits.pth"
    assert contract["source_sha256"] == hashlib.sha256(Path(ck).read_bytes()).hexdigest()


def test_metric_contract(vits_export, tmp_path):
    _, _, ck = vits_export
    out = tmp_path / "metric.pt"
    assert export_cli.main(["video-depth-anything", "--variant", "vits", "--metric", "--checkpoint", str(ck),
                            "--out", str(out), "--source", "metric_video_depth_anything_vits.pth"]) == 0
    c = read_contract(str(out))
    assert c["name"] == "metric-video-depth-anything-vits"
    assert c["output"] == {"kind": "metric_depth", "units": "m"}
    assert c["temporal"]["align"] == "none" and c["input"]["frames"] == 32


@pytest.mark.parametrize("variant,license", [("vitb", "CC-BY-NC-4.0"), ("vitl", "CC-BY-NC-4.0")])
def test_license_per_variant(variant, license):
    from tools.depth_anything_v2 import VARIANTS
    assert VARIANTS[variant]["license"] == license


def test_module_checks_its_input(vits_export):
    module, _, _ = vits_export
    with pytest.raises(Exception, match="multiples of 14"):
        module(torch.rand(1, 2, 3, 28, 40))
    with pytest.raises(Exception, match="frames per clip must be 1..32"):
        module(torch.rand(1, 33, 3, 14, 14))
    with pytest.raises(Exception, match=r"\[B, T, 3, H, W\]"):
        module(torch.rand(1, 3, 28, 28))


def _export_error(capsys, argv):
    code = export_cli.main(argv)
    err = capsys.readouterr().err.strip()
    return code, err


def test_truncated_checkpoint_exits_2_with_one_line(vits_export, tmp_path, capsys):
    _, _, ck = vits_export
    bad = tmp_path / "truncated.pth"
    bad.write_bytes(Path(ck).read_bytes()[:100000])
    code, err = _export_error(capsys, ["video-depth-anything", "--variant", "vits", "--checkpoint", str(bad),
                                       "--out", str(tmp_path / "x.pt")])
    assert code == 2 and len(err.splitlines()) == 1 and "truncated.pth" in err
    assert not (tmp_path / "x.pt").exists()


def test_wrong_variant_and_extra_keys_exit_2(vits_export, tmp_path, capsys):
    _, _, ck = vits_export
    code, err = _export_error(capsys, ["video-depth-anything", "--variant", "vitb", "--checkpoint", str(ck),
                                       "--out", str(tmp_path / "x.pt")])
    assert code == 2 and len(err.splitlines()) == 1 and "shape mismatch" in err
    sd = torch.load(ck, weights_only=True)
    sd["head.motion_modules.4.extra"] = torch.zeros(1)
    del sd["head.motion_modules.3.temporal_transformer.proj_out.weight"]
    torch.save(sd, tmp_path / "edited.pth")
    code, err = _export_error(capsys, ["video-depth-anything", "--variant", "vits", "--checkpoint",
                                       str(tmp_path / "edited.pth"), "--out", str(tmp_path / "x.pt")])
    assert code == 2 and len(err.splitlines()) == 1
    assert "head.motion_modules.3.temporal_transformer.proj_out.weight" in err and "motion_modules.4.extra" in err


def test_image_checkpoint_is_refused(tmp_path, capsys):
    torch.save({"pretrained.cls_token": torch.zeros(1, 1, 384), "depth_head.projects.0.weight": torch.zeros(1)},
               tmp_path / "dav2.pth")
    code, err = _export_error(capsys, ["video-depth-anything", "--variant", "vits", "--checkpoint",
                                       str(tmp_path / "dav2.pth"), "--out", str(tmp_path / "x.pt")])
    assert code == 2 and "depth-anything-v2" in err and len(err.splitlines()) == 1


def test_seeded_rule():
    shapes = official_shapes("vits")
    assert len(shapes) == 351
    a = seeded_tensor("head.motion_modules.0.temporal_transformer.proj_out.weight", (192, 192), 7)
    b = seeded_tensor("head.motion_modules.0.temporal_transformer.proj_out.weight", (192, 192), 7)
    c = seeded_tensor("head.motion_modules.1.temporal_transformer.proj_out.weight", (192, 192), 7)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert 0.05 < float(a.std()) < 0.1       # N(0, 1/192): proj_out is NOT the official zero init
    pe = "head.motion_modules.2.temporal_transformer.transformer_blocks.0.attention_blocks.0.pos_encoder.pe"
    assert torch.equal(seeded_tensor(pe, (1, 32, 64), 7), sinusoid_table(32, 64))
    assert abs(float(sinusoid_table(32, 64)[0, 1, 0]) - np.sin(1.0)) < 1e-6


def test_same_network_for_every_clip_length():
    """T frames in, T maps out; the module works for T = 1..32 and mixes only frames of the same clip."""
    model = VideoDepthAnything("vits").eval()
    model.load_state_dict(seeded_state_dict(official_shapes("vits"), SEED))
    x = torch.rand(2, 3, 3, 14, 28, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        both = model(x)
        first = model(x[:1])
    assert both.shape == (2, 3, 14, 28)
    assert torch.allclose(both[:1], first, rtol=0, atol=1e-5 * float(first.abs().max()))
    assert KEYFRAMES[-1] == 31
